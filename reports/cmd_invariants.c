/*
 * vprof invariants: semi-invariant values worth specializing for (Burrows
 * et al., ASPLOS 2000, section 3), as reports/invariants.c ranks them:
 * this file parses the options and prints the rows, as a table with one
 * English sentence per row, or as JSON Lines after a summary object.
 *
 * A hotlist with fewer value samples than --min-vtot says little: it is
 * skipped and counted, never silently; so are the rows of values that
 * are not data (constants, frame addresses, positions), by class.
 */
#include "reports/builtin.h"
#include "reports/invariants.h"
#include "reports/table.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof invariants [--db DIR] [--epoch N|all] [--event E] [-n ROWS] [--all]\n"
	"                        [--min-share S] [--min-time T] [--min-vtot V] [--json]\n"
	"  Values worth specializing for: code that takes real time and sees one\n"
	"  value most of the time. One row per candidate, with a sentence naming\n"
	"  the procedure, the argument or operand, the value, the call site and the\n"
	"  time at stake:\n"
	"    argument  a procedure's argument at one call site (across images, named\n"
	"              and numbered in source order from the callee's DWARF, or by\n"
	"              its register: \"the argument in xmm1\");\n"
	"    size      the size argument of memcpy, memmove, memset, memcmp, bcmp,\n"
	"              strncmp at one call site;\n"
	"    target    the commonest target of an indirect call or jump;\n"
	"    operand   an instruction's result, source operand, address or stride\n"
	"              (per call site for the @site kinds).\n"
	"  Ranked by weight = time x share. share: the top value's estimated part of\n"
	"  the value samples (of the callee's calls from that site; of the site's\n"
	"  samples for @site kinds), with its 95% interval when wider than 2 points\n"
	"  or when it rounds to 100%.\n"
	"  time: of the code that depends on the value. For an argument or a call's\n"
	"  target, the callee's inclusive time from that call site: from recorded\n"
	"  stacks (vprof run --stacks: samples whose stack holds the call's return\n"
	"  address), else estimated from the return-address samples (each\n"
	"  procedure's time with its callees' split among the call sites it returned\n"
	"  to, one level at a time, as gprof does); the header says which. For an\n"
	"  operand, its source line's samples (an interrupt lands after the\n"
	"  instruction that took the time, on the same line).\n"
	"  Values that are not data are hidden, and counted in the header:\n"
	"    constant  fixed at compile time: an immediate, a zeroing or all-ones\n"
	"              idiom (xor r,r; pxor x,x; pcmpeqd x,x), a load from read-only\n"
	"              data (.rodata, RELRO, the GOT), an argument the caller set\n"
	"              from one, a branch through the GOT;\n"
	"    frame     an address in the thread's stack (marked by the sampler, the\n"
	"              stack pointer, an address computed from rsp, or from rbp in a\n"
	"              procedure that keeps a frame pointer);\n"
	"    position  where something was loaded or allocated: a RIP-relative\n"
	"              address, the instruction's own address, an image's base, a\n"
	"              pointer to data in an image, the heap or a mapping (which\n"
	"              object, not what it holds; a code address stays data).\n"
	"  The instruction is decoded from the image file (while its build-id\n"
	"  matches); without it every value counts as data.\n"
	"  --all          show those rows too, with their class\n"
	"  --min-share S  top value's share at least S (default 0.5; 50 or 50% too)\n"
	"  --min-time T   time at stake at least T (default 0.005)\n"
	"  --min-vtot V   skip hotlists (and call sites, callees) with fewer value\n"
	"                 samples (default 20); how many were skipped is said\n"
	"  -n ROWS        rows to show (default 20; 0: all)\n"
	"  --json         JSON Lines: first {summary: true, hidden: {constant, frame,\n"
	"                 position}, skipped, hotlists, time_basis}, then one object\n"
	"                 per row: procedure, pc, image, source, kind, what, class,\n"
	"                 why, callee, callee_impl, argument (number in source order),\n"
	"                 argument_name, argument_type, register, site, value,\n"
	"                 value_type, value_text, share, share_low, share_high, of,\n"
	"                 time, weight, time_basis, samples, vtot, suggestion\n";

struct opts {
	struct report_inv_opts inv;
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
	if (ch == 'a') {
		op->inv.all = 1;
		return 0;
	}
	if (ch == 's' && parse_share(arg, &op->inv.min_share) == 0)
		return 0;
	if (ch == 't' && parse_share(arg, &op->inv.min_time) == 0)
		return 0;
	if (ch == 'v') {
		op->inv.min_vtot = strtoull(arg, &end, 10);
		if (!*end && *arg)
			return 0;
	}
	return report_usage("invariants", ch == 'v' ? "--min-vtot takes a count"
						   : "--min-share and --min-time take a fraction or a percentage");
}

