/*
 * html.h — the self-contained HTML report (vprof html, cmd_html.c): the
 * flame graph's data (html_flame.c), the value profile's views
 * (html_values.c), escaping for HTML text and for JSON
 * inlined into a page, and the script and style compiled in by
 * scripts/embed.sh (reports/html/). Nothing here is async-signal-safe.
 */
#ifndef VPROF_REPORTS_HTML_H
#define VPROF_REPORTS_HTML_H

#include "reports/model.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One folded stack: frames[0] is the root, frames[depth - 1] the leaf.
 * The type of stack_model.h's report_stack_fn (branch stacks): non-zero stops. */
typedef int report_html_stack_fn(const char *const *frames, size_t depth, uint64_t count, void *arg);

/*
 * Call fn once per folded stack of event ev of m, root first, and return
 * what the page should say of them (one sentence, plain text). The
 * adapter between the profile and the flame graph: today each stack is
 * what `vprof export --format folded` writes without recorded call
 * stacks, "image;procedure" (the image's file name), one per procedure,
 * the counts summing to the event's samples. With recorded stacks this is
 * the one function to point at report_stacks_foreach().
 */
const char *report_html_for_each_stack(const struct report_model *m, unsigned ev, report_html_stack_fn *fn,
				       void *arg);

/* Write the flame graph's data as JSON for report.js:
 * {"unit":..., "total":N, "names":[...], "stacks":[[count, name index...]...]}
 * escaped for a <script> element (see report_html_json_str). Returns the note of
 * report_html_for_each_stack(). */
const char *report_html_flame_json(FILE *f, const struct report_model *m, unsigned ev);

/* s as HTML text (also safe inside a quoted attribute): & < > " ' escaped. */
void report_html_text(FILE *f, const char *s);

/* s as a JSON string literal that can sit inside <script>: besides JSON's
 * own escapes, <, > and & are written as \u003c, \u003e, \u0026. */
void report_html_json_str(FILE *f, const char *s);

/* html_values.c: the invariants and load-latency views of a value
 * profile, each a heading, a note on the estimate and a sortable table
 * (ids "invariants" and "latency"). listing(ctx, image, proc) gives the
 * number K of the procedure's listing on the page (id "dis-K"), 0 when
 * it has none. */
struct report_value_model;
typedef size_t report_html_listing_fn(void *ctx, uint32_t image, const char *proc);
void report_html_invariants(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx);
void report_html_latency(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx);
/* Does the epoch hold values (operands, arguments, latencies: not only
 * branch records or cache outcomes)? The invariants and latency views are
 * shown then. */
int report_html_has_values(const struct report_value_model *vm);
/* The memory view (vprof memory's rows), when the epoch has a cache
 * simulation (has_memory). */
int report_html_has_memory(const struct report_value_model *vm);
void report_html_memory(FILE *f, struct report_value_model *vm, report_html_listing_fn *listing, void *ctx);

/* The page's script and style (reports/html/, built into the binary). */
extern const char report_html_asset_report_js[], report_html_asset_report_css[];
extern const size_t report_html_asset_report_js_len, report_html_asset_report_css_len;

#endif
