/* interp/interp.h — the x86-64 interpreter's public API.
 *
 * What it owns: an interpreter state (struct interp_state) that holds a
 * thread's user-visible registers, its conversion to and from a signal
 * ucontext_t (including the XSAVE area), a run loop that advances the state
 * by up to N instructions exactly as the processor would, per-instruction
 * observer hooks. The contract every instruction-family file follows (the
 * handler's context and its operand and flag helpers) is internal.h's.
 *
 * Workload: called from a signal handler every Nth sample, for runs of a few
 * (typically 4..64) instructions, and from tests/benchmarks for long runs.
 * Speed comes from a per-thread decode cache of compact pre-decoded
 * instructions (struct interp_insn) with the handler already resolved.
 *
 * Concurrency: a struct interp_state and struct interp_thread belong to one
 * thread at a time; nothing in the run path takes locks or allocates.
 * Program memory is touched only through the fault-safe routines in mem.c;
 * LOCKed read-modify-writes are done atomically on the real memory.
 *
 * Async-signal-safety is stated per function below: "AS-safe" means it may
 * be called from a signal handler; "not AS-safe" means call it at startup or
 * thread start.
 */
#ifndef VPROF_INTERP_H
#define VPROF_INTERP_H

#include <stddef.h>
#include <stdint.h>
#include <ucontext.h>
#include <Zydis/Zydis.h>

/* ---------------------------------------------------------------- state */

/* GPR numbers are the encoding order, so ModRM/REX numbers index gpr[]. */
enum {
	INTERP_RAX, INTERP_RCX, INTERP_RDX, INTERP_RBX,
	INTERP_RSP, INTERP_RBP, INTERP_RSI, INTERP_RDI,
	INTERP_R8, INTERP_R9, INTERP_R10, INTERP_R11,
	INTERP_R12, INTERP_R13, INTERP_R14, INTERP_R15,
};

/* RFLAGS bits the interpreter computes. */
#define INTERP_CF  (1u << 0)
#define INTERP_PF  (1u << 2)
#define INTERP_AF  (1u << 4)
#define INTERP_ZF  (1u << 6)
#define INTERP_SF  (1u << 7)
#define INTERP_TF  (1u << 8)
#define INTERP_IF  (1u << 9)
#define INTERP_DF  (1u << 10)
#define INTERP_OF  (1u << 11)
#define INTERP_AC  (1u << 18)
#define INTERP_ID  (1u << 21)
#define INTERP_ARITH_FLAGS (INTERP_CF | INTERP_PF | INTERP_AF | INTERP_ZF | INTERP_SF | INTERP_OF)

/* XSAVE state-component bits (xstate_bv). */
#define INTERP_XS_X87     (1ull << 0)
#define INTERP_XS_SSE     (1ull << 1)   /* xmm0-15 low 128 bits, MXCSR */
#define INTERP_XS_YMM     (1ull << 2)   /* bits 128..255 of ymm0-15 */
#define INTERP_XS_OPMASK  (1ull << 5)   /* k0-k7 */
#define INTERP_XS_ZMM_H   (1ull << 6)   /* bits 256..511 of zmm0-15 */
#define INTERP_XS_HI16    (1ull << 7)   /* zmm16-31, all 512 bits */
#define INTERP_XS_ALL     (INTERP_XS_X87 | INTERP_XS_SSE | INTERP_XS_YMM | \
			   INTERP_XS_OPMASK | INTERP_XS_ZMM_H | INTERP_XS_HI16)

/* One vector register; xmm = low 16 bytes, ymm = low 32, zmm = all 64. */
typedef union interp_vec {
	uint8_t  b[64];
	uint16_t w[32];
	uint32_t d[16];
	uint64_t q[8];
	float    f[16];
	double   g[8];
} __attribute__((aligned(64))) interp_vec;

