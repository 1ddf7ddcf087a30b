/*
 * trigcost: what one perf task-clock sample costs, by how it is delivered.
 * Evidence for the trigger design in upcall/ (the design question: "a signal per
 * sample, or PCs into the perf ring buffer and a signal only when a drain
 * is due?"). Used by bench/sampling.sh, section 6.
 *
 *   trigcost MODE HZ ITERS
 *
 *   none         no event: the baseline
 *   ring         PERF_SAMPLE_IP|TID records into a mmap'd ring buffer, no
 *                signal (what perf record asks the kernel for)
 *   sig          overflow signal per sample (O_ASYNC, F_SETOWN_EX to the
 *                thread, SIGPROF), empty handler, the kernel reloads the
 *                period by itself
 *   sig-rearm    the same plus ioctl(PERF_EVENT_IOC_PERIOD) in the handler,
 *                as vprof's randomized re-arm does (= vprof's empty-handler
 *                floor on task-clock)
 *   ring-sigK    ring mode plus a signal every K-th sample (K >= 1):
 *                wakeup_events = K with the fd's O_ASYNC signal, empty
 *                handler: the delivery a value-sampling trigger "PCs in the
 *                ring, a signal every K-th sample" would pay
 *                (bench/values.sh, section 5); samples = ring records,
 *                signals printed beside them. Here (kernel 6.x) an event
 *                with O_ASYNC signals at every overflow whatever
 *                wakeup_events says, so this is ring + a signal per sample.
 *   ring+sigK    ring mode at HZ plus a second task-clock event at HZ/K that
 *                signals (empty handler): the other way to get a live
 *                thread every K-th sample
 *
 * Runs ITERS steps of a pure-register loop and prints
 *   trigcost MODE HZ cpu=<s, loop only> samples=<n>
 * with cpu from getrusage(RUSAGE_SELF) around the loop. The event is
 * user-only (exclude_kernel), as perf_event_paranoid=2 requires.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#define RING_PAGES 512

static int g_fd = -1, g_ring_fd = -1, g_rearm;
static uint64_t g_period;
static volatile long g_signals;

static void handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si; (void)uc;
	g_signals++;
	if (g_rearm) {
		uint64_t p = g_period;
		ioctl(g_fd, PERF_EVENT_IOC_PERIOD, &p);
	}
}

static double cpu_s(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + (double)r.ru_utime.tv_usec / 1e6 +
	       (double)r.ru_stime.tv_sec + (double)r.ru_stime.tv_usec / 1e6;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: trigcost none|ring|sig|sig-rearm|ring-sigK HZ ITERS\n");
		return 2;
	}
	const char *mode = argv[1];
	long hz = atol(argv[2]), iters = atol(argv[3]);
	if (hz <= 0 || iters <= 0)
		return 2;
	g_period = 1000000000ull / (uint64_t)hz;
	struct perf_event_mmap_page *rb = NULL;

	if (strcmp(mode, "none")) {
		struct perf_event_attr a;
		memset(&a, 0, sizeof(a));
		a.size = sizeof(a);
		a.type = PERF_TYPE_SOFTWARE;
		a.config = PERF_COUNT_SW_TASK_CLOCK;
		a.sample_period = g_period;
		a.disabled = 1;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		int ring = !strcmp(mode, "ring"), ringsig = 0, second = 0;
		if (!strncmp(mode, "ring+sig", 8)) {
			second = atoi(mode + 8);
			if (second < 1) {
				fprintf(stderr, "trigcost: ring+sigK needs K >= 1\n");
				return 2;
			}
			ring = 1;
		}
		if (!strncmp(mode, "ring-sig", 8)) {
			ringsig = atoi(mode + 8);
			if (ringsig < 1) {
				fprintf(stderr, "trigcost: ring-sigK needs K >= 1\n");
				return 2;
			}
		}
		if (ring) {
			a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
			a.watermark = 1;      /* no wake-ups: nobody reads until the end */
			a.wakeup_watermark = RING_PAGES * 4096 / 2;
		} else if (ringsig) {
			a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID;
			a.wakeup_events = (uint32_t)ringsig;   /* a wake-up, so a signal, per K records */
		} else {
			a.wakeup_events = 1;
		}
		g_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
		if (g_fd < 0) {
			perror("trigcost: perf_event_open");
			return 1;
		}
		if (ring || ringsig) {
			void *m = mmap(NULL, (1 + RING_PAGES) * 4096, PROT_READ | PROT_WRITE, MAP_SHARED,
				       g_fd, 0);
			if (m == MAP_FAILED) {
				perror("trigcost: mmap");
				return 1;
			}
			rb = m;
		}
		if (second) {   /* the signalling event, at HZ/K: it stands in for g_fd below */
			struct perf_event_attr b = a;
			b.sample_type = 0;
			b.watermark = 0;
			b.wakeup_events = 1;
			b.sample_period = g_period * (uint64_t)second;
			g_ring_fd = g_fd;
			g_fd = (int)syscall(SYS_perf_event_open, &b, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
			if (g_fd < 0) {
				perror("trigcost: perf_event_open");
				return 1;
			}
		}
		if (!ring || second) {
			g_rearm = !strcmp(mode, "sig-rearm");
			if (!g_rearm && !ringsig && !second && strcmp(mode, "sig")) {
				fprintf(stderr, "trigcost: unknown mode %s\n", mode);
				return 2;
			}
			struct sigaction sa;
			memset(&sa, 0, sizeof(sa));
			sa.sa_sigaction = handler;
			sa.sa_flags = SA_SIGINFO | SA_RESTART;
			sigaction(SIGPROF, &sa, NULL);
			struct f_owner_ex own = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
			if (fcntl(g_fd, F_SETSIG, SIGPROF) < 0 || fcntl(g_fd, F_SETOWN_EX, &own) < 0 ||
			    fcntl(g_fd, F_SETFL, O_ASYNC | O_NONBLOCK) < 0) {
				perror("trigcost: fcntl");
				return 1;
			}
		}
		if (g_ring_fd >= 0)
			ioctl(g_ring_fd, PERF_EVENT_IOC_ENABLE, 0);
		ioctl(g_fd, PERF_EVENT_IOC_ENABLE, 0);
	}

	double c0 = cpu_s();
	volatile uint64_t x = 1;
	for (long i = 0; i < iters; i++)
		x = x * 6364136223846793005ull + 1442695040888963407ull;
	double c1 = cpu_s();
	if (g_fd >= 0)
		ioctl(g_fd, PERF_EVENT_IOC_DISABLE, 0);
	if (g_ring_fd >= 0)
		ioctl(g_ring_fd, PERF_EVENT_IOC_DISABLE, 0);

	long n = g_signals;
	if (rb) /* records: header 8 + ip 8 + pid/tid 8 bytes, no wrap at these rates */
		n = (long)(__atomic_load_n(&rb->data_head, __ATOMIC_ACQUIRE) / 24);
	printf("trigcost %s %ld cpu=%.6f samples=%ld signals=%ld\n", mode, hz, c1 - c0, n, (long)g_signals);
	return 0;
}
