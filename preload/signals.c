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
#include <spawn.h>
#include <sys/signalfd.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
static sigaction_fn *g_real_sigaction;
static struct sigaction g_prog;          /* the program's SIGPROF disposition */
static int g_installed;
static volatile int g_prog_itimer;    /* the program armed ITIMER_PROF itself */
static struct itimerval g_prog_itv;  /* ... with this (its view) */

void preload_call_on_stack(void (*fn)(int, siginfo_t *, void *), int sig, siginfo_t *si, void *uc,
			   void *stack_top);
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
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &s, &old, sizeof(long));
		return;  /* not reached */
	}
	sigset_t m = a.sa_mask;
	if (a.sa_flags & SA_NODEFER)
		sigdelset(&m, sig);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &m, &old, sizeof(long));
	if (a.sa_flags & SA_RESETHAND) {
		g_prog.sa_handler = SIG_DFL;
		g_prog.sa_flags &= ~SA_SIGINFO;
	}
	/* In its handler the program sees SIGPROF blocked, as the kernel
	 * would block it (and it really is: we run without SA_NODEFER). */
	struct preload_thread *t = &g_thread;
	int was_blocked = t->prog_blocked;
	if (!(a.sa_flags & SA_NODEFER))
		t->prog_blocked = 1;
	void (*fn)(int, siginfo_t *, void *) =
		(a.sa_flags & SA_SIGINFO) ? a.sa_sigaction : (void (*)(int, siginfo_t *, void *))(void *)a.sa_handler;
	stack_t ss;
	if (!(a.sa_flags & SA_ONSTACK) && sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK)) {
		/* We are on the alternate stack; the program did not ask for
		 * it: run its handler below the interrupted frame. */
		uint64_t sp = (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
		preload_call_on_stack(fn, sig, si, uc, (void *)((sp - 128 - 64) & ~15ull));
	} else {
		fn(sig, si, uc);
	}
	t->prog_blocked = was_blocked;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
}

/* kind: upcall_classify's answer for si. */
static int is_ours(const siginfo_t *si, int kind)
{
	return kind == UPCALL_SIG_OURS || kind == UPCALL_SIG_DRAIN ||
	       (kind == UPCALL_SIG_FD && preload_fd_is_ours(si->si_fd));
}

int preload_signal_is_ours(const siginfo_t *si)
{
	return is_ours(si, upcall_classify(si, g_vprof.backend));
}

static void dispatch(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	struct preload_thread *t = &g_thread;
	int kind = upcall_classify(si, g_vprof.backend);
	if (g_prog_itimer && g_vprof.backend == MERGE_EV_ITIMER && si->si_code == SI_KERNEL) {
		/* One process timer for two users: each tick is a sample of ours
		 * and the program's own SIGPROF. */
		if (g_vprof.active && preload_spool_ready())
			preload_sample(sig, si, uc);
		if (t->prog_blocked) {
			t->prog_pending = 1;
			t->prog_info = *si;
		} else {
			forward(sig, si, uc);
		}
	} else if (!is_ours(si, kind)) {
		if (t->prog_blocked) {
			t->prog_pending = 1;    /* delivered when it unblocks */
			t->prog_info = *si;
		}
		else
			forward(sig, si, uc);
	}
	else if (kind == UPCALL_SIG_DRAIN)
		preload_drain();          /* ring mode: the kernel took the PCs */
	else if (t->up.ring && si->si_fd == t->up.fd)
		upcall_ring_first(&t->up);   /* its PC is in the ring already */
	else if (g_vprof.cfg.bench_empty)
		upcall_rearm(&t->up);     /* the floor: take the signal, do nothing */
	else if (g_vprof.active && preload_spool_ready()) {
		preload_sample(sig, si, uc);
		if (g_vprof.cfg.values) {
			/* The interpreter executes the program's next
			 * instructions for it, and they may store errno
			 * (libc's syscall error path: `mov %eax,%fs:(%rdx)`
			 * right after the syscall, where samples taken in
			 * the kernel land). That store is the program's:
			 * restoring the errno of handler entry over it made
			 * a failed read() return -1 with errno 0 (1 call in
			 * 3,000 at 4 kHz; CPython raised "OSError: [Errno
			 * 0]"). So the program's errno is in place while it
			 * runs, and what it holds after is the one restored. */
			errno = saved;
			preload_values_sample(uc);
			saved = errno;
		}
		if (g_vprof.cfg.verify && !t->busy)
			preload_verify_sample(sig, si, uc);
	}
	errno = saved;
}

