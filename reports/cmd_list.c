/*
 * vprof list FUNCTION: one procedure's annotated disassembly, as dcpilist
 * with value sampling showed it (Burrows et al., ASPLOS 2000, figure 1):
 * per instruction its source line, PC samples and share of the event's
 * samples, and under it each value hotlist of that address with vtot
 * (values offered), thld (the hotlist's p), nv (values kept) and the
 * values with their estimated share (count / p / vtot).
 *
 * The bytes come from the image file itself (only when its build-id still
 * matches the profile's): the loadable segment holding the procedure is
 * read, and Zydis decodes and formats it in Intel syntax.
 */
#include "reports/builtin.h"
#include "reports/list.h"
#include "reports/symbolize.h"
#include "reports/stack_model.h"
#include "merge/code.h"

#include <Zydis/Zydis.h>
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <math.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char kHelp[] =
	"usage: vprof list FUNCTION [--db DIR] [--epoch N|all] [--event E] [--json]\n"
	"  Annotated disassembly of FUNCTION: its demangled or mangled name, or a\n"
	"  part of it (geo::Sorter<int>::run, run, sum_dots; memcmp finds libc's\n"
	"  __memcmp_evex_movbe); the closest match wins, and a name several\n"
	"  procedures match as closely lists them. Per instruction the source\n"
	"  line, PC samples and their share of the event's samples, and each value\n"
	"  hotlist there: vtot (value samples), thld (the hotlist's sampling\n"
	"  probability p), nv (values kept) and the values with estimated shares,\n"
	"  typed as the instruction uses them (2.0 for a double, pointers placed as\n"
	"  &symbol, [stack], [heap]); the arguments at a call with their callee.\n"
	"  With branch records (vprof run --branches), each instruction's estimated\n"
	"  executions (relative) with the 95% interval of their sampling error\n"
	"  (+-1.96/sqrt(windows that ran it)), executions per execution of the\n"
	"  first instruction (per call), and each conditional branch's outcomes.\n"
	"  --json        one JSON object per instruction: procedure, pc, image,\n"
	"                source, samples, share, [executions, per_call, windows,]\n"
	"                instruction, value (top value),\n"
	"                value_share, values: [{kind, vtot, thld, nv, top: [{value,\n"
	"                text, type, class, aux, estimate, share[, site]}]}]\n";

/* The procedure to list: the name want matches (report_names_pick, over
 * the sampled PCs and the hotlists' addresses), and of its copies (up to
 * 16: images, or static functions of one name) the one with most samples
 * of the main event; ties: the first found. -1 when nothing matches, -2
 * after the message listing the candidates. */
static int find_target(struct report_value_model *vm, const char *want, struct report_target *t)
{
	struct report_model *m = &vm->m;
	struct report_names names;
	const char *name;
	report_names_init(&names, want);
	for (size_t i = 0; i < m->npcs; i++)
		if (m->pcs[i].event == vm->ev)
			report_names_add(&names, m->pcs[i].proc, m->pcs[i].sysname,
					 m->images[m->pcs[i].image].path, m->pcs[i].count);
	for (size_t i = 0; i < vm->nhot; i++)
		report_names_add(&names, vm->hot[i].w.proc, vm->hot[i].w.sysname,
				 m->images[vm->hot[i].image].path, 0);
	/* Interpreted functions with no time of their own (callers only, or
	 * their time in their opcodes' frames) are named by their images. */
	for (size_t i = 0; i < m->nimages; i++)
		for (size_t j = 0; j < m->images[i].ncode; j++)
			report_names_add(&names, m->images[i].code[j].name, NULL, m->images[i].path, 0);
	int rc = report_names_pick(&names, "list", &name);
	report_names_free(&names);
	if (rc < 0)
		return rc;
	struct report_target c[16];
	int nc = 0, best = -1;
	for (size_t i = 0; i < m->npcs + vm->nhot; i++) {
		const struct report_model_pc *pc = i < m->npcs ? &m->pcs[i] : NULL;
		const struct report_value_hot *v = pc ? NULL : &vm->hot[i - m->npcs];
		struct report_value_where w;
		if (pc ? pc->event != vm->ev || strcmp(pc->proc, name) : strcmp(v->w.proc, name))
			continue;
		uint32_t image = pc ? pc->image : v->image;
		report_value_where(vm, image, pc ? pc->vaddr : v->vaddr, &w);
		if (m->images[image].code_file) {
			/* An interpreted function: its key's lines. */
			w.start = (pc ? pc->vaddr : v->vaddr) >> MERGE_CODE_LINE_BITS << MERGE_CODE_LINE_BITS;
			w.size = 1u << MERGE_CODE_LINE_BITS;
			w.proc = name;
		}
		int k = 0;
		while (k < nc && (c[k].image != image || c[k].start != w.start))
			k++;
		if (k == nc && nc < 16)
			c[nc++] = (struct report_target){ image, w.start, w.size, w.proc, 0 };
		if (k < nc && pc)
			c[k].samples += pc->count;
	}
	for (size_t i = 0; i < m->nimages && !nc; i++)
		for (size_t j = 0; j < m->images[i].ncode && nc < 16; j++)
			if (!strcmp(m->images[i].code[j].name, name))
				c[nc++] = (struct report_target){ (uint32_t)i,
					m->images[i].code[j].key << MERGE_CODE_LINE_BITS,
					1u << MERGE_CODE_LINE_BITS, name, 0 };
	for (int k = 0; k < nc; k++)
		if (best < 0 || c[k].samples > c[best].samples)
			best = k;
	if (best >= 0)
		*t = c[best];
	return best >= 0 ? 0 : -1;
}

