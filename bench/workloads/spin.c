/*
 * spin: the CPU-bound workload of the sampling-overhead benchmark
 * (bench/sampling.sh). Pure user-mode CPU, no system calls in the loop,
 * a few functions of different weights so that a profile has something to
 * show (hash ~50%, sieve ~30%, matmul ~20% of the work).
 *
 *   spin [-n UNITS] [-t THREADS] [-a]
 *
 * UNITS of work (default 100; one unit is ~10 ms of CPU on a Zen 5 core)
 * are split evenly across THREADS threads (default 1). At exit it prints
 * one line on stdout:
 *
 *   spin cpu=<user+sys s of this process> user=<s> sys=<s> hwm_kb=<VmHWM>
 *        rss_kb=<VmRSS> check=<result>
 *
 * cpu is getrusage(RUSAGE_SELF), i.e. the profiled process only (all its
 * threads, the sample handler's time included, nothing of a profiler's
 * other processes). hwm/rss are read from /proc/self/status at the end of
 * main, after every thread has run. The check value depends only on UNITS,
 * so a profiler that changed the computation would show.
 *
 * -a (one thread): under vprof with VPROF_BENCH_ALT=N, whose handler
 * takes a thread's samples in turns of N, handled then empty, first a line
 * for each unit that ran within one turn:
 *
 *   spinalt TURN CPU_NS SAMPLES
 *
 * TURN 0 handled, 1 empty (vprof's vprof_bench_alt), the unit's thread CPU
 * time and the samples it took (bench/values.sh, section 1c).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static volatile uint64_t g_sink;

__attribute__((noinline)) static uint64_t hash_work(uint64_t seed, int n)
{
	uint64_t h = seed ^ 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < n; i++) {
		h ^= h >> 33;
		h *= 0xff51afd7ed558ccdull;
		h ^= h >> 29;
		h += (uint64_t)i;
	}
	return h;
}

__attribute__((noinline)) static uint64_t sieve_work(int n)
{
	static __thread unsigned char flags[1 << 16];
	uint64_t count = 0;
	if (n > (int)sizeof(flags))
		n = (int)sizeof(flags);
	memset(flags, 1, (size_t)n);
	for (int i = 2; i < n; i++) {
		if (!flags[i])
			continue;
		count += (uint64_t)i;
		for (int j = i + i; j < n; j += i)
			flags[j] = 0;
	}
	return count;
}

#define M 48
__attribute__((noinline)) static uint64_t matmul_work(uint64_t seed)
{
	static __thread double a[M][M], b[M][M], c[M][M];
	for (int i = 0; i < M; i++)
		for (int j = 0; j < M; j++) {
			a[i][j] = (double)((seed + (uint64_t)(i * M + j)) % 7);
			b[i][j] = (double)((seed + (uint64_t)(j * M + i)) % 5);
		}
	for (int i = 0; i < M; i++)
		for (int j = 0; j < M; j++) {
			double s = 0;
			for (int k = 0; k < M; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
	return (uint64_t)c[seed % M][(seed / M) % M];
}

/* One unit: ~10 ms. Weights tuned so hash > sieve > matmul. */
static uint64_t unit(uint64_t u)
{
	uint64_t r = 0;
	r += hash_work(u, 4000000);
	for (int k = 0; k < 8; k++)
		r += sieve_work(60000);
	for (int k = 0; k < 8; k++)
		r += matmul_work(u * 8 + (uint64_t)k);
	return r;
}

struct job {
	long first, count;
	uint64_t result;
};

static void *run(void *p)
{
	struct job *j = p;
	uint64_t r = 0;
	for (long u = j->first; u < j->first + j->count; u++)
		r += unit((uint64_t)u);
	j->result = r;
	return NULL;
}

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* -a: the units one at a time, each timed, with vprof's turn around it. */
static uint64_t run_alt(long units)
{
	volatile uint64_t *alt = dlsym(RTLD_DEFAULT, "vprof_bench_alt");
	uint64_t r = 0;
	if (!alt) {
		fprintf(stderr, "spin -a: not under vprof (no vprof_bench_alt)\n");
		exit(2);
	}
	for (long u = 0; u < units; u++) {
		uint64_t t0 = alt[0], a0 = alt[1], b0 = alt[2], c0 = thread_ns();
		r += unit((uint64_t)u);
		uint64_t c1 = thread_ns(), t1 = alt[0], a1 = alt[1], b1 = alt[2];
		if (t0 == t1 && (t0 ? a1 == a0 : b1 == b0))
			printf("spinalt %llu %llu %llu\n", (unsigned long long)t0, (unsigned long long)(c1 - c0),
			       (unsigned long long)(t0 ? b1 - b0 : a1 - a0));
	}
	return r;
}

static long status_kb(const char *key)
{
	char line[256];
	long v = -1;
	size_t kl = strlen(key);
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	long units = 100;
	int threads = 1, c, alt = 0;
	while ((c = getopt(argc, argv, "n:t:a")) != -1) {
		switch (c) {
		case 'n': units = atol(optarg); break;
		case 't': threads = atoi(optarg); break;
		case 'a': alt = 1; break;
		default:
			fprintf(stderr, "usage: spin [-n UNITS] [-t THREADS] [-a]\n");
			return 2;
		}
	}
	if (threads < 1 || threads > 256 || units < 0)
		return 2;
	if (alt && threads != 1) {
		fprintf(stderr, "spin: -a times one thread's units: not with -t %d\n", threads);
		return 2;
	}
	struct job *jobs = calloc((size_t)threads, sizeof(*jobs));
	pthread_t *tids = calloc((size_t)threads, sizeof(*tids));
	long per = units / threads, extra = units % threads, first = 0;
	for (int i = 0; i < threads; i++) {
		jobs[i].first = first;
		jobs[i].count = per + (i < extra);
		first += jobs[i].count;
	}
	if (alt)
		jobs[0].result = run_alt(units);
	else if (threads == 1)
		run(&jobs[0]);
	else {
		for (int i = 0; i < threads; i++)
			pthread_create(&tids[i], NULL, run, &jobs[i]);
		for (int i = 0; i < threads; i++)
			pthread_join(tids[i], NULL);
	}
	uint64_t check = 0;
	for (int i = 0; i < threads; i++)
		check += jobs[i].result;
	g_sink = check;

	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	printf("spin cpu=%.6f user=%.6f sys=%.6f hwm_kb=%ld rss_kb=%ld check=%016llx\n", user + sys,
	       user, sys, status_kb("VmHWM"), status_kb("VmRSS"), (unsigned long long)check);
	free(jobs);
	free(tids);
	return 0;
}
