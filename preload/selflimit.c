/*
 * The bound on vprof's own cost, per thread, like the kernel's
 * perf_cpu_time_max_percent: past VPROF_MAX_COST percent of a thread's CPU
 * (default 25; 0 turns the bound off), the thread's sampling rate is
 * lowered, and said (spool live counters -> stats -> `vprof run`'s summary
 * and `vprof report`).
 *
 * What is measured: the time of vprof's work on the thread, the signal
 * handler's sample path (the PC count, value sampling's interpretation,
 * co-simulation) and the ring drains, with the TSC read at entry and exit
 * (~30 ns a read here; CLOCK_MONOTONIC through the vDSO ~60-95 ns, and the
 * thread's CPU clock, a system call, ~5 us). TSC cycles are converted to ns
 * with a rate measured against CLOCK_MONOTONIC since the constructor, at
 * each check (the TSC is invariant here: constant_tsc, nonstop_tsc).
 *
 * And the kernel's share: what it spends on each sample (the timer or
 * counter interrupt, the ring write, for signals their delivery and
 * return), which no clock in the handler sees, and which is most of the
 * cost at high rates (at 20 kHz, a VM's 45 us timer interrupt is 90% of
 * the CPU). It is measured once (upcall_trigger_cost: work timed on the
 * thread's CPU clock with and without an event at the shortest period,
 * ~40 ms of CPU): by `vprof run` before the program starts, in a child
 * made for it (VPROF_CALIBRATE_FD, preload_selflimit_calibrate_to), or
 * else by the first process of the tree in its constructor (then in its
 * [start-up] row); handed on in VPROF_TRIGGER_COST (exec'd children
 * inherit it, fork children the figure), and each sample handled or
 * drained is charged that much. Not measured where it cannot matter: the
 * CPU-timer backends (at most HZ samples a second), or a rate at which
 * even 60 us a sample stays under half the budget.
 *
 * The check: after every CHECK_NS (10 ms) of the thread's CPU worth of
 * samples at the asked period (at least 8 samples), and at every drain,
 * the thread's CPU clock is read (the one system call, ~5 us here; every
 * 2 ms it cost +1.8% of CPU at 4 kHz in signal mode, every 10 ms nothing
 * measurable: paired ratio 0.999, 7 rounds); once a window holds
 * WINDOW_NS (50 ms) of thread CPU, its cost share is compared with the
 * budget:
 *  - over budget by the TSC: the TSC counts wall time, and a thread
 *    preempted inside a drain (60 threads on 2 CPUs: tests/unprivileged.sh)
 *    showed milliseconds for microseconds of work; so the next window
 *    measures each piece with the thread's CPU clock (a system call at
 *    each end, in that window only) and only its verdict lowers;
 *  - over budget by the CPU clock: if value sampling's interpretation is most of the cost
 *    and can be thinned, it is first (interpreting at every 2x-th sample,
 *    up to 64x); else the period is doubled until the share would be
 *    under 4/5 of the budget, at most MAX_FACTOR times the asked period:
 *    a thread is never left unsampled;
 *  - far under (the share at half the period still under 3/5 of the
 *    budget): a lowered rate is raised back one step.
 * Lowering replaces a perf thread's event by one at the new period (as
 * its first overflow does: system calls only), sets a CPU timer's
 * interval, and for the process-wide itimer handles one tick in factor,
 * counted factor times.
 *
 * Concurrency: per-thread state in initial-exec TLS, touched by the thread
 * (its handler, its drains, its set-up and tear-down with SIGPROF
 * blocked); the spool's counters with relaxed atomics. No locks, no
 * malloc: async-signal-safe.
 */
#include "preload/preload.h"
#include "preload/sandbox.h"
#include "preload/selflimit.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define WINDOW_NS 50000000ull   /* thread CPU per evaluation */
#define CHECK_NS 10000000ull     /* thread CPU (at the asked rate) between checks */
#define MAX_FACTOR 256u          /* the longest period: 256 x the asked one */
#define MAX_INTERP_MULT 64u

struct selflimit_thread {
	uint64_t cpu0;           /* thread CPU at the window's start, 0: none */
	uint64_t cyc;            /* TSC cycles of vprof's work in the window */
	uint64_t kns;            /* ns the kernel spent on its samples */
	uint64_t ksamples;       /* ... that many samples */
	uint64_t icyc;           /* ... of which interpretation */
	uint64_t samples;        /* samples handled in the window */
	uint64_t since_check;    /* samples since the last check */
	uint32_t factor;         /* period multiplier, 1: the asked rate */
	uint32_t imult;          /* interpretation thinning, 1: none */
	int counted;             /* counted in limit_threads */
	int icounted;            /* counted in limit_interp_threads */
	uint32_t itick;          /* itimer: ticks since the last handled */
	int confirm;             /* this window measures with the CPU clock */
	uint64_t cpu_begin;      /* ... the clock at the piece's start */
	uint64_t ccost;          /* ... the window's cost by it, ns */
};
static __thread struct selflimit_thread g_sl PRELOAD_TLS;

