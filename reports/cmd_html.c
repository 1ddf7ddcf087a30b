/*
 * vprof html: the profile as one self-contained HTML page: a flame graph
 * (zoom on click, search), the procedure table (sortable), for a value
 * profile the invariants and load-latency views (html_values.c), and for
 * the hottest procedures their annotated disassembly (source lines with
 * their text, PC samples, value hotlists with typed values), as `vprof
 * list` prints it.
 *
 * The page loads nothing: its script and style are compiled into vprof
 * (reports/html/, scripts/embed.sh) and inlined, and a Content-Security-
 * Policy of default-src 'none' keeps a browser from fetching anything
 * even if a name in the profile looked like a URL. Every string from the
 * profile goes through report_html_text() or report_html_json_str().
 */
#include "reports/builtin.h"
#include "reports/html.h"
#include "reports/list.h"
#include "reports/symbolize.h"
#include "merge/code.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char kHelp[] =
	"usage: vprof html -o FILE [--db DIR] [--epoch N|all] [--event E] [-n PROCS]\n"
	"  One self-contained HTML page (no network, no other file needed): a\n"
	"  flame graph (click a frame to zoom, click the root to come back; the\n"
	"  search box takes a regular expression and highlights matching frames),\n"
	"  the procedure table (click a column head to sort), and for the PROCS\n"
	"  hottest procedures the annotated disassembly as `vprof list` shows it:\n"
	"  source lines with their text, PC samples and shares, and the value\n"
	"  hotlists of a `vprof run --values` profile, values typed (2.0, not\n"
	"  0x4000000000000000). A value profile also gets two views, each a\n"
	"  sortable table whose rows lead with the command's sentence: the\n"
	"  invariants, as `vprof invariants` ranks them at its defaults, and the\n"
	"  loads that wait on memory, as `vprof latency` ranks them; a profile of\n"
	"  vprof run --cachesim, a memory view of vprof memory's rows.\n"
	"  Call stacks are not recorded yet: the flame graph's stacks are\n"
	"  image;procedure, as `vprof export --format folded` writes them.\n"
	"  -o FILE       the page to write (- for stdout); required\n"
	"  -n PROCS      procedures to annotate (default 10; 0: all with samples)\n"
	"  --event E     the event shown (default: the one with most samples)\n"
	"  --db, --epoch as for vprof report\n";

static int on_opt(int ch, const char *arg, void *ctx)
{
	*(const char **)ctx = arg;
	return 0;
}

/* ---- source text, for the lines above instructions ---- */

struct src_file {
	char *path;
	char *text;             /* NULL: unreadable */
	char **line;            /* line[i] starts line i + 1 (not NUL-ended) */
	size_t nlines;
};

struct src_cache {
	struct src_file *v;
	size_t n, cap;
};

static const struct src_file *src_open(struct src_cache *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	c->v = report_grow(c->v, &c->cap, c->n, sizeof(*c->v));
	struct src_file *s = &c->v[c->n++];
	memset(s, 0, sizeof(*s));
	s->path = strdup(path);
	FILE *f = fopen(path, "r");
	if (!f)
		return s;
	size_t cap = 0, n = 0, linecap = 0;
	char buf[65536];
	size_t got;
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0 && n < (64u << 20)) {
		if (n + got + 1 > cap) {
			cap = 2 * (n + got + 1);
			char *t = realloc(s->text, cap);
			if (!t)
				break;
			s->text = t;
		}
		memcpy(s->text + n, buf, got);
		n += got;
	}
	fclose(f);
	if (!s->text)
		return s;
	s->text[n] = 0;
	for (char *p = s->text; p < s->text + n;) {
		s->line = report_grow(s->line, &linecap, s->nlines, sizeof(*s->line));
		s->line[s->nlines++] = p;
		char *nl = memchr(p, '\n', (size_t)(s->text + n - p));
		if (!nl)
			break;
		*nl = 0;
		p = nl + 1;
	}
	return s;
}

