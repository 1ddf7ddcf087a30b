/*
 * Value sampling (VPROF_VALUES=on): the interpreter at work in the sample
 * handler, as in the value-sampling paper (section 2).
 *
 * Every VPROF_INTERP_EVERY-th sample of a thread, the handler converts the
 * interrupted context to interpreter state, optionally runs a random
 * 0..VPROF_SKEW_SKIP instructions first (the paper's de-biasing: value
 * samples are then not tied to where interrupts land), then runs a window
 * of at most VPROF_INTERP_LEN instructions (window.h: it ends early where
 * it comes back around to its start) whose consumers turn what it
 * computed into value samples: operand values, load latencies and branch
 * targets (operands.c), procedure arguments at calls (args.c). The
 * advanced state is written back into the ucontext: the thread resumes
 * after the instructions we executed for it. Each value sample goes into
 * a Gibbons-Matias hotlist per (kind, PC) in the thread's slot of the
 * MAP_SHARED spool (spool_value). The sampled procedure's return
 * address (one step of vprof's CFI unwinder from the ucontext,
 * preload/unwind.c) starts the window's call-site tracking. With a
 * customization module (VPROF_MODULE, module.c) the module decides
 * instead: observe() hands it each record of a window of exactly
 * VPROF_INTERP_LEN instructions, it asks for latency timing and the
 * return address only if it wants them, and gets the run's tuples after
 * interp_run.
 *
 * Handler rules (docs/architecture.md): runs on the thread's handler
 * stack (the interpreter pushes below the interrupted RSP; handler.c
 * interprets only with room left there); no malloc,
 * stdio or locks: the per-thread state (interpreter state, the window and
 * a 64-entry decode cache) is mmap'd on the thread's first value sample,
 * so threads that never get one cost nothing; memory is touched through
 * the interpreter's fault-safe routines only (faults.c holds
 * SIGSEGV/SIGBUS); a run never enters vprof's own code. Stops are counted
 * by reason in the spool.
 */
#include "preload/preload.h"
#include "upcall/xorshift.h"
#include "preload/selflimit.h"
#include "preload/window.h"
#include "interp/interp.h"
#include "spool/hotlist.h"
#include "vprof-module.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include "preload/unwind.h"

/* This library's own text, from the linker: runs stop at its border. */
extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char __etext[] __attribute__((visibility("hidden")));

struct values_thread {
	struct interp_state st;        /* first: 64-byte aligned */
	uint64_t rng;
	uint64_t site;                 /* a module's: return address of the sampled procedure */
	uint32_t samples;              /* samples since the last value sample; long
					* windows: samples into the current stratum */
	uint32_t pick;                 /* long windows: the stratum's sample that
					* interprets (1..every), 0 none yet */
	uint32_t owed;                 /* long windows: picks one weighted sample
					* reached beyond the window it took */
	size_t map_size;
	struct interp_thread *ith;
	struct preload_window w;
};

static __thread struct values_thread *g_vt PRELOAD_TLS;

/* Decode-cache entries per thread. bench/values.sh section 6 (Debian
 * programs' value samples, length 4, every 2nd): misses 34% of look-ups
 * at 512 entries, 39% at 256, 45% at 128, 54% at 64, 64% at 32. At ~150 ns
 * a Zydis decode, 64 entries cost ~0.12 us more per value sample than 512
 * and 20 KiB instead of 160 KiB: a thread's whole value state is then
 * one ~25 KiB mapping (interp_state 2.5 KiB, the window's buffers and the
 * cache). docs/value-sampling.md's bound per thread adds the handler
 * stack's touched pages; tests/values_threads.sh checks it with 1000
 * threads. */
#define VALUES_DCACHE_ENTRIES 64
/* Windows for branch records alone run 4096 instructions round loops
 * larger than 64 instructions: the largest cache (~170 KiB a thread)
 * for them. */
#define BRANCHES_DCACHE_ENTRIES 512

static struct values_thread *thread_state(void)
{
	struct values_thread *v = g_vt;
	if (v)
		return v;
	/* First value sample of this thread: mmap is a system call, safe here. */
	size_t sz = (sizeof(*v) + 63) & ~(size_t)63;
	size_t ops = (2 * (size_t)g_vprof.cfg.interp_len * sizeof(struct preload_operands_insn) + 63) & ~(size_t)63;
	unsigned entries = g_vprof.cfg.operands && !g_vprof.cfg.cachesim && !g_vprof.cfg.hazards ? VALUES_DCACHE_ENTRIES
											       : BRANCHES_DCACHE_ENTRIES;
	size_t total = (sz + ops + interp_thread_size_n(entries) + 4095) & ~(size_t)4095;
	int e = errno;
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		/* dispatch() keeps the errno this leaves, as the program's own
		 * (its interpreted instructions may store errno): not ours. */
		errno = e;
		return NULL;
	}
	v = m;
	v->map_size = total;
	v->w.ops.first = (struct preload_operands_insn *)((char *)m + sz);
	v->w.ops.last = v->w.ops.first + g_vprof.cfg.interp_len;
	v->ith = (struct interp_thread *)((char *)m + sz + ops);
	interp_thread_init_n(v->ith, entries);
	v->rng = (uint64_t)(uintptr_t)m ^ 0x9e3779b97f4a7c15ull;
	g_vt = v;
	return v;
}