static int by_vaddr(const void *a, const void *b)
{
	const struct report_insn *x = a, *y = b;
	return (x->vaddr > y->vaddr) - (x->vaddr < y->vaddr);
}

static struct report_insn *push(struct report_insn **v, size_t *n, size_t *cap)
{
	*v = report_grow(*v, cap, *n, sizeof(**v));
	memset(&(*v)[*n], 0, sizeof(**v));
	return &(*v)[(*n)++];
}

/* Decode [start, start + size); with no bytes, one "instruction" per
 * address that has samples or values, text "?". Returns the count. */
size_t report_list_disassemble(struct report_value_model *vm, const struct report_target *t, struct report_insn **out)
{
	size_t n = 0, cap = 256;
	struct report_insn *v = malloc(cap * sizeof(*v));
	uint64_t size = t->size ? t->size : 1;
	uint8_t *code = size < (1u << 24) ? malloc(size) : NULL;
	long got = code ? report_value_read_code(vm, t->image, t->start, code, size) : -1;
	if (!v) {
		perror("vprof list");
		exit(1);
	}
	if (got > 0) {
		for (long off = 0; off < got;) {
			ZydisDisassembledInstruction in;
			struct report_insn *x = push(&v, &n, &cap);
			x->vaddr = t->start + (uint64_t)off;
			if (ZYAN_SUCCESS(ZydisDisassembleIntel(ZYDIS_MACHINE_MODE_LONG_64, x->vaddr, code + off,
								(ZyanUSize)(got - off), &in))) {
				struct report_value_insn vi;
				snprintf(x->text, sizeof(x->text), "%s", in.text);
				x->len = in.info.length;
				x->ends_block = in.info.meta.category == ZYDIS_CATEGORY_COND_BR ||
						in.info.meta.category == ZYDIS_CATEGORY_UNCOND_BR ||
						in.info.meta.category == ZYDIS_CATEGORY_RET;
				/* a direct call or jump names its target: "call pow@plt" */
				if ((in.info.mnemonic == ZYDIS_MNEMONIC_CALL || in.info.mnemonic == ZYDIS_MNEMONIC_JMP) &&
				    report_value_decode(vm, t->image, x->vaddr, &vi) == 0 && vi.direct && strchr(vi.text, ' ') &&
				    strncmp(strchr(vi.text, ' ') + 1, "0x", 2))
					snprintf(x->text, sizeof(x->text), "%s", vi.text);
			} else {
				snprintf(x->text, sizeof(x->text), "(bad) %02x", code[off]);
				x->len = 1;
			}
			off += x->len;
		}
	} else {
		/* No bytes: the addresses we know of, in order. */
		for (size_t i = 0; i < vm->m.npcs + vm->nhot; i++) {
			uint32_t im = i < vm->m.npcs ? vm->m.pcs[i].image : vm->hot[i - vm->m.npcs].image;
			uint64_t a = i < vm->m.npcs ? vm->m.pcs[i].vaddr : vm->hot[i - vm->m.npcs].vaddr;
			if (im != t->image || a < t->start || a >= t->start + size)
				continue;
			struct report_insn *x = push(&v, &n, &cap);
			x->vaddr = a;
			x->len = 0;
			snprintf(x->text, sizeof(x->text), "? (image bytes unavailable)");
		}
		qsort(v, n, sizeof(*v), by_vaddr);
		size_t u = 0;
		for (size_t i = 0; i < n; i++)
			if (!u || v[u - 1].vaddr != v[i].vaddr)
				v[u++] = v[i];
		n = u;
	}
	free(code);
	*out = v;
	return n;
}

