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
#include "tcpairs.h"

/* Runs iters iterations (or until tcpairs_stop, checked every 2^20);
 * rax counts them. */
static uint64_t loop(uint64_t iters)
{
	uint64_t rax;
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
			 : "r"(iters), "r"(&tcpairs_stop)
			 : "rcx", "cc", "memory");
	return rax;
}

int main(int argc, char **argv)
{
	if (argc != 3 || atol(argv[1]) < 10000 || atol(argv[2]) < 10) {
		fprintf(stderr, "usage: tcrate DELTA_NS(>=10000) SAMPLES(>=10)\n");
		return 2;
	}
	double t0 = tcpairs_cpu_ns();
	uint64_t it = loop(400000000ull);
	double truth = (double)it / (tcpairs_cpu_ns() - t0);
	if (tcpairs_start("tcrate", (uint64_t)atol(argv[1]), atoi(argv[2])))
		return 2;
	while (!tcpairs_stop)
		loop(1ull << 40);
	double p10, p90, p50 = tcpairs_finish(&p10, &p90);
	printf("delta %llu true %.4f p10 %.4f p50 %.4f p90 %.4f ratio %.3f\n", (unsigned long long)tcpairs_delta,
	       truth, p10, p50, p90, p50 / truth);
	return 0;
}
