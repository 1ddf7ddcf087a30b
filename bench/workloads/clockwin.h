/*
 * clockwin.h — what forkclock.c and shadowclock.c share (bench/
 * fixed_time.sh): their record format, which bench/fixed_time.py reads,
 * and the set-up of a thread's task-clock windows: a perf task-clock
 * event that signals the thread (SIG_CLOCK) at each overflow, re-armed
 * for the next gap or the window's DELTA, and the fault handlers the
 * interpreter's fault-safe reads need, chained to the program's.
 */
#ifndef VPROF_BENCH_CLOCKWIN_H
#define VPROF_BENCH_CLOCKWIN_H

#include "interp/interp.h"

#include <fcntl.h>
#include <linux/perf_event.h>
#include <link.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIG_CLOCK (SIGRTMIN + 3)

/* One window: this header, then nent struct ent. */
struct rec_hdr {
	uint32_t magic;         /* 'FCLK' */
	uint32_t matched;
	uint64_t n;             /* instructions of the native stretch */
	uint64_t dt_ns;         /* the thread's CPU time between the two samples */
	int64_t faults;         /* minor faults in it (forkclock: copy-on-write) */
	uint32_t nent;
	uint32_t stop;          /* interp stop reason when unmatched */
	uint64_t base;          /* the executable's load address */
};

struct ent {
	uint64_t pc;
	uint32_t all, first;    /* executions in the stretch; in its first FIRST */
};

#define CLOCKWIN_MAGIC 0x4b4c4346u

static struct sigaction clockwin_prev_segv, clockwin_prev_bus;
static int clockwin_fd = -1;

static uint64_t clockwin_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static long clockwin_env(const char *name, long def)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : def;
}

/* The settings both tools take, from PREFIX_OUT (the record file),
 * PREFIX_GAP_US, PREFIX_DELTA_US, PREFIX_MAXN and PREFIX_FIRST (each left
 * as it is where unset); the interpreter initialized and *rng seeded for
 * this process. Returns the record file open for appending, or -1: no
 * PREFIX_OUT, no interpreter, or the file cannot be opened. */
static int clockwin_setup(const char *prefix, long *gap_us, long *delta_us, long *maxn, long *first_n,
			  uint64_t *rng)
{
	char name[64];
#define CLOCKWIN_NAME(suffix) (snprintf(name, sizeof name, "%s_" suffix, prefix), name)
	const char *out = getenv(CLOCKWIN_NAME("OUT"));
	if (!out || interp_init() < 0)
		return -1;
	*gap_us = clockwin_env(CLOCKWIN_NAME("GAP_US"), *gap_us);
	*delta_us = clockwin_env(CLOCKWIN_NAME("DELTA_US"), *delta_us);
	*maxn = clockwin_env(CLOCKWIN_NAME("MAXN"), *maxn);
	*first_n = clockwin_env(CLOCKWIN_NAME("FIRST"), *first_n);
#undef CLOCKWIN_NAME
	*rng ^= (uint64_t)getpid() * 0x9E3779B97F4A7C15ull ^ clockwin_cpu_ns();
	return open(out, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
}

/* The next signal `us` of the thread's CPU from now (a task-clock event
 * is hrtimer-driven; a CPU-time POSIX timer only expires at the tick). */
static void clockwin_arm(long us)
{
	uint64_t ns = (uint64_t)us * 1000u;
	ioctl(clockwin_fd, PERF_EVENT_IOC_PERIOD, &ns);
	ioctl(clockwin_fd, PERF_EVENT_IOC_REFRESH, 1);
}

/* A gap drawn uniformly from 0.5..1.5 x gap_us. */
static long clockwin_gap(uint64_t *rng, long gap_us)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return gap_us / 2 + (long)(*rng % (uint64_t)(gap_us + 1));
}

static void clockwin_fault(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	if (interp_fault_fixup(uc))
		return;
	struct sigaction *p = sig == SIGSEGV ? &clockwin_prev_segv : &clockwin_prev_bus;
	sigaction(sig, p, NULL);
}

static int clockwin_exe_base(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	*(uint64_t *)data = info->dlpi_addr;
	return 1;   /* the first object is the executable */
}

/* The fault handlers, on_clock for SIG_CLOCK, the executable's load
 * address in *exe, and the event, whose first signal comes first_us of
 * CPU from now. 0, or -1 when the event cannot be set up. */
static int clockwin_start(void (*on_clock)(int, siginfo_t *, void *), long first_us, uint64_t *exe)
{
	dl_iterate_phdr(clockwin_exe_base, exe);
	struct sigaction sa = {0};
	sa.sa_sigaction = clockwin_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, &clockwin_prev_segv);
	sigaction(SIGBUS, &sa, &clockwin_prev_bus);
	sa.sa_sigaction = on_clock;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigfillset(&sa.sa_mask);
	sigaction(SIG_CLOCK, &sa, NULL);
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.size = sizeof(a);
	a.sample_period = (uint64_t)first_us * 1000u;
	a.disabled = 1;
	a.exclude_kernel = 1;
	clockwin_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
	struct f_owner_ex o = {F_OWNER_TID, (pid_t)syscall(SYS_gettid)};
	if (clockwin_fd < 0 || fcntl(clockwin_fd, F_SETFL, O_ASYNC) < 0 ||
	    fcntl(clockwin_fd, F_SETSIG, SIG_CLOCK) < 0 || fcntl(clockwin_fd, F_SETOWN_EX, &o) < 0)
		return -1;
	ioctl(clockwin_fd, PERF_EVENT_IOC_REFRESH, 1);
	return 0;
}

#endif
