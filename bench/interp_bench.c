/* bench/interp_bench.c — interpreter speed.
 *
 * Prints:
 *  1. interpreted instructions per second of thread CPU time (wall time
 *     beside it) on a long run of a loop (loads, stores, ALU,
 *     compare-and-branch, a call/ret) with a warm decode cache
 *     (target >= 50 M/s);
 *  2. the cost of a 4-instruction run from a signal ucontext: convert the
 *     ucontext (interp_from_ucontext_lazy, as the handler does: vector
 *     registers stay in the XSAVE area until a vector instruction needs
 *     them), run 4 instructions, write it back;
 *     once with a cold decode cache and once warm (targets < 1 us and
 *     < 250 ns), not counting signal delivery. Each case is timed per
 *     run with rdtscp; the median is printed (the mean beside it), because
 *     on a shared VM a few preempted runs dominate a mean. The warm case
 *     is also timed with the eager interp_from_ucontext.
 *
 * Build and run:  bench/interp.sh     (or: make build/libinterp.a, then
 *   gcc -O2 -D_GNU_SOURCE -I. bench/interp_bench.c build/libinterp.a -lZydis)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <x86intrin.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"

void bench_loop(void);
__asm__(
	".text\n .globl bench_loop\n bench_loop:\n"
	"	mov $100000000, %rcx\n"
	"1:	mov (%rbx), %rax\n"
	"	add $3, %rax\n"
	"	mov %rax, 8(%rbx)\n"
	"	lea (%rax,%rcx,2), %rdx\n"
	"	xor %rdx, %rsi\n"
	"	cmp $5, %rdx\n"
	"	jb 2f\n"
	"	call 3f\n"
	"2:	sub $1, %rcx\n"
	"	jnz 1b\n"
	"	ret\n"
	"3:	inc %r8\n"
	"	ret\n"
);

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The thread's CPU time: on a shared machine the long run is rated by
 * it, since wall time also counts the time other jobs held the core. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static ucontext_t g_uc;
static uint8_t g_fp[16384] __attribute__((aligned(64)));

static void grab(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	uint32_t ext;

	g_uc = *uc;
	memcpy(&ext, (uint8_t *)uc->uc_mcontext.fpregs + 468, 4);   /* extended_size */
	if (ext == 0 || ext > sizeof g_fp)
		ext = 512;
	memcpy(g_fp, uc->uc_mcontext.fpregs, ext);
	g_uc.uc_mcontext.fpregs = (void *)g_fp;
	(void)sig; (void)si;
}

int main(int argc, char **argv)
{
	struct interp_thread *th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static uint64_t data[64], stack[4096];
	struct interp_state st;
	struct interp_result r;
	long n = argc > 1 ? atol(argv[1]) : 50000000;
	double t0, t1, c0, c1;

	interp_init();
	fault_handler_install();
	interp_thread_init(th);

	/* 1. long run */
	memset(&st, 0, sizeof st);
	st.rip = (uint64_t)bench_loop;
	st.rflags = 0x202;
	st.gpr[INTERP_RBX] = (uint64_t)data;
	st.gpr[INTERP_RSP] = (uint64_t)&stack[4000];
	interp_run(&st, th, 1000, NULL, &r);          /* warm the cache */
	t0 = now();
	c0 = cpu_now();
	interp_run(&st, th, (int)n, NULL, &r);
	c1 = cpu_now();
	t1 = now();
	printf("long run: %d instructions in %.3f s CPU = %.1f M instructions/s "
	       "(wall %.3f s = %.1f M/s; stop %s)\n",
	       r.executed, c1 - c0, r.executed / (c1 - c0) / 1e6,
	       t1 - t0, r.executed / (t1 - t0) / 1e6, interp_stop_name(r.stop));

	/* 2. 4-instruction runs from a real signal frame */
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = grab;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
	g_uc.uc_mcontext.gregs[REG_RIP] = (greg_t)bench_loop;
	g_uc.uc_mcontext.gregs[REG_RBX] = (greg_t)data;
	g_uc.uc_mcontext.gregs[REG_RSP] = (greg_t)&stack[4000];
	g_uc.uc_mcontext.gregs[REG_EFL] = 0x202;

	enum { reps = 20000 };
	static ucontext_t uc;
	static uint8_t fp[16384] __attribute__((aligned(64)));
	static uint64_t cyc[reps];
	double warm = 0, cold = 0, warm_mean = 0, cold_mean = 0, eager = 0, eager_mean = 0;
	unsigned aux;
	/* TSC rate, to turn cycles into ns */
	t0 = now();
	uint64_t tsc0 = __rdtscp(&aux);
	while (now() - t0 < 0.05)
		;
	double tsc_ghz = (__rdtscp(&aux) - tsc0) / ((now() - t0) * 1e9);

	/* pass 0: cold decode cache, 1: warm, 2: warm with the eager
	 * conversion (vector registers copied in whether used or not) */
	for (int pass = 0; pass < 3; pass++) {
		uint64_t total = 0;
		for (int i = 0; i < reps; i++) {
			uc = g_uc;
			memcpy(fp, g_fp, sizeof fp);
			uc.uc_mcontext.fpregs = (void *)fp;
			if (pass == 0)      /* cold: empty decode cache */
				memset(th->dcache, 0, sizeof th->dcache);
			uint64_t a = __rdtscp(&aux);
			if (pass == 2)
				interp_from_ucontext(&st, &uc);
			else
				interp_from_ucontext_lazy(&st, &uc);
			interp_run(&st, th, 4, NULL, &r);
			interp_to_ucontext(&st, &uc);
			uint64_t b = __rdtscp(&aux);
			total += b - a;
			cyc[i] = b - a;
		}
		double mean = total / (double)reps / tsc_ghz;
		qsort(cyc, reps, sizeof cyc[0], cmp_u64);
		double med = cyc[reps / 2] / tsc_ghz;
		if (pass == 0)
			cold = med, cold_mean = mean;
		else if (pass == 1)
			warm = med, warm_mean = mean;
		else
			eager = med, eager_mean = mean;
	}
	printf("4-instruction run from a ucontext: cold decode cache %.0f ns, warm %.0f ns "
	       "(medians of %d; means %.0f and %.0f ns; TSC %.2f GHz, %d executed, stop %s)\n",
	       cold, warm, (int)reps, cold_mean, warm_mean, tsc_ghz, r.executed,
	       interp_stop_name(r.stop));
	uint64_t bv;
	memcpy(&bv, g_fp + 512, 8);
	printf("warm with interp_from_ucontext (eager vector copy) instead of _lazy: %.0f ns "
	       "(median; mean %.0f ns); frame xstate_bv %#llx\n", eager, eager_mean,
	       (unsigned long long)bv);
	printf("struct interp_thread: %zu bytes\n", interp_thread_size());
	return 0;
}