static int has_handler(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

/* Our handler needs an alternate stack only to interpret (interpreted
 * pushes go below the interrupted stack pointer): in plain PC sampling it
 * runs where the kernel would have run the program's own handler, which is
 * then called right there. Switching a program's handler back to the
 * thread's stack from ours works, but unwinders that walk across the two
 * stacks (gperftools') crash on it, so it is kept for the interpreting
 * modes. A program's SA_ONSTACK is taken as ours too. */
static int needs_altstack(void)
{
	return g_vprof.cfg.verify || g_vprof.cfg.values;
}

static int install(int restart)
{
	struct sigaction a;
	int onstack = needs_altstack() || (has_handler(&g_prog) && (g_prog.sa_flags & SA_ONSTACK));
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = dispatch;
	a.sa_flags = SA_SIGINFO | (onstack ? SA_ONSTACK : 0) | (restart ? SA_RESTART : 0);
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

#define REAL(name, type) \
	static type *real_##name; \
	if (!real_##name) \
		real_##name = (type *)dlsym(RTLD_NEXT, #name)

/* ---- signal masks ----
 * SIGPROF is never really blocked while we sample, or a program that blocks
 * every signal (worker threads of servers often do) would never be
 * sampled. The program keeps its view: masks it reads back say SIGPROF is
 * blocked when it blocked it, and a SIGPROF of its own that arrives then is
 * held (one, as the kernel would) and raised when it unblocks. Not covered:
 * raw rt_sigprocmask system calls, sigwait*() on SIGPROF, and masks that
 * other calls take for their duration (sigsuspend, ppoll, pselect). */
typedef int sigmask_fn(int, const sigset_t *, sigset_t *);

static int masked(sigmask_fn *real, int how, const sigset_t *set, sigset_t *old)
{
	struct preload_thread *t = &g_thread;
	if (!g_installed)
		return real(how, set, old);
	int was = t->prog_blocked, now = was;
	sigset_t s;
	if (set) {
		int wants = sigismember(set, UPCALL_SIGNAL) == 1;
		now = how == SIG_BLOCK ? (was || wants) : how == SIG_UNBLOCK ? (was && !wants)
			: how == SIG_SETMASK ? wants : was;
		s = *set;
		/* A thread reading SIGPROF through a signalfd gets it really
		 * blocked: it handles SIGPROF itself, synchronously. */
		if (how != SIG_UNBLOCK && !t->prog_signalfd)
			sigdelset(&s, UPCALL_SIGNAL);
		set = &s;
	}
	int rc = real(how, set, old);
	if (rc != 0)
		return rc;
	if (old) {
		if (was)
			sigaddset(old, UPCALL_SIGNAL);
		else
			sigdelset(old, UPCALL_SIGNAL);
	}
	t->prog_blocked = now;
	if (!now && t->prog_pending) {
		t->prog_pending = 0;
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), UPCALL_SIGNAL);
	}
	return rc;
}

__attribute__((visibility("default")))
int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(sigprocmask, sigmask_fn);
	return masked(real_sigprocmask, how, set, old);
}

__attribute__((visibility("default")))
int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	REAL(pthread_sigmask, sigmask_fn);
	return masked(real_pthread_sigmask, how, set, old);
}

/* A SIGPROF held for the program is pending in its view. */
__attribute__((visibility("default")))
int sigpending(sigset_t *set)
{
	typedef int fn(sigset_t *);
	REAL(sigpending, fn);
	int rc = real_sigpending(set);
	if (rc == 0 && g_thread.prog_pending)
		sigaddset(set, UPCALL_SIGNAL);
	return rc;
}

/* ... and a synchronous wait for it takes the held one first. */
static int take_held(const sigset_t *set, siginfo_t *info)
{
	struct preload_thread *t = &g_thread;
	if (!t->prog_pending || sigismember(set, UPCALL_SIGNAL) != 1)
		return 0;
	t->prog_pending = 0;
	if (info)
		*info = t->prog_info;
	return UPCALL_SIGNAL;
}

__attribute__((visibility("default")))
int sigtimedwait(const sigset_t *set, siginfo_t *info, const struct timespec *ts)
{
	typedef int fn(const sigset_t *, siginfo_t *, const struct timespec *);
	REAL(sigtimedwait, fn);
	int held = take_held(set, info);
	return held ? held : real_sigtimedwait(set, info, ts);
}

__attribute__((visibility("default")))
int sigwaitinfo(const sigset_t *set, siginfo_t *info)
{
	typedef int fn(const sigset_t *, siginfo_t *);
	REAL(sigwaitinfo, fn);
	int held = take_held(set, info);
	return held ? held : real_sigwaitinfo(set, info);
}

__attribute__((visibility("default")))
int sigwait(const sigset_t *set, int *sig)
{
	typedef int fn(const sigset_t *, int *);
	REAL(sigwait, fn);
	int held = take_held(set, NULL);
	if (held) {
		*sig = held;
		return 0;
	}
	return real_sigwait(set, sig);
}

