/*
 * The window driver (window.h): runs the interpreter from a value
 * sample's state, tells each consumer about every committed instruction,
 * follows calls and returns (depth, call site) and ends the window where
 * the run comes back around to its start. AS-safe; the thread's state.
 */
#include "preload/window.h"
#include "preload/preload.h"
#include "spool/hotlist.h"

/* This library's own text, from the linker: runs stop at its border. */
extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char __etext[] __attribute__((visibility("hidden")));

void preload_window_put_n(struct preload_window *w, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux,
			  uint32_t n)
{
	struct spool *sp = g_thread.sp;   /* entered by preload_values_sample */
	if (sp)
		spool_value_n(sp, g_thread.slot, SPOOL_HOT_KEY(kind, SPOOL_GPC(sp->gen, pc)), value, aux, n,
			      w->rng);
}

void preload_window_put(struct preload_window *w, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux)
{
	preload_window_put_n(w, kind, pc, value, aux, 1);
}

static int observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	struct preload_window *w = arg;
	const struct interp_insn *in = r->insn;
	w->n++;
	if (w->operands) {
		preload_operands_insn(w, st, r);
		preload_args_insn(w, st, r);
	}
	preload_branches_insn(w, st, r);
	if (w->cachesim)
		preload_cachesim_insn(w, st, r);
	if (w->hazards)
		preload_hazards_insn(w, st, r);
	if (in->mnemonic == ZYDIS_MNEMONIC_CALL) {
		if (w->depth >= 0 && w->depth < WINDOW_SITES)
			w->sites[w->depth] = w->site;
		w->depth++;
		w->site = in->pc + in->len;
		if (w->depth > 0 && w->depth < WINDOW_SITES) {
			/* The callee's frame: from its CFA (the stack pointer
			 * before the call) down. */
			w->frame_top[w->depth] = st->gpr[INTERP_RSP] + 8;
			w->frame_entry[w->depth] = st->rip;
		}
	} else if (in->mnemonic == ZYDIS_MNEMONIC_RET) {
		w->depth--;
		/* Back in a caller inside the window: its own site is the one
		 * saved at its call; past the sampled procedure, unknown. */
		w->site = w->depth >= 0 && w->depth < WINDOW_SITES ? w->sites[w->depth] : 0;
	}
	/* Closing at the first return to the start (not after a minimum
	 * run) keeps short loops unbiased: a window sampled in iteration i
	 * records iteration i+1's instructions, wrapping into the loop's
	 * next run after its last; a minimum length made every window of a
	 * 3-trip loop wrap to the same iteration. A loop with a load goes
	 * round until a load was timed (the first is not). */
	if (!w->no_close && st->rip == w->start_pc && w->depth == 0 && st->gpr[INTERP_RSP] == w->start_rsp &&
	    w->n >= w->ops.keep && !w->ops.lat_wait) {
		w->closed = 1;
		return 1;
	}
	/* Never run on into our own code: the next instruction is vprof's. */
	return st->rip >= (uint64_t)(uintptr_t)__ehdr_start && st->rip < (uint64_t)(uintptr_t)__etext;
}

int preload_window_run(struct preload_window *w, struct interp_state *st, struct interp_thread *th, int keep,
		       int reach, uint64_t site, uint64_t cfa, struct interp_result *res)
{
	w->start_cfa = cfa;
	w->start_site = site;
	w->ops.keep = keep;
	w->start_pc = st->rip;
	w->start_rsp = st->gpr[INTERP_RSP];
	w->site = site;
	w->depth = 0;
	w->n = 0;
	w->closed = 0;
	w->range_start = 0;
	preload_operands_begin(w);
	preload_args_begin(w);
	preload_cachesim_begin(w);
	preload_hazards_begin(w);
	struct interp_observer obs = { .insn = observe, .arg = w, .flags = INTERP_OBS_LATENCY };
	interp_run(st, th, keep + reach, &obs, res);
	if (w->operands)
		preload_operands_end(w);
	if (w->branches)
		preload_branches_end(w);
	if (w->cachesim)
		preload_cachesim_end(w);
	if (w->hazards)
		preload_hazards_end(w);
	return res->executed;
}
