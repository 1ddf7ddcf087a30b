/*
 * seccomp sandboxes. A program may enter one at any point (sshd's
 * privilege-separated child, a browser's renderer, a service that locks
 * itself down): from then on a system call the sandbox does not allow
 * kills the thread (strict mode, kill and trap filters) or fails (errno
 * filters). vprof makes calls after that point on the program's threads:
 * the drains and checks in the handler, a thread's start and end, the exit
 * record, a fork child's spool. Each would kill a program that profiled
 * fine without the sandbox, or leave it silently unsampled.
 *
 * So the ways in are interposed: prctl(PR_SET_SECCOMP) and seccomp(2)
 * through syscall() (libseccomp takes both). Before the sandbox is put in
 * force, the filter the program hands the kernel is run here, a classic
 * BPF interpreter over a seccomp_data for each call vprof may make on that
 * thread (kCalls, with the arguments vprof passes), and:
 *  - if it allows all of them (a deny-list of a few dangerous calls),
 *    sampling goes on, and the threads the thread makes later are armed;
 *  - else (strict mode, an allow-list of the program's own calls) the
 *    thread stops sampling first: its ring drained, its trigger released,
 *    its slot given back, all before the sandbox is in force. What the
 *    filter forbids is kept (a per-thread mask, copied to the threads it
 *    makes and to fork children, as the kernel copies the filter) and
 *    vprof never makes those calls on that thread again: threads it makes
 *    are not armed, its fork children not profiled, its exit record
 *    written with what the sandbox allows.
 * With SECCOMP_FILTER_FLAG_TSYNC the filter binds every thread: all stop
 * (upcall_stop_all releases every trigger of the process from here).
 *
 * A sandbox entered without passing through here (the raw system call
 * instruction: Chromium's sandbox, Go's runtime) is met by a call of
 * vprof's failing with EPERM or ENOSYS where it worked before: that thread
 * stops sampling and makes no call of vprof's again (preload_sandbox_
 * refused). A kill filter met that way kills the thread; no profiler that
 * makes system calls on the program's threads can avoid that. A process
 * exec'd inside a filter probes it in its constructor (below, "a sandbox
 * already in force at start-up").
 *
 * syscall() is interposed here for seccomp(2), and for the ways out that
 * skip destructors: exit_group, and exit in a strict-mode process's only
 * thread (main.c, preload_leave_now).
 *
 * Counters in the spool (live.sandbox_*) make the summary's one line.
 * Concurrency: the mask is the thread's own (initial-exec TLS); the
 * process-wide one (TSYNC) is set once, with atomics. Async-signal-safe
 * except the interposers' stop and undo, which run in the caller's normal
 * context.
 */
#include "preload/preload.h"
#include "preload/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/futex.h>
#include <linux/perf_event.h>
#include <linux/seccomp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define VPROF_STR2(x) #x
#define VPROF_STR(x) VPROF_STR2(x)

