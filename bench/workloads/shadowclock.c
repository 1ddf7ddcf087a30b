/*
 * bench/workloads/shadowclock.c — windows of fixed native time, counted by
 * a shadow interpretation made before the native run, on the other CPU
 * (bench/fixed_time.sh --mech shadow). The same records as forkclock.c,
 * without its snapshot: no copy-on-write fault touches the native run.
 *
 * An LD_PRELOAD library for single-threaded programs. At random points of
 * the thread's CPU time (a perf task-clock event, gaps drawn uniformly
 * from 0.5..1.5 x SHADOWCLOCK_GAP_US, default 5000) its handler:
 *  - moves the thread to another CPU (sched_setaffinity; SHADOWCLOCK_
 *    MIGRATE=0 stays), so that the interpretation warms that CPU's caches
 *    and TLB, not the ones the program runs on;
 *  - interprets up to SHADOWCLOCK_MAXN instructions (default 400,000)
 *    from the interrupted state in shadow mode: stores go to an overlay
 *    (this file's interp_shadow_* replace interp/shadow.c's flat log,
 *    which scans every entry on each load), never to memory; after each
 *    instruction it keeps the PC and a hash of the general registers,
 *    RIP and the arithmetic flags;
 *  - flushes (clflushopt) each line whose first load took more than
 *    SHADOWCLOCK_DRAM_TICKS TSC ticks (default 200): it came from DRAM,
 *    and goes back there (SHADOWCLOCK_FLUSH=0 leaves them);
 *  - moves back, and arms a task-clock sample SHADOWCLOCK_DELTA_US of CPU
 *    later (default 50).
 * The program then runs the same stretch natively. At the second sample
 * its state's hash is looked up among the kept ones: the instructions the
 * program ran in that stretch of native time, counted by PC. A stretch
 * whose native run passed where the interpretation stopped (a system
 * call, an instruction the interpreter lacks) is unmatched.
 *
 * Records (appended to SHADOWCLOCK_OUT, read by bench/fixed_time.py) are
 * forkclock.c's: matched, instructions, the thread's CPU time between the
 * two samples, faults 0, per PC the executions in the stretch and in the
 * interpretation's first SHADOWCLOCK_FIRST (default 4096) instructions.
 *
 * Measurement only: single-threaded programs, a program that sets its
 * own CPU affinity is moved all the same, and the overlay and trace
 * buffers (~90 MB of address space) are mapped at start-up.
 */
#define _GNU_SOURCE
#include "clockwin.h"
#include "interp/shadow.h"

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
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#define TAB_BITS 16
#define TAB_SIZE (1u << TAB_BITS)

static int out_fd = -1, armed;
static long gap_us = 5000, delta_us = 50, maxn = 400000, first_n = 4096, migrate = 1, flush = 1;
static long dram_ticks = 200;
static uint64_t rng = 88172645463325252ull, t0_ns, exe_load;
static cpu_set_t orig_mask;

static uint64_t *g_hash, *g_pc;   /* per step */
static long g_steps;
static int g_stop;
static struct ent *g_tab;
static struct interp_thread *g_th;
static struct interp_state g_st __attribute__((aligned(64)));

/* ---- the overlay: the shadow's stores, by 8-byte word ---- */
#define OV_BITS 21
#define OV_SIZE (1u << OV_BITS)
struct ov {
	uint64_t q;             /* addr >> 3, + 1 (0: free) */
	uint64_t data;
	uint64_t mask;          /* byte i present: bit 8i */
};
static struct ov *g_ov;
static uint32_t g_ovn;
static int g_ov_full;
static uint64_t *g_ovused;   /* indexes used, to clear */

__thread struct interp_shadow *interp_shadow_cur __attribute__((tls_model("initial-exec")));
int interp_mem_copy_raw(void *dst, const void *src, size_t n);

