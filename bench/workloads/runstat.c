/*
 * runstat: run a command and report what the whole command cost.
 *
 *   runstat OUTFILE CMD [ARGS...]
 *
 * Forks, execs CMD, waits for it with wait4() and appends one line to
 * OUTFILE:
 *
 *   runstat wall=<s> cpu=<user+sys s> user=<s> sys=<s> status=<exit or 128+sig>
 *
 * cpu is the rusage of CMD and every descendant it waited for (a
 * profiler's own process, its post-processing, and the profiled program
 * together); wall is CLOCK_MONOTONIC from fork to reap. The benchmark
 * (bench/sampling.sh) uses it for the "whole command" columns; the cost
 * in the profiled process alone comes from the workload itself (spin.c).
 * CMD's stdout and stderr are left alone. Exits with CMD's status.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: runstat OUTFILE CMD [ARGS...]\n");
		return 2;
	}
	double t0 = now();
	pid_t pid = fork();
	if (pid < 0) {
		perror("runstat: fork");
		return 2;
	}
	if (pid == 0) {
		execvp(argv[2], argv + 2);
		fprintf(stderr, "runstat: cannot run %s: %s\n", argv[2], strerror(errno));
		_exit(127);
	}
	int st = 0;
	struct rusage ru;
	while (wait4(pid, &st, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("runstat: wait4");
			return 2;
		}
	double wall = now() - t0;
	double user = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6;
	double sys = (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
	int code = WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : 1;
	FILE *f = fopen(argv[1], "a");
	if (!f) {
		perror("runstat: OUTFILE");
		return 2;
	}
	fprintf(f, "runstat wall=%.6f cpu=%.6f user=%.6f sys=%.6f status=%d\n", wall, user + sys,
		user, sys, code);
	fclose(f);
	return code;
}