long preload_raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6)
{
	long r;
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"(nr), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

/* ---- the calls vprof makes after start-up ----
 * With the arguments it passes where a filter may look at them (pointers
 * and descriptors are placeholders: a filter cannot read through the one,
 * and the number of the other is not known ahead). When: the calls every
 * sampled thread may make (handler, thread start and end, exit record,
 * fork child's spool), those of one backend or mode, those of the
 * constructor only (W_START), and one that only reading the next filter
 * takes (W_EVAL: no reason to stop sampling, but noted). */
enum { W_ALL = 1, W_PERF = 2, W_TIMER = 4, W_ITIMER = 8, W_ALT = 16, W_START = 32, W_EVAL = 64 };
#define P 0x7ffc0000l            /* a pointer */
#define FD 15007l                /* a descriptor, moved high as upcall.c does */
#define SB_P P
#define SB_FD FD
#define SB_CALLS(X)                                                                        \
	X(GETPID, "getpid", SYS_getpid, W_ALL, 0, 0, 0, 0)                                  \
	X(CLOCK_PROCESS, "clock_gettime", SYS_clock_gettime, W_ALL, CLOCK_PROCESS_CPUTIME_ID, P, 0, 0) \
	X(GETRUSAGE, "getrusage", SYS_getrusage, W_ALL, RUSAGE_SELF, P, 0, 0)                \
	X(RT_SIGRETURN, "rt_sigreturn", SYS_rt_sigreturn, W_ALL, 0, 0, 0, 0)                \
	X(SIGMASK_BLOCK, "rt_sigprocmask", SYS_rt_sigprocmask, W_ALL, SIG_BLOCK, P, P, 8)   \
	X(SIGMASK_SET, "rt_sigprocmask", SYS_rt_sigprocmask, W_ALL, SIG_SETMASK, P, 0, 8)   \
	X(SIGMASK_UNBLOCK, "rt_sigprocmask", SYS_rt_sigprocmask, W_ALL, SIG_UNBLOCK, P, 0, 8) \
	X(SIGTIMEDWAIT, "rt_sigtimedwait", SYS_rt_sigtimedwait, W_ALL, P, P, P, 8)          \
	X(SIGACTION, "rt_sigaction", SYS_rt_sigaction, W_ALL, SIGPROF, P, 0, 8)             \
	X(TGKILL, "tgkill", SYS_tgkill, W_ALL, 0, 0, SIGPROF, 0)                            \
	X(GETTID, "gettid", SYS_gettid, W_ALL, 0, 0, 0, 0)                                  \
	X(GETPPID, "getppid", SYS_getppid, W_ALL, 0, 0, 0, 0)                               \
	X(CLOCK_THREAD, "clock_gettime", SYS_clock_gettime, W_ALL, CLOCK_THREAD_CPUTIME_ID, P, 0, 0) \
	X(SCHED_YIELD, "sched_yield", SYS_sched_yield, W_ALL, 0, 0, 0, 0)                   \
	X(MUNMAP, "munmap", SYS_munmap, W_ALL, P, 20480, 0, 0)                              \
	X(CLOSE, "close", SYS_close, W_ALL, FD, 0, 0, 0)                                    \
	X(MMAP_SHARED, "mmap", SYS_mmap, W_ALL, 0, 20480, PROT_READ | PROT_WRITE, MAP_SHARED) \
	X(MMAP_ANON, "mmap", SYS_mmap, W_ALT, 0, 65536, PROT_READ | PROT_WRITE,             \
	  MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK)                                           \
	X(MMAP_VALUES, "mmap", SYS_mmap, W_ALT, 0, 65536, PROT_READ | PROT_WRITE,           \
	  MAP_PRIVATE | MAP_ANONYMOUS)                                                       \
	X(SIGALTSTACK, "sigaltstack", SYS_sigaltstack, W_ALT, P, P, 0, 0)                   \
	X(PERF_OPEN, "perf_event_open", SYS_perf_event_open, W_PERF, P, 0, -1, -1)          \
	X(FCNTL_DUPFD, "fcntl", SYS_fcntl, W_PERF, FD, F_DUPFD_CLOEXEC, 15000, 0)              \
	X(FCNTL_SETSIG, "fcntl", SYS_fcntl, W_PERF, FD, F_SETSIG, SIGPROF, 0)               \
	X(FCNTL_SETOWN, "fcntl", SYS_fcntl, W_PERF, FD, F_SETOWN_EX, P, 0)                  \
	X(FCNTL_SETFL, "fcntl", SYS_fcntl, W_PERF, FD, F_SETFL, O_ASYNC | O_NONBLOCK, 0)    \
	X(IOCTL_ENABLE, "ioctl", SYS_ioctl, W_PERF, FD, PERF_EVENT_IOC_ENABLE, 0, 0)       \
	X(IOCTL_REFRESH, "ioctl", SYS_ioctl, W_PERF, FD, PERF_EVENT_IOC_REFRESH, 1, 0)     \
	X(IOCTL_DISABLE, "ioctl", SYS_ioctl, W_PERF, FD, PERF_EVENT_IOC_DISABLE, 0, 0)     \
	X(PRLIMIT, "prlimit64", SYS_prlimit64, W_PERF, 0, RLIMIT_NOFILE, 0, P)              \
	X(TIMER_CREATE, "timer_create", SYS_timer_create, W_TIMER, CLOCK_THREAD_CPUTIME_ID, P, P, 0) \
	X(TIMER_SETTIME, "timer_settime", SYS_timer_settime, W_TIMER, 0, 0, P, 0)           \
	X(TIMER_DELETE, "timer_delete", SYS_timer_delete, W_TIMER, 0, 0, 0, 0)              \
	X(SETITIMER, "setitimer", SYS_setitimer, W_ITIMER, ITIMER_PROF, P, P, 0)            \
	X(OPEN_SPOOL, "openat", SYS_openat, W_ALL, AT_FDCWD, P,                             \
	  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)                          \
	X(OPEN_PROC, "openat", SYS_openat, W_ALL, AT_FDCWD, P, O_RDONLY | O_CLOEXEC, 0)      \
	X(READ, "read", SYS_read, W_ALL, FD, P, 1023, 0)                                     \
	X(READLINK, "readlink", SYS_readlink, W_ALL, P, P, 255, 0)                          \
	X(UNLINK, "unlink", SYS_unlink, W_ALL, P, 0, 0, 0)                                  \
	X(LINK, "link", SYS_link, W_ALL, P, P, 0, 0)                                        \
	X(FTRUNCATE, "ftruncate", SYS_ftruncate, W_ALL, FD, 2103296, 0, 0)                  \
	X(FALLOCATE, "fallocate", SYS_fallocate, W_ALL, FD, 0, 0, 2103296)                  \
	X(GETDENTS, "getdents64", SYS_getdents64, W_START, FD, P, 4096, 0)                    \
	X(FUTEX, "futex", SYS_futex, W_ALL, P, FUTEX_WAKE_PRIVATE, 1, 0)                    \
	X(MKDIR, "mkdir", SYS_mkdir, W_START, P, 0700, 0, 0)                                \
	X(STAT, "newfstatat", SYS_newfstatat, W_START, AT_FDCWD, P, P, 0)                   \
	X(OPEN_LOCK, "openat", SYS_openat, W_START, AT_FDCWD, P, O_RDWR | O_CREAT | O_CLOEXEC, 0600) \
	X(FLOCK, "flock", SYS_flock, W_START, FD, LOCK_EX, 0, 0)                            \
	X(VM_READ, "process_vm_readv", SYS_process_vm_readv, W_EVAL, 0, P, 1, P)

enum {
#define X(id, name, nr, when, a0, a1, a2, a3) SB_##id,
	SB_CALLS(X)
#undef X
	SB_NCALLS
};
_Static_assert(SB_NCALLS <= 62, "one bit per call, two for the states");
_Static_assert((int)SB_GETPID == (int)PRELOAD_SB_GETPID &&
		       (int)SB_CLOCK_PROCESS == (int)PRELOAD_SB_CLOCK_PROCESS &&
		       (int)SB_GETRUSAGE == (int)PRELOAD_SB_GETRUSAGE,
	       "sandbox.h's calls first, in its order");

static const struct sb_call {
	const char *name;
	int nr;
	int when;
	long a[4];
} kCalls[SB_NCALLS] = {
#define X(id, name, nr, when, a0, a1, a2, a3) { name, nr, when, { a0, a1, a2, a3 } },
	SB_CALLS(X)
#undef X
};

#define SB_REFUSED (1ull << 63)  /* a call refused by a sandbox not seen */
#define SB_STOPPED (1ull << 62)  /* preload_sandbox_state: the thread stopped */
#define SB_ALL ((1ull << SB_NCALLS) - 1)

struct sb_thread {
	uint64_t deny;           /* kCalls bits a sandbox here forbids */
	int stopped;             /* sampling stopped at it */
	int strict;              /* ... strict mode, the process's only thread */
};
static __thread struct sb_thread g_sb PRELOAD_TLS;
static uint64_t g_deny_all;      /* a TSYNC filter's, every thread's */
static uint64_t g_cpu_at_stop;   /* process CPU when the last thread stopped */

static uint64_t g_start_deny;

static uint64_t deny_here(void)
{
	return g_sb.deny | __atomic_load_n(&g_deny_all, __ATOMIC_ACQUIRE);
}

int preload_sandbox_allows(int call)
{
	return !((deny_here() | g_start_deny) & (SB_REFUSED | 1ull << call));
}

int preload_sandbox_stopped(void)
{
	return g_sb.stopped || __atomic_load_n(&g_deny_all, __ATOMIC_ACQUIRE);
}

uint64_t preload_sandbox_state(void)
{
	return deny_here() | (preload_sandbox_stopped() ? SB_STOPPED : 0);
}

void preload_sandbox_inherit(uint64_t state)
{
	g_sb.deny = state & ~SB_STOPPED;
	g_sb.stopped = (state & SB_STOPPED) != 0;
}

/* ---- a seccomp filter, run ----
 * Classic BPF as seccomp accepts it (kernel/seccomp.c, seccomp_check_
 * filter): loads of the seccomp_data words, the ALU, jumps forward, the
 * scratch memory. Anything else, or a load out of bounds, is taken as a
 * filter that forbids the call. Returns the filter's action. */
static uint32_t bpf_run(const struct sock_filter *f, unsigned len, const struct seccomp_data *d)
{
	uint32_t A = 0, X = 0, M[BPF_MEMWORDS] = { 0 };
	const uint8_t *data = (const uint8_t *)d;
	for (unsigned pc = 0; pc < len; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t k = i->k, src = BPF_SRC(i->code) == BPF_X ? X : k;
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			if (k > sizeof(*d) - 4 || k % 4)
				return SECCOMP_RET_KILL_PROCESS;
			memcpy(&A, data + k, 4);
			break;
		case BPF_LD | BPF_W | BPF_LEN: A = sizeof(*d); break;
		case BPF_LDX | BPF_W | BPF_LEN: X = sizeof(*d); break;
		case BPF_LD | BPF_IMM: A = k; break;
		case BPF_LDX | BPF_IMM: X = k; break;
		case BPF_LD | BPF_MEM: A = M[k % BPF_MEMWORDS]; break;
		case BPF_LDX | BPF_MEM: X = M[k % BPF_MEMWORDS]; break;
		case BPF_ST: M[k % BPF_MEMWORDS] = A; break;
		case BPF_STX: M[k % BPF_MEMWORDS] = X; break;
		case BPF_MISC | BPF_TAX: X = A; break;
		case BPF_MISC | BPF_TXA: A = X; break;
		case BPF_ALU | BPF_NEG: A = -A; break;
		case BPF_ALU | BPF_ADD | BPF_K: case BPF_ALU | BPF_ADD | BPF_X: A += src; break;
		case BPF_ALU | BPF_SUB | BPF_K: case BPF_ALU | BPF_SUB | BPF_X: A -= src; break;
		case BPF_ALU | BPF_MUL | BPF_K: case BPF_ALU | BPF_MUL | BPF_X: A *= src; break;
		case BPF_ALU | BPF_DIV | BPF_K: case BPF_ALU | BPF_DIV | BPF_X:
			if (!src)
				return SECCOMP_RET_KILL_THREAD;   /* as the kernel's BPF does */
			A /= src;
			break;
		case BPF_ALU | BPF_AND | BPF_K: case BPF_ALU | BPF_AND | BPF_X: A &= src; break;
		case BPF_ALU | BPF_OR | BPF_K: case BPF_ALU | BPF_OR | BPF_X: A |= src; break;
		case BPF_ALU | BPF_XOR | BPF_K: case BPF_ALU | BPF_XOR | BPF_X: A ^= src; break;
		case BPF_ALU | BPF_LSH | BPF_K: case BPF_ALU | BPF_LSH | BPF_X: A = src < 32 ? A << src : 0; break;
		case BPF_ALU | BPF_RSH | BPF_K: case BPF_ALU | BPF_RSH | BPF_X: A = src < 32 ? A >> src : 0; break;
		case BPF_JMP | BPF_JA: pc += k; break;
		case BPF_JMP | BPF_JEQ | BPF_K: case BPF_JMP | BPF_JEQ | BPF_X:
			pc += A == src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGT | BPF_K: case BPF_JMP | BPF_JGT | BPF_X:
			pc += A > src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K: case BPF_JMP | BPF_JGE | BPF_X:
			pc += A >= src ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K: case BPF_JMP | BPF_JSET | BPF_X:
			pc += (A & src) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K: return k;
		case BPF_RET | BPF_A: return A;
		default:
			return SECCOMP_RET_KILL_PROCESS;
		}
	}
	return SECCOMP_RET_KILL_PROCESS;   /* fell off the end: the kernel refuses it */
}

