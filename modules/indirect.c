/*
 * indirect: the targets of indirect calls and jumps, nothing else (no
 * unwinding, no load timing): which virtual call or function pointer has
 * one dominant target (devirtualize, or inline it behind a guard), and an
 * interpreter's dispatch histogram (its `jmp *table(,%rax,8)`). Value =
 * the target, kind TARGET, shown as symbol+offset by the reports:
 *
 *     vprof run --module indirect -- lua5.4 script.lua
 *     vprof list luaV_execute        # the dispatch jmp's targets, by share
 *     vprof invariants               # one-target call sites first
 */
#include <vprof-module.h>

/* A branch at index 0 is the one the sample landed on, and samples land
 * more often on a stalled branch: a mispredicted one, that is a rare
 * target. Counting only branches the run reached by executing forward
 * from a random point keeps the target shares unbiased (on
 * tests/fixtures/mod_dispatch.c, with index 0: 66-68% for a 70% target). */
static void sequence(const struct vprof_sequence *s)
{
	for (uint32_t i = 0; i < s->n; i++)
		if ((s->tuple[i].cls & VPROF_INSN_INDIRECT) && s->tuple[i].index > 0)
			s->emit(s, VPROF_KIND_TARGET, s->tuple[i].pc, s->tuple[i].next, 0);
}

VPROF_MODULE_EXPORT const struct vprof_module vprof_module = {
	.api_version = VPROF_MODULE_API_VERSION,
	.name = "indirect",
	.capture = VPROF_CAP_INDIRECT,
	.sequence = sequence,
};
