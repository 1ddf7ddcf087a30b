/*
 * memory_rank.h — the cache simulation's rows (`vprof memory` and the
 * memory section of `vprof html`): the CACHE hotlists of a value model
 * summed per procedure or source line, with the unknown references'
 * estimate (docs/cache-simulation.md) and the rows ranked by estimated
 * stall. Single-threaded, nothing async-signal-safe.
 */
#ifndef VPROF_REPORTS_MEMORY_RANK_H
#define VPROF_REPORTS_MEMORY_RANK_H

#include "reports/value_model.h"
#include "spool/cachegeom.h"

/* References of a row (or the whole run), by outcome. */
struct report_mem_tally {
	double refs;
	double d1[4];                  /* by SPOOL_CACHE_* (HIT .. UMISS) */
	double ll[5];                  /* by SPOOL_CACHE_*, NONE: not looked up */
	double llmiss_est;             /* LL misses of references whose D1 estimate is a miss */
};

struct report_mem_row {
	uint32_t image;
	const char *proc, *file;       /* by object: proc is the object's name */
	int line;
	unsigned cls;                  /* by object: SPOOL_OBJ_* */
	struct report_mem_tally t;
	double stall;                  /* estimated stall cycles (relative) */
};

struct report_mem_result {
	struct report_mem_row *rows;   /* most stall first */
	size_t n;
	struct report_mem_tally all;   /* the whole run, as the procedures give it, whatever the rows */
	double stall_all;              /* the rows' stall, summed */
	double l2_cycles, mem_cycles;  /* the latencies a D1 and an LL miss cost */
	int calibrated;                /* those from vprof calibrate's levels */
	int have_geom;
	struct spool_cache_geom geom;  /* the epoch's, when have_geom */
	double median_window;          /* instructions, 0 unknown */
};

enum { REPORT_MEM_BY_PROC, REPORT_MEM_BY_LINE, REPORT_MEM_BY_OBJECT };
/* Rank vm's CACHE hotlists per procedure or per file:line, or its OBJECT
 * hotlists per data object (a stack frame's function, a global's symbol,
 * a heap block's allocation site, other mappings as one). */
void report_mem_rank(struct report_value_model *vm, int by, struct report_mem_result *r);
void report_mem_result_free(struct report_mem_result *r);

/* Misses: lo (known), est (known + guessed), hi (known + every unknown). */
void report_mem_d1(const struct report_mem_tally *t, double *lo, double *est, double *hi);
void report_mem_ll(const struct report_mem_tally *t, double *lo, double *est, double *hi);
/* "12.50% (0.00-12.52)": the level's miss rate (ll: LL, else D1). */
const char *report_mem_rates_text(const struct report_mem_tally *t, int ll, char *buf, size_t cap);
/* The share of t's references unknown at LL. */
double report_mem_ll_unknown(const struct report_mem_tally *t);

#endif
