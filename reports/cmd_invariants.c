/*
 * vprof invariants: semi-invariant values worth specializing for (Burrows
 * et al., ASPLOS 2000, section 3): instructions that take a significant
 * share of time and whose most frequent value takes a large share of
 * their value samples, ranked by time share x top-value share. Kinds
 * keyed by call site (*_BY_SITE: aux is the return address) give one
 * candidate per call site, named by the file:line of its call.
 *
 * A hotlist with fewer value samples than --min-vtot says little: it is
 * skipped and counted, never silently. Latency kinds belong to `vprof
 * latency`, not here.
 */
#include "reports/values.h"
#include "reports/table.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof invariants [--db DIR] [--epoch N|all] [--event E] [-n ROWS]\n"
	"                        [--min-share S] [--min-time T] [--min-vtot V] [--json]\n"
	"  Instructions whose top value is (semi-)invariant, ranked by time share\n"
	"  (PC samples of the instruction / all samples) x top-value share\n"
	"  (estimated count / vtot); per call site for the @site kinds.\n"
	"  --min-share S  top value's share at least S (default 0.5; 50 or 50% too)\n"
	"  --min-time T   instruction's time share at least T (default 0.005)\n"
	"  --min-vtot V   skip hotlists (and call sites) with fewer value samples\n"
	"                 (default 20); how many were skipped is said\n"
	"  -n ROWS        rows to show (default 20; 0: all)\n"
	"  --json         one JSON object per row: procedure, pc, image, source,\n"
	"                 kind, value, value_text, share, time, score, samples, vtot,\n"
	"                 site, argument (when the operand is one: 1-6), suggestion\n";

struct opts {
	double min_share, min_time;
	uint64_t min_vtot;
};

/* "0.9", "90" or "90%": a fraction. */
static int parse_share(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (end == s || (*end && strcmp(end, "%")) || v < 0 || v > 100)
		return -1;
	*out = (*end == '%' || v > 1) ? v / 100 : v;
	return 0;
}

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct opts *op = ctx;
	char *end;
	if (ch == 's' && parse_share(arg, &op->min_share) == 0)
		return 0;
	if (ch == 't' && parse_share(arg, &op->min_time) == 0)
		return 0;
	if (ch == 'v') {
		op->min_vtot = strtoull(arg, &end, 10);
		if (!*end && *arg)
			return 0;
	}
	return report_usage("invariants", ch == 'v' ? "--min-vtot takes a count"
						   : "--min-share and --min-time take a fraction or a percentage");
}

struct cand {
	const struct value_hot *v;
	int e;                   /* the top entry */
	double share, time, score;
	int by_site;
	struct value_where site;
	int site_known;
};

static int by_score(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	if (x->score != y->score)
		return x->score > y->score ? -1 : 1;
	if (x->v->vaddr != y->v->vaddr)
		return x->v->vaddr < y->v->vaddr ? -1 : 1;
	return x->e - y->e;
}

static const char *kind_phrase(unsigned kind)
{
	switch (kind) {
	case MERGE_VK_RESULT: case MERGE_VK_RESULT_BY_SITE: return "result";
	case MERGE_VK_SRC1: case MERGE_VK_SRC1_BY_SITE: return "operand SRC1";
	case MERGE_VK_SRC2: case MERGE_VK_SRC2_BY_SITE: return "operand SRC2";
	case MERGE_VK_ADDR: return "address";
	case MERGE_VK_RETADDR: return "return address";
	case MERGE_VK_TARGET: return "indirect target";
	case MERGE_VK_STRIDE: return "stride";
	default: return merge_hot_kind_name(kind);
	}
}

static const char *advice(unsigned kind)
{
	switch (kind) {
	case MERGE_VK_ADDR: return "the same location each time: keep it in a register";
	case MERGE_VK_STRIDE: return "a constant stride: prefetchable, vectorizable";
	case MERGE_VK_TARGET: return "one target: devirtualize or inline it";
	case MERGE_VK_RETADDR: return "one caller: a candidate for inlining there";
	default: return "a candidate for specialization";
	}
}

