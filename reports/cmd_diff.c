/*
 * vprof diff A B: differential profiling (Paul E. McKenney, "Differential
 * Profiling", MASCOTS '95 / Software: Practice and Experience 1999). Two
 * profiles of one program under different conditions (two databases, or
 * two epochs of one) are bucketed alike (buckets.h) and combined bucket by
 * bucket, the measurement m being the bucket's samples:
 *
 *   ratio       m2 / m1, run 2 being the more stressed (highest first)
 *   difference  d = w1·m2 − w2·m1 (Eq. 3), w the work each run did
 *               (highest first)
 *   linear      projected saturation load, Eq. 4:
 *               s = (ms − m2)(l2 − l1)/(m2 − m1) + l2 (lowest first)
 *   power       power-law projection, Eq. 5, shown as the load exp(s):
 *               s = log(ms/m2)·log(l2/l1)/log(m2/m1) + log(l2)
 *
 * For the projections the measurement is the bucket's share of its run's
 * samples (percent) and saturation ms is 100% (--saturation): the load at
 * which the bucket would take all of the time. Loads l and work w are
 * --load and --work; by default work is each run's sample total relative
 * to the less stressed run (so w1 = 1), and load is the work. The more
 * stressed run is the one with the higher load, else more work, else more
 * samples. A minimum count (the paper's filter against statistical false
 * alarms: a bucket with 0 samples in one run and 1 in the other has an
 * infinite ratio) hides buckets with fewer than --min-count samples in
 * both runs; it is on by default and said in the output. The output's
 * first line says the result in words (headline()), for a reader who has
 * not met these terms.
 */
#include "reports/builtin.h"
#include "reports/buckets.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum rank { RANK_RATIO, RANK_DIFF, RANK_LINEAR, RANK_POWER };
static const char *const kRankName[] = { "ratio", "difference", "linear", "power" };

static const char kHelp[] =
	"usage: vprof diff [--by image|procedure|line|instruction] [--rank ratio|difference|linear|power]\n"
	"                  [--min-count N] [--work WA,WB] [--load LA,LB] [--saturation P]\n"
	"                  [--db DIR] [--epoch N|all] [--event E] [-n ROWS] [--json] A B\n"
	"Differential profiling (McKenney): compares two profiles of one program,\n"
	"bucket by bucket. A and B are each:\n"
	"  DIR        a database (its current epoch, or --epoch N|all)\n"
	"  DIR@N      epoch N (or all) of database DIR\n"
	"  @N         epoch N (or all) of the --db database ($VPROF_DB, ./vprof.db)\n"
	"  e.g. vprof diff old.db new.db;  vprof diff --db D @1 @2\n"
	"The first line says the result in words: how much more time the more\n"
	"stressed run took, and the top bucket's change in samples and in share of\n"
	"each run; the terms of the paper follow below it.\n"
	"Run 2, the more stressed, has the higher --load, else the more --work, else\n"
	"more samples; the output says which. Per bucket, m its samples:\n"
	"  ratio       m2/m1 (\"new\" when m1 = 0)\n"
	"  difference  d = w1*m2 - w2*m1, w the work done (Eq. 3)\n"
	"  linear      load at which the bucket's share of its run reaches the\n"
	"              saturation, projected linearly (Eq. 4)\n"
	"  power       the same by a power law (Eq. 5, shown as a load)\n"
	"  --by KEY         bucket by procedure (default), image, source line or instruction\n"
	"  --rank R         ratio (default, highest first), difference (highest first),\n"
	"                   linear or power (lowest first)\n"
	"  --min-count N    hide buckets with fewer than N samples in both runs\n"
	"                   (default 10; 0: show all); the output says how many\n"
	"  --work WA,WB     work done by A and B (default: their samples, relative)\n"
	"  --load LA,LB     offered load of A and B (default: as work)\n"
	"  --saturation P   saturation share for the projections, percent (default 100)\n"
	"  --event E        the event compared (default: A's main event)\n"
	"  -n ROWS          rows shown (default 40; 0: all)\n"
	"  --json           JSON Lines: a summary object (the first line as headline),\n"
	"                   then one object per row\n";

struct diff_opts {
	enum report_bucket_by by;
	enum rank rank;
	long min_count;
	double work[2], load[2];
	int have_work, have_load;
	double saturation;
};

enum { OPT_BY = 0x100, OPT_RANK, OPT_MIN, OPT_WORK, OPT_LOAD, OPT_SAT };

