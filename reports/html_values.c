/*
 * html_values.c — the answers of a value profile on the `vprof html`
 * page: the invariants view (reports/invariants.c's ranking, as `vprof
 * invariants` prints it at its defaults) and the load-latency view
 * (reports/latency_rank.c's, as `vprof latency`), and with a cache
 * simulation the memory view (reports/memory_rank.c's, as `vprof
 * memory`). Each is a sortable table
 * whose rows lead with the same English sentence as the command, values
 * typed (2.0, 3 (0x3)), and link to the procedure's listing when the page
 * has one. Every string from the profile goes through report_html_text().
 * Single-threaded, nothing async-signal-safe.
 */
#include "reports/html.h"
#include "reports/invariants.h"
#include "reports/latency_rank.h"
#include "reports/memory_rank.h"

#include <string.h>

#define HTML_VIEW_ROWS 30       /* rows per view */

/* The procedure's name, a link to its listing when the page has one. */
static void proc_link(FILE *f, const char *proc, uint32_t image, report_html_listing_fn *listing, void *ctx)
{
	size_t k = listing ? listing(ctx, image, proc) : 0;
	if (k)
		fprintf(f, "<a href=\"#dis-%zu\">", k);
	report_html_text(f, proc);
	if (k)
		fputs("</a>", f);
}

static void num_cell(FILE *f, double v, const char *fmt)
{
	fprintf(f, "<td class=\"n\" data-v=\"%.6f\">", v);
	fprintf(f, fmt, 100 * v);
	fputs("</td>", f);
}

void report_html_invariants(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx)
{
	struct report_inv_opts op = { .min_share = 0.5, .min_time = 0.005, .min_vtot = 20 };
	struct report_inv_result r;
	char sb[600], sh[64];
	size_t nhidden = 0;
	report_inv_rank(vm, &op, &r);
	for (int k = 0; k < VALUE_NCLASS; k++)
		nhidden += r.hidden[k];

	fputs("<h2 id=\"invariants\">Invariants</h2>\n<p class=\"note\">Values worth specializing for, as "
	      "<code>vprof invariants</code> ranks them: code that takes real time and sees one value "
	      "most of the time. weight = time &times; share; time is that of the code depending on the "
	      "value (for an argument, the callee's inclusive time from that call site, ", f);
	fputs(r.stacks ? "from recorded stacks" : "estimated from return-address samples", f);
	fputs("; for an operand, its line's); share is the value's part of the value samples, with its "
	      "95% interval.", f);
	if (nhidden)
		fprintf(f, " Hidden: %zu constant, %zu frame, %zu position rows (not data: <code>vprof "
			   "invariants --all</code> shows them).",
			r.hidden[VALUE_CONSTANT], r.hidden[VALUE_FRAME], r.hidden[VALUE_POSITION]);
	if (r.skipped)
		fprintf(f, " %zu hotlists or call sites with fewer than %llu value samples were skipped.", r.skipped,
			(unsigned long long)op.min_vtot);
	fputs("</p>\n", f);
	if (!r.n) {
		fputs("<p class=\"none\" id=\"invariants-none\">No invariant candidates above the thresholds.</p>\n", f);
		report_inv_result_free(&r);
		return;
	}
	fputs("<table class=\"views sortable\" id=\"invariants-table\"><thead><tr>"
	      "<th class=\"n\" data-type=\"num\">weight</th><th class=\"n\" data-type=\"num\">time</th>"
	      "<th class=\"n\" data-type=\"num\">share</th><th data-type=\"text\">value</th>"
	      "<th data-type=\"text\">suggestion</th></tr></thead><tbody>\n", f);
	for (size_t i = 0; i < r.n && i < HTML_VIEW_ROWS; i++) {
		const struct report_inv_row *x = &r.rows[i];
		fputs("<tr>", f);
		num_cell(f, x->weight, "%.1f%%");
		num_cell(f, x->time, "%.1f%%");
		fprintf(f, "<td class=\"n\" data-v=\"%.6f\">", x->share);
		report_html_text(f, report_inv_share_text(x, sh, sizeof(sh)));
		fputs("</td><td class=\"val\" data-type=\"", f);
		report_html_text(f, x->value_type ? x->value_type : "");
		fputs("\">", f);
		report_html_text(f, x->report_value_text ? x->report_value_text : "?");
		fputs("</td><td class=\"say\"><span class=\"sentence\">", f);
		report_html_text(f, x->sentence);
		fputs("</span><br><span class=\"where\">", f);
		report_html_text(f, x->kinds);
		fputs(" at ", f);
		proc_link(f, x->at.proc, x->v->image, listing, ctx);
		fprintf(f, "+%#llx ", (unsigned long long)(x->v->vaddr - x->at.start));
		if (x->insn) {
			fputs("<code>", f);
			report_html_text(f, x->insn);
			fputs("</code> ", f);
		}
		report_html_text(f, report_value_source(&x->at, sb, sizeof(sb)));
		fprintf(f, "; %.0f value samples</span></td></tr>\n", x->n);
	}
	fputs("</tbody></table>\n", f);
	if (r.n > HTML_VIEW_ROWS)
		fprintf(f, "<p class=\"note\">%zu more rows: <code>vprof invariants -n 0</code>.</p>\n",
			r.n - HTML_VIEW_ROWS);
	report_inv_result_free(&r);
}

