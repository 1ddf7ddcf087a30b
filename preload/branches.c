/*
 * The window's branch consumer (window.h): where branches went.
 *
 * Every indirect call or jump the window runs records its target
 * (SPOOL_VK_TARGET: `vprof targets`, the call-target rows of `vprof
 * invariants`). With `vprof run --branches`, the window is a software
 * LBR: every conditional branch records its outcome (SPOOL_VK_BRANCH,
 * value 1 taken, 0 fell through: `vprof branches`; a hotlist of two
 * values never thins, so the merged counts are the windows' exact
 * counts), every taken branch its target (SPOOL_VK_TAKEN), and every
 * range run straight through between two taken branches its last
 * instruction, keyed at its first (SPOOL_VK_RANGE): what `vprof export
 * --format autofdo-text` writes for AutoFDO's create_llvm_prof.
 *
 * The instruction the sample landed on is not recorded: the interrupt is
 * taken at the instruction after a slow one, and a branch that went the
 * costly way (a mispredicted, rare target) is followed by a stall there
 * more often (66-68% of samples for a 70% indirect target). What follows
 * it in the window is chosen by the program alone: the window's start
 * is a stopping time for what it records, and each window stops by what
 * it has already run (its loop closed, its reach spent), so the counts
 * summed over windows give each outcome's share without bias for
 * branches whose outcomes do not depend on where the time went before
 * them (docs/value-sampling.md, "Branch outcomes"). AS-safe.
 */
#include "preload/window.h"
#include "spool/hotlist.h"

void preload_branches_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r,
			   int branches)
{
	const struct interp_insn *in = r->insn;
	if (w->n <= 1)
		return;
	if (preload_window_is_indirect(in))
		preload_window_put(w, SPOOL_VK_TARGET, in->pc, st->rip, 0);
	if (!branches)
		return;
	int taken = st->rip != in->pc + in->len;
	if (preload_window_is_cond_branch(in))
		preload_window_put(w, SPOOL_VK_BRANCH, in->pc, taken, 0);
	if (!taken)
		return;
	/* A range is whole only between two taken branches the window ran:
	 * the first starts at the sample, the last is cut by the window's end. */
	if (w->range_start)
		preload_window_put(w, SPOOL_VK_RANGE, w->range_start, in->pc, 0);
	preload_window_put(w, SPOOL_VK_TAKEN, in->pc, st->rip, 0);
	w->range_start = st->rip;
}
