/*
 * Call stacks at each sample (VPROF_STACKS, `vprof run --stacks`).
 *
 * In the SIGPROF handler, after the PC is counted, the interrupted thread's
 * stack is unwound from the signal's ucontext, up to VPROF_STACK_DEPTH
 * frames (sampled PC first, then return addresses), and counted in the
 * spool's STACKS table (merge/stacks.c). The unwinders:
 *
 *   cfi (default)     vprof's own DWARF CFI unwinder (preload/unwind.c)
 *                     from the ucontext: .eh_frame through glibc's
 *                     lock-free _dl_find_object, every stack read checked
 *                     against the thread's stack, no malloc, no locks, no
 *                     system calls, no descriptor; through a program's own
 *                     signal handlers (the kernel's sigreturn frame).
 *                     libunwind is not loaded.
 *   unwind            libunwind's unw_backtrace() from the handler, through
 *                     the kernel's signal frame (its fast path, a per-thread
 *                     cache of frame descriptions built from .eh_frame):
 *                     right through Debian's libraries and programs, built
 *                     without frame pointers. libunwind documents its local
 *                     unwinding as async-signal-safe; it is warmed in the
 *                     constructor (tables, its thread key), and a thread's
 *                     cache is mmap'd by libunwind at its first sample.
 *   cursor            libunwind's cursor from the ucontext (unw_init_local2
 *                     with UNW_INIT_SIGNAL_FRAME, unw_step): the fallback of
 *                     `unwind`, and slow here (BENCHMARKS.md: its global
 *                     cache lock costs two sigprocmask calls a frame).
 *   fp                the frame-pointer chain from rbp: cheap, right only
 *                     for code built with -fno-omit-frame-pointer. Every
 *                     read is checked first against the thread's stack,
 *                     [interrupted rsp, top), the top being __libc_stack_end
 *                     for the main thread and the thread descriptor
 *                     (glibc puts it at the top of a thread's stack) for
 *                     others: a chain that leaves it stops, nothing faults.
 *
 * Ring mode is not used with stacks: the kernel's PERF_SAMPLE_CALLCHAIN
 * walks frame pointers too (wrong for Debian's code), and unwinding copies
 * of the user stack (PERF_SAMPLE_STACK_USER) at drain time costs a copy of
 * kilobytes per sample (BENCHMARKS.md, "Call stacks").
 *
 * Handler rules: no malloc, no locks of ours, no stdio; state is TLS
 * (initial-exec) and the stack arrays live on the handler's stack.
 */
#include "preload/preload.h"
#include "preload/unwind.h"

#define UNW_LOCAL_ONLY
#include <libunwind.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

/* libunwind is dlopen'ed RTLD_LOCAL, and only with stacks on: linked in,
 * its _Unwind_* exports (it has a whole libgcc_s-compatible set) would
 * sit in every profiled program's global scope, before libgcc_s when the
 * program reaches libgcc_s only through libstdc++, and take over its C++
 * exceptions. Local, nothing of the program binds to it. */
static struct {
	int (*init_local2)(unw_cursor_t *, unw_context_t *, int);
	int (*step)(unw_cursor_t *);
	int (*get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
	int (*set_caching_policy)(unw_addr_space_t, unw_caching_policy_t);
	int (*getcontext)(unw_context_t *);
	int (*backtrace)(void **, int);
	unw_addr_space_t *local_as;
} U;

/* libunwind checks addresses it reads by writing a byte of them to a pipe
 * of its own (write_validate: a bad address fails with EFAULT), opened at
 * its first use and again whenever reading it fails. Those two descriptors
 * would be the lowest free numbers, in the program's way (it lists them,
 * closes them, reuses the numbers, and libunwind would then read a byte
 * from the program's file). So pipe2() and pipe() called from libunwind's
 * code get their descriptors moved to the top quarter of RLIMIT_NOFILE and
 * marked ours (preload/fds.c: the program's close() and closefrom() pass
 * them over), as the perf event that could not be mapped. A fork child
 * closes ours (main.c); libunwind then opens a new pipe, moved again.
 * Async-signal-safe: system calls only. */
static uintptr_t g_unw_lo, g_unw_hi;   /* libunwind's loaded segments */

static int find_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t base = (uintptr_t)arg, lo = UINTPTR_MAX, hi = 0;
	if (info->dlpi_addr != base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		if (info->dlpi_addr + ph->p_vaddr < lo)
			lo = info->dlpi_addr + ph->p_vaddr;
		if (info->dlpi_addr + ph->p_vaddr + ph->p_memsz > hi)
			hi = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	g_unw_lo = lo;
	g_unw_hi = hi;
	return 1;
}

static int move_high(int fd)
{
	struct rlimit rl;
	int floor = 256;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 512)
		floor = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 65536 - 1024
				? 65536 - 2048
				: (int)(rl.rlim_cur - rl.rlim_cur / 4);
	int hi = (int)syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, floor);
	if (hi < 0)
		return fd;
	upcall_fd_close(fd);
	preload_fd_own(hi);
	return hi;
}

