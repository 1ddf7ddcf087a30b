/*
 * stride: address strides per instruction, for prefetching and
 * vectorizing. For each load or store, the stride is its address minus
 * the previous address the same instruction used in this thread within
 * the same interpreted run (kind STRIDE, shown signed). Only within a
 * run: between two value samples the thread ran an unknown number of
 * iterations, so the difference across runs is a random multiple of the
 * stride, noise in the hotlist. Runs must be longer than the loop body
 * for strides to appear: `--interp-len 16` or more.
 *
 * The last address per instruction lives in the per-thread scratch area
 * vprof gives the module: a small direct-mapped table, tagged with a run
 * number so that it needs no clearing between runs.
 */
#include <vprof-module.h>

#define SLOTS 256

struct slot {
	uint64_t pc, addr, run;
};
struct scratch {
	uint64_t run;
	struct slot slot[SLOTS];
};

static void sequence(const struct vprof_sequence *s)
{
	struct scratch *sc = s->scratch;
	uint64_t run = ++sc->run;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct vprof_tuple *t = &s->tuple[i];
		if (!t->naccess)
			continue;
		uint64_t a = t->access[0].addr;
		struct slot *sl = &sc->slot[(t->pc ^ t->pc >> 9) % SLOTS];
		if (sl->pc == t->pc && sl->run == run)
			s->emit(s, VPROF_KIND_STRIDE, t->pc, a - sl->addr, 0);
		sl->pc = t->pc;
		sl->addr = a;
		sl->run = run;
	}
}

VPROF_MODULE_EXPORT const struct vprof_module vprof_module = {
	.api_version = VPROF_MODULE_API_VERSION,
	.name = "stride",
	.capture = VPROF_CAP_LOADS | VPROF_CAP_STORES | VPROF_CAP_ADDRESSES,
	.scratch_size = sizeof(struct scratch),
	.sequence = sequence,
};
