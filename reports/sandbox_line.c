/*
 * The words `vprof run`'s summary and `vprof report` use for threads whose
 * sampling stopped at a seccomp sandbox (preload/sandbox.c): entering one
 * that forbids calls sampling needs, or at a call of vprof's that one
 * refused, and the threads made inside one, never sampled.
 */
#include "reports/report.h"
#include "merge/profile_format.h"

#include <stdio.h>

static const char *plural(uint64_t n)
{
	return n == 1 ? "" : "s";
}

int report_sandbox_line(const struct merge_stats *s, char *out, size_t cap)
{
	unsigned long long st = s->sandbox_stopped, rf = s->sandbox_refused, un = s->sandbox_unarmed;
	size_t o = 0;
	out[0] = 0;
	if (st && rf)
		o += (size_t)snprintf(out, cap,
				      "sampling stopped in %llu threads at seccomp sandboxes: %llu forbid "
				      "calls sampling makes, %llu refused a call of vprof's",
				      st + rf, st, rf);
	else if (st)
		o += (size_t)snprintf(out, cap,
				      "sampling stopped in %llu thread%s at a seccomp sandbox that forbids "
				      "calls sampling makes", st, plural(st));
	else if (rf)
		o += (size_t)snprintf(out, cap,
				      "sampling stopped in %llu thread%s at a seccomp sandbox that refused a "
				      "call of vprof's", rf, plural(rf));
	if (un && o < cap)
		o += (size_t)snprintf(out + o, cap - o, "%s%llu thread%s made inside one not sampled",
				      o ? "; " : "", un, plural(un));
	return o > 0;
}