static __thread int t_loading PRELOAD_TLS;   /* in our dlopen and warm-up of it */

static int from_libunwind(uintptr_t ra)
{
	return t_loading || (ra >= g_unw_lo && ra < g_unw_hi);
}

__attribute__((visibility("default"))) int pipe2(int fd[2], int flags)
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int rc = (int)syscall(SYS_pipe2, fd, flags);
	if (rc == 0 && from_libunwind(ra)) {
		fd[0] = move_high(fd[0]);
		fd[1] = move_high(fd[1]);
	}
	return rc;
}

__attribute__((visibility("default"))) int pipe(int fd[2])
{
	uintptr_t ra = (uintptr_t)__builtin_return_address(0);
	int rc = (int)syscall(SYS_pipe2, fd, 0);
	if (rc == 0 && from_libunwind(ra)) {
		fd[0] = move_high(fd[0]);
		fd[1] = move_high(fd[1]);
	}
	return rc;
}

static int load_libunwind(void)
{
	t_loading = 1;
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	t_loading = 0;
	Dl_info di;
	if (!h)
		return -ENOENT;
	*(void **)&U.init_local2 = dlsym(h, "_ULx86_64_init_local2");
	*(void **)&U.step = dlsym(h, "_ULx86_64_step");
	*(void **)&U.get_reg = dlsym(h, "_ULx86_64_get_reg");
	*(void **)&U.set_caching_policy = dlsym(h, "_ULx86_64_set_caching_policy");
	*(void **)&U.getcontext = dlsym(h, "_Ux86_64_getcontext");
	*(void **)&U.backtrace = dlsym(h, "unw_backtrace");
	U.local_as = dlsym(h, "_ULx86_64_local_addr_space");
	if (U.backtrace && dladdr((void *)U.backtrace, &di) && di.dli_fbase) {
		struct link_map *lm = NULL;
		if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm)
			dl_iterate_phdr(find_segments, (void *)lm->l_addr);
	}
	if (!g_unw_hi)
		return -ENOSYS;   /* its pipe could not be kept out of the way */
	return U.init_local2 && U.step && U.get_reg && U.set_caching_policy && U.getcontext &&
	       U.backtrace && U.local_as ? 0 : -ENOSYS;
}


/* A warm-up unwind from here: libunwind initializes its tables (and may
 * allocate) at its first use, which must not be in a handler. */
static __attribute__((noinline)) int warm(void)
{
	unw_context_t ctx;
	unw_cursor_t cur;
	int n = 0;
	if (U.getcontext(&ctx) < 0 || U.init_local2(&cur, &ctx, 0) < 0)
		return -1;
	while (n < SPOOL_STACK_MAX && U.step(&cur) > 0)
		n++;
	return n;
}

int preload_stacks_init(void)
{
	preload_cfi_init();
	if (g_vprof.cfg.stack_method == SPOOL_STACK_M_UNWIND || g_vprof.cfg.stack_method == SPOOL_STACK_M_CURSOR) {
		void *buf[8];
		int rc = load_libunwind();
		if (rc < 0)
			return rc;
		U.set_caching_policy(*U.local_as, UNW_CACHE_PER_THREAD);
		t_loading = 1;
		rc = warm() < 0 || U.backtrace(buf, 8) <= 0 ? -ENOSYS : 0;
		t_loading = 0;
		if (rc < 0)
			return rc;
	}
	return 0;
}

