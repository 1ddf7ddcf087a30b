/*
 * valcost: vprof's own time per value sample, timed with rdtscp around the
 * handler's value-sampling call (bench/values.sh, section 1b).
 *
 * Linked with vprof's library objects (build/pic/{upcall,preload,spool}
 * and build/libinterp.a) into one executable, so that vprof's constructor
 * sets the process up exactly as under LD_PRELOAD (VPROF_VALUES=on,
 * VPROF_DB, VPROF_INTERP_LEN, VPROF_INTERP_EVERY=1 from the environment;
 * its own sampling trigger is set to a long period by bench/values.sh so
 * it stays out of the way). A per-thread CPU timer sends this thread
 * SIGUSR2 at HZ while it runs a CPU loop like spin's; the handler, on
 * vprof's alternate stack, calls preload_values_sample(uc) — what vprof's
 * dispatcher calls after recording the PC — between two rdtscp, or, every
 * other signal, nothing between them (the timing's own cost). So the
 * difference of the medians is what a value sample costs vprof on a real
 * interrupted context: ucontext conversion, the interpretation, the
 * observer's hotlist updates, the return-address walk and the write-back.
 * Signal delivery is not included (the same for an empty handler).
 *
 * How cold the caches and TLB are when a signal comes is the host's as
 * much as vprof's (the same build reads 2 us in one run at 250 Hz and
 * 15 us in the next), so the empty turns also time a probe: 32 loads,
 * each depending on the last, each on a page of a 64 MiB buffer the
 * program does not otherwise touch (probe_ns, its median): what 32 cold
 * lines on 32 cold pages cost at that moment.
 *
 *   valcost HZ SECONDS
 *
 * Build: this file with -DVALCOST_WORK -shared -fPIC as libvcwork.so (the
 * loop), and without it, linked with vprof's objects and libvcwork.so.
 *
 * prints: valcost n=N tsc_mhz=F empty_ns=med with_ns=med p90_ns=p90
 *         mean_ns=mean cost_ns=med-empty probe_ns=med
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <x86intrin.h>

#ifndef VALCOST_WORK
void preload_values_sample(ucontext_t *uc, uint32_t weight);

#define MAXN 200000
static uint64_t g_with[MAXN], g_empty[MAXN], g_probe[MAXN];
static volatile int g_nw, g_ne;
static volatile unsigned g_flip;
#define PROBE_BYTES (64ul << 20)
static uint8_t *g_pbuf;
static uint64_t g_pat;

/* 32 dependent loads, each on a page the last 32 probes did not touch. */
static uint64_t probe(void)
{
	uint64_t s = 0;
	for (int i = 0; i < 32; i++) {
		g_pat = (g_pat + 4096 * 37 + 64 * 5 + (s & 1)) % PROBE_BYTES;
		s += g_pbuf[g_pat];
	}
	return s;
}

static void on_sig(int sig, siginfo_t *si, void *ctx)
{
	unsigned aux;
	(void)sig; (void)si;
	if (g_flip++ & 1) {
		uint64_t t0 = __rdtscp(&aux);
		preload_values_sample(ctx, 1);
		uint64_t t1 = __rdtscp(&aux);
		if (g_nw < MAXN) g_with[g_nw++] = t1 - t0;
	} else {
		uint64_t t0 = __rdtscp(&aux);
		__asm__ volatile("" ::: "memory");
		uint64_t t1 = __rdtscp(&aux);
		if (g_ne < MAXN) g_empty[g_ne++] = t1 - t0;
		if (g_pbuf) {
			t0 = __rdtscp(&aux);
			uint64_t s = probe();
			__asm__ volatile("" : : "r"(s));
			t1 = __rdtscp(&aux);
			if (g_ne <= MAXN) g_probe[g_ne - 1] = t1 - t0;
		}
	}
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static volatile uint64_t g_sink;
#endif

#ifdef VALCOST_WORK
/* Built separately as a shared object: value sampling stops at the text
 * of the executable that holds vprof's code (here, this one), so the
 * program's loop must live elsewhere, as it does under LD_PRELOAD. */
uint64_t valcost_work(uint64_t h, int n)   /* hash and table work, like spin's */
{
	static uint32_t tab[4096];
	for (int i = 0; i < n; i++) {
		h ^= h >> 33;
		h *= 0xff51afd7ed558ccdull;
		tab[h & 4095] += (uint32_t)i;
		h += tab[(h >> 20) & 4095];
	}
	return h;
}
#else
uint64_t valcost_work(uint64_t h, int n);
#endif

#ifndef VALCOST_WORK
int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: valcost HZ SECONDS\n");
		return 2;
	}
	long hz = atol(argv[1]);
	double secs = atof(argv[2]);
	unsigned aux;

	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigaction(SIGUSR2, &sa, NULL);
	struct sigevent sev;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = SIGUSR2;
	sev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t tm;
	/* The thread's CPU clock is tick-bound (~250 Hz here); VALCOST_MONO=1
	 * uses a high-resolution wall clock instead, for higher rates. */
	clockid_t clk = getenv("VALCOST_MONO") ? CLOCK_MONOTONIC : CLOCK_THREAD_CPUTIME_ID;
	if (timer_create(clk, &sev, &tm) < 0) {
		perror("valcost: timer_create");
		return 1;
	}
	/* The probe's buffer, every page of it made before the timing. */
	uint8_t *pb = malloc(PROBE_BYTES);
	if (pb) {
		memset(pb, 1, PROBE_BYTES);
		g_pbuf = pb;
	}
	struct itimerspec its = { { 0, 1000000000L / hz }, { 0, 1000000000L / hz } };
	timer_settime(tm, 0, &its, NULL);

	double w0 = now();
	uint64_t c0 = __rdtscp(&aux);
	uint64_t h = 1;
	while (now() - w0 < secs)
		h = valcost_work(h, 20000);
	g_sink = h;
	uint64_t c1 = __rdtscp(&aux);
	double w1 = now();
	struct itimerspec off = { { 0, 0 }, { 0, 0 } };
	timer_settime(tm, 0, &off, NULL);

	double mhz = (double)(c1 - c0) / (w1 - w0) / 1e6;
	int nw = g_nw, ne = g_ne;
	if (nw < 10 || ne < 10) {
		fprintf(stderr, "valcost: only %d/%d signals\n", nw, ne);
		return 1;
	}
	qsort(g_with, (size_t)nw, sizeof g_with[0], cmp);
	qsort(g_empty, (size_t)ne, sizeof g_empty[0], cmp);
	qsort(g_probe, (size_t)ne, sizeof g_probe[0], cmp);
	double sum = 0;
	for (int i = 0; i < nw; i++)
		sum += (double)g_with[i];
	double tons = 1e3 / mhz;
	printf("valcost n=%d tsc_mhz=%.0f empty_ns=%.0f with_ns=%.0f p90_ns=%.0f mean_ns=%.0f cost_ns=%.0f "
	       "probe_ns=%.0f\n",
	       nw, mhz, g_empty[ne / 2] * tons, g_with[nw / 2] * tons, g_with[nw * 9 / 10] * tons,
	       sum / nw * tons, (double)(g_with[nw / 2] - g_empty[ne / 2]) * tons, g_probe[ne / 2] * tons);
	return 0;
}
#endif
