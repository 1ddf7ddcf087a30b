/*
 * SIGSEGV, SIGBUS (and, for co-simulation, SIGTRAP) while vprof
 * interprets: the interpreter's fault-safe probes fault on purpose, so in
 * the interpreting modes (VPROF_VERIFY, VPROF_VALUES) our handler holds
 * these signals the way handler.c holds SIGPROF. A fault inside a probe is
 * fixed up (interp_fault_fixup) and the probe returns an error; one in
 * a customization module's callback abandons the call and disables the
 * module (module.c, preload_module_fault); every other one goes to the program's disposition exactly as if vprof were
 * not there: its handler with its mask and flags, the default action
 * (a fault re-executes and takes it for real, core dump included), or
 * ignored. The program's sigaction calls for these signals are kept here
 * (the interposer in handler.c routes them) and it reads back its own.
 *
 * The handlers are async-signal-safe and preserve errno.
 */
#include "preload/preload.h"
#include "interp/interp.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The program's dispositions for the signals we hold. */
static struct sigaction g_prog_segv, g_prog_bus, g_prog_trap;
static int g_held_trap, g_installed;
static preload_fault_hook *g_hook;
static void (*g_on_trap)(int, siginfo_t *, void *);

static struct sigaction *prog_of(int sig)
{
	if (!g_installed)
		return NULL;
	return sig == SIGSEGV ? &g_prog_segv : sig == SIGBUS ? &g_prog_bus
	       : sig == SIGTRAP && g_held_trap ? &g_prog_trap : NULL;
}

void preload_faults_forward(int sig, siginfo_t *si, ucontext_t *uc)
{
	struct sigaction *p = prog_of(sig);
	/* A fault from the kernel re-executes and takes a default action
	 * at the same instruction; a SIGTRAP or a sent signal is raised. */
	if (p)
		preload_forward(sig, p, si, uc, si->si_code > 0 && sig != SIGTRAP, NULL);
}

static void on_fault(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved = errno;

	if (!interp_fault_fixup(uc)) {
		/* A customization module that faulted: does not return. */
		preload_module_fault(sig, si, uc);
		if (g_hook)
			g_hook(sig, si, uc);
		preload_faults_forward(sig, si, uc);
	}
	errno = saved;
}

void preload_faults_unblock(const ucontext_t *uc)
{
	/* liblzma's and other libraries' worker threads block every
	 * signal; the kernel forces a blocked fault's default action. */
	if (sigismember(&uc->uc_sigmask, SIGSEGV) || sigismember(&uc->uc_sigmask, SIGBUS)) {
		unsigned long m = 1ul << (SIGSEGV - 1) | 1ul << (SIGBUS - 1);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &m, NULL, sizeof(long));
	}
}

int preload_faults_init(preload_fault_hook *hook, void (*on_trap)(int, siginfo_t *, void *))
{
	struct sigaction a;

	if (g_installed)
		return 0;
	if (preload_real_sigaction(SIGSEGV, NULL, &g_prog_segv) < 0 ||
	    preload_real_sigaction(SIGBUS, NULL, &g_prog_bus) < 0 ||
	    (on_trap && preload_real_sigaction(SIGTRAP, NULL, &g_prog_trap) < 0))
		return -errno;
	g_hook = hook;
	g_on_trap = on_trap;
	memset(&a, 0, sizeof a);
	sigemptyset(&a.sa_mask);
	a.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
	a.sa_sigaction = on_fault;
	if (preload_real_sigaction(SIGSEGV, &a, NULL) < 0 ||
	    preload_real_sigaction(SIGBUS, &a, NULL) < 0)
		return -errno;
	if (on_trap) {
		a.sa_sigaction = on_trap;
		if (preload_real_sigaction(SIGTRAP, &a, NULL) < 0)
			return -errno;
		g_held_trap = 1;
	}
	g_installed = 1;
	return 0;
}

int preload_faults_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction *p = prog_of(sig);
	struct sigaction prev;

	if (!p)
		return preload_real_sigaction(sig, act, old);
	prev = *p;
	if (act)
		*p = *act;
	if (old)
		*old = prev;
	return 0;
}
