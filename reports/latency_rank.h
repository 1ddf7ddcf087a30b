/*
 * latency_rank.h — the ranking behind `vprof latency` (and the latency view of
 * `vprof html`): every load of a value model (value_model.h) that has a
 * latency hotlist, with its distribution of binned latencies, the time
 * spent at it, the part of that time spent waiting beyond the nearest
 * cache level, and one English sentence.
 *
 * Time. A timer interrupt lands after the instruction that took the time
 * (skid): in a pointer chase `p = *p` the load holds no PC sample and
 * the instruction after it nearly all of them. A load's time is therefore
 * the PC samples at the load and at the instructions that follow it in
 * straight-line code, up to and including the first branch and stopping
 * before the next instruction that reads memory (which is a load of its
 * own); decoded from the image file. Without the file, the load's source
 * line's samples. Each PC sample is counted for at most one load (save
 * in the line fallback, where loads of one line share it).
 *
 * Stall. The latency hotlist samples executions of the load (a window
 * times the load as it runs), so the part of the load's time spent
 * beyond the first calibrated level (a hit in the nearest cache, as
 * `vprof calibrate` measured it) is the part of its latency cycles in
 * slower bins: sum(est x cycles) over bins above that level's bound,
 * over sum(est x cycles). stall = time x that part. Without a
 * calibration the part is 1 and the levels are not named. Latencies over
 * 8 times the slowest level's typical are loads interrupted while they
 * were timed: in the shares, but not weighed by their cycles.
 *
 * Rows live until report_lat_result_free(); strings in them until
 * report_value_model_free(). Single-threaded, nothing async-signal-safe.
 */
#ifndef VPROF_REPORTS_LATENCY_H
#define VPROF_REPORTS_LATENCY_H

#include "reports/value_model.h"

struct report_lat_bin {
	uint64_t cycles;                /* TSC ticks of rdtscp; load; rdtscp, binned */
	double est;                     /* estimated value samples in the bin */
	const char *level;              /* its calibrated level, NULL without one */
};

struct report_lat_row {
	const struct report_value_hot *v;      /* the latency hotlist */
	struct report_lat_bin bins[SPOOL_HOT_N];   /* commonest first */
	int nbins;
	double est;                     /* estimated latency samples, all bins */
	double mean;                    /* cycles */
	uint64_t samples;               /* PC samples at the load itself */
	uint64_t time_samples;          /* PC samples counted as its time */
	int span;                       /* instructions they were counted over (0: its line) */
	double time;                    /* time_samples over the event's samples */
	double beyond;                  /* cycles' part beyond the first level, 0..1 */
	double stall;                   /* time x beyond */
	const char *level;              /* where it waits most (of cycles), NULL uncalibrated */
	double level_share;             /* of its latency samples in that level's bins */
	double level_cycles;            /* the median of those bins, cycles */
	const char *sentence;           /* one line, English */
};

struct report_lat_result {
	struct report_lat_row *rows;           /* largest stall first */
	size_t n;
	int calibrated;                 /* levels named; stall split */
};

/* Rank the loads of vm. Returns 0 (exits after a message when memory
 * runs out). */
int report_lat_rank(struct report_value_model *vm, struct report_lat_result *r);
void report_lat_result_free(struct report_lat_result *r);

/* What the time and stall columns mean, one sentence (for headers). */
extern const char report_lat_estimator[];

#endif
