/*
 * The words `vprof run`'s summary and `vprof report` use for the bound on
 * vprof's own cost (preload/selflimit.c): which threads had their sampling
 * rate lowered, for how much CPU, the rate they got there, and what the
 * cost was made of: the handler and drains (measured) and the kernel's
 * work on each sample (calibrated).
 */
#include "reports/report.h"
#include "merge/profile_format.h"

#include <stdio.h>

int report_selflimit_line(const struct merge_stats *s, int max_cost, char *out, size_t cap)
{
	size_t o = 0;
	out[0] = 0;
	if (!s->limit_threads && !s->limit_interp_threads)
		return 0;
	if (max_cost > 0)
		o += (size_t)snprintf(out + o, cap - o, "vprof's cost over its bound of %d%% (--max-cost):",
				      max_cost);
	else
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
		o += (size_t)snprintf(out + o, cap - o, "; handler and drains %.1f%%",
				      100.0 * (double)s->cost_ns / (double)s->cpu_ns);
	if (s->cpu_ns && s->kernel_cost_samples && o < cap)
		o += (size_t)snprintf(out + o, cap - o, ", the kernel's sampling %.1f%% (%.1f us a sample)",
				      100.0 * (double)s->kernel_cost_ns / (double)s->cpu_ns,
				      (double)s->kernel_cost_ns / (double)s->kernel_cost_samples / 1e3);
	if (s->cpu_ns && o < cap)
		o += (size_t)snprintf(out + o, cap - o, " of the CPU");
	return 1;
}
