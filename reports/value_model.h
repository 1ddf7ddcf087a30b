/*
 * value_model.h — what the value-sampling reports share (vprof list, invariants,
 * latency, calibrate): the model of report_model_load() plus every value
 * hotlist of the same epoch(s), each resolved to its image, procedure
 * (demangled) and source line; PC sample counts by (image, address) for
 * the time share of an instruction; load-latency levels from the
 * database's calibration file; and the ways values are written.
 *
 * Workload: an epoch holds thousands of hotlists (a spool's shared value
 * area has room for 16384); they are sorted once by (image, address,
 * kind) and looked up by binary search. Single-threaded, nothing
 * async-signal-safe, like the rest of the vprof command.
 */
#ifndef VPROF_REPORTS_VALUES_H
#define VPROF_REPORTS_VALUES_H

#include "reports/model.h"
#include "reports/report.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Where an address of an image is: procedure (demangled; "[no symbol]"),
 * its mangled name and extent, file and line (NULL/0 when DWARF has none).
 * Strings live until report_value_model_free(). */
struct report_value_where {
	const char *proc, *sysname;
	uint64_t start, size;
	const char *file;
	int line;
};

struct report_value_hot {
	uint32_t image;                 /* into value_model.m.images */
	uint64_t vaddr;
	unsigned kind;                  /* MERGE_VK_* */
	uint64_t samples;               /* PC samples of the main event here */
	struct report_value_where w;
	struct spool_hotlist h;         /* sorted: largest count first */
};

/* One distinguishable load-latency level, from `vprof calibrate`. */
struct report_value_level {
	char name[16];
	uint64_t typical;               /* TSC ticks of rdtscp; load; rdtscp */
	uint64_t upto;                  /* latencies <= upto are this level */
	uint64_t from_bytes, to_bytes;  /* working sets that measured it */
};
#define VALUE_LEVELS_MAX 8

struct report_value_elf;
struct report_value_proto;

struct report_value_model {
	struct report_model m;          /* lines resolved */
	unsigned ev;                    /* main event: the time base */
	uint64_t total;                 /* its samples */
	struct report_value_hot *hot;          /* sorted by image, vaddr, kind */
	size_t nhot, caphot;
	struct report_value_level levels[VALUE_LEVELS_MAX];
	int nlevels;                    /* 0: no calibration file */
	char **strs;                    /* demangled names we own */
	size_t nstrs, capstrs;
	/* values_image.c: per image, read on first use */
	struct report_value_elf *elf;
	size_t nelf;
	/* values_class.c: where the profiled processes had their images and
	 * stacks, as the values themselves reveal (value_layout) */
	int layout_done;
	struct value_bias { uint32_t image; uint64_t bias; } biases[64];
	int nbiases;
	uint64_t stack_lo[16], stack_hi[16];   /* address ranges seen marked as stack */
	int nstacks;
	/* values_proto.c: prototypes looked up, by (image, entry) */
	struct report_value_proto *protos;
	size_t nprotos, capprotos;
};

/* Load as report_model_load() does (same return values), then the
 * hotlists and the calibration. cmd names the command in messages. */
int report_value_model_load(struct report_value_model *vm, const struct report_opts *o, const char *cmd);
void report_value_model_free(struct report_value_model *vm);

/* Keep a malloc'd string until report_value_model_free() (exits after a message
 * when s is NULL: out of memory). */
const char *report_value_own(struct report_value_model *vm, char *s);

/* Samples of the main event at (image, vaddr). */
uint64_t report_value_pc_samples(const struct report_value_model *vm, uint32_t image, uint64_t vaddr);

/* The time of v's instruction as PC samples: those of its source line, at
 * least its own (a timer interrupt lands after the instruction that took
 * the time, on the same line). */
uint64_t report_value_line_samples(const struct report_value_model *vm, const struct report_value_hot *v);

/* Resolve an address of an image (see struct report_value_where). */
void report_value_where(struct report_value_model *vm, uint32_t image, uint64_t vaddr, struct report_value_where *w);

/* A code address as a hotlist of image `holder` stores it (an ELF vaddr
 * in holder, or SPOOL_HOT_XREF into another image of the model): its
 * image and vaddr. 0, or -1 when it cannot be placed (an absolute address
 * of one process's layout, or an image the model lacks). */
int report_value_code_place(const struct report_value_model *vm, uint32_t holder, uint64_t code, uint32_t *image,
			    uint64_t *vaddr);

