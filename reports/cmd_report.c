/*
 * vprof report: the dcpiprof view. Procedures (with --by image, images;
 * with --by line, source lines) sorted by samples, per event, with count,
 * percent, cumulative percent and image; totals, processes, dropped and
 * unknown samples above the table.
 *
 * Workload: the model (model.h) holds every sampled PC resolved once; rows
 * are those PCs grouped by an interned key, so grouping compares pointers:
 * one sort to combine, one to rank.
 */
#include "reports/builtin.h"
#include "reports/list.h"
#include "reports/report.h"
#include "reports/model.h"
#include "reports/stack_model.h"
#include "reports/table.h"
#include "interp/interp.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

enum by { BY_PROC, BY_IMAGE, BY_LINE, BY_BLOCK };

struct row {
	unsigned event;
	const char *image;
	const char *proc;       /* NULL by image */
	const char *file;       /* by line only; NULL when unknown */
	int line;
	uint64_t count;
};

struct rows {
	struct row *v;
	size_t n;
	enum by by;
	const char *nb;         /* --callers/--callees F */
	int dir;                /* -1 callers, +1 callees */
	struct report_stacks st;   /* recorded call stacks, if any */
	struct report_model *m;
};

static const char kHelp[] =
	"usage: vprof report [--db DIR] [--epoch N|all] [--by procedure|image|line|block]\n"
	"                    [--event E] [-n ROWS] [--json] [--callers F | --callees F]\n"
	"  --db DIR      database (default $VPROF_DB, else ./vprof.db); a directory\n"
	"                that is not one is refused, and nothing is written there\n"
	"  --epoch N|all epoch to report (default: the current one); one it does not\n"
	"                have is refused, naming those it has\n"
	"  --by KEY      procedure (default): C++ names demangled;\n"
	"                image: one row per image;\n"
	"                line: source file:line of each sampled PC from DWARF line\n"
	"                tables (the image's own, or its separate debug file found\n"
	"                by build-id under $VPROF_DEBUG_DIRS or /usr/lib/debug);\n"
	"                block: basic blocks with branch records (vprof run --branches):\n"
	"                samples, estimated executions (relative counts) with a 95%\n"
	"                interval from the windows that ran the block, share of block\n"
	"                executions, instructions, and t/insn, time per instruction\n"
	"                executed over the average of the blocks (a relative CPI);\n"
	"                the interval is sampling error only: code in long phases is\n"
	"                counted by its time, not its executions (docs/value-sampling.md)\n"
	"  --event E     only event E (cycles, instructions, task-clock, cpu-timer, itimer);\n"
	"                one with no samples in the epoch is refused, naming those it has\n"
	"  -n ROWS       rows per event (default 40; 0: all)\n"
	"  --json        one JSON object: {db, epoch, processes, samples, ...,\n"
	"                events: [{event, total, samples, equivalents, rows: [{procedure,\n"
	"                image, [file, line,] samples, percent[, inclusive,\n"
	"                inclusive_percent], sampled}]}]}\n"
	"Each event's table has one 100%, its total: the samples, plus the [kernel] and\n"
	"[start-up] rows, which are not samples but CPU time in sample-equivalents\n"
	"(marked * in text, \"sampled\": false in JSON; the line above the table says\n"
	"how much of the total they are). self%, cum% and incl% are all of it.\n"
	"  With call stacks recorded (vprof run --stacks), --by procedure adds the\n"
	"  inclusive time of each procedure (samples with it anywhere on the stack;\n"
	"  samples and % are its exclusive time), and:\n"
	"  --callers F   who calls procedure F: each caller's share of F's inclusive\n"
	"                samples (a stack counted once per caller)\n"
	"  --callees F   what F calls: each callee's share of F's inclusive samples,\n"
	"                [self] for samples in F itself\n"
	"                F as vprof list takes it: a whole, qualified, unqualified or\n"
	"                partial name (memcmp finds libc's __memcmp_evex_movbe); one\n"
	"                that several procedures match as closely lists them\n"
	"Each merge keeps the images it saw by build-id in DB/images/.build-id/ (a hard\n"
	"link, else a copy; rm -rf DB/images frees it), so an epoch of a program rebuilt\n"
	"since keeps its names.\n"
	"JIT code named by its process's /tmp/perf-PID.map (read at merge) shows in\n"
	"image [jit:EXE]; system CPU, which perf events do not sample, as procedure\n"
	"[kernel] in image [kernel:EXE] (its samples x system/user CPU).\n";