static inline uint32_t ovh(uint64_t q)
{
	return (uint32_t)((q * 0x9E3779B97F4A7C15ull) >> (64 - OV_BITS));
}

static struct ov *ov_find(uint64_t a8, int create)
{
	uint64_t q = a8 + 1;
	for (uint32_t h = ovh(q);; h = (h + 1) & (OV_SIZE - 1)) {
		struct ov *e = &g_ov[h];
		if (e->q == q)
			return e;
		if (!e->q) {
			if (!create)
				return NULL;
			if (g_ovn >= OV_SIZE / 2) {
				g_ov_full = 1;
				return NULL;
			}
			e->q = q;
			e->mask = 0;
			g_ovused[g_ovn++] = h;
			return e;
		}
	}
}

void interp_shadow_begin(struct interp_shadow *sh)
{
	(void)sh;
	for (uint32_t i = 0; i < g_ovn; i++)
		g_ov[g_ovused[i]].q = 0;
	g_ovn = 0;
	g_ov_full = 0;
	interp_shadow_cur = sh;
}

void interp_shadow_end(void)
{
	interp_shadow_cur = NULL;
}

int interp_shadow_load(struct interp_shadow *sh, void *dst, uint64_t src, size_t n)
{
	(void)sh;
	uint8_t *d = dst;
	if (interp_mem_copy_raw(dst, (const void *)src, n))
		return -EFAULT;
	if (!g_ovn)
		return 0;
	for (uint64_t q = src >> 3; q <= (src + n - 1) >> 3; q++) {
		struct ov *e = ov_find(q, 0);
		if (!e)
			continue;
		for (int b = 0; b < 8; b++) {
			uint64_t a = (q << 3) + (uint64_t)b;
			if (a < src || a >= src + n || !(e->mask >> (8 * b) & 1))
				continue;
			d[a - src] = (uint8_t)(e->data >> (8 * b));
		}
	}
	return 0;
}

int interp_shadow_store(struct interp_shadow *sh, uint64_t dst, const void *src, size_t n)
{
	(void)sh;
	const uint8_t *s = src;
	for (size_t i = 0; i < n; i++) {
		uint64_t a = dst + i;
		struct ov *e = ov_find(a >> 3, 1);
		if (!e)
			return 0;
		int b = (int)(a & 7);
		e->data = (e->data & ~(0xffull << (8 * b))) | ((uint64_t)s[i] << (8 * b));
		e->mask |= 1ull << (8 * b);
	}
	return 0;
}

int interp_shadow_cas(struct interp_shadow *sh, uint64_t addr, void *expect, const void *desired, unsigned size)
{
	uint8_t cur[16];
	if (interp_shadow_load(sh, cur, addr, size) || interp_mem_wprobe(addr, size))
		return -EFAULT;
	if (memcmp(cur, expect, size) == 0) {
		interp_shadow_store(sh, addr, desired, size);
		return 1;
	}
	memcpy(expect, cur, size);
	return 0;
}

int interp_shadow_raced(const struct interp_shadow *sh, uint32_t nld, uint32_t nst, int ro_only)
{
	(void)sh, (void)nld, (void)nst, (void)ro_only;
	return 0;
}

int interp_shadow_inputs_changed(const struct interp_shadow *sh, uint32_t ld_lo, uint32_t ld_hi, uint32_t st_hi)
{
	(void)sh, (void)ld_lo, (void)ld_hi, (void)st_hi;
	return 0;
}

/* ---- first-touch lines and their latency ---- */
#define LN_BITS 20
#define LN_SIZE (1u << LN_BITS)
static uint64_t *g_lines;     /* line + 1 */
static uint64_t *g_lnused;
static uint32_t g_lnn;
static uint64_t *g_dram;      /* lines to flush */
static uint32_t g_ndram, g_ncache;

