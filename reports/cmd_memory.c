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
#include "reports/value_model.h"
#include "reports/table.h"
#include "spool/cachegeom.h"
#include "interp/interp.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof memory [--db DIR] [--epoch N|all] [--by procedure|line] [-n ROWS] [--json]\n"
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
	"  --by KEY      procedure (default) or line (file:line)\n"
	"  -n ROWS       rows to show (default 30; 0: all)\n"
	"  --json        one object: {db, epoch, geometry, windows, instructions,\n"
	"                median_window, window_ends, refs, D1, LL, rows: [{procedure |\n"
	"                source, image, refs, stall_share, D1: {refs, misses, miss_rate,\n"
	"                misses_lo, misses_hi, known_misses, unknown}, LL: {...}}]}\n";

enum by { BY_PROC, BY_LINE };

struct opts {
	enum by by;
};

/* Counts of one row (or the whole run), by outcome. */
struct tally {
	double refs;
	double d1[4];                  /* by SPOOL_CACHE_* (HIT .. UMISS) */
	double ll[5];                  /* by SPOOL_CACHE_*, NONE: not looked up */
	double llmiss_est;             /* LL misses of references whose D1 estimate is a miss */
};

struct row {
	uint32_t image;
	const char *proc, *file;
	int line;
	struct tally t;
	double stall;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct opts *o = ctx;
	if (!strcmp(arg, "procedure"))
		o->by = BY_PROC;
	else if (!strcmp(arg, "line"))
		o->by = BY_LINE;
	else
		return report_usage("memory", "--by takes procedure or line");
	(void)ch;
	return 0;
}

/* ll_fits: the LL guesses of this PC's unknown references are hits (its
 * footprint fits, below). */
static void add(struct tally *t, uint64_t outcome, double n, int ll_fits)
{
	unsigned a = SPOOL_CACHE_D1(outcome), b = SPOOL_CACHE_LL(outcome);
	if (a > SPOOL_CACHE_UMISS || b > SPOOL_CACHE_NONE)
		return;
	if (ll_fits && b == SPOOL_CACHE_UMISS)
		b = SPOOL_CACHE_UHIT;
	t->refs += n;
	t->d1[a] += n;
	t->ll[b] += n;
	if ((a == SPOOL_CACHE_MISS || a == SPOOL_CACHE_UMISS) &&
	    (b == SPOOL_CACHE_MISS || b == SPOOL_CACHE_UMISS))
		t->llmiss_est += n;
}

static void sum(struct tally *a, const struct tally *b)
{
	a->refs += b->refs;
	for (int i = 0; i < 4; i++)
		a->d1[i] += b->d1[i];
	for (int i = 0; i < 5; i++)
		a->ll[i] += b->ll[i];
	a->llmiss_est += b->llmiss_est;
}

/* Misses: lo (known), est (known + guessed), hi (known + every unknown). */
static void d1_misses(const struct tally *t, double *lo, double *est, double *hi)
{
	*lo = t->d1[SPOOL_CACHE_MISS];
	*est = *lo + t->d1[SPOOL_CACHE_UMISS];
	*hi = *est + t->d1[SPOOL_CACHE_UHIT];
}

static void ll_misses(const struct tally *t, double *lo, double *est, double *hi)
{
	*lo = t->ll[SPOOL_CACHE_MISS];
	*est = t->llmiss_est;
	*hi = *lo + t->ll[SPOOL_CACHE_UHIT] + t->ll[SPOOL_CACHE_UMISS];
}

static double rate(double n, double d)
{
	return d > 0 ? n / d : 0;
}

/* The latencies misses cost, in cycles: calibrated levels by their
 * position (the second and the last), else nominal. */
static void penalties(const struct report_value_model *vm, double *l2, double *mem)
{
	*l2 = 14, *mem = 200;
	if (vm->nlevels >= 3) {
		*l2 = (double)vm->levels[1].typical;
		*mem = (double)vm->levels[vm->nlevels - 1].typical;
	}
}

/* The lines one PC's references range over (its footprint), from how
 * often its first touches in a window found a line an earlier window had
 * left in LL: with k windows of s first touches each, drawn evenly from F
 * lines, window j finds 1 - (1 - s/F)^j of them seen, so the share over
 * the k windows is 1 - (1 - (1 - x)^k) / (k x), x = s/F, rising in x;
 * solved for x. 0 when it cannot be told (fewer than 3 windows), a
 * negative number for "larger than anything seen" (no line found again). */
static double footprint(double unknown, double again, double windows)
{
	if (windows < 3 || unknown < windows)
		return 0;
	double s = unknown / windows, k = windows, m = again / unknown;
	if (m <= 0)
		return -1;
	double lo = 1e-9, hi = 1;
	if (m >= 1 - (1 - pow(0, k)) / k)
		return s;
	for (int i = 0; i < 60; i++) {
		double x = (lo + hi) / 2;
		double mx = 1 - (1 - pow(1 - x, k)) / (k * x);
		if (mx < m)
			lo = x;
		else
			hi = x;
	}
	return s / ((lo + hi) / 2);
}