static int on_by(int ch, const char *arg, void *ctx)
{
	struct rows *rs = ctx;
	enum by *by = &rs->by;
	if (ch == 'C' || ch == 'L') {
		if (rs->nb)
			return report_usage("report", "give one of --callers and --callees");
		rs->nb = arg;
		rs->dir = ch == 'C' ? -1 : 1;
		return 0;
	}
	if (!strcmp(arg, "procedure"))
		*by = BY_PROC;
	else if (!strcmp(arg, "image"))
		*by = BY_IMAGE;
	else if (!strcmp(arg, "line"))
		*by = BY_LINE;
	else if (!strcmp(arg, "block"))
		*by = BY_BLOCK;
	else
		return report_usage("report", "--by takes procedure, image, line or block");
	return 0;
}

static int ptrcmp(const void *a, const void *b)
{
	return a == b ? 0 : (uintptr_t)a < (uintptr_t)b ? -1 : 1;
}

/* Grouping order: interned strings compare by pointer. */
static int by_key(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int r;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if ((r = ptrcmp(x->image, y->image)) || (r = ptrcmp(x->proc, y->proc)) ||
	    (r = ptrcmp(x->file, y->file)))
		return r;
	return x->line - y->line;
}

static uint64_t incl_of(const struct rows *rs, const struct row *r);
static const struct rows *g_rank;   /* the rows being ranked (qsort has no arg) */

/* Ranking order: most samples first, then (with stacks) most inclusive
 * samples, ties by name so output is stable. */
static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	int r;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	if (g_rank && g_rank->by == BY_PROC && g_rank->st.nincl) {
		uint64_t ix = incl_of(g_rank, x), iy = incl_of(g_rank, y);
		if (ix != iy)
			return ix > iy ? -1 : 1;
	}
	if ((r = strcmp(x->proc ? x->proc : "", y->proc ? y->proc : "")) ||
	    (r = strcmp(x->image, y->image)) ||
	    (r = strcmp(x->file ? x->file : "", y->file ? y->file : "")))
		return r;
	return x->line - y->line;
}

/* With stacks, procedures that were only ever on the stack (main) get a
 * row too, with no exclusive samples: their inclusive time shows. */
static void add_inclusive_rows(const struct report_model *m, struct rows *rs)
{
	size_t n0 = rs->n, cap = rs->n;
	if (rs->by != BY_PROC)
		return;
	for (size_t i = 0; i < rs->st.nincl; i++) {
		const struct report_incl *in = &rs->st.incl[i];
		const char *img = m->images[in->image].path;
		int found = 0;
		for (size_t j = 0; j < n0 && !found; j++)
			found = rs->v[j].event == in->event && rs->v[j].image == img &&
				!strcmp(rs->v[j].proc, in->proc);
		if (found)
			continue;
		rs->v = report_grow(rs->v, &cap, rs->n, sizeof(*rs->v));
		rs->v[rs->n++] = (struct row){ in->event, img, in->proc, NULL, 0, 0 };
	}
}

static void make_rows(const struct report_model *m, struct rows *rs)
{
	rs->v = calloc(m->npcs ? m->npcs : 1, sizeof(*rs->v));
	if (!rs->v) {
		perror("vprof report");
		exit(1);
	}
	for (size_t i = 0; i < m->npcs; i++) {
		const struct report_model_pc *pc = &m->pcs[i];
		struct row *r = &rs->v[i];
		r->event = pc->event;
		r->image = m->images[pc->image].path;
		r->proc = rs->by == BY_IMAGE ? NULL : pc->proc;
		if (rs->by == BY_LINE) {
			r->file = pc->file;
			r->line = pc->line;
		}
		r->count = pc->count;
	}
	rs->n = m->npcs;
	if (!rs->n)
		return;
	size_t o = 0;
	qsort(rs->v, rs->n, sizeof(*rs->v), by_key);
	for (size_t i = 1; i < rs->n; i++) {
		if (by_key(&rs->v[i], &rs->v[o]) == 0)
			rs->v[o].count += rs->v[i].count;
		else
			rs->v[++o] = rs->v[i];
	}
	rs->n = o + 1;
	add_inclusive_rows(m, rs);
	g_rank = rs;
	qsort(rs->v, rs->n, sizeof(*rs->v), by_count);
	g_rank = NULL;
}

