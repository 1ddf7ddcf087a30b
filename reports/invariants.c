/*
 * invariants.c — the ranking of specialization candidates (contract and
 * estimators in invariants.h): semi-invariant values where the code that
 * depends on them takes real time (Burrows et al., ASPLOS 2000, section
 * 3: "our tools direct the programmer to places that both consume a
 * significant amount of time, and which contain semi-invariant values").
 *
 * Workload: a database's few thousand hotlists, each giving at most 16
 * candidates; the time model (return addresses, or stacks) is built once
 * per ranking. Single-threaded.
 */
#include "reports/invariants.h"
#include "reports/stack_model.h"
#include "reports/symbolize.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

const char *report_inv_what_name(enum report_inv_what w)
{
	switch (w) {
	case INV_ARGUMENT: return "argument";
	case INV_SIZE: return "size";
	case INV_TARGET: return "target";
	default: return "operand";
	}
}

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1))) {
		perror("vprof");
		exit(1);
	}
	return p;
}

static const char *own_printf(struct report_value_model *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static const char *own_printf(struct report_value_model *vm, const char *fmt, ...)
{
	char *s = NULL;
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return report_value_own(vm, s);
}

/* ---- time: the code that depends on a value ---- */

/* The time model without stacks: procedures (image, start) with their
 * own samples and the return addresses their value samples saw; return
 * addresses with the procedure they return into. */
struct tproc {
	uint32_t image;
	uint64_t start, size;
	double self;                    /* PC samples of the main event */
	double rtot;                    /* return-address estimates, summed */
	double incl;                    /* memo: self + what it calls */
	int state;                      /* 0 new, 1 computing, 2 done */
};
struct tret {
	uint32_t image;
	uint64_t va;                    /* the return address */
	long caller;                    /* the procedure it is in, -1 unknown */
	double t;                       /* memo: time of the calls that return here */
	int state;
};
struct tedge {                          /* procedure p returned to r, est times */
	size_t p, r;
	double est;
};
struct tmodel {
	struct tproc *p;
	size_t np, capp;
	struct tret *r;
	size_t nr, capr;
	struct tedge *e;
	size_t ne, cape;
	int built;
	struct report_stacks st;
	int stacks;
};

static long find_proc(const struct tmodel *tm, uint32_t image, uint64_t start)
{
	size_t a = 0, b = tm->np;
	while (a < b) {
		size_t m = (a + b) / 2;
		const struct tproc *p = &tm->p[m];
		if (p->image < image || (p->image == image && p->start < start))
			a = m + 1;
		else
			b = m;
	}
	return a < tm->np && tm->p[a].image == image && tm->p[a].start == start ? (long)a : -1;
}

static int proc_cmp(const void *a, const void *b)
{
	const struct tproc *x = a, *y = b;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

static size_t add_proc(struct report_value_model *vm, struct tmodel *tm, uint32_t image, uint64_t vaddr)
{
	struct report_value_where w;
	report_value_where(vm, image, vaddr, &w);
	for (size_t i = 0; i < tm->np; i++)   /* (only while building: few) */
		if (tm->p[i].image == image && tm->p[i].start == w.start)
			return i;
	tm->p = report_grow(tm->p, &tm->capp, tm->np, sizeof(*tm->p));
	tm->p[tm->np] = (struct tproc){ .image = image, .start = w.start, .size = w.size };
	return tm->np++;
}

static void tmodel_build(struct report_value_model *vm, struct tmodel *tm)
{
	if (tm->built)
		return;
	tm->built = 1;
	report_stacks_load(&tm->st, &vm->m);
	tm->stacks = tm->st.total[vm->ev] > 0;
	if (tm->stacks)
		return;
	/* Procedures with samples (pcs are sorted by event, image, vaddr:
	 * a procedure's PCs are adjacent). */
	for (size_t i = 0; i < vm->m.npcs; i++) {
		const struct report_model_pc *pc = &vm->m.pcs[i];
		if (pc->event != vm->ev)
			continue;
		if (tm->np && tm->p[tm->np - 1].image == pc->image && tm->p[tm->np - 1].start == pc->proc_start) {
			tm->p[tm->np - 1].self += (double)pc->count;
			continue;
		}
		tm->p = report_grow(tm->p, &tm->capp, tm->np, sizeof(*tm->p));
		tm->p[tm->np++] = (struct tproc){ .image = pc->image, .start = pc->proc_start, .self = (double)pc->count };
	}
	qsort(tm->p, tm->np, sizeof(*tm->p), proc_cmp);
	size_t sorted = tm->np;
	/* Return addresses, and which procedure saw each. */
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		if (v->kind != SPOOL_VK_RETADDR)
			continue;
		long pi = find_proc(tm, v->image, v->w.start);
		size_t p = pi >= 0 ? (size_t)pi : add_proc(vm, tm, v->image, v->vaddr);
		for (uint32_t e = 0; e < v->h.n; e++) {
			uint32_t ii;
			uint64_t va;
			double est = spool_hot_estimate(&v->h, (int)e);
			if (report_value_code_place(vm, v->image, v->h.e[e].value, &ii, &va) < 0)
				continue;
			size_t r;
			for (r = 0; r < tm->nr && (tm->r[r].image != ii || tm->r[r].va != va); r++)
				;
			if (r == tm->nr) {
				tm->r = report_grow(tm->r, &tm->capr, tm->nr, sizeof(*tm->r));
				tm->r[tm->nr++] = (struct tret){ .image = ii, .va = va, .caller = -1 };
			}
			tm->e = report_grow(tm->e, &tm->cape, tm->ne, sizeof(*tm->e));
			tm->e[tm->ne++] = (struct tedge){ p, r, est };
			tm->p[p].rtot += est;
		}
	}
	/* Procedures added out of order: sort again, and renumber edges. */
	if (tm->np != sorted) {
		size_t *old = xrealloc(NULL, tm->np * sizeof(*old));
		for (size_t i = 0; i < tm->np; i++)
			tm->p[i].incl = (double)i;           /* the old index, carried through the sort */
		qsort(tm->p, tm->np, sizeof(*tm->p), proc_cmp);
		for (size_t i = 0; i < tm->np; i++)
			old[(size_t)tm->p[i].incl] = i;
		for (size_t i = 0; i < tm->ne; i++)
			tm->e[i].p = old[tm->e[i].p];
		for (size_t i = 0; i < tm->np; i++)
			tm->p[i].incl = 0;
		free(old);
	}
	for (size_t r = 0; r < tm->nr; r++) {
		struct report_value_where w;
		report_value_where(vm, tm->r[r].image, tm->r[r].va - 1, &w);
		tm->r[r].caller = find_proc(tm, tm->r[r].image, w.start);
	}
}

static double ret_time(struct tmodel *tm, size_t r);

/* A procedure's time with what it calls: its own samples and the time
 * of every call in it (the return addresses inside it). A recursion
 * counts once. */
static double proc_incl(struct tmodel *tm, size_t p)
{
	struct tproc *x = &tm->p[p];
	if (x->state == 2)
		return x->incl;
	if (x->state == 1)
		return 0;
	x->state = 1;
	double t = x->self;
	for (size_t r = 0; r < tm->nr; r++)
		if (tm->r[r].caller == (long)p)
			t += ret_time(tm, r);
	x = &tm->p[p];
	x->incl = t;
	x->state = 2;
	return t;
}

/* The time of the calls that return to r: every procedure that returned
 * there, its time with its callees' split by its return addresses. */
static double ret_time(struct tmodel *tm, size_t r)
{
	if (tm->r[r].state == 2)
		return tm->r[r].t;
	if (tm->r[r].state == 1)
		return 0;
	tm->r[r].state = 1;
	double t = 0;
	for (size_t i = 0; i < tm->ne; i++) {
		const struct tedge *e = &tm->e[i];
		if (e->r == r && tm->p[e->p].rtot > 0)
			t += proc_incl(tm, e->p) * e->est / tm->p[e->p].rtot;
	}
	tm->r[r].t = t;
	tm->r[r].state = 2;
	return t;
}

/* The samples of the calls whose return address is (image, ra). */
static double call_time(struct report_value_model *vm, struct tmodel *tm, uint32_t image, uint64_t ra)
{
	tmodel_build(vm, tm);
	if (tm->stacks) {
		double n = 0;
		for (size_t i = 0; i < tm->st.n; i++) {
			const struct report_stack *s = &tm->st.v[i];
			if (s->event != vm->ev)
				continue;
			for (uint32_t d = 1; d < s->depth; d++) {
				const struct report_frame *f = &tm->st.frames[s->at + d];
				if (f->image == image && f->vaddr == ra) {
					n += (double)s->count;
					break;
				}
			}
		}
		return n;
	}
	for (size_t r = 0; r < tm->nr; r++)
		if (tm->r[r].image == image && tm->r[r].va == ra)
			return ret_time(tm, r);
	return 0;
}

static void tmodel_free(struct tmodel *tm)
{
	if (tm->built)
		report_stacks_free(&tm->st);
	free(tm->p);
	free(tm->r);
	free(tm->e);
}

/* The estimated value samples at v's PC that came from call site `site`:
 * the RETADDR hotlist at the same PC says which share of the PC's value
 * samples each site had (few distinct values: nearly exact), times v's
 * vtot. 0 when the PC has no RETADDR hotlist or not that site. */
static double site_samples(const struct report_value_model *vm, const struct report_value_hot *v, uint64_t site)
{
	const struct report_value_hot *r = report_value_hot_find(vm, v->image, v->vaddr, SPOOL_VK_RETADDR);
	if (!r || !r->h.vtot)
		return 0;
	for (uint32_t j = 0; j < r->h.n; j++)
		if (r->h.e[j].value == site)
			return (double)v->h.vtot * spool_hot_estimate(&r->h, (int)j) / (double)r->h.vtot;
	return 0;
}

/* ---- candidates ---- */

struct ctx {
	struct report_value_model *vm;
	const struct report_inv_opts *op;
	struct report_inv_result *r;
	struct tmodel tm;
	size_t cap;
	uint64_t site_aux;              /* per row being built: the @site aux (0: none) */
};

/* The Wilson score interval at 95%: honest for small counts, where a
 * share of 24 of 24 is not "100%". */
static void interval(double k, double n, double *lo, double *hi)
{
	const double z = 1.96;
	if (n <= 0) {
		*lo = 0;
		*hi = 1;
		return;
	}
	double p = k / n > 1 ? 1 : k / n, d = 1 + z * z / n;
	double c = (p + z * z / (2 * n)) / d, h = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d;
	*lo = c - h < 0 ? 0 : c - h;
	*hi = c + h > 1 ? 1 : c + h;
}

const char *report_inv_share_text(const struct report_inv_row *row, char *buf, size_t cap)
{
	double s = 100 * row->share, lo = 100 * row->share_lo, hi = 100 * row->share_hi;
	/* an estimate that rounds to 100% says how sure it is */
	if (hi - lo < 2 && s < 99.5)
		snprintf(buf, cap, "%.0f%%", s);
	else
		snprintf(buf, cap, "%.0f%% (%.0f-%.0f%%)", s, floor(lo), ceil(hi) > 100 ? 100 : ceil(hi));
	return buf;
}

static const char *plain_name(struct report_value_model *vm, const char *name);

static struct report_inv_row *new_row(struct ctx *c, const struct report_value_hot *v, int e, double k, double n,
				      double time)
{
	struct report_inv_result *r = c->r;
	if (r->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 256;
		r->rows = xrealloc(r->rows, c->cap * sizeof(*r->rows));
	}
	struct report_inv_row *x = &r->rows[r->n];
	memset(x, 0, sizeof(*x));
	x->v = v;
	x->e = e;
	x->value = v->h.e[e].value;
	x->kinds = spool_hot_kind_name(v->kind);
	x->n = n;
	x->share = n > 0 ? (k / n > 1 ? 1 : k / n) : 0;
	interval(k, n, &x->share_lo, &x->share_hi);
	x->time = time;
	x->weight = time * x->share;
	x->at = v->w;
	x->at.proc = plain_name(c->vm, v->w.proc);
	x->why = "";
	return x;
}

/* Keep the row being built (r->rows[r->n]) if it passes the thresholds,
 * classified and typed. */
static void keep(struct ctx *c, struct report_inv_row *x)
{
	struct report_value_info vi;
	char vb[160];
	if (x->share < c->op->min_share || x->time < c->op->min_time)
		return;
	report_value_info_of(c->vm, x->v, (uint32_t)x->e, &vi);
	x->cls = vi.cls;
	x->why = report_value_own(c->vm, strdup(vi.why));
	x->value_type = report_value_own(c->vm, strdup(report_value_type_name(&vi)));
	x->report_value_text = report_value_own(c->vm, strdup(report_value_typed_fmt(c->vm, x->value, &vi, vb, sizeof(vb))));
	if (x->v->kind == SPOOL_VK_TARGET)
		x->report_value_text = report_value_own(c->vm, strdup(report_value_fmt(c->vm, x->v->kind, x->v->image, x->value, vb, sizeof(vb))));
	c->r->n++;
}

/* Leave out the classes not asked for, counting them. */
static void hide(const struct report_inv_opts *op, struct report_inv_result *r)
{
	size_t m = 0;
	for (size_t i = 0; i < r->n; i++) {
		if (r->rows[i].cls != VALUE_DATA && !op->all)
			r->hidden[r->rows[i].cls]++;
		else
			r->rows[m++] = r->rows[i];
	}
	r->n = m;
}

/* A symbol's name without its version ("pow@@GLIBC_2.29": "pow") and
 * without "@plt". */
static const char *plain_name(struct report_value_model *vm, const char *name)
{
	char *d = report_sym_demangle(name), *s = d ? d : strdup(name);
	char *at = s ? strchr(s, '@') : NULL;
	if (at)
		*at = 0;
	return report_value_own(vm, s);
}

static const char *sym_at(struct report_value_model *vm, uint32_t image, uint64_t va)
{
	uint64_t s, n;
	struct report_image *sym = vm->m.images[image].sym;
	const char *name = sym ? report_sym_lookup(sym, va, &s, &n) : NULL;
	return name && s == va ? name : NULL;
}

static const char *const kSizeFamilies[] = { "memcpy", "memmove", "memset", "memcmp", "bcmp", "strncmp" };

static const char *size_family(const char *name)
{
	for (size_t i = 0; name && i < sizeof(kSizeFamilies) / sizeof(kSizeFamilies[0]); i++)
		if (!strcmp(name, kSizeFamilies[i]) ||
		    (!strncmp(name, "__", 2) && strstr(name, kSizeFamilies[i])))
			return kSizeFamilies[i];
	if (name && !strncmp(name, "__", 2) && strstr(name, "memcmp"))
		return "memcmp";
	return NULL;
}

/* The callee of a call, as the program wrote it (the PLT stub's name at
 * a direct call's target) and as it is implemented (the symbol at its
 * entry in its own image). */
static void name_callee(struct ctx *c, struct report_inv_row *x, uint32_t ci, uint64_t cva)
{
	struct report_value_model *vm = c->vm;
	struct report_value_insn in;
	const char *impl = sym_at(vm, ci, cva), *prog = NULL;
	if (report_value_decode(vm, x->v->image, x->v->vaddr, &in) == 0 && in.is_call && in.direct) {
		const char *t = sym_at(vm, x->v->image, in.target);
		if (t)
			prog = plain_name(vm, t);
	}
	if (impl)
		impl = plain_name(vm, impl);
	else
		impl = own_printf(vm, "%#llx in %s", (unsigned long long)cva, vm->m.images[ci].path);
	x->callee = prog ? prog : impl;
	x->callee_impl = prog && strcmp(prog, impl) ? impl : NULL;
	x->callee_image = ci;
	x->callee_entry = cva;
}

/* A procedure's parameter names, "x, y" (NULL unless all are named). */
static const char *param_list(struct report_value_model *vm, const struct report_value_proto *p)
{
	char buf[400] = "";
	size_t l = 0;
	if (!p || !p->known)
		return NULL;
	for (int i = 0; i < p->nparams; i++) {
		if (!p->p[i].name[0])
			return NULL;
		l += (size_t)snprintf(buf + l, sizeof(buf) - (l < sizeof(buf) ? l : sizeof(buf)), "%s%s", i ? ", " : "",
				      p->p[i].name);
		if (l >= sizeof(buf))
			return NULL;
	}
	return report_value_own(vm, strdup(buf));
}

static void name_param(struct ctx *c, struct report_inv_row *x, const struct report_value_proto *p, unsigned kind)
{
	const struct report_value_param *pa = report_value_proto_param(p, kind);
	x->reg = report_value_arg_reg(kind);
	if (!pa)
		return;
	x->argno = pa->number;
	x->param = pa->name[0] ? report_value_own(c->vm, strdup(pa->name)) : NULL;
	x->param_type = pa->type[0] ? report_value_own(c->vm, strdup(pa->type)) : NULL;
}

/* Entries sharing entry e's aux (a callee, a call site): the sum of
 * their estimates if e is the first of them (the top one: entries are
 * sorted by count), else -1. */
static double aux_group(const struct spool_hotlist *h, uint32_t e)
{
	double sum = 0;
	for (uint32_t j = 0; j < h->n; j++) {
		if (h->e[j].aux != h->e[e].aux)
			continue;
		if (j < e)
			return -1;
		sum += spool_hot_estimate(h, (int)j);
	}
	return sum;
}

/* Argument rows of one arg.* hotlist: per callee, its top value. */
static void arg_rows(struct ctx *c, const struct report_value_hot *v)
{
	struct report_value_model *vm = c->vm;
	struct report_value_insn in;
	double all = 0;
	for (uint32_t e = 0; e < v->h.n; e++)
		all += spool_hot_estimate(&v->h, (int)e);
	if (all <= 0 || report_value_decode(vm, v->image, v->vaddr, &in) < 0)
		return;
	double t = call_time(vm, &c->tm, v->image, v->vaddr + in.len) / (double)(vm->total ? vm->total : 1);
	for (uint32_t e = 0; e < v->h.n; e++) {
		double mine = aux_group(&v->h, e);
		if (mine < 0)
			continue;       /* not the callee's top entry */
		/* The callee's calls from here: its part of the listed
		 * estimates, of all value samples. */
		double n = (double)v->h.vtot * mine / all;
		if (n < (double)c->op->min_vtot) {
			c->r->skipped++;
			continue;
		}
		uint32_t ci;
		uint64_t cva;
		int placed = report_value_code_place(vm, v->image, v->h.e[e].aux, &ci, &cva) == 0;
		struct report_inv_row *x = new_row(c, v, (int)e, spool_hot_estimate(&v->h, (int)e), n, t * mine / all);
		x->what = INV_ARGUMENT;
		x->time_from_stacks = c->tm.stacks;
		x->site = x->at;
		x->site_known = 1;
		x->site_image = v->image;
		x->site_vaddr = v->vaddr;
		x->insn = report_value_own(vm, strdup(in.text));
		if (placed) {
			name_callee(c, x, ci, cva);
			const struct report_value_proto *p = report_value_proto_of(vm, ci, cva, size_family(x->callee));
			name_param(c, x, p, v->kind);
			x->params = param_list(vm, p);
			if (v->kind == SPOOL_VK_ARG_FIRST + 2 &&
			    (size_family(x->callee) || (x->callee_impl && size_family(x->callee_impl))))
				x->what = INV_SIZE;
		} else {
			x->callee = "an unresolved callee";
			x->reg = report_value_arg_reg(v->kind);
		}
		keep(c, x);
	}
}

/* The target row of an indirect call or jump. */
static void target_row(struct ctx *c, const struct report_value_hot *v)
{
	struct report_value_model *vm = c->vm;
	struct report_value_insn in;
	if (!v->h.n)
		return;
	int dec = report_value_decode(vm, v->image, v->vaddr, &in) == 0;
	double t;
	if (dec && in.is_call)
		t = call_time(vm, &c->tm, v->image, v->vaddr + in.len);
	else
		t = (double)report_value_line_samples(vm, v);
	struct report_inv_row *x = new_row(c, v, 0, spool_hot_estimate(&v->h, 0), (double)v->h.vtot,
					   t / (double)(vm->total ? vm->total : 1));
	x->what = INV_TARGET;
	x->time_from_stacks = dec && in.is_call && c->tm.stacks;
	x->site = x->at;
	x->site_known = 1;
	x->site_image = v->image;
	x->site_vaddr = v->vaddr;
	x->insn = dec ? report_value_own(vm, strdup(in.text)) : NULL;
	uint32_t ci;
	uint64_t cva;
	if (report_value_code_place(vm, v->image, x->value, &ci, &cva) == 0) {
		const char *s = sym_at(vm, ci, cva);
		x->callee = s ? plain_name(vm, s) : NULL;
		x->callee_image = ci;
	}
	keep(c, x);
}

/* The call instruction that ends at a return address (as a hotlist of
 * image holder stores it): decoded back from the return address, the
 * call lengths x86-64 has. */
static void call_before(struct report_value_model *vm, uint32_t holder, uint64_t ret, uint32_t *image, uint64_t *va)
{
	static const int kLen[] = { 5, 2, 3, 6, 7, 4, 8, 9 };
	uint64_t ra;
	*va = 0;
	if (report_value_code_place(vm, holder, ret, image, &ra) < 0)
		return;
	for (size_t i = 0; i < sizeof(kLen) / sizeof(kLen[0]); i++) {
		struct report_value_insn in;
		if (ra > (uint64_t)kLen[i] && report_value_decode(vm, *image, ra - (uint64_t)kLen[i], &in) == 0 && in.is_call &&
		    in.len == (unsigned)kLen[i]) {
			*va = ra - (uint64_t)kLen[i];
			return;
		}
	}
	*va = ra - 1;   /* inside it, at least */
}

/* Operand rows of one hotlist: its top value, or per call site the top
 * value from that site, its share among the site's estimated samples:
 * from the PC's RETADDR hotlist where it has the site, else the sum of
 * the site's entries (an overestimate of the share: the site's rare
 * values are the ones the hotlist drops). */
static void operand_rows(struct ctx *c, const struct report_value_hot *v)
{
	struct report_value_model *vm = c->vm;
	double t = vm->total ? (double)report_value_line_samples(vm, v) / (double)vm->total : 0.0;
	struct report_value_insn in;
	const char *text = report_value_decode(vm, v->image, v->vaddr, &in) == 0 ? in.text : NULL;
	if (!report_value_kind_by_site(v->kind)) {
		struct report_inv_row *x = new_row(c, v, 0, spool_hot_estimate(&v->h, 0), (double)v->h.vtot, t);
		x->insn = text ? report_value_own(vm, strdup(text)) : NULL;
		keep(c, x);
		return;
	}
	for (uint32_t e = 0; e < v->h.n; e++) {
		double site_est = aux_group(&v->h, e);
		if (site_est < 0)
			continue;               /* not the site's top entry */
		double from_site = site_samples(vm, v, v->h.e[e].aux);
		if (from_site >= spool_hot_estimate(&v->h, (int)e))
			site_est = from_site;
		if (site_est < (double)c->op->min_vtot) {
			c->r->skipped++;
			continue;
		}
		struct report_inv_row *x = new_row(c, v, (int)e, spool_hot_estimate(&v->h, (int)e), site_est,
						   t * site_est / (double)v->h.vtot);
		x->site_known = report_value_site(vm, v->image, v->h.e[e].aux, &x->site) == 0;
		if (x->site_known) {
			x->site.proc = plain_name(vm, x->site.proc);
			call_before(vm, v->image, v->h.e[e].aux, &x->site_image, &x->site_vaddr);
		}
		x->insn = text ? report_value_own(vm, strdup(text)) : NULL;
		keep(c, x);
	}
}

/* ---- one finding, one row ---- */

static uint64_t row_site(const struct report_inv_row *x)
{
	return report_value_kind_by_site(x->v->kind) ? x->v->h.e[x->e].aux : 0;
}

/* An operand that is an argument the caller passed (e in power(x, e)),
 * or that the caller sets up for the call (`mov rdx, rax` before `call
 * memcpy`), is the argument row's finding, which names the call: the
 * operand rows go. A value that is 45% of an operand overall and 90% from one call
 * site is one finding, the call site's: a plain row goes when an @site row of
 * the same instruction and operand has the same value as often or more.
 * Then operand rows of one instruction with the same value from the same
 * site (a mov's source and result) are one finding: the heaviest stays,
 * naming the kinds. */
/* Does argument row b see the value as often as operand row a, within
 * a's sampling error? An operand row rests on fewer value samples than
 * the call's (a window records the mov that sets up memcpy's size only
 * when it starts just before it): 100% of 34 (89-100%) is as often as
 * 94% of several hundred. */
static int as_often(const struct report_inv_row *b, const struct report_inv_row *a)
{
	double floor = a->share_lo < a->share - 0.05 ? a->share_lo : a->share - 0.05;
	return b->share >= floor;
}

/* Is operand row a, an argument register read inside the callee, the
 * same finding as an argument row at its call (the same value, from
 * that call site or from no site in particular, as often or less)? */
static int explained_by_arg(struct report_value_model *vm, const struct report_inv_row *a, const struct report_inv_result *r)
{
	unsigned ak = report_value_argument(vm, a->v);
	uint64_t site = row_site(a);
	for (size_t j = 0; ak && j < r->n; j++) {
		const struct report_inv_row *b = &r->rows[j];
		uint32_t ii;
		uint64_t ra;
		if ((b->what != INV_ARGUMENT && b->what != INV_SIZE) || b->v->kind != ak ||
		    b->callee_image != a->v->image || b->callee_entry != a->v->w.start || b->value != a->value ||
		    !as_often(b, a))
			continue;
		if (!site)
			return 1;
		/* the @site row's return address ends b's call */
		struct report_value_insn in;
		if (report_value_code_place(vm, a->v->image, site, &ii, &ra) == 0 && ii == b->v->image &&
		    report_value_decode(vm, ii, b->v->vaddr, &in) == 0 && b->v->vaddr + in.len == ra)
			return 1;
	}
	return 0;
}

/* Does operand row a's instruction set up an argument row's call with
 * the same value (`mov rdx, rax` = 16 before `call memcpy`, whose size
 * row says 16), as often or less? The argument row names the call and
 * its callee's time: it is the finding. */
static int sets_arg(struct report_value_model *vm, const struct report_inv_row *a, const struct report_inv_result *r)
{
	for (size_t j = 0; j < r->n; j++) {
		const struct report_inv_row *b = &r->rows[j];
		if ((b->what != INV_ARGUMENT && b->what != INV_SIZE) || b->v->image != a->v->image ||
		    b->v->w.start != a->v->w.start || b->value != a->value || !as_often(b, a))
			continue;
		if (report_value_sets_argument(vm, a->v, b->v->vaddr) == b->v->kind)
			return 1;
	}
	return 0;
}

static void merge_rows(struct report_value_model *vm, struct report_inv_result *r)
{
	size_t m = 0;
	/* Operand rows of an instruction that sets up a call's argument go
	 * with its result row: (image, PC, value) of those found. */
	struct { uint32_t image; uint64_t vaddr, value; } *set = NULL;
	size_t nset = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct report_inv_row *a = &r->rows[i];
		if (a->what == INV_OPERAND && sets_arg(vm, a, r)) {
			set = xrealloc(set, (nset + 1) * sizeof(*set));
			set[nset].image = a->v->image;
			set[nset].vaddr = a->v->vaddr;
			set[nset++].value = a->value;
		}
	}
	for (size_t i = 0; i < r->n; i++) {
		const struct report_inv_row *a = &r->rows[i];
		int gone = a->what == INV_OPERAND && explained_by_arg(vm, a, r);
		for (size_t k = 0; k < nset && a->what == INV_OPERAND && !gone; k++)
			gone = set[k].image == a->v->image && set[k].vaddr == a->v->vaddr && set[k].value == a->value;
		if (gone)
			continue;
		r->rows[m++] = r->rows[i];
	}
	free(set);
	r->n = m;
	m = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct report_inv_row *a = &r->rows[i];
		int explained = 0;
		for (size_t j = 0; j < r->n && a->what == INV_OPERAND && !row_site(a) && !explained; j++) {
			const struct report_inv_row *b = &r->rows[j];
			explained = b->what == INV_OPERAND && row_site(b) && b->v->image == a->v->image &&
				    b->v->vaddr == a->v->vaddr && report_value_plain_kind(b->v->kind) == a->v->kind &&
				    b->value == a->value && b->share >= a->share;
		}
		if (!explained)
			r->rows[m++] = r->rows[i];
	}
	r->n = m;
	m = 0;
	for (size_t i = 0; i < r->n; i++) {
		struct report_inv_row *a = &r->rows[i];
		int gone = 0;
		char kinds[200];
		snprintf(kinds, sizeof(kinds), "%s", a->kinds);
		for (size_t j = 0; j < r->n && a->what == INV_OPERAND; j++) {
			const struct report_inv_row *b = &r->rows[j];
			if (j == i || b->what != INV_OPERAND || b->v->image != a->v->image ||
			    b->v->vaddr != a->v->vaddr || b->value != a->value || row_site(a) != row_site(b))
				continue;
			/* the heavier stays; on a tie, the earlier */
			if (b->weight > a->weight || (b->weight == a->weight && j < i))
				gone = 1;
			else if (!strstr(kinds, b->kinds) && strlen(kinds) + strlen(b->kinds) + 3 < sizeof(kinds)) {
				strcat(kinds, ", ");
				strcat(kinds, b->kinds);
			}
		}
		if (gone)
			continue;
		a->kinds = report_value_own(vm, strdup(kinds));
		r->rows[m++] = *a;
	}
	r->n = m;
}