void report_html_latency(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx)
{
	struct report_lat_result r;
	report_lat_rank(vm, &r);
	fputs("<h2 id=\"latency\">Load latency</h2>\n<p class=\"note\">Loads that wait on memory, as "
	      "<code>vprof latency</code> ranks them. ", f);
	report_html_text(f, report_lat_estimator);
	fputs(". Latencies are TSC ticks of rdtscp; load; rdtscp. ", f);
	if (vm->nlevels) {
		fputs("Levels (vprof calibrate):", f);
		for (int i = 0; i < vm->nlevels; i++) {
			fputs(i ? ", " : " ", f);
			report_html_text(f, vm->levels[i].name);
			fprintf(f, " ~%llu", (unsigned long long)vm->levels[i].typical);
		}
		fputs(" cycles.", f);
	} else {
		fputs("No calibration in the database: bins in cycles only, stall not split from time "
		      "(run <code>vprof calibrate</code>).", f);
	}
	fputs("</p>\n", f);
	if (!r.n) {
		fputs("<p class=\"none\" id=\"latency-none\">No load latencies in this epoch.</p>\n", f);
		report_lat_result_free(&r);
		return;
	}
	fputs("<table class=\"views sortable\" id=\"latency-table\"><thead><tr>"
	      "<th class=\"n\" data-type=\"num\">stall</th><th class=\"n\" data-type=\"num\">time</th>"
	      "<th class=\"n\" data-type=\"num\">mean</th><th class=\"n\" data-type=\"num\">vtot</th>"
	      "<th data-type=\"text\">load</th></tr></thead><tbody>\n", f);
	for (size_t i = 0; i < r.n && i < HTML_VIEW_ROWS; i++) {
		const struct report_lat_row *l = &r.rows[i];
		const struct report_value_hot *v = l->v;
		fputs("<tr>", f);
		num_cell(f, l->stall, "%.1f%%");
		num_cell(f, l->time, "%.1f%%");
		fprintf(f, "<td class=\"n\" data-v=\"%.2f\">%.0f</td>", l->mean, l->mean);
		fprintf(f, "<td class=\"n\" data-v=\"%llu\">%llu</td>", (unsigned long long)v->h.vtot,
			(unsigned long long)v->h.vtot);
		fputs("<td class=\"say\"><span class=\"sentence\">", f);
		report_html_text(f, l->sentence);
		fputs("</span><br><span class=\"where\">bins:", f);
		for (int b = 0; b < l->nbins && b < 6; b++) {
			fprintf(f, "%s %llu", b ? "," : "", (unsigned long long)l->bins[b].cycles);
			if (l->bins[b].level) {
				fputs(" (", f);
				report_html_text(f, l->bins[b].level);
				fputs(")", f);
			}
			fprintf(f, " %.0f%%", 100 * l->bins[b].est / l->est);
		}
		fputs(l->nbins > 6 ? ", &hellip;; " : "; ", f);
		proc_link(f, v->w.proc, v->image, listing, ctx);
		fprintf(f, "+%#llx</span></td></tr>\n", (unsigned long long)(v->vaddr - v->w.start));
	}
	fputs("</tbody></table>\n", f);
	if (r.n > HTML_VIEW_ROWS)
		fprintf(f, "<p class=\"note\">%zu more loads: <code>vprof latency -n 0</code>.</p>\n",
			r.n - HTML_VIEW_ROWS);
	report_lat_result_free(&r);
}

int report_html_has_values(const struct report_value_model *vm)
{
	for (size_t i = 0; i < vm->nhot; i++)
		if (!spool_hot_kind_is_record(vm->hot[i].kind))
			return 1;
	return 0;
}

int report_html_has_memory(const struct report_value_model *vm)
{
	for (size_t i = 0; i < vm->nhot; i++)
		if (vm->hot[i].kind == SPOOL_VK_CACHE)
			return 1;
	return 0;
}

/* One table of memory rows: procedures (linked to their listings) or
 * data objects (listing NULL). */
