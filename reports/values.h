/*
 * values.h — what the value-sampling reports share (vprof list, invariants,
 * latency, calibrate): the model of report_model_load() plus every value
 * hotlist of the same epoch(s), each resolved to its image, procedure
 * (demangled) and source line; PC sample counts by (image, address) for
 * the time share of an instruction; load-latency levels from the
 * database's calibration file; and the ways values are written.
 *
 * Workload: an epoch holds a few thousand hotlists at most (the spool's
 * shared value area has 4096); they are sorted once by (image, address,
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

int cmd_list(int argc, char **argv);
int cmd_invariants(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);

/* Where an address of an image is: procedure (demangled; "[no symbol]"),
 * its mangled name and extent, file and line (NULL/0 when DWARF has none).
 * Strings live until value_model_free(). */
struct value_where {
	const char *proc, *sysname;
	uint64_t start, size;
	const char *file;
	int line;
};

struct value_hot {
	uint32_t image;                 /* into value_model.m.images */
	uint64_t vaddr;
	unsigned kind;                  /* MERGE_VK_* */
	uint64_t samples;               /* PC samples of the main event here */
	struct value_where w;
	struct merge_hotlist h;         /* sorted: largest count first */
};

/* One distinguishable load-latency level, from `vprof calibrate`. */
struct value_level {
	char name[16];
	uint64_t typical;               /* TSC ticks of rdtscp; load; rdtscp */
	uint64_t upto;                  /* latencies <= upto are this level */
	uint64_t from_bytes, to_bytes;  /* working sets that measured it */
};
#define VALUE_LEVELS_MAX 8

struct value_model {
	struct report_model m;          /* lines resolved */
	unsigned ev;                    /* main event: the time base */
	uint64_t total;                 /* its samples */
	struct value_hot *hot;          /* sorted by image, vaddr, kind */
	size_t nhot, caphot;
	struct value_level levels[VALUE_LEVELS_MAX];
	int nlevels;                    /* 0: no calibration file */
	char **strs;                    /* demangled names we own */
	size_t nstrs, capstrs;
};

/* Load as report_model_load() does (same return values), then the
 * hotlists and the calibration. cmd names the command in messages. */
int value_model_load(struct value_model *vm, const struct report_opts *o, const char *cmd);
void value_model_free(struct value_model *vm);

/* Samples of the main event at (image, vaddr). */
uint64_t value_pc_samples(const struct value_model *vm, uint32_t image, uint64_t vaddr);

/* Resolve an address of an image (see struct value_where). */
void value_where(struct value_model *vm, uint32_t image, uint64_t vaddr, struct value_where *w);

/* A code address as a hotlist of image `holder` stores it (an ELF vaddr
 * in holder, or MERGE_HOT_XREF into another image of the model): its
 * image and vaddr. 0, or -1 when it cannot be placed (an absolute address
 * of one process's layout, or an image the model lacks). */
int value_code_place(const struct value_model *vm, uint32_t holder, uint64_t code, uint32_t *image,
		     uint64_t *vaddr);

/* A call site from a return address (aux of *_BY_SITE kinds) stored by a
 * hotlist of image `holder`: the call instruction ends at retaddr, so its
 * line is that of retaddr - 1. Returns 0 with *w filled, or -1. */
int value_site(struct value_model *vm, uint32_t holder, uint64_t retaddr, struct value_where *w);

/* "file:line", or "[no line]". */
const char *value_source(const struct value_where *w, char *buf, size_t cap);

/* A value of a kind, held by a hotlist of image `holder`, as text: "3 (0x3)", "0x7fff1230", "-8", "120 cycles (DRAM)". */
const char *value_fmt(const struct value_model *vm, unsigned kind, uint32_t holder, uint64_t v, char *buf,
		      size_t cap);

/* The level a latency (TSC ticks, binned) falls in, or NULL without a
 * calibration. */
const char *value_level_of(const struct value_model *vm, uint64_t ticks);

/* Share of a hotlist entry: its estimate over vtot (0..1). */
double value_share(const struct merge_hotlist *h, int i);

/* The calibration file: DB/calibration. Read returns the number of levels
 * (0 when there is none), or -1 after a message if it is malformed. */
int value_calib_read(const char *db, struct value_level *lv, int cap, const char *cmd);
int value_calib_write(const char *db, const struct value_level *lv, int n, uint64_t overhead);

/* values_code.c: read n bytes at vaddr from the file of an image's
 * loadable segment (refused if the build-id differs). Returns the bytes
 * read (short at the segment's end), or -1. */
long value_read_code(const struct model_image *im, uint64_t vaddr, uint8_t *buf, size_t n);

/* If v's operand (SRC1/SRC2 kinds) is a register that holds one of the
 * procedure's integer arguments wherever it is read (an argument register
 * that nothing in the procedure writes, and no call), that argument's
 * number, 1-6; else 0. */
int value_argument(struct value_model *vm, const struct value_hot *v);

/* The latency kinds, whose distributions `vprof latency` reads. */
static inline int value_kind_is_latency(unsigned k)
{
	return k == MERGE_VK_LATENCY || k == MERGE_VK_ADDR_LATENCY;
}
static inline int value_kind_by_site(unsigned k)
{
	return k >= MERGE_VK_RESULT_BY_SITE && k <= MERGE_VK_SRC2_BY_SITE;
}

#endif