struct interp_state {
	interp_vec zmm[32];        /* first: keeps the 64-byte alignment cheap */
	uint64_t gpr[16];          /* encoding order, see INTERP_RAX.. */
	uint64_t rip;
	uint64_t rflags;
	uint64_t fs_base, gs_base; /* valid only if seg_valid (read lazily) */
	uint64_t k[8];             /* AVX-512 opmask registers */
	uint64_t xstate_bv;        /* components live (not in initial state) */
	uint64_t xstate_dirty;     /* components written since from_ucontext:
				    * only these are copied back. A family
				    * that changes st->zmm/k directly must
				    * call interp_vreg_touch (or set the bit
				    * in both xstate_bv and xstate_dirty);
				    * interp_write does it for operands. */
	uint64_t xstate_avail;     /* components whose values are known (loaded
				    * from the frame or initial); a vector
				    * family needing one not in here stops
				    * with INTERP_STOP_BADSTATE */
	uint32_t mxcsr;
	uint32_t mxcsr_mask;
	uint8_t  seg_valid;        /* 1: fs_base/gs_base hold real values */
	uint8_t  has_fpregs;       /* 1: the ucontext had an FP/XSAVE area */
	uint8_t  pad[6];
	/* x87/MMX: bytes 0..159 of the FXSAVE image (FCW..ST7; bytes 24..31
	 * are a stale copy of MXCSR: use mxcsr). The control instructions
	 * (x87.c) read and write FCW/FSW/FTW/FOP/FIP/FDP, marking INTERP_XS_X87
	 * dirty so interp_to_ucontext writes the image back; other x87 and
	 * MMX instructions stop the run (INTERP_STOP_UNSUPPORTED). */
	uint8_t  x87[160];
	/* Set by interp_from_ucontext_lazy: the frame's FP area, whose x87,
	 * vector and opmask registers (x87[], zmm[], k[]) have not been
	 * copied in yet; NULL once they are (interp_state_load_vec), and
	 * always NULL after interp_from_ucontext. Zero it in states built by
	 * hand. */
	const uint8_t *lazy_fp;
};

/* --------------------------------------------------------- stop reasons */

enum interp_stop {
	INTERP_OK = 0,             /* handler: instruction done, go on */
	INTERP_STOP_LIMIT,         /* max_insns reached */
	INTERP_STOP_UNSUPPORTED,   /* no exact semantics for this instruction */
	INTERP_STOP_WOULD_FAULT,   /* a memory access would fault, or #DE/#UD/
				    * #GP etc.: the program must execute it
				    * natively and take its own fault */
	INTERP_STOP_SYSCALL,       /* syscall/int: left to the hardware */
	INTERP_STOP_DECODE,        /* bytes at RIP unreadable or undecodable */
	INTERP_STOP_OBSERVER,      /* an observer asked to stop */
	INTERP_STOP_BADSTATE,      /* state not usable (e.g. no fpregs and a
				    * vector instruction came up) */
	INTERP_STOP__COUNT
};

/* Short name of a stop reason ("limit", "unsupported", ...). AS-safe. */
const char *interp_stop_name(int stop);

/* -------------------------------------------------- pre-decoded insns */

enum interp_optype {
	INTERP_OP_NONE = 0,
	INTERP_OP_REG,
	INTERP_OP_MEM,             /* a memory access */
	INTERP_OP_AGEN,            /* LEA-style address, no access */
	INTERP_OP_IMM,
	INTERP_OP_PTR,             /* far pointer: unsupported */
};

/* Register kinds, so handlers need not range-test ZydisRegister values. */
enum interp_regkind {
	INTERP_RK_GPR = 1,         /* idx = GPR number; size 1/2/4/8 */
	INTERP_RK_GPR8H,           /* ah/ch/dh/bh: idx = GPR number 0..3 */
	INTERP_RK_VEC,             /* xmm/ymm/zmm: idx 0..31, size 16/32/64 */
	INTERP_RK_K,               /* opmask: idx 0..7 */
	INTERP_RK_FLAGS,           /* rflags/eflags/flags */
	INTERP_RK_RIP,
	INTERP_RK_MXCSR,
	INTERP_RK_SEG,             /* cs..gs */
	INTERP_RK_OTHER,           /* x87, mmx, control, bound...: handlers
				    * that see it return UNSUPPORTED */
};

#define INTERP_NOREG 0xff          /* base/index absent */
#define INTERP_RIPREL 16           /* base == RIP-relative */

