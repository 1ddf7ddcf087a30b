/*
 * SIGPROF belongs to vprof while a process is profiled. The program keeps
 * its own view of it: sigaction/signal on SIGPROF are interposed so the
 * program can neither remove our handler nor see it, and the program's
 * disposition is kept here and applied to every SIGPROF that is not one of
 * our samples (its own setitimer, a kill -PROF), exactly as the kernel
 * would have: ignored, default action (terminate), or its handler called
 * with its mask and flags.
 *
 * The dispatcher is async-signal-safe and preserves errno. The interposers
 * run in normal context.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
static sigaction_fn *g_real_sigaction;
static struct sigaction g_prog;          /* the program's SIGPROF disposition */
static int g_installed;

void preload_sample(int sig, siginfo_t *si, void *uc);

int preload_real_sigaction(int sig, const struct sigaction *a, struct sigaction *old)
{
	if (!g_real_sigaction)
		g_real_sigaction = (sigaction_fn *)dlsym(RTLD_NEXT, "sigaction");
	return g_real_sigaction(sig, a, old);
}

static void forward(int sig, siginfo_t *si, void *uc)
{
	struct sigaction a = g_prog;
	sigset_t old;

	if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_IGN)
		return;
	if (!(a.sa_flags & SA_SIGINFO) && a.sa_handler == SIG_DFL) {
		/* SIGPROF's default action is to terminate: do it for real,
		 * so the exit status says "killed by SIGPROF" as it would. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		preload_real_sigaction(sig, &dfl, NULL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		pthread_sigmask(SIG_UNBLOCK, &s, &old);
		return;  /* not reached */
	}
	sigset_t m = a.sa_mask;
	if (a.sa_flags & SA_NODEFER)
		sigdelset(&m, sig);
	pthread_sigmask(SIG_BLOCK, &m, &old);
	if (a.sa_flags & SA_RESETHAND) {
		g_prog.sa_handler = SIG_DFL;
		g_prog.sa_flags &= ~SA_SIGINFO;
	}
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, si, uc);
	else
		a.sa_handler(sig);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct preload_thread *t = &g_thread;
	int ours = g_vprof.backend == MERGE_EV_ITIMER ? si->si_code == SI_KERNEL
						       : (t->armed && upcall_is_ours(si, &t->up));
	if (!ours)
		forward(sig, si, uc);
	else if (g_vprof.cfg.bench_empty)
		upcall_rearm(&t->up);     /* the floor: take the signal, do nothing */
	else if (g_vprof.active && g_vprof.spool.hdr)
		preload_sample(sig, si, uc);
	errno = saved;
}

int preload_signals_install(void)
{
	struct sigaction a;
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = dispatch;
	a.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK;
	sigemptyset(&a.sa_mask);
	if (preload_real_sigaction(UPCALL_SIGNAL, &a, &g_prog) < 0)
		return -errno;
	g_installed = 1;
	return 0;
}

/* ---- interposers ---- */

__attribute__((visibility("default")))
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (sig != UPCALL_SIGNAL || !g_installed)
		return preload_real_sigaction(sig, act, old);
	struct sigaction prev = g_prog;
	if (act)
		g_prog = *act;
	if (old)
		*old = prev;
	return 0;
}

static sighandler_t set_handler(int sig, sighandler_t h, int flags)
{
	struct sigaction a, old;
	memset(&a, 0, sizeof(a));
	a.sa_handler = h;
	a.sa_flags = flags;
	sigemptyset(&a.sa_mask);
	if (sigaction(sig, &a, &old) < 0)
		return SIG_ERR;
	return old.sa_handler;
}

/* glibc's signal() calls its internal __sigaction, not ours: interpose it
 * and its relatives too. BSD semantics, as glibc's signal() has. */
__attribute__((visibility("default")))
sighandler_t signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default")))
sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESTART);
}

__attribute__((visibility("default")))
sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return set_handler(sig, h, SA_RESETHAND | SA_NODEFER);
}
