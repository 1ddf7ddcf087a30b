/*
 * Operand values of the interpreted window (window.h): the hotlists of
 * `vprof invariants`, `list` and `latency`.
 *
 * For each instruction the window commits, what it computed is noted:
 * its first result (RESULT), its first two register or memory sources
 * (SRC1, SRC2; immediates are constant by construction and skipped), the
 * effective address of its first memory access (ADDR) and the latency of
 * its first timed load, binned (LATENCY; with the address, ADDR_LATENCY).
 * Only K (VPROF_INTERP_LEN) instructions reach the hotlists, when the
 * window ends:
 * the last ones before the run came back to its start (the loop closed),
 * which are the instructions the sample's time was spent in, since an
 * interrupt is taken after the instruction that cost the time; else the
 * first ones, the paper's forward window. Each goes in with the call site
 * it ran for (the *_BY_SITE kinds, and RETADDR as their denominator).
 * A value that is an address in the thread's own stack names a frame,
 * not data: it is kept with aux SPOOL_HOT_AUX_STACK, and not per site.
 *
 * Indirect call and jump targets (TARGET) are offered as they happen,
 * anywhere in the window, but for the branch the sample landed on: a
 * mispredicted (rare) target stalls there, so samples land on it more
 * often (66-68% for a 70% target, tests/modules.sh).
 */
#include "preload/window.h"
#include "spool/hotlist.h"

#include <string.h>

enum { V_RESULT, V_SRC1, V_SRC2, V_ADDR, V_LAT = 4 };

void preload_operands_begin(struct preload_window *w)
{
	struct preload_operands_state *o = &w->ops;
	o->nfirst = o->nlast = 0;
	/* The window's first load was most likely in flight when the
	 * interrupt came (issued out of order before the interrupted
	 * instruction retired, even in a dependent chain) and its line has
	 * arrived since: timed again it looks like a hit. Not kept. */
	o->lat_skip = 1;
	o->lat_wait = 0;
	o->last_branch = -1;
}

static void note(struct preload_window *w, const struct interp_record *r, struct preload_operands_insn *c)
{
	const struct interp_insn *in = r->insn;
	int nsrc = 0, ndst = 0;
	c->pc = in->pc;
	c->site = w->site;
	c->have = c->stack = 0;
	for (int i = 0; i < in->nvis; i++) {
		const struct interp_operand *op = &in->op[i];
		if (op->type != INTERP_OP_REG && op->type != INTERP_OP_MEM)
			continue;
		if (op->type == INTERP_OP_REG &&
		    (op->rkind == INTERP_RK_FLAGS || op->rkind == INTERP_RK_RIP || op->rkind == INTERP_RK_OTHER))
			continue;
		if ((r->src_mask >> i & 1) && nsrc < 2) {
			c->val[V_SRC1 + nsrc] = r->src[i];
			c->have |= 1u << (V_SRC1 + nsrc);
			nsrc++;
		}
		if ((r->dst_mask >> i & 1) && !ndst) {
			c->val[V_RESULT] = r->dst[i];
			c->have |= 1u << V_RESULT;
			ndst++;
		}
	}
	uint32_t na = r->naccess < INTERP_MAX_ACCESS ? r->naccess : INTERP_MAX_ACCESS;
	if (na) {
		c->val[V_ADDR] = r->acc[0].addr;
		c->have |= 1u << V_ADDR;
	}
	for (uint32_t i = 0; i < na; i++) {
		if (r->acc[i].write || !r->acc[i].latency)
			continue;
		if (w->ops.lat_skip) {
			w->ops.lat_skip = 0;
			w->ops.lat_wait = 1;
		} else {
			w->ops.lat_wait = 0;
			c->lat = spool_hot_latency_bin(r->acc[i].latency);
			c->lat_addr = r->acc[i].addr;
			c->have |= 1u << V_LAT;
		}
		break;
	}
	for (int i = V_RESULT; i <= V_ADDR; i++)
		if ((c->have >> i & 1) && preload_window_is_stack(w, c->val[i]))
			c->stack |= 1u << i;
}

void preload_operands_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r)
{
	struct preload_operands_state *o = &w->ops;
	const struct interp_insn *in = r->insn;
	struct preload_operands_insn *c = &o->last[o->nlast++ % o->keep];
	note(w, r, c);
	if (o->nfirst < o->keep)
		o->first[o->nfirst++] = *c;
	int indirect = preload_window_is_indirect(in);
	/* A loop's back edge, taken, only says the loop went on: the values
	 * before it are not chosen by it the way a case's are by a switch
	 * (and a chase recorded one load a window without this, four with). */
	if (indirect || (preload_window_is_cond_branch(in) && st->rip > in->pc))
		o->last_branch = o->nlast - 1;
}

static const unsigned kKind[4] = { SPOOL_VK_RESULT, SPOOL_VK_SRC1, SPOOL_VK_SRC2, SPOOL_VK_ADDR };
static const unsigned kSiteKind[3] = { SPOOL_VK_RESULT_BY_SITE, SPOOL_VK_SRC1_BY_SITE,
				       SPOOL_VK_SRC2_BY_SITE };

static void offer(struct preload_window *w, const struct preload_operands_insn *c)
{
	if (c->site)
		preload_window_put(w, SPOOL_VK_RETADDR, c->pc, c->site, 0);
	for (int i = V_RESULT; i <= V_ADDR; i++) {
		if (!(c->have >> i & 1))
			continue;
		int stack = c->stack >> i & 1;
		preload_window_put(w, kKind[i], c->pc, c->val[i], stack ? SPOOL_HOT_AUX_STACK : 0);
		if (i < V_ADDR && c->site && !stack)
			preload_window_put(w, kSiteKind[i], c->pc, c->val[i], c->site);
	}
	if (c->have >> V_LAT & 1) {
		preload_window_put(w, SPOOL_VK_LATENCY, c->pc, c->lat, 0);
		preload_window_put(w, SPOOL_VK_ADDR_LATENCY, c->pc, c->lat_addr, c->lat);
	}
}

void preload_operands_end(struct preload_window *w)
{
	struct preload_operands_state *o = &w->ops;
	/* After a closed loop: the last K, but none at or before the last
	 * branch that could have gone elsewhere (an indirect branch, or a
	 * conditional one but a loop's back edge taken). The run came back to its
	 * start through that branch's outcome, so what decided it would be
	 * recorded only when it led here: a switch's opcode load, recorded
	 * from samples in case 1's code, always read 1 (opcode 1 in 23% for
	 * 20% dispatched). If nothing is left, the forward window. */
	int lo = o->nlast - (o->nlast < o->keep ? o->nlast : o->keep);
	if (lo <= o->last_branch)
		lo = o->last_branch + 1;
	if (w->closed && lo < o->nlast) {
		for (int i = lo; i < o->nlast; i++)
			offer(w, &o->last[i % o->keep]);
		return;
	}
	for (int i = 0; i < o->nfirst; i++)
		offer(w, &o->first[i]);
}