/* The hotlists at (image, vaddr): [*lo, return). */
size_t report_list_hot_range(const struct report_value_model *vm, uint32_t image, uint64_t vaddr, size_t *lo)
{
	size_t a = 0, b = vm->nhot;
	while (a < b) {
		size_t mid = (a + b) / 2;
		const struct report_value_hot *v = &vm->hot[mid];
		if (v->image < image || (v->image == image && v->vaddr < vaddr))
			a = mid + 1;
		else
			b = mid;
	}
	*lo = a;
	while (b < vm->nhot && vm->hot[b].image == image && vm->hot[b].vaddr == vaddr)
		b++;
	return b < a ? a : b;
}

static void print_hot_text(struct report_value_model *vm, const struct report_value_hot *v)
{
	char vb[160], sb[600];
	printf("%38s %-12s vtot %6llu  thld %.3f  nv %2u:", "", spool_hot_kind_name(v->kind),
	       (unsigned long long)v->h.vtot, spool_hot_p(&v->h), v->h.n);
	for (uint32_t e = 0; e < v->h.n && e < 6; e++) {
		struct report_value_where w;
		double sh = report_value_hot_share(v, (int)e);
		if (sh < 0)   /* a count, not a share */
			printf("%s %s %.0f", e ? "," : "", report_value_text(vm, v, e, vb, sizeof(vb)),
			       spool_hot_estimate(&v->h, (int)e));
		else
			printf("%s %s %.1f%%", e ? "," : "", report_value_text(vm, v, e, vb, sizeof(vb)), 100 * sh);
		if (report_value_kind_by_site(v->kind))
			printf(" from %s", report_value_site(vm, v->image, v->h.e[e].aux, &w) ? "?" : report_value_source(&w, sb, sizeof(sb)));
		else if (v->kind == SPOOL_VK_ADDR_LATENCY)
			printf(" at %s", report_value_fmt(vm, SPOOL_VK_LATENCY, v->image, v->h.e[e].aux, vb, sizeof(vb)));
		else if (report_value_kind_is_arg(v->kind))
			printf(" to %s", report_value_fmt(vm, SPOOL_VK_TARGET, v->image, v->h.e[e].aux, vb, sizeof(vb)));
	}
	printf("%s\n", v->h.n > 6 ? ", ..." : "");
}

static void print_hot_json(struct report_value_model *vm, const struct report_value_hot *v)
{
	char vb[160], sb[600];
	printf("{\"kind\":\"%s\",\"vtot\":%llu,\"thld\":%.6f,\"nv\":%u,\"top\":[", spool_hot_kind_name(v->kind),
	       (unsigned long long)v->h.vtot, spool_hot_p(&v->h), v->h.n);
	for (uint32_t e = 0; e < v->h.n; e++) {
		struct report_value_where w;
		struct report_value_info vi;
		printf("%s{\"value\":%llu,\"text\":", e ? "," : "", (unsigned long long)v->h.e[e].value);
		report_json_str(stdout, report_value_text(vm, v, e, vb, sizeof(vb)));
		report_value_info_of(vm, v, e, &vi);
		printf(",\"type\":\"%s\",\"class\":\"%s\"", report_value_type_name(&vi), report_value_class_name(vi.cls));
		double sh = report_value_hot_share(v, (int)e);
		printf(",\"aux\":%llu,\"estimate\":%.1f,\"share\":%.4f", (unsigned long long)v->h.e[e].aux,
		       spool_hot_estimate(&v->h, (int)e), sh < 0 ? 0.0 : sh);
		if (report_value_kind_by_site(v->kind)) {
			printf(",\"site\":");
			if (report_value_site(vm, v->image, v->h.e[e].aux, &w))
				printf("null");
			else
				report_json_str(stdout, report_value_source(&w, sb, sizeof(sb)));
		}
		printf("}");
	}
	printf("]}");
}

