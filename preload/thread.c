/*
 * Per-thread set-up and tear-down: vprof's own stack for its handler, a
 * slot in the spool, and the thread's trigger.
 *
 * The handler stack: the SIGPROF handler's work (counting, unwinding,
 * interpreting: ~10 KiB deep) never runs on the stack the kernel
 * delivered the signal on, which may be a program's 8 KiB alternate
 * stack, a coroutine's or a thread's last kilobytes; the entry
 * (onstack.S) moves to this one first. Each armed thread maps one, with
 * a guard page below it. The interpreting modes also make it the thread's
 * alternate signal stack, unless the program set one up already: the
 * interpreter pushes below the interrupted stack pointer, so the kernel's
 * signal frame must lie elsewhere.
 *
 * Runs on the thread concerned, in normal context (constructor, the
 * pthread_create trampoline, the fork child handler, the key destructor at
 * thread exit). Not signal-safe.
 */
#include "preload/preload.h"
#include "preload/sandbox.h"
#include "preload/selflimit.h"
#include "preload/unwind.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_key_t g_exit_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

/* The handler stack's bounds, for the entry in onstack.S (preload.h). */
__thread uintptr_t preload_hstack_lo PRELOAD_TLS;
__thread uintptr_t preload_hstack_end PRELOAD_TLS;
__thread uintptr_t preload_hstack_top PRELOAD_TLS;

#define GUARD 4096
#define HSTACK_MAP (GUARD + PRELOAD_ALTSTACK)

/* Handler stacks of threads that ended, kept for the next ones: mapping
 * one (mmap, the guard page's mprotect, its first page touched, munmap at
 * the end) costs 30-70 us in this VM, with another thread running (TLB
 * shootdowns), as much as creating the thread. At most HSTACK_CACHE are
 * kept (their touched pages stay: 4-12 KiB each). A thread that finds the
 * cache in use by another maps or unmaps its own; a fork child starts
 * with the lock free (a thread of the parent may have held it). */
#define HSTACK_CACHE 64
static void *g_hcache[HSTACK_CACHE];
static int g_hcache_n, g_hcache_lock;

static int hcache_lock(void)
{
	return !__atomic_exchange_n(&g_hcache_lock, 1, __ATOMIC_ACQUIRE);
}

static void hcache_unlock(void)
{
	__atomic_store_n(&g_hcache_lock, 0, __ATOMIC_RELEASE);
}

static void hcache_fork_child(void)
{
	g_hcache_lock = 0;
}