/* A call site from a return address (aux of *_BY_SITE kinds) stored by a
 * hotlist of image `holder`: the call instruction ends at retaddr, so its
 * line is that of retaddr - 1. Returns 0 with *w filled, or -1. */
int report_value_site(struct report_value_model *vm, uint32_t holder, uint64_t retaddr, struct report_value_where *w);

/* A code address of an image as "symbol" or "symbol+0x1a" (demangled),
 * or NULL when no symbol covers it. */
const char *report_value_code_text(const struct report_value_model *vm, uint32_t image, uint64_t va, char *buf, size_t cap);

/* "file:line", or "[no line]". */
const char *report_value_source(const struct report_value_where *w, char *buf, size_t cap);

/* A value of a kind, held by a hotlist of image `holder`, as text: "3 (0x3)", "0x7fff1230", "-8", "120 cycles (DRAM)". */
const char *report_value_fmt(const struct report_value_model *vm, unsigned kind, uint32_t holder, uint64_t v, char *buf,
			     size_t cap);

/* The level a latency (TSC ticks, binned) falls in, or NULL without a
 * calibration. */
const char *report_value_level_of(const struct report_value_model *vm, uint64_t ticks);

/* Share of a hotlist entry: its estimate over vtot (0..1). */
double report_value_share(const struct spool_hotlist *h, int i);
/* Entry i's share of what v's hotlist counts: of the references, for the
 * cache kinds (whose window counter, SPOOL_CACHE_WINDOW, is no outcome:
 * -1 for it); report_value_share otherwise. */
double report_value_hot_share(const struct report_value_hot *v, int i);

/* The calibration file: DB/calibration. Read returns the number of levels
 * (0 when there is none), or -1 after a message if it is malformed. */
int report_value_calib_read(const char *db, struct report_value_level *lv, int cap, const char *cmd);
int report_value_calib_write(const char *db, const struct report_value_level *lv, int n, uint64_t overhead);

/* ---- values_image.c: an image's file ---- */

#define VALUE_ELF_SEGS 16
struct report_value_seg {
	uint64_t vaddr, filesz, memsz, off;
	uint32_t flags;                 /* PF_* */
};
struct report_value_sec {
	uint64_t addr, size, flags;     /* SHF_* */
	uint32_t type;
	char name[32];
};
struct report_value_dsym {                     /* a data (STT_OBJECT) symbol */
	uint64_t start, size;
	const char *name;
};
struct report_value_elf {
	int state;                      /* 0 not read, 1 usable, -1 not */
	int fd;
	int type;                       /* ET_EXEC, ET_DYN */
	int interp;                     /* an executable (PT_INTERP, not a .so) */
	struct report_value_seg seg[VALUE_ELF_SEGS];
	int nseg;
	uint64_t lo, hi;                /* extent of the loadable segments */
	uint64_t relro_lo, relro_hi;    /* PT_GNU_RELRO */
	struct report_value_sec *sec;          /* allocated sections */
	size_t nsec;
	struct report_value_dsym *dsym;        /* sorted by start */
	size_t ndsym;
	char *dnames;
};

/* The image's file, opened on first use (only while its build-id is the
 * profile's), or NULL. */
const struct report_value_elf *report_value_elf(struct report_value_model *vm, uint32_t image);
void report_value_elf_free(struct report_value_model *vm);

/* Read n bytes at vaddr from the image's file. Returns the bytes read
 * (short at the segment's end), or -1. */
long report_value_read_code(struct report_value_model *vm, uint32_t image, uint64_t vaddr, uint8_t *buf, size_t n);

/* The allocated section holding vaddr, or NULL. */
const struct report_value_sec *report_value_elf_section(const struct report_value_elf *e, uint64_t vaddr);
/* Is vaddr in memory the program cannot write once loaded: a section
 * without SHF_WRITE, or the RELRO range (.got, .data.rel.ro)? */
int report_value_elf_readonly(const struct report_value_elf *e, uint64_t vaddr);
/* The data symbol covering vaddr, or NULL. */
const struct report_value_dsym *report_value_elf_data_symbol(const struct report_value_elf *e, uint64_t vaddr);

/* ---- values_class.c: what a value is ---- */

