/*
 * warmrate: how much faster a memory-bound stretch runs natively when the
 * lines it will touch were just read, as a shadow-mode interpretation of
 * the same stretch would read them first. Evidence for a design question
 * of execution counts and cache simulation (docs/value-sampling.md,
 * "Execution counts"): interpret a window without committing it, run it
 * again natively and time that with a task-clock sample (tcrate.c). Used
 * by bench/native_time.sh.
 *
 *   warmrate DELTA_NS SAMPLES WARM MIB
 *
 * A pointer chase over MIB MiB of 64-byte nodes in a random cycle (each
 * step a DRAM miss when MIB is well above the LLC), its step count in rax
 * and its node in rbx. First its true rate unsampled (steps per ns of
 * thread CPU); then sample pairs as in tcrate.c, where the arming sample's
 * handler first follows the next WARM nodes from the interrupted one (what
 * an interpretation of that stretch would load). Prints
 *   chase M MiB delta D warm W true T p50 B ratio R steps S
 * (R = B / T; S = steps run natively in DELTA at the median rate).
 * Exits 2 on a set-up failure.
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
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define MAXS 100000
static int g_fd, g_armed, g_n, g_max, g_warm;
static uint64_t g_delta, g_steps0;
static double g_rate[MAXS];
static volatile int g_stop;
static uint64_t *g_node;

static void on_sample(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uint64_t steps = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
	uint64_t next = 1000000;
	if (g_armed) {
		if (g_n < g_max)
			g_rate[g_n++] = (double)(steps - g_steps0) / (double)g_delta;
		if (g_n >= g_max)
			g_stop = 1;
		g_armed = 0;
	} else {
		g_steps0 = steps;
		g_armed = 1;
		next = g_delta;
		uint64_t *p = (uint64_t *)uc->uc_mcontext.gregs[REG_RBX];
		for (int i = 0; i < g_warm; i++)
			p = (uint64_t *)*p;
		__asm__ volatile("" : : "r"(p));
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

/* Follows iters nodes from g_node (or until g_stop, checked every 2^16). */
static uint64_t chase(uint64_t iters)
{
	uint64_t rax, *p = g_node;
	__asm__ volatile("xor %%eax, %%eax\n"
			 "1:\n"
			 "	mov (%%rbx), %%rbx\n"
			 "	add $1, %%rax\n"
			 "	test $0xffff, %%eax\n"
			 "	jnz 2f\n"
			 "	cmpl $0, (%3)\n"
			 "	jne 3f\n"
			 "2:\n"
			 "	cmp %2, %%rax\n"
			 "	jb 1b\n"
			 "3:\n"
			 : "=&a"(rax), "+b"(p)
			 : "r"(iters), "r"(&g_stop)
			 : "cc", "memory");
	g_node = p;
	return rax;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

int main(int argc, char **argv)
{
	if (argc != 5 || atol(argv[1]) < 10000 || atoi(argv[2]) < 10 || atoi(argv[3]) < 0 || atol(argv[4]) < 1) {
		fprintf(stderr, "usage: warmrate DELTA_NS(>=10000) SAMPLES(>=10) WARM(>=0) MIB(>=1)\n");
		return 2;
	}
	g_delta = (uint64_t)atol(argv[1]);
	g_max = atoi(argv[2]) < MAXS ? atoi(argv[2]) : MAXS;
	g_warm = atoi(argv[3]);
	size_t mib = (size_t)atol(argv[4]), n = mib * 1024 * 1024 / 64;
	char *buf = mmap(NULL, n * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t *perm = malloc(n * sizeof(*perm));
	if (buf == MAP_FAILED || !perm) {
		fprintf(stderr, "warmrate: no memory for %zu MiB\n", mib);
		return 2;
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) {
		size_t j = xorshift() % (i + 1);
		uint32_t t = perm[i];
		perm[i] = perm[j];
		perm[j] = t;
	}
	for (size_t i = 0; i < n; i++)
		*(uint64_t *)(buf + (size_t)perm[i] * 64) = (uint64_t)(uintptr_t)(buf + (size_t)perm[(i + 1) % n] * 64);
	g_node = (uint64_t *)(buf + (size_t)perm[0] * 64);
	free(perm);
	chase(n / 4);   /* pages faulted in, TLB and caches in their steady state */
	double t0 = cpu_ns();
	uint64_t it = chase(1000000);
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
		perror("warmrate: perf_event_open(task-clock)");
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
		perror("warmrate: arming the event");
		return 2;
	}
	while (!g_stop)
		chase(1ull << 40);
	ioctl(g_fd, PERF_EVENT_IOC_DISABLE, 0);
	qsort(g_rate, (size_t)g_n, sizeof(g_rate[0]), cmp);
	double p50 = g_rate[g_n / 2];
	printf("chase %zu MiB delta %llu warm %d true %.5f p50 %.5f ratio %.2f steps %.0f\n", mib,
	       (unsigned long long)g_delta, g_warm, truth, p50, p50 / truth, p50 * (double)g_delta);
	return 0;
}