/* Inclusive samples of a procedure row: its image's index in the model
 * (rows keep the interned path), then the stacks' count. */
static uint64_t incl_of(const struct rows *rs, const struct row *r)
{
	for (size_t i = 0; i < rs->m->nimages; i++)
		if (rs->m->images[i].path == r->image)
			return report_stacks_inclusive(&rs->st, r->event, (uint32_t)i, r->proc);
	return 0;
}

/* "file:line", or "[no line]" when DWARF does not cover the PC. */
static const char *where(const struct row *r, char *buf, size_t cap)
{
	if (!r->file)
		return "[no line]";
	snprintf(buf, cap, "%s:%d", r->file, r->line);
	return buf;
}

/* Value sampling's line: values offered, and interpretation runs with
 * their stops by reason (report_stop_name). Nothing when no process
 * interpreted. */
static void print_values(const struct merge_stats *s)
{
	if (!s->interp_runs)
		return;
	printf("value samples %llu (dropped %llu, bad hotlists %llu", (unsigned long long)s->value_samples,
	       (unsigned long long)s->values_dropped, (unsigned long long)s->values_bad);
	if (s->values_log_missed)
		printf("; %llu taken by thread tables when the value log was full",
		       (unsigned long long)s->values_log_missed);
	printf("), interpretation runs %llu, instructions %llu, stops:", (unsigned long long)s->interp_runs,
	       (unsigned long long)s->interp_insns);
	for (int i = 0; i < SPOOL_INTERP_STOPS; i++)
		if (s->interp_stops[i])
			printf(" %s %llu", report_stop_name(i), (unsigned long long)s->interp_stops[i]);
	printf("\n");
}

/* Kernel time and JIT names (docs/formats.md): the system CPU the
 * processes recorded at exit, and how it shows in the rows. */
static void print_kernel_jit(const struct merge_stats *s)
{
	if (s->split_processes) {
		double user = (double)s->cpu_user_ns / 1e9, sys = (double)s->cpu_sys_ns / 1e9;
		printf("kernel: system CPU %.2f s of %.2f s (%.1f%%) in %llu process%s; ", sys,
		       user + sys, user + sys > 0 ? 100.0 * sys / (user + sys) : 0.0,
		       (unsigned long long)s->split_processes, s->split_processes == 1 ? "" : "es");
		int timers = s->by_backend[UPCALL_EV_CPU_TIMER] || s->by_backend[UPCALL_EV_ITIMER];
		if (s->kernel_samples)
			printf("shown as [kernel] rows, %llu sample-equivalents%s\n",
			       (unsigned long long)s->kernel_samples,
			       timers ? " (CPU-timer processes' in their samples)" : "");
		else if (timers)
			printf("no [kernel] rows (CPU timers sample it at the system-call sites)\n");
		else
			printf("no [kernel] rows (under one sample's worth)\n");
	}
	if (s->startup_samples)
		printf("start-up: %.2f CPU-s before sampling began (exec, loader, constructors), "
		       "shown as [start-up] rows, %llu sample-equivalents\n",
		       (double)s->startup_cpu_ns / 1e9, (unsigned long long)s->startup_samples);
	if (s->jit_samples)
		printf("jit: %llu samples named from perf maps ([jit:EXE] images)\n",
		       (unsigned long long)s->jit_samples);
}

/* One event's rows, as a table (table.h): in JSON procedure, [file, line,]
 * image, samples, percent[, inclusive, inclusive_percent] (with stacks);
 * in text the counts first, cum% too, then the names. The first `limit`
 * rows (0: all); *seen set to how many rows the event has. */