static int by_weight(const void *a, const void *b)
{
	const struct report_inv_row *x = a, *y = b;
	if (x->weight != y->weight)
		return x->weight > y->weight ? -1 : 1;
	if (x->v->image != y->v->image)
		return x->v->image < y->v->image ? -1 : 1;
	if (x->v->vaddr != y->v->vaddr)
		return x->v->vaddr < y->v->vaddr ? -1 : 1;
	if (x->v->kind != y->v->kind)
		return x->v->kind < y->v->kind ? -1 : 1;
	return x->e - y->e;
}

/* ---- the sentence ---- */

/* "file.c:88": a sentence names the file by its base name (JSON has
 * the whole path); without a line, "proc+0x1a" of the address. */
static const char *src(const struct report_value_where *w, uint64_t vaddr, char *buf, size_t cap)
{
	if (!w->file) {
		if (vaddr >= w->start && vaddr - w->start < (1u << 24))
			snprintf(buf, cap, "%s+%#llx", w->proc, (unsigned long long)(vaddr - w->start));
		else
			snprintf(buf, cap, "%s", w->proc);
		return buf;
	}
	const char *s = strrchr(report_value_source(w, buf, cap), '/');
	if (s)
		memmove(buf, s + 1, strlen(s + 1) + 1);
	return buf;
}