/* How the code uses a value. */
enum report_value_type {
	VALUE_T_UNKNOWN = 0,
	VALUE_T_INT,                    /* signed integer of `bytes` */
	VALUE_T_UINT,
	VALUE_T_BOOL,
	VALUE_T_FLOAT,                  /* IEEE binary32; lanes > 1: a vector's */
	VALUE_T_DOUBLE,                 /* IEEE binary64 */
	VALUE_T_POINTER,
	VALUE_T_CODE,                   /* a code address */
	VALUE_T_VECTOR,                 /* integer lanes of a vector register */
};

/* What a value says about the program. Only data is worth specializing
 * for: the others are the same in every run by construction. */
enum report_value_class {
	VALUE_DATA = 0,
	VALUE_CONSTANT,                 /* fixed when the program was compiled */
	VALUE_FRAME,                    /* an address in the thread's stack */
	VALUE_POSITION,                 /* where code or data was loaded or allocated */
	VALUE_NCLASS,
};
const char *report_value_class_name(enum report_value_class c);   /* "data", "constant", ... */

struct report_value_info {
	enum report_value_class cls;
	const char *why;                /* why it is not data, e.g. "loaded from .rodata";
					 * "" (valid until the next report_value_info_of) */
	enum report_value_type type;
	unsigned bytes;                 /* the value's width, or a lane's */
	unsigned lanes;                 /* lanes in the 64 bits kept (1 unless a vector) */
	unsigned vlanes;                /* lanes of the whole operand (vectors) */
};

/* What entry e of hotlist v is and how to print it: from the instruction
 * at v's PC decoded from the image file (the operand the kind names, as
 * preload/value_sample.c picks it), the ELF sections its memory operand reads,
 * the stack marks, and, for arguments, the callee (values_proto.c).
 * Without the image file: data, typed by the kind alone. */
void report_value_info_of(struct report_value_model *vm, const struct report_value_hot *v, uint32_t e, struct report_value_info *out);

/* Entry e of hotlist v as text, typed (report_value_info_of): "2.0", "3 (0x3)",
 * "-1 (0xffffffff)", "{1.5, 0.0, ...}" for vector lanes, "&window+0x10",
 * "[stack] 0x7ffe...", "[heap] 0x55..." for pointers, code addresses as
 * symbol+offset. */
const char *report_value_text(struct report_value_model *vm, const struct report_value_hot *v, uint32_t e, char *buf, size_t cap);
/* A raw value of a type as text (the typed part of report_value_text). */
const char *report_value_typed_fmt(struct report_value_model *vm, uint64_t value, const struct report_value_info *vi, char *buf,
				   size_t cap);
const char *report_value_type_name(const struct report_value_info *vi);   /* "double", "int32", "pointer", ... */

/* A pointer of a profiled process placed in an image of the model, by
 * the load biases the database's values reveal: 0 with *image and
 * *vaddr, or -1. */
int report_value_place_pointer(struct report_value_model *vm, uint64_t p, uint32_t *image, uint64_t *vaddr);
/* Is p in a stack of a profiled thread, as the stack marks say? */
int report_value_in_stack(struct report_value_model *vm, uint64_t p);

/* The hotlist of (image, vaddr, kind), or NULL. */
const struct report_value_hot *report_value_hot_find(const struct report_value_model *vm, uint32_t image, uint64_t vaddr,
						     unsigned kind);

/* A decoded instruction, as the classification sees it. */
struct report_value_insn {
	uint64_t vaddr;
	unsigned len;
	unsigned mnemonic;              /* ZydisMnemonic */
	int is_call, is_jmp, is_ret;
	int direct;                     /* call/jmp rel: target is set */
	uint64_t target;
	char text[96];                  /* Intel syntax */
};
/* Decode the instruction at (image, vaddr) from the file: 0, or -1. */
int report_value_decode(struct report_value_model *vm, uint32_t image, uint64_t vaddr, struct report_value_insn *out);

/* ---- values_code.c: operands that are arguments ---- */

/* If v's operand (SRC1/SRC2 kinds) is a register that holds one of the
 * procedure's arguments wherever it is read (an argument register that
 * nothing in the procedure writes, and no call), that register as an ARG
 * kind (SPOOL_VK_ARG_FIRST + SysV index: rdi..r9, xmm0..xmm7); else 0.
 * values_proto.c names it. */
unsigned report_value_argument(struct report_value_model *vm, const struct report_value_hot *v);
/* If v's operand (RESULT kinds) is written into an argument register that
 * the call at call_vaddr, a few instructions on in the same straight-line
 * code, passes unchanged (`mov rdx, rax` before `call memcpy`), that
 * register as an ARG kind; else 0. */
