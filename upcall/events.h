/*
 * What the upcall driver and the formats share, and nothing else: the
 * sampling events (stored in spools and profiles by number: never
 * renumber) with their names, and the raw close both use on their own
 * descriptors. upcall/ includes this, not merge/'s headers; spool/format.h
 * includes it for the numbers it stores.
 */
#ifndef VPROF_UPCALL_EVENTS_H
#define VPROF_UPCALL_EVENTS_H

#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Events: the thing whose overflow raised the sample. ORDER EVENT: keep
 * merge_event_name() in step. */
enum merge_event {
	MERGE_EV_NONE = 0,
	MERGE_EV_CYCLES = 1,       /* perf hardware cycles */
	MERGE_EV_INSTRUCTIONS = 2, /* perf hardware instructions */
	MERGE_EV_TASK_CLOCK = 3,   /* perf software task-clock (ns of CPU) */
	MERGE_EV_CPU_TIMER = 4,    /* POSIX per-thread CPU timer (SIGPROF) */
	MERGE_EV_ITIMER = 5,       /* setitimer(ITIMER_PROF), process-wide */
	MERGE_EV_MAX = 6,
};

/* The event's name ("task-clock"), "?" if out of range. AS-safe. */
static inline const char *merge_event_name(unsigned ev)
{
	static const char *const names[MERGE_EV_MAX] = {   /* ORDER EVENT */
		[MERGE_EV_NONE] = "none",
		[MERGE_EV_CYCLES] = "cycles",
		[MERGE_EV_INSTRUCTIONS] = "instructions",
		[MERGE_EV_TASK_CLOCK] = "task-clock",
		[MERGE_EV_CPU_TIMER] = "cpu-timer",
		[MERGE_EV_ITIMER] = "itimer",
	};
	return ev < MERGE_EV_MAX ? names[ev] : "?";
}

/* The event named s ("task-clock"), or -1. */
static inline int merge_event_parse(const char *s)
{
	for (unsigned i = 1; i < MERGE_EV_MAX; i++)
		if (strcmp(s, merge_event_name(i)) == 0)
			return (int)i;
	return -1;
}

/* Close with the raw system call, never through libvprof's interposed
 * close() (which refuses our own descriptors to the program). AS-safe. */
static inline void merge_fd_close(int fd)
{
	syscall(SYS_close, fd);
}

#endif