static void src_free(struct src_cache *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->v[i].path);
		free(c->v[i].text);
		free(c->v[i].line);
	}
	free(c->v);
}

/* ---- the page ---- */

struct proc_row {
	uint32_t image;
	const char *proc;
	uint64_t vaddr;         /* one sampled PC of it */
	uint64_t samples;
};

static int by_samples(const void *a, const void *b)
{
	const struct proc_row *x = a, *y = b;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->proc, y->proc);
}

static struct proc_row *proc_rows(const struct report_model *m, unsigned ev, size_t *nrows)
{
	size_t n, nr = 0, cap = 0;
	size_t *ord = report_model_by_proc(m, ev, &n);
	struct proc_row *r = NULL;
	for (size_t i = 0; i < n; i++) {
		const struct report_model_pc *pc = &m->pcs[ord[i]];
		if (nr && r[nr - 1].image == pc->image && r[nr - 1].proc == pc->proc) {
			r[nr - 1].samples += pc->count;
			continue;
		}
		r = report_grow(r, &cap, nr, sizeof(*r));
		r[nr++] = (struct proc_row){ pc->image, pc->proc, pc->vaddr, pc->count };
	}
	free(ord);
	if (nr)
		qsort(r, nr, sizeof(*r), by_samples);
	*nrows = nr;
	return r;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

static double pct(uint64_t v, uint64_t total)
{
	return total ? 100.0 * (double)v / (double)total : 0.0;
}

static void write_hotlist(FILE *f, struct report_value_model *vm, const struct report_value_hot *v)
{
	char vb[128], sb[600];
	fprintf(f, "<tr class=\"hot\"><td></td><td></td><td></td><td><span class=\"kind\">");
	report_html_text(f, spool_hot_kind_name(v->kind));
	fprintf(f, "</span> vtot %llu thld %.3f nv %u:", (unsigned long long)v->h.vtot, spool_hot_p(&v->h),
		v->h.n);
	for (uint32_t e = 0; e < v->h.n && e < 8; e++) {
		struct report_value_where w;
		fprintf(f, "%s <span class=\"val\">", e ? "," : "");
		report_html_text(f, report_value_text(vm, v, e, vb, sizeof(vb)));
		double sh = report_value_hot_share(v, (int)e);
		if (sh < 0)   /* a count, not a share */
			fprintf(f, "</span> %.0f", spool_hot_estimate(&v->h, (int)e));
		else
			fprintf(f, "</span> %.1f%%", 100 * sh);
		if (report_value_kind_by_site(v->kind)) {
			fputs(" from ", f);
			report_html_text(f, report_value_site(vm, v->image, v->h.e[e].aux, &w) ? "?" : report_value_source(&w, sb, sizeof(sb)));
		} else if (v->kind == SPOOL_VK_ADDR_LATENCY) {
			fputs(" at ", f);
			report_html_text(f, report_value_fmt(vm, SPOOL_VK_LATENCY, v->image, v->h.e[e].aux, vb, sizeof(vb)));
		}
	}
	fprintf(f, "%s</td></tr>\n", v->h.n > 8 ? ", &hellip;" : "");
}

/* An interpreted function's lines (docs/interpreted-frames.md): each
 * sampled line with its samples and source text, in line order. */
static void write_code_lines(FILE *f, struct report_value_model *vm, const struct proc_row *r,
			     struct src_cache *sc)
{
	const struct report_model_image *im = &vm->m.images[r->image];
	const struct src_file *s = src_open(sc, im->code_file);
	struct report_code_line *v;
	size_t n = report_model_code_lines(&vm->m, (unsigned)vm->ev, r->image,
					   r->vaddr >> MERGE_CODE_LINE_BITS, &v);
	fprintf(f, "<table class=\"dis\"><thead><tr><th>samples</th><th>share</th><th>line</th>"
		   "<th>source</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++) {
		double heat = r->samples ? (double)v[i].samples / (double)r->samples : 0;
		fprintf(f, "<tr class=\"insn\" style=\"background:rgba(255,80,0,%.3f)\">"
			   "<td class=\"n\">%llu</td><td class=\"n\">%.2f%%</td><td>%u</td><td>",
			0.08 + 0.6 * heat, (unsigned long long)v[i].samples, pct(v[i].samples, vm->total),
			v[i].line);
		if (s->text && v[i].line >= 1 && (size_t)v[i].line <= s->nlines)
			report_html_text(f, s->line[v[i].line - 1]);
		fputs("</td></tr>\n", f);
	}
	fputs("</tbody></table>\n</div>\n", f);
	free(v);
}

/* One procedure's annotated disassembly, as vprof list prints it. */
static void write_listing(FILE *f, struct report_value_model *vm, const struct proc_row *r, size_t k,
			  struct src_cache *sc)
{
	const struct report_model_image *im = &vm->m.images[r->image];
	struct report_value_where w;
	struct report_insn *in;

