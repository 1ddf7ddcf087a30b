/*
 * Masks and waits on SIGPROF. SIGPROF is never really blocked while we
 * sample, or a program that blocks every signal (worker threads of servers
 * often do) would never be sampled. The program keeps its view: masks it
 * reads back say SIGPROF is blocked when it blocked it, and a SIGPROF of
 * its own that arrives then is held (one, as the kernel would) and raised
 * when it unblocks; sigpending, the sigwait family, sigsuspend and
 * signalfd see it as the kernel would have shown it. Except in a process
 * that reads SIGPROF through a signalfd: there the program's blocks are
 * real (signalfd() below). Normal context.
 */
#include "preload/sigprof.h"
#include "preload/sandbox.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <sys/signalfd.h>

/* SIGPROF is never really blocked while we sample, or a program that blocks
 * every signal (worker threads of servers often do) would never be
 * sampled. The program keeps its view: masks it reads back say SIGPROF is
 * blocked when it blocked it, and a SIGPROF of its own that arrives then is
 * held (one, as the kernel would) and raised when it unblocks. A raw
 * rt_sigprocmask that unblocks signals is seen when the program's SIGPROF
 * comes (prog_kmask; handler.c, prog_blocks), one that blocks SIGPROF is
 * real. Not covered: sigwait*() on SIGPROF. */
typedef int sigmask_fn(int, const sigset_t *, sigset_t *);

/* Whether the program's block of SIGPROF is real in this thread: in a
 * process where a thread reads SIGPROF through a signalfd (see
 * signalfd() below). */
static int block_for_real(void)
{
	return g_thread.prog_signalfd || g_sigprof.signalfd_tid;
}

/* prog_kmask from the thread's mask now (a raw query). */
void preload_signals_note_kmask(void)
{
	struct preload_thread *t = &g_thread;
	uint64_t cur;
	t->prog_kvalid = 0;
	if (t->prog_blocked && syscall(SYS_rt_sigprocmask, SIG_SETMASK, NULL, &cur, sizeof(cur)) == 0) {
		t->prog_kmask = cur & ~(1ull << (UPCALL_SIGNAL - 1));
		t->prog_kvalid = 1;
	}
}