static void event_rows(const struct rows *rs, unsigned ev, long limit, struct report_table *t, long *seen)
{
	const struct report_model *m = rs->m;
	uint64_t total = m->total[ev], cum = 0, stotal = rs->st.total[ev];
	int incl = rs->by == BY_PROC && stotal;
	/* Rows that are not samples get a mark before their name in text. */
	int mark = report_model_sampled(m, ev) != total;
	char buf[4200];
	report_table_init(t);
	if (mark)
		report_table_col(t, (struct report_table_col){ .head = "", .type = TABLE_STR, .width = 1, .gap = 2,
						 .tpos = rs->by == BY_LINE ? 1 : rs->by == BY_IMAGE ? 3 : 2 });
	if (rs->by != BY_IMAGE)
		report_table_col(t, rs->by == BY_LINE
				     ? (struct report_table_col){ .head = "procedure", .key = "procedure", .type = TABLE_STR,
							   .width = 30, .flags = TABLE_LEFT, .tpos = 2 }
				     : (struct report_table_col){ .head = "procedure", .key = "procedure", .type = TABLE_STR,
							   .width = 40, .flags = TABLE_LEFT, .gap = 2, .tpos = 2 });
	if (rs->by == BY_LINE) {
		report_table_col(t, (struct report_table_col){ .key = "file", .type = TABLE_STR });
		report_table_col(t, (struct report_table_col){ .key = "line", .type = TABLE_INT });
		report_table_col(t, (struct report_table_col){ .head = "source line", .type = TABLE_STR, .width = 40,
						 .flags = TABLE_LEFT, .gap = 2, .tpos = 1 });
	}
	report_table_col(t, (struct report_table_col){ .head = "image", .key = "image", .type = TABLE_STR,
					 .gap = rs->by == BY_IMAGE ? 2 : 1, .tpos = 3 });
	report_table_col(t, (struct report_table_col){ .head = "samples", .key = "samples", .type = TABLE_UINT, .width = 10 });
	report_table_col(t, (struct report_table_col){ .head = incl ? "self%" : "%", .key = "percent", .type = TABLE_DBL,
					 .width = 7, .fmt = "%.2f", .jfmt = "%.4f" });
	report_table_col(t, (struct report_table_col){ .head = "cum%", .type = TABLE_DBL, .width = 7, .fmt = "%.2f" });
	if (incl) {
		report_table_col(t, (struct report_table_col){ .head = "incl", .key = "inclusive", .type = TABLE_UINT,
						 .width = 10, .gap = 2 });
		report_table_col(t, (struct report_table_col){ .head = "incl%", .key = "inclusive_percent", .type = TABLE_DBL,
						 .width = 7, .fmt = "%.2f", .jfmt = "%.4f" });
	}
	report_table_col(t, (struct report_table_col){ .key = "sampled", .type = TABLE_BOOL });
	if (mark)     /* the name after the mark: one space */
		for (size_t k = 0; k < t->ncols; k++)
			if (t->cols[k].tpos == t->cols[0].tpos && k)
				t->cols[k].gap = 1;
	*seen = 0;
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *r = &rs->v[i];
		if (r->event != ev)
			continue;
		cum += r->count;
		if (limit > 0 && ++*seen > limit)
			continue;
		int sampled = !report_image_unsampled(r->image);
		report_table_row(t);
		if (mark)
			report_table_str(t, sampled ? "" : "*");
		if (rs->by != BY_IMAGE)
			report_table_str(t, r->proc);
		if (rs->by == BY_LINE) {
			report_table_str(t, r->file);
			report_table_int(t, r->line);
			report_table_str(t, where(r, buf, sizeof(buf)));
		}
		report_table_str(t, r->image);
		report_table_uint(t, r->count);
		report_table_dbl(t, 100.0 * (double)r->count / (double)total);
		report_table_dbl(t, 100.0 * (double)cum / (double)total);
		if (incl) {
			uint64_t in = incl_of(rs, r);
			report_table_uint(t, in);
			report_table_dbl(t, 100.0 * (double)in / (double)total);
		}
		report_table_bool(t, sampled);
	}
}

/* What an event's table adds up to, above it: its 100%, and when rows
 * that are not samples are in it, how much of it they are. */
