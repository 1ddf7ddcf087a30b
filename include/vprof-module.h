/*
 * vprof-module.h: customization modules for vprof's value sampling.
 *
 * The value-sampling paper's "customized value profiling" (Burrows et al.,
 * ASPLOS 2000, section 2.4) rebuilt: a module says which instructions the
 * in-process interpreter captures and what of them, receives each
 * interpreted run as a tuple sequence, and turns it into (kind, pc, value,
 * aux) value samples that vprof folds into its per-(kind, pc) hotlists
 * and reports (`vprof list`, `vprof invariants`, `vprof latency`).
 *
 * A module is a shared object (`cc -shared -fPIC -O2 -o m.so m.c`) that
 * defines ONE symbol, a struct vprof_module named vprof_module, whose
 * first member is the API version it was built for:
 *
 *     #include <vprof-module.h>
 *     static void seq(const struct vprof_sequence *s) { ... s->emit(s, kind, pc, v, 0); }
 *     VPROF_MODULE_EXPORT const struct vprof_module vprof_module = {
 *             .api_version = VPROF_MODULE_API_VERSION,
 *             .name = "mine",
 *             .capture = VPROF_CAP_LOADS | VPROF_CAP_ADDRESSES,
 *             .sequence = seq,
 *     };
 *
 * and is used with `vprof run --module m.so -- CMD` (or
 * VPROF_MODULE=/abs/path/m.so with LD_PRELOAD=libvprof.so); `--module`
 * implies `--values`. docs/modules.md has a worked example.
 *
 * Loading. libvprof.so dlopens the module once, in its constructor (never
 * in the signal handler), reads vprof_module.api_version before touching
 * anything else, and refuses with one message (the program runs on, value
 * sampling with vprof's default capture) a path that does not load, a
 * library without the symbol, or a version other than its own. Then it
 * calls init (if any), once, in normal context.
 *
 * THE HANDLER RULES. sequence() runs inside vprof's SIGPROF handler, on
 * the interrupted thread, on a small alternate signal stack (keep stack
 * use under 4 KiB), at any point of the program: inside malloc, holding
 * any lock. It may:
 *   - read the sequence and its tuples, call s->emit (as often as it likes),
 *   - use its own static memory and the per-thread scratch area s->scratch
 *     (module.scratch_size bytes, zeroed at the thread's first sequence),
 *   - call async-signal-safe functions (signal-safety(7)) and pure ones
 *     (memcpy, memset, arithmetic). Use __atomic builtins for static data
 *     shared between threads: two threads' handlers run concurrently.
 * It must NOT call malloc/free, stdio (printf, fopen), locks (pthread_mutex,
 * anything that takes one: dlopen, dlsym, getenv),
 * anything that may block, and must not read program memory itself (the
 * tuple has what was captured; a stray pointer faults). Everything that
 * needs those goes into init, which runs in normal context.
 * A SIGSEGV or SIGBUS in sequence() is caught: vprof abandons the call,
 * disables the module for the rest of the process (value sampling goes
 * on with vprof's default capture), says so once on stderr, and the
 * program continues unharmed. Other faults (SIGFPE from a division by zero,
 * SIGILL, an endless loop) are not recovered: they are the program's.
 *
 * Value kinds. A module emits into vprof's own kinds (VPROF_KIND_*, the
 * numbers the database stores, spool/hotlist.h) or into the range
 * reserved for modules, VPROF_KIND_MODULE(slot, format): 8 slots (0-7)
 * in each of 4 report formats. The format is part of the kind, so the
 * reports format a module's values with no module loaded. How each kind
 * is written in reports:
 *   RESULT, SRC1, SRC2 (and *_BY_SITE)  signed decimal and hex: "3 (0x3)"
 *   ADDR, ADDR_LATENCY                  hex
 *   RETADDR, TARGET                     symbol+offset: "op_add+0x0" (the
 *                                       merge turns code addresses into
 *                                       offsets in the image, so they name
 *                                       a symbol whatever the load address)
 *   STRIDE                              signed decimal: "-64"
 *   LATENCY                             latency bins, named by the levels
 *                                       `vprof calibrate` found: "170 cycles (DRAM)"
 *   VPROF_KIND_MODULE(s, VPROF_FMT_HEX / _SIGNED / _UNSIGNED / _DOUBLE)
 *                                       hex / signed / unsigned decimal /
 *                                       the 64 bits as an IEEE double
 * Composite kinds keep aux (*_BY_SITE: aux = call site, a return address;
 * ADDR_LATENCY: aux = latency bin); for other kinds pass aux = 0, it is
 * kept as part of the value.
 */
