/*
 * The SIGPROF handler, and the program's disposition of SIGPROF.
 *
 * SIGPROF belongs to vprof while a process is profiled. The program keeps
 * its own view of it: sigaction/signal on SIGPROF are interposed so the
 * program can neither remove our handler nor see it, and the program's
 * disposition is kept here and applied to every SIGPROF that is not one of
 * our samples (its own setitimer, a kill -PROF), exactly as the kernel
 * would have: ignored, default action (terminate), or its handler called
 * with its mask and flags (preload_forward, which faults.c uses for the
 * signals it holds too).
 *
 * The handler's stack: the kernel calls preload_sigprof_entry
 * (onstack.S), which runs preload_dispatch on the thread's handler stack
 * (thread.c) and, when the signal is the program's, preload_dispatch_forward
 * back on the stack the kernel chose. So the handler never writes below a
 * stack that is not vprof's: a program's small alternate stack, a
 * coroutine's, a thread's last kilobytes hold the kernel's frame and
 * nothing more. While it works, every asynchronous signal is blocked (the
 * handler's sa_mask): a program's handler cannot run over the kernel's
 * frame on the stack the entry left, nor on the handler stack.
 *
 * The dispatcher is async-signal-safe and preserves errno. The interposers
 * run in normal context.
 */
#include "preload/sigprof.h"
#include "preload/sandbox.h"
#include "preload/selflimit.h"

#include <errno.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <ucontext.h>

typedef int sigaction_fn(int, const struct sigaction *, struct sigaction *);
static sigaction_fn *g_real_sigaction;
struct preload_sigprof g_sigprof;

void preload_call_on_stack(void (*fn)(int, siginfo_t *, void *), int sig, siginfo_t *si, void *uc,
			   void *stack_top);
void preload_sigprof_entry(int sig, siginfo_t *si, void *uc);
int preload_dispatch(int sig, siginfo_t *si, void *uc) __attribute__((visibility("hidden")));
void preload_dispatch_forward(int sig, siginfo_t *si, void *uc) __attribute__((visibility("hidden")));

/* The kernel's signal mask: 64 bits (glibc's sigset_t is 1024, and the
 * ucontext the kernel writes holds only the first 64). */
typedef uint64_t kmask;
#define KBIT(sig) (1ull << ((sig) - 1))

static kmask kmask_of(const sigset_t *s)
{
	kmask m;
	memcpy(&m, s, sizeof(m));
	return m;
}

static long setmask(int how, const kmask *m, kmask *old)
{
	return syscall(SYS_rt_sigprocmask, how, m, old, sizeof(kmask));
}

int preload_real_sigaction(int sig, const struct sigaction *a, struct sigaction *old)
{
	if (!g_real_sigaction)
		g_real_sigaction = (sigaction_fn *)dlsym(RTLD_NEXT, "sigaction");
	return g_real_sigaction(sig, a, old);
}

/* The program's handler, on the thread's stack, called from our frames on
 * the alternate stack. Those frames stay live until it returns, and the
 * kernel starts a handler at the top of the alternate stack whenever the
 * interrupted code is not on it: a SIGPROF (or a fault) in the program's
 * handler would write its frame over ours, and the return into them
 * jumped into the alternate stack (vprof verify: the program's SIGSEGV
 * handler ran on a stray SEGV_ACCERR at an alternate-stack address). So
 * the alternate stack is disabled while the handler runs: a signal then
 * runs on the stack in use, as for a program with none; if the handler
 * leaves by longjmp, preload_altstack_check gives it back later. */
static void off_altstack(int sig, siginfo_t *si, void *uc)
{
	struct preload_thread *t = &g_thread;
	void (*fn)(int, siginfo_t *, void *) = t->fwd_fn;
	stack_t off = { .ss_flags = SS_DISABLE }, back = t->fwd_ss;
	kmask none_async, mask = t->fwd_mask;
	/* Entered with asynchronous signals blocked (preload_forward): the
	 * switch to this stack and the change of the alternate stack are
	 * one step to any signal. */
	int was_off = sigaltstack(&off, NULL) == 0;
	setmask(SIG_SETMASK, &mask, &none_async);
	fn(sig, si, uc);
	setmask(SIG_SETMASK, &none_async, NULL);
	if (was_off)
		sigaltstack(&back, NULL);
}

