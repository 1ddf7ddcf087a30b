/*
 * tcrate: how well a task-clock sample taken DELTA ns of a thread's CPU
 * after it was armed times a native stretch of code. Evidence for a design
 * question of execution counts and trace-sampled cache simulation
 * (docs/value-sampling.md, "Execution counts"): a window interpreted in
 * shadow mode (interp/shadow.h: stores logged, not written) could be run
 * again natively, and a sample DELTA later says how far the native run got
 * (the interrupted state found in the window's trace), which gives the
 * window's native instructions per ns. Used by bench/native_time.sh.
 *
 *   tcrate DELTA_NS SAMPLES
 *
 * The workload is a loop whose iteration count is in rax (one add, two
 * dependent imuls, a compare and a branch). First it runs unsampled for
 * its true rate (iterations per ns of thread CPU). Then with a perf
 * task-clock event (signal per sample): each odd sample arms the next for
 * DELTA ns and notes rax; each even one reads rax again, giving the
 * iterations run natively in the DELTA between them. Prints
 *   delta D true T p10 A p50 B p90 C ratio R
 * (iterations per ns; R = p50 / T). Exits 2 when the event is refused.
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
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAXS 100000
static int g_fd, g_armed, g_n, g_max;
static uint64_t g_delta, g_rax0;
static double g_rate[MAXS];
static volatile int g_stop;   /* set by the handler once g_max pairs are timed */

static void on_sample(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uint64_t rax = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
	uint64_t next = 1000000;   /* 1 ms of CPU to the next arming sample */
	if (g_armed) {
		if (g_n < g_max)
			g_rate[g_n++] = (double)(rax - g_rax0) / (double)g_delta;
		if (g_n >= g_max)
			g_stop = 1;
		g_armed = 0;
	} else {
		g_rax0 = rax;
		g_armed = 1;
		next = g_delta;
	}
	ioctl(g_fd, PERF_EVENT_IOC_PERIOD, &next);
	ioctl(g_fd, PERF_EVENT_IOC_REFRESH, 1);
}

static double cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static uint64_t loop(uint64_t iters, volatile int *stop)
{
	uint64_t rax;
	/* rax counts iterations; the loop also ends when *stop is set (checked
	 * every 2^20 iterations) */
	__asm__ volatile("xor %%eax, %%eax\n"
			 "1:\n"
			 "	add $1, %%rax\n"
			 "	imul $3, %%rcx, %%rcx\n"
			 "	imul $3, %%rcx, %%rcx\n"
			 "	test $0xfffff, %%eax\n"
			 "	jnz 2f\n"
			 "	cmpl $0, (%2)\n"
			 "	jne 3f\n"
			 "2:\n"
			 "	cmp %1, %%rax\n"
			 "	jb 1b\n"
			 "3:\n"
			 : "=&a"(rax)
			 : "r"(iters), "r"(stop)
			 : "rcx", "cc", "memory");
	return rax;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[1]) < 10000 || atol(argv[2]) < 10) {
		fprintf(stderr, "usage: tcrate DELTA_NS(>=10000) SAMPLES(>=10)\n");
		return 2;
	}
	g_delta = (uint64_t)atol(argv[1]);
	g_max = atoi(argv[2]) < MAXS ? atoi(argv[2]) : MAXS;
	double t0 = cpu_ns();
	uint64_t it = loop(400000000ull, &g_stop);
	double truth = (double)it / (cpu_ns() - t0);

	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.size = sizeof(a);
	a.sample_period = 1000000;
	a.disabled = 1;
	a.exclude_kernel = 1;
	g_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (g_fd < 0) {
		perror("tcrate: perf_event_open(task-clock)");
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGIO, &sa, NULL);
	struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	if (fcntl(g_fd, F_SETFL, O_ASYNC) < 0 || fcntl(g_fd, F_SETSIG, SIGIO) < 0 ||
	    fcntl(g_fd, F_SETOWN_EX, &o) < 0 || ioctl(g_fd, PERF_EVENT_IOC_REFRESH, 1) < 0) {
		perror("tcrate: arming the event");
		return 2;
	}
	/* until enough pairs were timed (the handler fills g_rate) */
	while (!g_stop)
		loop(1ull << 40, &g_stop);
	ioctl(g_fd, PERF_EVENT_IOC_DISABLE, 0);
	qsort(g_rate, (size_t)g_n, sizeof(g_rate[0]), cmp);
	double p50 = g_rate[g_n / 2];
	printf("delta %llu true %.4f p10 %.4f p50 %.4f p90 %.4f ratio %.3f\n", (unsigned long long)g_delta, truth,
	       g_rate[g_n / 10], p50, g_rate[g_n * 9 / 10], p50 / truth);
	return 0;
}
