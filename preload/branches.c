/*
 * The window's branch consumer (window.h): where branches went.
 *
 * Every indirect call or jump the window runs records its target
 * (SPOOL_VK_TARGET: `vprof targets`, the call-target rows of `vprof
 * invariants`). With `vprof run --branches`, the window is a software
 * LBR: every conditional branch records its outcome (SPOOL_VK_BRANCH,
 * value 1 taken, 0 fell through: `vprof branches`; a hotlist of two
 * values never thins, so the merged counts are the windows' exact
 * counts), every call and jump its target (SPOOL_VK_TAKEN), and every
 * range run straight through between two taken branches its last
 * instruction, keyed at its first (SPOOL_VK_RANGE): what `vprof export
 * --format autofdo-text` writes for AutoFDO's create_llvm_prof. A range
 * is also counted once per window that ran it (SPOOL_RANGE_WINDOWS), the
 * independent samples behind its count; a record that finds no room in
 * the window's table is not (its window count falls short: its error
 * bar is wider, not narrower).
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

/* Count a record in the window's table; one that finds no room goes to
 * its hotlist at once. */
static void rec(struct preload_window *w, unsigned kind, uint64_t pc, uint64_t value)
{
	uint64_t h = (pc ^ (value * 0x9e3779b97f4a7c15ull) ^ kind) * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		struct preload_branch_rec *e = &w->br[((h >> 56) + p) & (WINDOW_BRANCH_RECS - 1)];
		if (e->n && e->pc == pc && e->value == value && e->kind == kind) {
			e->n++;
			return;
		}
		if (!e->n) {
			*e = (struct preload_branch_rec){ pc, value, kind, 1 };
			return;
		}
	}
	preload_window_put(w, kind, pc, value, 0);
}

void preload_branches_end(struct preload_window *w)
{
	for (unsigned i = 0; i < WINDOW_BRANCH_RECS; i++) {
		struct preload_branch_rec *e = &w->br[i];
		if (e->n) {
			preload_window_put_n(w, e->kind, e->pc, e->value, 0, e->n);
			if (e->kind == SPOOL_VK_RANGE)
				preload_window_put(w, e->kind, e->pc, e->value, SPOOL_RANGE_WINDOWS);
			e->n = 0;
		}
	}
}

void preload_branches_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r)
{
	const struct interp_insn *in = r->insn;
	if (w->n <= 1)
		return;
	if (preload_window_is_indirect(in))
		preload_window_put(w, SPOOL_VK_TARGET, in->pc, st->rip, 0);
	if (!w->branches)
		return;
	int taken = st->rip != in->pc + in->len;
	if (preload_window_is_cond_branch(in))
		rec(w, SPOOL_VK_BRANCH, in->pc, taken);
	if (!taken)
		return;
	/* A range is whole only between two taken branches the window ran:
	 * the first starts at the sample, the last is cut by the window's end. */
	if (w->range_start)
		rec(w, SPOOL_VK_RANGE, w->range_start, in->pc);
	/* Calls and unconditional jumps (a tail call is a jump to a
	 * function's first byte): a conditional branch's target is in the
	 * instruction and how often it was taken in the ranges that end
	 * there, and returns go back to their call. */
	if (in->mnemonic == ZYDIS_MNEMONIC_CALL || in->mnemonic == ZYDIS_MNEMONIC_JMP)
		rec(w, SPOOL_VK_TAKEN, in->pc, st->rip);
	w->range_start = st->rip;
}