static int line_first(uint64_t line)
{
	uint64_t q = line + 1;
	for (uint32_t h = (uint32_t)((q * 0x9E3779B97F4A7C15ull) >> (64 - LN_BITS));; h = (h + 1) & (LN_SIZE - 1)) {
		if (g_lines[h] == q)
			return 0;
		if (!g_lines[h]) {
			if (g_lnn >= LN_SIZE / 2)
				return 0;
			g_lines[h] = q;
			g_lnused[g_lnn++] = h;
			return 1;
		}
	}
}

static uint64_t state_hash(const struct interp_state *st)
{
	uint64_t h = st->rip * 0x9E3779B97F4A7C15ull ^ (st->rflags & 0x8d5);
	for (int i = 0; i < 16; i++)
		h = (h ^ st->gpr[i]) * 0xff51afd7ed558ccdull;
	return h ^ (h >> 29);
}

static uint64_t hash_uc(const ucontext_t *uc)
{
	static const int greg_of[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
					REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};
	struct interp_state s;
	s.rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	s.rflags = (uint64_t)uc->uc_mcontext.gregs[REG_EFL];
	for (int i = 0; i < 16; i++)
		s.gpr[i] = (uint64_t)uc->uc_mcontext.gregs[greg_of[i]];
	return state_hash(&s);
}

static int observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	(void)arg;
	g_pc[g_steps] = r->insn->pc;
	g_hash[g_steps] = state_hash(st);
	g_steps++;
	uint32_t na = r->naccess < INTERP_MAX_ACCESS ? r->naccess : INTERP_MAX_ACCESS;
	for (uint32_t i = 0; i < na; i++) {
		uint64_t line = r->acc[i].addr >> 6;
		if (!line_first(line))
			continue;
		if (!r->acc[i].write && r->acc[i].latency > (uint64_t)dram_ticks) {
			if (g_ndram < LN_SIZE / 2)
				g_dram[g_ndram++] = line << 6;
		} else {
			g_ncache++;
		}
	}
	return g_steps >= maxn || g_ov_full;
}

static long next_gap(void)
{
	return clockwin_gap(&rng, gap_us);
}

static void on_start(ucontext_t *uc)
{
	int cpu = sched_getcpu(), moved = 0;
	if (migrate) {
		cpu_set_t m;
		CPU_ZERO(&m);
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (c != cpu && CPU_ISSET(c, &orig_mask)) {
				CPU_SET(c, &m);
				break;
			}
		if (CPU_COUNT(&m) && sched_setaffinity(0, sizeof m, &m) == 0)
			moved = 1;
	}
	g_steps = 0;
	g_ndram = g_ncache = 0;
	for (uint32_t i = 0; i < g_lnn; i++)
		g_lines[g_lnused[i]] = 0;
	g_lnn = 0;
	g_stop = INTERP_STOP_LIMIT;
	if (interp_from_ucontext(&g_st, uc) == 0) {
		static struct interp_shadow dummy;
		interp_shadow_begin(&dummy);
		struct interp_observer obs = {.insn = observe, .arg = NULL, .flags = INTERP_OBS_LATENCY};
		struct interp_result res = {0};
		while (g_steps < maxn && !g_ov_full) {
			interp_run(&g_st, g_th, 1 << 20, &obs, &res);
			if (res.stop != INTERP_STOP_LIMIT && res.stop != INTERP_STOP_OBSERVER) {
				g_stop = (int)res.stop;
				break;
			}
			if (res.stop == INTERP_STOP_OBSERVER)
				break;
		}
		interp_shadow_end();
	}
	if (flush) {
		for (uint32_t i = 0; i < g_ndram; i++)
			_mm_clflushopt((void *)g_dram[i]);
		_mm_sfence();
	}
	if (moved) {
		sched_setaffinity(0, sizeof orig_mask, &orig_mask);
		/* back on the CPU it ran on, if it was allowed there */
		if (sched_getcpu() != cpu) {
			cpu_set_t m;
			CPU_ZERO(&m);
			CPU_SET(cpu, &m);
			sched_setaffinity(0, sizeof m, &m);
			sched_setaffinity(0, sizeof orig_mask, &orig_mask);
		}
	}
	armed = 1;
	t0_ns = clockwin_cpu_ns();
	clockwin_arm(delta_us);
}

