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
 * an interpretation of that stretch would load). WARMRATE_MODE says who
 * reads those nodes, and what is undone after:
 *   here   (default) the arming thread, on its own CPU;
 *   flush  the same, then every line whose read took more than
 *          WARMRATE_DRAM_TICKS (TSC, default 200: vprof calibrate's
 *          cache/DRAM edge here) is flushed (clflushopt): it was in DRAM
 *          before the read, and is again;
 *   other  a helper thread on another CPU reads them while the arming
 *          thread waits, then flushes as `flush` does: the arming CPU's
 *          caches and TLB never see the reads.
 * The program runs on CPU 0 in every mode, the helper on CPU 1. Prints
 *   chase M MiB delta D warm W mode MODE true T p50 B ratio R steps S
 * (R = B / T; S = steps run natively in DELTA at the median rate).
 * Exits 2 on a set-up failure.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <x86intrin.h>
#include "tcpairs.h"

static int g_warm;
static uint64_t *g_node;
static const char *g_mode = "here";
static uint64_t g_dram_ticks = 200;
static uint64_t **g_read;      /* the nodes read, and how long each took */
static uint64_t *g_ticks;
static uint64_t *volatile g_req;
static volatile int g_go, g_done;

/* Follow g_warm nodes from p, timing each read; then flush the lines that
 * came from DRAM, unless the mode is `here`. */
static void read_nodes(uint64_t *p)
{
	unsigned aux;
	for (int i = 0; i < g_warm; i++) {
		uint64_t t0 = __rdtscp(&aux);
		uint64_t *q = (uint64_t *)*(volatile uint64_t *)p;
		g_ticks[i] = __rdtscp(&aux) - t0;
		g_read[i] = p;
		p = q;
	}
	if (strcmp(g_mode, "here") == 0)
		return;
	for (int i = 0; i < g_warm; i++)
		if (g_ticks[i] > g_dram_ticks)
			_mm_clflushopt(g_read[i]);
	_mm_sfence();
}

static void pin(int cpu)
{
	cpu_set_t s;
	CPU_ZERO(&s);
	CPU_SET(cpu, &s);
	sched_setaffinity(0, sizeof(s), &s);
}

static void *helper(void *arg)
{
	(void)arg;
	pin(1);
	for (;;) {
		while (!__atomic_load_n(&g_go, __ATOMIC_ACQUIRE))
			_mm_pause();
		g_go = 0;
		read_nodes(g_req);
		__atomic_store_n(&g_done, 1, __ATOMIC_RELEASE);
	}
	return NULL;
}

/* The arming sample's extra work: the next g_warm nodes from rbx's. */
static void warm(ucontext_t *uc)
{
	uint64_t *p = (uint64_t *)uc->uc_mcontext.gregs[REG_RBX];
	if (strcmp(g_mode, "other") != 0) {
		read_nodes(p);
		return;
	}
	g_req = p;
	g_done = 0;
	__atomic_store_n(&g_go, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&g_done, __ATOMIC_ACQUIRE))
		_mm_pause();
}

/* Follows iters nodes from g_node (or until tcpairs_stop, checked every
 * 2^16); rax counts them, rbx is the node. */
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
			 : "r"(iters), "r"(&tcpairs_stop)
			 : "cc", "memory");
	g_node = p;
	return rax;
}

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t xorshift(void)
{
	g_rng ^= g_rng << 13;
	g_rng ^= g_rng >> 7;
	g_rng ^= g_rng << 17;
	return g_rng;
}

int main(int argc, char **argv)
{
	if (argc != 5 || atol(argv[1]) < 10000 || atoi(argv[2]) < 10 || atoi(argv[3]) < 0 || atol(argv[4]) < 1) {
		fprintf(stderr, "usage: warmrate DELTA_NS(>=10000) SAMPLES(>=10) WARM(>=0) MIB(>=1)\n");
		return 2;
	}
	g_warm = atoi(argv[3]);
	if (getenv("WARMRATE_MODE"))
		g_mode = getenv("WARMRATE_MODE");
	if (getenv("WARMRATE_DRAM_TICKS"))
		g_dram_ticks = strtoull(getenv("WARMRATE_DRAM_TICKS"), NULL, 10);
	if (strcmp(g_mode, "here") && strcmp(g_mode, "flush") && strcmp(g_mode, "other")) {
		fprintf(stderr, "warmrate: WARMRATE_MODE is here, flush or other\n");
		return 2;
	}
	g_read = malloc(((size_t)g_warm + 1) * sizeof(*g_read));
	g_ticks = malloc(((size_t)g_warm + 1) * sizeof(*g_ticks));
	pin(0);
	pthread_t th;
	if (!g_read || !g_ticks || (!strcmp(g_mode, "other") && pthread_create(&th, NULL, helper, NULL))) {
		fprintf(stderr, "warmrate: set-up failed\n");
		return 2;
	}
	size_t mib = (size_t)atol(argv[4]), n = mib * 1024 * 1024 / 64;
	char *buf = mmap(NULL, n * 64, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint32_t *perm = malloc(n * sizeof(*perm));
	if (buf == MAP_FAILED || !perm) {
		fprintf(stderr, "warmrate: no memory for %zu MiB\n", mib);
		return 2;
	}
	/* one random cycle through all nodes */
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
	double t0 = tcpairs_cpu_ns();
	uint64_t it = chase(1000000);
	double truth = (double)it / (tcpairs_cpu_ns() - t0);
	tcpairs_on_arm = warm;
	if (tcpairs_start("warmrate", (uint64_t)atol(argv[1]), atoi(argv[2])))
		return 2;
	while (!tcpairs_stop)
		chase(1ull << 40);
	double p10, p90, p50 = tcpairs_finish(&p10, &p90);
	printf("chase %zu MiB delta %llu warm %d mode %s true %.5f p50 %.5f ratio %.2f steps %.0f\n", mib,
	       (unsigned long long)tcpairs_delta, g_warm, g_mode, truth, p50, p50 / truth,
	       p50 * (double)tcpairs_delta);
	return 0;
}