static uint64_t g_tsc0, g_mono0;
static uint64_t g_trigger_ns;    /* the kernel's cost of one sample, 0: not counted */

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The thread's CPU clock, a system call. A sandbox that refuses it
 * stops the thread's sampling: the bound cannot be kept without it. */
static uint64_t thread_cpu_ns(void)
{
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) < 0) {
		preload_sandbox_refused(-errno);
		return 0;
	}
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t preload_cost_begin(void)
{
	if (g_sl.confirm)
		g_sl.cpu_begin = thread_cpu_ns();
	return __rdtsc();
}

/* Calibration in signal mode: the temporary handler counts. */
static volatile uint64_t g_cal_signals;

static void cal_handler(int sig, siginfo_t *si, void *uc)
{
	g_cal_signals++;
}

static uint64_t calibrate(int signals)
{
	struct sigaction a, old;
	sigset_t prof, prev;
	if (!signals)
		return upcall_trigger_cost(g_vprof.backend, 0, NULL);
	/* Before our handler is installed (the program's disposition is
	 * read after this and left as it was). */
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = cal_handler;
	a.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&a.sa_mask);
	if (preload_real_sigaction(UPCALL_SIGNAL, &a, &old) < 0)
		return 0;
	sigemptyset(&prof);
	sigaddset(&prof, UPCALL_SIGNAL);
	syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &prof, &prev, sizeof(long));
	uint64_t ns = upcall_trigger_cost(g_vprof.backend, 1, &g_cal_signals);
	/* Signals still queued from the released events go nowhere else. */
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &prof, NULL, sizeof(long));
	const struct timespec zero = { 0, 0 };
	while (syscall(SYS_rt_sigtimedwait, &prof, NULL, &zero, sizeof(long)) == UPCALL_SIGNAL)
		;
	preload_real_sigaction(UPCALL_SIGNAL, &old, NULL);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &prev, NULL, sizeof(long));
	return ns;
}

/* g_trigger_ns for this process's backend and mode: VPROF_TRIGGER_COST's
 * if it has it ("BACKEND,SIGNALS,NS", set by `vprof run` or the process
 * that exec'd this one), else measured and put there for exec'd
 * children; 0 where it cannot matter. */
static void trigger_cost(void)
{
	int b = g_vprof.backend, pmu = b == UPCALL_EV_CYCLES || b == UPCALL_EV_INSTRUCTIONS;
	if (!pmu && b != UPCALL_EV_TASK_CLOCK)
		return;
	/* The period in ns of CPU (counters: at the ~2.5 GHz upcall_choose
	 * assumes). */
	uint64_t period_ns = pmu ? g_vprof.period * 2 / 5 : g_vprof.period;
	if (!upcall_trigger_cost_matters(period_ns, g_vprof.cfg.max_cost))
		return;
	int signals = preload_signal_per_sample();
	char want[32], env[64];
	snprintf(want, sizeof(want), "%d,%d,", b, signals);
	const char *s = getenv("VPROF_TRIGGER_COST");
	if (s && !strncmp(s, want, strlen(want))) {
		g_trigger_ns = strtoull(s + strlen(want), NULL, 10);
		return;
	}
	g_trigger_ns = calibrate(signals);
	/* A figure that alone would take the thread past 4/5 of its bound
	 * is measured again, twice at most, and the least kept: on an Intel
	 * Xeon host 2 calibrations in 40 read ~140 us a sample where the
	 * others read 39-60 us (the whole ~40 ms slow, not a round of it),
	 * and a 4 kHz run was then held at 1 kHz throughout. */
	for (int i = 0; i < 2 && g_trigger_ns * 100 * 5 > period_ns * 4 * (uint64_t)g_vprof.cfg.max_cost; i++) {
		uint64_t again = calibrate(signals);
		if (again && again < g_trigger_ns)
			g_trigger_ns = again;
	}
	snprintf(env, sizeof(env), "%s%llu", want, (unsigned long long)g_trigger_ns);
	setenv("VPROF_TRIGGER_COST", env, 1);
}

void preload_selflimit_init(void)
{
	g_tsc0 = __rdtsc();
	g_mono0 = mono_ns();
	trigger_cost();
}

