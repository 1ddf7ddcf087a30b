/*
 * memory_rank.c — the cache simulation's rows (memory_rank.h): CACHE
 * hotlists summed per procedure or line, the unknown references'
 * estimate, and the order by estimated stall. cmd_memory.c prints them,
 * html_values.c puts them on the page.
 */
#include "reports/memory_rank.h"
#include "reports/symbolize.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ll_fits: the LL guesses of this PC's unknown references are hits (its
 * footprint fits, below). */
static void add(struct report_mem_tally *t, uint64_t outcome, double n, int ll_fits)
{
	unsigned a = SPOOL_CACHE_D1(outcome), b = SPOOL_CACHE_LL(outcome);
	if (a > SPOOL_CACHE_UMISS || b > SPOOL_CACHE_NONE)
		return;
	if (ll_fits && b == SPOOL_CACHE_UMISS)
		b = SPOOL_CACHE_UHIT;
	t->refs += n;
	t->d1[a] += n;
	t->ll[b] += n;
	if ((a == SPOOL_CACHE_MISS || a == SPOOL_CACHE_UMISS) &&
	    (b == SPOOL_CACHE_MISS || b == SPOOL_CACHE_UMISS))
		t->llmiss_est += n;
}

static void sum(struct report_mem_tally *a, const struct report_mem_tally *b)
{
	a->refs += b->refs;
	for (int i = 0; i < 4; i++)
		a->d1[i] += b->d1[i];
	for (int i = 0; i < 5; i++)
		a->ll[i] += b->ll[i];
	a->llmiss_est += b->llmiss_est;
}

/* Misses: lo (known), est (known + guessed), hi (known + every unknown). */
void report_mem_d1(const struct report_mem_tally *t, double *lo, double *est, double *hi)
{
	*lo = t->d1[SPOOL_CACHE_MISS];
	*est = *lo + t->d1[SPOOL_CACHE_UMISS];
	*hi = *est + t->d1[SPOOL_CACHE_UHIT];
}

void report_mem_ll(const struct report_mem_tally *t, double *lo, double *est, double *hi)
{
	*lo = t->ll[SPOOL_CACHE_MISS];
	*est = t->llmiss_est;
	*hi = *lo + t->ll[SPOOL_CACHE_UHIT] + t->ll[SPOOL_CACHE_UMISS];
}

static double rate(double n, double d)
{
	return d > 0 ? n / d : 0;
}

double report_mem_ll_unknown(const struct report_mem_tally *t)
{
	return rate(t->ll[SPOOL_CACHE_UHIT] + t->ll[SPOOL_CACHE_UMISS], t->refs);
}

/* The latencies misses cost, in cycles: calibrated levels by their
 * position (the second and the last; returns 1), else nominal (0). */
static int penalties(const struct report_value_model *vm, double *l2, double *mem)
{
	*l2 = 14, *mem = 200;
	if (vm->nlevels >= 3) {
		*l2 = (double)vm->levels[1].typical;
		*mem = (double)vm->levels[vm->nlevels - 1].typical;
		return 1;
	}
	return 0;
}

/* The lines one PC's references range over (its footprint), from how
 * often its first touches in a window found a line an earlier window had
 * left in LL: with k windows of s first touches each, drawn evenly from F
 * lines, window j finds 1 - (1 - s/F)^j of them seen, so the share over
 * the k windows is 1 - (1 - (1 - x)^k) / (k x), x = s/F, rising in x;
 * solved for x. 0 when it cannot be told (fewer than 3 windows), a
 * negative number for "larger than anything seen" (no line found again). */
static double footprint(double unknown, double again, double windows)
{
	if (windows < 3 || unknown < windows)
		return 0;
	double s = unknown / windows, k = windows, m = again / unknown;
	if (m <= 0)
		return -1;
	double lo = 1e-9, hi = 1;
	if (m >= 1 - (1 - pow(0, k)) / k)
		return s;
	for (int i = 0; i < 60; i++) {
		double x = (lo + hi) / 2;
		double mx = 1 - (1 - pow(1 - x, k)) / (k * x);
		if (mx < m)
			lo = x;
		else
			hi = x;
	}
	return s / ((lo + hi) / 2);
}

static int by_stall(const void *a, const void *b)
{
	const struct report_mem_row *x = a, *y = b;
	return x->stall < y->stall ? 1 : x->stall > y->stall ? -1 : (x->t.refs < y->t.refs) - (x->t.refs > y->t.refs);
}

