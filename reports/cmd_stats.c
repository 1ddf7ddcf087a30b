/*
 * vprof stats P1 P2 ...: how much each procedure varies across runs, as
 * DCPI's dcpistats (Anderson et al., SOSP '97, section 3.3 and figure 3).
 * Every profile (a database or an epoch, buckets.h) is bucketed alike;
 * per bucket over the K sets: range% = (max − min) / sum, sum, sum% (of
 * all sets' samples), N (sets in which it has samples), mean (sum / K),
 * std-dev (sample standard deviation, K − 1), min, max — a set without
 * samples of the bucket counts 0. Sorted by range%, the normalized range,
 * highest first: the procedure that varies most from run to run leads.
 */
#include "reports/builtin.h"
#include "reports/buckets.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SETS 256

static const char kHelp[] =
	"usage: vprof stats [--by image|procedure|line|instruction] [--db DIR] [--epoch N|all]\n"
	"                   [--min-count N] [--event E] [-n ROWS] [--json] P1 P2 [P3 ...]\n"
	"Variation across runs (DCPI's dcpistats): 2 to 256 profiles, each DIR (a\n"
	"database, its current epoch or --epoch N|all), DIR@N (its epoch N) or @N\n"
	"(epoch N of --db). Per procedure over the K sets: range% = (max - min)/sum,\n"
	"sum, sum% (of all sets' samples), N (sets with samples), mean (sum/K),\n"
	"std-dev (sample, K-1), min, max; a set without samples counts 0. Sorted by\n"
	"range%, highest first.\n"
	"  --by KEY     procedure (default), image, line or instruction\n"
	"  --min-count N  hide buckets with fewer than N samples in every set\n"
	"               (default 10; 0: show all); the output says how many\n"
	"  --event E    the event counted (default: P1's main event)\n"
	"  -n ROWS      rows shown (default 40; 0: all)\n"
	"  --json       JSON Lines: a summary object, then one object per row\n";

enum { OPT_BY = 0x100, OPT_MIN };

struct stats_opts {
	enum report_bucket_by by;
	long min_count;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct stats_opts *so = ctx;
	char *end;
	if (ch == OPT_BY)
		return report_bucket_parse_by("stats", arg, &so->by);
	if (ch == OPT_MIN) {
		so->min_count = strtol(arg, &end, 10);
		if (*end || end == arg || so->min_count < 0)
			return report_usage("stats", "--min-count takes a number of samples >= 0");
		return 0;
	}
	return report_usage("stats", "bad option");
}

struct srow {
	const struct report_bucket *b;
	double range, sum, sumpct, mean, sd, min, max;
	size_t n;
};

static enum report_bucket_by g_by;

static int cmp_srow(const void *pa, const void *pb)
{
	const struct srow *x = pa, *y = pb;
	char b1[1200], b2[1200];
	if (x->range != y->range)
		return x->range > y->range ? -1 : 1;
	if (x->sum != y->sum)
		return x->sum > y->sum ? -1 : 1;
	int r = strcmp(report_bucket_text(x->b, g_by, b1, sizeof(b1)), report_bucket_text(y->b, g_by, b2, sizeof(b2)));
	return r ? r : strcmp(x->b->image, y->b->image);
}

/* The rows: rank (JSON only), the bucket, then the statistics; in text the
 * bucket's name and image come last (report_bucket_table_cols). */
static void stats_cols(struct report_table *t, enum report_bucket_by by)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .key = "rank", .type = TABLE_UINT });
	report_bucket_table_cols(t, by);
	report_table_col(t, (struct report_table_col){ .head = "range%", .key = "range_percent", .type = TABLE_DBL, .width = 8,
					 .fmt = "%.2f%%", .jfmt = "%.10g" });
	report_table_col(t, (struct report_table_col){ .head = "sum", .key = "sum", .type = TABLE_DBL, .width = 12,
					 .fmt = "%.0f", .jfmt = "%.0f" });
	report_table_col(t, (struct report_table_col){ .head = "sum%", .key = "sum_percent", .type = TABLE_DBL, .width = 7,
					 .fmt = "%.2f%%", .jfmt = "%.10g" });
	report_table_col(t, (struct report_table_col){ .head = "N", .key = "n", .type = TABLE_UINT, .width = 4 });
	report_table_col(t, (struct report_table_col){ .head = "mean", .key = "mean", .type = TABLE_DBL, .width = 12,
					 .fmt = "%.2f", .jfmt = "%.10g" });
	report_table_col(t, (struct report_table_col){ .head = "std-dev", .key = "std_dev", .type = TABLE_DBL, .width = 11,
					 .fmt = "%.2f", .jfmt = "%.10g" });
	report_table_col(t, (struct report_table_col){ .head = "min", .key = "min", .type = TABLE_DBL, .width = 10,
					 .fmt = "%.0f", .jfmt = "%.0f" });
	report_table_col(t, (struct report_table_col){ .head = "max", .key = "max", .type = TABLE_DBL, .width = 10,
					 .fmt = "%.0f", .jfmt = "%.0f" });
	report_table_col(t, (struct report_table_col){ .key = "counts", .type = TABLE_RAW });   /* one per set */
}