static int parse_pair(const char *arg, double v[2], const char *what)
{
	char *end, msg[120];
	v[0] = strtod(arg, &end);
	if (*end == ',') {
		v[1] = strtod(end + 1, &end);
		if (!*end && v[0] >= 0 && v[1] >= 0 && isfinite(v[0]) && isfinite(v[1]) &&
		    (v[0] > 0 || v[1] > 0))
			return 0;
	}
	snprintf(msg, sizeof(msg), "%s takes two numbers >= 0, A's and B's: e.g. 1,2", what);
	return report_usage("diff", msg);
}

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct diff_opts *d = ctx;
	char *end;
	switch (ch) {
	case OPT_BY:
		return report_bucket_parse_by("diff", arg, &d->by);
	case OPT_RANK:
		for (int r = 0; r < 4; r++)
			if (!strcmp(arg, kRankName[r])) {
				d->rank = r;
				return 0;
			}
		return report_usage("diff", "--rank takes ratio, difference, linear or power");
	case OPT_MIN:
		d->min_count = strtol(arg, &end, 10);
		if (*end || end == arg || d->min_count < 0)
			return report_usage("diff", "--min-count takes a number of samples >= 0");
		return 0;
	case OPT_WORK:
		d->have_work = 1;
		return parse_pair(arg, d->work, "--work");
	case OPT_LOAD:
		d->have_load = 1;
		return parse_pair(arg, d->load, "--load");
	case OPT_SAT:
		d->saturation = strtod(arg, &end);
		if (*end == '%')
			end++;
		if (*end || end == arg || !(d->saturation > 0))
			return report_usage("diff", "--saturation takes a percentage > 0");
		return 0;
	}
	return report_usage("diff", "bad option");
}

struct row {
	const struct report_bucket *b;
	uint64_t m[2];            /* A, B */
	double share[2];          /* percent of each run's samples */
	double ratio;             /* m2/m1; INFINITY when m1 = 0 */
	double diff;
	double lin, pow;          /* NAN: not projectable */
};

static enum rank g_rank;
static enum report_bucket_by g_by;

static int name_cmp(const struct row *x, const struct row *y)
{
	char b1[1200], b2[1200];
	int r = strcmp(report_bucket_text(x->b, g_by, b1, sizeof(b1)), report_bucket_text(y->b, g_by, b2, sizeof(b2)));
	return r ? r : strcmp(x->b->image, y->b->image);
}

/* Descending in a, NaN last. */
static int desc(double a, double b)
{
	if (isnan(a) != isnan(b))
		return isnan(a) ? 1 : -1;
	return a > b ? -1 : a < b;
}

static int cmp_row(const void *pa, const void *pb)
{
	const struct row *x = pa, *y = pb;
	int r = 0;
	switch (g_rank) {
	case RANK_RATIO: r = desc(x->ratio, y->ratio); if (!r) r = desc(x->diff, y->diff); break;
	case RANK_DIFF: r = desc(x->diff, y->diff); if (!r) r = desc(x->ratio, y->ratio); break;
	case RANK_LINEAR: r = desc(-x->lin, -y->lin); if (!r) r = desc(x->ratio, y->ratio); break;
	case RANK_POWER: r = desc(-x->pow, -y->pow); if (!r) r = desc(x->ratio, y->ratio); break;
	}
	return r ? r : name_cmp(x, y);
}

/* The projections of Eq. 4 and 5 with u the shares, l the loads. */
static void project(struct row *r, const double u[2], const double l[2], double ms)
{
	r->lin = r->pow = NAN;
	if (!(u[1] > u[0]) || !(l[1] > l[0]))
		return;     /* not growing with load: never saturates */
	r->lin = (ms - u[1]) * (l[1] - l[0]) / (u[1] - u[0]) + l[1];
	if (u[0] > 0 && l[0] > 0)
		r->pow = exp(log(ms / u[1]) * log(l[1] / l[0]) / log(u[1] / u[0]) + log(l[1]));
}

static void json_num(double v)
{
	if (isfinite(v))
		printf("%.6g", v);
	else
		printf("null");
}

/* The rows: rank (JSON only), the bucket (in text: last), the counts, the
 * shares and the ranks' measures; in text a measure that cannot be had is
 * "-", an infinite ratio (m1 = 0) "new", and above 1e6 one has 3 digits. */