struct interp_operand {
	uint8_t  type;             /* enum interp_optype */
	uint8_t  action;           /* ZYDIS_OPERAND_ACTION_* (read/write/cond) */
	uint8_t  visible;          /* 1 explicit, 0 implicit or hidden */
	uint8_t  rkind;            /* REG: enum interp_regkind */
	uint16_t size;             /* bytes accessed/held (1..64); for a
				    * vector register = its width */
	uint16_t reg;              /* REG: the ZydisRegister */
	uint8_t  idx;              /* REG: number within its kind */
	/* MEM/AGEN */
	uint8_t  base;             /* GPR number, INTERP_RIPREL or NOREG */
	uint8_t  index;            /* GPR number (or vector number if vsib),
				    * or INTERP_NOREG */
	uint8_t  scale;            /* 1,2,4,8 (0 when no index) */
	uint8_t  seg;              /* 0 none, 1 fs, 2 gs */
	uint8_t  vsib;             /* 1: index is a vector register */
	uint8_t  elem_size;        /* bytes per element (vector ops), 0 n/a */
	uint8_t  elem_type;        /* ZydisElementType */
	uint16_t elem_count;
	uint8_t  imm_signed;
	uint8_t  pad;
	int64_t  val;              /* MEM/AGEN: displacement;
				    * IMM: value, sign-extended if signed */
};

#define INTERP_MAX_OPS 8

/* AVX/EVEX details the vector families need (copied from Zydis). */
struct interp_avx {
	uint8_t  vl;               /* vector length in bytes (16/32/64), 0 n/a */
	uint8_t  mask_idx;         /* opmask register number, 0 = none/k0 */
	uint8_t  mask_mode;        /* ZydisMaskMode */
	uint8_t  bcst;             /* ZydisBroadcastMode */
	uint8_t  bcst_static;
	uint8_t  rounding;         /* ZydisRoundingMode */
	uint8_t  sae;
	uint8_t  pad;
};

/* An instruction's handler (its contract: internal.h). */
struct interp_exec;
typedef int interp_handler(struct interp_exec *x);

/* A decoded instruction as kept in the decode cache. */
struct interp_insn {
	uint64_t pc;
	interp_handler *fn;        /* its row's handler, or NULL: unsupported */
	uint64_t attrib;           /* ZYDIS_ATTRIB_* (lock, rep, segment...) */
	uint32_t epoch;            /* decode-cache validation, see decode.c */
	uint16_t mnemonic;         /* ZydisMnemonic */
	uint8_t  len;              /* bytes */
	uint8_t  opsize;           /* operand width in bytes (Zydis) */
	uint8_t  addrsize;         /* 4 or 8 */
	uint8_t  nops;             /* operands in op[], visible first */
	uint8_t  nvis;             /* visible operands */
	uint8_t  encoding;         /* ZydisInstructionEncoding */
	uint8_t  opcode_map;       /* ZydisOpcodeMap */
	uint8_t  opcode;
	uint8_t  bytes[15];
	struct interp_avx avx;
	uint8_t  xflags;           /* INTERP_XF_*, set at decode */
	uint16_t row;              /* its row in the instruction table
				    * (internal.h: interp_row), 0 none */
	struct interp_operand op[INTERP_MAX_OPS];
};

/* interp_insn.xflags */
#define INTERP_XF_VEC 1u           /* may touch x87/vector/opmask/MXCSR
				    * state: loads a lazy state first */

/* ------------------------------------------------------ observer */

#define INTERP_MAX_ACCESS 8

struct interp_access {
	uint64_t addr;
	uint32_t size;             /* bytes */
	uint8_t  write;
	uint8_t  pad[3];
	uint64_t latency;          /* rdtscp cycles around the interpreter's
				    * own load; 0 if not timed or a store */
};

/* What one instruction did, handed to the observer after it committed. */
struct interp_record {
	const struct interp_insn *insn;    /* pc, bytes, decoded form */
	uint64_t src[INTERP_MAX_OPS];      /* low 64 bits of each operand read,
					    * by operand index */
	uint64_t dst[INTERP_MAX_OPS];      /* low 64 bits of each written */
	uint16_t src_mask, dst_mask;       /* bit i: op i read / written */
	uint32_t naccess;                  /* total, may exceed MAX_ACCESS */
	uint64_t rflags_in, rflags_out;
	struct interp_access acc[INTERP_MAX_ACCESS];
};

#define INTERP_OBS_LATENCY 1u      /* time each load with rdtscp */

struct interp_observer {
	/* Called after each instruction committed, in the handler context
	 * (must be AS-safe). Return 0 to go on, non-zero to stop the run
	 * (INTERP_STOP_OBSERVER). May be NULL. */
	int (*insn)(void *arg, const struct interp_state *st,
		    const struct interp_record *r);
	void *arg;
	unsigned flags;            /* INTERP_OBS_* */
};

/* ---------------------------------------------------- per-thread scratch */

