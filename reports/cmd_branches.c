/*
 * vprof branches: which way each conditional branch went, from the
 * outcomes interpreted windows recorded (`vprof run --branches`,
 * SPOOL_VK_BRANCH: a hotlist of 1 taken / 0 fell through per branch).
 * A list of two values is never thinned, so the counts are the windows'
 * exact counts, summed over threads, processes and runs; the share taken
 * is their ratio, with a 95% Wilson interval for that many outcomes, or
 * for as many as there were windows when fewer (outcomes within a window
 * are not independent: a loop repeats its pattern there).
 */
#include "reports/builtin.h"
#include "reports/value_model.h"
#include "reports/table.h"

#include <getopt.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof branches [--db DIR] [--epoch N|all] [--image SUBSTR] [--min N] [-n ROWS] [--json]\n"
	"  Conditional branches and the share of their outcomes that were taken,\n"
	"  from the windows of vprof run --branches: each window records every\n"
	"  conditional branch it runs but the one its sample landed on, so the\n"
	"  counts are executions the program chose, not where its time went\n"
	"  (docs/value-sampling.md, \"Branch outcomes\"). Most observed first.\n"
	"  The 95% interval counts at most one outcome per window (a window's\n"
	"  outcomes are not independent: a loop repeats its pattern in it).\n"
	"  --image SUBSTR  only branches in images whose path contains SUBSTR\n"
	"  --min N         only branches seen at least N times (default 20)\n"
	"  -n ROWS         rows to show (default 30; 0: all)\n"
	"  --json          one JSON object per branch: image, pc (hex vaddr), procedure,\n"
	"                  offset, source (file:line or null), outcomes, taken,\n"
	"                  fell_through, taken_share, taken_lo, taken_hi (95%)\n";

struct opts {
	const char *image;
	unsigned long long min;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct opts *op = ctx;
	char *end;
	if (ch == 'i' && *arg) {
		op->image = arg;
		return 0;
	}
	if (ch == 'm') {
		unsigned long long v = strtoull(arg, &end, 10);
		if (*arg && *arg != '-' && !*end && v >= 1) {
			op->min = v;
			return 0;
		}
		return report_usage("branches", "--min takes a whole number, at least 1");
	}
	return report_usage("branches", "--image takes a non-empty part of an image path");
}

struct row {
	const struct report_value_hot *v;
	double taken, fell;
};

static int by_outcomes(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	double nx = x->taken + x->fell, ny = y->taken + y->fell;
	if (nx != ny)
		return nx > ny ? -1 : 1;
	if (x->v->image != y->v->image)
		return x->v->image < y->v->image ? -1 : 1;
	return (x->v->vaddr > y->v->vaddr) - (x->v->vaddr < y->v->vaddr);
}

/* The 95% Wilson score interval of k successes in n. */
static void wilson(double k, double n, double *lo, double *hi)
{
	const double z = 1.959964, z2 = z * z;
	double p = k / n, d = 1 + z2 / n;
	double c = (p + z2 / (2 * n)) / d, h = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / d;
	*lo = c - h > 0 ? c - h : 0;
	*hi = c + h < 1 ? c + h : 1;
}

static void cols(struct report_table *t)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .head = "outcomes", .key = "outcomes", .type = TABLE_UINT, .width = 8 });
	report_table_col(t, (struct report_table_col){ .head = "taken", .key = "taken_share", .type = TABLE_DBL, .width = 7,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .head = "95% interval", .type = TABLE_STR, .width = 13 });
	report_table_col(t, (struct report_table_col){ .key = "taken_lo", .type = TABLE_DBL, .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .key = "taken_hi", .type = TABLE_DBL, .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .key = "taken", .type = TABLE_DBL, .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .key = "fell_through", .type = TABLE_DBL, .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .head = "procedure+offset", .type = TABLE_STR, .width = 32,
					 .flags = TABLE_LEFT, .gap = 2 });
	report_table_col(t, (struct report_table_col){ .head = "source", .key = "source", .type = TABLE_STR,
					 .width = TABLE_AUTO, .flags = TABLE_LEFT });
	report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "offset", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .head = "image", .key = "image", .type = TABLE_STR, .flags = TABLE_LEFT });
}