static void print_event_line(const struct report_model *m, unsigned ev)
{
	uint64_t total = m->total[ev], sampled = report_model_sampled(m, ev);
	if (sampled == total)
		printf("\nevent %s: %llu samples\n", upcall_event_name(ev), (unsigned long long)total);
	else
		printf("\nevent %s: 100%% = %llu: %llu samples + %llu sample-equivalents of CPU not "
		       "sampled (rows marked *)\n", upcall_event_name(ev), (unsigned long long)total,
		       (unsigned long long)sampled, (unsigned long long)(total - sampled));
}

static void print_text(const struct report_model *m, const struct rows *rs, long limit)
{
	const struct merge_stats *s = &m->stats;
	printf("vprof report: %s, epoch %s\n", m->db, m->epoch);
	printf("processes %llu (%llu without a normal exit: killed or exec'd), samples %llu, "
	       "dropped %llu (%.2f%%), unknown %llu, corrupt spools %llu\n",
	       (unsigned long long)s->processes, (unsigned long long)s->killed,
	       (unsigned long long)s->merged, (unsigned long long)s->dropped,
	       s->samples ? 100.0 * (double)s->dropped / (double)s->samples : 0.0,
	       (unsigned long long)s->unknown, (unsigned long long)s->corrupt);
	/* Files not in the tables: set aside by a merge, or skipped now. */
	for (size_t i = 0; i < m->nbad; i++)
		printf("%s%s", i ? ", " : "corrupt files, not in the tables below: ", m->bad[i]);
	if (m->nbad)
		printf("\n");
	print_values(s);
	print_kernel_jit(s);
	report_stacks_print_summary(&rs->st, stdout);
	char limited[300];
	if (report_selflimit_line(s, 0, limited, sizeof(limited)))
		printf("self-limit: %s\n", limited);
	char sandboxed[300];
	if (report_sandbox_line(s, sandboxed, sizeof(sandboxed)))
		printf("seccomp: %s\n", sandboxed);
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++) {
		uint64_t total = m->total[ev];
		long shown = 0;
		if (!total)
			continue;
		print_event_line(m, ev);
		struct report_table t;
		event_rows(rs, ev, limit, &t, &shown);
		report_table_text(&t, stdout);
		report_table_free(&t);
		if (limit > 0 && shown > limit)
			printf("%10s (%ld more rows; -n 0 shows all)\n", "...", shown - limit);
	}
	if (!rs->n)
		printf("\nno samples\n");
}

