/*
 * Sample triggers: perf_event overflow signals, POSIX per-thread CPU timers
 * and setitimer. See upcall.h for the backends and their costs here.
 *
 * How samples reach us was decided by bench/sampling.sh (section 6): a
 * task-clock sample costs ~20 us here when the kernel only writes the PC
 * into the event's ring buffer (perf record's way), ~40 us when it also
 * sends a signal, ~50 us with a per-sample re-arm ioctl. So the perf
 * backends run in ring mode: no signal per sample; a per-thread CPU timer
 * (tick-driven, nearly free) makes the thread drain its ring into the
 * MAP_SHARED spool every UPCALL_DRAIN_NS of its CPU, which bounds what a
 * SIGKILL can lose to that last stretch. Co-simulation (and later value
 * sampling) needs the thread interrupted at the sample: a signal per sample
 * (ring = 0). The CPU-timer backends are signals by nature.
 *
 * No descriptor is kept (see upcall.h, struct upcall_thread): an event is
 * set up, enabled and its descriptor closed; its mapping keeps it, and
 * unmapping it releases it.
 *
 * Concurrency: per-thread state is owned by its thread; upcall_classify and
 * upcall_rearm run in that thread's signal handler; upcall_rearm makes no
 * system call except once per thread, at the first overflow, where it
 * replaces the first period's event (a handful of calls). The tag and
 * mapping tables are shared, changed with atomics.
 */
#include "upcall/upcall.h"
#include "upcall/events.h"
#include "upcall/xorshift.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define TIMER_COOKIE ((void *)0x76707266ul)    /* "vprf": our timer's sigval */
#define DRAIN_COOKIE ((void *)0x76707264ul)    /* "vprd": a ring-drain timer */

/* VPROF_TEST_UPCALL_NOMAP=1 (tests only): every event mapping fails, as
 * with perf's locked-memory allowance spent, to exercise the one case that
 * keeps a descriptor. Read once, by upcall_choose (not in a handler). */
static int g_test_nomap;

