/*
 * vprof latency: loads ranked by estimated stall time (ASPLOS 2000,
 * section 3.2). Each load with a latency hotlist (MERGE_VK_LATENCY, value
 * = binned cycles; else MERGE_VK_ADDR_LATENCY, aux = the bin) gets a mean
 * latency from its estimated bin counts; stall = the load's PC samples x
 * mean (value samples x mean when the PC has no sample of the event).
 * Bins are labelled with the level from DB/calibration (vprof calibrate)
 * when there is one.
 */
#include "reports/values.h"
#include "reports/table.h"

#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof latency [--db DIR] [--epoch N|all] [--event E] [-n ROWS] [--json]\n"
	"  Loads by estimated stall: PC samples x mean binned latency (TSC ticks of\n"
	"  rdtscp; load; rdtscp), with each load's latency distribution; bins are\n"
	"  labelled by level (L1/L2, LLC, DRAM...) after `vprof calibrate`.\n"
	"  -n ROWS       rows to show (default 20; 0: all)\n"
	"  --json        one JSON object per load: procedure, pc, image, source,\n"
	"                samples, share, vtot, mean, stall, value (commonest bin),\n"
	"                value_share, level, bins: [{cycles, level, share}]\n";

struct bin {
	uint64_t cycles;
	double est;
};

struct load {
	const struct value_hot *v;
	struct bin bins[MERGE_HOT_N];
	int nbins;
	double mean, stall, est;
};

static int by_stall(const void *a, const void *b)
{
	const struct load *x = a, *y = b;
	if (x->stall != y->stall)
		return x->stall > y->stall ? -1 : 1;
	return (x->v->vaddr > y->v->vaddr) - (x->v->vaddr < y->v->vaddr);
}

static int by_est(const void *a, const void *b)
{
	const struct bin *x = a, *y = b;
	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	return (x->cycles > y->cycles) - (x->cycles < y->cycles);
}

/* The distribution of one latency hotlist, bins summed (ADDR_LATENCY
 * holds one entry per (address, bin)). */
static void distribution(const struct value_hot *v, struct load *l)
{
	memset(l, 0, sizeof(*l));
	l->v = v;
	for (uint32_t e = 0; e < v->h.n; e++) {
		uint64_t c = v->kind == MERGE_VK_LATENCY ? v->h.e[e].value : v->h.e[e].aux;
		double est = merge_hot_estimate(&v->h, (int)e);
		int b = 0;
		while (b < l->nbins && l->bins[b].cycles != c)
			b++;
		if (b == l->nbins)
			l->bins[l->nbins++] = (struct bin){ c, 0 };
		l->bins[b].est += est;
		l->est += est;
		l->mean += est * (double)c;
	}
	l->mean = l->est > 0 ? l->mean / l->est : 0;
	qsort(l->bins, (size_t)l->nbins, sizeof(l->bins[0]), by_est);
	l->stall = (double)(v->samples ? v->samples : v->h.vtot) * l->mean;
}

/* The rows: in JSON the load, its samples and estimates, its commonest
 * bin and every bin; in text the stall first, and below each load its
 * commonest six bins. */
