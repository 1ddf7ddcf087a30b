/*
 * bench/unwind_step.c — what value sampling's return address costs in a
 * signal handler: main's way (libgcc's _Unwind_Backtrace from the
 * handler, through the signal frame, to the frame after the interrupted
 * PC: preload/value_sample.c before the cfi unwinder) against one step of
 * preload/unwind.c from the ucontext (preload/value_sample.c now). SIGPROF raised
 * N times per method, interleaved, on an alternate stack as vprof's
 * handler; rdtscp around each; medians and p90 in TSC ticks, and how
 * often both gave the same return address.
 *
 *   cc -O2 -I. -o unwind_step bench/unwind_step.c && ./unwind_step [N]
 */
#include "preload/unwind.c"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unwind.h>
#include <x86intrin.h>

struct walk {
	uint64_t want, ret;
	int found, n;
};

/* main's preload/value_sample.c walk_frame(), with libgcc linked in. */
static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uint64_t ip = _Unwind_GetIP(ctx);
	if (w->found) {
		w->ret = ip;
		return _URC_END_OF_STACK;
	}
	w->found = ip == w->want;
	return ++w->n > 16 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static uint64_t *T[2];
static volatile int it, m;
static volatile uint64_t ret[2];

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static void handler(int s, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	unsigned a;
	uint64_t t0 = __rdtscp(&a);
	if (m == 0) {
		struct walk w = { .want = (uint64_t)uc->uc_mcontext.gregs[REG_RIP] };
		_Unwind_Backtrace(walk_frame, &w);
		ret[0] = w.ret;
	} else {
		struct preload_cfi_cursor c;
		ret[1] = preload_cfi_init_ucontext(&c, uc) == 0 && preload_cfi_step(&c) > 0 ? c.reg[CFI_RIP] : 0;
	}
	T[m][it] = __rdtscp(&a) - t0;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 20000, same = 0;
	preload_cfi_init();
	T[0] = calloc((size_t)n, 8);
	T[1] = calloc((size_t)n, 8);
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };
	sigaltstack(&ss, NULL);
	struct sigaction sa = { .sa_sigaction = handler, .sa_flags = SA_SIGINFO | SA_ONSTACK };
	sigaction(SIGPROF, &sa, NULL);
	for (it = 0; it < n; it++) {
		for (m = 0; m < 2; m++)
			raise(SIGPROF);
		same += ret[0] == ret[1] && ret[0];
	}
	for (int k = 0; k < 2; k++)
		qsort(T[k], (size_t)n, 8, cmp);
	printf("TSC ticks, median / p90: libgcc walk %lu / %lu, cfi step %lu / %lu; same answer %d of %d\n",
	       (unsigned long)T[0][n / 2], (unsigned long)T[0][n * 9 / 10], (unsigned long)T[1][n / 2],
	       (unsigned long)T[1][n * 9 / 10], same, n);
	return 0;
}