static void add(struct report_table *tb, struct report_value_model *vm, const struct row *r, double windows)
{
	const struct report_value_hot *v = r->v;
	double n = r->taken + r->fell, lo, hi;
	char src[600];
	/* Outcomes in one window are not independent (a loop repeats its
	 * pattern in it): the interval counts at most one per window. */
	double m = windows > 0 && windows < n ? windows : n;
	wilson(r->taken / n * m, m, &lo, &hi);
	report_table_row(tb);
	report_table_uint(tb, (unsigned long long)(n + 0.5));
	report_table_dbl(tb, r->taken / n);
	report_table_strf(tb, "%.1f-%.1f%%", 100 * lo, 100 * hi);
	report_table_dbl(tb, lo);
	report_table_dbl(tb, hi);
	report_table_dbl(tb, r->taken);
	report_table_dbl(tb, r->fell);
	report_table_strf(tb, "%s+%#llx", v->w.proc, (unsigned long long)(v->vaddr - v->w.start));
	report_table_str(tb, v->w.file && v->w.line > 0 ? report_value_source(&v->w, src, sizeof(src)) : NULL);
	report_table_str(tb, v->w.proc);
	report_table_uint(tb, v->vaddr - v->w.start);
	report_table_uint(tb, v->vaddr);
	report_table_str(tb, vm->m.images[v->image].path);
}

int cmd_branches(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "image", required_argument, 0, 'i' },
		{ "min", required_argument, 0, 'm' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"branches", kHelp,   /* no --event: hotlists are not per event */
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, "", on_extra,
	};
	struct opts op = { .min = 20 };
	struct report_opts o = { .limit = 30 };
	struct report_value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &op);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("branches", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "branches")))
		return rc;

	struct row *rows = calloc(vm.nhot + 1, sizeof(*rows));
	if (!rows) {
		perror("vprof branches");
		return 1;
	}
	size_t n = 0, seen = 0;
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct report_value_hot *v = &vm.hot[i];
		if (v->kind != SPOOL_VK_BRANCH || !v->h.n)
			continue;
		if (op.image && !strstr(vm.m.images[v->image].path, op.image))
			continue;
		seen++;
		struct row r = { .v = v };
		for (uint32_t e = 0; e < v->h.n; e++) {
			double est = spool_hot_estimate(&v->h, (int)e);
			if (v->h.e[e].value == 1)
				r.taken += est;
			else if (v->h.e[e].value == 0)
				r.fell += est;
		}
		if (r.taken + r.fell >= (double)op.min)
			rows[n++] = r;
	}
	qsort(rows, n, sizeof(*rows), by_outcomes);
	if (!o.json) {
		printf("vprof branches: %s, epoch %s, %zu conditional branches seen, %zu with %llu or more "
		       "outcomes (--min)\n", o.db, vm.m.epoch, seen, n, op.min);
		if (n)
			printf("taken: the share of the outcomes recorded by windows that went to the branch's "
			       "target rather than the next instruction\n");
	}
	struct report_table tb;
	cols(&tb);
	for (size_t i = 0; i < n && (!o.limit || (long)i < o.limit); i++)
		add(&tb, &vm, &rows[i], (double)vm.m.stats.interp_runs);
	if (o.json)
		report_table_json_lines(&tb, stdout);
	else if (n)
		report_table_text(&tb, stdout);
	else if (seen)
		printf("no branch was seen %llu times: a longer run, or a higher --freq, sees more\n", op.min);
	else
		printf("no branch outcomes in this epoch (vprof run --branches records them)\n");
	report_table_free(&tb);
	free(rows);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
