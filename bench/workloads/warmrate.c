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
#include <sys/mman.h>
#include "tcpairs.h"

static int g_warm;
static uint64_t *g_node;

/* The arming sample's extra work: the next g_warm nodes from rbx's. */
static void warm(ucontext_t *uc)
{
	uint64_t *p = (uint64_t *)uc->uc_mcontext.gregs[REG_RBX];
	for (int i = 0; i < g_warm; i++)
		p = (uint64_t *)*p;
	__asm__ volatile("" : : "r"(p));
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
	printf("chase %zu MiB delta %llu warm %d true %.5f p50 %.5f ratio %.2f steps %.0f\n", mib,
	       (unsigned long long)tcpairs_delta, g_warm, truth, p50, p50 / truth, p50 * (double)tcpairs_delta);
	return 0;
}