#ifndef INTERP_DCACHE_SIZE
#define INTERP_DCACHE_SIZE 512     /* entries, power of two: the largest a
				    * thread can have (interp_thread_init_n
				    * picks fewer at run time) */
#endif

/* Preallocate one per thread (at thread start; it is large, see
 * interp_thread_size()) and pass it to interp_run. Zero it, or call
 * interp_thread_init, before first use: that is the full cache of
 * INTERP_DCACHE_SIZE entries. A smaller cache (interp_thread_size_n /
 * interp_thread_init_n) needs only the first bytes of the struct: the
 * entries past its size are never touched. */
struct interp_thread {
	uint32_t epoch;            /* bumped per run: cache entries re-check
				    * their bytes once per run */
	uint32_t dshift;           /* the cache has INTERP_DCACHE_SIZE >> dshift
				    * entries (0: all) */
	uint64_t decoded, hits;    /* statistics */
	struct interp_insn dcache[INTERP_DCACHE_SIZE];
};

/* ------------------------------------------------------ entry points */

/* One-time set-up: CPUID leaf 0xD offsets, dispatch table, decoder, the
 * vendor model and its native self-check (below).
 * Not AS-safe (cpuid traps to the hypervisor); idempotent. Also run by a
 * constructor. Returns 0 or negative errno. */
int interp_init(void);

/* ------------------------------------------------------ vendor model
 * What the manuals leave undefined (AF after shifts, OF after rotates and
 * multi-bit shifts, SF/ZF/AF/PF after mul, PF after BMI1/BMI2, the 16-bit
 * shld/shrd result for counts above 16, ...) differs between vendors. The
 * interpreter carries one model per vendor, recorded on real CPUs
 * (tests/fixtures/x86-flags), and uses, per rule family, the model the
 * host was checked to follow: interp_init picks the CPUID vendor's model
 * and runs a few native probes per family; a family the host follows in
 * neither model stops its instructions (INTERP_STOP_UNSUPPORTED) instead
 * of guessing. VPROF_INTERP_VENDOR=amd|intel forces a model (no check). */
enum interp_vendor {
	INTERP_VENDOR_AMD,         /* AMD Zen 5 (26/2) */
	INTERP_VENDOR_INTEL,       /* Intel Xeon, Sapphire Rapids class (6/207) */
	INTERP_VENDOR__COUNT,
	INTERP_VENDOR_NONE = 0xff, /* host matches no model: stop */
};
/* Rule families: each is checked and chosen on its own. */
enum interp_vrule {
	INTERP_VR_SHIFT,           /* shl shr sar: AF, OF for counts > 1 */
	INTERP_VR_ROTATE,          /* rol ror rcl rcr: OF */
	INTERP_VR_DSHIFT,          /* shld shrd: flags, 16-bit counts > 16 */
	INTERP_VR_MUL,             /* mul imul: SF ZF AF PF */
	INTERP_VR_DIV,             /* div idiv: all six flags */
	INTERP_VR_BMI,             /* andn bextr blsi blsmsk blsr bzhi: PF AF */
	INTERP_VR_CNT,             /* lzcnt tzcnt: OF */
	INTERP_VR_BSX,             /* bsf bsr: CF PF AF SF OF */
	INTERP_VR__COUNT
};
/* The model in effect for a rule family (enum interp_vendor, or
 * INTERP_VENDOR_NONE). AS-safe. */
int interp_vendor_rule(int family);
/* The vendor CPUID names (INTERP_VENDOR_NONE for any other). AS-safe. */
int interp_vendor_cpuid(void);
/* "amd", "intel", "none"; family names "shift", "rotate", ... AS-safe. */
const char *interp_vendor_name(int vendor);
const char *interp_vrule_name(int family);
/* For tests: use vendor's model for every family without checking the
 * host (vendor < 0: back to the checked choice). Not AS-safe; call it
 * while no run is in progress. Returns 0 or -EINVAL. */
int interp_vendor_force(int vendor);
/* Run the family's native probes and the interpreter with vendor's model
 * on the same inputs; returns the number of probes that differ (0: the
 * host follows that model as far as the probes see), -EINVAL for a
 * vendor that has no model for the family. Not AS-safe. */
int interp_vendor_probe(int family, int vendor);