static int allowed(uint32_t action)
{
	action &= SECCOMP_RET_ACTION_FULL;
	return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
}

/* The calls this process's sampling makes (kCalls' when). */
static int modes(void)
{
	int w = W_ALL;
	switch (g_vprof.backend) {
	case UPCALL_EV_CYCLES:
	case UPCALL_EV_INSTRUCTIONS:
	case UPCALL_EV_TASK_CLOCK:
		w |= W_PERF | W_TIMER;   /* ring drains run on a CPU timer */
		break;
	case UPCALL_EV_CPU_TIMER:
		w |= W_TIMER;
		break;
	case UPCALL_EV_ITIMER:
		w |= W_ITIMER;
		break;
	}
	if (g_vprof.cfg.values || g_vprof.cfg.verify)
		w |= W_ALT;
	return w;
}

/* The program's filter, copied out of its memory by the kernel's rules
 * (a bad pointer is the kernel's EFAULT to give, not our fault to take):
 * process_vm_readv reads it, or reports EFAULT. Where a filter in force
 * forbids process_vm_readv (one found at start-up: the others forbid
 * nothing of kCalls, or the thread stopped and reads nothing), it is read
 * as the kernel would find it, in place. */
static int copy_prog(const struct sock_fprog *up, struct sock_filter *out, unsigned *len)
{
	struct sock_fprog fp;
	int direct = !preload_sandbox_allows(SB_VM_READ) || !preload_sandbox_allows(SB_GETPID);
	struct iovec l = { &fp, sizeof(fp) }, r = { (void *)up, sizeof(fp) };
	pid_t pid = direct ? 0 : (pid_t)preload_raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (direct)
		memcpy(&fp, up, sizeof(fp));
	else if (preload_raw_syscall(SYS_process_vm_readv, pid, (long)&l, 1, (long)&r, 1, 0) != sizeof(fp))
		return -EFAULT;
	if (!fp.len || fp.len > BPF_MAXINSNS)
		return -EINVAL;
	l = (struct iovec){ out, fp.len * sizeof(*out) };
	r = (struct iovec){ fp.filter, fp.len * sizeof(*out) };
	if (direct)
		memcpy(out, fp.filter, fp.len * sizeof(*out));
	else if (preload_raw_syscall(SYS_process_vm_readv, pid, (long)&l, 1, (long)&r, 1, 0) !=
		 (long)(fp.len * sizeof(*out)))
		return -EFAULT;
	*len = fp.len;
	return 0;
}