static const char *pct(double f, char *buf, size_t cap)
{
	snprintf(buf, cap, f >= 0.095 ? "%.0f%%" : "%.1f%%", 100 * f);
	return buf;
}

static const char *ordinal(int n)
{
	static const char *const k[] = { "0th", "1st", "2nd", "3rd", "4th", "5th", "6th", "7th", "8th" };
	return n >= 0 && n <= 8 ? k[n] : "nth";
}

/* "the argument in xmm1 (the 2nd floating-point argument register)" */
static const char *reg_phrase(unsigned kind, char *buf, size_t cap)
{
	int xmm = report_value_kind_is_xmm_arg(kind);
	int n = (int)(kind - (xmm ? SPOOL_VK_ARG_XMM0 : SPOOL_VK_ARG_FIRST)) + 1;
	snprintf(buf, cap, "the argument in %s (%s %s argument)", report_value_arg_reg(kind), ordinal(n),
		 xmm ? "floating-point" : "integer");
	return buf;
}

static const char *size_verb(const char *fam)
{
	if (!strcmp(fam, "memset"))
		return "sets";
	if (!strcmp(fam, "memmove"))
		return "moves";
	if (!strcmp(fam, "memcmp") || !strcmp(fam, "bcmp"))
		return "compares";
	if (!strcmp(fam, "strncmp"))
		return "compares at most";
	return "copies";
}