/* The rows: in text the measures, then the sentence, and a line below
 * with where the value was seen; in JSON every field. */
static void cols(struct report_table *t, int all)
{
	report_table_init(t);
	report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .key = "image", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "source", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "kind", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "what", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .head = all ? "class" : NULL, .key = "class", .type = TABLE_STR,
					 .width = 8, .flags = TABLE_LEFT, .gap = 2, .tpos = 4 });
	report_table_col(t, (struct report_table_col){ .key = "why", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "callee", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "callee_impl", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "argument", .type = TABLE_INT });
	report_table_col(t, (struct report_table_col){ .key = "argument_name", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "argument_type", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "register", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "site", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "value", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "value_type", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "value_text", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.4f", .tpos = 3 });
	report_table_col(t, (struct report_table_col){ .key = "share_low", .type = TABLE_DBL, .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .key = "share_high", .type = TABLE_DBL, .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .key = "of", .type = TABLE_DBL, .jfmt = "%.1f" });
	report_table_col(t, (struct report_table_col){ .head = "time", .key = "time", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f", .tpos = 2 });
	report_table_col(t, (struct report_table_col){ .head = "weight", .key = "weight", .type = TABLE_DBL, .width = 6,
					 .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.6f", .tpos = 1 });
	report_table_col(t, (struct report_table_col){ .key = "time_basis", .type = TABLE_STR });
	report_table_col(t, (struct report_table_col){ .key = "samples", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .key = "vtot", .type = TABLE_UINT });
	report_table_col(t, (struct report_table_col){ .head = "suggestion", .key = "suggestion", .type = TABLE_STR,
					 .flags = TABLE_LEFT, .gap = 2, .tpos = 5 });
	/* under the sentence: weight, time, share (and class) and their gaps */
	report_table_col(t, (struct report_table_col){ .type = TABLE_STR, .width = all ? 32 : 22, .flags = TABLE_EXTRA });
}

/* The call site: "file:line", or "proc+0xoff" without a line. */
static const char *site_text(const struct report_inv_row *x, char *buf, size_t cap)
{
	if (x->site.file || !x->site_vaddr || x->site_vaddr < x->site.start)
		return report_value_source(&x->site, buf, cap);
	snprintf(buf, cap, "%s+%#llx", x->site.proc, (unsigned long long)(x->site_vaddr - x->site.start));
	return buf;
}

static const char *time_basis(const struct report_inv_row *x)
{
	if (x->what == INV_OPERAND || (x->what == INV_TARGET && !(x->insn && !strncmp(x->insn, "call", 4))))
		return "line";
	return x->time_from_stacks ? "stacks" : "return addresses";
}

/* Where the value was seen, for the line below the sentence. */
static const char *detail(struct report_value_model *vm, const struct report_inv_row *x, char *buf, size_t cap)
{
	char sb[600];
	size_t l = (size_t)snprintf(buf, cap, "%s", x->kinds);
	if (x->reg && x->what != INV_OPERAND)
		l += (size_t)snprintf(buf + l, cap - l, " (%s%s%s%s)", x->param_type ? x->param_type : "",
				      x->param_type ? " " : "", x->param ? x->param : "", x->param ? "" : x->reg);
	if (l < cap)
		l += (size_t)snprintf(buf + l, cap - l, " at %s+%#llx", x->at.proc,
				      (unsigned long long)(x->v->vaddr - x->at.start));
	if (x->insn && l < cap)
		l += (size_t)snprintf(buf + l, cap - l, " `%s`", x->insn);
	if (l < cap)
		l += (size_t)snprintf(buf + l, cap - l, " %s", report_value_source(&x->at, sb, sizeof(sb)));
	if (x->callee && x->what != INV_OPERAND && l < cap) {
		const char *p = vm->m.images[x->callee_image].path, *b = strrchr(p, '/');
		l += (size_t)snprintf(buf + l, cap - l, "; callee in %s", b ? b + 1 : p);
	}
	if (l < cap)
		l += (size_t)snprintf(buf + l, cap - l, "; %.0f value samples", x->n);
	if (x->cls != VALUE_DATA && l < cap)
		snprintf(buf + l, cap - l, "; %s: %s", report_value_class_name(x->cls), x->why);
	return buf;
}

int cmd_invariants(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "all", no_argument, 0, 'a' },
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
	struct opts op = { .inv = { .min_share = 0.5, .min_time = 0.005, .min_vtot = 20 } };
	struct report_opts o = { .limit = 20 };
	struct report_value_model vm;
	struct report_inv_result r;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &op);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("invariants", "takes no operands");
	if ((rc = report_value_model_load(&vm, &o, "invariants")))
		return rc;
	report_inv_rank(&vm, &op.inv, &r);

	size_t nhidden = 0;
	int has_args = 0;
	for (int k = 0; k < VALUE_NCLASS; k++)
		nhidden += r.hidden[k];
	for (size_t i = 0; i < r.n; i++)
		has_args |= r.rows[i].what != INV_OPERAND;
	const char *basis = r.stacks ? "recorded stacks" : "return-address samples (estimated)";
	if (o.json) {
		printf("{\"summary\":true,\"hotlists\":%zu,\"skipped\":%zu,\"rows\":%zu,\"covered\":%.4f,"
		       "\"hidden\":{\"constant\":%zu,\"frame\":%zu,\"position\":%zu},\"time_basis\":",
		       r.considered, r.skipped, r.n, r.covered, r.hidden[VALUE_CONSTANT], r.hidden[VALUE_FRAME],
		       r.hidden[VALUE_POSITION]);
		report_json_str(stdout, r.stacks ? "stacks" : "return addresses");
		printf("}\n");
	} else {
		printf("vprof invariants: %s, epoch %s, event %s (%llu samples), %zu hotlists\n", o.db, vm.m.epoch,
		       vm.ev ? upcall_event_name(vm.ev) : "none", (unsigned long long)vm.total, r.considered);
		if (nhidden)
			printf("hidden: %zu constant, %zu frame, %zu position rows: not data, nothing to specialize "
			       "for (--all shows them; vprof help invariants says why)\n",
			       r.hidden[VALUE_CONSTANT], r.hidden[VALUE_FRAME], r.hidden[VALUE_POSITION]);
		if (r.skipped)
			printf("skipped %zu hotlists or call sites with fewer than %llu value samples (--min-vtot)\n",
			       r.skipped, (unsigned long long)op.inv.min_vtot);
		printf("value samples enough to rank (%llu or more) lie behind %.0f%% of the time%s\n",
		       (unsigned long long)op.inv.min_vtot, 100 * r.covered,
		       r.covered < 0.5 ? ": a longer run, or a higher --freq, would see more" : "");
		if (has_args)
			printf("time of an argument or a call's target: the callee's inclusive time from that call, "
			       "from %s\n", basis);
	}
	struct report_table t;
	char sb[600], db[1400];
	cols(&t, op.inv.all);
	for (size_t i = 0; i < r.n && (!o.limit || (long)i < o.limit); i++) {
		const struct report_inv_row *x = &r.rows[i];
		const struct report_value_hot *v = x->v;
		report_table_row(&t);
		report_table_str(&t, x->at.proc);
		report_table_uint(&t, v->vaddr);
		report_table_str(&t, vm.m.images[v->image].path);
		report_table_str(&t, report_value_source(&x->at, sb, sizeof(sb)));
		report_table_str(&t, x->kinds);
		report_table_str(&t, report_inv_what_name(x->what));
		report_table_str(&t, report_value_class_name(x->cls));
		report_table_str(&t, x->why && *x->why ? x->why : NULL);
		report_table_str(&t, x->callee);
		report_table_str(&t, x->callee_impl);
		if (x->argno)
			report_table_int(&t, x->argno);
		else
			report_table_none(&t);
		report_table_str(&t, x->param);
		report_table_str(&t, x->param_type);
		report_table_str(&t, x->reg);
		report_table_str(&t, x->site_known ? site_text(x, sb, sizeof(sb)) : NULL);
		report_table_uint(&t, x->value);
		report_table_str(&t, x->value_type);
		report_table_str(&t, x->report_value_text);
		report_table_dbl(&t, x->share);
		report_table_dbl(&t, x->share_lo);
		report_table_dbl(&t, x->share_hi);
		report_table_dbl(&t, x->n);
		report_table_dbl(&t, x->time);
		report_table_dbl(&t, x->weight);
		report_table_str(&t, time_basis(x));
		report_table_uint(&t, v->samples);
		report_table_uint(&t, v->h.vtot);
		report_table_str(&t, x->sentence);
		report_table_str(&t, o.json ? NULL : detail(&vm, x, db, sizeof(db)));
	}
	if (o.json)
		report_table_json_lines(&t, stdout);
	else if (r.n)
		report_table_text(&t, stdout);
	report_table_free(&t);
	if (!o.json && !r.n)
		printf("no invariant candidates%s\n", !vm.nhot ? ": no value samples in this epoch"
			: !r.considered ? ": this epoch has branch records only (vprof run --branches; vprof run "
					  "--values records operand values)"
			: " above the thresholds");
	report_inv_result_free(&r);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