/* Every signal but the synchronous ones (blocking those makes the kernel
 * kill on a fault). */
#define SYNC_SIGNALS (KBIT(SIGSEGV) | KBIT(SIGBUS) | KBIT(SIGILL) | KBIT(SIGFPE) | KBIT(SIGTRAP) | KBIT(SIGSYS))

static void async_signals(sigset_t *s)
{
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGSYS };
	sigfillset(s);
	for (size_t k = 0; k < sizeof(sync_sigs) / sizeof(sync_sigs[0]); k++)
		sigdelset(s, sync_sigs[k]);
}

int preload_altstack_check(ucontext_t *uc)
{
	struct preload_thread *t = &g_thread;
	if (!t->fwd_top)
		return 0;
	if ((uint64_t)uc->uc_mcontext.gregs[REG_RSP] < (uint64_t)(uintptr_t)t->fwd_top)
		return 1;               /* inside the program's handler */
	/* Interrupted above its stack top: it is gone, left by a longjmp.
	 * We run off the alternate stack (it is disabled), so it may be
	 * given back now, and the handler stack's frames under it are gone
	 * too. The return from this signal sets the alternate stack the
	 * frame recorded (uc_stack): that is the one given back too. */
	stack_t back = t->fwd_ss;
	t->fwd_top = NULL;
	preload_hstack_top = t->fwd_hstack_top;
	if (sigaltstack(&back, NULL) == 0)
		uc->uc_stack = back;
	return 1;
}

/* The current stack pointer. */
static inline uintptr_t sp_now(void)
{
	uintptr_t sp;
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	return sp;
}

/* Kept small: the program's handler runs below this frame, where the
 * kernel would have run it with this much more room (masks are the
 * kernel's 64 bits, not glibc's 128 bytes). */