void preload_selflimit_calibrate_to(int fd)
{
	trigger_cost();
	const char *s = getenv("VPROF_TRIGGER_COST");
	if (s) {
		ssize_t w = write(fd, s, strlen(s));
		(void)w;
	}
}

/* TSC cycles a nanosecond, measured since the constructor; 0 before a
 * millisecond has passed. */
static double tsc_per_ns(void)
{
	uint64_t dt = __rdtsc() - g_tsc0, dm = mono_ns() - g_mono0;
	return dm < 1000000 || dt == 0 ? 0 : (double)dt / (double)dm;
}

/* TSC cycles -> ns. Before a millisecond has passed, 1 GHz is assumed
 * (never used by a check: a window is 50 ms of CPU). */
static uint64_t cyc_to_ns(uint64_t cyc)
{
	double r = tsc_per_ns();
	return r ? (uint64_t)((double)cyc / r) : cyc;
}

void preload_selflimit_thread_begin(void)
{
	/* A fork child's thread starts over at the asked rate. */
	g_sl = (struct selflimit_thread){ .cpu0 = thread_cpu_ns(), .factor = 1, .imult = 1 };
}

uint32_t preload_selflimit_interp_mult(void)
{
	return g_sl.imult ? g_sl.imult : 1;
}

/* The test knob's work: n x VPROF_TEST_HANDLER_WORK microseconds of a
 * loop that reads the TSC, at the rate measured since the constructor.
 * Not a loop on the thread's CPU clock: each read of that is a system
 * call, and on a guest where a system call is dear its side effects
 * (seen as 14 us for 5 us asked, bench/values.sh section 1c) are work
 * the knob did not ask for. Before a millisecond has passed, the CPU
 * clock's loop. */
void preload_selflimit_test_work(uint64_t n)
{
	uint64_t us = g_vprof.cfg.test_handler_work;
	if (!us || !n)
		return;
	uint64_t ns = n * us * 1000ull, t0 = __rdtsc();
	double r = tsc_per_ns();
	if (!r) {
		uint64_t until = thread_cpu_ns() + ns;
		while (thread_cpu_ns() < until)
			;
		return;
	}
	uint64_t cyc = (uint64_t)((double)ns * r);
	while (__rdtsc() - t0 < cyc)
		;
}

/* Set the thread's period to factor x the asked one. 0 or negative errno
 * (the thread then keeps its current trigger: never unsampled). */
static int apply(struct preload_thread *t, uint32_t factor)
{
	switch (g_vprof.backend) {
	case UPCALL_EV_ITIMER:
		return 0;              /* thinned in the handler */
	default:
		if (!t->armed)
			return -EAGAIN;
		return upcall_set_period(&t->up, t->up.period * factor);
	}
}

/* Account the window that ends now at thread CPU cpu. */
static void account(struct selflimit_thread *s, struct spool_live *live, uint64_t cpu,
		    uint64_t cost)
{
	__atomic_fetch_add(&live->cost_ns, cost, __ATOMIC_RELAXED);
	if (s->ksamples) {
		__atomic_fetch_add(&live->kernel_cost_ns, s->kns, __ATOMIC_RELAXED);
		__atomic_fetch_add(&live->kernel_cost_samples, s->ksamples, __ATOMIC_RELAXED);
	}
	if (s->factor > 1 && cpu > s->cpu0) {
		__atomic_fetch_add(&live->limit_cpu_ns, cpu - s->cpu0, __ATOMIC_RELAXED);
		__atomic_fetch_add(&live->limit_samples, s->samples, __ATOMIC_RELAXED);
	}
	s->cpu0 = cpu;
	s->cyc = s->icyc = s->samples = s->ccost = s->kns = s->ksamples = 0;
}