static void diff_cols(struct report_table *t, enum report_bucket_by by)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .key = "rank", .type = TABLE_UINT });
	report_bucket_table_cols(t, by);
	report_table_col(t, (struct report_table_col){ .head = "A", .key = "a", .type = TABLE_UINT, .width = 8 });
	report_table_col(t, (struct report_table_col){ .head = "B", .key = "b", .type = TABLE_UINT, .width = 8 });
	static const struct { const char *head, *key, *fmt, *inf; int width; } m[] = {
		{ "A%", "share_a", "%.2f", NULL, 7 },
		{ "B%", "share_b", "%.2f", NULL, 7 },
		{ "ratio", "ratio", "%.2f", "new", 9 },
		{ NULL, "new", NULL, NULL, 0 },
		{ "difference", "difference", "%.1f", NULL, 11 },
		{ "lin-sat", "saturation_linear", "%.2f", NULL, 9 },
		{ "pow-sat", "saturation_power", "%.2f", NULL, 9 },
	};
	for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
		report_table_col(t, m[i].fmt ? (struct report_table_col){ .head = m[i].head, .key = m[i].key,
							   .type = TABLE_DBL, .width = m[i].width,
							   .fmt = m[i].fmt, .fmt_big = "%.3g",
							   .inf = m[i].inf }
				      : (struct report_table_col){ .key = m[i].key, .type = TABLE_BOOL });
}

/* The first line, in words: how much more the more stressed run took,
 * and the top row's change (its samples and its share of each run). */
static void headline(char *out, size_t cap, const struct report_bucket_source *src, int s1, int s2,
		     unsigned ev, const struct diff_opts *d, const struct row *top)
{
	static const char *const kRankWords[] = { "ratio", "difference",
		"projected saturation (linear)", "projected saturation (power law)" };
	char name[1200], n1[700], n2[700];
	enum rank rank = d->rank;
	/* Samples stand for time (or events) only at equal mean periods. */
	uint64_t p1 = report_model_period_ns(&src[s1].m), p2 = report_model_period_ns(&src[s2].m);
	int same = !p1 || !p2 || fabs((double)p1 - (double)p2) <= 0.1 * (double)p1;
	const char *what = !same ? "the samples" : report_event_is_clock(ev) ? "the CPU time"
		: ev == UPCALL_EV_CYCLES ? "the cycles" : ev == UPCALL_EV_INSTRUCTIONS ? "the instructions"
		: "the samples";
	const char *L1 = src[s1].label, *L2 = src[s2].label;
	double x = (double)src[s2].total / (double)src[s1].total;
	int n = snprintf(out, cap, "%s (%s) took %.2fx %s of %s (%s): %llu samples vs %llu; ", L2,
			 report_bucket_source_name(&src[s2], n2, sizeof(n2)), x, what, L1,
			 report_bucket_source_name(&src[s1], n1, sizeof(n1)), (unsigned long long)src[s2].total,
			 (unsigned long long)src[s1].total);
	if (n < 0 || (size_t)n >= cap)
		return;
	out += n, cap -= (size_t)n;
	if (!top) {
		snprintf(out, cap, "no bucket has %ld samples in either run", d->min_count);
		return;
	}
	const char *b = report_bucket_text(top->b, d->by, name, sizeof(name));
	double u1 = top->share[s1], u2 = top->share[s2];
	n = snprintf(out, cap, "ranked by %s, the top change is %s: ", kRankWords[rank], b);
	if (n < 0 || (size_t)n >= cap)
		return;
	out += n, cap -= (size_t)n;
	if (!top->m[s1])
		n = snprintf(out, cap, "new in %s (%llu samples)", L2, (unsigned long long)top->m[s2]);
	else
		n = snprintf(out, cap, "%s has %.2fx %s's samples of it (%llu vs %llu)", L2, top->ratio, L1,
			     (unsigned long long)top->m[s2], (unsigned long long)top->m[s1]);
	if (n < 0 || (size_t)n >= cap)
		return;
	out += n, cap -= (size_t)n;
	n = snprintf(out, cap, ", %.1f%% of %s's samples to %.1f%% of %s's (%+.1f points)", u1, L1, u2, L2,
		     u2 - u1);
	if (n < 0 || (size_t)n >= cap)
		return;
	out += n, cap -= (size_t)n;
	if ((rank == RANK_LINEAR && isfinite(top->lin)) || (rank == RANK_POWER && isfinite(top->pow)))
		snprintf(out, cap, "; projected to reach %g%% of its run first, at load %.3g",
			 d->saturation, rank == RANK_LINEAR ? top->lin : top->pow);
}

