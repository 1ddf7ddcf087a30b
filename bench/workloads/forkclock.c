/*
 * bench/workloads/forkclock.c — windows of fixed native time, counted
 * exactly by replaying a copy-on-write snapshot (bench/fixed_time.sh).
 *
 * An LD_PRELOAD library for single-threaded programs. At random points
 * of the thread's CPU time (a CLOCK_THREAD_CPUTIME_ID timer, gaps drawn
 * uniformly from 0.5..1.5 x FORKCLOCK_GAP_US, default 10000), its
 * handler forks a snapshot of the process (a raw clone with no exit
 * signal: no SIGCHLD, invisible to the program's wait()) and arms a
 * second CPU timer FORKCLOCK_DELTA_US later (default 200). The program
 * runs on natively; at the second signal the handler hands the
 * interrupted registers to the snapshot through a shared page. The
 * snapshot holds the memory as it was at the first signal, so it replays
 * the stretch exactly with vprof's interpreter, from the first signal's
 * registers until all sixteen general registers, RIP and the arithmetic
 * flags equal the second's, and counts every instruction by PC. A
 * stretch that reaches a system call, an instruction the interpreter
 * lacks, or FORKCLOCK_MAXN instructions (default 8,000,000) without
 * that match is written as unmatched.
 *
 * Each window is one record in FORKCLOCK_OUT (binary, appended; read by
 * bench/fixed_time.py): its thread CPU time between the two signals, the
 * minor faults the program took in it (copy-on-write of pages the
 * snapshot still shares), whether it matched, its instruction count, and
 * per PC the executions in the whole stretch and in its first
 * FORKCLOCK_FIRST instructions (default 4096: what a window of fixed
 * length, vprof's today, would have counted from the same start), and
 * the executable's load address.
 *
 * Measurement only: not async-signal-safe everywhere a product would
 * need (the snapshot is forked from inside the handler), single-threaded
 * programs only.
 */
#define _GNU_SOURCE
#include "clockwin.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <link.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TAB_BITS 16
#define TAB_SIZE (1u << TAB_BITS)

struct ctl {
	volatile int state;     /* 0 waiting, 1 target ready, 2 parent gone */
	int pad;
	uint64_t gpr[16], rip, rflags;
	uint64_t dt_ns;
	int64_t faults;
};

static struct ctl *ctl;
static int out_fd = -1;
static int armed;
static long gap_us = 10000, delta_us = 200, maxn = 8000000, first_n = 4096;
static pid_t child;
static uint64_t rng = 88172645463325252ull;
static uint64_t t0_ns, exe_load;
static int64_t faults0;

static int64_t minflt(void)
{
	struct rusage ru;
	if (getrusage(RUSAGE_THREAD, &ru) < 0)
		return -1;
	return ru.ru_minflt;
}

static long next_gap(void)
{
	return clockwin_gap(&rng, gap_us);
}

static const int greg_of[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI,
				REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13,
				REG_R14, REG_R15};

/* ---- the snapshot's side ---- */

struct replay {
	struct ent *tab;
	uint32_t nent;
	uint64_t n;
	int matched;
};

static int at_target(const struct interp_state *st)
{
	if (st->rip != ctl->rip || ((st->rflags ^ ctl->rflags) & 0x8d5))
		return 0;
	for (int i = 0; i < 16; i++)
		if (st->gpr[i] != ctl->gpr[i])
			return 0;
	return 1;
}

static int observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	struct replay *rp = arg;
	uint64_t pc = r->insn->pc;
	uint32_t h = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> (64 - TAB_BITS));
	for (;;) {
		struct ent *e = &rp->tab[h];
		if (e->pc == pc || e->pc == 0) {
			if (!e->pc) {
				e->pc = pc;
				rp->nent++;
			}
			e->all++;
			if (rp->n < (uint64_t)first_n)
				e->first++;
			break;
		}
		h = (h + 1) & (TAB_SIZE - 1);
		if (rp->nent >= TAB_SIZE - 1)
			return 1;
	}
	rp->n++;
	if (at_target(st)) {
		rp->matched = 1;
		return 1;
	}
	return rp->n >= (uint64_t)maxn;
}

static void on_fault(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)si;
	if (interp_fault_fixup(uc))
		return;
	_exit(3);
}