/* The calls of kCalls that this process's sampling makes. */
static uint64_t needed(void)
{
	uint64_t m = 0;
	int w = modes();
	for (int c = 0; c < SB_NCALLS; c++)
		if (kCalls[c].when & w)
			m |= 1ull << c;
	return m;
}

/* The kCalls of this process's sampling (and W_EVAL) the filter forbids. */
static uint64_t filter_denies(const struct sock_filter *f, unsigned len)
{
	uint64_t deny = 0;
	int w = modes() | W_EVAL;
	for (int c = 0; c < SB_NCALLS; c++) {
		if (!(kCalls[c].when & w))
			continue;
		struct seccomp_data d;
		memset(&d, 0, sizeof(d));
		d.nr = kCalls[c].nr;
		d.arch = AUDIT_ARCH_X86_64;
		d.instruction_pointer = (uint64_t)(uintptr_t)preload_raw_syscall;
		for (int a = 0; a < 4; a++)
			d.args[a] = (uint64_t)kCalls[c].a[a];
		if (c == SB_PERF_OPEN)
			d.args[4] = PERF_FLAG_FD_CLOEXEC;
		if (!allowed(bpf_run(f, len, &d)))
			deny |= 1ull << c;
	}
	return deny;
}

/* Strict mode allows read, write, exit and rt_sigreturn. */
static uint64_t strict_denies(void)
{
	uint64_t deny = 0;
	int w = modes();
	for (int c = 0; c < SB_NCALLS; c++)
		if ((kCalls[c].when & w) && c != SB_RT_SIGRETURN && c != SB_READ)
			deny |= 1ull << c;
	return deny;
}

/* ---- a sandbox already in force at start-up ----
 * A process exec'd inside a filter (a service's SystemCallFilter, a
 * container runtime's profile, bwrap, a sandboxed parent that execs)
 * meets it in our constructor, before anything of ours could see it
 * installed. /proc/self/status says whether there is one ("Seccomp: 2",
 * read with openat, read and close, which the dynamic loader made to get
 * here); what it does to each call is learnt from a child made for the
 * purpose, which makes the calls of kCalls one by one with arguments that
 * fail harmlessly once past the filter (no descriptor, NULL pointers, a
 * signal to no process) and notes each outcome: made, or refused (EPERM,
 * ENOSYS, EACCES); if it dies at one, that one is fatal and a new child
 * goes on after it. rt_sigreturn is made the only way it can be, by a
 * signal to itself with a handler. The child is posix_spawn's kind
 * (CLONE_VM | CLONE_VFORK, on a stack of its own, no exit signal): it
 * writes its notes into our memory, we wait for it by being suspended,
 * and the program gets no SIGCHLD; it is reaped if the filter allows
 * wait4, else left a zombie until the process exits. Its core dumps are
 * off (RLIMIT_CORE 0), but the kernel may log each kill (audit). A filter
 * that kills on that clone would kill the program here. */