static void check_in(struct preload_thread *t, int may_rearm, struct spool_live *live)
{
	struct selflimit_thread *s = &g_sl;
	uint64_t cpu = thread_cpu_ns();
	s->since_check = 0;
	if (!s->cpu0 || cpu < s->cpu0) {
		s->cpu0 = cpu;
		return;
	}
	uint64_t dcpu = cpu - s->cpu0;
	/* At least 50 ms of CPU and 8 samples (a share from 3 samples is
	 * noise), or a second of CPU at a very low rate. */
	if (dcpu < WINDOW_NS || (s->samples < 8 && dcpu < 1000000000ull))
		return;
	uint64_t cost = cyc_to_ns(s->cyc), icost = cyc_to_ns(s->icyc);
	int confirmed = s->confirm;
	if (confirmed) {
		/* The CPU clock's measure: interpretation keeps its TSC share. */
		icost = cost ? (uint64_t)((double)icost * (double)s->ccost / (double)cost) : 0;
		cost = s->ccost < dcpu ? s->ccost : dcpu;
		s->confirm = 0;
	}
	/* The kernel's share, calibrated, not measured here: no
	 * preemption to confirm away. */
	uint64_t kcost = s->kns < dcpu ? s->kns : dcpu;
	cost += kcost;
	/* Shares in parts per 10,000 of the window's thread CPU. */
	uint64_t share = cost * 10000 / dcpu, budget = (uint64_t)g_vprof.cfg.max_cost * 100;
	account(s, live, cpu, cost - kcost);
	if (!budget || !may_rearm || t->busy)
		return;
	if (share > budget && !confirmed && kcost * 10000 / dcpu <= budget) {
		/* The TSC counts wall time: a thread preempted inside a drain
		 * (many threads on 2 CPUs) shows milliseconds for microseconds
		 * of work. Before lowering, the next window measures each
		 * piece with the thread's CPU clock (a system call at each
		 * end, ~5 us here, in that window only). */
		s->confirm = 1;
		return;
	}
	if (share > budget) {
		/* Interpretation first, when it is most of the cost. */
		if (icost * 2 > cost && s->imult < MAX_INTERP_MULT && g_vprof.cfg.values) {
			uint32_t m = s->imult;
			uint64_t sh = share;
			while (sh > budget * 4 / 5 && m < MAX_INTERP_MULT) {
				m *= 2;
				sh -= icost * 10000 / dcpu / 2;   /* half the interpretation left */
				icost /= 2;
			}
			s->imult = m;
			if (!s->icounted) {
				s->icounted = 1;
				__atomic_fetch_add(&live->limit_interp_threads, 1, __ATOMIC_RELAXED);
			}
			return;
		}
		uint32_t f = s->factor;
		uint64_t sh = share;
		while (sh > budget * 4 / 5 && f < MAX_FACTOR) {
			f *= 2;
			sh /= 2;
		}
		if (f != s->factor && apply(t, f) == 0) {
			s->factor = f;
			__atomic_fetch_add(&live->limit_lowerings, 1, __ATOMIC_RELAXED);
			if (!s->counted) {
				s->counted = 1;
				__atomic_fetch_add(&live->limit_threads, 1, __ATOMIC_RELAXED);
			}
		}
	} else if (s->factor > 1 && share * 2 < budget * 3 / 5) {
		uint32_t f = s->factor / 2;
		if (apply(t, f) == 0)
			s->factor = f;
	}
}

/* The counters go to the spool current now (rotate.c). */
static void check(struct preload_thread *t, int may_rearm)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	check_in(t, may_rearm, &sp->hdr->live);
	preload_spool_exit(sp, prev);
}

void preload_cost_end(uint64_t t0, uint64_t interp, uint64_t samples, int may_rearm)
{
	struct selflimit_thread *s = &g_sl;
	struct preload_thread *t = &g_thread;
	if (!preload_spool_ready() || preload_sandbox_stopped())
		return;
	s->cyc += __rdtsc() - t0;
	if (s->confirm && s->cpu_begin) {
		uint64_t now = thread_cpu_ns();
		s->ccost += now > s->cpu_begin ? now - s->cpu_begin : 0;
		s->cpu_begin = 0;
	}
	s->icyc += interp;
	s->samples += samples;
	s->since_check += samples;
	s->kns += samples * g_trigger_ns;
	s->ksamples += g_trigger_ns ? samples : 0;
	/* Checks every CHECK_NS of CPU at the asked period, at least every 8
	 * samples; drains (samples of a whole 20 ms stretch) every time. */
	uint64_t every = g_vprof.period && g_vprof.backend != UPCALL_EV_CYCLES &&
				 g_vprof.backend != UPCALL_EV_INSTRUCTIONS
			 ? CHECK_NS / g_vprof.period : 8;
	if (every < 8)
		every = 8;
	if (t->up.ring || s->since_check >= every)
		check(t, may_rearm);
}

uint32_t preload_selflimit_itimer_tick(void)
{
	struct selflimit_thread *s = &g_sl;
	uint32_t f = s->factor ? s->factor : 1;
	if (f == 1)
		return 1;
	if (++s->itick < f)
		return 0;
	s->itick = 0;
	return f;
}

void preload_selflimit_thread_end(void)
{
	struct selflimit_thread *s = &g_sl;
	if (!s->cpu0)
		return;
	struct spool *prev, *sp = preload_spool_enter(&prev);
	uint64_t cpu = thread_cpu_ns();
	if (sp && cpu >= s->cpu0)
		account(s, &sp->hdr->live, cpu, cyc_to_ns(s->cyc));
	if (sp)
		preload_spool_exit(sp, prev);
	s->cpu0 = 0;
}
