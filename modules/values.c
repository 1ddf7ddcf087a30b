/*
 * values: vprof's default value capture (preload/value_sample.c, observe())
 * written as a customization module, to show the API: every instruction;
 * its first result, first two sources (each also paired with the call
 * site), the first effective address, the first timed load's latency bin
 * (also paired with its address), an indirect branch's target, and the
 * return address of the procedure (the denominator of the *_BY_SITE
 * shares). `vprof run --module values` records what `--values` does.
 */
#include <vprof-module.h>

/* vprof's latency bins (spool/hotlist.c, spool_hot_latency_bin): exact
 * below 16 ticks, then four bins per power of two. */
static uint64_t latency_bin(uint64_t c)
{
	if (c < 16)
		return c;
	int top = 63 - __builtin_clzll(c);
	return c & ~((1ull << (top - 2)) - 1);
}

static void sequence(const struct vprof_sequence *s)
{
	uint64_t site = s->retaddr;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct vprof_tuple *t = &s->tuple[i];
		if (site)
			s->emit(s, VPROF_KIND_RETADDR, t->pc, site, 0);
		for (unsigned k = 0; k < t->nsource && k < 2; k++) {
			s->emit(s, k ? VPROF_KIND_SRC2 : VPROF_KIND_SRC1, t->pc, t->source[k], 0);
			if (site)
				s->emit(s, k ? VPROF_KIND_SRC2_BY_SITE : VPROF_KIND_SRC1_BY_SITE, t->pc,
					t->source[k], site);
		}
		if (t->nresult) {
			s->emit(s, VPROF_KIND_RESULT, t->pc, t->result[0], 0);
			if (site)
				s->emit(s, VPROF_KIND_RESULT_BY_SITE, t->pc, t->result[0], site);
		}
		if (t->naccess)
			s->emit(s, VPROF_KIND_ADDR, t->pc, t->access[0].addr, 0);
		for (unsigned k = 0; k < t->naccess; k++)
			if (!t->access[k].write && t->access[k].latency) {
				uint64_t bin = latency_bin(t->access[k].latency);
				s->emit(s, VPROF_KIND_LATENCY, t->pc, bin, 0);
				s->emit(s, VPROF_KIND_ADDR_LATENCY, t->pc, t->access[k].addr, bin);
				break;
			}
		if (t->cls & VPROF_INSN_INDIRECT)
			s->emit(s, VPROF_KIND_TARGET, t->pc, t->next, 0);
	}
}

VPROF_MODULE_EXPORT const struct vprof_module vprof_module = {
	.api_version = VPROF_MODULE_API_VERSION,
	.name = "values",
	.capture = VPROF_CAP_ALL | VPROF_CAP_RESULTS | VPROF_CAP_SOURCES | VPROF_CAP_ADDRESSES |
		   VPROF_CAP_LATENCY | VPROF_CAP_SITE,
	.sequence = sequence,
};