static int masked(sigmask_fn *real, int how, const sigset_t *set, sigset_t *old)
{
	struct preload_thread *t = &g_thread;
	if (!g_sigprof.installed)
		return real(how, set, old);
	int was = t->prog_blocked, now = was;
	sigset_t s;
	if (set) {
		int wants = sigismember(set, UPCALL_SIGNAL) == 1;
		now = how == SIG_BLOCK ? (was || wants) : how == SIG_UNBLOCK ? (was && !wants)
			: how == SIG_SETMASK ? wants : was;
		s = *set;
		if (how != SIG_UNBLOCK && !block_for_real())
			sigdelset(&s, UPCALL_SIGNAL);
		/* A thread stopped at a seccomp sandbox keeps the itimer's
		 * SIGPROF blocked: our handler must not run there (sandbox.c). */
		if (g_vprof.backend == UPCALL_EV_ITIMER && preload_sandbox_stopped()) {
			if (how == SIG_UNBLOCK)
				sigdelset(&s, UPCALL_SIGNAL);
			else
				sigaddset(&s, UPCALL_SIGNAL);
		}
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
	if (set)
		preload_signals_note_kmask();
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

/* sigsuspend: the mask it waits with is the program's view; a SIGPROF
 * held for the program and unblocked by that mask is delivered at once, as
 * the kernel would, and the call returns EINTR. */
__attribute__((visibility("default")))
int sigsuspend(const sigset_t *mask)
{
	typedef int fn(const sigset_t *);
	REAL(sigsuspend, fn);
	struct preload_thread *t = &g_thread;
	if (!g_sigprof.installed)
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
	if (!block_for_real())
		sigdelset(&m, UPCALL_SIGNAL);
	int kvalid = t->prog_kvalid;
	t->prog_blocked = wants;
	t->prog_kvalid = 0;      /* the kernel's mask is m meanwhile */
	int rc = real_sigsuspend(&m);
	t->prog_blocked = was;
	t->prog_kvalid = kvalid;
	return rc;
}

/* A thread that reads SIGPROF through a signalfd handles it itself,
 * synchronously: it needs SIGPROF really blocked to have it queued for
 * the descriptor, and so does every thread that blocks it, or a SIGPROF
 * sent to the process (its ITIMER_PROF's) would go to one of them
 * instead, held in our handler. From then on the program's blocks of
 * SIGPROF are real in every thread (masks above, thread starts, and
 * handler.c for a thread that blocked it before), and a thread is not
 * sampled while it blocks SIGPROF: vprof's samples are SIGPROF too (one
 * left pending is taken when it unblocks). The reader itself is not
 * sampled from then on, since its descriptor would read ours; with the
 * process-wide itimer, vprof's timer is stopped (the program's own ticks
 * that come to a thread not blocking SIGPROF are still samples, as that
 * backend counts them: itimer.c). Said once. The descriptor then reads
 * the program's own signals only, as without vprof. */
__attribute__((visibility("default")))
int signalfd(int fd, const sigset_t *mask, int flags)
{
	typedef int fn(int, const sigset_t *, int);
	REAL(signalfd, fn);
	struct preload_thread *t = &g_thread;
	if (g_sigprof.installed && sigismember(mask, UPCALL_SIGNAL) == 1 && !t->prog_signalfd) {
		sigset_t one, old;
		sigemptyset(&one);
		sigaddset(&one, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &one, &old, sizeof(long));
		t->prog_signalfd = 1;
		g_sigprof.signalfd_tid = (pid_t)syscall(SYS_gettid);
		int whole = g_vprof.backend == UPCALL_EV_ITIMER;
		if (whole && !g_sigprof.prog_itimer)
			upcall_process_stop(g_vprof.backend);
		preload_thread_unsample();
		static int said;
		if (g_vprof.active && !said++)
			preload_say(whole ? "the program reads SIGPROF through a signalfd, and vprof's itimer "
					    "ticks are SIGPROF too: vprof's timer is stopped from here on, and "
					    "only the program's own ITIMER_PROF ticks that come to a thread not "
					    "blocking SIGPROF are sampled"
					  : "thread %d reads SIGPROF through a signalfd, and vprof's samples are "
					    "SIGPROF too: from here on it is not sampled, nor is any thread "
					    "while it blocks SIGPROF",
				    (int)g_sigprof.signalfd_tid);
		if (t->prog_pending) {       /* queue it where the fd reads */
			t->prog_pending = 0;
			syscall(SYS_rt_tgsigqueueinfo, g_vprof.pid, g_sigprof.signalfd_tid, UPCALL_SIGNAL,
				&t->prog_info);
		}
		if (!t->prog_blocked)
			syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
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
	if (sig != UPCALL_SIGNAL || !g_sigprof.installed)
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
	return sig == UPCALL_SIGNAL && g_sigprof.installed ? one_signal(SIG_BLOCK, sig) : real_sighold(sig);
}

__attribute__((visibility("default")))
int sigrelse(int sig)
{
	typedef int fn(int);
	REAL(sigrelse, fn);
	return sig == UPCALL_SIGNAL && g_sigprof.installed ? one_signal(SIG_UNBLOCK, sig) : real_sigrelse(sig);
}

__attribute__((visibility("default")))
int sigignore(int sig)
{
	typedef int fn(int);
	REAL(sigignore, fn);
	if (sig != UPCALL_SIGNAL || !g_sigprof.installed)
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
		/* Real in a process that reads SIGPROF through a signalfd. */
		if (!block_for_real())
			syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, &one, NULL, sizeof(long));
	}
	preload_signals_note_kmask();
}