static int by_stall(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->stall < y->stall ? 1 : x->stall > y->stall ? -1 : (x->t.refs < y->t.refs) - (x->t.refs > y->t.refs);
}

/* Median interpretation run, from the length bins: the bin's least
 * length, interpolated within the bin. */
static double median_run(const struct merge_stats *s)
{
	uint64_t n = 0, c = 0;
	for (int i = 0; i < SPOOL_RUN_BINS; i++)
		n += s->run_bins[i];
	if (!n)
		return 0;
	for (int i = 0; i < SPOOL_RUN_BINS; i++) {
		if (c + s->run_bins[i] >= (n + 1) / 2) {
			double lo = (double)spool_run_bin_low((unsigned)i);
			double hi = i + 1 < SPOOL_RUN_BINS ? (double)spool_run_bin_low((unsigned)i + 1) : lo;
			/* Nearly all in one bin (windows of one length): their mean,
			 * if it falls in the bin. */
			double mean = s->interp_runs ? (double)s->interp_insns / (double)s->interp_runs : 0;
			if (s->run_bins[i] * 10 >= n * 9 && mean >= lo && mean < hi)
				return mean;
			double f = s->run_bins[i] ? ((double)((n + 1) / 2 - c) - 0.5) / (double)s->run_bins[i] : 0;
			return lo + (hi - lo) * (f < 0 ? 0 : f);
		}
		c += s->run_bins[i];
	}
	return 0;
}

static const char *stop_name(int i)
{
	return i < INTERP_STOP__COUNT ? interp_stop_name(i) : i == SPOOL_INTERP_STOP_LOOP ? "loop" : "other";
}

static void level_json(const char *name, double refs, double lo, double est, double hi, double known, double unk,
		       int comma)
{
	printf("%s\"%s\":{\"refs\":%.0f,\"misses\":%.1f,\"miss_rate\":%.6f,\"misses_lo\":%.1f,\"misses_hi\":%.1f,"
	       "\"known_misses\":%.1f,\"unknown\":%.1f}", comma ? "," : "", name, refs, est, rate(est, refs), lo, hi,
	       known, unk);
}

static void tally_json(const struct tally *t)
{
	double lo, est, hi;
	d1_misses(t, &lo, &est, &hi);
	level_json("D1", t->refs, lo, est, hi, lo, t->d1[SPOOL_CACHE_UHIT] + t->d1[SPOOL_CACHE_UMISS], 0);
	ll_misses(t, &lo, &est, &hi);
	level_json("LL", t->refs, lo, est, hi, lo, t->ll[SPOOL_CACHE_UHIT] + t->ll[SPOOL_CACHE_UMISS], 1);
}