#ifndef VPROF_MODULE_H
#define VPROF_MODULE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define VPROF_MODULE_API_VERSION 1

#define VPROF_MODULE_EXPORT __attribute__((visibility("default")))

/* ---- what to capture: vprof_module.capture ----
 * Instruction classes (at least one): which interpreted instructions
 * become tuples. The others run (the interpreter advances the thread
 * exactly) but are not shown to the module. */
#define VPROF_CAP_LOADS      0x0001u   /* reads memory (an explicit memory operand, push/pop...) */
#define VPROF_CAP_STORES     0x0002u   /* writes memory */
#define VPROF_CAP_INDIRECT   0x0004u   /* indirect call or jump (register or memory target) */
#define VPROF_CAP_ALL        0x0008u   /* every instruction */
/* What a tuple carries (fields not asked for are 0). */
#define VPROF_CAP_RESULTS    0x0100u   /* result[]: registers and memory written */
#define VPROF_CAP_SOURCES    0x0200u   /* source[]: registers and memory read */
#define VPROF_CAP_ADDRESSES  0x0400u   /* access[].addr/size/write */
#define VPROF_CAP_LATENCY    0x0800u   /* access[].latency: loads timed with rdtscp (costs ~20 ns each) */
#define VPROF_CAP_SITE       0x1000u   /* sequence.retaddr: unwinds the stack (~1 us) */

/* ---- a tuple: one interpreted instruction ---- */
#define VPROF_INSN_LOAD      0x01u     /* read memory */
#define VPROF_INSN_STORE     0x02u     /* wrote memory */
#define VPROF_INSN_CALL      0x04u     /* a call */
#define VPROF_INSN_JUMP      0x08u     /* an unconditional jump */
#define VPROF_INSN_COND      0x10u     /* a conditional branch */
#define VPROF_INSN_RET       0x20u     /* a return */
#define VPROF_INSN_INDIRECT  0x40u     /* call/jump through a register or memory */

#define VPROF_MAX_OPS    4             /* results and sources kept per tuple */
#define VPROF_MAX_ACCESS 4             /* memory accesses kept per tuple */

struct vprof_access {
	uint64_t addr;                 /* effective address (segment base included) */
	uint32_t size;                 /* bytes */
	uint32_t write;                /* 1: a store, 0: a load */
	uint64_t latency;              /* TSC ticks around the load (VPROF_CAP_LATENCY), 0 else */
};

struct vprof_tuple {
	uint64_t pc;                   /* the instruction's address */
	uint64_t next;                 /* where execution went next: for a taken
	                                * branch its target, else pc + length */
	uint32_t cls;                  /* VPROF_INSN_* */
	/* Position in the run, 0 = the first observed instruction: where the
	 * sample landed (unless --skew-skip skipped some first). Samples land
	 * more often on instructions that stall (a mispredicted branch, a
	 * missing load), so a module counting a per-instance property that
	 * correlates with stalling (which target a branch took) can skip
	 * index 0 to keep its shares unbiased, as the indirect module does. */
	uint32_t index;
	uint8_t  length;               /* bytes */
	uint8_t  nresult, nsource, naccess;
	uint32_t memsize;              /* bytes of the explicit memory operand, 0 none */
	uint32_t memory_known;         /* 1: memory below holds its value */
	/* The explicit memory operand's value, low 64 bits: what was loaded
	 * (VPROF_CAP_SOURCES) or else what was stored (VPROF_CAP_RESULTS).
	 * Where the interpreter records a load only through its result (some
	 * SSE moves), a plain load (the memory operand its only explicit
	 * source, one register written) gives its result (VPROF_CAP_SOURCES
	 * and VPROF_CAP_RESULTS both); else memory_known is 0. */
	uint64_t memory;
	/* Explicit register and memory operands, in the instruction's
	 * (Intel) operand order, low 64 bits each; flags, RIP and immediates
	 * are left out (an immediate never varies). */
	uint64_t result[VPROF_MAX_OPS];
	uint64_t source[VPROF_MAX_OPS];
	struct vprof_access access[VPROF_MAX_ACCESS];
};

/* One interpreted run: the tuples of the instructions that matched the
 * capture classes, in execution order. Valid only during the call. */