enum { PR_NONE, PR_MADE, PR_REFUSED };

static uint8_t g_probe[SB_NCALLS + 1];  /* + wait4 */
static int g_probe_from;
static uint8_t g_probe_stack[32768] __attribute__((aligned(16)));

static void probe_handler(int sig, siginfo_t *si, void *uc)
{
}

void vprof_probe_restorer(void);
__asm__(".text\n"
	".type vprof_probe_restorer, @function\n"
	"vprof_probe_restorer:\n"
	"	mov $" VPROF_STR(SYS_rt_sigreturn) ", %rax\n"
	"	syscall\n"
	"	hlt\n"
	".size vprof_probe_restorer, .-vprof_probe_restorer\n");

static long probe_arg(long a)
{
	return a == SB_P ? 0 : a == SB_FD ? -1 : a;
}

static int refusal(long r)
{
	return r == -EPERM || r == -ENOSYS || r == -EACCES;
}

/* In the child, on g_probe_stack; never returns. */
__attribute__((used, noinline, visibility("hidden"))) void preload_probe_child(void)
{
	/* A call the filter kills on dumps core: not of the program's memory
	 * into its directory (prlimit64 is a call glibc makes at start-up). */
	struct rlimit none = { 0, 0 };
	preload_raw_syscall(SYS_prlimit64, 0, RLIMIT_CORE, (long)&none, 0, 0, 0);
	for (int c = g_probe_from; c < SB_NCALLS; c++) {
		if (c == SB_RT_SIGRETURN)
			continue;            /* below, last */
		const long *a = kCalls[c].a;
		long a1 = probe_arg(a[1]), a4 = 0;
		/* The child shares our address space: mmap and munmap of no
		 * length (EINVAL), and a file mapping of no descriptor. */
		if (kCalls[c].nr == SYS_mmap || kCalls[c].nr == SYS_munmap) {
			a1 = 0;
			a4 = -1;
		}
		long r = preload_raw_syscall(kCalls[c].nr, probe_arg(a[0]), a1, probe_arg(a[2]),
					     probe_arg(a[3]), a4, 0);
		__atomic_store_n(&g_probe[c], refusal(r) ? PR_REFUSED : PR_MADE, __ATOMIC_RELEASE);
	}
	long r = preload_raw_syscall(SYS_wait4, -1, 0, WNOHANG | __WALL, 0, 0, 0);
	__atomic_store_n(&g_probe[SB_NCALLS], refusal(r) ? PR_REFUSED : PR_MADE, __ATOMIC_RELEASE);
	if (g_probe[SB_RT_SIGRETURN] == PR_NONE) {
		struct {
			void *handler;
			unsigned long flags;
			void *restorer;
			uint64_t mask;
		} ka = { (void *)probe_handler, SA_SIGINFO | 0x04000000 /* SA_RESTORER */,
			 (void *)vprof_probe_restorer, 0 };
		uint64_t unblock = 1ull << (UPCALL_SIGNAL - 1);
		long pid = preload_raw_syscall(SYS_getpid, 0, 0, 0, 0, 0, 0);
		if (preload_raw_syscall(SYS_rt_sigaction, UPCALL_SIGNAL, (long)&ka, 0, 8, 0, 0) == 0 &&
		    preload_raw_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&unblock, 0, 8, 0, 0) == 0 &&
		    preload_raw_syscall(SYS_tgkill, pid, pid, UPCALL_SIGNAL, 0, 0, 0) == 0)
			__atomic_store_n(&g_probe[SB_RT_SIGRETURN], PR_MADE, __ATOMIC_RELEASE);
	}
	for (;;)
		preload_raw_syscall(SYS_exit_group, 0, 0, 0, 0, 0, 0);
}

/* clone(CLONE_VM | CLONE_VFORK) onto g_probe_stack: returns in the parent
 * once the child has exited (or died), with its pid or -errno. */
static long probe_clone(void)
{
	long r;
	register long r10 __asm__("r10") = 0;
	register long r8 __asm__("r8") = 0;
	__asm__ volatile("syscall\n"
			 "	test %%rax, %%rax\n"
			 "	jnz 1f\n"
			 "	xor %%ebp, %%ebp\n"
			 "	call preload_probe_child\n"
			 "	hlt\n"
			 "1:\n"
			 : "=a"(r)
			 : "a"((long)SYS_clone), "D"((long)(CLONE_VM | CLONE_VFORK)),
			   "S"(g_probe_stack + sizeof(g_probe_stack)), "d"(0l), "r"(r10), "r"(r8)
			 : "rcx", "r11", "memory");
	return r;
}

static int in_filter_at_start(void)
{
	char st[4096];
	int fd = (int)preload_raw_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/status",
					  O_RDONLY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return 0;
	long n = preload_raw_syscall(SYS_read, fd, (long)st, sizeof(st) - 1, 0, 0, 0);
	preload_raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
	if (n <= 0)
		return 0;
	st[n] = 0;
	const char *p = strstr(st, "\nSeccomp:");
	return p && strtol(p + 9, NULL, 10) != 0;
}

/* The calls of kCalls the filter in force forbids (each probed), 0 if
 * there is none. */