static void print_json(const struct report_model *m, const struct rows *rs, long limit)
{
	const struct merge_stats *s = &m->stats;
	printf("{\"db\":");
	report_json_str(stdout, m->db);
	printf(",\"epoch\":\"%s\",\"processes\":%llu,\"not_exited\":%llu,\"samples\":%llu,"
	       "\"samples_seen\":%llu,\"dropped\":%llu,\"unknown\":%llu,\"corrupt\":%llu,",
	       m->epoch, (unsigned long long)s->processes, (unsigned long long)s->killed,
	       (unsigned long long)s->merged, (unsigned long long)s->samples,
	       (unsigned long long)s->dropped, (unsigned long long)s->unknown,
	       (unsigned long long)s->corrupt);
	if (m->nbad) {
		printf("\"corrupt_files\":[");
		for (size_t i = 0; i < m->nbad; i++) {
			if (i)
				printf(",");
			report_json_str(stdout, m->bad[i]);
		}
		printf("],");
	}
	if (s->split_processes)
		printf("\"cpu_user_ns\":%llu,\"cpu_sys_ns\":%llu,\"kernel_samples\":%llu,",
		       (unsigned long long)s->cpu_user_ns, (unsigned long long)s->cpu_sys_ns,
		       (unsigned long long)s->kernel_samples);
	if (s->jit_samples)
		printf("\"jit_samples\":%llu,", (unsigned long long)s->jit_samples);
	if (s->startup_samples)
		printf("\"startup_samples\":%llu,\"startup_cpu_ns\":%llu,",
		       (unsigned long long)s->startup_samples, (unsigned long long)s->startup_cpu_ns);
	/* vprof's own measured cost (handler and drains), and what its
	 * bound did (preload/selflimit.c). */
	if (s->cost_ns)
		printf("\"cost_ns\":%llu,\"cpu_ns\":%llu,", (unsigned long long)s->cost_ns,
		       (unsigned long long)s->cpu_ns);
	if (s->kernel_cost_samples)
		printf("\"kernel_cost_ns\":%llu,\"kernel_cost_samples\":%llu,",
		       (unsigned long long)s->kernel_cost_ns, (unsigned long long)s->kernel_cost_samples);
	if (s->limit_threads || s->limit_interp_threads)
		printf("\"limit_threads\":%llu,\"limit_lowerings\":%llu,"
		       "\"limit_cpu_ns\":%llu,\"limit_samples\":%llu,\"limit_interp_threads\":%llu,",
		       (unsigned long long)s->limit_threads,
		       (unsigned long long)s->limit_lowerings, (unsigned long long)s->limit_cpu_ns,
		       (unsigned long long)s->limit_samples, (unsigned long long)s->limit_interp_threads);
	if (s->sandbox_stopped || s->sandbox_refused || s->sandbox_unarmed)
		printf("\"sandbox_stopped\":%llu,\"sandbox_refused\":%llu,\"sandbox_unarmed\":%llu,",
		       (unsigned long long)s->sandbox_stopped, (unsigned long long)s->sandbox_refused,
		       (unsigned long long)s->sandbox_unarmed);
	if (s->interp_runs) {
		printf("\"value_samples\":%llu,\"values_logged\":%llu,\"values_log_missed\":%llu,"
		       "\"interp_runs\":%llu,\"interp_insns\":%llu,\"interp_stops\":{",
		       (unsigned long long)s->value_samples, (unsigned long long)s->values_logged,
		       (unsigned long long)s->values_log_missed, (unsigned long long)s->interp_runs,
		       (unsigned long long)s->interp_insns);
		for (int i = 0, n = 0; i < SPOOL_INTERP_STOPS; i++)
			if (s->interp_stops[i])
				printf("%s\"%s\":%llu", n++ ? "," : "", report_stop_name(i),
				       (unsigned long long)s->interp_stops[i]);
		printf("},");
	}
	printf("\"events\":[");
	int first_ev = 1;
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++) {
		uint64_t total = m->total[ev];
		long shown;
		if (!total)
			continue;
		uint64_t sampled = report_model_sampled(m, ev);
		printf("%s{\"event\":\"%s\",\"total\":%llu,\"samples\":%llu,\"equivalents\":%llu,"
		       "\"rows\":[", first_ev ? "" : ",", upcall_event_name(ev), (unsigned long long)total,
		       (unsigned long long)sampled, (unsigned long long)(total - sampled));
		first_ev = 0;
		struct report_table t;
		event_rows(rs, ev, limit, &t, &shown);
		report_table_json_elements(&t, stdout);
		report_table_free(&t);
		printf("]}");
	}
	printf("]}\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "by", required_argument, 0, 'b' },      { "callers", required_argument, 0, 'C' },
		{ "callees", required_argument, 0, 'L' }, { 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"report", kHelp,
		REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON | REPORT_OPT_LIMIT,
		extra, "b:", on_by,
	};
	struct report_opts o = { .limit = 40 };
	struct rows rs = { 0 };
	struct report_model m;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &rs);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("report", "takes no operands");
	if (rs.by == BY_BLOCK && rs.nb)
		return report_usage("report", "--by block takes no --callers or --callees");
	if (rs.by == BY_BLOCK)
		return report_blocks(&o);
	if ((rc = report_model_load(&m, o.db, o.epoch, o.event, rs.by == BY_LINE, "report")))
		return rc;
	if (rs.nb) {
		rc = report_print_neighbours(&m, rs.nb, rs.dir, o.json, o.limit);
		report_model_free(&m);
		return report_finish_stdout(rc);
	}
	rs.m = &m;
	report_stacks_load(&rs.st, &m);
	make_rows(&m, &rs);
	if (o.json)
		print_json(&m, &rs, o.limit);
	else
		print_text(&m, &rs, o.limit);
	free(rs.v);
	report_stacks_free(&rs.st);
	report_model_free(&m);
	return report_finish_stdout(0);
}
