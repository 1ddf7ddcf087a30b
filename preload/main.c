/*
 * libvprof.so: start-up, counting a sample's PC, fork and exit.
 *
 * The constructor decides whether this process is profiled (not when
 * secure-execution, not when VPROF_DISABLED is set, not on a bad VPROF_*
 * value or an unusable database: each reported once, then the program runs
 * unprofiled), chooses the trigger, creates the spool, records the images,
 * installs the handler and arms the main thread. Threads made later are
 * armed by the pthread_create interposer; a fork child gets a spool of its
 * own before it can take a sample.
 *
 * preload_sample counts the interrupted PC in the thread's slot of the
 * MAP_SHARED spool (weighted by the timer's overruns; inside vprof's own
 * code too, where the program paid the time), then re-arms the trigger;
 * preload_drain does the same for a ring's PCs. The SIGPROF handler that
 * calls it (handler.c) also takes the call stack, the value sample and
 * the co-simulation, and charges its cost to the bound (selflimit.c). All
 * of it is async-signal-safe and keeps errno.
 */
#include "preload/preload.h"
#include "preload/heap.h"
#include "preload/sandbox.h"
#include "preload/selflimit.h"

_Static_assert(UPCALL_PATH_MAX == SPOOL_PATH_MAX, "a ring mmap path is an image record path");

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

struct preload_global g_vprof;
__thread struct preload_thread g_thread PRELOAD_TLS;

