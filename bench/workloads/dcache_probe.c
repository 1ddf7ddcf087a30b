/*
 * bench/workloads/dcache_probe.c — decode-cache hit rate vs cache size on
 * a real program's value samples (bench/values.sh, section 6).
 *
 * An LD_PRELOAD library, built against build/libinterp.a, that does what
 * vprof's value sampling does to the main thread of every process of the
 * command, and nothing else: SIGPROF from ITIMER_PROF at DCPROBE_HZ
 * (default 1000 asked; the tick holds it at ~250 Hz here), and every
 * DCPROBE_EVERY-th signal (default 2) interprets the next DCPROBE_LEN
 * instructions (default 4) on an alternate stack and writes the advanced
 * state back, as preload/value_sample.c does. The run uses a real decode cache of
 * INTERP_DCACHE_SIZE entries; the same stream of decode look-ups is
 * replayed against direct-mapped tag arrays of 512..8 entries with the
 * interpreter's index hash, which is what a cache of that size would
 * have hit or missed (the 512 replay must agree with the real cache's
 * count of Zydis decodes: it is printed beside it).
 *
 * At exit each probed process appends one line to DCPROBE_OUT:
 *   dcache_probe pid=P runs=R lookups=L real_decoded=D m512=.. m256=.. ...
 * (mN = misses of an N-entry cache). A program that sets its own SIGPROF
 * handler or ITIMER_PROF is left alone (the probe then reports runs=0).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"

#define NSIZES 7
static const unsigned k_sizes[NSIZES] = { 512, 256, 128, 64, 32, 16, 8 };

static struct interp_state g_st __attribute__((aligned(64)));
static struct interp_thread *g_th;
static uint64_t g_tag[NSIZES][512];
static uint64_t g_miss[NSIZES], g_lookups, g_runs, g_signals;
static int g_every = 2, g_len = 4, g_on;
static pid_t g_pid;

extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char __etext[] __attribute__((visibility("hidden")));

static void lookup(uint64_t pc)
{
	uint64_t h = pc ^ (pc >> 11);

	g_lookups++;
	for (int i = 0; i < NSIZES; i++) {
		uint64_t *t = &g_tag[i][h & (k_sizes[i] - 1)];
		if (*t != pc) {
			g_miss[i]++;
			*t = pc;
		}
	}
}

static int observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	(void)arg; (void)st;
	lookup(r->insn->pc);
	return st->rip >= (uint64_t)(uintptr_t)__ehdr_start && st->rip < (uint64_t)(uintptr_t)__etext;
}

static void on_prof(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;
	struct interp_result res;
	int saved = errno;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];

	(void)sig; (void)si;
	if (!g_on || syscall(SYS_gettid) != g_pid || ++g_signals % (uint64_t)g_every)
		goto out;
	if (pc >= (uint64_t)(uintptr_t)__ehdr_start && pc < (uint64_t)(uintptr_t)__etext)
		goto out;
	if (interp_from_ucontext_lazy(&g_st, uc) < 0)
		goto out;
	struct interp_observer obs = { .insn = observe, .flags = INTERP_OBS_LATENCY };
	interp_run(&g_st, g_th, g_len, &obs, &res);
	g_runs++;
	if (res.executed)
		interp_to_ucontext(&g_st, uc);
out:
	errno = saved;
}

static void report(void)
{
	char buf[512];
	const char *out = getenv("DCPROBE_OUT");
	int n, fd;

	if (!g_on || getpid() != g_pid || !out)
		return;
	g_on = 0;
	n = snprintf(buf, sizeof buf, "dcache_probe pid=%d runs=%llu lookups=%llu real_decoded=%llu",
		     (int)g_pid, (unsigned long long)g_runs, (unsigned long long)g_lookups,
		     (unsigned long long)g_th->decoded);
	for (int i = 0; i < NSIZES; i++)
		n += snprintf(buf + n, sizeof buf - n, " m%u=%llu", k_sizes[i], (unsigned long long)g_miss[i]);
	n += snprintf(buf + n, sizeof buf - n, "\n");
	fd = open(out, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0) {
		if (write(fd, buf, n) != n) { /* nothing to do: a benchmark tool */ }
		close(fd);
	}
}

static void __attribute__((constructor)) probe_init(void)
{
	struct sigaction sa, old;
	const char *e;
	stack_t ss;
	int hz = 1000;

	if ((e = getenv("DCPROBE_HZ"))) hz = atoi(e);
	if ((e = getenv("DCPROBE_EVERY"))) g_every = atoi(e);
	if ((e = getenv("DCPROBE_LEN"))) g_len = atoi(e);
	if (hz <= 0 || g_every <= 0 || g_len <= 0)
		return;
	if (interp_init() < 0 || fault_handler_install() < 0)
		return;
	g_th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ss.ss_sp = mmap(NULL, 256 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_th == MAP_FAILED || ss.ss_sp == MAP_FAILED)
		return;
	interp_thread_init(g_th);
	ss.ss_size = 256 << 10;
	ss.ss_flags = 0;
	if (sigaltstack(&ss, NULL) < 0)
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_prof;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, &old) < 0)
		return;
	g_pid = getpid();
	g_on = 1;
	atexit(report);
	struct itimerval it = { { 0, 1000000 / hz }, { 0, 1000000 / hz } };
	setitimer(ITIMER_PROF, &it, NULL);
}