int cmd_stats(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "by", required_argument, 0, OPT_BY },
		{ "min-count", required_argument, 0, OPT_MIN },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"stats", kHelp,
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, NULL, on_extra,
	};
	struct stats_opts so = { .by = BUCKET_PROC, .min_count = 10 };
	struct report_opts o = { .limit = 40 };
	int rc = report_opts_parse(&cmd, argc, argv, &o, &so);
	enum report_bucket_by by;
	if (rc >= 0)
		return rc;
	by = so.by;
	size_t k = (size_t)(argc - o.next);
	if (k < 2 || k > MAX_SETS)
		return report_usage("stats", "takes 2 to 256 profiles (DIR, DIR@N or @N)");
	struct report_bucket_source *src = calloc(k, sizeof(*src));
	if (!src) {
		perror("vprof stats");
		return 1;
	}
	for (size_t i = 0; i < k; i++) {
		snprintf(src[i].label, sizeof(src[i].label), "set %zu", i + 1);
		if ((rc = report_bucket_source_parse("stats", argv[o.next + i], &o, &src[i]))) {
			free(src);
			return rc;
		}
	}
	unsigned ev;
	if ((rc = report_bucket_sources_load("stats", src, k, o.event, by, &ev))) {
		report_bucket_sources_free(src, k);
		free(src);
		return rc;
	}
	struct report_bucket_set bs;
	report_bucket_group(src, k, ev, by, &bs);
	double total = 0;
	for (size_t i = 0; i < k; i++)
		total += (double)src[i].total;
	struct srow *rows = calloc(bs.n ? bs.n : 1, sizeof(*rows));
	if (!rows) {
		perror("vprof stats");
		return 1;
	}
	size_t nr = 0, hidden = 0;
	for (size_t i = 0; i < bs.n; i++) {
		const uint64_t *c = bs.v[i].count;
		uint64_t most = 0;
		for (size_t j = 0; j < k; j++)
			most = c[j] > most ? c[j] : most;
		if ((long)most < so.min_count) {
			hidden++;
			continue;
		}
		struct srow *r = &rows[nr++];
		r->b = &bs.v[i];
		r->min = r->max = (double)c[0];
		for (size_t j = 0; j < k; j++) {
			double x = (double)c[j];
			r->sum += x;
			r->n += c[j] > 0;
			r->min = x < r->min ? x : r->min;
			r->max = x > r->max ? x : r->max;
		}
		r->mean = r->sum / (double)k;
		double ss = 0;
		for (size_t j = 0; j < k; j++)
			ss += ((double)c[j] - r->mean) * ((double)c[j] - r->mean);
		r->sd = sqrt(ss / (double)(k - 1));
		r->range = 100.0 * (r->max - r->min) / r->sum;
		r->sumpct = 100.0 * r->sum / total;
	}
	g_by = by;
	qsort(rows, nr, sizeof(*rows), cmp_srow);

	char *warn[8], name[700], counts[MAX_SETS * 22 + 2];
	size_t nw = report_bucket_warnings(src, k, ev, by, warn, 8);
	size_t shown = o.limit > 0 && (size_t)o.limit < nr ? (size_t)o.limit : nr;
	struct report_table t;
	stats_cols(&t, by);
	for (size_t i = 0; i < shown; i++) {
		const struct srow *r = &rows[i];
		report_table_row(&t);
		report_table_uint(&t, i + 1);
		report_bucket_table_row(&t, r->b, by);
		report_table_dbl(&t, r->range);
		report_table_dbl(&t, r->sum);
		report_table_dbl(&t, r->sumpct);
		report_table_uint(&t, r->n);
		report_table_dbl(&t, r->mean);
		report_table_dbl(&t, r->sd);
		report_table_dbl(&t, r->min);
		report_table_dbl(&t, r->max);
		size_t len = 0;
		for (size_t j = 0; j < k; j++)
			len += (size_t)snprintf(counts + len, sizeof(counts) - len, "%c%llu", j ? ',' : '[',
						(unsigned long long)r->b->count[j]);
		snprintf(counts + len, sizeof(counts) - len, "]");
		report_table_raw(&t, counts);
	}
	if (o.json) {
		printf("{\"summary\":true,\"event\":\"%s\",\"by\":\"%s\",\"total\":%.0f,\"sets\":[",
		       upcall_event_name(ev), report_bucket_by_name(by), total);
		for (size_t i = 0; i < k; i++) {
			printf("%s{\"set\":%zu,\"db\":", i ? "," : "", i + 1);
			report_json_str(stdout, src[i].db);
			printf(",\"epoch\":\"%s\",\"samples\":%llu}", src[i].m.epoch,
			       (unsigned long long)src[i].total);
		}
		printf("],\"min_count\":%ld,\"hidden\":%zu,\"rows\":%zu,\"warnings\":[", so.min_count,
		       hidden, nr);
		for (size_t i = 0; i < nw; i++) {
			if (i)
				putchar(',');
			report_json_str(stdout, warn[i]);
		}
		printf("]}\n");
		report_table_json_lines(&t, stdout);
	} else {
		printf("vprof stats: number of samples of event %s, by %s:\n", upcall_event_name(ev),
		       report_bucket_by_name(by));
		for (size_t i = 0; i < k; i++)
			printf("  %s = %llu  (%s)\n", src[i].label, (unsigned long long)src[i].total,
			       report_bucket_source_name(&src[i], name, sizeof(name)));
		printf("  TOTAL %.0f\n", total);
		for (size_t i = 0; i < nw; i++)
			printf("warning: %s\n", warn[i]);
		printf("min-count %ld: %zu bucket%s with fewer than %ld samples in every set hidden%s\n",
		       so.min_count, hidden, hidden == 1 ? "" : "s", so.min_count,
		       so.min_count ? " (--min-count 0 shows them)" : "");
		printf("statistics of the sample counts of each %s over %zu sets, sorted by range%%\n\n",
		       report_bucket_by_name(by), k);
		report_table_text(&t, stdout);
		if (shown < nr)
			printf("%8s (%zu more rows; -n 0 shows all)\n", "...", nr - shown);
	}
	for (size_t i = 0; i < nw; i++)
		free(warn[i]);
	report_table_free(&t);
	free(rows);
	report_bucket_set_free(&bs);
	report_bucket_sources_free(src, k);
	free(src);
	return report_finish_stdout(0);
}
