/*
 * vprof memory: MemSpy's view from the windows of `vprof run --cachesim`
 * (preload/cachesim.c): per procedure or source line, the data references
 * the windows made and how they fared in the simulated first-level data
 * cache (D1) and last-level cache (LL): misses known (the line was touched
 * earlier in the window), the estimate (known misses plus the unknown
 * references the simulation's carried-over state guesses to miss), and
 * the bounds (every unknown reference a hit, or a miss). Rows by estimated
 * stall: D1 misses x the second level's latency plus LL misses x memory's,
 * from `vprof calibrate`'s levels when the database has them, else nominal
 * (14 and 200 cycles). The header gives the geometry, the windows (median
 * length, how they ended) and the whole run's rates.
 */
#include "reports/builtin.h"
#include "reports/memory_rank.h"
#include "reports/table.h"
#include "spool/cachegeom.h"
#include "interp/interp.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof memory [--db DIR] [--epoch N|all] [--by procedure|line|object] [-n ROWS] [--json]\n"
	"  Data-cache behaviour from the windows of vprof run --cachesim: each data\n"
	"  reference the windows made, through a simulated D1 and last-level cache\n"
	"  (LL) of the run's geometry (--cache, else the machine's), as cachegrind\n"
	"  counts them: a reference spanning lines once, LL looked up on D1 misses.\n"
	"  A line's first touch in a window is an unknown reference (the cache's\n"
	"  state at a window's start is not known); its outcome is guessed from the\n"
	"  state the thread's earlier windows left. Rates are misses per reference:\n"
	"  the estimate, with its bounds (every unknown reference a hit, or a miss).\n"
	"  Rows by estimated stall: D1 misses x the L2 latency plus LL misses x\n"
	"  memory's, from vprof calibrate's levels, else 14 and 200 cycles.\n"
	"  --by KEY      procedure (default), line (file:line), or object: the data\n"
	"                referenced: a stack frame by its function ([stack] F), a\n"
	"                global by its symbol, a heap block by its allocation site\n"
	"                (FILE:LINE, blocks of 4 KiB and more), other mappings and\n"
	"                smaller blocks as one row\n"
	"  -n ROWS       rows to show (default 30; 0: all)\n"
	"  --json        one object: {db, epoch, geometry, windows, instructions,\n"
	"                median_window, window_ends, refs, D1, LL, rows: [{[source,]\n"
	"                procedure | object and class (stack, global, heap, mapping),\n"
	"                source (heap: the allocating call), image,\n"
	"                refs, stall_share, D1: {refs, misses, miss_rate, misses_lo,\n"
	"                misses_hi, known_misses, unknown}, LL: {...}}]}\n";

enum by { BY_PROC = REPORT_MEM_BY_PROC, BY_LINE = REPORT_MEM_BY_LINE, BY_OBJECT = REPORT_MEM_BY_OBJECT };

/* A row's image; NULL for other mappings' row, which is in none (its
 * regions' addresses land in whatever image the merge finds near them). */
static const char *row_image(const struct report_value_model *vm, const struct report_mem_row *r)
{
	return r->cls == SPOOL_OBJ_OTHER ? NULL : vm->m.images[r->image].path;
}

struct opts {
	enum by by;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct opts *o = ctx;
	if (!strcmp(arg, "procedure"))
		o->by = BY_PROC;
	else if (!strcmp(arg, "line"))
		o->by = BY_LINE;
	else if (!strcmp(arg, "object"))
		o->by = BY_OBJECT;
	else
		return report_usage("memory", "--by takes procedure, line or object");
	(void)ch;
	return 0;
}

static void level_json(const char *name, double refs, double lo, double est, double hi, double known, double unk,
		       int comma)
{
	printf("%s\"%s\":{\"refs\":%.0f,\"misses\":%.1f,\"miss_rate\":%.6f,\"misses_lo\":%.1f,\"misses_hi\":%.1f,"
	       "\"known_misses\":%.1f,\"unknown\":%.1f}", comma ? "," : "", name, refs, est, refs > 0 ? est / refs : 0.0, lo, hi,
	       known, unk);
}

