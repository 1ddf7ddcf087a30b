/*
 * Sample triggers: perf_event overflow signals, POSIX per-thread CPU timers
 * and setitimer. See upcall.h for the backends and their costs here.
 *
 * Each sample is a signal. We considered letting the kernel write PCs into
 * a perf ring buffer and signalling only when a drain or a value sample is
 * due: that saves the signal delivery (~2 us here) but not the timer
 * interrupt that dominates a sample's cost in this VM (bench/sampling.sh
 * shows an empty handler on task-clock costing as much as perf record at
 * the same rate), and undrained PCs in the ring buffer die with SIGKILL.
 * So a signal per sample, counted straight into the MAP_SHARED spool.
 *
 * Concurrency: per-thread state is owned by its thread; upcall_is_ours and
 * upcall_rearm run in that thread's signal handler and make at most one
 * system call (the re-arm).
 */
#include "upcall/upcall.h"
#include "merge/format.h"
#include "merge/profile.h"
#include "merge/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>

#define TIMER_COOKIE ((void *)0x76707266ul)    /* "vprf": our timer's sigval */

static uint64_t xorshift(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

/* Mean period -> this sample's period, uniform in [p - p/16, p + p/16]. */
static uint64_t jitter(uint64_t *rng, uint64_t p)
{
	uint64_t w = p / 8;
	if (w == 0)
		return p;
	return p - p / 16 + xorshift(rng) % (w + 1);
}

static int faked_absent(int backend)
{
	/* Lets tests force the choice logic down the no-PMU (or no-perf)
	 * paths on a machine that has them. */
	const char *s = getenv("VPROF_UPCALL_FAKE_ENOENT");
	if (!s)
		return 0;
	const char *name = merge_event_name(backend);
	size_t l = strlen(name);
	for (const char *p = s; (p = strstr(p, name)); p += l)
		if ((p == s || p[-1] == ',') && (p[l] == 0 || p[l] == ','))
			return 1;
	return 0;
}

static int perf_open(int backend, uint64_t period, pid_t tid)
{
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	switch (backend) {
	case MERGE_EV_CYCLES:
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_CPU_CYCLES;
		break;
	case MERGE_EV_INSTRUCTIONS:
		a.type = PERF_TYPE_HARDWARE;
		a.config = PERF_COUNT_HW_INSTRUCTIONS;
		break;
	case MERGE_EV_TASK_CLOCK:
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
	a.wakeup_events = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, tid, -1, -1, PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int upcall_choose(const struct upcall_config *cfg, uint64_t *period_out)
{
	static const int kOrder[] = { MERGE_EV_CYCLES, MERGE_EV_TASK_CLOCK, MERGE_EV_CPU_TIMER,
				      MERGE_EV_ITIMER };
	uint64_t freq = cfg->freq ? cfg->freq : 250;
	int last = -ENOENT;

	for (size_t i = 0; i < sizeof(kOrder) / sizeof(kOrder[0]); i++) {
		int b = cfg->event ? cfg->event : kOrder[i];
		uint64_t period = cfg->period;
		if (!period)
			/* PMU periods are in events: assume ~2.5 GHz of cycles or
			 * instructions per CPU-second for the mean rate. */
			period = (b == MERGE_EV_CYCLES || b == MERGE_EV_INSTRUCTIONS)
					 ? 2500000000ull / freq
					 : 1000000000ull / freq;
		int rc;
		switch (b) {
		case MERGE_EV_CYCLES:
		case MERGE_EV_INSTRUCTIONS:
		case MERGE_EV_TASK_CLOCK:
			rc = perf_open(b, period, 0);
			if (rc >= 0)
				merge_fd_close(rc);
			break;
		case MERGE_EV_CPU_TIMER: {
			timer_t t;
			struct sigevent sev = { .sigev_notify = SIGEV_NONE };
			rc = faked_absent(b) ? -ENOENT
			     : timer_create(CLOCK_THREAD_CPUTIME_ID, &sev, &t) < 0 ? -errno : 0;
			if (rc == 0)
				timer_delete(t);
			break;
		}
		case MERGE_EV_ITIMER:
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

int upcall_thread_start(struct upcall_thread *t, int backend, uint64_t period, uint64_t seed,
			pid_t target)
{
	memset(t, 0, sizeof(*t));
	t->fd = -1;
	t->period = period;
	t->rng = seed | 1;
	pid_t tid = target ? target : (pid_t)syscall(SYS_gettid);
	/* The first period is uniform in [1, period]: a thread (or process)
	 * that lives for a fraction f of a period is then sampled with
	 * probability f, as it would be mid-run, instead of never. */
	uint64_t first = 1 + xorshift(&t->rng) % period;

	switch (backend) {
	case MERGE_EV_CYCLES:
	case MERGE_EV_INSTRUCTIONS:
	case MERGE_EV_TASK_CLOCK: {
		int fd = perf_open(backend, first, target);
		if (fd < 0)
			return fd;
		/* High, and before F_SETOWN_EX/O_ASYNC: signals carry the fd
		 * number that registered for them. */
		fd = merge_fd_high(fd);
		struct f_owner_ex own = { .type = F_OWNER_TID, .pid = tid };
		if (fcntl(fd, F_SETSIG, UPCALL_SIGNAL) < 0 || fcntl(fd, F_SETOWN_EX, &own) < 0 ||
		    fcntl(fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0) {
			int err = -errno;
			merge_fd_close(fd);
			return err;
		}
		t->fd = fd;
		break;
	}
	case MERGE_EV_CPU_TIMER: {
		struct sigevent sev;
		memset(&sev, 0, sizeof(sev));
		sev.sigev_notify = SIGEV_THREAD_ID;
		sev.sigev_signo = UPCALL_SIGNAL;
		sev.sigev_value.sival_ptr = TIMER_COOKIE;
		sev._sigev_un._tid = tid;
		/* Another thread's CPU clock, as pthread_getcpuclockid makes
		 * it: (~tid << 3) | CPUCLOCK_PERTHREAD | CPUCLOCK_SCHED. */
		clockid_t clk = target ? (clockid_t)((~(unsigned)target << 3) | 6)
				       : CLOCK_THREAD_CPUTIME_ID;
		if (timer_create(clk, &sev, &t->timer) < 0)
			return -errno;
		t->has_timer = 1;
		t->first = first;
		break;
	}
	case MERGE_EV_ITIMER:
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
	case MERGE_EV_CYCLES:
	case MERGE_EV_INSTRUCTIONS:
	case MERGE_EV_TASK_CLOCK:
		return ioctl(t->fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ? -errno : 0;
	case MERGE_EV_CPU_TIMER: {
		struct itimerspec its;
		its.it_value.tv_sec = (time_t)(t->first / 1000000000ull);
		its.it_value.tv_nsec = (long)(t->first % 1000000000ull);
		its.it_interval.tv_sec = (time_t)(t->period / 1000000000ull);
		its.it_interval.tv_nsec = (long)(t->period % 1000000000ull);
		return timer_settime(t->timer, 0, &its, NULL) < 0 ? -errno : 0;
	}
	}
	return 0;
}

void upcall_thread_stop(struct upcall_thread *t)
{
	if (t->fd >= 0) {
		ioctl(t->fd, PERF_EVENT_IOC_DISABLE, 0);
		merge_fd_close(t->fd);
		t->fd = -1;
	}
	if (t->has_timer) {
		timer_delete(t->timer);
		t->has_timer = 0;
	}
	t->backend = 0;
}

int upcall_process_start(int backend, uint64_t period)
{
	if (backend != MERGE_EV_ITIMER)
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
	if (backend != MERGE_EV_ITIMER)
		return;
	struct itimerval v;
	memset(&v, 0, sizeof(v));
	syscall(SYS_setitimer, ITIMER_PROF, &v, NULL);
}

int upcall_classify(const siginfo_t *si, int backend)
{
	switch (backend) {
	case MERGE_EV_CYCLES:
	case MERGE_EV_INSTRUCTIONS:
	case MERGE_EV_TASK_CLOCK:
		/* perf overflow signals come through fasync: POLL_IN, or
		 * POLL_HUP when an event limit is hit. */
		return si->si_code >= POLL_IN && si->si_code <= POLL_HUP ? UPCALL_SIG_FD : UPCALL_SIG_NONE;
	case MERGE_EV_CPU_TIMER:
		return si->si_code == SI_TIMER && si->si_value.sival_ptr == TIMER_COOKIE
			       ? UPCALL_SIG_OURS : UPCALL_SIG_NONE;
	case MERGE_EV_ITIMER:
		return si->si_code == SI_KERNEL ? UPCALL_SIG_OURS : UPCALL_SIG_NONE;
	}
	return UPCALL_SIG_NONE;
}

void upcall_rearm(struct upcall_thread *t)
{
	uint64_t p = jitter(&t->rng, t->period);
	switch (t->backend) {
	case MERGE_EV_CYCLES:
	case MERGE_EV_INSTRUCTIONS:
	case MERGE_EV_TASK_CLOCK:
		ioctl(t->fd, PERF_EVENT_IOC_PERIOD, &p);
		break;
	case MERGE_EV_CPU_TIMER:
		/* CPU timers are checked at the scheduler tick (HZ=250 here),
		 * so jitter below a tick changes nothing, and re-arming from
		 * the handler loses up to a tick per sample (measured: 152 Hz
		 * achieved for 250 asked). The periodic interval keeps the mean
		 * exact; the random first expiry gives each thread its phase. */
		break;
	}
}