unsigned report_value_sets_argument(struct report_value_model *vm, const struct report_value_hot *v,
				    uint64_t call_vaddr);

/* ---- values_proto.c: procedure prototypes ---- */

#define VALUE_PARAMS_MAX 16
struct report_value_param {
	char name[48];                  /* "" when DWARF has none */
	char type[64];                  /* C type as DWARF spells it, "" unknown */
	int number;                     /* 1-based, in source order */
	unsigned kind;                  /* the ARG kind it arrives in, 0: memory or unknown */
	enum report_value_type vt;
	unsigned bytes;
};
struct report_value_proto {
	uint32_t image;
	uint64_t entry;
	int known;                      /* found in DWARF (or a known libc routine) */
	char name[128];                 /* its DWARF name ("__pow") */
	int nparams;
	struct report_value_param p[VALUE_PARAMS_MAX];
	/* per ARG kind, what the callee's code does first with the register
	 * (its type where DWARF has none) */
	enum report_value_type reg_vt[SPOOL_VK_ARG_LAST - SPOOL_VK_ARG_FIRST + 1];
	unsigned reg_bytes[SPOOL_VK_ARG_LAST - SPOOL_VK_ARG_FIRST + 1];
};

/* The prototype of the procedure starting at (image, entry): from the
 * DWARF of the image or its debug file (the subprogram whose low_pc is
 * entry), its parameters mapped to registers by the SysV classes; else
 * name (the symbol's, or `fallback`, e.g. "memcpy") for a few libc routines. Cached. */
const struct report_value_proto *report_value_proto_of(struct report_value_model *vm, uint32_t image, uint64_t entry,
						       const char *fallback);
/* The parameter that arrives in ARG kind k, or NULL. */
const struct report_value_param *report_value_proto_param(const struct report_value_proto *p, unsigned kind);
void report_value_proto_free(struct report_value_model *vm);

/* The register of an ARG kind: "rdi", ..., "xmm7"; its SysV ordinal
 * within its class ("1st integer register": 1). */
const char *report_value_arg_reg(unsigned kind);

/* Is a code value (RETADDR, TARGET, RANGE, TAKEN) an address in the
 * hotlist's own image, a vaddr there, rather than another image's or an
 * absolute one? */
static inline int report_value_local_code(uint64_t v)
{
	return !(v & SPOOL_HOT_FOREIGN) && !spool_hot_is_xref(v);
}

/* One entry of a hotlist whose value is a code address: from the
 * hotlist's vaddr to the value's, est times (its estimate). */
struct report_code_pair {
	uint64_t from, to;
	double est;
	double windows;                 /* RANGE: windows that ran it; 0 unknown (older profiles) */
};
/* The entries of image's hotlists of kind (RANGE, TAKEN) whose value is
 * in the same image, into *out (malloc'd, the caller frees; NULL when
 * none); a RANGE that would end before it starts is left out, and a
 * RANGE's window counts (SPOOL_RANGE_WINDOWS) are its pair's windows,
 * not pairs of their own. Returns their number. */
size_t report_value_code_pairs(const struct report_value_model *vm, uint32_t image, unsigned kind,
			       struct report_code_pair **out);

/* The latency kinds, whose distributions `vprof latency` reads. */
static inline int report_value_kind_is_latency(unsigned k)
{
	return k == SPOOL_VK_LATENCY || k == SPOOL_VK_ADDR_LATENCY;
}
static inline int report_value_kind_by_site(unsigned k)
{
	return k >= SPOOL_VK_RESULT_BY_SITE && k <= SPOOL_VK_SRC2_BY_SITE;
}
static inline int report_value_kind_is_arg(unsigned k)
{
	return k >= SPOOL_VK_ARG_FIRST && k <= SPOOL_VK_ARG_LAST;
}
static inline int report_value_kind_is_xmm_arg(unsigned k)
{
	return k >= SPOOL_VK_ARG_XMM0 && k <= SPOOL_VK_ARG_LAST;
}
/* The plain kind a *_BY_SITE kind pairs with a call site. */
static inline unsigned report_value_plain_kind(unsigned k)
{
	return k == SPOOL_VK_RESULT_BY_SITE ? SPOOL_VK_RESULT
	       : k == SPOOL_VK_SRC1_BY_SITE ? SPOOL_VK_SRC1
	       : k == SPOOL_VK_SRC2_BY_SITE ? SPOOL_VK_SRC2 : k;
}

#endif
