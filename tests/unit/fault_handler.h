/*
 * For tests and benchmarks of the interpreter outside libvprof.so: a
 * SIGSEGV and SIGBUS handler that lets the interpreter's fault-safe
 * memory routines recover (interp_fault_fixup) and otherwise restores the
 * default action, so that a real fault kills the process as usual. In
 * libvprof.so the handler is preload/faults.c's. Not async-signal-safe
 * to install; the handler itself is.
 */
#ifndef VPROF_TESTS_FAULT_HANDLER_H
#define VPROF_TESTS_FAULT_HANDLER_H

#include "interp/interp.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

static void fault_handler_on_fault(int sig, siginfo_t *si, void *ctx)
{
	struct sigaction sa;

	(void)si;
	if (interp_fault_fixup(ctx))
		return;
	/* Not ours: fall back to the default action; returning re-executes
	 * the faulting instruction, which then kills the process normally. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigaction(sig, &sa, NULL);
}

/* Install it for SIGSEGV and SIGBUS. 0 or negative errno. */
static inline int fault_handler_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = fault_handler_on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSEGV, &sa, NULL) || sigaction(SIGBUS, &sa, NULL))
		return -errno;
	return 0;
}

#endif