/* The one-line suggestion. An operand that is one of the procedure's
 * arguments (value_argument: sure, or not said) is named as such: "argument
 * 2 of pow() is 2 in 97% of its time from render.c:88". Shares are of
 * value samples, i.e. of time, not of calls: the two agree when the calls
 * cost alike. */
static void suggestion(struct value_model *vm, const struct cand *c, char *out, size_t cap)
{
	char vb[64], sb[600], sb2[600], what[64];
	const struct value_hot *v = c->v;
	const char *val = value_fmt(vm, v->kind, v->image, v->h.e[c->e].value, vb, sizeof(vb));
	const char *paren = strchr(v->w.proc, '(') ? "" : "()";
	int arg = value_argument(vm, v);
	if (arg)
		snprintf(what, sizeof(what), "argument %d", arg);
	else
		snprintf(what, sizeof(what), "%s", kind_phrase(v->kind));
	if (c->by_site)
		snprintf(out, cap, "%s of %s%s%s%s is %s in %.0f%% of its time from %s", what, v->w.proc, paren,
			 arg ? "" : " at ", arg ? "" : value_source(&v->w, sb2, sizeof(sb2)), val, 100 * c->share,
			 c->site_known ? value_source(&c->site, sb, sizeof(sb)) : "an unresolved call site");
	else if (arg)
		snprintf(out, cap, "%s of %s%s is %s in %.0f%% of its time: %s", what, v->w.proc, paren, val,
			 100 * c->share, advice(v->kind));
	else
		snprintf(out, cap, "%s in %s%s at %s is %s in %.0f%% of samples: %s", what, v->w.proc, paren,
			 value_source(&v->w, sb2, sizeof(sb2)), val, 100 * c->share, advice(v->kind));
}

/* The time an instruction takes, as PC samples: its source line's. A
 * timer interrupt lands after the instruction that took the time (skid:
 * in a loop `s = s * k + i` the imul had 0.1% and the add after it 89%),
 * so an instruction's own count understates it; the line holds both. */
static uint64_t line_samples(const struct value_model *vm, const struct value_hot *v)
{
	uint64_t own = value_pc_samples(vm, v->image, v->vaddr), sum = 0;
	if (!v->w.file || v->w.line <= 0)
		return own;
	for (size_t i = 0; i < vm->m.npcs; i++) {
		const struct model_pc *pc = &vm->m.pcs[i];
		if (pc->event == vm->ev && pc->image == v->image && pc->line == v->w.line &&
		    pc->file && !strcmp(pc->file, v->w.file))
			sum += pc->count;
	}
	return sum > own ? sum : own;
}

/* The estimated value samples at v's PC that came from call site `site`:
 * the RETADDR hotlist at the same PC says which share of the PC's value
 * samples each site had (few distinct values: nearly exact), times v's
 * vtot. 0 when the PC has no RETADDR hotlist or not that site. */
static double site_samples(const struct value_model *vm, const struct value_hot *v, uint64_t site)
{
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct value_hot *r = &vm->hot[i];
		if (r->image != v->image || r->vaddr != v->vaddr || r->kind != MERGE_VK_RETADDR ||
		    !r->h.vtot)
			continue;
		for (uint32_t j = 0; j < r->h.n; j++)
			if (r->h.e[j].value == site)
				return (double)v->h.vtot * merge_hot_estimate(&r->h, (int)j) /
				       (double)r->h.vtot;
	}
	return 0;
}

/* Candidates of one hotlist: its top value, or per call site the top
 * value from that site, its share among the site's estimated samples:
 * from the PC's RETADDR hotlist where it has the site, else the sum of
 * the site's entries (an overestimate of the share: the site's rare
 * values are the ones the hotlist drops). */
