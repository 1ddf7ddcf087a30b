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
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
static sigaction_fn *g_real_sigaction;
static struct sigaction g_prog;          /* the program's SIGPROF disposition */
static int g_installed;

void preload_sample(int sig, siginfo_t *si, void *uc);
static void sync_restart(void);

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
	else if (g_vprof.active && g_vprof.spool.hdr) {
		preload_sample(sig, si, uc);
		if (g_vprof.cfg.verify && !t->busy)
			preload_verify_sample(sig, si, uc);
	}
	errno = saved;
}

static int has_handler(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

static int install(int restart)
{
	struct sigaction a;
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = dispatch;
	a.sa_flags = SA_SIGINFO | SA_ONSTACK | (restart ? SA_RESTART : 0);
	sigemptyset(&a.sa_mask);
	return preload_real_sigaction(UPCALL_SIGNAL, &a, NULL) < 0 ? -errno : 0;
}

/* Our handler restarts interrupted system calls (SA_RESTART), so samples
 * never make a program see EINTR. But a program with its own SIGPROF
 * handler installed without SA_RESTART expects its SIGPROFs to interrupt
 * slow system calls: while it has one, our handler takes its flag. (Its
 * code must cope with EINTR at any SIGPROF already; ours add no new kind.) */
static void sync_restart(void)
{
	install(!has_handler(&g_prog) || (g_prog.sa_flags & SA_RESTART));
}

int preload_signals_install(void)
{
	if (preload_real_sigaction(UPCALL_SIGNAL, NULL, &g_prog) < 0)
		return -errno;
	int rc = install(!has_handler(&g_prog) || (g_prog.sa_flags & SA_RESTART));
	if (rc == 0)
		g_installed = 1;
	return rc;
}

/* ---- exec ----
 * At exec the kernel resets handled signals to SIG_DFL but keeps ignored
 * ones ignored. SIGPROF is handled by us, so a program that ignores it
 * would hand its exec'd child a SIGPROF at default (terminate) instead of
 * ignored. Just before exec, the real disposition becomes the program's
 * SIG_IGN (and a process-wide itimer is stopped: it would survive exec);
 * if exec fails, both come back. glibc's exec functions call its internal
 * execve, so each is interposed. posix_spawn is not: its child resets our
 * handler to SIG_DFL, which differs only for a program ignoring SIGPROF. */
static void before_exec(void)
{
	if (!g_installed)
		return;
	upcall_process_stop(g_vprof.backend);
	if (!has_handler(&g_prog) && g_prog.sa_handler == SIG_IGN) {
		struct sigaction ign;
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		preload_real_sigaction(UPCALL_SIGNAL, &ign, NULL);
	}
}

static void after_failed_exec(void)
{
	int saved = errno;
	if (g_installed) {
		sync_restart();
		if (g_vprof.active)
			upcall_process_start(g_vprof.backend, g_vprof.period);
	}
	errno = saved;
}

#define REAL(name, type) \
	static type *real_##name; \
	if (!real_##name) \
		real_##name = (type *)dlsym(RTLD_NEXT, #name)

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execv_fn(const char *, char *const[]);
typedef int fexecve_fn(int, char *const[], char *const[]);

__attribute__((visibility("default")))
int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve, execve_fn);
	before_exec();
	int rc = real_execve(path, argv, envp);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execv(const char *path, char *const argv[])
{
	REAL(execv, execv_fn);
	before_exec();
	int rc = real_execv(path, argv);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execvp(const char *file, char *const argv[])
{
	REAL(execvp, execv_fn);
	before_exec();
	int rc = real_execvp(file, argv);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe, execve_fn);
	before_exec();
	int rc = real_execvpe(file, argv, envp);
	after_failed_exec();
	return rc;
}

__attribute__((visibility("default")))
int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL(fexecve, fexecve_fn);
	before_exec();
	int rc = real_fexecve(fd, argv, envp);
	after_failed_exec();
	return rc;
}

/* The execl family: gather the variadic arguments and take the path above. */
static int count_args(const char *arg0, va_list ap)
{
	int n = 1;
	if (!arg0)
		return 0;
	while (va_arg(ap, const char *))
		n++;
	return n;
}

#define GATHER(arg0, argv)                                   \
	va_list ap;                                          \
	va_start(ap, arg0);                                  \
	int n_ = count_args(arg0, ap);                       \
	va_end(ap);                                          \
	const char *argv[n_ + 1];                            \
	va_start(ap, arg0);                                  \
	argv[0] = arg0;                                      \
	for (int i_ = 1; i_ <= n_; i_++)                     \
		argv[i_] = va_arg(ap, const char *);         \
	if (n_ == 0)                                         \
		argv[0] = NULL

__attribute__((visibility("default")))
int execl(const char *path, const char *arg0, ...)
{
	GATHER(arg0, argv);
	va_end(ap);
	return execv(path, (char *const *)argv);
}

__attribute__((visibility("default")))
int execlp(const char *file, const char *arg0, ...)
{
	GATHER(arg0, argv);
	va_end(ap);
	return execvp(file, (char *const *)argv);
}

__attribute__((visibility("default")))
int execle(const char *path, const char *arg0, ...)
{
	GATHER(arg0, argv);
	char *const *envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, (char *const *)argv, envp);
}

/* ---- interposers ---- */

/* verify.c: the program's SIGSEGV/SIGBUS/SIGTRAP dispositions in verify mode. */
int preload_verify_sigaction(int sig, const struct sigaction *a, struct sigaction *old)
	__attribute__((weak));

__attribute__((visibility("default")))
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* Co-simulation (VPROF_VERIFY) holds SIGSEGV and SIGBUS (fault-safe
	 * probes) and SIGTRAP (single-stepping) as we hold SIGPROF: verify.c
	 * keeps the program's view of them and applies it. */
	if (g_vprof.cfg.verify && preload_verify_sigaction &&
	    (sig == SIGSEGV || sig == SIGBUS || sig == SIGTRAP))
		return preload_verify_sigaction(sig, act, old);
	if (sig != UPCALL_SIGNAL || !g_installed)
		return preload_real_sigaction(sig, act, old);
	struct sigaction prev = g_prog;
	if (act) {
		g_prog = *act;
		sync_restart();
	}
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
