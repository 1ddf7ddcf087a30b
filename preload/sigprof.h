/*
 * SIGPROF belongs to vprof while a process is profiled, and the program
 * keeps its own view of it. These are the pieces the files that interpose
 * the signal calls share: handler.c (the handler, and the program's
 * disposition through sigaction and signal), masks.c (masks and waits),
 * itimer.c (ITIMER_PROF) and spawn.c (exec and spawn).
 */
#ifndef VPROF_PRELOAD_SIGPROF_H
#define VPROF_PRELOAD_SIGPROF_H

#include "preload/preload.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/time.h>

struct preload_sigprof {
	struct sigaction prog;      /* the program's SIGPROF disposition */
	int installed;              /* our handler is in place */
	volatile int prog_itimer;   /* the program armed ITIMER_PROF itself */
	struct itimerval prog_itv;  /* ... with this (its view) */
	pid_t signalfd_tid;         /* a thread reading SIGPROF through a signalfd, 0 none */
};
extern struct preload_sigprof g_sigprof;

/* The program has a handler of its own in a (not SIG_DFL or SIG_IGN). */
int preload_sigprof_handled(const struct sigaction *a);
/* Reinstall our handler with SA_RESTART as the program's disposition
 * asks (see handler.c). Normal context. */
void preload_sigprof_sync_restart(void);

/* The next definition of a libc function: REAL(name, type) declares
 * real_name, looked up once. */
#define REAL(name, type) \
	static type *real_##name; \
	if (!real_##name) \
		real_##name = (type *)dlsym(RTLD_NEXT, #name)

#endif
