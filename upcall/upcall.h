/*
 * Sample triggers ("upcalls"): what makes the kernel interrupt a thread so
 * that the handler can record its PC. Backends, best first:
 *
 *   cycles, instructions  perf_event hardware counters (needs a PMU)
 *   task-clock            perf_event software task-clock: an hrtimer on the
 *                         thread's CPU time, any rate, but each sample costs
 *                         a timer interrupt (~25-40 us in this VM)
 *   cpu-timer             POSIX per-thread CPU timer (timer_create on
 *                         CLOCK_THREAD_CPUTIME_ID, SIGEV_THREAD_ID):
 *                         checked at the scheduler tick, so at most HZ per
 *                         second, but nearly free
 *   itimer                setitimer(ITIMER_PROF): process-wide, last resort
 *
 * All deliver SIGPROF to the thread that ran (itimer: to whichever thread
 * the kernel picks); upcall_classify() tells our signals from the
 * program's own SIGPROFs. The first period of every trigger is a random fraction of
 * the mean, which gives each thread its own phase; then the period is the
 * mean (a perf event's cannot change without a descriptor, and none is
 * kept: see struct upcall_thread; a jitter drawn once per thread scaled
 * its count by up to 6% without randomizing its intervals).
 *
 * Thread contract: upcall_thread_start/stop run on the thread they arm, in
 * normal context. upcall_classify, upcall_is_tag and upcall_rearm are
 * async-signal-safe.
 */
#ifndef VPROF_UPCALL_H
#define VPROF_UPCALL_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#define UPCALL_SIGNAL SIGPROF

/* The longest image path a ring MMAP2 record hands on_mmap (the image
 * record's path field, SPOOL_PATH_MAX, is as long: preload checks). */
#define UPCALL_PATH_MAX 432

struct upcall_config {
	int event;               /* upcall_event; 0 = automatic choice */
	int no_perf;             /* leave the perf backends out (a sandbox forbids them) */
	uint64_t period;         /* ns for clocks, events for PMU counters */
	uint64_t freq;           /* if period is 0: samples per CPU-second */
	int signals;             /* every sample is a signal in the thread (value
				  * windows, call stacks): see upcall_choose */
};

struct upcall_thread {
	int backend;             /* upcall_event in use, 0 = not armed */
	pid_t tid;               /* the thread the trigger samples */
	int remote;              /* armed from another thread (by tid) */
	/* Make no system call for this thread any more: a sandbox refused
	 * one (preload/sandbox.c). Its trigger stays as it is. */
	int frozen;
	/* Perf backends hold no descriptor once armed: the event lives as long
	 * as its mapping (the ring, or in signal mode its one header page),
	 * and its overflow signals (fasync) go on after the descriptor is
	 * closed, carrying in si_fd the number it had when they were set up.
	 * fd is that number: a tag (upcall_is_tag), no longer an open file.
	 * open_fd is the descriptor while it is open: from upcall_thread_start
	 * to upcall_thread_enable, or for good if the event could not be
	 * mapped (then keep_fd was called with it); -1 otherwise. */
	int fd;
	int open_fd;
	void *map;               /* the event's mapping (ring, or header page) */
	size_t map_bytes;
	int map_slot;            /* its slot in upcall.c's table of mappings, or -1 */
	int ring_mode;           /* this thread asked for ring mode */
	int switch_pending;      /* first period armed: switch to the mean */
	int switching;           /* in that switch (upcall_set_period waits) */
	timer_t timer;           /* cpu-timer */
	int has_timer;
	uint64_t period;         /* mean, in the backend's unit */
	uint64_t rng;            /* xorshift state for randomized periods */
	uint64_t first;          /* first period (cpu-timer), set by start */
	/* Ring mode (perf backends): the kernel writes each sample's IP into
	 * ring (1 header page + UPCALL_RING_PAGES data pages) and sends no
	 * signal; a CPU timer (drain) makes the thread drain it every
	 * UPCALL_DRAIN_NS of its CPU time. */
	void *ring;
	size_t ring_bytes;
	timer_t drain;
	int has_drain;
	/* Ring mode: called by upcall_drain for each executable mapping the
	 * kernel reported (build_id NULL if it had none). Signal-safe. */
	void (*on_mmap)(void *arg, uint64_t addr, uint64_t len, uint64_t pgoff,
			const uint8_t *build_id, uint32_t build_id_len, const char *path);
	/* Ring mode: drains the thread's ring (set by the caller); called on
	 * the owning thread by upcall_ring_first before the first period's
	 * event is released. Signal-safe. */
	void (*drain_now)(void);
	/* Called with keep 1 on a descriptor vprof must keep open (an event
	 * that could not be mapped: locked-memory limits), which the caller
	 * then protects from the program's close() (preload/fds.c); with keep
	 * 0 just before upcall closes such a descriptor. Signal-safe. */
	void (*keep_fd)(int fd, int keep);
};