double *report_list_executions(const struct report_value_model *vm, const struct report_target *t,
			       const struct report_insn *in, size_t n, double **windows)
{
	struct report_code_pair *r;
	size_t nr = report_value_code_pairs(vm, t->image, SPOOL_VK_RANGE, &r);
	double *x = nr && n ? calloc(n, sizeof(*x)) : NULL;
	double *k = x && windows ? calloc(n, sizeof(*k)) : NULL;
	if ((nr && n && !x) || (x && windows && !k)) {
		perror("vprof");
		exit(1);
	}
	for (size_t i = 0; x && i < nr; i++)
		for (size_t j = 0; j < n; j++)
			if (in[j].vaddr >= r[i].from && in[j].vaddr <= r[i].to) {
				x[j] += r[i].est;
				if (k && r[i].windows > k[j])
					k[j] = r[i].windows;
			}
	free(r);
	if (windows)
		*windows = k;
	return x;
}

static void list(struct report_value_model *vm, const struct report_target *t, const struct report_insn *in, size_t n, int json)
{
	double *win = NULL, *ex = report_list_executions(vm, t, in, n, &win);
	double per = ex && ex[0] > 0 ? ex[0] : 0;   /* the first instruction's: a call's */
	const struct report_model_image *im = &vm->m.images[t->image];
	const char *last_file = NULL;
	int last_line = -1;
	char sb[600], vb[160];
	if (!json) {
		printf("vprof list: %s in %s, epoch %s, event %s: %llu samples (%.2f%% of %llu)\n", t->proc,
		       im->path, vm->m.epoch, vm->ev ? upcall_event_name(vm->ev) : "none",
		       (unsigned long long)t->samples,
		       vm->total ? 100.0 * (double)t->samples / (double)vm->total : 0.0,
		       (unsigned long long)vm->total);
		if (ex)
			printf("executions from branch records (vprof run --branches): relative counts with their 95%% "
			       "sampling interval, and per execution of the first instruction (a call)\n"
			       "%10s %7s %9s %6s %8s  %-18s  %s\n", "samples", "share", "execs", "95%", "a call", "pc",
			       "instruction");
		else
			printf("%10s %7s  %-18s  %s\n", "samples", "share", "pc", "instruction");
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t c = report_value_pc_samples(vm, t->image, in[i].vaddr);
		double share = vm->total ? (double)c / (double)vm->total : 0.0;
		struct report_value_where w = { 0 };
		size_t lo, hi = report_list_hot_range(vm, t->image, in[i].vaddr, &lo);
		if (im->sym && report_sym_source_line(im->sym, in[i].vaddr, &w.file, &w.line) != 0)
			w.file = NULL;
		if (json) {
			printf("{\"procedure\":");
			report_json_str(stdout, t->proc);
			printf(",\"pc\":\"%#llx\",\"image\":", (unsigned long long)in[i].vaddr);
			report_json_str(stdout, im->path);
			printf(",\"source\":");
			report_json_str(stdout, report_value_source(&w, sb, sizeof(sb)));
			printf(",\"samples\":%llu,\"share\":%.6f,", (unsigned long long)c, share);
			if (ex)
				printf("\"executions\":%.1f,\"per_call\":%.4f,\"windows\":%.0f,", ex[i],
				       per ? ex[i] / per : 0.0, win ? win[i] : 0.0);
			printf("\"instruction\":");
			report_json_str(stdout, in[i].text);
			if (hi > lo && vm->hot[lo].h.n) {
				const struct report_value_hot *v = &vm->hot[lo];
				printf(",\"kind\":\"%s\",\"value\":%llu,\"value_text\":", spool_hot_kind_name(v->kind),
				       (unsigned long long)v->h.e[0].value);
				report_json_str(stdout, report_value_text(vm, v, 0, vb, sizeof(vb)));
				printf(",\"value_share\":%.4f", report_value_share(&v->h, 0));
			} else {
				printf(",\"value\":null,\"value_share\":null");
			}
			printf(",\"values\":[");
			for (size_t j = lo; j < hi; j++) {
				printf(j > lo ? "," : "");
				print_hot_json(vm, &vm->hot[j]);
			}
			printf("]}\n");
			continue;
		}
		if (w.file && (w.file != last_file || w.line != last_line))
			printf("%*s %s\n", ex ? 45 : 38, "", report_value_source(&w, sb, sizeof(sb)));
		last_file = w.file;
		last_line = w.line;
		char cs[24] = "", ss[24] = "", es[24] = "", ps[24] = "", hs[24] = "";
		if (c) {
			snprintf(cs, sizeof(cs), "%llu", (unsigned long long)c);
			snprintf(ss, sizeof(ss), "%.2f%%", 100 * share);
		}
		if (ex && ex[i] > 0) {
			snprintf(es, sizeof(es), "%.0f", ex[i]);
			if (win && win[i] >= 1)
				snprintf(hs, sizeof(hs), "+-%.0f%%", 100 * 1.959964 / sqrt(win[i]));
			else
				snprintf(hs, sizeof(hs), "?");
			if (per)
				snprintf(ps, sizeof(ps), "%.2f", ex[i] / per);
		}
		if (ex)
			printf("%10s %7s %9s %6s %8s  %#-18llx  %s\n", cs, ss, es, hs, ps, (unsigned long long)in[i].vaddr,
			       in[i].text);
		else
			printf("%10s %7s  %#-18llx  %s\n", cs, ss, (unsigned long long)in[i].vaddr, in[i].text);
		for (size_t j = lo; j < hi; j++)
			if (vm->hot[j].kind != SPOOL_VK_RANGE)   /* they are the execs column */
				print_hot_text(vm, &vm->hot[j]);
	}
	free(ex);
	free(win);
}