	fprintf(f, "<div class=\"proc\" id=\"dis-%zu\">\n<h3>", k);
	report_html_text(f, r->proc);
	fprintf(f, "</h3>\n<p class=\"meta\">");
	report_html_text(f, im->path);
	fprintf(f, " &middot; %llu samples (%.2f%% of %llu)</p>\n", (unsigned long long)r->samples,
		pct(r->samples, vm->total), (unsigned long long)vm->total);
	if (im->code_file) {
		write_code_lines(f, vm, r, sc);
		return;
	}
	report_value_where(vm, r->image, r->vaddr, &w);
	struct report_target t = { r->image, w.start, w.size, r->proc, r->samples };
	size_t n = report_list_disassemble(vm, &t, &in);
	const char *last_file = NULL;
	int last_line = -1;
	char sb[600];

	fprintf(f, "<table class=\"dis\"><thead><tr><th>samples</th><th>share</th><th>pc</th>"
		   "<th>instruction</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++) {
		uint64_t c = report_value_pc_samples(vm, r->image, in[i].vaddr);
		struct report_value_where lw = { 0 };
		size_t lo, hi = report_list_hot_range(vm, r->image, in[i].vaddr, &lo);
		if (im->sym && report_sym_source_line(im->sym, in[i].vaddr, &lw.file, &lw.line) != 0)
			lw.file = NULL;
		if (lw.file && (lw.file != last_file || lw.line != last_line)) {
			const struct src_file *s = src_open(sc, lw.file);
			fprintf(f, "<tr class=\"src\"><td></td><td></td><td colspan=\"2\">");
			report_html_text(f, report_value_source(&lw, sb, sizeof(sb)));
			if (s->text && lw.line >= 1 && (size_t)lw.line <= s->nlines) {
				fputs("  <span class=\"text\">", f);
				report_html_text(f, s->line[lw.line - 1]);
				fputs("</span>", f);
			}
			fputs("</td></tr>\n", f);
		}
		last_file = lw.file;
		last_line = lw.line;
		/* Heat: the instruction's part of the procedure's samples. */
		double heat = r->samples ? (double)c / (double)r->samples : 0;
		if (c)
			fprintf(f, "<tr class=\"insn\" style=\"background:rgba(255,80,0,%.3f)\">"
				   "<td class=\"n\">%llu</td><td class=\"n\">%.2f%%</td>",
				0.08 + 0.6 * heat, (unsigned long long)c, pct(c, vm->total));
		else
			fputs("<tr class=\"insn\"><td></td><td></td>", f);
		fprintf(f, "<td>%#llx</td><td>", (unsigned long long)in[i].vaddr);
		report_html_text(f, in[i].text);
		fputs("</td></tr>\n", f);
		for (size_t j = lo; j < hi; j++)
			if (vm->hot[j].kind != SPOOL_VK_RANGE)   /* branch records' ranges: vprof list's execs */
				write_hotlist(f, vm, &vm->hot[j]);
	}
	fputs("</tbody></table>\n</div>\n", f);
	free(in);
}

static int annotatable(const struct proc_row *r)
{
	return strcmp(r->proc, "[unknown]") && strcmp(r->proc, "[no symbol]");
}

/* Which listing of the page a procedure has (report_html_listing_fn). */
struct listings {
	const struct proc_row *rows;
	const size_t *anchor;
	size_t n;
};

static size_t listing_of(void *ctx, uint32_t image, const char *proc)
{
	const struct listings *l = ctx;
	for (size_t i = 0; i < l->n; i++)
		if (l->anchor[i] && l->rows[i].image == image && !strcmp(l->rows[i].proc, proc))
			return l->anchor[i];
	return 0;
}

static void write_page(FILE *f, struct report_value_model *vm, long nprocs)
{
	const struct report_model *m = &vm->m;
	const struct merge_stats *s = &m->stats;
	size_t nr;
	struct proc_row *rows = proc_rows(m, vm->ev, &nr);
	size_t *anchor = calloc(nr ? nr : 1, sizeof(*anchor));   /* dis-K + 1, 0: none */
	if (!anchor) {
		perror("vprof html");
		exit(1);
	}
	size_t nann = 0;
	for (size_t i = 0; i < nr && (nprocs == 0 || (long)nann < nprocs); i++)
		if (annotatable(&rows[i]))
			anchor[i] = ++nann;

	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'\">\n<title>vprof: ", f);
	report_html_text(f, m->db);
	fprintf(f, " epoch %s</title>\n<style>\n", m->epoch);
	fwrite(report_html_asset_report_css, 1, report_html_asset_report_css_len, f);
	fputs("</style>\n</head>\n<body>\n<h1>vprof profile</h1>\n<p class=\"meta\">database ", f);
	report_html_text(f, m->db);
	fprintf(f, ", epoch %s, event %s: %llu samples; %llu processes (%llu not exited), "
		   "%llu dropped, %llu unknown",
		m->epoch, upcall_event_name(vm->ev), (unsigned long long)vm->total,
		(unsigned long long)s->processes, (unsigned long long)s->killed,
		(unsigned long long)s->dropped, (unsigned long long)s->unknown);
	if (vm->nhot)
		fprintf(f, "; %zu value hotlists", vm->nhot);
	fputs(".</p>\n<p class=\"nav\"><a href=\"#flame-graph\">Flame graph</a> &middot; "
	      "<a href=\"#procedures\">Procedures</a>", f);
	if (report_html_has_values(vm))
		fputs(" &middot; <a href=\"#invariants\">Invariants</a> &middot; <a href=\"#latency\">Load latency</a>", f);
	if (report_html_has_memory(vm))
		fputs(" &middot; <a href=\"#memory\">Memory</a>", f);
	fputs(" &middot; <a href=\"#listings\">Hot procedures</a></p>\n", f);

	fputs("<h2 id=\"flame-graph\">Flame graph</h2>\n<div class=\"controls\"><input id=\"flame-search\" type=\"search\" "
	      "placeholder=\"search (regular expression)\"> <button id=\"flame-reset\">Reset zoom</button>"
	      "<span id=\"flame-match\"></span></div>\n<div id=\"flame\"></div>\n<div id=\"flame-info\"></div>\n"
	      "<script type=\"application/json\" id=\"vprof-data\">", f);
	const char *note = report_html_flame_json(f, m, vm->ev);
	fputs("</script>\n<p class=\"note\">", f);
	report_html_text(f, note);
	fputs(" Click a frame to zoom; click the bottom frame to come back.</p>\n", f);

	fprintf(f, "<h2 id=\"procedures\">Procedures</h2>\n<table class=\"procs sortable\" id=\"procs\"><thead><tr>"
		   "<th class=\"n\" data-type=\"num\">#</th><th data-type=\"text\">procedure</th>"
		   "<th data-type=\"text\">image</th><th class=\"n\" data-type=\"num\">samples</th>"
		   "<th class=\"n\" data-type=\"num\">%%</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < nr; i++) {
		const struct proc_row *r = &rows[i];
		fprintf(f, "<tr><td class=\"n\" data-v=\"%zu\">%zu</td><td class=\"name\">", i + 1, i + 1);
		if (anchor[i])
			fprintf(f, "<a href=\"#dis-%zu\">", anchor[i]);
		report_html_text(f, r->proc);
		fprintf(f, "%s</td><td title=\"", anchor[i] ? "</a>" : "");
		report_html_text(f, m->images[r->image].path);
		fputs("\">", f);
		report_html_text(f, base_name(m->images[r->image].path));
		fprintf(f, "</td><td class=\"n\" data-v=\"%llu\">%llu</td><td class=\"n\" data-v=\"%.6f\">%.2f</td></tr>\n",
			(unsigned long long)r->samples, (unsigned long long)r->samples, pct(r->samples, vm->total),
			pct(r->samples, vm->total));
	}
	fputs("</tbody></table>\n", f);

	if (vm->nhot) {
		struct listings l = { rows, anchor, nr };
		if (report_html_has_values(vm)) {
			report_html_invariants(f, vm, listing_of, &l);
			report_html_latency(f, vm, listing_of, &l);
		}
		if (report_html_has_memory(vm))
			report_html_memory(f, vm, listing_of, &l);
	}

	fprintf(f, "<h2 id=\"listings\">Hot procedures</h2>\n<p class=\"note\">The %zu hottest procedures with symbols, "
		   "as <code>vprof list</code> shows them: source lines, PC samples (share of all %llu), "
		   "and under an instruction each value hotlist (kind, vtot values seen, thld its "
		   "sampling probability, nv values kept, then values with estimated shares).%s</p>\n",
		nann, (unsigned long long)vm->total,
		vm->nhot ? "" : " This profile has no value hotlists (vprof run --values records them).");
	struct src_cache sc = { 0 };
	for (size_t i = 0; i < nr; i++)
		if (anchor[i])
			write_listing(f, vm, &rows[i], anchor[i], &sc);
	src_free(&sc);

	fputs("<script>\n", f);
	fwrite(report_html_asset_report_js, 1, report_html_asset_report_js_len, f);
	fputs("</script>\n</body>\n</html>\n", f);
	free(anchor);
	free(rows);
}

int cmd_html(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "output", required_argument, 0, 'o' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"html", kHelp, REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_LIMIT,
		extra, "o:", on_opt,
	};
	struct report_opts o = { .limit = 10 };
	const char *out = NULL;
	struct report_value_model vm;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &out);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("html", "takes no operands");
	if (!out)
		return report_usage("html", "give -o FILE for the page (- for stdout)");
	if ((rc = report_value_model_load(&vm, &o, "html")))
		return rc;
	if (!vm.ev) {
		fprintf(stderr, "vprof html: no samples in %s epoch %s%s%s; nothing written\n", vm.m.db,
			vm.m.epoch, o.event ? " for event " : "", o.event ? upcall_event_name(o.event) : "");
		report_value_model_free(&vm);
		return 1;
	}
	int to_stdout = !strcmp(out, "-");
	struct stat st;
	int existed = !to_stdout && stat(out, &st) == 0;     /* not ours to remove */
	FILE *f = to_stdout ? stdout : fopen(out, "w");
	if (!f) {
		fprintf(stderr, "vprof html: cannot write %s: %s\n", out, strerror(errno));
		report_value_model_free(&vm);
		return 1;
	}
	write_page(f, &vm, o.limit);
	report_value_model_free(&vm);
	if (to_stdout)
		return report_finish_stdout(0);
	if (ferror(f) | (fclose(f) != 0)) {
		fprintf(stderr, "vprof html: cannot write %s: %s\n", out, strerror(errno ? errno : EIO));
		if (!existed)
			unlink(out);    /* no half page left behind */
		return 1;
	}
	return 0;
}