int cmd_diff(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "by", required_argument, 0, OPT_BY },
		{ "rank", required_argument, 0, OPT_RANK },
		{ "min-count", required_argument, 0, OPT_MIN },
		{ "work", required_argument, 0, OPT_WORK },
		{ "load", required_argument, 0, OPT_LOAD },
		{ "saturation", required_argument, 0, OPT_SAT },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"diff", kHelp,
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, NULL, on_extra,
	};
	struct diff_opts d = { .by = BUCKET_PROC, .rank = RANK_RATIO, .min_count = 10, .saturation = 100 };
	struct report_opts o = { .limit = 40 };
	struct report_bucket_source src[2];
	int rc = report_opts_parse(&cmd, argc, argv, &o, &d);
	if (rc >= 0)
		return rc;
	if (argc - o.next != 2)
		return report_usage("diff", "takes two profiles, A and B (DIR, DIR@N or @N)");
	memset(src, 0, sizeof(src));
	strcpy(src[0].label, "A");
	strcpy(src[1].label, "B");
	for (int i = 0; i < 2; i++)
		if ((rc = report_bucket_source_parse("diff", argv[o.next + i], &o, &src[i])))
			return rc;
	unsigned ev;
	if ((rc = report_bucket_sources_load("diff", src, 2, o.event, d.by, &ev))) {
		report_bucket_sources_free(src, 2);
		return rc;
	}

	/* Which run is the more stressed (run 2), and the weights and loads. */
	double T[2] = { (double)src[0].total, (double)src[1].total };
	int s2;
	const char *stress_by;
	if (d.have_load && d.load[0] != d.load[1]) {
		s2 = d.load[1] > d.load[0];
		stress_by = "load";
	} else if (d.have_work && d.work[0] != d.work[1]) {
		s2 = d.work[1] > d.work[0];
		stress_by = "work";
	} else {
		s2 = T[1] >= T[0];
		stress_by = "samples";
	}
	int s1 = !s2;
	double w[2], l[2];
	if (d.have_work)
		memcpy(w, d.work, sizeof(w));
	else if (d.have_load)
		memcpy(w, d.load, sizeof(w));
	else
		w[0] = T[0] / T[s1], w[1] = T[1] / T[s1];
	if (d.have_load)
		memcpy(l, d.load, sizeof(l));
	else
		memcpy(l, w, sizeof(l));

	struct report_bucket_set bs;
	report_bucket_group(src, 2, ev, d.by, &bs);
	struct row *rows = calloc(bs.n ? bs.n : 1, sizeof(*rows));
	if (!rows) {
		perror("vprof diff");
		return 1;
	}
	size_t nr = 0, hidden = 0;
	for (size_t i = 0; i < bs.n; i++) {
		const struct report_bucket *b = &bs.v[i];
		if ((long)b->count[0] < d.min_count && (long)b->count[1] < d.min_count) {
			hidden++;
			continue;
		}
		struct row *r = &rows[nr++];
		r->b = b;
		for (int k = 0; k < 2; k++) {
			r->m[k] = b->count[k];
			r->share[k] = 100.0 * (double)b->count[k] / T[k];
		}
		double m1 = (double)r->m[s1], m2 = (double)r->m[s2];
		r->ratio = m1 ? m2 / m1 : INFINITY;
		r->diff = w[s1] * m2 - w[s2] * m1;
		double u[2] = { r->share[s1], r->share[s2] }, ll[2] = { l[s1], l[s2] };
		project(r, u, ll, d.saturation);
	}
	g_rank = d.rank;
	g_by = d.by;
	qsort(rows, nr, sizeof(*rows), cmp_row);

	char *warn[8];
	size_t nw = report_bucket_warnings(src, 2, ev, d.by, warn, 8);
	const char *L1 = src[s1].label, *L2 = src[s2].label;
	char name[700];
	size_t shown = o.limit > 0 && (size_t)o.limit < nr ? (size_t)o.limit : nr;
	struct report_table t;
	diff_cols(&t, d.by);
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &rows[i];
		report_table_row(&t);
		report_table_uint(&t, i + 1);
		report_bucket_table_row(&t, r->b, d.by);
		report_table_uint(&t, r->m[0]);
		report_table_uint(&t, r->m[1]);
		report_table_dbl(&t, r->share[0]);
		report_table_dbl(&t, r->share[1]);
		report_table_dbl(&t, r->ratio);
		report_table_bool(&t, isinf(r->ratio));
		report_table_dbl(&t, r->diff);
		report_table_dbl(&t, r->lin);
		report_table_dbl(&t, r->pow);
	}
	char words[2000];
	headline(words, sizeof(words), src, s1, s2, ev, &d, nr ? &rows[0] : NULL);
	const char *wfrom = d.have_work ? "--work" : d.have_load ? "as load, --load" : "samples relative to run 1";
	const char *lfrom = d.have_load ? "--load" : d.have_work ? "as work, --work" : "as work";

	if (o.json) {
		printf("{\"summary\":true,\"headline\":");
		report_json_str(stdout, words);
		printf(",\"event\":\"%s\",\"by\":\"%s\"", upcall_event_name(ev), report_bucket_by_name(d.by));
		for (int k = 0; k < 2; k++) {
			printf(",\"%s\":{\"db\":", k ? "b" : "a");
			report_json_str(stdout, src[k].db);
			printf(",\"epoch\":\"%s\",\"samples\":%llu,\"work\":", src[k].m.epoch,
			       (unsigned long long)src[k].total);
			json_num(w[k]);
			printf(",\"load\":");
			json_num(l[k]);
			printf("}");
		}
		printf(",\"stressed\":\"%s\",\"stressed_by\":\"%s\",\"work_from\":\"%s\",\"load_from\":\"%s\","
		       "\"saturation_percent\":", L2, stress_by, d.have_work ? "work" : d.have_load ? "load" : "samples",
		       d.have_load ? "load" : d.have_work ? "work" : "samples");
		json_num(d.saturation);
		printf(",\"rank\":\"%s\",\"min_count\":%ld,\"hidden\":%zu,\"rows\":%zu,\"warnings\":[",
		       kRankName[d.rank], d.min_count, hidden, nr);
		for (size_t i = 0; i < nw; i++) {
			if (i)
				putchar(',');
			report_json_str(stdout, warn[i]);
		}
		printf("]}\n");
		report_table_json_lines(&t, stdout);
	} else {
		printf("%s\n\n", words);
		printf("vprof diff: event %s, by %s\n", upcall_event_name(ev), report_bucket_by_name(d.by));
		for (int k = 0; k < 2; k++)
			printf("  %s = %s: %llu samples\n", src[k].label,
			       report_bucket_source_name(&src[k], name, sizeof(name)), (unsigned long long)src[k].total);
		printf("more stressed (run 2): %s, by %s (%s %g vs %g); ratio = %s/%s, difference = w%s*m%s - w%s*m%s\n",
		       L2, stress_by, stress_by,
		       !strcmp(stress_by, "load") ? d.load[s2] : !strcmp(stress_by, "work") ? d.work[s2] : T[s2],
		       !strcmp(stress_by, "load") ? d.load[s1] : !strcmp(stress_by, "work") ? d.work[s1] : T[s1],
		       L2, L1, L1, L2, L2, L1);
		printf("work w: A %g, B %g (%s); load l: A %g, B %g (%s)\n", w[0], w[1], wfrom, l[0], l[1], lfrom);
		printf("saturation: a bucket's share of its run's samples reaching %g%% (--saturation)\n",
		       d.saturation);
		printf("ranked by %s, %s first (--rank ratio|difference|linear|power)\n", kRankName[d.rank],
		       d.rank <= RANK_DIFF ? "highest" : "lowest");
		printf("min-count %ld: %zu bucket%s with fewer than %ld samples in both A and B hidden%s\n",
		       d.min_count, hidden, hidden == 1 ? "" : "s", d.min_count,
		       d.min_count ? " (--min-count 0 shows them)" : "");
		for (size_t i = 0; i < nw; i++)
			printf("warning: %s\n", warn[i]);
		printf("\n");
		report_table_text(&t, stdout);
		if (shown < nr)
			printf("%8s (%zu more rows; -n 0 shows all)\n", "...", nr - shown);
		if (!nr)
			printf("no bucket has %ld samples in either run (--min-count 0 shows all)\n", d.min_count);
	}
	for (size_t i = 0; i < nw; i++)
		free(warn[i]);
	report_table_free(&t);
	free(rows);
	report_bucket_set_free(&bs);
	report_bucket_sources_free(src, 2);
	return report_finish_stdout(0);
}
