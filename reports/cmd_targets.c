/*
 * vprof targets: where indirect calls and jumps go, aggregated across
 * every jump site. Value sampling keeps, per indirect call/jump, a hotlist
 * of its targets (SPOOL_VK_TARGET); this sums each target's estimate
 * (count / p) over all the sites of an image that reached it, so a
 * computed-goto interpreter whose compiler duplicated or merged its
 * dispatch jump still shows one histogram of handlers: the interpreter's
 * dynamic opcode mix, once handler addresses are named (for Debian's
 * lua5.4, scripts/lua_opcodes.py; tests/dispatch.sh).
 *
 * Targets are ELF vaddrs in the image of the jump, or in another image
 * named by its identity (SPOOL_HOT_XREF; the merge translates them); a
 * target outside every image stays an absolute address of one process
 * (SPOOL_HOT_FOREIGN) and is shown as such, never guessed.
 */
#include "reports/builtin.h"
#include "reports/value_model.h"
#include "reports/table.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof targets [--db DIR] [--epoch N|all] [--image SUBSTR] [-n ROWS] [--json]\n"
	"  Indirect-branch targets (value kind \"target\": vprof run --values or\n"
	"  --module indirect), summed over every jump site of an image: each\n"
	"  target's estimated count, its share of all targets listed, how many\n"
	"  sites reached it, and where it is (procedure+offset).\n"
	"  --image SUBSTR  only jump sites in images whose path contains SUBSTR\n"
	"  -n ROWS         rows to show (default 30; 0: all)\n"
	"  --json          one JSON object per target: image (the target's),\n"
	"                  target (hex vaddr in that image; an absolute address\n"
	"                  when foreign), foreign,\n"
	"                  procedure, offset, estimate, share, sites,\n"
	"                  from: [{pc, estimate}] (largest first)\n";

struct from {
	uint64_t pc;
	double est;
};

struct report_target {
	uint32_t image;
	uint64_t value;                 /* as stored: vaddr, or absolute | FOREIGN */
	double est;
	struct from *from;
	size_t nfrom, capfrom;
};

struct opts {
	const char *image;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct opts *op = ctx;
	if (ch == 'i' && *arg) {
		op->image = arg;
		return 0;
	}
	return report_usage("targets", "--image takes a non-empty part of an image path");
}

static void *xalloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1))) {
		perror("vprof targets");
		exit(1);
	}
	return p;
}

static int by_key(const void *a, const void *b)
{
	const struct report_target *x = a, *y = b;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return (x->value > y->value) - (x->value < y->value);
}

static int by_est(const void *a, const void *b)
{
	const struct report_target *x = a, *y = b;
	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	return by_key(a, b);
}

static int from_by_est(const void *a, const void *b)
{
	const struct from *x = a, *y = b;
	if (x->est != y->est)
		return x->est > y->est ? -1 : 1;
	return (x->pc > y->pc) - (x->pc < y->pc);
}

static void add_from(struct report_target *t, uint64_t pc, double est)
{
	for (size_t i = 0; i < t->nfrom; i++)
		if (t->from[i].pc == pc) {
			t->from[i].est += est;
			return;
		}
	if (t->nfrom == t->capfrom) {
		t->capfrom = t->capfrom ? 2 * t->capfrom : 4;
		t->from = xalloc(t->from, t->capfrom * sizeof(*t->from));
	}
	t->from[t->nfrom++] = (struct from){ pc, est };
}

/* The rows: in JSON the target's image, address, place and estimate, and
 * the sites it came from; in text the numbers first, then where it is. */
static void target_cols(struct report_table *t)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .head = "image", .key = "image", .type = TABLE_STR, .tpos = 3 });
	report_table_col(t, (struct report_table_col){ .head = "target", .key = "target", .type = TABLE_UINT, .width = TABLE_AUTO,
					 .flags = TABLE_LEFT, .fmt = "%#llx", .jfmt = "\"%#llx\"",
					 .gap = 2, .tpos = 1 });
	report_table_col(t, (struct report_table_col){ .key = "foreign", .type = TABLE_BOOL });
	report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .head = "procedure+offset", .type = TABLE_STR, .width = 40,
					 .flags = TABLE_LEFT, .tpos = 2 });
	report_table_col(t, (struct report_table_col){ .key = "offset", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .head = "estimate", .key = "estimate", .type = TABLE_DBL, .width = 12,
					 .fmt = "%.0f", .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 8,
					 .flags = TABLE_PERCENT, .fmt = "%.2f%%", .jfmt = "%.6f" });
	report_table_col(t, (struct report_table_col){ .head = "sites", .key = "sites", .type = TABLE_UINT, .width = 5 });
	report_table_col(t, (struct report_table_col){ .key = "from", .type = TABLE_RAW });   /* [{pc, estimate}] */
}

