/*
 * vprof hazards: the memory-order hazards the windows of `vprof run
 * --hazards` found (preload/hazards.c): per (load, store, kind) the times
 * a window saw it, the share of the load's executions in those windows,
 * the instructions from the store to the load, and both sides as
 * procedure+offset and source line. Most seen first.
 */
#include "reports/builtin.h"
#include "reports/value_model.h"
#include "reports/table.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof hazards [--db DIR] [--epoch N|all] [-n ROWS] [--json]\n"
	"  Memory-order hazards from the windows of vprof run --hazards: each load\n"
	"  checked against the stores a core would still hold (the last 48 stores,\n"
	"  within 64 instructions). forward: store forwarding fails (the youngest\n"
	"  store the load overlaps does not hold all its bytes: a narrow store\n"
	"  under a wide load, a partial overlap), so the load waits for the store\n"
	"  to reach the cache; 4k-alias: the load matches an in-flight store in\n"
	"  address bits 11:0 but not its page. A 4K pair whose load address comes\n"
	"  from the store's own data is dropped (a true dependence). Per pair: the\n"
	"  times seen, the share of the load's executions in the windows that saw\n"
	"  it, the distance in instructions, and the load and the store with their\n"
	"  source lines. Most seen first.\n"
	"  -n ROWS       rows to show (default 30; 0: all)\n"
	"  --json        one JSON object per pair: kind, count, load_share,\n"
	"                distance, load {procedure, offset, pc, source, image},\n"
	"                store {...}\n";

struct row {
	const struct report_value_hot *v;
	uint64_t store;                /* vaddr in store_image */
	uint32_t store_image;
	unsigned kind, dist;
	double count, execs;
};

static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

static const char *kind_name(unsigned k)
{
	return k == SPOOL_HAZARD_FORWARD ? "forward" : k == SPOOL_HAZARD_ALIAS4K ? "4k-alias" : "?";
}

static void side_json(struct report_value_model *vm, uint32_t image, uint64_t va)
{
	struct report_value_where w;
	char src[600];
	report_value_where(vm, image, va, &w);
	printf("{\"procedure\":");
	report_json_str(stdout, w.proc);
	printf(",\"offset\":%llu,\"pc\":\"%#llx\",\"source\":", (unsigned long long)(va - w.start),
	       (unsigned long long)va);
	report_json_str(stdout, w.file && w.line > 0 ? report_value_source(&w, src, sizeof(src)) : NULL);
	printf(",\"image\":");
	report_json_str(stdout, vm->m.images[image].path);
	printf("}");
}