static void mem_table(FILE *f, const struct report_mem_result *r, const char *id, const char *what,
		      report_html_listing_fn *listing, void *ctx)
{
	char a[64], b[64];
	fprintf(f, "<table class=\"views sortable\" id=\"%s\"><thead><tr>"
		   "<th class=\"n\" data-type=\"num\">stall</th><th class=\"n\" data-type=\"num\">refs</th>"
		   "<th class=\"n\" data-type=\"num\">D1 miss</th><th class=\"n\" data-type=\"num\">LL miss</th>"
		   "<th class=\"n\" data-type=\"num\">LL unk</th><th data-type=\"text\">%s</th></tr></thead><tbody>\n",
		id, what);
	for (size_t i = 0; i < r->n && i < HTML_VIEW_ROWS; i++) {
		const struct report_mem_row *x = &r->rows[i];
		double lo, d1, ll, hi;
		report_mem_d1(&x->t, &lo, &d1, &hi);
		report_mem_ll(&x->t, &lo, &ll, &hi);
		fputs("<tr>", f);
		num_cell(f, r->stall_all > 0 ? x->stall / r->stall_all : 0, "%.1f%%");
		fprintf(f, "<td class=\"n\" data-v=\"%.0f\">%.0f</td>", x->t.refs, x->t.refs);
		fprintf(f, "<td class=\"n\" data-v=\"%.6f\">", x->t.refs > 0 ? d1 / x->t.refs : 0);
		report_html_text(f, report_mem_rates_text(&x->t, 0, a, sizeof(a)));
		fprintf(f, "</td><td class=\"n\" data-v=\"%.6f\">", x->t.refs > 0 ? ll / x->t.refs : 0);
		report_html_text(f, report_mem_rates_text(&x->t, 1, b, sizeof(b)));
		fputs("</td>", f);
		num_cell(f, report_mem_ll_unknown(&x->t), "%.0f%%");
		fputs("<td class=\"name\">", f);
		if (listing)
			proc_link(f, x->proc, x->image, listing, ctx);
		else
			report_html_text(f, x->proc);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n", f);
	if (r->n > HTML_VIEW_ROWS)
		fprintf(f, "<p class=\"note\">%zu more rows: <code>vprof memory%s -n 0</code>.</p>\n",
			r->n - HTML_VIEW_ROWS, listing ? "" : " --by object");
}

void report_html_memory(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx)
{
	struct report_mem_result r;
	char geom[80] = "unknown", a[64], b[64];
	report_mem_rank(vm, REPORT_MEM_BY_PROC, &r);
	if (r.have_geom)
		spool_cache_geom_text(&r.geom, geom, sizeof(geom));
	fputs("<h2 id=\"memory\">Memory</h2>\n<p class=\"note\">Data-cache misses, as <code>vprof memory</code> "
	      "ranks them: each data reference of the windows of <code>vprof run --cachesim</code> through a "
	      "simulated ", f);
	report_html_text(f, geom);
	fprintf(f, " (docs/cache-simulation.md); %.0f references, median window %.0f instructions. Rates are "
		   "misses per reference: the estimate, then its bounds (a line's first touch in a window is "
		   "unknown: every unknown a hit, or a miss). Whole run: D1 ", r.all.refs, r.median_window);
	report_html_text(f, report_mem_rates_text(&r.all, 0, a, sizeof(a)));
	fputs(", LL ", f);
	report_html_text(f, report_mem_rates_text(&r.all, 1, b, sizeof(b)));
	fprintf(f, ". stall: the share of D1 misses &times; %.0f + LL misses &times; %.0f cycles (%s); LL unk: "
		   "the share unknown at LL, where the LL rate is a guess.</p>\n", r.l2_cycles, r.mem_cycles,
		r.calibrated ? "vprof calibrate's levels" : "nominal");
	if (!r.n) {
		fputs("<p class=\"none\" id=\"memory-none\">No data references in the windows.</p>\n", f);
		report_mem_result_free(&r);
		return;
	}
	mem_table(f, &r, "memory-table", "procedure", listing, ctx);
	struct report_mem_result o;
	report_mem_rank(vm, REPORT_MEM_BY_OBJECT, &o);
	if (o.n) {
		fputs("<h3 id=\"memory-objects\">Data objects</h3>\n<p class=\"note\">The same references by the "
		      "data they touched (<code>vprof memory --by object</code>): a stack frame as <code>[stack] "
		      "F</code>, a global by its symbol, a heap block of 4 KiB or more by the line that allocated "
		      "it, other mappings and smaller blocks as one row.</p>\n", f);
		mem_table(f, &o, "memory-objects-table", "object", NULL, NULL);
	}
	report_mem_result_free(&o);
	report_mem_result_free(&r);
}
