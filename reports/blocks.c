/*
 * vprof report --by block: DCPI's per-block view (dcpicalc) without a
 * PMU. A block is a run of a procedure's instructions entered only at
 * its first and left only at its last: it starts at the procedure's
 * entry, after a branch or return, and wherever a recorded range starts
 * or ends. Per block, from the branch records of `vprof run --branches`
 * (SPOOL_VK_RANGE) its estimated executions, and from the PC samples of
 * the main event its time; their ratio per instruction, over the average
 * of the blocks shown, is its relative time per instruction (DCPI's CPI,
 * here relative: without an instruction counter the executions have no
 * absolute scale).
 *
 * Executions are the ranges' counts summed over windows. The 95%
 * interval is +-1.96/sqrt(k) of the count, k the windows that ran the
 * block (at least: the most windows of any one range over it), taking
 * windows as the independent samples and the block's count in a window
 * as their mean. It is the sampling error only: windows start where time
 * goes, and code a window cannot reach from where the samples land (a
 * phase of millions of instructions with its own speed) is counted in
 * proportion to its time, not its executions (docs/value-sampling.md,
 * "Execution counts").
 */
#include "reports/builtin.h"
#include "reports/list.h"
#include "reports/table.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

struct block {
	uint32_t image;
	uint64_t start, last;          /* first and last instruction */
	const char *proc;
	uint64_t proc_start;
	const char *file;
	int line;
	int ninsn;
	double exec, windows;
	uint64_t samples;
};

struct blocks {
	struct block *v;
	size_t n, cap;
};

static int by_samples(const void *a, const void *b)
{
	const struct block *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples < y->samples ? 1 : -1;
	if (x->exec != y->exec)
		return x->exec < y->exec ? 1 : -1;
	return x->image != y->image ? (x->image < y->image ? -1 : 1) : (x->start < y->start ? -1 : x->start > y->start);
}

/* Index of the instruction at va in in[0, n) (sorted), or n. */
static size_t at(const struct report_insn *in, size_t n, uint64_t va)
{
	size_t a = 0, b = n;
	while (a < b) {
		size_t m = (a + b) / 2;
		if (in[m].vaddr < va)
			a = m + 1;
		else
			b = m;
	}
	return a < n && in[a].vaddr == va ? a : n;
}

/* The blocks of one procedure that ran in a window or have samples. */
static void proc_blocks(struct report_value_model *vm, const struct report_target *t, struct blocks *out)
{
	struct report_insn *in;
	size_t n = report_list_disassemble(vm, t, &in);
	double *win = NULL, *ex = n ? report_list_executions(vm, t, in, n, &win) : NULL;
	struct report_code_pair *r;
	size_t nr = ex ? report_value_code_pairs(vm, t->image, SPOOL_VK_RANGE, &r) : 0;
	char *lead = ex ? calloc(n + 1, 1) : NULL;
	if (ex && !lead) {
		perror("vprof report");
		exit(1);
	}
	for (size_t j = 0; lead && j < n; j++)
		lead[j] = j == 0 || in[j - 1].ends_block;
	for (size_t i = 0; lead && i < nr; i++) {
		size_t a = at(in, n, r[i].from), b = at(in, n, r[i].to);
		if (a < n)
			lead[a] = 1;
		if (b < n)
			lead[b + 1] = 1;
	}
	for (size_t j = 0; lead && j < n;) {
		struct block b = { .image = t->image, .start = in[j].vaddr, .proc = t->proc, .proc_start = t->start,
				   .exec = ex[j], .windows = win ? win[j] : 0 };
		do {
			b.samples += report_value_pc_samples(vm, t->image, in[j].vaddr);
			b.last = in[j].vaddr;
			b.ninsn++;
			j++;
		} while (j < n && !lead[j]);
		if (b.exec <= 0 && !b.samples)
			continue;
		struct report_value_where w;
		report_value_where(vm, t->image, b.start, &w);
		b.file = w.file;
		b.line = w.line;
		out->v = report_grow(out->v, &out->cap, out->n, sizeof(*out->v));
		out->v[out->n++] = b;
	}
	if (nr)
		free(r);
	free(lead);
	free(ex);
	free(win);
	free(in);
}

static void cols(struct report_table *t)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .head = "samples", .key = "samples", .type = TABLE_UINT, .width = 8 });
	report_table_col(t, (struct report_table_col){ .head = "time", .key = "percent", .type = TABLE_DBL, .width = 7,
					 .flags = TABLE_PERCENT, .fmt = "%.2f%%", .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .head = "executions", .key = "executions", .type = TABLE_DBL,
					 .width = 11, .fmt = "%.0f", .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .head = "95%", .type = TABLE_STR, .width = 6 });
	report_table_col(t, (struct report_table_col){ .key = "executions_lo", .type = TABLE_DBL, .jfmt = "%.1f",
					 .flags = TABLE_OMIT });
	report_table_col(t, (struct report_table_col){ .key = "executions_hi", .type = TABLE_DBL, .jfmt = "%.1f",
					 .flags = TABLE_OMIT });
	report_table_col(t, (struct report_table_col){ .key = "windows", .type = TABLE_DBL, .jfmt = "%.0f",
					 .flags = TABLE_OMIT });
	report_table_col(t, (struct report_table_col){ .head = "exec", .key = "exec_share", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .head = "insns", .key = "instructions", .type = TABLE_UINT,
					 .width = 5 });
	report_table_col(t, (struct report_table_col){ .head = "t/insn", .key = "time_per_insn", .type = TABLE_DBL,
					 .width = 6, .fmt = "%.2f", .jfmt = "%.4f", .flags = TABLE_OMIT });
	report_table_col(t, (struct report_table_col){ .head = "block", .type = TABLE_STR, .width = 28,
					 .flags = TABLE_LEFT, .gap = 2 });
	report_table_col(t, (struct report_table_col){ .head = "source", .key = "source", .type = TABLE_STR,
					 .width = TABLE_AUTO, .flags = TABLE_LEFT });
	report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "offset", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .key = "last_pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .key = "image", .type = TABLE_STR });
}

