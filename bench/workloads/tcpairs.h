/*
 * tcpairs.h — sample pairs on a thread's task-clock, shared by tcrate.c
 * and warmrate.c (bench/native_time.sh).
 *
 * tcpairs_start() opens a perf task-clock event on the calling thread that
 * signals it (SIGIO) at each overflow. Samples come in pairs: the first,
 * 1 ms of CPU after the last pair, notes the workload's counter (rax, which
 * both workloads keep their step count in), calls tcpairs_on_arm if set
 * and arms the next sample tcpairs_delta ns of CPU later; the second reads
 * the counter again and keeps steps per ns in tcpairs_rate, until
 * tcpairs_max pairs, when it sets tcpairs_stop. tcpairs_report() prints
 * the p10, p50 and p90 of the rates.
 */
#ifndef VPROF_BENCH_TCPAIRS_H
#define VPROF_BENCH_TCPAIRS_H

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define TCPAIRS_MAX 100000
static int tcpairs_fd, tcpairs_armed, tcpairs_n, tcpairs_max;
static uint64_t tcpairs_delta, tcpairs_count0;
static double tcpairs_rate[TCPAIRS_MAX];
static volatile int tcpairs_stop;
static void (*tcpairs_on_arm)(ucontext_t *uc);

static void tcpairs_sample(int sig, siginfo_t *si, void *ucv)
{
	(void)sig;
	(void)si;
	ucontext_t *uc = ucv;
	uint64_t count = (uint64_t)uc->uc_mcontext.gregs[REG_RAX];
	uint64_t next = 1000000;   /* 1 ms of CPU to the next pair */
	if (tcpairs_armed) {
		if (tcpairs_n < tcpairs_max)
			tcpairs_rate[tcpairs_n++] = (double)(count - tcpairs_count0) / (double)tcpairs_delta;
		if (tcpairs_n >= tcpairs_max)
			tcpairs_stop = 1;
		tcpairs_armed = 0;
	} else {
		tcpairs_count0 = count;
		tcpairs_armed = 1;
		next = tcpairs_delta;
		if (tcpairs_on_arm)
			tcpairs_on_arm(uc);
	}
	ioctl(tcpairs_fd, PERF_EVENT_IOC_PERIOD, &next);
	ioctl(tcpairs_fd, PERF_EVENT_IOC_REFRESH, 1);
}

static double tcpairs_cpu_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

/* 0, or 2 with a message naming who when the event cannot be set up. */
static int tcpairs_start(const char *who, uint64_t delta, int pairs)
{
	tcpairs_delta = delta;
	tcpairs_max = pairs < TCPAIRS_MAX ? pairs : TCPAIRS_MAX;
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_TASK_CLOCK;
	a.size = sizeof(a);
	a.sample_period = 1000000;
	a.disabled = 1;
	a.exclude_kernel = 1;
	tcpairs_fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (tcpairs_fd < 0) {
		fprintf(stderr, "%s: perf_event_open(task-clock): %s\n", who, strerror(errno));
		return 2;
	}
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = tcpairs_sample;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigaction(SIGIO, &sa, NULL);
	struct f_owner_ex o = { F_OWNER_TID, (pid_t)syscall(SYS_gettid) };
	if (fcntl(tcpairs_fd, F_SETFL, O_ASYNC) < 0 || fcntl(tcpairs_fd, F_SETSIG, SIGIO) < 0 ||
	    fcntl(tcpairs_fd, F_SETOWN_EX, &o) < 0 || ioctl(tcpairs_fd, PERF_EVENT_IOC_REFRESH, 1) < 0) {
		fprintf(stderr, "%s: arming the event: %s\n", who, strerror(errno));
		return 2;
	}
	return 0;
}

static int tcpairs_cmp(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* Stops the event and sorts the rates; returns their median. */
static double tcpairs_finish(double *p10, double *p90)
{
	ioctl(tcpairs_fd, PERF_EVENT_IOC_DISABLE, 0);
	qsort(tcpairs_rate, (size_t)tcpairs_n, sizeof(tcpairs_rate[0]), tcpairs_cmp);
	*p10 = tcpairs_rate[tcpairs_n / 10];
	*p90 = tcpairs_rate[tcpairs_n * 9 / 10];
	return tcpairs_rate[tcpairs_n / 2];
}

#endif