static size_t candidates(struct value_model *vm, const struct value_hot *v, const struct opts *op,
			 struct cand *out, size_t *skipped)
{
	double t = vm->total ? (double)line_samples(vm, v) / (double)vm->total : 0.0;
	size_t n = 0;
	if (!value_kind_by_site(v->kind)) {
		out[0] = (struct cand){ .v = v, .e = 0, .share = value_share(&v->h, 0), .time = t };
		return 1;
	}
	for (uint32_t e = 0; e < v->h.n; e++) {
		int seen = 0;
		double site_est = 0;
		for (uint32_t j = 0; j < v->h.n; j++) {
			if (v->h.e[j].aux != v->h.e[e].aux)
				continue;
			seen |= j < e;
			site_est += merge_hot_estimate(&v->h, (int)j);
		}
		if (seen)
			continue;               /* not the site's top entry */
		double from_site = site_samples(vm, v, v->h.e[e].aux);
		if (from_site >= merge_hot_estimate(&v->h, (int)e))
			site_est = from_site;
		if (site_est < (double)op->min_vtot) {
			(*skipped)++;
			continue;
		}
		struct cand *c = &out[n++];
		*c = (struct cand){ .v = v, .e = (int)e, .by_site = 1,
				    .share = merge_hot_estimate(&v->h, (int)e) / site_est,
				    .time = t * site_est / (double)v->h.vtot };
		c->site_known = value_site(vm, v->image, v->h.e[e].aux, &c->site) == 0;
	}
	return n;
}

/* The plain kind a *_BY_SITE kind pairs with a call site. */
static unsigned plain_kind(unsigned k)
{
	return k == MERGE_VK_RESULT_BY_SITE ? MERGE_VK_RESULT
	       : k == MERGE_VK_SRC1_BY_SITE ? MERGE_VK_SRC1
	       : k == MERGE_VK_SRC2_BY_SITE ? MERGE_VK_SRC2 : k;
}

/* A value that is 45% of an operand overall and 90% from one call site
 * is one finding, the call site's: drop a plain candidate when a call
 * site of the same PC and operand has the same top value more often.
 * (Ranked by time x share, the plain one scored higher, 0.55 against
 * 0.45 of the time, and named no site.) Returns the new count. */
static size_t drop_explained(struct cand *c, size_t n)
{
	size_t m = 0;
	for (size_t i = 0; i < n; i++) {
		const struct cand *a = &c[i];
		int explained = 0;
		for (size_t j = 0; j < n && !a->by_site && !explained; j++) {
			const struct cand *b = &c[j];
			explained = b->by_site && b->v->image == a->v->image && b->v->vaddr == a->v->vaddr &&
				    plain_kind(b->v->kind) == a->v->kind &&
				    b->v->h.e[b->e].value == a->v->h.e[a->e].value && b->share > a->share;
		}
		if (!explained)
			c[m++] = c[i];
	}
	return m;
}

/* The rows: in JSON the instruction, its top value and the measures, the
 * call site and the argument it is (left out when none); in text the
 * measures first, and the suggestion on a line of its own. */
