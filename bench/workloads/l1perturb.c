/* How much of L1 does an interruption disturb? (the value-sampling
 * paper's Table 1: "fraction of L1 blocks perturbed by the profiler").
 *
 * A 32 KiB buffer (512 lines, inside this CPU's 48 KiB L1D) is walked as
 * one dependent random cycle, in chunks of 32 loads with the TSC read
 * between chunks. A chunk that takes far longer than usual was
 * interrupted (a timer tick, a sample and whatever handler ran); the
 * next whole walk of the 512 lines is then timed, and compared with
 *   quiet: the walk's time when nothing happened (median), and
 *   evicted: its time after the buffer was pushed out of L1 on purpose
 *            (a 256 KiB sweep: into L2, not out of it),
 * so (after - quiet) / (evicted - quiet) is the fraction of the 512
 * lines the interruption displaced (a TLB refill counts in it too). The
 * mean over the interruptions in which the thread kept its CPU (no
 * context switch: getrusage's counts unchanged) is printed, with their
 * number and rate, and apart the same for those with a switch (another
 * process ran: everything is displaced).
 *
 *   l1perturb SECONDS */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <x86intrin.h>

#define LINES 512
#define CHUNK 32
static void *g_buf[LINES * 8] __attribute__((aligned(64)));   /* 32 KiB */
static char g_big[256 << 10] __attribute__((aligned(64)));

static void **walk(void **p, int n)
{
	while (n--)
		p = (void **)*p;
	return p;
}

static uint64_t timed_walk(void ***pp)
{
	unsigned aux;
	uint64_t t0 = __rdtscp(&aux);
	*pp = walk(*pp, LINES);
	return __rdtscp(&aux) - t0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static uint64_t median_walk(void ***pp, int evict)
{
	uint64_t t[301];
	for (int i = 0; i < 301; i++) {
		if (evict)
			for (size_t j = 0; j < sizeof(g_big); j += 64)
				((volatile char *)g_big)[j]++;
		else
			*pp = walk(*pp, LINES);
		t[i] = timed_walk(pp);
	}
	qsort(t, 301, sizeof(t[0]), cmp_u64);
	return t[150];
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 2;
	int perm[LINES];
	uint64_t r = 0x2545f4914f6cdd1dull;
	for (int i = 0; i < LINES; i++)
		perm[i] = i;
	for (int i = LINES - 1; i > 0; i--) {                /* Sattolo */
		r ^= r << 13, r ^= r >> 7, r ^= r << 17;
		int j = (int)(r % (uint64_t)i), t = perm[i];
		perm[i] = perm[j], perm[j] = t;
	}
	for (int i = 0; i < LINES; i++)
		g_buf[perm[i] * 8] = &g_buf[perm[(i + 1) % LINES] * 8];
	void **p = &g_buf[0];
	uint64_t quiet = median_walk(&p, 0), evicted = median_walk(&p, 1);
	uint64_t chunk_q;
	{
		uint64_t t[301];
		unsigned aux;
		for (int i = 0; i < 301; i++) {
			uint64_t t0 = __rdtscp(&aux);
			p = walk(p, CHUNK);
			t[i] = __rdtscp(&aux) - t0;
		}
		qsort(t, 301, sizeof(t[0]), cmp_u64);
		chunk_q = t[150];
	}
	uint64_t gap = chunk_q * 20 + 3000;     /* ~1 us at a few GHz, well above noise */
	struct timespec ts0, ts;
	clock_gettime(CLOCK_MONOTONIC, &ts0);
	double sum = 0, sum_sw = 0;
	long events = 0, switched = 0;
	unsigned aux;
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	long csw = ru.ru_nvcsw + ru.ru_nivcsw;
	for (long it = 0;; it++) {
		uint64_t t0 = __rdtscp(&aux);
		p = walk(p, CHUNK);
		if (__rdtscp(&aux) - t0 > gap) {
			uint64_t t = timed_walk(&p);
			double f = ((double)t - (double)quiet) / ((double)evicted - (double)quiet);
			f = f < 0 ? 0 : f > 1.5 ? 1.5 : f;
			getrusage(RUSAGE_THREAD, &ru);
			if (ru.ru_nvcsw + ru.ru_nivcsw != csw) {
				csw = ru.ru_nvcsw + ru.ru_nivcsw;
				sum_sw += f;
				switched++;
			} else {
				sum += f;
				events++;
			}
		}
		if ((it & 4095) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			if ((double)(ts.tv_sec - ts0.tv_sec) + (double)(ts.tv_nsec - ts0.tv_nsec) * 1e-9 >= secs)
				break;
		}
	}
	printf("events %ld rate %.0f/s perturbed %.4f switched %ld perturbed %.4f quiet %llu evicted %llu\n", events,
	       (double)events / secs, events ? sum / (double)events : 0.0, switched,
	       switched ? sum_sw / (double)switched : 0.0, (unsigned long long)quiet, (unsigned long long)evicted);
	return p == NULL;
}