/* An interpreted function's line: its slot in v (n lines, in line order),
 * added if missing. */
static struct report_code_line *line_slot(struct report_code_line **v, size_t *n, size_t *cap,
					  uint32_t line)
{
	size_t k = 0;
	while (k < *n && (*v)[k].line < line)
		k++;
	if (k < *n && (*v)[k].line == line)
		return &(*v)[k];
	*v = report_grow(*v, cap, *n, sizeof(**v));
	memmove(*v + k + 1, *v + k, (*n - k) * sizeof(**v));
	(*n)++;
	(*v)[k] = (struct report_code_line){ line, 0, 0 };
	return &(*v)[k];
}

/* An interpreted function (docs/interpreted-frames.md): its lines, each
 * with its samples (self: the function ran it at the sample) and, with
 * stacks, its inclusive samples (the function's innermost frame was at
 * that line, whatever ran beneath it), and the source text when the file
 * can be read. */
static void list_code(struct report_value_model *vm, const struct report_target *t, int json)
{
	const struct report_model_image *im = &vm->m.images[t->image];
	uint64_t key = t->start >> MERGE_CODE_LINE_BITS, sum_self = 0, sum_incl = 0;
	struct report_code_line *v;
	size_t n = report_model_code_lines(&vm->m, (unsigned)vm->ev, t->image, key, &v), cap = n;
	struct report_stacks st;
	memset(&st, 0, sizeof(st));
	int have = report_stacks_load(&st, &vm->m) == 0 && st.n;
	for (size_t i = 0; have && i < st.n; i++) {
		const struct report_stack *s = &st.v[i];
		if (s->event != (unsigned)vm->ev)
			continue;
		for (uint32_t j = 0; j < s->depth; j++) {
			const struct report_frame *f = &st.frames[s->at + j];
			if (strcmp(vm->m.images[f->image].path, im->path) ||
			    f->vaddr >> MERGE_CODE_LINE_BITS != key)
				continue;
			line_slot(&v, &n, &cap, MERGE_CODE_LINE(f->vaddr))->inclusive += s->count;
			sum_incl += s->count;
			break;
		}
	}
	for (size_t i = 0; i < n; i++)
		sum_self += v[i].samples;
	/* The listing runs from the line before the first sampled one (a
	 * function's "def" or "for"), with the source when the file is there
	 * to read. */
	uint32_t lo = n ? (v[0].line > 1 ? v[0].line - 1 : v[0].line) : 1, hi = n ? v[n - 1].line : 0;
	char **text = hi >= lo ? calloc(hi - lo + 1, sizeof(*text)) : NULL;
	FILE *src = text ? fopen(im->code_file, "r") : NULL;
	if (src) {
		char *line = NULL;
		size_t len = 0;
		for (uint32_t l = 1; l <= hi && getline(&line, &len, src) > 0; l++)
			if (l >= lo) {
				line[strcspn(line, "\n")] = 0;
				text[l - lo] = strdup(line);
			}
		free(line);
		fclose(src);
	}
	if (!json) {
		printf("vprof list: %s in %s, epoch %s, event %s: %llu samples of its own (%.2f%% of %llu)",
		       t->proc, im->path, vm->m.epoch, vm->ev ? upcall_event_name(vm->ev) : "none",
		       (unsigned long long)sum_self,
		       vm->total ? 100.0 * (double)sum_self / (double)vm->total : 0.0,
		       (unsigned long long)vm->total);
		if (have)
			printf(", %llu inclusive (%.2f%%)", (unsigned long long)sum_incl,
			       vm->total ? 100.0 * (double)sum_incl / (double)vm->total : 0.0);
		printf("\n");
		printf("%10s %7s %10s %7s %6s  %s\n", "samples", "share", "incl", "incl%", "line",
		       have ? "source" : "source (no stacks: self samples only)");
	}
	size_t k = 0;
	for (uint32_t l = lo; l <= hi; l++) {
		struct report_code_line z = { l, 0, 0 }, *c = k < n && v[k].line == l ? &v[k++] : &z;
		const char *tx = text && text[l - lo] ? text[l - lo] : "";
		double s = vm->total ? (double)c->samples / (double)vm->total : 0;
		double ci = vm->total ? (double)c->inclusive / (double)vm->total : 0;
		if (json) {
			if (c == &z)
				continue;
			printf("{\"procedure\":");
			report_json_str(stdout, t->proc);
			printf(",\"image\":");
			report_json_str(stdout, im->path);
			printf(",\"file\":");
			report_json_str(stdout, im->code_file);
			printf(",\"line\":%u,\"samples\":%llu,\"share\":%.6f,\"inclusive\":%llu,"
			       "\"inclusive_share\":%.6f,\"source\":", l, (unsigned long long)c->samples, s,
			       (unsigned long long)c->inclusive, ci);
			report_json_str(stdout, tx);
			printf("}\n");
			continue;
		}
		char a[24] = "", b[24] = "", d[24] = "", e[24] = "";
		if (c->samples) {
			snprintf(a, sizeof(a), "%llu", (unsigned long long)c->samples);
			snprintf(b, sizeof(b), "%.2f%%", 100 * s);
		}
		if (c->inclusive) {
			snprintf(d, sizeof(d), "%llu", (unsigned long long)c->inclusive);
			snprintf(e, sizeof(e), "%.2f%%", 100 * ci);
		}
		printf("%10s %7s %10s %7s %6u  %s\n", a, b, d, e, l, tx);
	}
	for (uint32_t l = lo; text && l <= hi; l++)
		free(text[l - lo]);
	free(text);
	free(v);
	if (have)
		report_stacks_free(&st);
}

int cmd_list(int argc, char **argv)
{
	static const struct report_cmd cmd = {
		"list", kHelp, REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT | REPORT_OPT_JSON,
		NULL, NULL, NULL,
	};
	struct report_opts o = { 0 };
	struct report_value_model vm;
	struct report_target t;
	struct report_insn *in;
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	if (o.next != argc - 1)
		return report_usage("list", "takes one FUNCTION");
	if ((rc = report_value_model_load(&vm, &o, "list")))
		return rc;
	if ((rc = find_target(&vm, argv[o.next], &t)) < 0) {
		if (rc == -1)
			fprintf(stderr, "vprof list: no procedure '%s' has samples or values in %s, "
				"epoch %s\n", argv[o.next], o.db, vm.m.epoch);
		report_value_model_free(&vm);
		return 1;
	}
	if (vm.m.images[t.image].code_file) {
		list_code(&vm, &t, o.json);
		report_value_model_free(&vm);
		return report_finish_stdout(0);
	}
	size_t n = report_list_disassemble(&vm, &t, &in);
	list(&vm, &t, in, n, o.json);
	free(in);
	report_value_model_free(&vm);
	return report_finish_stdout(0);
}