/* "shade (pow.c:30)", or "sub_4710+0x2bb" without a line. */
static const char *in_proc(const struct report_value_where *w, uint64_t vaddr, char *buf, size_t cap)
{
	char sb[600];
	if (!w->file)
		return src(w, vaddr, buf, cap);
	snprintf(buf, cap, "%s (%s)", w->proc, src(w, vaddr, sb, sizeof(sb)));
	return buf;
}

/* "at copy.c:31 (in copy_records)", or "at sub_4710+0x2bb". */
static const char *at_line(const struct report_value_where *w, uint64_t vaddr, char *buf, size_t cap)
{
	char sb[600];
	if (!w->file)
		snprintf(buf, cap, "at %s", src(w, vaddr, sb, sizeof(sb)));
	else
		snprintf(buf, cap, "at %s (in %s)", src(w, vaddr, sb, sizeof(sb)), w->proc);
	return buf;
}

static void sentence(struct report_value_model *vm, struct report_inv_row *x)
{
	char out[1400], sh[64], tb[32], sb[700], sb2[700], rp[120], who[300];
	const char *val = x->report_value_text ? x->report_value_text : "?";
	report_inv_share_text(x, sh, sizeof(sh));
	pct(x->time, tb, sizeof(tb));
	switch (x->what) {
	case INV_ARGUMENT: {
		const char *name = x->param ? x->param : reg_phrase(x->v->kind, rp, sizeof(rp));
		if (x->callee_impl)
			snprintf(who, sizeof(who), "%s (%s)", x->callee, x->callee_impl);
		else
			snprintf(who, sizeof(who), "%s", x->callee);
		snprintf(out, sizeof(out), "%s(%s): %s = %s in %s of calls from %s; %s and what it calls: %s of the time",
			 x->callee, x->params ? x->params : "...", name, val, sh,
			 in_proc(&x->site, x->site_vaddr, sb, sizeof(sb)), who, tb);
		break;
	}
	case INV_SIZE: {
		const char *fam = size_family(x->callee) ? size_family(x->callee) : size_family(x->callee_impl);
		char n[80];
		snprintf(n, sizeof(n), "%s", val);
		char *paren = strstr(n, " (0x");
		if (paren)
			*paren = 0;   /* a size reads best in decimal alone */
		if (x->callee_impl)
			snprintf(who, sizeof(who), " (to %s)", x->callee_impl);
		else
			who[0] = 0;
		snprintf(out, sizeof(out), "%s %s %s %s bytes in %s of calls: a fixed-size %s there can be inlined; these calls%s take %s of the time",
			 x->callee, at_line(&x->site, x->site_vaddr, sb, sizeof(sb)), size_verb(fam ? fam : "memcpy"), n,
			 sh, fam ? fam : x->callee, who, tb);
		break;
	}
	case INV_TARGET: {
		int call = x->insn && !strncmp(x->insn, "call", 4);
		snprintf(out, sizeof(out), "the indirect %s %s goes to %s in %s of %s: %s; %s of the time",
			 call ? "call" : "jump", at_line(&x->site, x->site_vaddr, sb, sizeof(sb)),
			 x->callee ? x->callee : val, sh, call ? "calls" : "its time",
			 call ? "promote it (test for that target and call it directly, or inline it)"
			      : "test for that target before the jump",
			 tb);
		break;
	}
	default: {
		unsigned pk = report_value_plain_kind(x->v->kind);
		unsigned ak = report_value_argument(vm, x->v);
		const char *caller = x->at.proc;
		char what[300];
		if (ak) {
			const struct report_value_proto *p = report_value_proto_of(vm, x->v->image, x->v->w.start, NULL);
			const struct report_value_param *pa = report_value_proto_param(p, ak);
			if (pa && pa->name[0]) {
				snprintf(what, sizeof(what), "%s (argument %d of %s)", pa->name, pa->number, caller);
				x->argno = pa->number;
				x->param = report_value_own(vm, strdup(pa->name));
				x->param_type = pa->type[0] ? report_value_own(vm, strdup(pa->type)) : NULL;
			} else {
				snprintf(what, sizeof(what), "%s of %s", reg_phrase(ak, rp, sizeof(rp)), caller);
			}
			x->reg = report_value_arg_reg(ak);
		} else {
			snprintf(what, sizeof(what), "%s",
				 pk == SPOOL_VK_RESULT ? "the result" : pk == SPOOL_VK_SRC1 ? "the first operand"
				 : pk == SPOOL_VK_SRC2 ? "the second operand" : pk == SPOOL_VK_ADDR ? "the address"
				 : pk == SPOOL_VK_STRIDE ? "the stride" : spool_hot_kind_name(pk));
		}
		char from[800] = "";
		if (report_value_kind_by_site(x->v->kind)) {
			if (!x->site_known)
				snprintf(from, sizeof(from), " from an unresolved call site");
			else if (x->site.file)
				snprintf(from, sizeof(from), " from %s", in_proc(&x->site, x->site_vaddr, sb2, sizeof(sb2)));
			else
				snprintf(from, sizeof(from), " from the call at %s", src(&x->site, x->site_vaddr, sb2, sizeof(sb2)));
		}
		snprintf(out, sizeof(out), "%s of `%s` in %s is %s in %s of its time%s; that %s takes %s of the time",
			 what, x->insn ? x->insn : "?", in_proc(&x->at, x->v->vaddr, sb, sizeof(sb)), val, sh, from,
			 x->at.file ? "line" : "instruction", tb);
		if (pk == SPOOL_VK_ADDR)
			strncat(out, ": the same location each time, keep it in a register", sizeof(out) - strlen(out) - 1);
		else if (pk == SPOOL_VK_STRIDE)
			strncat(out, ": a constant stride, prefetchable", sizeof(out) - strlen(out) - 1);
	}
	}
	x->sentence = report_value_own(vm, strdup(out));
}