static void add_target(struct report_table *tb, struct report_value_model *vm, const struct report_target *t, double total)
{
	uint32_t ii = t->image;
	uint64_t addr = t->value & ~SPOOL_HOT_XREF;
	int foreign = report_value_code_place(vm, t->image, t->value, &ii, &addr) < 0;
	struct report_value_where w = { .proc = "[another image]", .start = addr };
	char *from = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&from, &len);
	if (!f) {
		perror("vprof targets");
		exit(1);
	}
	if (!foreign)
		report_value_where(vm, ii, addr, &w);
	fputc('[', f);
	for (size_t i = 0; i < t->nfrom; i++)
		fprintf(f, "%s{\"pc\":\"%#llx\",\"estimate\":%.1f}", i ? "," : "",
			(unsigned long long)t->from[i].pc, t->from[i].est);
	fputc(']', f);
	fclose(f);
	report_table_row(tb);
	report_table_str(tb, vm->m.images[ii].path);
	report_table_uint(tb, addr);
	report_table_bool(tb, foreign);
	report_table_str(tb, w.proc);
	if (foreign)
		report_table_str(tb, "[another image]");
	else
		report_table_strf(tb, "%s+%#llx", w.proc, (unsigned long long)(addr - w.start));
	report_table_uint(tb, addr - w.start);
	report_table_dbl(tb, t->est);
	report_table_dbl(tb, total > 0 ? t->est / total : 0);
	report_table_uint(tb, t->nfrom);
	report_table_raw(tb, from);
	free(from);
}

int cmd_targets(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "image", required_argument, 0, 'i' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"targets", kHelp,   /* no --event: hotlists are not per event */
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, "", on_extra,
	};
	struct opts op = { 0 };
	struct report_opts o = { .limit = 30 };
	struct report_value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &op);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("targets", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "targets")))
		return rc;

	/* One row per (site, target) first, then folded by target. */
	struct report_target *t = xalloc(NULL, (vm.nhot * SPOOL_HOT_N + 1) * sizeof(*t));
	size_t n = 0, nsites = 0;
	uint64_t vtot = 0;
	for (size_t i = 0; i < vm.nhot; i++) {
		const struct report_value_hot *v = &vm.hot[i];
		if (v->kind != SPOOL_VK_TARGET || !v->h.n)
			continue;
		if (op.image && !strstr(vm.m.images[v->image].path, op.image))
			continue;
		nsites++;
		vtot += v->h.vtot;
		for (uint32_t e = 0; e < v->h.n; e++) {
			struct report_target *x = &t[n++];
			memset(x, 0, sizeof(*x));
			x->image = v->image;
			x->value = v->h.e[e].value;
			x->est = spool_hot_estimate(&v->h, (int)e);
			add_from(x, v->vaddr, x->est);
		}
	}
	qsort(t, n, sizeof(*t), by_key);
	size_t m = 0;
	double total = 0;
	for (size_t i = 0; i < n; i++) {
		total += t[i].est;
		if (m && !by_key(&t[m - 1], &t[i])) {
			t[m - 1].est += t[i].est;
			add_from(&t[m - 1], t[i].from[0].pc, t[i].from[0].est);
			free(t[i].from);
		} else {
			t[m++] = t[i];
		}
	}
	qsort(t, m, sizeof(*t), by_est);
	for (size_t i = 0; i < m; i++)
		qsort(t[i].from, t[i].nfrom, sizeof(*t[i].from), from_by_est);

	if (!o.json) {
		printf("vprof targets: %s, epoch %s, %zu indirect-branch sites%s%s, %llu value samples, "
		       "%zu targets\n", o.db, vm.m.epoch, nsites, op.image ? " in images matching " : "",
		       op.image ? op.image : "", (unsigned long long)vtot, m);
	}
	struct report_table tb;
	target_cols(&tb);
	for (size_t i = 0; i < m && (!o.limit || (long)i < o.limit); i++)
		add_target(&tb, &vm, &t[i], total);
	if (o.json)
		report_table_json_lines(&tb, stdout);
	else if (m)
		report_table_text(&tb, stdout);
	else
		printf("no indirect-branch targets in this epoch (vprof run --values records them)\n");
	report_table_free(&tb);
	for (size_t i = 0; i < m; i++)
		free(t[i].from);
	free(t);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
