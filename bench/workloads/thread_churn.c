/*
 * thread_churn: what creating a thread costs (bench/ab_builds.sh-style
 * comparisons by hand; BENCHMARKS.md "Handler stack"). Creates and joins
 * N threads (argv[1], default 3000) one after the other, each returning
 * at once, and prints the mean wall time of one create+join in us.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void *nothing(void *arg)
{
	return arg;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 3000;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) || pthread_join(t, NULL))
			return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("%.2f\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) / n / 1e3);
	return 0;
}