/* How much of the run's time has value samples enough to rank: the share
 * of the main event's samples whose PC has an operand hotlist with at
 * least min_vtot value samples at it or in the 32 bytes before it (the
 * instructions a sample's time belongs to, as windows record them). Says
 * whether a run was long enough. vm->hot is sorted by image and vaddr. */
static double coverage(const struct report_value_model *vm, uint64_t min_vtot)
{
	uint64_t covered = 0, total = 0;
	for (size_t i = 0; i < vm->m.npcs; i++) {
		const struct report_model_pc *pc = &vm->m.pcs[i];
		if (pc->event != vm->ev)
			continue;
		total += pc->count;
		size_t lo = 0, hi = vm->nhot;
		uint64_t from = pc->vaddr >= 32 ? pc->vaddr - 32 : 0;
		while (lo < hi) {   /* the first hotlist at (image, >= from) */
			size_t mid = (lo + hi) / 2;
			const struct report_value_hot *v = &vm->hot[mid];
			if (v->image < pc->image || (v->image == pc->image && v->vaddr < from))
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t j = lo; j < vm->nhot; j++) {
			const struct report_value_hot *v = &vm->hot[j];
			if (v->image != pc->image || v->vaddr > pc->vaddr)
				break;
			if (v->kind >= SPOOL_VK_RESULT && v->kind <= SPOOL_VK_ADDR && v->h.vtot >= min_vtot) {
				covered += pc->count;
				break;
			}
		}
	}
	return total ? (double)covered / (double)total : 0.0;
}