int report_blocks(const struct report_opts *o)
{
	struct report_value_model vm;
	int rc;
	if ((rc = report_value_model_load(&vm, o, "report")))
		return rc;
	/* The procedures with branch records, once each. */
	struct blocks bl = { 0 };
	struct report_target *procs = NULL;
	size_t np = 0, capp = 0;
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct report_value_hot *v = &vm.hot[i];
		if (v->kind != SPOOL_VK_RANGE || !v->w.size)
			continue;
		size_t k = 0;
		while (k < np && !(procs[k].image == v->image && procs[k].start == v->w.start))
			k++;
		if (k < np)
			continue;
		procs = report_grow(procs, &capp, np, sizeof(*procs));
		procs[np++] = (struct report_target){ .image = v->image, .start = v->w.start, .size = v->w.size,
						      .proc = v->w.proc };
	}
	for (size_t k = 0; k < np; k++)
		proc_blocks(&vm, &procs[k], &bl);
	double xall = 0, xins = 0, sins = 0;
	for (size_t i = 0; i < bl.n; i++)
		if (bl.v[i].exec > 0) {
			xall += bl.v[i].exec;
			xins += bl.v[i].exec * bl.v[i].ninsn;
			sins += (double)bl.v[i].samples;
		}
	qsort(bl.v, bl.n, sizeof(*bl.v), by_samples);

	if (!o->json) {
		printf("vprof report --by block: %s, epoch %s, event %s: %llu samples; %zu blocks in %zu procedures "
		       "with branch records\n", o->db, vm.m.epoch, vm.ev ? upcall_event_name(vm.ev) : "none",
		       (unsigned long long)vm.total, bl.n, np);
		if (bl.n)
			printf("executions: relative counts from the windows of vprof run --branches (the unit of vprof "
			       "list)\n95%%: their sampling error, from the windows that ran the block (not the bias of "
			       "long phases: vprof help report)\nexec: share of block executions; t/insn: samples per "
			       "instruction executed, over the average of these blocks (a relative CPI)\n");
	}
	struct report_table tb;
	cols(&tb);
	for (size_t i = 0; i < bl.n && (!o->limit || (long)i < o->limit); i++) {
		const struct block *b = &bl.v[i];
		char src[600];
		report_table_row(&tb);
		report_table_uint(&tb, b->samples);
		report_table_dbl(&tb, vm.total ? (double)b->samples / (double)vm.total : 0.0);
		report_table_dbl(&tb, b->exec);
		double h = b->windows >= 1 ? 1.959964 / sqrt(b->windows) : -1;
		if (b->exec > 0 && h >= 0) {
			report_table_strf(&tb, "+-%.0f%%", 100 * h);
			report_table_dbl(&tb, b->exec * (1 - h > 0 ? 1 - h : 0));
			report_table_dbl(&tb, b->exec * (1 + h));
			report_table_dbl(&tb, b->windows);
		} else {
			report_table_str(&tb, b->exec > 0 ? "?" : NULL);
			report_table_none(&tb);
			report_table_none(&tb);
			report_table_none(&tb);
		}
		report_table_dbl(&tb, xall > 0 ? b->exec / xall : 0.0);
		report_table_uint(&tb, (unsigned long long)b->ninsn);
		if (b->exec > 0 && sins > 0)
			report_table_dbl(&tb, ((double)b->samples / (b->exec * b->ninsn)) / (sins / xins));
		else
			report_table_none(&tb);
		report_table_strf(&tb, "%s+%#llx", b->proc, (unsigned long long)(b->start - b->proc_start));
		if (b->file && b->line > 0) {
			struct report_value_where w = { .file = b->file, .line = b->line };
			report_table_str(&tb, report_value_source(&w, src, sizeof(src)));
		} else {
			report_table_str(&tb, NULL);
		}
		report_table_str(&tb, b->proc);
		report_table_uint(&tb, b->start - b->proc_start);
		report_table_uint(&tb, b->start);
		report_table_uint(&tb, b->last);
		report_table_str(&tb, vm.m.images[b->image].path);
	}
	if (o->json) {
		printf("{\"db\":");
		report_json_str(stdout, o->db);
		printf(",\"epoch\":");
		report_json_str(stdout, vm.m.epoch);
		printf(",\"event\":");
		report_json_str(stdout, vm.ev ? upcall_event_name(vm.ev) : "none");
		printf(",\"samples\":%llu,\"procedures\":%zu,\"blocks\":[", (unsigned long long)vm.total, np);
		report_table_json_elements(&tb, stdout);
		printf("]}\n");
	}
	else if (bl.n)
		report_table_text(&tb, stdout);
	else
		printf("no branch records in this epoch: vprof run --branches records the ranges executions come "
		       "from\n");
	report_table_free(&tb);
	free(bl.v);
	free(procs);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