/* ---- ITIMER_PROF ----
 * With the itimer backend, vprof's sampling timer is the process's one
 * ITIMER_PROF. A program that arms its own takes it over: the timer runs
 * at the program's setting, every tick is both a sample and the program's
 * SIGPROF; when the program disarms it, ours comes back. The program
 * reads back its own setting, never ours. */
typedef int setitimer_fn(__itimer_which_t, const struct itimerval *, struct itimerval *);
typedef int getitimer_fn(__itimer_which_t, struct itimerval *);

__attribute__((visibility("default")))
int setitimer(__itimer_which_t which, const struct itimerval *nv, struct itimerval *ov)
{
	REAL(setitimer, setitimer_fn);
	if (which != ITIMER_PROF || !g_installed || g_vprof.backend != MERGE_EV_ITIMER)
		return real_setitimer(which, nv, ov);
	struct itimerval cur;
	if (ov) {
		if (g_prog_itimer) {
			real_setitimer(which, NULL, &cur);      /* live remaining time */
			cur.it_interval = g_prog_itv.it_interval;
		} else {
			memset(&cur, 0, sizeof(cur));
		}
	}
	int rc = 0;
	if (nv) {
		int on = nv->it_value.tv_sec || nv->it_value.tv_usec;
		g_prog_itv = *nv;
		g_prog_itimer = on;
		if (on)
			rc = real_setitimer(which, nv, NULL);
		else if (g_vprof.active)
			rc = upcall_process_start(g_vprof.backend, g_vprof.period) < 0 ? -1 : 0;
		else
			rc = real_setitimer(which, nv, NULL);
	}
	if (rc == 0 && ov)
		*ov = cur;
	return rc;
}

__attribute__((visibility("default")))
int getitimer(__itimer_which_t which, struct itimerval *v)
{
	REAL(getitimer, getitimer_fn);
	if (which != ITIMER_PROF || !g_installed || g_vprof.backend != MERGE_EV_ITIMER)
		return real_getitimer(which, v);
	if (!g_prog_itimer) {
		memset(v, 0, sizeof(*v));
		return 0;
	}
	int rc = real_getitimer(which, v);
	v->it_interval = g_prog_itv.it_interval;
	return rc;
}

/* ---- posix_spawn, system, popen ----
 * Their children start with SIGPROF at SIG_DFL (our handler is reset),
 * where the program meant SIG_IGN. While a program that ignores SIGPROF
 * spawns, the real disposition is SIG_IGN too (samples of that window are
 * lost, uncounted: only programs that ignore SIGPROF pay it). glibc's
 * system() and popen() spawn internally, so they are interposed too. */
static int prog_ignores(void)
{
	return g_installed && !has_handler(&g_prog) && g_prog.sa_handler == SIG_IGN;
}

static void ignore_window(int open)
{
	if (open) {
		struct sigaction ign;
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		preload_real_sigaction(UPCALL_SIGNAL, &ign, NULL);
	} else {
		int saved = errno;
		sync_restart();
		errno = saved;
	}
}

typedef int spawn_fn(pid_t *, const char *, const posix_spawn_file_actions_t *,
		     const posix_spawnattr_t *, char *const[], char *const[]);

__attribute__((visibility("default")))
int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
		const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(posix_spawn, spawn_fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_posix_spawn(pid, path, fa, at, argv, envp);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
		 const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	REAL(posix_spawnp, spawn_fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_posix_spawnp(pid, file, fa, at, argv, envp);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
int system(const char *cmd)
{
	typedef int fn(const char *);
	REAL(system, fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	int rc = real_system(cmd);
	if (ign)
		ignore_window(0);
	return rc;
}

__attribute__((visibility("default")))
FILE *popen(const char *cmd, const char *mode)
{
	typedef FILE *fn(const char *, const char *);
	REAL(popen, fn);
	int ign = prog_ignores();
	if (ign)
		ignore_window(1);
	FILE *f = real_popen(cmd, mode);
	if (ign)
		ignore_window(0);
	return f;
}

/* sigsuspend: the mask it waits with is the program's view; a SIGPROF
 * held for the program and unblocked by that mask is delivered at once, as
 * the kernel would, and the call returns EINTR. */
__attribute__((visibility("default")))
int sigsuspend(const sigset_t *mask)
{
	typedef int fn(const sigset_t *);
	REAL(sigsuspend, fn);
	struct preload_thread *t = &g_thread;
	if (!g_installed)
		return real_sigsuspend(mask);
	int was = t->prog_blocked, wants = sigismember(mask, UPCALL_SIGNAL) == 1;
	if (!wants && t->prog_pending) {
		t->prog_pending = 0;
		t->prog_blocked = 0;
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), UPCALL_SIGNAL);
		t->prog_blocked = was;
		errno = EINTR;
		return -1;
	}
	sigset_t m = *mask;
	if (!t->prog_signalfd)
		sigdelset(&m, UPCALL_SIGNAL);
	t->prog_blocked = wants;
	int rc = real_sigsuspend(&m);
	t->prog_blocked = was;
	return rc;
}

__attribute__((visibility("default")))
int signalfd(int fd, const sigset_t *mask, int flags)
{
	typedef int fn(int, const sigset_t *, int);
	REAL(signalfd, fn);
	struct preload_thread *t = &g_thread;
	if (g_installed && sigismember(mask, UPCALL_SIGNAL) == 1 && !t->prog_signalfd) {
		t->prog_signalfd = 1;
		if (t->prog_blocked) {
			sigset_t one;
			sigemptyset(&one);
			sigaddset(&one, UPCALL_SIGNAL);
			syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, NULL, sizeof(long));
			if (t->prog_pending) {       /* queue it where the fd reads */
				t->prog_pending = 0;
				syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), UPCALL_SIGNAL);
			}
		}
	}
	return real_signalfd(fd, mask, flags);
}

