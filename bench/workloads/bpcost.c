/*
 * bpcost: what one hit of a debug-register breakpoint costs a thread, as
 * an unprivileged process sets it for itself (perf_event_open with
 * PERF_TYPE_BREAKPOINT, HW_BREAKPOINT_X on its own code, counting only).
 * Evidence for a design question of execution counts and trace-sampled
 * cache simulation (docs/value-sampling.md, "Execution counts"): can a
 * window's native time be measured by letting the program run natively
 * to the window's end and trapping there? Used by bench/bpcost.sh.
 *
 *   bpcost ROUNDS CALLS
 *
 * Each round calls a small function CALLS times with no breakpoint, then
 * CALLS times with a breakpoint on its first instruction, both timed
 * with CLOCK_MONOTONIC, and prints one line:
 *   round N plain_ns_per_call X hit_ns Y hits H
 * where hit_ns is (breakpointed - plain) / CALLS and H the event's count
 * (it must equal CALLS); then each of 1000 hits timed alone, as a window's
 * end would be:
 *   single p10 A p50 B p90 C
 * (ns: the spread a measured window's native time would carry). Exits 2
 * when the kernel refuses the event.
 */
#define _GNU_SOURCE
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static volatile int g_sink;

__attribute__((noinline)) static int target(int x)
{
	__asm__ volatile("");
	return x * 3 + 1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static double calls(long n)
{
	double t0 = now();
	for (long i = 0; i < n; i++)
		g_sink += target((int)i);
	return now() - t0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: bpcost ROUNDS CALLS\n");
		return 2;
	}
	long rounds = atol(argv[1]), n = atol(argv[2]);
	if (rounds < 1 || n < 1) {
		fprintf(stderr, "bpcost: ROUNDS and CALLS must be positive\n");
		return 2;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_BREAKPOINT;
	a.size = sizeof(a);
	a.bp_type = HW_BREAKPOINT_X;
	a.bp_addr = (uint64_t)(uintptr_t)target;
	a.bp_len = sizeof(long);
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd < 0) {
		perror("bpcost: perf_event_open(PERF_TYPE_BREAKPOINT)");
		return 2;
	}
	calls(n);   /* warm */
	for (long r = 1; r <= rounds; r++) {
		double plain = calls(n);
		uint64_t c0 = 0, c1 = 0;
		if (read(fd, &c0, sizeof(c0)) != sizeof(c0) ||
		    syscall(SYS_ioctl, fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
			return 2;
		double bp = calls(n);
		if (syscall(SYS_ioctl, fd, PERF_EVENT_IOC_DISABLE, 0) < 0 || read(fd, &c1, sizeof(c1)) != sizeof(c1))
			return 2;
		printf("round %ld plain_ns_per_call %.2f hit_ns %.0f hits %llu\n", r, plain / (double)n * 1e9,
		       (bp - plain) / (double)n * 1e9, (unsigned long long)(c1 - c0));
	}
	enum { SINGLE = 1000 };
	static double one[SINGLE];
	if (syscall(SYS_ioctl, fd, PERF_EVENT_IOC_ENABLE, 0) < 0)
		return 2;
	for (int i = 0; i < SINGLE; i++) {
		double t0 = now();
		g_sink += target(i);
		one[i] = (now() - t0) * 1e9;
	}
	qsort(one, SINGLE, sizeof(one[0]), cmp);
	printf("single p10 %.0f p50 %.0f p90 %.0f\n", one[SINGLE / 10], one[SINGLE / 2], one[SINGLE * 9 / 10]);
	close(fd);
	return 0;
}