static unsigned by_unwind(ucontext_t *uc, uint64_t *pc, unsigned max, int *more)
{
	unw_cursor_t cur;
	unsigned n = 0;
	*more = 0;
	if (U.init_local2(&cur, (unw_context_t *)uc, UNW_INIT_SIGNAL_FRAME) < 0)
		goto leaf;
	for (;;) {
		unw_word_t ip;
		if (U.get_reg(&cur, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		if (n == max) {
			*more = 1;
			break;
		}
		pc[n++] = ip;
		if (U.step(&cur) <= 0)
			break;
	}
leaf:
	if (!n)
		pc[n++] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	return n;
}

/* libunwind's fast path: unw_backtrace() from here, through our handler
 * and the kernel's signal frame, with its per-thread cache of frame
 * descriptions (tdep_trace; ~0.4 us for 16 frames here, where the cursor
 * above takes ~90: it locks its global cache, two sigprocmask calls, at
 * every frame). The interrupted frame is the one whose IP is the
 * ucontext's; frames before it are ours. If it is not found (the fast
 * path gave up at the signal frame), the cursor does it. */
#define OURS_MAX 16
static unsigned by_backtrace(ucontext_t *uc, uint64_t *pc, unsigned max, int *more)
{
	void *buf[SPOOL_STACK_MAX + OURS_MAX];
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	int cap = (int)max + OURS_MAX, n = U.backtrace(buf, cap), i;
	for (i = 0; i < n && i < OURS_MAX && (uint64_t)buf[i] != rip; i++)
		;
	if (i >= n || i >= OURS_MAX)
		return by_unwind(uc, pc, max, more);
	unsigned k = 0;
	for (; i < n && k < max; i++)
		pc[k++] = (uint64_t)buf[i];
	*more = i < n || n == cap;
	return k;
}

static unsigned by_fp(ucontext_t *uc, uint64_t *pc, unsigned max, int *more)
{
	uintptr_t sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP];
	uintptr_t fp = (uintptr_t)uc->uc_mcontext.gregs[REG_RBP];
	/* The bounds cfi checks its reads with. */
	uintptr_t top = preload_cfi_stack_top(), bottom = preload_cfi_stack_bottom();
	unsigned n = 0;
	*more = 0;
	pc[n++] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (sp >= top || sp < bottom)
		return n;       /* not on the stack we know (a coroutine's): leaf only */
	while (fp >= sp && fp + 16 <= top && !(fp & 7)) {
		uintptr_t next = ((const uintptr_t *)fp)[0];
		uintptr_t ret = ((const uintptr_t *)fp)[1];
		if (!ret || ret >= (1ul << 47))
			break;
		if (n == max) {
			*more = 1;
			break;
		}
		pc[n++] = ret;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

void preload_stacks_sample(siginfo_t *si, void *ucv, int unwind)
{
	ucontext_t *uc = ucv;
	uint64_t pc[SPOOL_STACK_MAX];
	unsigned max = (unsigned)g_vprof.cfg.stack_depth, n;
	int more = 0;
	if (!g_vprof.cfg.stacks)
		return;
	if (max < 1 || max > SPOOL_STACK_MAX)
		max = SPOOL_STACK_MAX;
	/* The same weight preload_sample gave the PC (timer overruns). */
	uint64_t weight = 1;
	if (si->si_code == SI_TIMER && si->si_overrun > 0)
		weight += si->si_overrun > 63 ? 63 : (uint64_t)si->si_overrun;
	if (g_thread.busy || !unwind) {
		/* In vprof's own code: the leaf alone (the unwinder may be
		 * what was interrupted); so too without the stack an unwinder
		 * needs (handler.c). */
		pc[0] = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
		n = 1;
	} else {
		g_thread.busy = 1;
		switch (g_vprof.cfg.stack_method) {
		case SPOOL_STACK_M_FP: n = by_fp(uc, pc, max, &more); break;
		case SPOOL_STACK_M_CURSOR: n = by_unwind(uc, pc, max, &more); break;
		case SPOOL_STACK_M_UNWIND: n = by_backtrace(uc, pc, max, &more); break;
		default: n = preload_cfi_backtrace(uc, pc, max, &more); break;
		}
		g_thread.busy = 0;
		n = preload_py_mix(pc, n, max, &more);
	}
	/* Entered for the write only (rotate.c): the unwind reads no spool. */
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	if (sp->stacks)
		spool_stack(sp, pc, n, sp->gen, more, weight);
	preload_spool_exit(sp, prev);
}