/* Median interpretation run, from the length bins: the bin's least
 * length, interpolated within the bin. */
static double median_run(const struct merge_stats *s)
{
	uint64_t n = 0, c = 0;
	for (int i = 0; i < SPOOL_RUN_BINS; i++)
		n += s->run_bins[i];
	if (!n)
		return 0;
	for (int i = 0; i < SPOOL_RUN_BINS; i++) {
		if (c + s->run_bins[i] >= (n + 1) / 2) {
			double lo = (double)spool_run_bin_low((unsigned)i);
			double hi = i + 1 < SPOOL_RUN_BINS ? (double)spool_run_bin_low((unsigned)i + 1) : lo;
			/* Nearly all in one bin (windows of one length): the mean of
			 * that bin's runs, the others' taken at their bins' middles. */
			if (s->run_bins[i] * 10 >= n * 9) {
				double other = 0;
				for (int j = 0; j < SPOOL_RUN_BINS; j++)
					if (j != i && s->run_bins[j])
						other += (double)s->run_bins[j] *
							 ((double)spool_run_bin_low((unsigned)j) +
							  (j + 1 < SPOOL_RUN_BINS ? (double)spool_run_bin_low((unsigned)j + 1)
										  : (double)spool_run_bin_low((unsigned)j))) / 2;
				double mean = ((double)s->interp_insns - other) / (double)s->run_bins[i];
				if (mean >= lo && mean < hi)
					return mean;
			}
			double f = s->run_bins[i] ? ((double)((n + 1) / 2 - c) - 0.5) / (double)s->run_bins[i] : 0;
			return lo + (hi - lo) * (f < 0 ? 0 : f);
		}
		c += s->run_bins[i];
	}
	return 0;
}

const char *report_mem_rates_text(const struct report_mem_tally *t, int ll, char *buf, size_t cap)
{
	double lo, est, hi;
	if (ll)
		report_mem_ll(t, &lo, &est, &hi);
	else
		report_mem_d1(t, &lo, &est, &hi);
	snprintf(buf, cap, "%.2f%% (%.2f-%.2f)", 100 * rate(est, t->refs), 100 * rate(lo, t->refs),
		 100 * rate(hi, t->refs));
	return buf;
}

/* A heap object's allocation site: the function making the call, and the
 * call's line in that function's own source (past code inlined from a
 * header: std::vector's allocation reads as the line that made the
 * vector). The return address less one is in the call. */
static void heap_site(struct report_value_model *vm, const struct report_value_hot *v, struct report_value_where *w)
{
	struct report_image *sym = vm->m.images[v->image].sym;
	report_value_where(vm, v->image, v->vaddr - 1, w);
	if (sym && w->file && report_sym_outer_line(sym, v->vaddr - 1, &w->file, &w->line) != 0)
		w->file = NULL, w->line = 0;
}

/* The bytes of [lo, hi) inside the page [pg, pe). */
static uint64_t page_bytes(uint64_t lo, uint64_t hi, uint64_t pg, uint64_t pe)
{
	uint64_t a0 = lo > pg ? lo : pg, a1 = hi < pe ? hi : pe;
	return a1 > a0 ? a1 - a0 : 0;
}

/* A data object's name: "[stack] F" for a frame of F, a global's
 * symbol for an image's page ("[data] IMAGE" without one), "[heap]
 * FILE:LINE F" for the blocks allocated at site ("[heap] F (no line)"
 * without line tables), "[other mappings, small heap blocks]" for the
 * rest. Owned by vm. */