static void tally_json(const struct report_mem_tally *t)
{
	double lo, est, hi;
	report_mem_d1(t, &lo, &est, &hi);
	level_json("D1", t->refs, lo, est, hi, lo, t->d1[SPOOL_CACHE_UHIT] + t->d1[SPOOL_CACHE_UMISS], 0);
	report_mem_ll(t, &lo, &est, &hi);
	level_json("LL", t->refs, lo, est, hi, lo, t->ll[SPOOL_CACHE_UHIT] + t->ll[SPOOL_CACHE_UMISS], 1);
}

int cmd_memory(int argc, char **argv)
{
	static const struct option extra[] = { { "by", required_argument, 0, 'b' }, { 0, 0, 0, 0 } };
	static const struct report_cmd cmd = {
		"memory", kHelp, REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, "", on_extra,
	};
	struct opts op = { BY_PROC };
	struct report_opts o = { .limit = 30 };
	struct report_value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &op);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("memory", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "memory")))
		return rc;

	struct report_mem_result mr;
	report_mem_rank(&vm, op.by, &mr);
	const struct report_mem_row *rows = mr.rows;
	size_t n = mr.n;
	const struct report_mem_tally all = mr.all;
	double stall_all = mr.stall_all;
	const struct merge_stats *s = &vm.m.stats;
	char geom[80] = "unknown";
	if (mr.have_geom)
		spool_cache_geom_text(&mr.geom, geom, sizeof(geom));
	double med = mr.median_window;
	if (o.json) {
		printf("{\"db\":");
		report_json_str(stdout, o.db);
		printf(",\"epoch\":");
		report_json_str(stdout, vm.m.epoch);
		printf(",\"geometry\":");
		report_json_str(stdout, s->cache_procs ? geom : NULL);
		printf(",\"windows\":%llu,\"instructions\":%llu,\"median_window\":%.0f,\"window_ends\":{",
		       (unsigned long long)s->interp_runs, (unsigned long long)s->interp_insns, med);
		for (int i = 0, m = 0; i < SPOOL_INTERP_STOPS; i++)
			if (s->interp_stops[i])
				printf("%s\"%s\":%llu", m++ ? "," : "", report_stop_name(i), (unsigned long long)s->interp_stops[i]);
		printf("},\"refs\":%.0f,", all.refs);
		tally_json(&all);
		printf(",\"rows\":[");
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct report_mem_row *r = &rows[k];
			char src[600];
			printf("%s{", k ? "," : "");
			if (op.by == BY_LINE) {
				struct report_value_where w = { .file = r->file, .line = r->line };
				printf("\"source\":");
				report_json_str(stdout, r->file ? report_value_source(&w, src, sizeof(src)) : NULL);
				printf(",");
			}
			if (op.by == BY_OBJECT) {
				static const char *const cls[] = { "?", "stack", "global", "mapping", "heap" };
				printf("\"object\":");
				report_json_str(stdout, r->proc);
				printf(",\"class\":\"%s\"", cls[r->cls <= SPOOL_OBJ_HEAP ? r->cls : 0]);
				if (r->cls == SPOOL_OBJ_HEAP) {
					struct report_value_where w = { .file = r->file, .line = r->line };
					printf(",\"source\":");
					report_json_str(stdout, r->file ? report_value_source(&w, src, sizeof(src)) : NULL);
				}
			} else {
				printf("\"procedure\":");
				report_json_str(stdout, r->proc);
			}
			printf(",\"image\":");
			report_json_str(stdout, row_image(&vm, r));
			printf(",\"refs\":%.0f,\"stall_share\":%.6f,", r->t.refs, (stall_all > 0 ? r->stall / stall_all : 0.0));
			tally_json(&r->t);
			printf("}");
		}
		printf("]}\n");
	} else if (!all.refs) {
		printf("vprof memory: %s, epoch %s: no cache simulation in this epoch (vprof run --cachesim records it)\n",
		       o.db, vm.m.epoch);
	} else {
		char a[64], b[64];
		printf("vprof memory: %s, epoch %s: simulated %s\n", o.db, vm.m.epoch, geom);
		printf("windows %llu, %llu instructions, median %.0f a window; ended by:", (unsigned long long)s->interp_runs,
		       (unsigned long long)s->interp_insns, med);
		for (int i = 0; i < SPOOL_INTERP_STOPS; i++)
			if (s->interp_stops[i])
				printf(" %s %llu", report_stop_name(i), (unsigned long long)s->interp_stops[i]);
		printf("\n%.0f data references: D1 misses %s, LL misses %s of references (the windows' mix: weighted "
		       "by time, so code that misses counts for more than its share of references; each row's rate "
		       "is its own)\n", all.refs,
		       report_mem_rates_text(&all, 0, a, sizeof(a)), report_mem_rates_text(&all, 1, b, sizeof(b)));
		printf("unknown references (a line's first touch in a window) %.1f%% at D1, %.1f%% at LL; estimate: "
		       "known misses + unknown ones guessed from the state earlier windows left; bounds: unknown all "
		       "hits - all misses\n"
		       "LL unk: a row's unknown share at LL; where it is high the LL estimate is a guess (a window "
		       "cannot prime a cache of MBs): read its bounds\n",
		       all.refs > 0 ? 100 * (all.d1[SPOOL_CACHE_UHIT] + all.d1[SPOOL_CACHE_UMISS]) / all.refs : 0.0,
		       100 * report_mem_ll_unknown(&all));
		printf("stall: share of D1 misses x %.0f + LL misses x %.0f cycles (%s)\n", mr.l2_cycles, mr.mem_cycles,
		       mr.calibrated ? "vprof calibrate's levels" : "nominal: vprof calibrate measures them");
		struct report_table tb;
		report_table_init(&tb);
		report_table_col(&tb, (struct report_table_col){ .head = "stall", .type = TABLE_DBL, .width = 6,
						  .flags = TABLE_PERCENT, .fmt = "%.1f%%" });
		report_table_col(&tb, (struct report_table_col){ .head = "refs", .type = TABLE_DBL, .width = 9,
						  .fmt = "%.0f" });
		report_table_col(&tb, (struct report_table_col){ .head = "D1 miss (bounds)", .type = TABLE_STR,
						  .width = 22 });
		report_table_col(&tb, (struct report_table_col){ .head = "LL miss (bounds)", .type = TABLE_STR,
						  .width = 22 });
		report_table_col(&tb, (struct report_table_col){ .head = "LL unk", .type = TABLE_DBL, .width = 6,
						  .flags = TABLE_PERCENT, .fmt = "%.0f%%" });
		report_table_col(&tb, (struct report_table_col){ .head = op.by == BY_LINE ? "source" : op.by == BY_OBJECT ? "object" : "procedure",
						  .type = TABLE_STR, .width = TABLE_AUTO, .flags = TABLE_LEFT, .gap = 2 });
		report_table_col(&tb, (struct report_table_col){ .head = "image", .type = TABLE_STR, .flags = TABLE_LEFT });
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct report_mem_row *r = &rows[k];
			char src[600];
			report_table_row(&tb);
			report_table_dbl(&tb, (stall_all > 0 ? r->stall / stall_all : 0.0));
			report_table_dbl(&tb, r->t.refs);
			report_table_str(&tb, report_mem_rates_text(&r->t, 0, a, sizeof(a)));
			report_table_str(&tb, report_mem_rates_text(&r->t, 1, b, sizeof(b)));
			report_table_dbl(&tb, report_mem_ll_unknown(&r->t));
			if (op.by == BY_LINE) {
				struct report_value_where w = { .file = r->file, .line = r->line };
				report_table_strf(&tb, "%s (%s)", r->file ? report_value_source(&w, src, sizeof(src)) : "[no line]",
						  r->proc);
			} else {
				report_table_str(&tb, r->proc);
			}
			report_table_str(&tb, row_image(&vm, r) ? row_image(&vm, r) : "-");
		}
		report_table_text(&tb, stdout);
		report_table_free(&tb);
	}
	report_mem_result_free(&mr);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