/* Size of struct interp_thread (for mmap at thread start). AS-safe. */
size_t interp_thread_size(void);
/* Bytes an interp_thread with a decode cache of `entries` needs (entries
 * is rounded down to a power of two in 1..INTERP_DCACHE_SIZE). AS-safe. */
size_t interp_thread_size_n(unsigned entries);
/* Initialise such a prefix-sized interp_thread (zeroes only those bytes).
 * AS-safe. */
void interp_thread_init_n(struct interp_thread *th, unsigned entries);
/* The decode-cache entries th has. AS-safe. */
unsigned interp_thread_entries(const struct interp_thread *th);
/* Reset a thread's scratch (empties the decode cache). AS-safe. */
void interp_thread_init(struct interp_thread *th);

/* Fill st from a signal context: GPRs, RIP, RFLAGS, and from
 * uc_mcontext.fpregs (FXSAVE + XSAVE header + AVX/AVX-512 components via
 * CPUID 0xD offsets; a component whose xstate_bv bit is clear is loaded
 * as its initial state). fs/gs bases are read lazily on first use. AS-safe
 * once interp_init has run. Returns 0 or negative errno. */
int interp_from_ucontext(struct interp_state *st, const ucontext_t *uc);
/* The same, except that the x87, vector and opmask registers stay in
 * the frame until the run meets an instruction that may use them (or
 * interp_state_load_vec is called): most samples interpret only general
 * purpose code, and the copy is most of a conversion's cost. GPRs, RIP,
 * RFLAGS, MXCSR and the xstate_* masks are filled at once. The ucontext
 * must stay in place until interp_to_ucontext. AS-safe. */
int interp_from_ucontext_lazy(struct interp_state *st, const ucontext_t *uc);
/* Copy in the registers a lazy conversion left in the frame (no-op when
 * st->lazy_fp is NULL). Observers that read st->zmm/k/x87 of a lazily
 * converted state call it first. AS-safe. */
void interp_state_load_vec(struct interp_state *st);
/* Write st back into uc: GPRs, RIP, RFLAGS (arithmetic flags, DF only),
 * and every xstate component whose bit is set in st->xstate_bv, setting
 * that bit in the frame's XSAVE header so the kernel restores it. AS-safe. */
int interp_to_ucontext(const struct interp_state *st, ucontext_t *uc);
/* Fill st with the calling thread's own registers is not offered: tests
 * build states by hand or with getcontext. */

struct interp_result {
	int executed;              /* instructions committed */
	int stop;                  /* enum interp_stop */
	uint64_t stop_pc;          /* RIP of the instruction not executed */
	uint16_t stop_mnemonic;    /* its ZydisMnemonic, 0 if not decoded */
};

/* Run up to max_insns instructions from st->rip. Each instruction either
 * commits entirely or the run stops before it with the state unchanged.
 * AS-safe (once interp_init has run; the thread's SIGSEGV/SIGBUS handler
 * must call interp_fault_fixup first). Returns executed count. */
int interp_run(struct interp_state *st, struct interp_thread *th, int max_insns,
	       const struct interp_observer *obs, struct interp_result *res);

/* ------------------------------------------------- fault-safe memory
 * Implemented in mem.c as tiny assembly routines between two labels. */

/* Call first thing from a SIGSEGV/SIGBUS handler: if the fault happened
 * inside a probe routine, moves RIP to the routine's recovery path (which
 * returns -EFAULT) and returns 1; the handler then just returns. Otherwise
 * returns 0 and the fault belongs to someone else. AS-safe. (Tests and
 * benchmarks install tests/unit/fault_handler.h's handler.) */
int interp_fault_fixup(ucontext_t *uc);

/* Copy from/to program memory; 0 or -EFAULT, never crashes. AS-safe.
 * interp_mem_store does not probe: callers probe with interp_mem_wprobe
 * every page first when nothing may be partly written. */
int interp_mem_load(void *dst, uint64_t src, size_t n);
int interp_mem_store(uint64_t dst, const void *src, size_t n);
/* Is [addr, addr+n) writable? Touches each page with `lock or $0`, which
 * changes nothing but faults like a store. 0 or -EFAULT. */
int interp_mem_wprobe(uint64_t addr, size_t n);
/* Atomic compare-and-swap on program memory, size 1/2/4/8/16: if *addr ==
 * *expect, store *desired and return 1; else copy the current value into
 * *expect and return 0; -EFAULT on fault. */
int interp_mem_cas(uint64_t addr, void *expect, const void *desired, unsigned size);

#endif
