/*
 * A bound on vprof's own cost per thread, the kernel's share of it
 * included, like the kernel's perf_cpu_time_max_percent. See selflimit.c.
 *
 * All of it is async-signal-safe: per-thread state in initial-exec TLS,
 * counters in the spool's live header with atomics.
 */
#ifndef VPROF_PRELOAD_SELFLIMIT_H
#define VPROF_PRELOAD_SELFLIMIT_H

#include <stdint.h>
#include <x86intrin.h>

/* Start timing a piece of vprof's work on this thread (a handler's
 * sample, a drain): a TSC reading (and, while a share over the bound is
 * being confirmed, the thread's CPU clock). AS-safe. */
uint64_t preload_cost_begin(void);

/* Constructor (and fork child): the TSC/CLOCK_MONOTONIC base the rate is
 * measured against. Normal context. */
void preload_selflimit_init(void);
/* VPROF_CALIBRATE_FD (`vprof run`, before it starts the program): write
 * the VPROF_TRIGGER_COST this process would use to fd, measuring it if
 * needed; nothing if it cannot matter. Normal context. */
void preload_selflimit_calibrate_to(int fd);
/* A thread is armed: its accounting window starts. Normal context. */
void preload_selflimit_thread_begin(void);
/* A thread is disarmed: its last window is accounted. Normal context,
 * SIGPROF blocked. */
void preload_selflimit_thread_end(void);

/* The test-only VPROF_TEST_HANDLER_WORK: busy work of that many
 * microseconds of thread CPU, n times. AS-safe. */
void preload_selflimit_test_work(uint64_t n);

/* End of a piece of work begun at t0, which handled `samples` samples of
 * this thread (each also charged the kernel's calibrated cost of a
 * sample; a drain's sweep of other threads' rings is not theirs);
 * interp: TSC cycles of it that value sampling's interpretation took.
 * Accumulates the cost and, every so often, compares it with the thread's
 * CPU, lowering (or restoring) the thread's sampling rate. may_rearm: the
 * trigger may be replaced now (not at thread end). AS-safe. */
void preload_cost_end(uint64_t t0, uint64_t interp, uint64_t samples, int may_rearm);

/* Value sampling interprets every interp_every x this-th sample of the
 * thread (1 unless interpretation was found to be the expensive part). */
uint32_t preload_selflimit_interp_mult(void);

/* itimer (process-wide, its period cannot be lowered per thread): a tick
 * is handled only one in factor times, counted as factor samples.
 * Returns 0 to skip this tick, else the weight of its sample. AS-safe. */
uint32_t preload_selflimit_itimer_tick(void);

#endif