/* The return address of the procedure interrupted at uc's PC (and, with
 * cfa, its frame's CFA, the caller's stack pointer): one step
 * of vprof's CFI unwinder (preload/unwind.c) from the ucontext. 0 when
 * unknown (no unwind information, a stack not the thread's). It was
 * libgcc's _Unwind_Backtrace from this handler through the signal frame
 * (and, before that, libunwind's unw_backtrace, whose locking fallback
 * deadlocked): ~30% of a value sample's cost walking our own frames, and
 * its reads of the stack unchecked. No fallback to libgcc is kept: what
 * libgcc finds and this does not is code registered with
 * __register_frame (a JIT's) and frames on stacks that are not the
 * thread's, where an unchecked read is what we must not do. */
static uint64_t return_address_cfa(const ucontext_t *uc, uint64_t *cfa)
{
	struct preload_cfi_cursor c;
	if (cfa)
		*cfa = 0;
	if (preload_cfi_init_ucontext(&c, uc) < 0 || preload_cfi_step(&c) <= 0)
		return 0;
	if (cfa)
		*cfa = c.reg[CFI_RSP];   /* the caller's stack pointer: this frame's CFA */
	return c.reg[CFI_RIP];
}

static uint64_t return_address(const ucontext_t *uc)
{
	return return_address_cfa(uc, NULL);
}

/* A customization module's window: every instruction handed to it. */
static int module_observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	struct values_thread *v = arg;
	preload_module_observe(st, r, v->site);
	/* Never run on into our own code: the next instruction is vprof's. */
	return st->rip >= (uint64_t)(uintptr_t)__ehdr_start && st->rip < (uint64_t)(uintptr_t)__etext;
}

static void values_sample(ucontext_t *uc, struct spool *sp)
{
	struct values_thread *v;
	struct interp_result res;

	if (!sp->values)
		return;
	if (!(v = thread_state()))
		return;
	uint64_t pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (pc >= (uint64_t)(uintptr_t)__ehdr_start && pc < (uint64_t)(uintptr_t)__etext)
		return;     /* a sample in our own code: nothing of the program's to see */
	if (interp_from_ucontext_lazy(&v->st, uc) < 0)
		return;
	preload_faults_unblock(uc);
	int executed = 0, stop = INTERP_STOP_LIMIT;
	if (g_vprof.cfg.skew_skip > 0) {
		/* The skipped instructions execute (exactly) but are not observed. */
		int k = (int)(upcall_xorshift64(&v->rng) % (uint64_t)(g_vprof.cfg.skew_skip + 1));
		if (k) {
			interp_run(&v->st, v->ith, k, NULL, &res);
			executed += res.executed;
			stop = res.stop;
		}
	}
	if (stop == INTERP_STOP_LIMIT) {
		int mod = preload_module_on();
		if (mod) {
			unsigned mcap = preload_module_capture();
			/* A module asks for what it needs: unwinding and timing cost. */
			v->site = mcap & VPROF_CAP_SITE ? return_address(uc) : 0;
			struct interp_observer obs = { .insn = module_observe, .arg = v,
						       .flags = mcap & VPROF_CAP_LATENCY ? INTERP_OBS_LATENCY : 0 };
			interp_run(&v->st, v->ith, g_vprof.cfg.interp_len, &obs, &res);
			preload_module_run(res.executed);
		} else {
			v->w.rng = &v->rng;
			v->w.operands = g_vprof.cfg.operands;
			v->w.branches = g_vprof.cfg.branches;
			v->w.cachesim = g_vprof.cfg.cachesim;
			v->w.hazards = g_vprof.cfg.hazards;
			/* Branch and cache windows run their whole length: each
			 * records the stretch of execution after its sample, not
			 * one way round the loop it landed in. */
			v->w.no_close = !g_vprof.cfg.operands || g_vprof.cfg.cachesim || g_vprof.cfg.hazards;
			/* Values in the thread's stack name frames. On a stack
			 * that is not the thread's (a coroutine's), what lies
			 * near the interrupted RSP does. */
			uint64_t rsp = v->st.gpr[INTERP_RSP];
			v->w.stack_lo = preload_cfi_stack_bottom();
			v->w.stack_hi = preload_cfi_stack_top();
			if (rsp < v->w.stack_lo || rsp >= v->w.stack_hi) {
				v->w.stack_lo = rsp - (64u << 10);
				v->w.stack_hi = rsp + (1u << 20);
			}
			uint64_t cfa, site = return_address_cfa(uc, &cfa);
			preload_window_run(&v->w, &v->st, v->ith, g_vprof.cfg.interp_len, g_vprof.cfg.interp_reach,
					   site, cfa, &res);
		}
		executed += res.executed;
		stop = !mod && v->w.closed ? SPOOL_INTERP_STOP_LOOP : (int)res.stop;
	}
	if (executed)
		interp_to_ucontext(&v->st, uc);
	spool_interp(sp, (uint64_t)executed, (unsigned)stop);
}