static uint64_t probe_start(void)
{
	uint64_t deny = 0;
	long pids[SB_NCALLS + 1];
	int npids = 0;
	if (!in_filter_at_start())
		return 0;
	memset(g_probe, PR_NONE, sizeof(g_probe));
	for (g_probe_from = 0; g_probe_from < SB_NCALLS;) {
		long pid = probe_clone();
		if (pid < 0)
			return SB_ALL;
		pids[npids++] = pid;
		/* The first call not reached is the one it died at (the signal
		 * goes last, whatever its index). */
		int at = -1;
		for (int c = g_probe_from; c < SB_NCALLS && at < 0; c++)
			if (c != SB_RT_SIGRETURN && g_probe[c] == PR_NONE)
				at = c;
		if (at < 0) {
			if (g_probe[SB_RT_SIGRETURN] == PR_NONE)
				deny |= 1ull << SB_RT_SIGRETURN;
			break;
		}
		deny |= 1ull << at;
		g_probe_from = at + 1;
	}
	for (int c = 0; c < SB_NCALLS; c++)
		if (g_probe[c] == PR_REFUSED)
			deny |= 1ull << c;
	if (g_probe[SB_NCALLS] == PR_MADE)
		for (int i = 0; i < npids; i++)
			preload_raw_syscall(SYS_wait4, pids[i], 0, __WALL, 0, 0, 0);
	return deny;
}

/* The filter found at start-up: its forbidden kCalls (every thread). */
/* Constructor: before the backend is chosen. A filter in force that
 * forbids perf_event_open leaves the perf backends out (upcall_choose
 * would make the call); -1 (and why) if it forbids what every backend
 * needs. */
int preload_sandbox_start(int *no_perf, char *why, size_t whylen)
{
	uint64_t deny = probe_start();
	*no_perf = (deny >> SB_PERF_OPEN) & 1;
	g_start_deny = deny;
	if (!deny)
		return 0;
	uint64_t core = 0;
	for (int c = 0; c < SB_NCALLS; c++)
		if (kCalls[c].when & (W_ALL | W_START))
			core |= 1ull << c;
	uint64_t triggers = 1ull << SB_TIMER_CREATE | 1ull << SB_SETITIMER;
	if (!(deny & core) && (!*no_perf || (~deny & triggers)))
		return 0;
	for (int c = 0; c < SB_NCALLS; c++)
		if ((deny >> c & 1) && (kCalls[c].when & (W_ALL | W_START))) {
			snprintf(why, whylen, "this process runs inside a seccomp filter that forbids %s",
				 kCalls[c].name);
			return -1;
		}
	snprintf(why, whylen, "this process runs inside a seccomp filter that forbids every trigger");
	return -1;
}

/* Constructor, once the backend is chosen: 0, or -1 with why if the
 * filter forbids a call of its mode. */
int preload_sandbox_check_mode(char *why, size_t whylen)
{
	int w = modes();
	for (int c = 0; c < SB_NCALLS; c++)
		if ((g_start_deny >> c & 1) && (kCalls[c].when & w)) {
			snprintf(why, whylen, "this process runs inside a seccomp filter that forbids %s, "
				 "which sampling with %s needs", kCalls[c].name,
				 upcall_event_name((unsigned)g_vprof.backend));
			return -1;
		}
	return 0;
}

/* ---- stopping a thread ---- */

/* Add by to the live counter at off in the current spool. */
static void count(size_t off, int64_t by)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	__atomic_fetch_add((uint64_t *)((char *)&sp->hdr->live + off), (uint64_t)by, __ATOMIC_RELAXED);
	preload_spool_exit(sp, prev);
}
#define LIVE(field) offsetof(struct spool_live, field)

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;
	if (preload_raw_syscall(SYS_clock_gettime, CLOCK_PROCESS_CPUTIME_ID, (long)&ts, 0, 0, 0, 0) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The process's threads other than this one: how many, and how many of
 * them have a SIGPROF pending (/proc/self/task/TID/status, SigPnd). */
static void other_threads(int *n, int *pending)
{
	char buf[1024], path[64], st[2048];
	long self = preload_raw_syscall(SYS_gettid, 0, 0, 0, 0, 0, 0), got;
	*n = *pending = 0;
	int fd = (int)preload_raw_syscall(SYS_openat, AT_FDCWD, (long)"/proc/self/task",
					  O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, 0, 0);
	if (fd < 0)
		return;
	while ((got = preload_raw_syscall(SYS_getdents64, fd, (long)buf, sizeof(buf), 0, 0, 0)) > 0)
		for (long off = 0; off < got;) {
			const char *name = buf + off + 19;   /* struct linux_dirent64's d_name */
			unsigned short reclen;
			memcpy(&reclen, buf + off + 16, 2);
			off += reclen;
			if (name[0] == '.' || strtol(name, NULL, 10) == self)
				continue;
			(*n)++;
			snprintf(path, sizeof(path), "/proc/self/task/%s/status", name);
			int sf = (int)preload_raw_syscall(SYS_openat, AT_FDCWD, (long)path,
							  O_RDONLY | O_CLOEXEC, 0, 0, 0);
			long r = sf < 0 ? -1 : preload_raw_syscall(SYS_read, sf, (long)st, sizeof(st) - 1, 0, 0, 0);
			if (sf >= 0)
				preload_raw_syscall(SYS_close, sf, 0, 0, 0, 0, 0);
			if (r <= 0)
				continue;
			st[r] = 0;
			const char *p = strstr(st, "SigPnd:");
			if (p && (strtoull(p + 7, NULL, 16) >> (UPCALL_SIGNAL - 1) & 1))
				(*pending)++;
		}
	preload_raw_syscall(SYS_close, fd, 0, 0, 0, 0, 0);
}

static void nap_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000 };
	preload_raw_syscall(SYS_nanosleep, (long)&ts, 0, 0, 0, 0, 0);
}