static const char *object_name(struct report_value_model *vm, const struct report_value_hot *v, unsigned cls,
			       const struct report_value_where *site)
{
	char buf[600], *s;
	if (cls == SPOOL_OBJ_STACK) {
		snprintf(buf, sizeof(buf), "[stack] %s", v->w.proc ? v->w.proc : "?");
	} else if (cls == SPOOL_OBJ_IMAGE) {
		/* The page's global: the data symbol that covers most of the
		 * page, where symbols cover at least half of the page's bytes
		 * in sections; else the section holding most of them, else the
		 * image. A stripped program's page of its own statics holds only
		 * the few globals it shares with libraries (stdout, optind):
		 * naming the page after one of them would name the wrong data. */
		const struct report_value_elf *e = report_value_elf(vm, v->image);
		const struct report_value_dsym *d = NULL;
		uint64_t best = 0, named = 0, pg = v->vaddr, pe = v->vaddr + 4096;
		for (size_t i = 0; e && i < e->ndsym; i++) {
			uint64_t n = page_bytes(e->dsym[i].start,
						e->dsym[i].start + (e->dsym[i].size ? e->dsym[i].size : 1), pg, pe);
			named += n;
			if (n > best)
				best = n, d = &e->dsym[i];
		}
		/* The page's bytes in sections, and the section with most of
		 * them (a page may begin in .got.plt and hold .data and .bss). */
		const struct report_value_sec *sec = NULL;
		uint64_t span = 0, most = 0;
		for (size_t i = 0; e && i < e->nsec; i++) {
			uint64_t n = page_bytes(e->sec[i].addr, e->sec[i].addr + e->sec[i].size, pg, pe);
			span += n;
			if (n > most)
				most = n, sec = &e->sec[i];
		}
		if (d && 2 * named < (span ? span : pe - pg))
			d = NULL;
		const char *path = vm->m.images[v->image].path, *b = strrchr(path, '/');
		if (d && (s = report_sym_demangle(d->name))) {
			snprintf(buf, sizeof(buf), "%s", s);
			free(s);
		} else if (d) {
			snprintf(buf, sizeof(buf), "%s", d->name);
		} else {
			snprintf(buf, sizeof(buf), "[data] %s %s", b ? b + 1 : path, sec ? sec->name : "");
		}
	} else if (cls == SPOOL_OBJ_HEAP) {
		char src[560];
		if (site->file)
			snprintf(buf, sizeof(buf), "[heap] %s %s", report_value_source(site, src, sizeof(src)),
				 site->proc ? site->proc : "?");
		else
			snprintf(buf, sizeof(buf), "[heap] %s (no line)", site->proc ? site->proc : "?");
	} else {
		snprintf(buf, sizeof(buf), "[other mappings, small heap blocks]");
	}
	for (size_t i = 0; i < vm->nstrs; i++)
		if (!strcmp(vm->strs[i], buf))
			return vm->strs[i];
	return report_value_own(vm, strdup(buf));
}

/* Adds a hotlist's LL unknown references (*unk, of them *again guessed
 * hits) and its windows (*wins): its entries of class cls, or all with
 * cls 0. */
static void unknowns(const struct report_value_hot *v, unsigned cls, double *unk, double *again, double *wins)
{
	for (uint32_t e = 0; e < v->h.n; e++) {
		double c = spool_hot_estimate(&v->h, (int)e);
		uint64_t x = v->h.e[e].value;
		if (cls && v->h.e[e].aux != cls)
			continue;
		if (x == SPOOL_CACHE_WINDOW)
			*wins += c;
		else if (SPOOL_CACHE_LL(x) == SPOOL_CACHE_UHIT || SPOOL_CACHE_LL(x) == SPOOL_CACHE_UMISS) {
			*unk += c;
			*again += SPOOL_CACHE_LL(x) == SPOOL_CACHE_UHIT ? c : 0;
		}
	}
}

/* A hotlist's outcomes (class cls, or all with 0) in *t. LL's unknown
 * references: where the PC's footprint fits in LL, they hit (the line was
 * touched in the gap, as the PC touches its lines), whatever the
 * carried-over state says; a PC with too few windows to tell takes the
 * run's (all_fit). */
static void tally(const struct report_value_hot *v, unsigned cls, double ll_lines, int all_fit,
		  struct report_mem_tally *t)
{
	double unk = 0, again = 0, wins = 0;
	unknowns(v, cls, &unk, &again, &wins);
	double fp = footprint(unk, again, wins);
	int fits = fp > 0 ? fp <= ll_lines : fp == 0 && all_fit;
	for (uint32_t e = 0; e < v->h.n; e++)
		if (!cls || v->h.e[e].aux == cls)
			add(t, v->h.e[e].value, spool_hot_estimate(&v->h, (int)e), fits);
}