/* A handler stack's usable base, or NULL. */
static void *hstack_get(void)
{
	char *m = NULL;
	if (hcache_lock()) {
		if (g_hcache_n)
			m = g_hcache[--g_hcache_n];
		hcache_unlock();
	}
	if (m)
		return m;
	m = mmap(NULL, HSTACK_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE,
		 -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	if (mprotect(m, GUARD, PROT_NONE) < 0) {
		munmap(m, HSTACK_MAP);
		return NULL;
	}
	return m + GUARD;
}

static void hstack_put(void *base)
{
	if (hcache_lock()) {
		if (g_hcache_n < HSTACK_CACHE) {
			g_hcache[g_hcache_n++] = base;
			base = NULL;
		}
		hcache_unlock();
	}
	if (base)
		munmap((char *)base - GUARD, HSTACK_MAP);
}

/* Gives the thread its handler stack (a fork child has its parent's
 * thread's already, copied with the address space); registers it as the
 * alternate signal stack when interpreting, if the program has none. */
static void hstack_begin(struct preload_thread *t)
{
	if (!t->altstack) {
		if (!(t->altstack = hstack_get()))
			return;
		if (g_vprof.cfg.verify || g_vprof.cfg.values) {
			stack_t cur;
			/* Leave a stack the program set up alone. */
			if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
				stack_t ss = { .ss_sp = t->altstack, .ss_size = PRELOAD_ALTSTACK };
				sigaltstack(&ss, NULL);
			}
		}
	}
	preload_hstack_lo = (uintptr_t)t->altstack;
	preload_hstack_end = preload_hstack_top = (uintptr_t)t->altstack + PRELOAD_ALTSTACK;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* With SIGPROF blocked: the entry stops using the stack. */
static void hstack_forget(void)
{
	preload_hstack_lo = preload_hstack_end = preload_hstack_top = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

/* Hands it back, once no handler can run on it: disabled first where it
 * is the alternate signal stack (a program's own stays). */
static void hstack_end(struct preload_thread *t)
{
	stack_t cur, off = { .ss_flags = SS_DISABLE };
	if (!t->altstack)
		return;
	if (sigaltstack(NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE) && cur.ss_sp == t->altstack &&
	    sigaltstack(&off, NULL) < 0)
		return;
	hstack_put(t->altstack);
	t->altstack = NULL;
}

static void on_thread_exit(void *unused)
{
	preload_thread_end();
}

static void make_key(void)
{
	pthread_key_create(&g_exit_key, on_thread_exit);
	pthread_atfork(NULL, NULL, hcache_fork_child);
}

/* upcall's keep_fd: a perf descriptor that must stay open (no mapping
 * could hold its event) is protected from the program's close(). */
static void keep_fd(int fd, int keep)
{
	if (keep)
		preload_fd_own(fd);
	else
		preload_fd_disown(fd);
}

void preload_thread_begin(void)
{
	struct preload_thread *t = &g_thread;
	if (!g_vprof.active || t->armed)
		return;
	t->busy = 1;
	pthread_once(&g_key_once, make_key);
	preload_signals_thread_begin();
	if (t->prog_signalfd) {
		/* A fork child of a thread that reads SIGPROF through a
		 * signalfd: not sampled (preload_thread_unsample). */
		t->busy = 0;
		return;
	}
	pthread_setspecific(g_exit_key, (void *)1);   /* non-NULL: run the destructor */
	if (g_vprof.cfg.stacks || g_vprof.cfg.values)
		preload_cfi_thread_begin();   /* where the unwinder may read */

	hstack_begin(t);
	pid_t tid = (pid_t)syscall(SYS_gettid);
	/* Entering the spool claims the thread's slot there (rotate.c). */
	struct spool *prev, *sp;
	t->tid = (uint32_t)tid;
	t->slot_seq = 0;
	if ((sp = preload_spool_enter(&prev)))
		preload_spool_exit(sp, prev);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)tid << 32) ^ (uint64_t)(uintptr_t)t;
	if (g_vprof.cfg.verify && preload_verify_thread_begin)
		preload_verify_thread_begin();
	/* Ring mode unless a sample must interrupt the thread (co-simulation
	 * interprets at the sample) or the per-sample signal is asked for. */
	int ring = !preload_signal_per_sample();
	int rc = upcall_thread_start(&t->up, g_vprof.backend, g_vprof.period, seed, 0, ring);
	/* A ring is locked memory: an unprivileged user past
	 * perf_event_mlock_kb and RLIMIT_MEMLOCK gets EPERM for it. Such a
	 * thread is still sampled, a signal per sample. */
	int fell_back = 0;
	if (rc < 0 && ring)
		fell_back = (rc = upcall_thread_start(&t->up, g_vprof.backend, g_vprof.period, seed,
						      0, 0)) == 0;
	if (rc == 0) {
		t->up.on_mmap = preload_on_mmap;
		t->up.drain_now = preload_drain;
		t->up.keep_fd = keep_fd;
		t->armed = 1;
		if (upcall_thread_enable(&t->up) == 0) {
			preload_selflimit_thread_begin();
			if ((sp = preload_spool_enter(&prev))) {
				__atomic_fetch_add(&sp->hdr->live.threads, 1, __ATOMIC_RELAXED);
				if (fell_back)
					__atomic_fetch_add(&sp->hdr->live.ring_fallbacks, 1,
							   __ATOMIC_RELAXED);
				preload_spool_exit(sp, prev);
			}
		} else {
			/* Not armed: release the event (and its descriptor). */
			upcall_thread_stop(&t->up);
			t->armed = 0;
		}
	}
	t->busy = 0;
}

/* Threads that started before our constructor (another library's
 * constructor can start one) were not created through our pthread_create:
 * arm them from here by tid. They have no slot (they count into the shared
 * table), start at the mean period and are never stopped: a perf event on
 * an exited thread costs nothing but its one mapped page. */