static int faked_absent(int backend)
{
	/* Lets tests force the choice logic down the no-PMU (or no-perf)
	 * paths on a machine that has them. */
	const char *s = getenv("VPROF_UPCALL_FAKE_ENOENT");
	if (!s)
		return 0;
	const char *name = upcall_event_name(backend);
	size_t l = strlen(name);
	for (const char *p = s; (p = strstr(p, name)); p += l)
		if ((p == s || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
			return 1;
	return 0;
}

void (*upcall_refused)(int err);

/* A call arming the calling thread's own trigger failed (err < 0);
 * t: that trigger, or NULL when there is none yet. */
static int refused(const struct upcall_thread *t, int err)
{
	if ((err == -EPERM || err == -ENOSYS || err == -EACCES) && upcall_refused && (!t || !t->remote))
		upcall_refused(err);
	return err;
}

/* Set when upcall_stop_all released every trigger: no thread re-arms. */
static int g_frozen_all;

static int frozen(const struct upcall_thread *t)
{
	return t->frozen || __atomic_load_n(&g_frozen_all, __ATOMIC_ACQUIRE);
}

static int perf_open(int backend, uint64_t period, pid_t tid, int ring)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	switch (backend) {
	case UPCALL_EV_CYCLES:
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
		break;
	case UPCALL_EV_INSTRUCTIONS:
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_INSTRUCTIONS;
		break;
	case UPCALL_EV_TASK_CLOCK:
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		break;
	default:
		return -EINVAL;
	}
	if (faked_absent(backend))
		return -ENOENT;
	a.sample_period = period;
	a.disabled = 1;
	a.exclude_kernel = 1;    /* perf_event_paranoid=2: user-only */
	a.exclude_hv = 1;
	if (ring) {
		/* The time too, on the clock a sweep reads: a sweep tells a
		 * thread that stopped running by the age of its newest sample
		 * (upcall_drain_others). */
		a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TIME;
		a.use_clockid = 1;
		a.clockid = CLOCK_MONOTONIC;
		/* Executable mappings as they happen (dlopen, dlmopen, JIT'd
		 * files), with build-ids: images are known before any sample
		 * in them is drained, whatever ends the process. */
		a.mmap = 1;
		a.mmap2 = 1;
		a.build_id = 1;
		/* No wakeups: nobody polls; the drain timer reads the ring. */
		a.wakeup_events = 0;
		a.watermark = 1;
		a.wakeup_watermark = (UPCALL_RING_PAGES * 4096u) - 1;
	} else {
		a.wakeup_events = 1;
	}
	int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

uint64_t upcall_min_period(int backend)
{
	return backend == UPCALL_EV_CYCLES || backend == UPCALL_EV_INSTRUCTIONS ? UPCALL_MIN_PERIOD_EVENTS
									      : UPCALL_MIN_PERIOD_NS;
}

/* The scheduler's tick rate (Hz), from the coarse clock's resolution; 0
 * when it cannot be read. */
static uint64_t tick_hz(void)
{
	struct timespec r;
	if (clock_getres(CLOCK_REALTIME_COARSE, &r) < 0 || r.tv_sec || r.tv_nsec <= 0)
		return 0;
	return 1000000000ull / (uint64_t)r.tv_nsec;
}

int upcall_choose(const struct upcall_config *cfg, uint64_t *period_out)
{
	static const int kOrder[] = { UPCALL_EV_CYCLES, UPCALL_EV_TASK_CLOCK, UPCALL_EV_CPU_TIMER,
				      UPCALL_EV_ITIMER };
	static const int kTickOrder[] = { UPCALL_EV_CYCLES, UPCALL_EV_CPU_TIMER, UPCALL_EV_TASK_CLOCK,
					  UPCALL_EV_ITIMER };
	uint64_t freq = cfg->freq ? cfg->freq : 250;
	int last = -ENOENT;
	const char *nomap = getenv("VPROF_TEST_UPCALL_NOMAP");
	g_test_nomap = nomap && *nomap == '1';
	/* The rate asked, in samples per CPU-second, against the tick's. */
	uint64_t asked = cfg->period ? 1000000000ull / cfg->period : freq, hz = tick_hz();
	const int *order = cfg->signals && hz && asked <= hz ? kTickOrder : kOrder;

	for (size_t i = 0; i < sizeof(kOrder) / sizeof(kOrder[0]); i++) {
		int b = cfg->event ? cfg->event : order[i];
		uint64_t period = cfg->period;
		if (!period)
			/* PMU periods are in events: assume ~2.5 GHz of cycles or
			 * instructions per CPU-second for the mean rate. */
			period = (b == UPCALL_EV_CYCLES || b == UPCALL_EV_INSTRUCTIONS)
					 ? 2500000000ull / freq
					 : 1000000000ull / freq;
		if (period < upcall_min_period(b))
			period = upcall_min_period(b);
		int rc;
		switch (b) {
		case UPCALL_EV_CYCLES:
		case UPCALL_EV_INSTRUCTIONS:
		case UPCALL_EV_TASK_CLOCK:
			if (cfg->no_perf) {
				rc = -EPERM;
				break;
			}
			rc = perf_open(b, period, 0, 0);
			if (rc >= 0)
				upcall_fd_close(rc);    /* a probe: nothing kept */
			break;
		case UPCALL_EV_CPU_TIMER: {
			timer_t t;
			struct sigevent sev = { .sigev_notify = SIGEV_NONE };
			rc = faked_absent(b) ? -ENOENT
			     : timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) < 0 ? -errno : 0;
			if (rc == 0)
				timer_delete(t);
			break;
		}
		case UPCALL_EV_ITIMER:
			rc = faked_absent(b) ? -ENOENT : 0;
			break;
		default:
			rc = -EINVAL;
		}
		if (rc >= 0) {
			*period_out = period;
			return b;
		}
		last = rc;
		if (cfg->event)
			break;
	}
	return last;
}

/* ---- CPU timers of the process, for upcall_stop_all ---- */

/* Every timer made here, lock-free (slots claimed with a CAS); a full
 * table only leaves upcall_stop_all the ones it could not record. */
#define UPCALL_TIMERS 8192
static timer_t g_timers[UPCALL_TIMERS];
static int g_timers_used[UPCALL_TIMERS];

static void timer_record(timer_t tm)
{
	for (int i = 0; i < UPCALL_TIMERS; i++) {
		int z = 0;
		if (!__atomic_load_n(&g_timers_used[i], __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&g_timers_used[i], &z, 1, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			g_timers[i] = tm;
			__atomic_store_n(&g_timers_used[i], 2, __ATOMIC_RELEASE);
			return;
		}
	}
}

/* Delete a timer of ours (after upcall_stop_all: already deleted, and its
 * id maybe another's now: left alone). */
static void timer_drop(timer_t tm)
{
	if (__atomic_load_n(&g_frozen_all, __ATOMIC_ACQUIRE))
		return;
	for (int i = 0; i < UPCALL_TIMERS; i++)
		if (__atomic_load_n(&g_timers_used[i], __ATOMIC_ACQUIRE) == 2 && g_timers[i] == tm) {
			int two = 2;
			if (__atomic_compare_exchange_n(&g_timers_used[i], &two, 0, 0, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED))
				break;
		}
	timer_delete(tm);
}

static int timer_for(timer_t *tm, pid_t tid, pid_t target, void *cookie)
{
	struct sigevent sev;
	memset(&sev, 0, sizeof(sev));
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = UPCALL_SIGNAL;
	sev.sigev_value.sival_ptr = cookie;
	sev._sigev_un._tid = tid;
	/* Another thread's CPU clock, as pthread_getcpuclockid makes it:
	 * (~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED. */
	clockid_t clk = target ? (clockid_t)((~(unsigned)target << 3) | 6) : CLOCK_THREAD_CPUTIME_ID;
	if (timer_create(clk, &sev, tm) < 0)
		return target ? -errno : refused(NULL, -errno);
	timer_record(*tm);
	return 0;
}

/* ---- Tags: the numbers our events' signals carry ---- */

#define TAG_MAX 65536
static uint64_t g_tags[TAG_MAX / 64];

static void tag_mark(int fd)
{
	if (fd >= 0 && fd < TAG_MAX)
		__atomic_fetch_or(&g_tags[fd / 64], 1ull << (fd % 64), __ATOMIC_RELAXED);
}

int upcall_is_tag(int fd)
{
	return fd >= 0 && fd < TAG_MAX &&
	       (__atomic_load_n(&g_tags[fd / 64], __ATOMIC_RELAXED) >> (fd % 64) & 1);
}

/* The number an event's signals will carry: high (the top quarter of
 * RLIMIT_NOFILE, under TAG_MAX), where a program is unlikely to have a
 * descriptor of its own that it set up for SIGPROF. Once our descriptor is
 * closed the number is free again: the next thread's event usually gets
 * the same one, so the set of tags stays a handful of numbers. */
static int move_to_tag(int fd)
{
	struct rlimit rl;
	int floor = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 512) {
		uint64_t f = rl.rlim_cur == RLIM_INFINITY ? TAG_MAX : rl.rlim_cur - rl.rlim_cur / 4;
		floor = f > TAG_MAX - 1024 ? TAG_MAX - 1024 : (int)f;
	}
	int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
	if (hi < 0)
		return fd;       /* keep the low one: still works */
	upcall_fd_close(fd);
	return hi;
}

/* ---- Mappings: what keeps our events alive ---- */


/* Every event mapping of the process, for a fork child to drop (its copies
 * would keep the parent's events, and their locked pages, alive until it
 * execs). Lock-free: slots are claimed with a CAS. A full table (more than
 * UPCALL_MAPS live threads) only costs such a child that memory. */
#define UPCALL_MAPS 4096
static struct {
	void *addr;
	size_t len;
	/* Rings only: their length, set and cleared under busy, so that a
	 * thread that drains another's ring (upcall_drain_others) reads a
	 * mapping that stays mapped while it holds busy. */
	size_t ring_len;
	int busy;        /* a drain is reading this ring: its owner or a sweep */
	int owner;       /* the tid of the thread it samples */
} g_maps[UPCALL_MAPS];
static int g_maps_hi;    /* one past the highest slot ever claimed */

/* busy holds the tid of the thread reading the ring, 0 when none. */
static int slot_trylock(int i, int tid)
{
	int z = 0;
	return __atomic_compare_exchange_n(&g_maps[i].busy, &z, tid, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* Waits while another thread's drain reads the ring: a few microseconds.
 * Held by this very thread (a drain interrupted by a handler of the
 * program's that ends the thread), the reader is below us on this stack
 * and reads no more: go on. Returns whether it took the lock. */
static int slot_lock(int i, int tid)
{
	while (!slot_trylock(i, tid)) {
		if (__atomic_load_n(&g_maps[i].busy, __ATOMIC_ACQUIRE) == tid)
			return 0;
		syscall(SYS_sched_yield);
	}
	return 1;
}

static void slot_unlock(int i)
{
	__atomic_store_n(&g_maps[i].busy, 0, __ATOMIC_RELEASE);
}

static int maps_add(void *addr, size_t len, int ring, int tid)
{
	for (int i = 0; i < UPCALL_MAPS; i++) {
		void *want = NULL;
		if (!__atomic_load_n(&g_maps[i].addr, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&g_maps[i].addr, &want, addr, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_store_n(&g_maps[i].len, len, __ATOMIC_RELEASE);
			__atomic_store_n(&g_maps[i].owner, tid, __ATOMIC_RELEASE);
			int hi = __atomic_load_n(&g_maps_hi, __ATOMIC_RELAXED);
			while (hi < i + 1 && !__atomic_compare_exchange_n(&g_maps_hi, &hi, i + 1, 0,
									 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
				;
			if (ring) {
				int locked = slot_lock(i, tid);
				__atomic_store_n(&g_maps[i].ring_len, len, __ATOMIC_RELAXED);
				if (locked)
					slot_unlock(i);
			}
			return i;
		}
	}
	return -1;
}

/* wait: take the slot's lock first, so that no other thread is reading the
 * ring when it is unmapped. A fork child (upcall_thread_forget) must not:
 * a lock the parent's threads held at the fork is never released there. */
static void unmap_event(void *addr, size_t len, int slot, int wait, int tid)
{
	if (slot < 0 || slot >= UPCALL_MAPS || __atomic_load_n(&g_maps[slot].addr, __ATOMIC_ACQUIRE) != addr) {
		/* Not in the table (it was full): nobody else reads it. */
		munmap(addr, len);
		return;
	}
	if (wait)
		slot_lock(slot, tid);
	__atomic_store_n(&g_maps[slot].ring_len, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&g_maps[slot].addr, NULL, __ATOMIC_RELEASE);
	/* With the descriptor closed, this drops the last reference: the
	 * kernel releases the event (no further sample or signal). */
	munmap(addr, len);
	slot_unlock(slot);
}

int upcall_stop_all(int backend)
{
	int tid = (int)syscall(SYS_gettid), timers = 0, events = 0;
	__atomic_store_n(&g_frozen_all, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < UPCALL_TIMERS; i++)
		if (__atomic_exchange_n(&g_timers_used[i], 0, __ATOMIC_ACQ_REL) == 2) {
			timer_delete(g_timers[i]);
			timers++;
		}
	int hi = __atomic_load_n(&g_maps_hi, __ATOMIC_ACQUIRE);
	for (int i = 0; i < hi; i++) {
		void *a = __atomic_load_n(&g_maps[i].addr, __ATOMIC_ACQUIRE);
		if (a) {
			unmap_event(a, __atomic_load_n(&g_maps[i].len, __ATOMIC_ACQUIRE), i, 1, tid);
			events++;
		}
	}
	upcall_process_stop(backend);
	return backend == UPCALL_EV_CPU_TIMER ? timers : events;
}

void upcall_forget_all(void)
{
	/* Timers are not inherited by fork. */
	for (int i = 0; i < UPCALL_TIMERS; i++)
		g_timers_used[i] = 0;
	/* In a fork child, which has one thread: no lock is waited for. */
	for (int i = 0; i < UPCALL_MAPS; i++) {
		void *a = __atomic_exchange_n(&g_maps[i].addr, NULL, __ATOMIC_ACQ_REL);
		g_maps[i].ring_len = 0;
		g_maps[i].busy = 0;
		if (a)
			munmap(a, g_maps[i].len);
	}
}

/* Open, tag, map and set up one event of t's. Ring mode maps the ring;
 * signal mode maps the header page only, which is all it takes to keep the
 * event once its descriptor is closed. signals: overflow signals to tid
 * (fasync). Leaves t->open_fd open (the caller enables, then closes it).
 * Only system calls: safe in the handler (the switch to the mean period). */
static int event_open(struct upcall_thread *t, int backend, uint64_t period, pid_t tid,
		      pid_t target, int ring, int signals)
{
	int fd = perf_open(backend, period, target, ring);
	if (fd < 0)
		return target ? fd : refused(NULL, fd);
	/* High, and before F_SETOWN_EX/O_ASYNC: signals carry the number the
	 * descriptor had when they were set up, and keep it after the close. */
	fd = move_to_tag(fd);
	tag_mark(fd);
	/* Locked memory is what limits an unprivileged user (perf_event_mlock_kb
	 * per CPU, then RLIMIT_MEMLOCK): past the full ring, a one-page one
	 * (256 samples, still 25 ms at 10 kHz), so that more threads keep no
	 * descriptor. */
	static const unsigned kPages[] = { UPCALL_RING_PAGES, 1 };
	size_t bytes = 4096;
	void *m = MAP_FAILED;
	for (unsigned i = 0; i < (ring ? 2u : 1u) && m == MAP_FAILED; i++) {
		bytes = (size_t)(ring ? 1 + kPages[i] : 1) * 4096;
		m = g_test_nomap ? (errno = EPERM, MAP_FAILED)
				 : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	}
	if (m == MAP_FAILED && ring) {
		int err = -errno;
		upcall_fd_close(fd);
		return err;
	}
	/* Signal mode with no mapping (locked-memory limits reached): the
	 * descriptor must stay open, as the one thing that keeps the event. */
	if (signals) {
		struct f_owner_ex own = { .type = F_OWNER_TID, .pid = tid };
		if (syscall(SYS_fcntl, fd, F_SETSIG, UPCALL_SIGNAL) < 0 ||
		    syscall(SYS_fcntl, fd, F_SETOWN_EX, &own) < 0 ||
		    syscall(SYS_fcntl, fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0) {
			int err = -errno;
			if (m != MAP_FAILED)
				munmap(m, bytes);
			upcall_fd_close(fd);
			return err;
		}
	}
	t->fd = fd;
	t->open_fd = fd;
	if (m != MAP_FAILED) {
		t->map_slot = maps_add(m, bytes, ring, t->tid);
		t->map = m;
		t->map_bytes = bytes;
		t->ring = ring ? m : NULL;
		t->ring_bytes = ring ? bytes : 0;
	} else {
		t->map = NULL;
		t->map_bytes = 0;
		t->map_slot = -1;
		t->ring = NULL;
	}
	return 0;
}

/* Enable t's event (refresh: for one overflow only), then close its
 * descriptor if a mapping keeps the event. */
static int event_enable(struct upcall_thread *t, int refresh)
{
	if (refresh ? syscall(SYS_ioctl, t->open_fd, PERF_EVENT_IOC_REFRESH, 1) < 0
		    : syscall(SYS_ioctl, t->open_fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return refused(t, -errno);
	if (t->map) {
		upcall_fd_close(t->open_fd);
		t->open_fd = -1;
	} else if (t->keep_fd) {
		t->keep_fd(t->open_fd, 1);
	}
	return 0;
}

/* Release t's event: unmap it (the last reference once the descriptor is
 * closed) and close the descriptor if one was kept. */
static void event_release(struct upcall_thread *t)
{
	if (t->map)
		unmap_event(t->map, t->map_bytes, t->map_slot, 1, t->tid);
	if (t->open_fd >= 0) {
		syscall(SYS_ioctl, t->open_fd, PERF_EVENT_IOC_DISABLE, 0);
		if (!t->map && t->keep_fd)
			t->keep_fd(t->open_fd, 0);
		upcall_fd_close(t->open_fd);
	}
	t->map = t->ring = NULL;
	t->map_slot = -1;
	t->map_bytes = t->ring_bytes = 0;
	t->open_fd = -1;
}

int upcall_thread_start(struct upcall_thread *t, int backend, uint64_t period, uint64_t seed,
			pid_t target, int ring)
{
	memset(t, 0, sizeof(*t));
	t->fd = t->open_fd = -1;
	t->map_slot = -1;
	t->period = period;
	t->rng = seed | 1;
	pid_t tid = target ? target : (pid_t)syscall(SYS_gettid);
	t->tid = tid;
	t->remote = target != 0;
	/* The first period is uniform in [lo, period]: a thread (or process)
	 * that lives for a fraction f of a period is then sampled with
	 * probability about f, as it would be mid-run, instead of never.
	 *
	 * lo is period/16, but never under UPCALL_MIN_PERIOD_*. This first
	 * period stays the period until the first overflow's signal is
	 * handled, and that signal is delivered only on a return to user
	 * mode. At 10 kHz, period/16 is 6 us and the hrtimer floor 10 us,
	 * while a timer interrupt costs this VM ~20 us: the next expiry is
	 * due before the last one is handled, the thread's CPU goes to
	 * interrupts (charged to it), and the signal that would set the mean
	 * period waits for a user-mode return that hardly comes. That was the
	 * make -j2 runaway at 10 kHz (a gcc driver at 2 s of CPU instead of
	 * 20 ms, its first signal handled 2 s into its life; bench:
	 * tests/make_stress.sh). A thread armed from outside has no handler
	 * state to switch periods with: it starts at the mean. */
	uint64_t lo = period / 16, floor = upcall_min_period(backend);
	if (lo < floor)
		lo = floor < period ? floor : period;
	uint64_t first = target ? period : lo + upcall_xorshift64(&t->rng) % (period - lo + 1);
	if (first == 0)
		first = 1;

	switch (backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK: {
		/* The first period's event overflows once (PERF_EVENT_IOC_REFRESH
		 * 1: the kernel then disables it) and signals; the handler
		 * replaces it by an event at the mean period (upcall_rearm).
		 * Changing the period in place would need the descriptor
		 * (PERF_EVENT_IOC_PERIOD), and we keep none. */
		int err = event_open(t, backend, first, tid, target, ring, 1);
		if (err < 0)
			return err;
		t->ring_mode = ring;
		t->switch_pending = !target;
		if (ring) {
			err = timer_for(&t->drain, tid, target, DRAIN_COOKIE);
			if (err < 0) {
				event_release(t);
				return err;
			}
			t->has_drain = 1;
		}
		break;
	}
	case UPCALL_EV_CPU_TIMER: {
		int err = timer_for(&t->timer, tid, target, TIMER_COOKIE);
		if (err < 0)
			return err;
		t->has_timer = 1;
		t->first = first;
		break;
	}
	case UPCALL_EV_ITIMER:
		break;           /* process-wide: upcall_process_start */
	default:
		return -EINVAL;
	}
	t->backend = backend;
	return 0;
}

int upcall_thread_enable(struct upcall_thread *t)
{
	switch (t->backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK: {
		int err = event_enable(t, t->switch_pending);
		if (err < 0)
			return err;
		if (t->has_drain) {
			struct itimerspec its;
			uint64_t first = 1 + upcall_xorshift64(&t->rng) % UPCALL_DRAIN_NS;
			its.it_value.tv_sec = 0;
			its.it_value.tv_nsec = (long)first;
			its.it_interval.tv_sec = 0;
			its.it_interval.tv_nsec = (long)UPCALL_DRAIN_NS;
			if (timer_settime(t->drain, 0, &its, NULL) < 0)
				return refused(t, -errno);
		}
		return 0;
	}
	case UPCALL_EV_CPU_TIMER: {
		struct itimerspec its;
		its.it_value.tv_sec = (time_t)(t->first / 1000000000ull);
		its.it_value.tv_nsec = (long)(t->first % 1000000000ull);
		its.it_interval.tv_sec = (time_t)(t->period / 1000000000ull);
		its.it_interval.tv_nsec = (long)(t->period % 1000000000ull);
		return timer_settime(t->timer, 0, &its, NULL) < 0 ? refused(t, -errno) : 0;
	}
	}
	return 0;
}

typedef void on_mmap_fn(void *arg, uint64_t addr, uint64_t len, uint64_t pgoff,
			const uint8_t *build_id, uint32_t build_id_len, const char *path);

/* The header of the record at tail, if a whole one lies before head.
 * Records are 8-byte aligned and the size a power of two: a record may
 * wrap, but never inside one of its 8-byte words. */
static int ring_record(const uint8_t *data, uint64_t mask, uint64_t tail, uint64_t head,
		       struct perf_event_header *eh)
{
	if (tail + sizeof(*eh) > head)
		return 0;
	memcpy(eh, data + (tail & mask), sizeof(*eh));
	return eh->size >= sizeof(*eh) && tail + eh->size <= head;
}

/* One ring's records, from its tail to the head the kernel wrote. Its
 * reader holds the ring's slot (or is its owner, out of the table). */
static uint64_t drain_ring(struct perf_event_mmap_page *h, on_mmap_fn *on_mmap, upcall_pc_fn *fn,
			   void *arg, uint64_t *lost)
{
	uint64_t n = 0;
	const uint8_t *data = (const uint8_t *)h + h->data_offset;
	uint64_t size = h->data_size, mask = size - 1;
	uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = h->data_tail;
	struct perf_event_header eh;
	while (ring_record(data, mask, tail, head, &eh)) {
		uint64_t w1;
		memcpy(&w1, data + ((tail + 8) & mask), 8);
		if (eh.type == PERF_RECORD_SAMPLE) {
			fn(arg, w1);
			n++;
		} else if (eh.type == PERF_RECORD_MMAP2 && on_mmap && eh.size >= 80) {
			/* { header, pid, tid, addr, len, pgoff, build-id or
			 *   dev/ino (24), prot, flags, filename }. This runs on
			 * the program's own stack (ring mode has no alternate
			 * stack): copy the fixed part and only as much of the
			 * name as an image record keeps. */
			uint8_t fix[72];
			char path[UPCALL_PATH_MAX];
			for (uint32_t i = 0; i < sizeof(fix); i += 8) {
				uint64_t w;
				memcpy(&w, data + ((tail + i) & mask), 8);
				memcpy(fix + i, &w, 8);
			}
			uint32_t n = eh.size - sizeof(fix);
			if (n > sizeof(path) - 1)
				n = sizeof(path) - 1;
			for (uint32_t i = 0; i < n; i++)
				path[i] = (char)data[(tail + sizeof(fix) + i) & mask];
			path[n] = 0;
			uint64_t addr, len, pgoff;
			memcpy(&addr, fix + 16, 8);
			memcpy(&len, fix + 24, 8);
			memcpy(&pgoff, fix + 32, 8);
			int has_bid = (eh.misc & PERF_RECORD_MISC_MMAP_BUILD_ID) != 0;
			on_mmap(arg, addr, len, pgoff, has_bid ? fix + 44 : NULL,
				   has_bid ? (fix[40] > 20 ? 20 : fix[40]) : 0, path);
		} else if (eh.type == PERF_RECORD_LOST) {
			uint64_t cnt;         /* { header, id, lost } */
			memcpy(&cnt, data + ((tail + 16) & mask), 8);
			*lost += cnt;
		}
		tail += eh.size;
	}
	__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
	/* No re-arm here: PERF_EVENT_IOC_PERIOD restarts the period, and a
	 * drain lands mid-period, so a re-arm per drain discarded half a
	 * period each time (224 Hz achieved for 250 asked at 20 ms drains).
	 * The period is drawn once, at the first overflow (upcall_ring_first),
	 * and the random first period gives each thread its phase. */
	return n;
}

uint64_t upcall_drain(struct upcall_thread *t, upcall_pc_fn *fn, void *arg, uint64_t *lost)
{
	struct perf_event_mmap_page *h = t->ring;
	if (!h || frozen(t))
		return 0;
	int slot = t->map_slot;
	if (slot < 0)
		return drain_ring(h, t->on_mmap, fn, arg, lost);
	/* Another thread's sweep is reading it: its records go there. */
	if (!slot_trylock(slot, t->tid))
		return 0;
	uint64_t n = drain_ring(h, t->on_mmap, fn, arg, lost);
	slot_unlock(slot);
	return n;
}

/* The time of the newest sample a ring holds undrained (records carry
 * PERF_SAMPLE_TIME on CLOCK_MONOTONIC), 0 if it holds none. Reads only. */
static uint64_t newest_sample_ns(const struct perf_event_mmap_page *h, uint64_t head)
{
	const uint8_t *data = (const uint8_t *)h + h->data_offset;
	uint64_t mask = h->data_size - 1, tail = h->data_tail, t = 0;
	struct perf_event_header eh;
	while (ring_record(data, mask, tail, head, &eh)) {
		if (eh.type == PERF_RECORD_SAMPLE && eh.size >= 24)   /* { header, ip, time } */
			memcpy(&t, data + ((tail + 16) & mask), 8);
		tail += eh.size;
	}
	return t;
}

/* Is thread tid of this process running or waiting for a CPU (state R in
 * /proc/self/task/TID/stat)? Then it is not parked, only preempted (more
 * runnable threads than CPUs: tests/self_limit.sh's three spinning threads
 * on two CPUs went 20 ms without a sample now and then), and drains its
 * ring itself within 20 ms of its CPU. Read only for a ring whose newest
 * sample is old. Unknown (no /proc): not runnable. Signal-safe. */
static int runnable(int tid)
{
	char path[48] = "/proc/self/task/", digits[12], st[512];
	int n = 0, at = 16;
	if (tid <= 0)
		return 0;
	for (int v = tid; v && n < 11; v /= 10)
		digits[n++] = (char)('0' + v % 10);
	while (n)
		path[at++] = digits[--n];
	memcpy(path + at, "/stat", 6);
	int fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long got = syscall(SYS_read, fd, st, sizeof(st) - 1);
	upcall_fd_close(fd);
	if (got <= 0)
		return 0;
	st[got] = 0;
	/* "TID (comm) S ...": the comm may hold ") ", the state follows the
	 * last one. */
	const char *p = NULL;
	for (const char *q = st; (q = strstr(q, ") ")); q += 2)
		p = q;
	return p && p[2] == 'R';
}

/* Why: a thread's drain timer runs on that thread's CPU clock, so a thread
 * that stops running keeps what its ring holds (up to UPCALL_DRAIN_NS of
 * its samples) until it runs again. Go parks idle Ms instead of ending
 * them, and a goroutine moves between Ms: a cgo program whose goWork ran
 * on 2-3 threads lost ~20 of its ~680 goWork samples at exit_group
 * (tests/go_cgo.sh, the threaded rounds); a C program's idle pool workers
 * lose theirs the same way at exit. So any draining thread also looks at
 * the others' rings, at most once per UPCALL_DRAIN_NS of wall time in the
 * process, and drains those whose newest sample is older than that (their
 * thread stopped running, or waits), all of them at thread end and exit;
 * it takes each ring's slot with a try-lock: a ring whose owner is
 * draining it is skipped, and an owner that finds its ring taken leaves
 * the records to the sweep. The age is read from the samples in one look:
 * the rule before it (drain a ring whose head had not moved since the
 * previous look) needed two sweeps after a thread parked, and a program
 * that left ~60 ms of its CPU later on a loaded machine had not had them
 * (tests/idle_threads.sh: 39 of ~120 samples, one run in five). */
static uint64_t g_sweep_ns;
#define SWEEP_ASKS 8
static unsigned g_sweep_from;    /* the slot the next sweep starts at */

uint64_t upcall_drain_others(struct upcall_thread *self, upcall_pc_fn *fn, void *arg,
			     uint64_t *lost, int force)
{
	struct timespec ts;
	if (!self->ring || frozen(self))
		return 0;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t now = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	uint64_t last = __atomic_load_n(&g_sweep_ns, __ATOMIC_RELAXED);
	if (!force && now - last < UPCALL_DRAIN_NS)
		return 0;
	if (!__atomic_compare_exchange_n(&g_sweep_ns, &last, now, 0, __ATOMIC_RELAXED,
					 __ATOMIC_RELAXED) && !force)
		return 0;      /* another thread sweeps now */
	uint64_t n = 0;
	int tid = self->tid, asked = 0;
	int hi = __atomic_load_n(&g_maps_hi, __ATOMIC_ACQUIRE);
	/* At most SWEEP_ASKS threads found runnable a sweep (many threads
	 * preempted on few CPUs would cost a /proc read each, every sweep);
	 * the next sweep starts after the last one asked, so that every
	 * ring has its turn. A parked thread's answer is not counted: its
	 * ring is drained, and not asked about again until it has run; a
	 * limit on those left the rings past the 8th of 10 workers that
	 * parked together undrained when the process left before the next
	 * sweep (tests/idle_threads.sh, rawexit: ~20 of ~120 samples lost,
	 * one run in four under perf record). */
	unsigned from = __atomic_load_n(&g_sweep_from, __ATOMIC_RELAXED);
	for (int k = 0; k < hi; k++) {
		int i = (int)((from + (unsigned)k) % (unsigned)hi);
		if (i == self->map_slot || !__atomic_load_n(&g_maps[i].ring_len, __ATOMIC_RELAXED))
			continue;
		if (!slot_trylock(i, tid))
			continue;
		struct perf_event_mmap_page *h = __atomic_load_n(&g_maps[i].addr, __ATOMIC_ACQUIRE);
		size_t rl = __atomic_load_n(&g_maps[i].ring_len, __ATOMIC_RELAXED);
		/* Under the lock ring_len and addr are one mapping's, mapped. */
		if (h && rl > 4096 && h->data_offset + h->data_size <= rl) {
			/* A ring whose thread runs, or waits for a CPU, is its
			 * own to drain: the drain's cost is that thread's,
			 * which --max-cost bounds per thread. The age of its
			 * newest sample does not tell it from a parked one (a
			 * preempted thread's is as old): its state does
			 * (runnable). Only at thread end and exit (force) is
			 * every ring taken, and a ring over half full whatever
			 * its thread does: its drain timer has not fired for
			 * several of its periods. The kernel's thread CPU
			 * timers stall now and then while their thread runs
			 * with more runnable threads than CPUs (a plain
			 * program's 20 ms timer, 3 threads and a busy loop on
			 * 2 CPUs: 34-64 expiries of 75, re-arming it did not
			 * help; the timer reads as due), and the kernel drops
			 * what a full ring cannot take (3 threads at 4 kHz
			 * there: up to 1159 of 12500 samples dropped). */
			uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE);
			int take = force || head - h->data_tail > h->data_size / 2;
			if (!take && head != h->data_tail &&
			    (int64_t)(now - newest_sample_ns(h, head)) >= (int64_t)UPCALL_DRAIN_NS &&
			    asked < SWEEP_ASKS) {
				__atomic_store_n(&g_sweep_from, (unsigned)i + 1, __ATOMIC_RELAXED);
				take = !runnable(__atomic_load_n(&g_maps[i].owner, __ATOMIC_ACQUIRE));
				asked += !take;
			}
			if (take && head != h->data_tail)
				n += drain_ring(h, self->on_mmap, fn, arg, lost);
		}
		slot_unlock(i);
	}
	return n;
}

/* ---- the kernel's cost of a sample (upcall_trigger_cost) ---- */

/* A dependent chain: its speed is the core's, not the memory's. */
__attribute__((noinline)) static uint64_t cal_work(uint64_t n)
{
	uint64_t x = n;
	for (uint64_t i = 0; i < n; i++) {
		x = x * 3 + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

static uint64_t cal_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cal_timed(uint64_t n)
{
	uint64_t t0 = cal_cpu_ns();
	cal_work(n);
	return cal_cpu_ns() - t0;
}

static void cal_count(void *arg, uint64_t pc)
{
	(*(uint64_t *)arg)++;
}

uint64_t upcall_trigger_cost(int backend, int signals, const volatile uint64_t *signalled)
{
	enum { ROUNDS = 7 };
	if (backend != UPCALL_EV_CYCLES && backend != UPCALL_EV_INSTRUCTIONS &&
	    backend != UPCALL_EV_TASK_CLOCK)
		return 0;
	uint64_t period = upcall_min_period(backend), n = 50000, t = 0;
	pid_t tid = (pid_t)syscall(SYS_gettid);
	while (n < (1ull << 34) && (t = cal_timed(n)) < 1000000)
		n *= 2;
	n = t ? n * 2000000 / t : n;        /* ~2 ms */
	uint64_t cost[ROUNDS];
	int k = 0;
	for (int r = 0; r < ROUNDS; r++) {
		struct upcall_thread e;
		memset(&e, 0, sizeof(e));
		e.fd = e.open_fd = e.map_slot = -1;
		e.tid = tid;
		if (event_open(&e, backend, period, tid, 0, !signals, signals) < 0)
			break;
		uint64_t off = 0, on, count = 0, lost = 0, s0 = signals ? *signalled : 0;
		if (r & 1)
			off = cal_timed(n);    /* the order alternates: drift cancels */
		if (event_enable(&e, 0) < 0) {
			event_release(&e);
			break;
		}
		on = cal_timed(n);
		if (signals)
			count = *signalled - s0;
		else if (e.ring)
			drain_ring(e.ring, NULL, cal_count, &count, &lost);
		event_release(&e);
		if (!(r & 1))
			off = cal_timed(n);
		count += lost;
		if (count >= 8)
			cost[k++] = on > off ? (on - off) / count : 0;
	}
	if (k < 3)
		return 0;
	for (int i = 1; i < k; i++)
		for (int j = i; j > 0 && cost[j - 1] > cost[j]; j--) {
			uint64_t x = cost[j];
			cost[j] = cost[j - 1];
			cost[j - 1] = x;
		}
	/* The median. The cost varies with the load (12.9-15.5 us beside
	 * 500 runnable tasks), which moves every round alike; a round the
	 * host interrupts does not: one calibration in ~70 on an Intel
	 * Xeon read 138 us a sample against 39-51 us in the others (the
	 * upper quartile, used before, moves with two such rounds of
	 * seven), and a run at 4 kHz was then held at 1 kHz throughout. */
	return cost[k / 2];
}

/* The first period's event has overflowed (and disabled itself): replace
 * it by one at the mean period, jittered once. Runs in the owning thread's
 * handler: system calls only. Ring mode drains the old ring first, then
 * releases it before mapping the new one (locked memory is counted per
 * user). If no event can be made (the program at its descriptor limit, no
 * locked memory left), the thread is no longer sampled. */
uint64_t *upcall_ring_fallbacks;

static void switch_to_mean(struct upcall_thread *t)
{
	t->switch_pending = 0;
	if (frozen(t))
		return;
	/* The drain may want a new period (preload/selflimit.c): not while
	 * this event is being replaced. */
	t->switching = 1;
	if (t->ring && t->drain_now)
		t->drain_now();
	t->switching = 0;
	event_release(t);
	/* The mean period itself. It was jittered by +-1/16 once per thread:
	 * a period drawn once does not randomize the intervals within the
	 * thread (DCPI drew one per sample), it only scaled the thread's
	 * count by up to 6% (one single-threaded run in five more than 5%
	 * off the asked rate, tests/proportion.sh). The random first period
	 * still gives each thread its own phase. */
	uint64_t p = t->period;
	pid_t tid = t->tid;
	/* Ring mode wants no signal per sample; if the ring cannot be mapped,
	 * a signal per sample (its PC then comes from the signal). */
	int err = t->ring_mode ? event_open(t, t->backend, p, tid, 0, 1, 0) : -EAGAIN;
	if (err < 0) {
		err = event_open(t, t->backend, p, tid, 0, 0, 1);
		if (err == 0 && t->ring_mode && upcall_ring_fallbacks)
			__atomic_fetch_add(upcall_ring_fallbacks, 1, __ATOMIC_RELAXED);
	}
	if (err == 0 && event_enable(t, 0) < 0) {
		event_release(t);
		err = -1;
	}
	if (!t->ring && t->has_drain) {      /* nothing left to drain */
		timer_drop(t->drain);
		t->has_drain = 0;
	}
	if (err < 0)
		t->fd = -1;
}

int upcall_set_period(struct upcall_thread *t, uint64_t period)
{
	if (frozen(t))
		return -EAGAIN;
	switch (t->backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK: {
		if (t->switch_pending || t->switching || t->fd < 0 || !t->map)
			return -EAGAIN;
		/* The new event first, so that a failure (locked memory,
		 * descriptors) leaves the thread sampled as it was. */
		struct upcall_thread old = *t;
		int ring = t->ring != NULL;
		int err = event_open(t, t->backend, period, t->tid, 0, ring, !ring);
		if (err == 0 && (err = event_enable(t, 0)) < 0)
			event_release(t);
		if (err < 0) {
			*t = old;
			return err;
		}
		event_release(&old);
		return 0;
	}
	case UPCALL_EV_CPU_TIMER: {
		if (!t->has_timer)
			return -EAGAIN;
		struct itimerspec its;
		its.it_value.tv_sec = its.it_interval.tv_sec = (time_t)(period / 1000000000ull);
		its.it_value.tv_nsec = its.it_interval.tv_nsec = (long)(period % 1000000000ull);
		return timer_settime(t->timer, 0, &its, NULL) < 0 ? refused(t, -errno) : 0;
	}
	}
	return -EAGAIN;
}

void upcall_ring_first(struct upcall_thread *t)
{
	upcall_rearm(t);
}

void upcall_thread_forget(struct upcall_thread *t)
{
	/* The parent's event, ring or descriptor: not ours to disable.
	 * After upcall_stop_all, gone already. */
	if (t->map && !frozen(t))
		unmap_event(t->map, t->map_bytes, t->map_slot, 0, t->tid);
	if (t->open_fd >= 0)
		upcall_fd_close(t->open_fd);
	t->map = t->ring = NULL;
	t->map_slot = -1;
	t->open_fd = t->fd = -1;
	t->has_timer = t->has_drain = 0;    /* timers are not inherited */
	t->switch_pending = 0;
	t->backend = 0;
}

void upcall_thread_stop(struct upcall_thread *t)
{
	if (frozen(t)) {
		/* Released by upcall_stop_all, or a sandbox refuses the calls
		 * that would: forgotten, not touched. */
		t->map = t->ring = NULL;
		t->map_slot = -1;
		t->open_fd = t->fd = -1;
		t->has_timer = t->has_drain = 0;
		t->switch_pending = 0;
		t->backend = 0;
		return;
	}
	if (t->has_drain) {
		timer_drop(t->drain);
		t->has_drain = 0;
	}
	event_release(t);
	if (t->has_timer) {
		timer_drop(t->timer);
		t->has_timer = 0;
	}
	t->switch_pending = 0;
	t->backend = 0;
}

int upcall_process_start(int backend, uint64_t period)
{
	if (backend != UPCALL_EV_ITIMER)
		return 0;
	struct itimerval v;
	v.it_interval.tv_sec = (time_t)(period / 1000000000ull);
	v.it_interval.tv_usec = (suseconds_t)(period % 1000000000ull / 1000);
	v.it_value = v.it_interval;
	/* The raw call: libvprof.so interposes setitimer for the program. */
	return syscall(SYS_setitimer, ITIMER_PROF, &v, NULL) < 0 ? -errno : 0;
}

void upcall_process_stop(int backend)
{
	if (backend != UPCALL_EV_ITIMER)
		return;
	struct itimerval v;
	memset(&v, 0, sizeof(v));
	syscall(SYS_setitimer, ITIMER_PROF, &v, NULL);
}

int upcall_classify(const siginfo_t *si, int backend)
{
	switch (backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK:
		if (si->si_code == SI_TIMER && si->si_value.sival_ptr == DRAIN_COOKIE)
			return UPCALL_SIG_DRAIN;
		/* perf overflow signals come through fasync: POLL_IN, or
		 * POLL_HUP when an event limit is hit. */
		return si->si_code >= POLL_IN && si->si_code <= POLL_HUP ? UPCALL_SIG_FD : UPCALL_SIG_NONE;
	case UPCALL_EV_CPU_TIMER:
		return si->si_code == SI_TIMER && si->si_value.sival_ptr == TIMER_COOKIE
			       ? UPCALL_SIG_OURS : UPCALL_SIG_NONE;
	case UPCALL_EV_ITIMER:
		return si->si_code == SI_KERNEL ? UPCALL_SIG_OURS : UPCALL_SIG_NONE;
	}
	return UPCALL_SIG_NONE;
}

void upcall_rearm(struct upcall_thread *t)
{
	switch (t->backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK:
		/* The first overflow switches to the mean period, jittered once
		 * per thread. No per-sample re-arm: PERF_EVENT_IOC_PERIOD needs a
		 * descriptor, which we do not keep (see upcall.h), and costs a
		 * system call per sample. */
		if (t->switch_pending)
			switch_to_mean(t);
		break;
	case UPCALL_EV_CPU_TIMER:
		/* CPU timers are checked at the scheduler tick (HZ=250 here),
		 * so jitter below a tick changes nothing, and re-arming from
		 * the handler loses up to a tick per sample (measured: 152 Hz
		 * achieved for 250 asked). The periodic interval keeps the mean
		 * exact; the random first expiry gives each thread its phase. */
		break;
	}
}