void preload_say(const char *fmt, ...)
{
	char buf[600];
	va_list ap;
	va_start(ap, fmt);
	int n = snprintf(buf, sizeof(buf), "vprof: ");
	n += vsnprintf(buf + n, sizeof(buf) - (size_t)n, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	/* One write, so lines of concurrent processes do not interleave. */
	ssize_t w = write(2, buf, (size_t)n);
	(void)w;
}

/* Keep the message to this process: children inherit the environment and
 * would repeat it. */
static void disable(void)
{
	setenv("VPROF_DISABLED", "1", 1);
}

void preload_sample(int sig, siginfo_t *si, void *ucv)
{
	preload_sample_weighted(si, ucv, 1);
	(void)sig;
}

uint32_t preload_sample_weighted(siginfo_t *si, void *ucv, uint32_t times)
{
	struct preload_thread *t = &g_thread;
	ucontext_t *uc = ucv;
	struct spool *prev, *sp = preload_spool_enter(&prev);

	/* A PC sample is counted even inside vprof's own code (t->busy): the
	 * slot is never in flux there (claim and release run with the signal
	 * blocked or the trigger stopped), and the time is real time the
	 * program paid, shown against libvprof.so rather than hidden. t->busy
	 * keeps the interpreter out of our code. */
	uint64_t pc = preload_py_leaf((uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
	/* A CPU timer checked at ticks can expire several times between two
	 * ticks of its thread (threads time-sharing a CPU): the kernel counts
	 * the expiries it could not signal as overruns. Each stands for a
	 * period of CPU this thread used, here: weight the sample by them, so
	 * counts stay proportional to CPU time (tests/exec_fork.sh saw a
	 * third of the expected samples with 8 threads on 2 CPUs). */
	int weight = 1;
	if (si->si_code == SI_TIMER && si->si_overrun > 0)
		weight += si->si_overrun > 63 ? 63 : si->si_overrun;
	/* An itimer thinned by the bound on vprof's cost (selflimit.c):
	 * this tick stands for the ones not handled. */
	weight *= (int)times;
	if (sp) {
		__atomic_fetch_add(&sp->hdr->live.samples, (uint64_t)weight, __ATOMIC_RELAXED);
		for (int i = 0; i < weight; i++)
			spool_count(sp, t->slot,
				    SPOOL_KEY(g_vprof.backend, SPOOL_GPC(sp->gen, pc)));
		preload_spool_exit(sp, prev);
	}
	if (t->armed)
		upcall_rearm(&t->up);
	preload_spool_tick();
	return (uint32_t)weight;
}

/* Ring drain callbacks: inside preload_drain's enter, g_thread.sp is set. */
static void count_pc(void *arg, uint64_t pc)
{
	struct preload_thread *t = arg;
	struct spool *sp = t->sp;
	if (sp)
		spool_count(sp, t->slot, SPOOL_KEY(g_vprof.backend, SPOOL_GPC(sp->gen, pc)));
}

/* An executable mapping the kernel reported: an image record. The load
 * bias is taken as addr - pgoff, exact when the segment's vaddr equals its
 * file offset (as in the shared objects and PIEs GNU ld makes); the scans
 * at exit and at each dlopen record the exact bias later, and the latest
 * record wins at merge. */
void preload_on_mmap(void *arg, uint64_t addr, uint64_t len, uint64_t pgoff,
		    const uint8_t *bid, uint32_t bid_len, const char *path)
{
	/* Files only: anonymous executable memory (//anon), [vdso] and the
	 * like, and memfd-backed code are JIT territory, kept as unknown. */
	if (path[0] != '/' || path[1] == '/' || !strncmp(path, "/memfd:", 7) || !g_thread.sp)
		return;
	spool_image(g_thread.sp, SPOOL_IMG_MAP, addr - pgoff, addr, addr + len, bid, bid_len,
		    path);
}

static void discard_pc(void *arg, uint64_t pc)
{
}

void preload_drain(void)
{
	struct preload_thread *t = &g_thread;
	struct spool_live *live;
	struct spool *prev, *sp;
	uint64_t lost = 0, n;
	if (!t->up.ring || preload_sandbox_stopped())
		return;
	/* Not interrupted by our own handler (before exec, this runs in normal
	 * context): a drain signal would drain the same records twice, and the
	 * first overflow's signal replaces, and unmaps, the ring being read. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, UPCALL_SIGNAL);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, sizeof(long));
	if (!(sp = preload_spool_enter(&prev))) {
		syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
		return;
	}
	live = &sp->hdr->live;
	uint64_t c0 = preload_cost_begin();
	upcall_pc_fn *fn = g_vprof.cfg.bench_empty ? discard_pc : count_pc;
	uint64_t own = upcall_drain(&t->up, fn, t, &lost);
	/* And the rings of threads that stopped running (upcall_drain_others:
	 * a parked Go M keeps its last samples until it runs again); all of
	 * them at a thread's end and at exit (busy), where they are due. */
	n = own + upcall_drain_others(&t->up, fn, t, &lost, t->busy);
	preload_selflimit_test_work(n);
	/* What the drain cost, against the bound (it may lower the rate:
	 * not from the first overflow's switch, nor at thread end); the
	 * kernel's share is that of this thread's own samples. */
	preload_cost_end(c0, 0, own, !t->busy && !t->up.switch_pending);
	if (n + lost)
		__atomic_fetch_add(&live->samples, n + lost, __ATOMIC_RELAXED);
	if (lost) {   /* the kernel found the ring full: counted, not hidden */
		__atomic_fetch_add(&live->dropped, lost, __ATOMIC_RELAXED);
		__atomic_fetch_add(&live->dropped_full, lost, __ATOMIC_RELAXED);
	}
	preload_spool_exit(sp, prev);
	preload_spool_tick();
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
}

static void read_cmdline(char *out, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, out, cap - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n < 0)
		n = 0;
	out[n] = 0;
	for (ssize_t i = 0; i + 1 < n; i++)
		if (!out[i])
			out[i] = ' ';
}

/* VPROF_RUN=ID:EPOCH (hex, decimal), set by `vprof run`: the run record
 * of every spool (spool/spool.h), read once in the constructor. Anything
 * else leaves the spools without one, as processes not started by it. */
static uint64_t g_run_id, g_run_epoch;

static void read_run(void)
{
	const char *s = getenv("VPROF_RUN");
	char *end;
	if (!s || !*s)
		return;
	uint64_t id = strtoull(s, &end, 16);
	if (*end != ':' || !id)
		return;
	uint64_t e = strtoull(end + 1, &end, 10);
	if (*end || !e)
		return;
	g_run_id = id;
	g_run_epoch = e;
}

static int open_spool(void)
{
	struct spool_params p = { .event = (uint32_t)g_vprof.backend,
					.backend = (uint32_t)g_vprof.backend,
					.period = g_vprof.period,
					.values = g_vprof.cfg.values,
					.stack_depth = g_vprof.cfg.stacks ? g_vprof.cfg.stack_depth : 0,
					.stack_method = g_vprof.cfg.stack_method,
					.run_id = g_run_id,
					.run_epoch = g_run_epoch,
					.vlog_chunks = g_vprof.cfg.test_vlog_chunks == UINT64_MAX ? 0
						       : g_vprof.cfg.test_vlog_chunks == 0 ? -1
						       : (int32_t)g_vprof.cfg.test_vlog_chunks };
	char exe[256], cmd[256];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	exe[n > 0 ? n : 0] = 0;
	read_cmdline(cmd, sizeof(cmd));
	p.exe = exe;
	p.cmdline = cmd;
	/* The spool keeps no descriptor: its mapping is all the process
	 * needs, and its header says who owns it (spool/spool.h). Rotation
	 * (rotate.c) makes the next ones with the same parameters. */
	return preload_spool_first(&p);
}

static void on_fork_child(void)
{
	struct preload_thread *t = &g_thread;
	if (!g_vprof.active)
		return;
	if (preload_sandbox_fork_child()) {
		g_vprof.active = 0;
		return;
	}
	t->busy = 1;
	t->prog_pending = 0;     /* pending signals are not inherited by fork */
	/* The trigger of the parent's thread is not ours: the child's copy of
	 * a perf mapping keeps the parent's event alive (unmap it, never
	 * disable it), POSIX timers are not inherited, interval timers
	 * neither. Every event mapping is the parent's (those of all its
	 * threads, not only this one's): unmap them all, and close the
	 * descriptors kept where no mapping could be made. */
	preload_fd_close_all_ours();
	t->up.open_fd = -1;
	upcall_thread_forget(&t->up);
	upcall_forget_all();
	t->armed = 0;
	t->slot = NULL;

	struct spool parent;
	preload_spool_fork_child(&parent);
	g_vprof.pid = getpid();
	if (open_spool() < 0) {
		/* No spool: stop sampling this child; it runs on unprofiled. */
		spool_forget(&parent);
		g_vprof.active = 0;
		t->busy = 0;
		return;
	}
	preload_images_inherit(&parent);
	spool_forget(&parent);
	/* Not in a thread that reads SIGPROF through a signalfd (masks.c):
	 * our itimer's ticks would be read there. */
	if (!t->prog_signalfd)
		upcall_process_start(g_vprof.backend, g_vprof.period);
	t->busy = 0;
	preload_thread_begin();
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The process leaves: its rings drained, its spool marked exited with its
 * CPU, once. full: by exit(), from our destructor (normal context: the
 * thread ends as any thread does, and the image scan may run). Else by
 * _exit, _Exit or exit_group through syscall(): fork children of
 * pre-fork servers, Python's multiprocessing and shells end that way, from
 * a signal handler as often as not, or in a fork child of a threaded
 * parent, where only async-signal-safe steps may run. Those steps are the
 * ones that matter: a ring holds up to UPCALL_DRAIN_NS of each thread's
 * samples, all of a 20 ms child's; the image scan is left out (ring mode
 * records mappings as they happen). A thread that stopped sampling at a seccomp
 * sandbox makes only the calls the sandbox allows (sandbox.c). */
static void process_leaves(int full)
{
	static int left;
	if (!g_vprof.active)
		return;
	/* A child made without atfork handlers (_Fork, raw clone, vfork)
	 * shares the parent's spool mapping and perf descriptors (a vfork
	 * child all of its memory): it must touch none of them. */
	if (preload_sandbox_allows(PRELOAD_SB_GETPID) && getpid() != g_vprof.pid)
		return;
	if (__atomic_exchange_n(&left, 1, __ATOMIC_ACQ_REL))
		return;
	if (preload_sandbox_stopped()) {
		preload_sandbox_leave();
		return;
	}
	/* Disarm first, so the scan below costs no dropped samples. */
	upcall_process_stop(g_vprof.backend);
	if (full) {
		preload_thread_end();
		g_thread.busy = 1;
		preload_images_scan();      /* images dlopen'd since the last scan */
	} else {
		/* SIGPROF stays blocked: nothing of ours runs on this thread
		 * again, and the process is gone at the next instruction. */
		sigset_t block;
		sigemptyset(&block);
		sigaddset(&block, UPCALL_SIGNAL);
		syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, NULL, sizeof(long));
		g_thread.busy = 1;
		preload_drain();            /* busy: every thread's ring */
		preload_selflimit_thread_end();
	}
	preload_spool_exit_process(cpu_ns());
}

__attribute__((destructor)) static void vprof_fini(void)
{
	process_leaves(1);
}

void preload_leave_now(void)
{
	process_leaves(0);
}

typedef void exit_fn(int);
static exit_fn *g_real_exit;

__attribute__((visibility("default"), noreturn))
void _exit(int status)
{
	preload_leave_now();
	if (g_real_exit)
		g_real_exit(status);
	/* Before our constructor looked it up: what libc's _exit does. */
	for (;;)
		preload_raw_syscall(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

__attribute__((visibility("default"), noreturn))
void _Exit(int status)
{
	_exit(status);
}

/* The CPU the process used before sampling began (format.h,
 * armed_cpu_ns): the merge shows it as a [start-up] row. */
static void record_armed(void)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	struct spool_live *live = &sp->hdr->live;
	struct rusage ru;
	uint64_t cpu = cpu_ns();
	live->armed_cpu_ns = cpu;
	if (getrusage(RUSAGE_SELF, &ru) == 0) {
		uint64_t sys = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull +
			       (uint64_t)ru.ru_stime.tv_usec * 1000ull;
		live->armed_sys_ns = sys < cpu ? sys : cpu;
	}
	__atomic_store_n(&live->armed_valid, 1, __ATOMIC_RELEASE);
	preload_spool_exit(sp, prev);
}

__attribute__((constructor)) static void vprof_init(void)
{
	char why[300];
	int rc;

	g_real_exit = (exit_fn *)dlsym(RTLD_NEXT, "_exit");
	if (getauxval(AT_SECURE)) /* setuid and friends: never profiled */
		return;
	if (getenv("VPROF_DISABLED"))
		return;
	if (preload_config_parse(&g_vprof.cfg, why, sizeof(why)) < 0) {
		preload_say("%s; running unprofiled", why);
		disable();
		return;
	}
	/* A Python or Lua vprof knows the frames of (pyframes.c,
	 * luaframes.c): its defaults (config.c). */
	if ((g_vprof.cfg.python && preload_py_init()) || (g_vprof.cfg.lua && preload_lua_init()))
		preload_config_interpreted(&g_vprof.cfg);
	/* Exec'd inside a seccomp filter: what it lets us do, before we do
	 * anything it might kill the program for (sandbox.c). */
	int no_perf = 0;
	if (preload_sandbox_start(&no_perf, why, sizeof(why)) < 0) {
		preload_say("%s; running unprofiled", why);
		disable();
		return;
	}
	if ((rc = spool_db_create(g_vprof.cfg.db, why, sizeof(why))) < 0) {
		preload_say("cannot use database %s: %s; running unprofiled", g_vprof.cfg.db, why);
		disable();
		return;
	}
	snprintf(g_vprof.spool_dir, sizeof(g_vprof.spool_dir), "%s/spool", g_vprof.cfg.db);

	struct upcall_config uc = { .event = g_vprof.cfg.event, .period = g_vprof.cfg.period,
				    .freq = g_vprof.cfg.freq, .no_perf = no_perf,
				    .signals = preload_signal_per_sample() };
	rc = upcall_choose(&uc, &g_vprof.period);
	if (rc < 0) {
		preload_say("no sampling trigger available (%s%s): %s; running unprofiled",
			    uc.event ? "VPROF_EVENT=" : "tried all",
			    uc.event ? upcall_event_name((unsigned)uc.event) : "", strerror(-rc));
		disable();
		return;
	}
	g_vprof.backend = rc;
	read_run();
	if (preload_sandbox_check_mode(why, sizeof(why)) < 0) {
		preload_say("%s; running unprofiled", why);
		disable();
		return;
	}
	/* `vprof run` asks for the kernel's cost of a sample here, in a child
	 * made for it, so that the program does not pay for measuring it
	 * (selflimit.c); this process is that child and does nothing else. */
	const char *cal = getenv("VPROF_CALIBRATE_FD");
	if (cal && *cal) {
		preload_selflimit_calibrate_to(atoi(cal));
		preload_raw_syscall(SYS_exit_group, 0, 0, 0, 0, 0, 0);
	}
	if ((rc = open_spool()) < 0) {
		preload_say("cannot create a spool in %s: %s; running unprofiled", g_vprof.spool_dir,
			    strerror(-rc));
		disable();
		return;
	}
	g_vprof.active = 1;
	g_vprof.pid = getpid();
	upcall_refused = preload_sandbox_refused;
	preload_selflimit_init();
	g_thread.busy = 1;
	preload_images_scan();
	if (g_vprof.cfg.values && g_vprof.cfg.cachesim)
		preload_heap_init();
	if ((rc = preload_signals_install()) < 0) {
		preload_say("cannot install the SIGPROF handler: %s; running unprofiled", strerror(-rc));
		g_vprof.active = 0;
		g_thread.busy = 0;
		return;
	}
	if (g_vprof.cfg.values && (rc = preload_values_init()) < 0) {
		preload_say("VPROF_VALUES: value sampling unavailable: %s; PC sampling only",
			    strerror(-rc));
		g_vprof.cfg.values = 0;
	}
	if (g_vprof.cfg.stacks && (rc = preload_stacks_init()) < 0) {
		preload_say("VPROF_STACKS: call stacks unavailable: %s; PC sampling only",
			    strerror(-rc));
		g_vprof.cfg.stacks = 0;
	}
	if (g_vprof.cfg.verify) {
		rc = preload_verify_init ? preload_verify_init() : -ENOSYS;
		if (rc < 0) {
			preload_say("VPROF_VERIFY: co-simulation unavailable: %s; profiling without it",
				    strerror(-rc));
			g_vprof.cfg.verify = 0;
		}
	}
	/* After verify's: the fault handler is installed once, with its
	 * trap hook when co-simulation wants one. */
	if (g_vprof.cfg.stacks && preload_py_on() && (rc = preload_py_start()) < 0)
		preload_say("Python and Lua frames unavailable: %s; native frames only",
			    strerror(-rc));
	pthread_atfork(NULL, NULL, on_fork_child);
	g_thread.busy = 0;
	preload_thread_begin();
	preload_thread_arm_others();
	upcall_process_start(g_vprof.backend, g_vprof.period);
	record_armed();
}