static void cand_cols(struct table *t)
{
	table_init(t);
	table_col(t, (struct table_col){ .head = "", .key = "procedure", .type = TABLE_STR, .tpos = 7 });
	table_col(t, (struct table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	table_col(t, (struct table_col){ .key = "image", .type = TABLE_STR });
	table_col(t, (struct table_col){ .head = "source / suggestion", .key = "source", .type = TABLE_STR,
					 .tpos = 6 });
	table_col(t, (struct table_col){ .head = "kind", .key = "kind", .type = TABLE_STR, .width = 12,
					 .flags = TABLE_LEFT, .gap = 2, .tpos = 4 });
	table_col(t, (struct table_col){ .key = "value", .type = TABLE_UINT });
	table_col(t, (struct table_col){ .head = "value", .key = "value_text", .type = TABLE_STR, .width = 24,
					 .flags = TABLE_LEFT, .tpos = 5 });
	table_col(t, (struct table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.4f", .tpos = 3 });
	table_col(t, (struct table_col){ .head = "time", .key = "time", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f", .tpos = 2 });
	table_col(t, (struct table_col){ .head = "score", .key = "score", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.2f%%", .jfmt = "%.6f", .tpos = 1 });
	table_col(t, (struct table_col){ .key = "samples", .type = TABLE_UINT });
	table_col(t, (struct table_col){ .key = "vtot", .type = TABLE_UINT });
	table_col(t, (struct table_col){ .key = "site", .type = TABLE_STR });
	table_col(t, (struct table_col){ .key = "argument", .type = TABLE_INT, .flags = TABLE_OMIT });
	table_col(t, (struct table_col){ .key = "suggestion", .type = TABLE_STR, .width = 23,
					 .flags = TABLE_EXTRA });
}

int cmd_invariants(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "min-share", required_argument, 0, 's' },
		{ "min-time", required_argument, 0, 't' },
		{ "min-vtot", required_argument, 0, 'v' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"invariants", kHelp,
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, "", on_extra,
	};
	struct opts op = { .min_share = 0.5, .min_time = 0.005, .min_vtot = 20 };
	struct report_opts o = { .limit = 20 };
	struct value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &op);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("invariants", "takes no operands");
	if ((rc = value_model_load(&vm, &o, "invariants")))
		return rc;

	struct cand *c = calloc(vm.nhot * MERGE_HOT_N + 1, sizeof(*c));
	size_t n = 0, skipped = 0, considered = 0;
	if (!c) {
		perror("vprof invariants");
		exit(1);
	}
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct value_hot *v = &vm.hot[i];
		/* Latencies are `vprof latency`'s; return addresses are the
		 * call-site shares the @site kinds are measured against. */
		if (value_kind_is_latency(v->kind) || v->kind == MERGE_VK_RETADDR || !v->h.n)
			continue;
		considered++;
		if (v->h.vtot < op.min_vtot) {
			skipped++;
			continue;
		}
		size_t base = n, k = candidates(&vm, v, &op, c + base, &skipped);
		for (size_t j = 0; j < k; j++) {
			struct cand x = c[base + j];
			x.score = x.time * x.share;
			if (x.share >= op.min_share && x.time >= op.min_time)
				c[n++] = x;
		}
	}
	n = drop_explained(c, n);
	qsort(c, n, sizeof(*c), by_score);

	char sb[600], vb[64], sug[1400];
	if (!o.json) {
		printf("vprof invariants: %s, epoch %s, event %s (%llu samples), %zu hotlists\n", o.db, vm.m.epoch,
		       vm.ev ? merge_event_name(vm.ev) : "none", (unsigned long long)vm.total, considered);
		if (skipped)
			printf("skipped %zu hotlists or call sites with fewer than %llu value samples (--min-vtot)\n",
			       skipped, (unsigned long long)op.min_vtot);
	}
	struct table t;
	cand_cols(&t);
	for (size_t i = 0; i < n && (!o.limit || (long)i < o.limit); i++) {
		const struct value_hot *v = c[i].v;
		int arg = value_argument(&vm, v);
		suggestion(&vm, &c[i], sug, sizeof(sug));
		table_row(&t);
		table_str(&t, v->w.proc);
		table_uint(&t, v->vaddr);
		table_str(&t, vm.m.images[v->image].path);
		table_str(&t, value_source(&v->w, sb, sizeof(sb)));
		table_str(&t, merge_hot_kind_name(v->kind));
		table_uint(&t, v->h.e[c[i].e].value);
		table_str(&t, value_fmt(&vm, v->kind, v->image, v->h.e[c[i].e].value, vb, sizeof(vb)));
		table_dbl(&t, c[i].share);
		table_dbl(&t, c[i].time);
		table_dbl(&t, c[i].score);
		table_uint(&t, v->samples);
		table_uint(&t, v->h.vtot);
		table_str(&t, c[i].by_site && c[i].site_known ? value_source(&c[i].site, sb, sizeof(sb)) : NULL);
		if (arg)
			table_int(&t, arg);
		else
			table_none(&t);
		table_str(&t, sug);
	}
	if (o.json)
		table_json_lines(&t, stdout);
	else
		table_text(&t, stdout);
	table_free(&t);
	if (!o.json && !n)
		printf("no invariant candidates%s\n", vm.nhot ? " above the thresholds" : ": no value samples in this epoch");
	free(c);
	value_model_free(&vm);
	return report_finish_stdout(0);
}