static const char *rates_text(const struct tally *t, int ll, char *buf, size_t cap)
{
	double lo, est, hi;
	if (ll)
		ll_misses(t, &lo, &est, &hi);
	else
		d1_misses(t, &lo, &est, &hi);
	snprintf(buf, cap, "%.2f%% (%.2f-%.2f)", 100 * rate(est, t->refs), 100 * rate(lo, t->refs),
		 100 * rate(hi, t->refs));
	return buf;
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

	struct row *rows = NULL;
	size_t n = 0, cap = 0;
	struct tally all = { 0 };
	const struct merge_stats *st = &vm.m.stats;
	double ll_lines = st->cache_procs && st->cache_geom_sum[5] ? (double)st->cache_geom_sum[3] / (double)st->cache_geom_sum[5] : 0;
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct report_value_hot *v = &vm.hot[i];
		if (v->kind != SPOOL_VK_CACHE || !v->h.n)
			continue;
		/* LL's unknown references: where the PC's footprint fits in LL,
		 * they hit (the line was touched in the gap, as the PC touches
		 * its lines), whatever the carried-over state says. */
		double unk = 0, again = 0, wins = 0;
		for (uint32_t e = 0; e < v->h.n; e++) {
			double c = spool_hot_estimate(&v->h, (int)e);
			uint64_t x = v->h.e[e].value;
			if (x == SPOOL_CACHE_WINDOW)
				wins += c;
			else if (SPOOL_CACHE_LL(x) == SPOOL_CACHE_UHIT || SPOOL_CACHE_LL(x) == SPOOL_CACHE_UMISS) {
				unk += c;
				again += SPOOL_CACHE_LL(x) == SPOOL_CACHE_UHIT ? c : 0;
			}
		}
		double fp = footprint(unk, again, wins);
		int fits = fp > 0 && fp <= ll_lines;
		struct tally t = { 0 };
		for (uint32_t e = 0; e < v->h.n; e++)
			add(&t, v->h.e[e].value, spool_hot_estimate(&v->h, (int)e), fits);
		sum(&all, &t);
		size_t k = 0;
		for (; k < n; k++)
			if (op.by == BY_PROC ? rows[k].image == v->image && rows[k].proc == v->w.proc
					     : rows[k].file == v->w.file && rows[k].line == v->w.line &&
						       (v->w.file || rows[k].proc == v->w.proc))
				break;
		if (k == n) {
			rows = report_grow(rows, &cap, n, sizeof(*rows));
			rows[n++] = (struct row){ .image = v->image, .proc = v->w.proc, .file = v->w.file,
						  .line = v->w.line };
		}
		sum(&rows[k].t, &t);
	}
	double c2, cm, stall_all = 0;
	penalties(&vm, &c2, &cm);
	for (size_t k = 0; k < n; k++) {
		double lo, d1, ll, hi;
		d1_misses(&rows[k].t, &lo, &d1, &hi);
		ll_misses(&rows[k].t, &lo, &ll, &hi);
		rows[k].stall = d1 * c2 + ll * cm;
		stall_all += rows[k].stall;
	}
	qsort(rows, n, sizeof(*rows), by_stall);

	const struct merge_stats *s = &vm.m.stats;
	struct spool_cache_geom g;
	char geom[80] = "unknown";
	if (s->cache_procs) {
		uint64_t q = s->cache_procs;
		g = (struct spool_cache_geom){ { (uint32_t)(s->cache_geom_sum[0] / q), (uint32_t)(s->cache_geom_sum[1] / q),
						 (uint32_t)(s->cache_geom_sum[2] / q) },
					       { (uint32_t)(s->cache_geom_sum[3] / q), (uint32_t)(s->cache_geom_sum[4] / q),
						 (uint32_t)(s->cache_geom_sum[5] / q) } };
		spool_cache_geom_text(&g, geom, sizeof(geom));
	}
	double med = median_run(s);
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
				printf("%s\"%s\":%llu", m++ ? "," : "", stop_name(i), (unsigned long long)s->interp_stops[i]);
		printf("},\"refs\":%.0f,", all.refs);
		tally_json(&all);
		printf(",\"rows\":[");
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct row *r = &rows[k];
			char src[600];
			printf("%s{", k ? "," : "");
			if (op.by == BY_LINE) {
				struct report_value_where w = { .file = r->file, .line = r->line };
				printf("\"source\":");
				report_json_str(stdout, r->file ? report_value_source(&w, src, sizeof(src)) : NULL);
				printf(",");
			}
			printf("\"procedure\":");
			report_json_str(stdout, r->proc);
			printf(",\"image\":");
			report_json_str(stdout, vm.m.images[r->image].path);
			printf(",\"refs\":%.0f,\"stall_share\":%.6f,", r->t.refs, rate(r->stall, stall_all));
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
				printf(" %s %llu", stop_name(i), (unsigned long long)s->interp_stops[i]);
		printf("\n%.0f data references: D1 misses %s, LL misses %s of references\n", all.refs,
		       rates_text(&all, 0, a, sizeof(a)), rates_text(&all, 1, b, sizeof(b)));
		printf("unknown references (a line's first touch in a window) %.1f%% at D1, %.1f%% at LL; estimate: "
		       "known misses + unknown ones guessed from the state earlier windows left; bounds: unknown all "
		       "hits - all misses\n"
		       "LL unk: a row's unknown share at LL; where it is high the LL estimate is a guess (a window "
		       "cannot prime a cache of MBs): read its bounds\n",
		       100 * rate(all.d1[SPOOL_CACHE_UHIT] + all.d1[SPOOL_CACHE_UMISS], all.refs),
		       100 * rate(all.ll[SPOOL_CACHE_UHIT] + all.ll[SPOOL_CACHE_UMISS], all.refs));
		printf("stall: share of D1 misses x %.0f + LL misses x %.0f cycles (%s)\n", c2, cm,
		       vm.nlevels >= 3 ? "vprof calibrate's levels" : "nominal: vprof calibrate measures them");
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
		report_table_col(&tb, (struct report_table_col){ .head = op.by == BY_LINE ? "source" : "procedure",
						  .type = TABLE_STR, .width = TABLE_AUTO, .flags = TABLE_LEFT, .gap = 2 });
		report_table_col(&tb, (struct report_table_col){ .head = "image", .type = TABLE_STR, .flags = TABLE_LEFT });
		for (size_t k = 0; k < n && (!o.limit || (long)k < o.limit); k++) {
			const struct row *r = &rows[k];
			char src[600];
			report_table_row(&tb);
			report_table_dbl(&tb, rate(r->stall, stall_all));
			report_table_dbl(&tb, r->t.refs);
			report_table_str(&tb, rates_text(&r->t, 0, a, sizeof(a)));
			report_table_str(&tb, rates_text(&r->t, 1, b, sizeof(b)));
			report_table_dbl(&tb, rate(r->t.ll[SPOOL_CACHE_UHIT] + r->t.ll[SPOOL_CACHE_UMISS], r->t.refs));
			if (op.by == BY_LINE) {
				struct report_value_where w = { .file = r->file, .line = r->line };
				report_table_strf(&tb, "%s (%s)", r->file ? report_value_source(&w, src, sizeof(src)) : "[no line]",
						  r->proc);
			} else {
				report_table_str(&tb, r->proc);
			}
			report_table_str(&tb, vm.m.images[r->image].path);
		}
		report_table_text(&tb, stdout);
		report_table_free(&tb);
	}
	free(rows);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