/* 16 KiB: 1024 samples, 100 ms at 10 kHz, while a drain comes every 20 ms
 * of the thread's CPU. Small, because rings are locked memory, and an
 * unprivileged user's allowance (perf_event_mlock_kb per CPU, then
 * RLIMIT_MEMLOCK) bounds how many threads get one; past it a thread's event
 * must keep its descriptor (see struct upcall_thread). */
#define UPCALL_RING_PAGES 4
/* No period is ever armed below this (ns of CPU for the clocks; for the
 * PMU counters, events at the ~2.5 GHz upcall_choose assumes): a timer
 * interrupt costs ~20 us in this VM, more under contention, and a period
 * shorter than what the interrupt costs lets the interrupts eat the thread
 * (see upcall_thread_start). Also the smallest VPROF_PERIOD accepted. */
#define UPCALL_MIN_PERIOD_NS 50000ull
#define UPCALL_MIN_PERIOD_EVENTS 125000ull
#define UPCALL_DRAIN_NS 20000000ull     /* drain every 20 ms of thread CPU */

/* Decide the process's backend: the forced one if cfg->event is set (fails
 * with -ENOENT/-EACCES/... if it cannot be opened), else the first that
 * works in the order above. When every sample is a signal (cfg->signals)
 * and the rate asked is at most the scheduler's tick rate, the CPU timer
 * comes before task-clock: it expires at the tick, an interrupt the
 * thread takes anyway, where task-clock's hrtimer is one more interrupt a
 * sample (in a VM, an exit to the host). Probes by opening and closing an
 * event on the calling thread. Returns the backend (upcall_event) or
 * negative errno; with *period_out the mean period in the backend's unit. */
int upcall_choose(const struct upcall_config *cfg, uint64_t *period_out);

/* Where to count a thread whose ring mode fell back to a signal per
 * sample (its ring could not be mapped: locked memory spent); the
 * spool's live.ring_fallbacks, set by the library. NULL: not counted. */
extern uint64_t *upcall_ring_fallbacks;

/* The smallest period armed for backend (UPCALL_MIN_PERIOD_*): a shorter
 * asked period is raised to it. Async-signal-safe. */
uint64_t upcall_min_period(int backend);

/* Probe order override for tests: VPROF_UPCALL_FAKE_ENOENT=cycles,task-clock
 * makes those backends fail as a machine without them would. */

/* Arm a thread: target 0 is the calling thread; another thread of the
 * process can be armed by its tid (threads that started before vprof). */
int upcall_thread_start(struct upcall_thread *t, int backend, uint64_t period, uint64_t seed,
			pid_t target, int ring);
/* The trigger made by upcall_thread_start fires only once enabled: the
 * caller first records its descriptor as ours, so that no sample can come
 * before it would be recognized. */
int upcall_thread_enable(struct upcall_thread *t);
void upcall_thread_stop(struct upcall_thread *t);

/* Process-wide part (itimer): arm or disarm. */
int upcall_process_start(int backend, uint64_t period);
void upcall_process_stop(int backend);

/* Is this signal one of our samples? UPCALL_SIG_OURS: yes; UPCALL_SIG_FD:
 * a perf overflow, ours if upcall_is_tag(si->si_fd) (the numbers our
 * events had when their signals were set up; the descriptors themselves
 * are closed); UPCALL_SIG_NONE: the program's own. Needs no
 * per-thread state, so that a sample still pending when a thread is
 * disarmed, or for a thread armed from outside, is still known as ours. */
enum { UPCALL_SIG_NONE = 0, UPCALL_SIG_OURS = 1, UPCALL_SIG_FD = 2, UPCALL_SIG_DRAIN = 3 };
int upcall_classify(const siginfo_t *si, int backend);
void upcall_rearm(struct upcall_thread *t);

/* Ring mode: visit every PC the kernel wrote since the last drain, add the
 * samples the kernel could not write (ring full) to *lost, re-arm the
 * period with jitter; returns the number of PCs. Async-signal-safe; call on
 * the owning thread with its drain signal blocked or from its handler. */