static void snapshot(ucontext_t *uc)
{
	sigset_t all;
	sigfillset(&all);
	sigdelset(&all, SIGSEGV);
	sigdelset(&all, SIGBUS);
	sigprocmask(SIG_SETMASK, &all, NULL);
	struct sigaction sa = {0};
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	/* the parent's timers are not the snapshot's; wait for its target */
	for (long spins = 0; ctl->state == 0; spins++) {
		struct timespec ts = {0, 20000};
		nanosleep(&ts, NULL);
		if (spins > 500000 || getppid() == 1)
			_exit(0);
	}
	if (ctl->state != 1)
		_exit(0);
	size_t tsz = interp_thread_size();
	struct interp_thread *th = mmap(NULL, tsz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct ent *tab = mmap(NULL, TAB_SIZE * sizeof(struct ent), PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static struct interp_state st __attribute__((aligned(64)));
	if (th == MAP_FAILED || tab == MAP_FAILED || interp_from_ucontext(&st, uc) < 0)
		_exit(0);
	interp_thread_init(th);
	struct replay rp = {.tab = tab};
	struct interp_observer obs = {.insn = observe, .arg = &rp};
	struct interp_result res = {0};
	uint32_t stop = 0;
	while (!rp.matched && rp.n < (uint64_t)maxn) {
		interp_run(&st, th, 1 << 20, &obs, &res);
		if (res.stop != INTERP_STOP_LIMIT) {
			stop = (uint32_t)res.stop;
			break;
		}
	}
	struct rec_hdr h = {.magic = CLOCKWIN_MAGIC, .matched = (uint32_t)rp.matched, .n = rp.n,
			    .dt_ns = ctl->dt_ns, .faults = ctl->faults, .stop = stop,
			    .base = exe_load};
	struct ent *packed = tab;
	uint32_t k = 0;
	for (uint32_t i = 0; i < TAB_SIZE; i++)
		if (tab[i].pc)
			packed[k++] = tab[i];
	h.nent = k;
	/* one write for the record, so records of snapshots never interleave */
	size_t bytes = sizeof h + (size_t)k * sizeof(struct ent);
	uint8_t *buf = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf != MAP_FAILED) {
		memcpy(buf, &h, sizeof h);
		memcpy(buf + sizeof h, packed, (size_t)k * sizeof(struct ent));
		ssize_t w = write(out_fd, buf, bytes);
		(void)w;
	}
	syscall(SYS_exit_group, 0);
}

/* ---- the program's side ---- */

static void on_start(void *ucv)
{
	int saved = errno;
	if (child > 0) {
		int s;
		pid_t r = waitpid(child, &s, WNOHANG | __WCLONE);
		if (r == 0) {   /* the last snapshot still replays: skip this one */
			clockwin_arm(next_gap());
			errno = saved;
			return;
		}
		child = 0;
	}
	ctl->state = 0;
	pid_t p = (pid_t)syscall(SYS_clone, 0UL, NULL, NULL, NULL, 0UL);
	if (p == 0)
		snapshot(ucv);
	if (p > 0) {
		child = p;
		faults0 = minflt();
		armed = 1;
		clockwin_arm(delta_us);
		t0_ns = clockwin_cpu_ns();
	} else {
		clockwin_arm(next_gap());
	}
	errno = saved;
}

static void on_end(void *ucv, uint64_t t1)
{
	int saved = errno;
	ucontext_t *uc = ucv;
	for (int i = 0; i < 16; i++)
		ctl->gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of[i]];
	ctl->rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	ctl->rflags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
	ctl->dt_ns = t1 - t0_ns;
	int64_t f = minflt();
	ctl->faults = f - faults0;
	__atomic_store_n(&ctl->state, 1, __ATOMIC_RELEASE);
	armed = 0;
	clockwin_arm(next_gap());
	errno = saved;
}

static void on_clock(int sig, siginfo_t *si, void *ucv)
{
	uint64_t t1 = clockwin_cpu_ns();
	(void)sig;
	(void)si;
	if (armed)
		on_end(ucv, t1);
	else
		on_start(ucv);
}

__attribute__((constructor)) static void forkclock_init(void)
{
	if ((out_fd = clockwin_setup("FORKCLOCK", &gap_us, &delta_us, &maxn, &first_n, &rng)) < 0)
		return;
	ctl = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ctl == MAP_FAILED)
		return;
	clockwin_start(on_clock, next_gap(), &exe_load);
}
