/*
 * bench/workloads/cowcost.c — what a write to a page costs a process
 * that has just forked (bench/fixed_time.sh).
 *
 *   cowcost [PAGES]
 *
 * Writes one byte in each of PAGES (default 2000) pages, timed with the
 * thread's CPU clock: once plainly, once while a forked child still
 * shares the pages (each write copies its page), and once after a child
 * that shared them has exited (each write takes a fault that reuses the
 * page). Prints ns a page for each, median of 5 rounds.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static double touch(volatile char *a, size_t np)
{
	double t0 = now();
	for (size_t i = 0; i < np; i++)
		a[i * 4096]++;
	return (now() - t0) / (double)np;
}

static int cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

int main(int argc, char **argv)
{
	size_t np = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000;
	char *a = malloc(np * 4096 + 4096);
	if (!a)
		return 1;
	memset(a, 1, np * 4096 + 4096);
	double r[3][5];
	for (int k = 0; k < 5; k++) {
		r[0][k] = touch(a, np);
		pid_t p = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
		if (p == 0) {
			usleep(300000);
			_exit(0);
		}
		r[1][k] = touch(a, np);
		waitpid(p, NULL, __WCLONE);
		p = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
		if (p == 0)
			_exit(0);
		waitpid(p, NULL, __WCLONE);
		r[2][k] = touch(a, np);
	}
	for (int i = 0; i < 3; i++)
		qsort(r[i], 5, sizeof(double), cmp);
	printf("a write to a page: plain %.0f ns, copy-on-write copy %.0f ns, after the child exited %.0f ns\n",
	       r[0][2], r[1][2], r[2][2]);
	printf("cow_copy_ns %.0f\n", r[1][2]);
	return 0;
}