/* Threads inside the pthread_create trampoline's arming (a TSYNC sandbox
 * waits for them: their calls would come after it). */
static int g_arming;

void preload_sandbox_thread_begin(uint64_t state)
{
	__atomic_fetch_add(&g_arming, 1, __ATOMIC_SEQ_CST);
	preload_sandbox_inherit(state);
	if (preload_sandbox_stopped())
		preload_sandbox_unarmed();   /* made inside a sandbox that forbids sampling */
	else
		preload_thread_begin();
	__atomic_fetch_sub(&g_arming, 1, __ATOMIC_SEQ_CST);
}

struct undo {
	struct sb_thread saved;
	int stopped_here;        /* this call stopped the thread */
	int all;                 /* ... and every other (TSYNC) */
	int others;              /* ... that many */
};

/* Before a sandbox that denies `deny` goes in force on this thread (all:
 * on every thread). Normal context: the program's call to prctl or
 * seccomp, which the kernel has not seen yet. */
static void enter(uint64_t deny, int strict, int all, struct undo *u)
{
	u->saved = g_sb;
	u->stopped_here = u->all = 0;
	if (!g_vprof.active || !(deny & needed()) || preload_sandbox_stopped()) {
		g_sb.deny |= deny;
		return;
	}
	int n = 0, pending = 0;
	if (strict)
		other_threads(&n, &pending);
	int single = strict && n == 0;
	preload_thread_end();    /* drain, disarm, give the slot back */
	if (g_vprof.backend == UPCALL_EV_ITIMER) {
		/* The process's timer may pick this thread: it must not run our
		 * handler any more (masks.c keeps SIGPROF blocked here). */
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, UPCALL_SIGNAL);
		preload_raw_syscall(SYS_rt_sigprocmask, SIG_BLOCK, (long)&s, 0, sizeof(long), 0, 0);
	}
	int others = 0;
	if (all) {
		/* New threads and every handler see it from now on; a thread
		 * being armed now is let finish, then every trigger goes. */
		__atomic_store_n(&g_deny_all, deny, __ATOMIC_SEQ_CST);
		for (int i = 0; i < 1000 && __atomic_load_n(&g_arming, __ATOMIC_SEQ_CST); i++)
			nap_ms(1);
		others = upcall_stop_all(g_vprof.backend);
		if (g_vprof.backend == UPCALL_EV_ITIMER)   /* the process's timer sampled them all */
			other_threads(&others, &pending);
		preload_fd_close_all_ours();
		u->all = 1;
		/* A sample already signalled to another thread would return
		 * through rt_sigreturn: if the sandbox kills on it, wait (a
		 * little) for those to be taken. */
		for (int i = 0; i < 100 && (deny & 1ull << SB_RT_SIGRETURN); i++) {
			other_threads(&n, &pending);
			if (!pending)
				break;
			nap_ms(1);
		}
	}
	__atomic_store_n(&g_cpu_at_stop, process_cpu_ns(), __ATOMIC_RELAXED);
	count(LIVE(sandbox_stopped), 1 + others);
	u->others = others;
	g_sb.deny |= deny;
	g_sb.stopped = 1;
	g_sb.strict = single;
	u->stopped_here = 1;
}

/* The kernel refused the sandbox (EINVAL, EACCES without no_new_privs,
 * EFAULT): nothing changed for the program, so sampling resumes. Every
 * other thread of a TSYNC call stays stopped: their triggers are gone. */
static void undo(const struct undo *u)
{
	if (!u->stopped_here) {
		g_sb = u->saved;
		return;
	}
	g_sb = u->saved;
	if (u->all)
		return;          /* the others' triggers are gone: they stay counted */
	count(LIVE(sandbox_stopped), -1);
	if (g_vprof.backend == UPCALL_EV_ITIMER) {
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, UPCALL_SIGNAL);
		preload_raw_syscall(SYS_rt_sigprocmask, SIG_UNBLOCK, (long)&s, 0, sizeof(long), 0, 0);
	}
	preload_thread_begin();
}

/* The filter being run: one at a time (normal context, a few
 * microseconds; two threads entering sandboxes at once take turns). */
static struct sock_filter g_prog[BPF_MAXINSNS];
static int g_prog_lock;

/* The spool's pages are reserved as they are first written, by madvise
 * (spool_room), a call a sandbox may well forbid: all of them now,
 * while the calls are still free, so that sampling under the sandbox
 * makes none. A disk too full for it stops the writer, counted, as a
 * refused page would. */
static void reserve_spool(void)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	spool_reserve_all(sp);
	preload_spool_exit(sp, prev);
}

/* seccomp(op, flags, prog), or prctl(PR_SET_SECCOMP, mode, prog) as
 * nr = SYS_prctl, a1 = PR_SET_SECCOMP, a2 = mode, a3 = prog. */
