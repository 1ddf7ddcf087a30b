/*
 * vprof latency: loads ranked by estimated stall (ASPLOS 2000, section
 * 3.2), as reports/latency_rank.c ranks them: this file parses the options and
 * prints the rows, as a table whose rows lead with one English sentence
 * and carry the bins below, or as JSON Lines.
 */
#include "reports/builtin.h"
#include "reports/latency_rank.h"
#include "reports/table.h"

#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof latency [--db DIR] [--epoch N|all] [--event E] [-n ROWS] [--json]\n"
	"  Loads that wait on memory, ranked by estimated stall. Each row says where\n"
	"  the load is, the memory level it waits on and in what part of its\n"
	"  latency samples, and its part of the time:\n"
	"    the load at chase.c:16 in chase() waits on DRAM (~640 cycles) in\n"
	"    99.7% of its samples: 98% of the time\n"
	"  then the mean latency and the commonest bins. Latencies are TSC ticks of\n"
	"  rdtscp; load; rdtscp as value samples time the load; levels (cache,\n"
	"  DRAM...) are named after `vprof calibrate`.\n"
	"  time   the PC samples at the load and at the instructions after it, up\n"
	"         to the first branch and before the next load (an interrupt lands\n"
	"         after the instruction that took the time), over all samples;\n"
	"         without the image file, the samples of the load's source line\n"
	"  stall  time x the part of the load's latency cycles beyond the first\n"
	"         calibrated level (the nearest cache): the time spent waiting\n"
	"         on slower memory; without a calibration, the time itself\n"
	"  level  the one whose bins hold most of the load's latency cycles, with\n"
	"         the median of those bins. Latencies over 8x the slowest level's\n"
	"         are loads interrupted while timed: counted in the shares, their\n"
	"         cycles weighed in neither stall nor level\n"
	"  -n ROWS       rows to show (default 20; 0: all)\n"
	"  --json        one JSON object per load: procedure, pc, image, source,\n"
	"                kind, sentence, stall, time, time_samples, time_span,\n"
	"                samples, vtot, mean, beyond, level, level_share,\n"
	"                level_cycles, value (commonest bin), value_share,\n"
	"                bins: [{cycles, level, share}]\n";

/* The rows: in JSON the load, the sentence, the measures and every bin;
 * in text the measures first, then the sentence, and below each load its
 * commonest six bins. */
static void load_cols(struct report_table *t)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .key = "image", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "source", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "kind", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .head = "load", .key = "sentence", .type = TABLE_STR,
					 .flags = TABLE_LEFT, .gap = 2, .tpos = 6 });
	report_table_col(t, (struct report_table_col){ .head = "stall", .key = "stall", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f", .tpos = 1 });
	report_table_col(t, (struct report_table_col){ .head = "time", .key = "time", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f", .tpos = 2 });
	report_table_col(t, (struct report_table_col){ .key = "time_samples", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "time_span", .type = TABLE_INT });
	report_table_col(t, (struct report_table_col){ .key = "samples", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .head = "vtot", .key = "vtot", .type = TABLE_UINT, .width = 5,
					 .tpos = 4 });
	report_table_col(t, (struct report_table_col){ .head = "mean", .key = "mean", .type = TABLE_DBL, .width = 6,
					 .fmt = "%.0f", .jfmt = "%.2f", .tpos = 3 });
	report_table_col(t, (struct report_table_col){ .key = "beyond", .type = TABLE_DBL, .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .key = "level", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "level_share", .type = TABLE_DBL, .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .key = "level_cycles", .type = TABLE_DBL, .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .key = "value", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "value_share", .type = TABLE_DBL, .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .key = "bins", .type = TABLE_RAW });  /* [{cycles, level, share}] */
	report_table_col(t, (struct report_table_col){ .type = TABLE_STR, .width = 30, .flags = TABLE_EXTRA });
}

static void add_load(struct report_table *t, struct report_value_model *vm, const struct report_lat_row *l)
{
	const struct report_value_hot *v = l->v;
	char sb[600];
	char *bins = NULL, *text = NULL;
	size_t blen = 0, tlen = 0;
	FILE *bf = open_memstream(&bins, &blen), *tf = open_memstream(&text, &tlen);
	if (!bf || !tf) {
		perror("vprof latency");
		exit(1);
	}
	fputc('[', bf);
	fprintf(tf, "bins:");
	for (int b = 0; b < l->nbins; b++) {
		const char *lv = l->bins[b].level;
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
	fprintf(tf, "%s; %s+%#llx", l->nbins > 6 ? ", ..." : "", v->w.proc,
		(unsigned long long)(v->vaddr - v->w.start));
	fclose(bf);
	fclose(tf);
	report_table_row(t);
	report_table_str(t, v->w.proc);
	report_table_uint(t, v->vaddr);
	report_table_str(t, vm->m.images[v->image].path);
	report_table_str(t, report_value_source(&v->w, sb, sizeof(sb)));
	report_table_str(t, spool_hot_kind_name(v->kind));
	report_table_str(t, l->sentence);
	report_table_dbl(t, l->stall);
	report_table_dbl(t, l->time);
	report_table_uint(t, l->time_samples);
	report_table_int(t, l->span);
	report_table_uint(t, l->samples);
	report_table_uint(t, v->h.vtot);
	report_table_dbl(t, l->mean);
	report_table_dbl(t, l->beyond);
	report_table_str(t, l->level);
	if (l->level) {
		report_table_dbl(t, l->level_share);
		report_table_dbl(t, l->level_cycles);
	} else {
		report_table_none(t);
		report_table_none(t);
	}
	report_table_uint(t, l->nbins ? l->bins[0].cycles : 0);
	report_table_dbl(t, l->nbins ? l->bins[0].est / l->est : 0.0);
	report_table_raw(t, bins);
	report_table_str(t, text);
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
	struct report_value_model vm;
	struct report_lat_result r;
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("latency", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "latency")))
		return rc;
	report_lat_rank(&vm, &r);
	if (!o.json) {
		printf("vprof latency: %s, epoch %s, event %s (%llu samples), %zu loads with latencies\n", o.db,
		       vm.m.epoch, vm.ev ? upcall_event_name(vm.ev) : "none", (unsigned long long)vm.total, r.n);
		if (vm.nlevels) {
			printf("levels (vprof calibrate):");
			for (int i = 0; i < vm.nlevels; i++)
				printf(" %s ~%llu", vm.levels[i].name, (unsigned long long)vm.levels[i].typical);
			printf(" cycles\n");
		} else {
			printf("no calibration in %s: bins in cycles only, stall not split from time "
			       "(run vprof calibrate)\n", o.db);
		}
		printf("%s\n", report_lat_estimator);
	}
	struct report_table t;
	load_cols(&t);
	for (size_t i = 0; i < r.n && (!o.limit || (long)i < o.limit); i++)
		add_load(&t, &vm, &r.rows[i]);
	if (o.json)
		report_table_json_lines(&t, stdout);
	else
		report_table_text(&t, stdout);
	if (!o.json && !r.n)
		printf("no load latencies in this epoch (vprof run --values records them)\n");
	report_table_free(&t);
	report_lat_result_free(&r);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