static void load_cols(struct table *t)
{
	table_init(t);
	table_col(t, (struct table_col){ .head = "procedure / latency bins", .key = "procedure",
					 .type = TABLE_STR, .tpos = 7 });
	table_col(t, (struct table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	table_col(t, (struct table_col){ .key = "image", .type = TABLE_STR });
	table_col(t, (struct table_col){ .head = "source", .key = "source", .type = TABLE_STR, .width = 30,
					 .flags = TABLE_LEFT, .gap = 2, .tpos = 6 });
	table_col(t, (struct table_col){ .key = "kind", .type = TABLE_STR });
	table_col(t, (struct table_col){ .head = "samples", .key = "samples", .type = TABLE_UINT, .width = 8,
					 .tpos = 2 });
	table_col(t, (struct table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 7,
					 .flags = TABLE_PERCENT, .fmt = "%.2f%%", .jfmt = "%.6f", .tpos = 3 });
	table_col(t, (struct table_col){ .head = "vtot", .key = "vtot", .type = TABLE_UINT, .width = 6,
					 .tpos = 5 });
	table_col(t, (struct table_col){ .head = "mean", .key = "mean", .type = TABLE_DBL, .width = 7,
					 .fmt = "%.1f", .jfmt = "%.2f", .tpos = 4 });
	table_col(t, (struct table_col){ .head = "stall", .key = "stall", .type = TABLE_DBL, .width = 12,
					 .fmt = "%.0f", .jfmt = "%.1f", .tpos = 1 });
	table_col(t, (struct table_col){ .key = "value", .type = TABLE_UINT });
	table_col(t, (struct table_col){ .key = "value_share", .type = TABLE_DBL, .jfmt = "%.4f" });
	table_col(t, (struct table_col){ .key = "level", .type = TABLE_STR });
	table_col(t, (struct table_col){ .key = "bins", .type = TABLE_RAW });  /* [{cycles, level, share}] */
	table_col(t, (struct table_col){ .type = TABLE_STR, .width = 44, .flags = TABLE_EXTRA });
}

static void add_load(struct table *t, struct value_model *vm, const struct load *l)
{
	const struct value_hot *v = l->v;
	char sb[600];
	char *bins = NULL, *text = NULL;
	size_t blen = 0, tlen = 0;
	FILE *bf = open_memstream(&bins, &blen), *tf = open_memstream(&text, &tlen);
	if (!bf || !tf) {
		perror("vprof latency");
		exit(1);
	}
	fputc('[', bf);
	for (int b = 0; b < l->nbins; b++) {
		const char *lv = value_level_of(vm, l->bins[b].cycles);
		fprintf(bf, "%s{\"cycles\":%llu,\"level\":", b ? "," : "", (unsigned long long)l->bins[b].cycles);
		if (lv)
			report_json_str(bf, lv);
		else
			fprintf(bf, "null");
		fprintf(bf, ",\"share\":%.4f}", l->bins[b].est / l->est);
		if (b < 6)
			fprintf(tf, "%s %llu%s%s%s %.0f%%", b ? "," : "", (unsigned long long)l->bins[b].cycles,
				lv ? " (" : "", lv ? lv : "", lv ? ")" : "", 100 * l->bins[b].est / l->est);
	}
	fputc(']', bf);
	fprintf(tf, "%s", l->nbins > 6 ? ", ..." : "");
	fclose(bf);
	fclose(tf);
	table_row(t);
	table_str(t, v->w.proc);
	table_uint(t, v->vaddr);
	table_str(t, vm->m.images[v->image].path);
	table_str(t, value_source(&v->w, sb, sizeof(sb)));
	table_str(t, merge_hot_kind_name(v->kind));
	table_uint(t, v->samples);
	table_dbl(t, vm->total ? (double)v->samples / (double)vm->total : 0);
	table_uint(t, v->h.vtot);
	table_dbl(t, l->mean);
	table_dbl(t, l->stall);
	table_uint(t, l->nbins ? l->bins[0].cycles : 0);
	table_dbl(t, l->nbins ? l->bins[0].est / l->est : 0.0);
	table_str(t, l->nbins ? value_level_of(vm, l->bins[0].cycles) : NULL);
	table_raw(t, bins);
	table_str(t, text);
	free(bins);
	free(text);
}

int cmd_latency(int argc, char **argv)
{
	static const struct report_cmd cmd = {
		"latency", kHelp,
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		NULL, NULL, NULL,
	};
	struct report_opts o = { .limit = 20 };
	struct value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("latency", "takes no operands");
	if ((rc = value_model_load(&vm, &o, "latency")))
		return rc;
	struct load *l = calloc(vm.nhot + 1, sizeof(*l));
	size_t n = 0;
	if (!l) {
		perror("vprof latency");
		exit(1);
	}
	/* Sorted by place then kind: LATENCY (5) before ADDR_LATENCY (12), so
	 * the first latency hotlist of an address is the one to take. */
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct value_hot *v = &vm.hot[i];
		if (!value_kind_is_latency(v->kind) || !v->h.n)
			continue;
		if (n && l[n - 1].v->image == v->image && l[n - 1].v->vaddr == v->vaddr)
			continue;
		distribution(v, &l[n++]);
	}
	qsort(l, n, sizeof(*l), by_stall);
	if (!o.json) {
		printf("vprof latency: %s, epoch %s, event %s (%llu samples), %zu loads with latencies\n", o.db,
		       vm.m.epoch, vm.ev ? merge_event_name(vm.ev) : "none", (unsigned long long)vm.total, n);
		if (vm.nlevels) {
			printf("levels (vprof calibrate):");
			for (int i = 0; i < vm.nlevels; i++)
				printf(" %s ~%llu", vm.levels[i].name, (unsigned long long)vm.levels[i].typical);
			printf(" cycles\n");
		} else {
			printf("no calibration in %s: bins in cycles only (run vprof calibrate)\n", o.db);
		}
	}
	struct table t;
	load_cols(&t);
	for (size_t i = 0; i < n && (!o.limit || (long)i < o.limit); i++)
		add_load(&t, &vm, &l[i]);
	if (o.json)
		table_json_lines(&t, stdout);
	else
		table_text(&t, stdout);
	if (!o.json && !n)
		printf("no load latencies in this epoch (vprof run --values records them)\n");
	table_free(&t);
	free(l);
	value_model_free(&vm);
	return report_finish_stdout(0);
}