void report_mem_rank(struct report_value_model *vm, int by, struct report_mem_result *r)
{
	int by_line = by == REPORT_MEM_BY_LINE, by_obj = by == REPORT_MEM_BY_OBJECT;
	memset(r, 0, sizeof(*r));
	struct report_mem_row *rows = NULL;
	size_t n = 0, cap = 0;
	struct report_mem_tally all = { 0 };
	const struct merge_stats *st = &vm->m.stats;
	double ll_lines = st->cache_procs && st->cache_geom_sum[5] ? (double)st->cache_geom_sum[3] / (double)st->cache_geom_sum[5] : 0;
	/* The whole run's footprint, from all PCs' first touches, for the
	 * PCs whose own windows are too few to tell theirs: where it fits in
	 * LL, their unknown references at LL are hits. (A PC whose own
	 * estimate says it does not fit keeps its misses: the run's estimate
	 * mixes its lines with the hot sets' and reads smaller.) */
	double unk_all = 0, again_all = 0, wins_all = 0;
	for (size_t i = 0; i < vm->nhot; i++)
		if (vm->hot[i].kind == SPOOL_VK_CACHE)
			unknowns(&vm->hot[i], 0, &unk_all, &again_all, &wins_all);
	double fp_all = footprint(unk_all, again_all, (double)st->interp_runs);
	int all_fit = fp_all > 0 && fp_all <= ll_lines;
	/* The whole run, as the procedures give it whatever the rows are (an
	 * object's LL estimate pools its PCs' unknown references). */
	for (size_t i = 0; i < vm->nhot; i++)
		if (vm->hot[i].kind == SPOOL_VK_CACHE)
			tally(&vm->hot[i], 0, ll_lines, all_fit, &all);
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		if (v->kind != (by_obj ? SPOOL_VK_OBJECT : SPOOL_VK_CACHE) || !v->h.n)
			continue;
		/* An OBJECT hotlist holds one object a class: a code address can
		 * key a stack frame and a heap allocation site both. */
		for (unsigned cls = by_obj; cls <= (by_obj ? SPOOL_OBJ_HEAP : 0u); cls++) {
			uint32_t have = !by_obj;
			for (uint32_t e = 0; !have && e < v->h.n; e++)
				have = v->h.e[e].aux == cls;
			if (!have)
				continue;
			struct report_value_where site = { 0 };
			if (cls == SPOOL_OBJ_HEAP)
				heap_site(vm, v, &site);
			const char *oname = by_obj ? object_name(vm, v, cls, &site) : NULL;
			struct report_mem_tally t = { 0 };
			tally(v, cls, ll_lines, all_fit, &t);
			size_t k = 0;
			for (; k < n; k++)
				if (by_obj ? rows[k].proc == oname
				    : !by_line ? rows[k].image == v->image && rows[k].proc == v->w.proc
						     : rows[k].file == v->w.file && rows[k].line == v->w.line &&
							       (v->w.file || rows[k].proc == v->w.proc))
					break;
			if (k == n) {
				rows = report_grow(rows, &cap, n, sizeof(*rows));
				rows[n++] = by_obj ? (struct report_mem_row){ .image = v->image, .proc = oname, .cls = cls,
									      .file = site.file, .line = site.line }
						   : (struct report_mem_row){ .image = v->image, .proc = v->w.proc,
									      .file = v->w.file, .line = v->w.line };
			}
			sum(&rows[k].t, &t);
		}
	}
	double c2, cm, stall_all = 0;
	r->calibrated = penalties(vm, &c2, &cm);
	for (size_t k = 0; k < n; k++) {
		double lo, d1, ll, hi;
		report_mem_d1(&rows[k].t, &lo, &d1, &hi);
		report_mem_ll(&rows[k].t, &lo, &ll, &hi);
		rows[k].stall = d1 * c2 + ll * cm;
		stall_all += rows[k].stall;
	}
	qsort(rows, n, sizeof(*rows), by_stall);
	r->rows = rows;
	r->n = n;
	r->all = all;
	r->stall_all = stall_all;
	r->l2_cycles = c2;
	r->mem_cycles = cm;
	if (st->cache_procs) {
		uint64_t q = st->cache_procs;
		const uint64_t *g = st->cache_geom_sum;
		r->have_geom = 1;
		r->geom = (struct spool_cache_geom){ { (uint32_t)(g[0] / q), (uint32_t)(g[1] / q), (uint32_t)(g[2] / q) },
						     { (uint32_t)(g[3] / q), (uint32_t)(g[4] / q), (uint32_t)(g[5] / q) } };
	}
	r->median_window = median_run(st);
}

void report_mem_result_free(struct report_mem_result *r)
{
	free(r->rows);
	r->rows = NULL;
	r->n = 0;
}
