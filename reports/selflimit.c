/*
 * The words `vprof run`'s summary and `vprof report` use for the bound on
 * vprof's own cost (preload/selflimit.c, issue 8): which threads had their
 * sampling rate lowered, for how much CPU, and the rate they got there.
 */
#include "reports/report.h"
#include "merge/format.h"

#include <stdio.h>

int report_selflimit_line(const struct merge_stats *s, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	if (!s->limit_threads && !s->limit_interp_threads)
		return 0;
	o += (size_t)snprintf(out + o, cap - o, "vprof's cost over its bound:");
	if (s->limit_threads && o < cap) {
		double cpu = (double)s->limit_cpu_ns / 1e9;
		o += (size_t)snprintf(out + o, cap - o,
				      " rate lowered in %llu thread%s for %.2f CPU-s, %.0f Hz there",
				      (unsigned long long)s->limit_threads,
				      s->limit_threads == 1 ? "" : "s", cpu,
				      cpu > 0 ? (double)s->limit_samples / cpu : 0.0);
	}
	if (s->limit_interp_threads && o < cap)
		o += (size_t)snprintf(out + o, cap - o, "%s interpretation thinned in %llu thread%s",
				      s->limit_threads ? ";" : "",
				      (unsigned long long)s->limit_interp_threads,
				      s->limit_interp_threads == 1 ? "" : "s");
	if (s->cpu_ns && o < cap)
		o += (size_t)snprintf(out + o, cap - o, "; handler and drains %.1f%% of the CPU",
				      100.0 * (double)s->cost_ns / (double)s->cpu_ns);
	return 1;
}