static long sandbox_call(long nr, long a1, long a2, long a3, long a4, long a5)
{
	unsigned op = nr == SYS_seccomp ? (unsigned)a1
		      : a2 == SECCOMP_MODE_STRICT ? SECCOMP_SET_MODE_STRICT
		      : a2 == SECCOMP_MODE_FILTER ? SECCOMP_SET_MODE_FILTER
		      : ~0u;
	unsigned long flags = nr == SYS_seccomp ? (unsigned long)a2 : 0;
	struct undo u = { .stopped_here = 0 };
	int entering = 0;
	if (op == SECCOMP_SET_MODE_STRICT || op == SECCOMP_SET_MODE_FILTER)
		reserve_spool();
	if (op == SECCOMP_SET_MODE_STRICT) {
		enter(strict_denies(), 1, 0, &u);
		entering = 1;
	} else if (op == SECCOMP_SET_MODE_FILTER && !preload_sandbox_stopped()) {
		unsigned len = 0;
		uint64_t deny = 0;   /* a filter that cannot be read: the kernel refuses it too */
		while (__atomic_exchange_n(&g_prog_lock, 1, __ATOMIC_ACQUIRE))
			preload_raw_syscall(SYS_sched_yield, 0, 0, 0, 0, 0, 0);
		if (copy_prog((const struct sock_fprog *)a3, g_prog, &len) == 0)
			deny = filter_denies(g_prog, len);
		__atomic_store_n(&g_prog_lock, 0, __ATOMIC_RELEASE);
		enter(deny, 0, (flags & SECCOMP_FILTER_FLAG_TSYNC) != 0, &u);
		entering = 1;
	}
	long r = preload_raw_syscall(nr, a1, a2, a3, a4, a5, 0);
	if (entering && r < 0)
		undo(&u);
	return r;
}

/* ---- what a sandbox refused ---- */

void preload_sandbox_refused(int err)
{
	if (err != -EPERM && err != -ENOSYS && err != -EACCES)
		return;
	if (g_sb.stopped)
		return;
	g_sb.deny |= SB_REFUSED;
	g_sb.stopped = 1;
	g_thread.up.frozen = 1;      /* upcall makes no call for it either */
	count(LIVE(sandbox_refused), 1);
}

void preload_sandbox_unarmed(void)
{
	count(LIVE(sandbox_unarmed), 1);
}

int preload_sandbox_fork_child(void)
{
	if (!preload_sandbox_stopped())
		return 0;
	uint64_t deny = deny_here();
	if (!(deny & (SB_REFUSED | 1ull << SB_CLOSE)))
		preload_fd_close_all_ours();
	if (!(deny & (SB_REFUSED | 1ull << SB_MUNMAP)))
		upcall_forget_all();
	return 1;
}

void preload_sandbox_leave(void)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	struct spool_live *live = &sp->hdr->live;
	/* The CPU sampled: up to the stop if the sandbox hides the clock. */
	uint64_t cpu = preload_sandbox_allows(SB_CLOCK_PROCESS) ? process_cpu_ns() : 0;
	live->cpu_ns = cpu ? cpu : __atomic_load_n(&g_cpu_at_stop, __ATOMIC_RELAXED);
	__atomic_store_n(&live->exited, SPOOL_EXITED_NORMAL, __ATOMIC_RELEASE);
	preload_spool_exit(sp, prev);
}

/* ---- interposers ---- */

/* syscall(): the calls that concern us go to syscall_slow; every other
 * is glibc's own sequence, to the instruction, so that what a program
 * does with it (a raw clone onto a new stack returns with nothing of a C
 * frame left to need) stays as it was. */
__attribute__((used, visibility("hidden"))) long preload_syscall_slow(long nr, ...);
__attribute__((used, visibility("hidden"))) long preload_syscall_fail(long r);

__asm__(".text\n"
	".globl syscall\n"
	".type syscall, @function\n"
	"syscall:\n"
	"	cmp $" VPROF_STR(SYS_seccomp) ", %rdi\n"
	"	je 1f\n"
	"	cmp $" VPROF_STR(SYS_prctl) ", %rdi\n"
	"	je 1f\n"
	"	cmp $" VPROF_STR(SYS_exit_group) ", %rdi\n"
	"	je 1f\n"
	"	cmp $" VPROF_STR(SYS_exit) ", %rdi\n"
	"	je 1f\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov %rdx, %rsi\n"
	"	mov %rcx, %rdx\n"
	"	mov %r8, %r10\n"
	"	mov %r9, %r8\n"
	"	mov 8(%rsp), %r9\n"
	"	syscall\n"
	"	cmp $-4095, %rax\n"
	"	jae 2f\n"
	"	ret\n"
	"1:	jmp preload_syscall_slow\n"
	"2:	mov %rax, %rdi\n"
	"	jmp preload_syscall_fail\n"
	".size syscall, .-syscall\n");

long preload_syscall_fail(long r)
{
	errno = (int)-r;
	return -1;
}

long preload_syscall_slow(long nr, ...)
{
	va_list ap;
	long a[6];
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	long r;
	if (nr == SYS_seccomp || (nr == SYS_prctl && (int)a[0] == PR_SET_SECCOMP)) {
		r = sandbox_call(nr, a[0], a[1], a[2], a[3], a[4]);
	} else {
		if (nr == SYS_exit_group || (nr == SYS_exit && g_sb.strict))
			preload_leave_now();   /* main.c: the process leaves */
		r = preload_raw_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	}
	return (unsigned long)r > -4096ul ? preload_syscall_fail(r) : r;
}

__attribute__((visibility("default")))
int prctl(int option, ...)
{
	va_list ap;
	unsigned long a[4];
	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	long r = option == PR_SET_SECCOMP
			 ? sandbox_call(SYS_prctl, option, (long)a[0], (long)a[1], (long)a[2], (long)a[3])
			 : preload_raw_syscall(SYS_prctl, option, (long)a[0], (long)a[1], (long)a[2],
					       (long)a[3], 0);
	if ((unsigned long)r > -4096ul) {
		errno = (int)-r;
		return -1;
	}
	return (int)r;
}