struct vprof_sequence {
	const struct vprof_tuple *tuple;
	uint32_t n;
	uint32_t executed;             /* instructions the run interpreted (>= n) */
	uint64_t retaddr;              /* return address of the procedure the sample
	                                * landed in (VPROF_CAP_SITE), 0 unknown */
	void *scratch;                 /* per-thread, scratch_size bytes */
	/* Emit one value sample into the hotlist of (kind, pc). AS-safe;
	 * a kind vprof does not know is dropped. */
	void (*emit)(const struct vprof_sequence *s, unsigned kind, uint64_t pc,
		     uint64_t value, uint64_t aux);
	void *host;                    /* vprof's, do not touch */
};

/* What init gets: where the profile goes. Valid during init only. */
struct vprof_module_host {
	unsigned api_version;          /* VPROF_MODULE_API_VERSION of libvprof.so */
	const char *db;                /* the database directory (VPROF_DB) */
	const char *path;              /* the module's own path */
	int quiet;                     /* 1 in a process whose parent already spoke */
	/* One line on stderr, prefixed "vprof: MODULE: ". Normal context only. */
	void (*say)(const struct vprof_module_host *h, const char *msg);
};

struct vprof_module {
	unsigned api_version;          /* first: VPROF_MODULE_API_VERSION */
	const char *name;              /* short name, for messages */
	unsigned capture;              /* VPROF_CAP_* */
	unsigned scratch_size;         /* per-thread scratch bytes (at most VPROF_SCRATCH_MAX) */
	/* Optional, once, in libvprof.so's constructor (normal context: may
	 * allocate, read files). Return 0, or non-zero with a reason in why
	 * (the module is then refused, one message, default capture). */
	int (*init)(const struct vprof_module_host *h, char *why, size_t whylen);
	/* Required: one call per interpreted run with at least one tuple, in
	 * the signal handler (see THE HANDLER RULES above). */
	void (*sequence)(const struct vprof_sequence *s);
};

#define VPROF_SCRATCH_MAX (64u * 1024u)

/* The one symbol a module defines, declared here with default visibility
 * and C linkage: a module compiled with -fvisibility=hidden, or in C++,
 * exports it all the same (in C++ leave VPROF_MODULE_EXPORT off the
 * definition: g++ warns that it is ignored there). */
extern VPROF_MODULE_EXPORT const struct vprof_module vprof_module;

/* ---- value kinds (the numbers are on disk: spool/hotlist.h MERGE_VK_*) ---- */
enum vprof_kind {
	VPROF_KIND_RESULT = 1,         /* a result */
	VPROF_KIND_SRC1 = 2,           /* a source operand */
	VPROF_KIND_SRC2 = 3,
	VPROF_KIND_ADDR = 4,           /* an effective address */
	VPROF_KIND_LATENCY = 5,        /* a load latency bin (TSC ticks) */
	VPROF_KIND_RETADDR = 6,        /* a return address: a caller */
	VPROF_KIND_TARGET = 7,         /* an indirect branch's target */
	VPROF_KIND_STRIDE = 8,         /* address minus the previous one at this pc */
	VPROF_KIND_RESULT_BY_SITE = 9, /* aux = call site (a return address) */
	VPROF_KIND_SRC1_BY_SITE = 10,
	VPROF_KIND_SRC2_BY_SITE = 11,
	VPROF_KIND_ADDR_LATENCY = 12,  /* value = address, aux = latency bin */
	/* A procedure argument at a call: pc = the call instruction, value =
	 * the register at the callee's entry, aux = the callee's entry
	 * address. One kind per register: rdi rsi rdx rcx r8 r9, then
	 * xmm0..xmm7 (low 64 bits). */
	VPROF_KIND_ARG_RDI = 13,
	VPROF_KIND_ARG_XMM0 = 19,
	VPROF_KIND_ARG_XMM7 = 26,
};

/* Report formats of the module kinds. */
enum vprof_format {
	VPROF_FMT_HEX = 0,
	VPROF_FMT_SIGNED = 1,
	VPROF_FMT_UNSIGNED = 2,
	VPROF_FMT_DOUBLE = 3,          /* the value's 64 bits are an IEEE double */
};

/* The module kinds: slot 0..7, format VPROF_FMT_*. Named "modS.FORMAT"
 * in reports ("mod0.hex", "mod2.double"). */
#define VPROF_KIND_MODULE_FIRST 32
#define VPROF_KIND_MODULE(slot, format) \
	(VPROF_KIND_MODULE_FIRST + ((unsigned)(format) & 3u) * 8u + ((unsigned)(slot) & 7u))

#ifdef __cplusplus
}
#endif

#endif