typedef void upcall_pc_fn(void *arg, uint64_t pc);
uint64_t upcall_drain(struct upcall_thread *t, upcall_pc_fn *fn, void *arg, uint64_t *lost);

/* Ring mode: drain the rings of threads that stopped running too (those
 * whose newest sample is older than UPCALL_DRAIN_NS and whose thread is
 * not runnable; every ring with force), and any ring over half full (its
 * thread's drain timer stalled: the kernel's thread CPU timers do, now
 * and then, with more runnable threads than CPUs), looking at most once per
 * UPCALL_DRAIN_NS of wall time for the whole process (force: now). A
 * thread's drain timer counts its own CPU time, so a thread that blocks
 * (a parked Go M, an idle pool worker) would keep up to UPCALL_DRAIN_NS of
 * samples in its ring until it runs again, lost if the process left
 * meanwhile. A running or preempted thread's ring is left to it, so that
 * its drains' cost stays its own (--max-cost is per thread). Runs in a
 * drain (self's drain signal blocked); the PCs go to fn(arg) and the
 * mappings to self->on_mmap. Async-signal-safe. */
uint64_t upcall_drain_others(struct upcall_thread *self, upcall_pc_fn *fn, void *arg,
			     uint64_t *lost, int force);

/* Ring mode: the signal of a thread's first overflow (UPCALL_SIG_FD with
 * t->ring set; its PC is in the ring too): switch to the mean period and
 * to no signals. Async-signal-safe. */
void upcall_ring_first(struct upcall_thread *t);

/* The kernel's cost of one sample of a perf backend (ns of the thread's
 * CPU): the timer or counter interrupt, the ring write, and with signals
 * their delivery and return, none of which a clock in the handler sees.
 * Measured on the calling thread: a fixed piece of work (~2 ms) timed on
 * the thread's CPU clock without and with an event at the shortest
 * period, 7 times interleaved; the upper quartile of (with - without) /
 * samples.
 * signals: a signal per sample, counted by the caller's SIGPROF handler
 * in *signalled (installed for the duration). 0 for the CPU-timer
 * backends (at most HZ samples a second) or if not measurable.
 * ~30 ms of CPU. Normal context, nothing armed on the thread. */
uint64_t upcall_trigger_cost(int backend, int signals, const volatile uint64_t *signalled);

/* Can the kernel's share matter against a bound of max_cost percent of a
 * thread's CPU at a sample every period_ns of it: would even 60 us a
 * sample reach half the bound? (No: not worth measuring.) */
static inline int upcall_trigger_cost_matters(uint64_t period_ns, int max_cost)
{
	return max_cost > 0 && period_ns && 60000ull * 10000 / period_ns >= (uint64_t)max_cost * 50;
}

/* Lower (or restore) a thread's sampling rate: re-arm its trigger at
 * period (in the backend's unit; t->period, the asked mean, is kept).
 * Perf backends: a new event at period replaces the old one
 * (opened first: if it cannot be made, the old one stays and the error is
 * returned); ring mode: the caller drained the ring just before. CPU
 * timer: its interval. -EAGAIN before the first overflow switched to the
 * mean, and for the process-wide itimer. Async-signal-safe (system calls
 * only); on the owning thread, from its handler or with SIGPROF blocked. */
int upcall_set_period(struct upcall_thread *t, uint64_t period);

/* Was fd the number of one of our events when its signals were set up?
 * Async-signal-safe. */
int upcall_is_tag(int fd);

/* Called on the thread concerned when a call that arms or re-arms its
 * own trigger fails with err = -EPERM, -ENOSYS or -EACCES, which a
 * sandbox entered without vprof's knowledge gives (the same calls worked
 * when the backend was chosen). NULL: not reported. Signal-safe. */
extern void (*upcall_refused)(int err);

/* A sandbox will bind every thread (seccomp's TSYNC): release every
 * trigger of the process from the calling thread, its own already
 * stopped. Every mapping is unmapped (each ring's readers waited for),
 * every CPU timer deleted, the itimer stopped, and no thread's trigger
 * makes a system call again (as if frozen). The rings should have been
 * drained just before (upcall_drain_others with force). Returns the
 * triggers released (perf events, or CPU timers): about the threads
 * that were sampled. Normal context. */
int upcall_stop_all(int backend);

/* A fork child drops the parent's trigger without touching it. */
void upcall_thread_forget(struct upcall_thread *t);
/* A fork child: unmap every perf mapping the parent's threads had (the
 * child's copies would keep the parent's events alive). */
void upcall_forget_all(void);

#endif
