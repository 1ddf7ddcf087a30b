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
 * upcall_event_name() in step. */
enum upcall_event {
	UPCALL_EV_NONE = 0,
	UPCALL_EV_CYCLES = 1,       /* perf hardware cycles */
	UPCALL_EV_INSTRUCTIONS = 2, /* perf hardware instructions */
	UPCALL_EV_TASK_CLOCK = 3,   /* perf software task-clock (ns of CPU) */
	UPCALL_EV_CPU_TIMER = 4,    /* POSIX per-thread CPU timer (SIGPROF) */
	UPCALL_EV_ITIMER = 5,       /* setitimer(ITIMER_PROF), process-wide */
	UPCALL_EV_MAX = 6,
};

/* The event's name ("task-clock"), "?" if out of range. AS-safe. */
static inline const char *upcall_event_name(unsigned ev)
{
	static const char *const names[UPCALL_EV_MAX] = {   /* ORDER EVENT */
		[UPCALL_EV_NONE] = "none",
		[UPCALL_EV_CYCLES] = "cycles",
		[UPCALL_EV_INSTRUCTIONS] = "instructions",
		[UPCALL_EV_TASK_CLOCK] = "task-clock",
		[UPCALL_EV_CPU_TIMER] = "cpu-timer",
		[UPCALL_EV_ITIMER] = "itimer",
	};
	return ev < UPCALL_EV_MAX ? names[ev] : "?";
}

/* The event named s ("task-clock"), or -1. */
static inline int upcall_event_parse(const char *s)
{
	for (unsigned i = 1; i < UPCALL_EV_MAX; i++)
		if (strcmp(s, upcall_event_name(i)) == 0)
			return (int)i;
	return -1;
}

/* Close with the raw system call, never through libvprof's interposed
 * close() (which refuses our own descriptors to the program). AS-safe. */
static inline void upcall_fd_close(int fd)
{
	syscall(SYS_close, fd);
}

#endif