/* The System V calls reach glibc's internal sigaction and sigprocmask,
 * so on SIGPROF they are done here through the interposers above. */
static int one_signal(int how, int sig)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, sig);
	return sigprocmask(how, &s, NULL);
}

__attribute__((visibility("default")))
sighandler_t sigset(int sig, sighandler_t disp)
{
	typedef sighandler_t fn(int, sighandler_t);
	REAL(sigset, fn);
	if (sig != UPCALL_SIGNAL || !g_installed)
		return real_sigset(sig, disp);
	int held = g_thread.prog_blocked;
	struct sigaction old;
	sigaction(sig, NULL, &old);
	if (disp == SIG_HOLD) {
		one_signal(SIG_BLOCK, sig);
	} else {
		struct sigaction a;
		memset(&a, 0, sizeof(a));
		a.sa_handler = disp;
		sigemptyset(&a.sa_mask);
		if (sigaction(sig, &a, NULL) < 0)
			return SIG_ERR;
		one_signal(SIG_UNBLOCK, sig);
	}
	return held ? SIG_HOLD : old.sa_handler;
}

__attribute__((visibility("default")))
int sighold(int sig)
{
	typedef int fn(int);
	REAL(sighold, fn);
	return sig == UPCALL_SIGNAL && g_installed ? one_signal(SIG_BLOCK, sig) : real_sighold(sig);
}

__attribute__((visibility("default")))
int sigrelse(int sig)
{
	typedef int fn(int);
	REAL(sigrelse, fn);
	return sig == UPCALL_SIGNAL && g_installed ? one_signal(SIG_UNBLOCK, sig) : real_sigrelse(sig);
}

__attribute__((visibility("default")))
int sigignore(int sig)
{
	typedef int fn(int);
	REAL(sigignore, fn);
	if (sig != UPCALL_SIGNAL || !g_installed)
		return real_sigignore(sig);
	return signal(sig, SIG_IGN) == SIG_ERR ? -1 : 0;
}

void preload_signals_thread_begin(void)
{
	sigset_t cur, one;
	sigemptyset(&one);
	sigaddset(&one, UPCALL_SIGNAL);
	if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &cur, sizeof(long)) == 0 &&
	    sigismember(&cur, UPCALL_SIGNAL) == 1) {
		g_thread.prog_blocked = 1;
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof(long));
	}
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
	/* exec discards the ring with the process image: drain it first. Not
	 * in a vfork child (gcc's driver runs cc1 and as so): it shares our
	 * memory but is another task, and the ring is its parent's, whose
	 * drains run on the parent's own thread. */
	if (getpid() == g_vprof.pid)
		preload_drain();
	upcall_process_stop(g_vprof.backend);
	if (g_thread.prog_blocked) {   /* the exec'd image inherits the mask */
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, NULL, sizeof(long));
	}
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
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof(long));
		sync_restart();
		if (g_vprof.active)
			upcall_process_start(g_vprof.backend, g_vprof.period);
	}
	errno = saved;
}


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

__attribute__((visibility("default")))
int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* The interpreting modes hold SIGSEGV and SIGBUS (fault-safe probes)
	 * and co-simulation SIGTRAP (single-stepping) as we hold SIGPROF:
	 * faults.c keeps the program's view of them and applies it. */
	if (sig == SIGSEGV || sig == SIGBUS || sig == SIGTRAP)
		return preload_faults_sigaction(sig, act, old);
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