static void on_end(ucontext_t *uc, uint64_t t1)
{
	uint64_t want = hash_uc(uc), rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	long n = -1;
	for (long i = 0; i < g_steps; i++)
		if (g_hash[i] == want && (i + 1 < g_steps ? g_pc[i + 1] == rip : 1)) {
			n = i + 1;
			break;
		}
	memset(g_tab, 0, TAB_SIZE * sizeof(struct ent));
	uint32_t nent = 0;
	long lim = n > 0 ? n : 0, lf = g_steps < first_n ? g_steps : first_n;
	long top = lim > lf ? lim : lf;
	for (long i = 0; i < top; i++) {
		uint64_t pc = g_pc[i];
		uint32_t h = (uint32_t)((pc * 0x9E3779B97F4A7C15ull) >> (64 - TAB_BITS));
		for (;; h = (h + 1) & (TAB_SIZE - 1)) {
			struct ent *e = &g_tab[h];
			if (e->pc == pc || !e->pc) {
				if (!e->pc) {
					e->pc = pc;
					nent++;
				}
				if (i < lim)
					e->all++;
				if (i < lf)
					e->first++;
				break;
			}
		}
		if (nent >= TAB_SIZE - 1)
			break;
	}
	struct rec_hdr h = {.magic = CLOCKWIN_MAGIC, .matched = n > 0, .n = (uint64_t)(n > 0 ? n : 0),
			    .dt_ns = t1 - t0_ns, .faults = 0, .nent = 0, .stop = (uint32_t)g_stop,
			    .base = exe_load};
	uint32_t k = 0;
	for (uint32_t i = 0; i < TAB_SIZE; i++)
		if (g_tab[i].pc)
			g_tab[k++] = g_tab[i];
	h.nent = k;
	ssize_t w = write(out_fd, &h, sizeof h);
	w = write(out_fd, g_tab, (size_t)k * sizeof(struct ent));
	(void)w;
	armed = 0;
	clockwin_arm(next_gap());
}

static void on_clock(int sig, siginfo_t *si, void *ucv)
{
	uint64_t t1 = clockwin_cpu_ns();
	int saved = errno;
	(void)sig;
	(void)si;
	if (armed)
		on_end(ucv, t1);
	else
		on_start(ucv);
	errno = saved;
}

static void *big(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

__attribute__((constructor)) static void shadowclock_init(void)
{
	if ((out_fd = clockwin_setup("SHADOWCLOCK", &gap_us, &delta_us, &maxn, &first_n, &rng)) < 0)
		return;
	migrate = clockwin_env("SHADOWCLOCK_MIGRATE", migrate);
	flush = clockwin_env("SHADOWCLOCK_FLUSH", flush);
	dram_ticks = clockwin_env("SHADOWCLOCK_DRAM_TICKS", dram_ticks);
	g_hash = big((size_t)maxn * 8);
	g_pc = big((size_t)maxn * 8);
	g_tab = big(TAB_SIZE * sizeof(struct ent));
	g_ov = big(OV_SIZE * sizeof(struct ov));
	g_ovused = big(OV_SIZE * 8);
	g_lines = big(LN_SIZE * 8);
	g_lnused = big(LN_SIZE * 8);
	g_dram = big(LN_SIZE * 8);
	g_th = big(interp_thread_size());
	if (!g_hash || !g_pc || !g_tab || !g_ov || !g_ovused || !g_lines || !g_lnused || !g_dram || !g_th)
		return;
	interp_thread_init(g_th);
	sched_getaffinity(0, sizeof orig_mask, &orig_mask);
	clockwin_start(on_clock, next_gap(), &exe_load);
}