int cmd_hazards(int argc, char **argv)
{
	static const struct report_cmd cmd = {
		"hazards", kHelp, REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		NULL, "", NULL,
	};
	struct report_opts o = { .limit = 30 };
	struct report_value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("hazards", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "hazards")))
		return rc;
	struct row *rows = NULL;
	size_t n = 0, cap = 0, loads = 0;
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct report_value_hot *v = &vm.hot[i];
		if (v->kind != SPOOL_VK_HAZARD || !v->h.n)
			continue;
		loads++;
		double execs = 0;
		for (uint32_t e = 0; e < v->h.n; e++)
			if (!v->h.e[e].aux)
				execs += spool_hot_estimate(&v->h, (int)e);
		for (uint32_t e = 0; e < v->h.n; e++) {
			uint64_t aux = v->h.e[e].aux;
			if (!aux)
				continue;
			struct row r = { .v = v, .kind = SPOOL_HAZARD_KIND(aux), .dist = SPOOL_HAZARD_DIST(aux),
					 .count = spool_hot_estimate(&v->h, (int)e), .execs = execs };
			if (report_value_code_place(&vm, v->image, v->h.e[e].value, &r.store_image, &r.store) < 0)
				continue;
			/* One row per (store, kind): distances of a pair summed, the
			 * most seen kept. */
			size_t k = 0;
			for (; k < n; k++)
				if (rows[k].v == v && rows[k].store == r.store && rows[k].store_image == r.store_image &&
				    rows[k].kind == r.kind)
					break;
			if (k < n) {
				if (r.count > rows[k].count)   /* the distance seen most */
					rows[k].dist = r.dist;
				rows[k].count += r.count;
				continue;
			}
			rows = report_grow(rows, &cap, n, sizeof(*rows));
			rows[n++] = r;
		}
	}
	qsort(rows, n, sizeof(*rows), by_count);
	if (o.json) {
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct row *r = &rows[k];
			printf("{\"kind\":\"%s\",\"count\":%.0f,\"load_share\":%.6f,\"distance\":%u,\"load\":",
			       kind_name(r->kind), r->count, r->execs > 0 ? r->count / r->execs : 0.0, r->dist);
			side_json(&vm, r->v->image, r->v->vaddr);
			printf(",\"store\":");
			side_json(&vm, r->store_image, r->store);
			printf("}\n");
		}
	} else if (!n) {
		printf("vprof hazards: %s, epoch %s: %s\n", o.db, vm.m.epoch,
		       vm.m.stats.interp_runs ? "no hazard in the windows (vprof run --hazards finds them)"
					      : "no windows in this epoch (vprof run --hazards finds hazards)");
	} else {
		printf("vprof hazards: %s, epoch %s: %zu pairs at %zu loads, from %llu windows\n", o.db, vm.m.epoch, n,
		       loads, (unsigned long long)vm.m.stats.interp_runs);
		printf("forward: store forwarding fails (the load needs bytes of an in-flight store it does not lie "
		       "within); 4k-alias: same address bits 11:0 as an in-flight store, another page\n"
		       "seen: times a window saw the pair; of load: share of the load's executions in those windows; "
		       "dist: instructions from the store\n");
		struct report_table tb;
		report_table_init(&tb);
		report_table_col(&tb, (struct report_table_col){ .head = "kind", .type = TABLE_STR, .width = 8,
						  .flags = TABLE_LEFT });
		report_table_col(&tb, (struct report_table_col){ .head = "seen", .type = TABLE_DBL, .width = 7,
						  .fmt = "%.0f" });
		report_table_col(&tb, (struct report_table_col){ .head = "of load", .type = TABLE_DBL, .width = 7,
						  .flags = TABLE_PERCENT, .fmt = "%.1f%%" });
		report_table_col(&tb, (struct report_table_col){ .head = "dist", .type = TABLE_UINT, .width = 4 });
		report_table_col(&tb, (struct report_table_col){ .head = "load", .type = TABLE_STR, .width = TABLE_AUTO,
						  .flags = TABLE_LEFT, .gap = 2 });
		report_table_col(&tb, (struct report_table_col){ .head = "store", .type = TABLE_STR, .width = TABLE_AUTO,
						  .flags = TABLE_LEFT, .gap = 2 });
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct row *r = &rows[k];
			struct report_value_where lw, sw;
			char a[600], b[600];
			report_value_where(&vm, r->v->image, r->v->vaddr, &lw);
			report_value_where(&vm, r->store_image, r->store, &sw);
			report_table_row(&tb);
			report_table_str(&tb, kind_name(r->kind));
			report_table_dbl(&tb, r->count);
			report_table_dbl(&tb, r->execs > 0 ? r->count / r->execs : 0.0);
			report_table_uint(&tb, r->dist);
			report_table_strf(&tb, "%s+%#llx %s", lw.proc, (unsigned long long)(r->v->vaddr - lw.start),
					  lw.file && lw.line > 0 ? report_value_source(&lw, a, sizeof(a)) : "");
			report_table_strf(&tb, "%s+%#llx %s", sw.proc, (unsigned long long)(r->store - sw.start),
					  sw.file && sw.line > 0 ? report_value_source(&sw, b, sizeof(b)) : "");
		}
		report_table_text(&tb, stdout);
		report_table_free(&tb);
	}
	free(rows);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