void preload_thread_arm_others(void)
{
	char buf[4096];
	pid_t self = (pid_t)syscall(SYS_gettid);
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	for (;;) {
		long n = syscall(SYS_getdents64, fd, buf, sizeof(buf));
		if (n <= 0)
			break;
		for (long off = 0; off < n;) {
			struct dirent64 *d = (struct dirent64 *)(buf + off);
			off += d->d_reclen;
			pid_t tid = (pid_t)atoi(d->d_name);
			if (tid <= 0 || tid == self)
				continue;
			struct upcall_thread up;
			if (upcall_thread_start(&up, g_vprof.backend, g_vprof.period,
						(uint64_t)tid * 0x9e3779b97f4a7c15ull, tid, 0) == 0) {
				up.keep_fd = keep_fd;
				struct spool *prev, *sp;
				if (upcall_thread_enable(&up) == 0) {
					if ((sp = preload_spool_enter(&prev))) {
						__atomic_fetch_add(&sp->hdr->live.threads, 1,
								   __ATOMIC_RELAXED);
						preload_spool_exit(sp, prev);
					}
				} else
					upcall_thread_stop(&up);
			}
		}
	}
	close(fd);
}

/* Takes every SIGPROF pending for the thread (blocked by the caller):
 * ours are dropped; returns 1 with *prog the last of the program's. */
static int take_pending(siginfo_t *prog)
{
	const struct timespec zero = { 0, 0 };
	sigset_t block;
	siginfo_t si;
	int found = 0;
	sigemptyset(&block);
	sigaddset(&block, UPCALL_SIGNAL);
	while (syscall(SYS_rt_sigtimedwait, &block, &si, &zero, sizeof(long)) == UPCALL_SIGNAL)
		if (!preload_signal_is_ours(&si)) {
			*prog = si;
			found = 1;
		}
	return found;
}

/* The thread reads SIGPROF through a signalfd (masks.c): vprof's samples
 * would be read there with the program's, so the thread is not sampled
 * from here on. What its ring holds is drained, its trigger stopped, and
 * a sample of ours still pending is taken; a SIGPROF of the program's
 * taken with them is queued again with its siginfo. The slot stays (its
 * counts are merged as any). */
void preload_thread_unsample(void)
{
	struct preload_thread *t = &g_thread;
	siginfo_t si;
	if (!g_vprof.active || getpid() != g_vprof.pid)
		return;
	t->busy = 1;
	preload_drain();
	preload_selflimit_thread_end();
	if (t->armed)
		upcall_thread_stop(&t->up);
	t->armed = 0;
	if (take_pending(&si))
		syscall(SYS_rt_tgsigqueueinfo, g_vprof.pid, (pid_t)syscall(SYS_gettid), UPCALL_SIGNAL, &si);
	t->busy = 0;
}

void preload_thread_end(void)
{
	struct preload_thread *t = &g_thread;
	sigset_t block, old;
	/* A thread that stopped at a seccomp sandbox ended its sampling
	 * then, and may not make these calls now (sandbox.c). */
	if (!g_vprof.active || preload_sandbox_stopped() || getpid() != g_vprof.pid)
		return;      /* or a child that skipped atfork (_Fork): not ours */
	/* With the trigger stopped and SIGPROF blocked, no handler can be
	 * counting into the slot while it is folded away. */
	sigemptyset(&block);
	sigaddset(&block, UPCALL_SIGNAL);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, sizeof(long));
	t->busy = 1;
	hstack_forget();
	int requeue = 0;
	preload_drain();         /* what the kernel wrote since the last drain */
	preload_selflimit_thread_end();
	/* A descriptor kept open is unmarked (keep_fd) before it is closed. */
	if (t->armed)
		upcall_thread_stop(&t->up);
	t->armed = 0;
	/* Entering moves the slot into the current spool if a rotation left
	 * it in an older one (then it is new and empty); the old one stays
	 * in its spool, merged with it. */
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (sp) {
		spool_release_slot(sp, t->slot);
		preload_spool_exit(sp, prev);
	}
	t->slot = NULL;
	t->tid = 0;              /* no slot from now on */
	preload_values_thread_end();
	/* A sample may have been raised before the trigger stopped: take it
	 * now, so it is not handed to the program as its own SIGPROF after we
	 * unblock (its si_fd is one of our tags, see upcall.h). A SIGPROF of
	 * the program's is put back. */
	siginfo_t si;
	requeue = take_pending(&si);
	t->busy = 0;
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
	if (requeue)
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), UPCALL_SIGNAL);
	hstack_end(t);
}