int report_inv_rank(struct report_value_model *vm, const struct report_inv_opts *op, struct report_inv_result *r)
{
	struct ctx c = { .vm = vm, .op = op, .r = r };
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		/* Latencies are `vprof latency`'s; return addresses are the
		 * call-site shares the @site kinds are measured against;
		 * branch records are `vprof branches`' and export's, cache
		 * outcomes `vprof memory`'s. */
		if (report_value_kind_is_latency(v->kind) || v->kind == SPOOL_VK_RETADDR ||
		    spool_hot_kind_is_record(v->kind) || !v->h.n)
			continue;
		r->considered++;
		if (v->h.vtot < op->min_vtot) {
			r->skipped++;
			continue;
		}
		if (report_value_kind_is_arg(v->kind))
			arg_rows(&c, v);
		else if (v->kind == SPOOL_VK_TARGET)
			target_row(&c, v);
		else
			operand_rows(&c, v);
	}
	merge_rows(vm, r);
	hide(op, r);
	qsort(r->rows, r->n, sizeof(*r->rows), by_weight);
	for (size_t i = 0; i < r->n; i++)
		sentence(vm, &r->rows[i]);
	r->stacks = c.tm.built && c.tm.stacks;
	r->covered = coverage(vm, op->min_vtot);
	tmodel_free(&c.tm);
	return 0;
}

void report_inv_result_free(struct report_inv_result *r)
{
	free(r->rows);
	memset(r, 0, sizeof(*r));
}
