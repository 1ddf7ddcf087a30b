/*
 * bench/stacks_micro.c — what one unwind costs inside a signal handler,
 * per method, without the timer interrupt around it (bench/stacks.sh
 * measures whole samples, where the interrupt dominates).
 *
 *   stacks_micro D N     recurse D frames, raise SIGPROF N times there;
 *                        the handler unwinds with each method in turn
 *                        (interleaved) and times it with clock_gettime
 *                        (CLOCK_MONOTONIC, vDSO). Prints the median ns
 *                        and the frames found per method.
 *
 * Methods as in preload/stack_sample.c: vprof's own CFI unwinder from the
 * ucontext (cfi, preload/unwind.c compiled in), libunwind's unw_backtrace
 * through the signal frame (unwind), its cursor from the ucontext (cursor), the
 * frame-pointer walk (fp; build with -fno-omit-frame-pointer).
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include "preload/unwind.c"

enum { M_CFI, M_UNWIND, M_CURSOR, M_FP, M_N };
static const char *const names[M_N] = { "cfi", "unwind", "cursor", "fp" };
static uint64_t *ns[M_N];
static int frames[M_N];
static volatile int iter, method;
static uintptr_t top;

static uint64_t now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static int by_backtrace(ucontext_t *uc, uint64_t *pc)
{
	void *buf[80];
	int n = unw_backtrace(buf, 80), i, k = 0;
	for (i = 0; i < n && (uint64_t)buf[i] != (uint64_t)uc->uc_mcontext.gregs[REG_RIP]; i++)
		;
	for (; i < n && k < 64; i++)
		pc[k++] = (uint64_t)buf[i];
	return k;
}

static int by_cursor(ucontext_t *uc, uint64_t *pc)
{
	unw_cursor_t c;
	unw_word_t ip;
	int n = 0;
	if (unw_init_local2(&c, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	do {
		if (unw_get_reg(&c, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		pc[n++] = ip;
	} while (n < 64 && unw_step(&c) > 0);
	return n;
}

static int by_fp(ucontext_t *uc, uint64_t *pc)
{
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	int n = 0;
	pc[n++] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	while (n < 64 && fp >= sp && fp + 16 <= top && !(fp & 7)) {
		uintptr_t next = ((uintptr_t *)fp)[0], ret = ((uintptr_t *)fp)[1];
		if (!ret)
			break;
		pc[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static void handler(int sig, siginfo_t *si, void *ucv)
{
	uint64_t pc[64];
	uint64_t t0 = now();
	int more;
	int n = method == M_CFI ? (int)preload_cfi_backtrace(ucv, pc, 64, &more)
		: method == M_UNWIND ? by_backtrace(ucv, pc) : method == M_CURSOR ? by_cursor(ucv, pc)
										 : by_fp(ucv, pc);
	ns[method][iter] = now() - t0;
	frames[method] = n;
}

static volatile int sink;
__attribute__((noinline)) static void rec(int d, int n)
{
	if (d > 1) {
		rec(d - 1, n);
		sink++;
		return;
	}
	for (iter = 0; iter < n; iter++)
		for (method = 0; method < M_N; method++)
			raise(SIGPROF);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	extern void *__libc_stack_end;
	int d = argc > 1 ? atoi(argv[1]) : 10, n = argc > 2 ? atoi(argv[2]) : 20000;
	struct sigaction a;
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = handler;
	a.sa_flags = SA_SIGINFO;
	sigaction(SIGPROF, &a, NULL);
	top = (uintptr_t)__libc_stack_end;
	preload_cfi_init();
	unw_set_caching_policy(unw_local_addr_space, UNW_CACHE_PER_THREAD);
	for (int m = 0; m < M_N; m++)
		ns[m] = calloc((size_t)n, sizeof(uint64_t));
	rec(d, n);
	for (int m = 0; m < M_N; m++) {
		qsort(ns[m], (size_t)n, sizeof(uint64_t), cmp);
		printf("depth %d %-7s %3d frames  median %8.0f ns  p90 %8.0f ns\n", d, names[m], frames[m],
		       (double)ns[m][n / 2], (double)ns[m][n * 9 / 10]);
	}
	return 0;
}