/* The lines the window's value records will be written to, asked for
 * while the window runs: the thread's value table header, its log
 * chunk's header and the next 11 lines of records (a window logs ~20
 * records of 32 bytes). Between samples the program has evicted them,
 * and the records are written in a burst at the window's end, where
 * each cold line was a store that waited (perf: the record stores and
 * the chunk's count were spool_value_n's most sampled instructions).
 * A prefetch never faults: a hint left by a spool since unmapped, or a
 * page not yet backed, is dropped by the CPU. */
static void warm_vlog(void)
{
	const void *const *h = g_thread.vlog_hint;
	if (h[0])
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)h[0]));
	if (h[1])
		__asm__ volatile("prefetchw %0" : : "m"(*(const char *)h[1]));
	if (h[2]) {
		const char *r = (const char *)((uintptr_t)h[2] & ~(uintptr_t)63);
		for (int i = 0; i < 11; i++)
			__asm__ volatile("prefetchw %0" : : "m"(r[64 * i]));
	}
}

void preload_values_sample(ucontext_t *uc, uint32_t weight)
{
	/* The spool is entered for the whole run: the window's consumers
	 * and modules' emit() write into g_thread.sp (rotate.c). */
	struct preload_thread *t = &g_thread;
	int every = g_vprof.cfg.interp_every > 0 ? g_vprof.cfg.interp_every : 1;
	/* Thinned when interpretation made vprof too costly (selflimit.c). */
	every *= (int)preload_selflimit_interp_mult();
	/* The refusals that need no spool come first: most samples do not
	 * interpret (with --interp-every above 1), and entering the spool costs two
	 * atomics on a counter all threads share. */
	if (t->busy || !t->altstack)   /* no handler stack: nowhere to interpret */
		return;
	/* A sample of weight w stands for w periods of CPU (a CPU timer's
	 * overruns: the expiries the kernel could not signal, as behind a
	 * long window), so it advances the count by w. Long windows (cache
	 * simulation, hazards) are stratified: each run of every periods (a
	 * stratum) interprets one of its samples, chosen at random. Spaced 1
	 * to 2 x every - 1 samples apart, they do not keep step with a
	 * program's own period; one to a stratum, a phase of the program gets
	 * its share of windows to within one. A weighted sample that covers
	 * two strata's picks takes one window and owes the other to the next
	 * sample. */
	if (!weight)
		weight = 1;
	if (g_vt && (g_vprof.cfg.cachesim || g_vprof.cfg.hazards) && every > 1) {
		uint32_t at = g_vt->samples;
		for (uint32_t k = 0; k < weight && k < 64; k++) {
			if (!g_vt->pick)
				g_vt->pick = 1 + (uint32_t)(upcall_xorshift64(&g_vt->rng) % (uint64_t)every);
			if (++at == g_vt->pick)
				g_vt->owed++;
			if (at >= (uint32_t)every) {   /* the stratum's last period: the next begins */
				at = 0;
				g_vt->pick = 0;
			}
		}
		g_vt->samples = at;
		if (!g_vt->owed)
			return;
		g_vt->owed--;
	} else if (g_vt) {
		g_vt->samples += weight;
		if (g_vt->samples < (uint32_t)every)
			return;
		g_vt->samples %= (uint32_t)every;
	}
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	warm_vlog();
	values_sample(uc, sp);
	spool_vlog_hints(sp, g_thread.slot, g_thread.vlog_hint);
	preload_spool_exit(sp, prev);
}

void preload_values_thread_end(void)
{
	struct values_thread *v = g_vt;
	if (!v)
		return;
	g_vt = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);   /* a handler now sees NULL */
	preload_cachesim_free(&v->w);
	preload_hazards_free(&v->w);
	munmap(v, v->map_size);
	preload_module_thread_end();
}

int preload_values_init(void)
{
	int rc;
	if ((rc = interp_init()) < 0)
		return rc;
	if ((rc = preload_faults_init(NULL, NULL)) < 0)
		return rc;
	preload_cfi_init();   /* the main thread's stack, for return_address() */
	/* A module that does not load is refused with one message; value
	 * sampling goes on with the default capture. Children inherit the
	 * environment: without VPROF_MODULE they do the same, quietly. */
	if (g_vprof.cfg.module[0]) {
		char why[600];
		if (preload_module_load(g_vprof.cfg.module, why, sizeof(why)) < 0) {
			preload_say("VPROF_MODULE=%s: %s; value sampling goes on with the default capture",
				    g_vprof.cfg.module, why);
			unsetenv("VPROF_MODULE");
			setenv("VPROF_VALUES", "on", 1);   /* what VPROF_MODULE implied */
			g_vprof.cfg.module[0] = 0;
		}
	}
	return 0;
}