void preload_forward(int sig, struct sigaction *p, siginfo_t *si, void *uc, int refaults,
		     int *view_blocked)
{
	int flags = p->sa_flags;
	kmask old;

	if (!(flags & SA_SIGINFO) && (p->sa_handler == SIG_DFL || p->sa_handler == SIG_IGN)) {
		if (p->sa_handler == SIG_IGN && !refaults)
			return;         /* ignored, as the kernel would */
		/* The default action, for real, so the exit status says
		 * "killed by SIG" as it would (a fault the program ignores
		 * gets it too, as from the kernel). A fault re-executes and
		 * takes it at the same instruction; anything else is raised
		 * again. */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		preload_real_sigaction(sig, &dfl, NULL);
		if (refaults)
			return;
		kmask s = KBIT(sig);
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
		setmask(SIG_UNBLOCK, &s, NULL);
		return;  /* not reached for a terminating default */
	}
	/* The mask the kernel would run the handler with: the interrupted
	 * code's, the handler's sa_mask and sig; not the one we run with
	 * (our handler blocks every asynchronous signal). */
	kmask m = kmask_of(&((ucontext_t *)uc)->uc_sigmask) | kmask_of(&p->sa_mask);
	if (!(flags & SA_NODEFER))
		m |= KBIT(sig);
	void (*fn)(int, siginfo_t *, void *) =
		(flags & SA_SIGINFO) ? p->sa_sigaction : (void (*)(int, siginfo_t *, void *))(void *)p->sa_handler;
	if (flags & SA_RESETHAND) {
		p->sa_handler = SIG_DFL;
		p->sa_flags &= ~SA_SIGINFO;
	}
	/* In its handler the program sees sig blocked, as the kernel would
	 * block it (and it really is: we run without SA_NODEFER). */
	int was_blocked = view_blocked ? *view_blocked : 0;
	if (view_blocked && !(flags & SA_NODEFER))
		*view_blocked = 1;
	/* The kernel's mask is m while the program's handler runs. */
	struct preload_thread *self = &g_thread;
	uint64_t kmask_was = self->prog_kmask;
	int kvalid_was = self->prog_kvalid;
	if (view_blocked == &self->prog_blocked)
		self->prog_kvalid = 0;
	stack_t ss;
	struct preload_thread *t = &g_thread;
	if (!(flags & SA_ONSTACK) && !t->fwd_top && sigaltstack(NULL, &ss) == 0 &&
	    (ss.ss_flags & SS_ONSTACK)) {
		/* We are on the alternate stack; the program did not ask for
		 * it: run its handler below the interrupted frame, with the
		 * alternate stack disabled (off_altstack). A SIGPROF in it is
		 * delivered there and its entry moves to the handler stack:
		 * below our frames, if we are on it. */
		uint64_t sp = (uint64_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RSP];
		void *top = (void *)((sp - 128 - 64) & ~15ull);
		uintptr_t here = sp_now();
		int on_hstack = here >= preload_hstack_lo && here < preload_hstack_end;
		t->fwd_hstack_top = preload_hstack_top;
		t->fwd_fn = fn;
		t->fwd_ss = (stack_t){ .ss_sp = ss.ss_sp, .ss_size = ss.ss_size, .ss_flags = 0 };
		kmask async = ~SYNC_SIGNALS;
		setmask(SIG_SETMASK, &async, &old);
		t->fwd_mask = m;
		if (on_hstack)
			preload_hstack_top = (here - 256) & ~(uintptr_t)15;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->fwd_top = top;
		preload_call_on_stack(off_altstack, sig, si, uc, top);
		t->fwd_top = NULL;
		preload_hstack_top = t->fwd_hstack_top;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	} else {
		setmask(SIG_SETMASK, &m, &old);
		fn(sig, si, uc);
	}
	if (view_blocked)
		*view_blocked = was_blocked;
	if (view_blocked == &self->prog_blocked) {
		self->prog_kmask = kmask_was;
		self->prog_kvalid = kvalid_was;
	}
	setmask(SIG_SETMASK, &old, NULL);
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

/* The program's own SIGPROF, come to a thread that blocks it in the
 * program's view (we never really block it, but see masks.c): held, and
 * delivered when the thread unblocks it. */
static void hold(const siginfo_t *si)
{
	struct preload_thread *t = &g_thread;
	t->prog_pending = 1;
	t->prog_info = *si;
}

/* Does the program block its SIGPROF where uc was interrupted? Its view
 * says so, unless the kernel's mask there lacks a signal that the mask
 * its view was taken with had (prog_kmask): then a raw system call
 * changed the mask since, and left SIGPROF unblocked (else this signal
 * would not have come). A program's handler or sigsuspend only add to
 * the mask, and the view is not checked while they run. */
static int prog_blocks(const struct preload_thread *t, const ucontext_t *uc)
{
	if (!t->prog_blocked)
		return 0;
	return !t->prog_kvalid || !(t->prog_kmask & ~kmask_of(&uc->uc_sigmask));
}

/* How much of the handler stack lies below the caller; 0 when it does
 * not run on it (a thread without one). */
static inline __attribute__((always_inline)) size_t hstack_room(void)
{
	uintptr_t here = sp_now();
	return here >= preload_hstack_lo && here < preload_hstack_end ? here - preload_hstack_lo : 0;
}

/* Interpreting (values, verify) writes the program's stack below the
 * interrupted stack pointer, where the kernel puts its frame when it
 * delivers on the interrupted stack: the frame must lie on an alternate
 * stack that the interrupted code was not running on (uc_stack: the
 * alternate stack when the signal came). And a fault in the interpreter's
 * probes is delivered on the alternate stack, at its top if we are not
 * on it, over that frame: so ours must be the alternate stack. If it is
 * the program's, ours is made the alternate stack now, and the return
 * from this signal gives the program's back (the kernel restores
 * uc_stack at sigreturn). Returns 2: the frame is on ours; 1: on the
 * program's, ours now the alternate stack; 0: do not interpret. */
static int interp_stack(ucontext_t *uc)
{
	uintptr_t lo = (uintptr_t)uc->uc_stack.ss_sp, hi = lo + uc->uc_stack.ss_size;
	uintptr_t frame = (uintptr_t)uc, sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	if (frame < lo || frame >= hi || (sp >= lo && sp < hi) || !g_thread.altstack)
		return 0;
	if (uc->uc_stack.ss_sp == g_thread.altstack)
		return 2;
	stack_t ss = { .ss_sp = g_thread.altstack, .ss_size = PRELOAD_ALTSTACK };
	return syscall(SYS_sigaltstack, &ss, NULL) == 0;
}

/* VPROF_BENCH_ALT=N (docs/benchmark-knobs.md): a thread's samples are
 * handled in turns of N, the whole handler then the empty one, so that
 * one process measures what a sample costs it against the empty handler
 * (bench/values.sh). vprof_bench_alt: [0] the turn of the last sample (0
 * handled, 1 empty), [1] and [2] the samples of each, for the program. */
__attribute__((visibility("default"))) volatile uint64_t vprof_bench_alt[3];

static int bench_alt_empty(void)
{
	static __thread uint64_t n PRELOAD_TLS;
	uint64_t turn = n++ / g_vprof.cfg.bench_alt & 1;
	vprof_bench_alt[0] = turn;
	vprof_bench_alt[1 + turn]++;
	return (int)turn;
}

/* Called by preload_sigprof_entry on the handler stack. Returns 1 when
 * the program's disposition is due (preload_dispatch_forward). */
int preload_dispatch(int sig, siginfo_t *si, void *ucv)
{
	int saved = errno, fwd = 0;
	struct preload_thread *t = &g_thread;
	ucontext_t *uc = ucv;
	int kind = upcall_classify(si, g_vprof.backend);
	int off_alt = preload_altstack_check(uc);
	/* Since a thread of the process reads SIGPROF through a signalfd,
	 * a thread that blocks it in the program's view blocks it for real
	 * (masks.c): this one, which started blocking it before, from the
	 * return of this signal on. */
	if (g_sigprof.signalfd_tid && t->prog_blocked)
		sigaddset(&uc->uc_sigmask, UPCALL_SIGNAL);
	if (g_sigprof.prog_itimer && g_vprof.backend == UPCALL_EV_ITIMER && si->si_code == SI_KERNEL) {
		/* One process timer for two users: each tick is a sample of ours
		 * and the program's own SIGPROF. */
		if (g_vprof.active && preload_spool_ready() && !preload_sandbox_stopped()) {
			uint64_t c0 = preload_cost_begin();
			uint32_t w = preload_selflimit_itimer_tick();
			if (w) {
				preload_sample_weighted(si, uc, w);
				preload_selflimit_test_work(1);
			}
			preload_cost_end(c0, 0, w ? 1 : 0, 1);
		}
		/* A one-shot timer of the program's has expired: ours
		 * comes back (not for a signalfd reader: masks.c). */
		const struct timeval *iv = &g_sigprof.prog_itv.it_interval;
		if (!iv->tv_sec && !iv->tv_usec) {
			g_sigprof.prog_itimer = 0;
			if (g_vprof.active && !g_sigprof.signalfd_tid)
				upcall_process_start(g_vprof.backend, g_vprof.period);
		}
		if (prog_blocks(t, uc))
			hold(si);
		else
			fwd = 1;
	} else if (!is_ours(si, kind)) {
		if (prog_blocks(t, uc))
			hold(si);
		else
			fwd = 1;
	}
	else if (kind == UPCALL_SIG_DRAIN)
		preload_drain();          /* ring mode: the kernel took the PCs */
	else if (t->up.ring && si->si_fd == t->up.fd)
		upcall_ring_first(&t->up);   /* its PC is in the ring already */
	else if (g_vprof.cfg.bench_empty || (g_vprof.cfg.bench_alt && bench_alt_empty()))
		upcall_rearm(&t->up);     /* the floor: take the signal, do nothing */
	else if (g_vprof.active && preload_spool_ready() && !preload_sandbox_stopped()) {
		/* What this costs the thread is measured, and bounded
		 * (selflimit.c): the itimer's ticks are thinned there. */
		uint64_t c0 = preload_cost_begin(), ic = 0;
		uint32_t w = g_vprof.backend == UPCALL_EV_ITIMER ? preload_selflimit_itimer_tick() : 1;
		if (!w)
			goto done;
		/* Unwinding and interpreting take PRELOAD_HANDLER_ROOM of
		 * stack: only on the handler stack with that much left (not
		 * on a thread without one, nor deep under a program's handler
		 * that runs on it). Short of it, the stack is the PC alone. */
		int deep = hstack_room() >= PRELOAD_HANDLER_ROOM;
		if (deep && preload_py_on())
			preload_py_walk(uc);          /* VPROF_PYTHON: preload/pyframes.c */
		uint32_t weight = preload_sample_weighted(si, uc, w);
		preload_stacks_sample(si, uc, deep);   /* VPROF_STACKS: preload/stack_sample.c */
		preload_py_done();
		preload_selflimit_test_work(1);
		int where = deep && !off_alt && (g_vprof.cfg.values || g_vprof.cfg.verify) ? interp_stack(uc) : 0;
		if (g_vprof.cfg.values && where) {
			uint64_t i0 = __rdtsc();   /* not cost_begin: it is the piece's */
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
			preload_values_sample(uc, weight);
			saved = errno;
			ic = __rdtsc() - i0;
		}
		/* Co-simulation single-steps after the return, on the
		 * alternate stack: only on ours. */
		if (g_vprof.cfg.verify && !t->busy && where == 2)
			preload_verify_sample(sig, si, uc);
	done:
		preload_cost_end(c0, ic, w ? 1 : 0, 1);
	}
	errno = saved;
	return fwd;
}

/* Entered from preload_sigprof_entry on the stack the kernel delivered
 * on, as if the kernel had called it: the program's disposition of its
 * own SIGPROF. */
void preload_dispatch_forward(int sig, siginfo_t *si, void *uc)
{
	int saved = errno;
	preload_forward(sig, &g_sigprof.prog, si, uc, 0, &g_thread.prog_blocked);
	errno = saved;
}

int preload_sigprof_handled(const struct sigaction *a)
{
	return (a->sa_flags & SA_SIGINFO) || (a->sa_handler != SIG_DFL && a->sa_handler != SIG_IGN);
}

/* The kernel's frame must be on an alternate stack only to interpret
 * (interpreted pushes go below the interrupted stack pointer): otherwise
 * it lies where the kernel would have put the program's own handler's,
 * and that handler is called right there (preload_dispatch_forward).
 * Switching a program's handler back to the thread's stack from the
 * alternate one works, but unwinders that walk across the two stacks
 * (gperftools') crash on it, so it is kept for the interpreting modes. A
 * program's SA_ONSTACK is taken as ours too. */
static int needs_altstack(void)
{
	return g_vprof.cfg.verify || g_vprof.cfg.values;
}

static int install(int restart)
{
	struct sigaction a;
	int onstack = needs_altstack() || (preload_sigprof_handled(&g_sigprof.prog) && (g_sigprof.prog.sa_flags & SA_ONSTACK));
	memset(&a, 0, sizeof(a));
	a.sa_sigaction = preload_sigprof_entry;
	a.sa_flags = SA_SIGINFO | (onstack ? SA_ONSTACK : 0) | (restart ? SA_RESTART : 0);
	async_signals(&a.sa_mask);
	return preload_real_sigaction(UPCALL_SIGNAL, &a, NULL) < 0 ? -errno : 0;
}

/* Our handler restarts interrupted system calls (SA_RESTART), so samples
 * never make a program see EINTR. But a program with its own SIGPROF
 * handler installed without SA_RESTART expects its SIGPROFs to interrupt
 * slow system calls: while it has one, our handler takes its flag. (Its
 * code must cope with EINTR at any SIGPROF already; ours add no new kind.) */
void preload_sigprof_sync_restart(void)
{
	install(!preload_sigprof_handled(&g_sigprof.prog) || (g_sigprof.prog.sa_flags & SA_RESTART));
}

int preload_signals_install(void)
{
	if (preload_real_sigaction(UPCALL_SIGNAL, NULL, &g_sigprof.prog) < 0)
		return -errno;
	int rc = install(!preload_sigprof_handled(&g_sigprof.prog) || (g_sigprof.prog.sa_flags & SA_RESTART));
	if (rc == 0)
		g_sigprof.installed = 1;
	return rc;
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
	if (sig != UPCALL_SIGNAL || !g_sigprof.installed)
		return preload_real_sigaction(sig, act, old);
	struct sigaction prev = g_sigprof.prog;
	if (act) {
		g_sigprof.prog = *act;
		preload_sigprof_sync_restart();
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
