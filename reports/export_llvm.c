/*
 * export_llvm.c — the branch records of `vprof run --branches` as an LLVM
 * sample profile (text form), for one binary, from its DWARF:
 *
 *   FUNCTION:TOTAL:HEAD
 *    OFFSET[.DISCRIMINATOR]: COUNT [CALLEE:COUNT ...]
 *    OFFSET[.DISCRIMINATOR]: INLINED_CALLEE:TOTAL
 *     OFFSET[.DISCRIMINATOR]: COUNT ...
 *
 * An instruction's count is the sum of the ranges (run straight through
 * between two taken branches) that hold it, times the duplication factor
 * its discriminator carries (unrolled copies); a source location's is the
 * largest over its instructions, as AutoFDO counts. A location is its
 * line less its function's first line (DW_AT_decl_line, as LLVM's
 * DISubprogram line), with the base discriminator LLVM decodes from the
 * DWARF one; code inlined into a function sits under the call site
 * (DW_AT_call_line, its discriminator) and the inlined function's name,
 * nested as deep as the inlining. Names are linkage names where DWARF
 * has them (C++), else the name (C). Call targets come from the taken
 * branches at a location that go to the first byte of a function of the
 * binary or another (a PLT stub counts as its function), and value
 * sampling's indirect-call targets where there is no such record. HEAD
 * is the count at the function's first instruction. Without branch
 * records the counts are
 * the PC samples of each line-table row's instructions (sampling FDO
 * without an LBR).
 */
#include "reports/export.h"
#include "reports/value_model.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef DW_AT_GNU_discriminator
#define DW_AT_GNU_discriminator 0x2136   /* an inlined call site's discriminator (GCC, clang) */
#endif

struct row {
	uint64_t addr;
	int line;
	unsigned disc;
	Dwarf_Off cu;                /* the CU DIE's offset */
	uint64_t count;
};

struct target {
	char *name;
	uint64_t count;
};

struct body {
	unsigned off, disc;
	uint64_t count;
	struct target *t;
	size_t nt;
};

struct fs {                          /* one function's samples (LLVM FunctionSamples) */
	char *name;
	int decl_line;
	unsigned site_off, site_disc;    /* an inlined one: its call site in the parent */
	struct body *b;
	size_t nb;
	struct fs **kids;
	size_t nkids;
	uint64_t head, total;
};

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1))) {
		perror("vprof export");
		exit(1);
	}
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");
	if (!d) {
		perror("vprof export");
		exit(1);
	}
	return d;
}

/* LLVM's base discriminator of an encoded DWARF one
 * (llvm/Support/Discriminator.h, getUnsignedFromPrefixEncoding). */
static unsigned base_disc(unsigned d)
{
	if (d & 1)
		return 0;
	d >>= 1;
	return (d & 0x20) ? (((d >> 1) & 0xfe0) | (d & 0x1f)) : (d & 0x1f);
}

/* LLVM's duplication factor of an encoded discriminator (the copies an
 * unroller or vectorizer made of the code: a count of one copy stands for
 * that many executions; getDuplicationFactorFromDiscriminator). */
static unsigned dup_factor(unsigned d)
{
	unsigned next = (d & 1) == 0 ? d >> ((d & 0x40) ? 14 : 7) : d >> 1;
	unsigned f = base_disc(next);
	return f ? f : 1;
}

static const char *die_fn_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	const char *n = NULL;
	if (dwarf_attr_integrate(d, DW_AT_linkage_name, &a) || dwarf_attr_integrate(d, DW_AT_MIPS_linkage_name, &a))
		n = dwarf_formstring(&a);
	return n ? n : dwarf_diename(d);
}

static int die_decl_line(Dwarf_Die *d)
{
	int l = 0;
	return dwarf_decl_line(d, &l) == 0 ? l : 0;
}

static unsigned udata(Dwarf_Die *d, int at)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	if (dwarf_attr(d, at, &a))
		dwarf_formudata(&a, &w);
	return (unsigned)w;
}

/* A name to write: no spaces or colons (the format's separators), no
 * "@plt". */
static char *clean_name(const char *s)
{
	char *d = xstrdup(s), *at = strstr(d, "@plt");
	if (at)
		*at = 0;
	for (char *p = d; *p; p++)
		if (*p == ' ' || *p == ':')
			*p = '_';
	return d;
}

static void fs_free(struct fs *s)
{
	for (size_t i = 0; i < s->nb; i++) {
		for (size_t t = 0; t < s->b[i].nt; t++)
			free(s->b[i].t[t].name);
		free(s->b[i].t);
	}
	for (size_t i = 0; i < s->nkids; i++)
		fs_free(s->kids[i]);
	free(s->b);
	free(s->kids);
	free(s->name);
	free(s);
}

static struct fs *fs_new(const char *name, int decl_line)
{
	struct fs *f = calloc(1, sizeof(*f));
	if (!f) {
		perror("vprof export");
		exit(1);
	}
	f->name = clean_name(name);
	f->decl_line = decl_line;
	return f;
}

static struct fs *kid(struct fs *p, unsigned off, unsigned disc, const char *name, int decl_line)
{
	struct fs *k = fs_new(name, decl_line);
	for (size_t i = 0; i < p->nkids; i++)
		if (p->kids[i]->site_off == off && p->kids[i]->site_disc == disc && !strcmp(p->kids[i]->name, k->name)) {
			fs_free(k);
			return p->kids[i];
		}
	k->site_off = off;
	k->site_disc = disc;
	p->kids = xrealloc(p->kids, (p->nkids + 1) * sizeof(*p->kids));
	p->kids[p->nkids++] = k;
	return k;
}

static struct body *body_at(struct fs *f, unsigned off, unsigned disc)
{
	for (size_t i = 0; i < f->nb; i++)
		if (f->b[i].off == off && f->b[i].disc == disc)
			return &f->b[i];
	f->b = xrealloc(f->b, (f->nb + 1) * sizeof(*f->b));
	f->b[f->nb] = (struct body){ .off = off, .disc = disc };
	return &f->b[f->nb++];
}

struct ctx {
	Dwarf *dw;
	struct fs **top;
	size_t ntop;
};

static struct fs *top_fn(struct ctx *c, const char *name, int decl_line)
{
	struct fs *f = fs_new(name, decl_line);
	for (size_t i = 0; i < c->ntop; i++)
		if (!strcmp(c->top[i]->name, f->name)) {
			fs_free(f);
			return c->top[i];
		}
	c->top = xrealloc(c->top, (c->ntop + 1) * sizeof(*c->top));
	return c->top[c->ntop++] = f;
}

/* The samples node of the location of r (its function, through its
 * inline chain) and the body key there; NULL when DWARF has no function
 * at r. *fn_entry: the outer function's first byte, *top its samples. */
static struct fs *locate(struct ctx *c, const struct row *r, unsigned *off, unsigned *disc, uint64_t *fn_entry,
			 struct fs **top)
{
	Dwarf_Die cu, *inner = NULL, *scopes = NULL;
	if (!dwarf_offdie(c->dw, r->cu, &cu))
		return NULL;
	/* dwarf_getscopes gives, past an inlined instance, the scopes of its
	 * abstract definition; the code it was inlined into is the nesting
	 * of the innermost DIE itself. */
	int n = dwarf_getscopes(&cu, r->addr, &inner);
	if (n > 0)
		n = dwarf_getscopes_die(&inner[0], &scopes);
	free(inner);
	int outer = -1;
	for (int i = 0; i < n; i++)
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			outer = i;
	if (outer < 0) {
		free(scopes);
		return NULL;
	}
	Dwarf_Addr lo = 0;
	dwarf_lowpc(&scopes[outer], &lo);
	*fn_entry = lo;
	const char *name = die_fn_name(&scopes[outer]);
	struct fs *f = top_fn(c, name ? name : "?", die_decl_line(&scopes[outer]));
	*top = f;
	/* Inlined frames, outermost first: each one's call site is a
	 * location in the frame around it. */
	for (int i = outer - 1; i >= 0; i--) {
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		int call_line = (int)udata(&scopes[i], DW_AT_call_line);
		unsigned cd = base_disc(udata(&scopes[i], DW_AT_GNU_discriminator));
		const char *callee = die_fn_name(&scopes[i]);
		f = kid(f, (unsigned)(call_line - f->decl_line) & 0xffff, cd, callee ? callee : "?",
			die_decl_line(&scopes[i]));
	}
	*off = (unsigned)(r->line - f->decl_line) & 0xffff;
	*disc = base_disc(r->disc);
	free(scopes);
	return f;
}

/* The row holding addr: the last at or before it; nrows when none is. */
static size_t row_at(const struct row *rows, size_t nrows, uint64_t addr)
{
	size_t lo = 0, hi = nrows;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : nrows;
}

static int by_addr(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

struct ev {
	uint64_t addr;
	int64_t delta;
};

static int by_ev(const void *a, const void *b)
{
	const struct ev *x = a, *y = b;
	return (x->addr > y->addr) - (x->addr < y->addr);
}

static uint64_t sum(struct fs *f)
{
	uint64_t t = 0;
	for (size_t i = 0; i < f->nb; i++)
		t += f->b[i].count;
	for (size_t i = 0; i < f->nkids; i++)
		t += sum(f->kids[i]);
	return f->total = t;
}

static int by_total(const void *a, const void *b)
{
	const struct fs *x = *(struct fs *const *)a, *y = *(struct fs *const *)b;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return strcmp(x->name, y->name);
}

static void loc(FILE *f, unsigned off, unsigned disc)
{
	if (disc)
		fprintf(f, "%u.%u: ", off, disc);
	else
		fprintf(f, "%u: ", off);
}

static void write_fs(FILE *f, const struct fs *s, int depth)
{
	for (size_t i = 0; i < s->nb; i++) {
		const struct body *b = &s->b[i];
		fprintf(f, "%*s", depth + 1, "");
		loc(f, b->off, b->disc);
		fprintf(f, "%llu", (unsigned long long)b->count);
		for (size_t t = 0; t < b->nt; t++)
			fprintf(f, " %s:%llu", b->t[t].name, (unsigned long long)b->t[t].count);
		fputc('\n', f);
	}
	for (size_t i = 0; i < s->nkids; i++) {
		const struct fs *k = s->kids[i];
		if (!k->total)
			continue;
		fprintf(f, "%*s", depth + 1, "");
		loc(f, k->site_off, k->site_disc);
		fprintf(f, "%s:%llu\n", k->name, (unsigned long long)k->total);
		write_fs(f, k, depth + 1);
	}
}


int report_export_llvm_sample(struct report_value_model *vm, const char *binary, FILE *out)
{
	long ii = report_export_image_of(&vm->m, binary);
	if (ii < 0)
		return -ENOENT;
	int fd = open(binary, O_RDONLY | O_CLOEXEC);
	Dwarf *dw = fd >= 0 ? dwarf_begin(fd, DWARF_C_READ) : NULL;
	if (!dw) {
		fprintf(stderr, "vprof export: %s: no DWARF debugging information (build with -g; for sample "
			"PGO, -g -fdebug-info-for-profiling)\n", binary);
		if (fd >= 0)
			close(fd);
		return -ENODATA;
	}
	/* Every line-table row of the binary. */
	struct row *rows = NULL;
	size_t nrows = 0, cap = 0;
	Dwarf_Off off = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		Dwarf_Lines *lines;
		size_t nl;
		if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_getsrclines(&cu, &lines, &nl) == 0) {
			for (size_t i = 0; i < nl; i++) {
				Dwarf_Line *l = dwarf_onesrcline(lines, i);
				Dwarf_Addr a;
				int ln;
				bool end = false;
				unsigned d = 0;
				if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &ln) || dwarf_lineendsequence(l, &end) ||
				    end || ln <= 0)
					continue;
				dwarf_linediscriminator(l, &d);
				if (nrows == cap)
					rows = xrealloc(rows, (cap = cap ? 2 * cap : 4096) * sizeof(*rows));
				rows[nrows++] = (struct row){ a, ln, d, off + hsize, 0 };
			}
		}
		off = next;
	}
	qsort(rows, nrows, sizeof(*rows), by_addr);
	/* Counts per row: the ranges holding its address, by a sweep. */
	struct report_code_pair *rg;
	size_t nranges = report_value_code_pairs(vm, (uint32_t)ii, SPOOL_VK_RANGE, &rg), nev = 0;
	struct ev *ev = xrealloc(NULL, 2 * nranges * sizeof(*ev));
	for (size_t i = 0; i < nranges; i++) {
		int64_t c = (int64_t)(rg[i].est + 0.5);
		ev[nev++] = (struct ev){ rg[i].from, c };
		ev[nev++] = (struct ev){ rg[i].to + 1, -c };
	}
	free(rg);
	qsort(ev, nev, sizeof(*ev), by_ev);
	int64_t level = 0;
	for (size_t r = 0, k = 0; r < nrows; r++) {
		while (k < nev && ev[k].addr <= rows[r].addr)
			level += ev[k++].delta;
		rows[r].count = level > 0 ? (uint64_t)level : 0;
	}
	/* Without branch records, the PC samples of the main event: where
	 * the time went, as sampling FDO without an LBR has it (a row counts
	 * the samples of its instructions). */
	unsigned pcev = report_model_main_event(&vm->m, 0);
	for (size_t i = 0; !nranges && i < vm->m.npcs; i++) {
		const struct report_model_pc *pc = &vm->m.pcs[i];
		if (pc->event != pcev || pc->image != (uint32_t)ii)
			continue;
		size_t r = row_at(rows, nrows, pc->vaddr);
		if (r < nrows)
			rows[r].count += pc->count;
	}
	struct ctx c = { .dw = dw };
	for (size_t r = 0; r < nrows; r++) {
		if (!rows[r].count)
			continue;
		unsigned o, d;
		uint64_t entry = 0;
		struct fs *top, *f = locate(&c, &rows[r], &o, &d, &entry, &top);
		if (!f)
			continue;
		struct body *b = body_at(f, o, d);
		uint64_t n = rows[r].count * dup_factor(rows[r].disc);
		if (n > b->count)
			b->count = n;
		if (rows[r].addr == entry && rows[r].count > top->head)
			top->head = rows[r].count;
	}
	/* Call targets: taken branches to a function's first byte, in this
	 * image or another (a call through the GOT), and the targets value
	 * sampling keeps of indirect calls and jumps (--values) where there is
	 * no taken-branch record: what clang promotes indirect calls from. */
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		if ((v->kind != SPOOL_VK_TAKEN && v->kind != SPOOL_VK_TARGET) || v->image != (uint32_t)ii)
			continue;
		if (v->kind == SPOOL_VK_TARGET && report_value_hot_find(vm, v->image, v->vaddr, SPOOL_VK_TAKEN))
			continue;
		for (uint32_t e = 0; e < v->h.n; e++) {
			uint64_t to = v->h.e[e].value, tva;
			uint32_t timg;
			struct report_value_where tw = { 0 };
			if (report_value_code_place(vm, (uint32_t)ii, to, &timg, &tva) < 0)
				continue;
			report_value_where(vm, timg, tva, &tw);
			/* the symbol-table name (mangled, as LLVM's profiles name
			 * functions), at a function's first byte: else a jump */
			const char *tn = tw.sysname && *tw.sysname ? tw.sysname : tw.proc;
			if (!tn || !*tn || tw.start != tva || !strncmp(tn, "sub_", 4) || *tn == '[')
				continue;
			to = timg == (uint32_t)ii ? tva : 0;
			size_t r = row_at(rows, nrows, v->vaddr);
			if (r == nrows)
				continue;
			struct row at = rows[r];
			at.addr = v->vaddr;
			unsigned o, d;
			uint64_t entry;
			struct fs *top, *f = locate(&c, &at, &o, &d, &entry, &top);
			if (!f || entry == to)
				continue;   /* a jump to its own start is a loop, not a call */
			struct body *b = body_at(f, o, d);
			char *name = clean_name(tn);
			size_t t;
			for (t = 0; t < b->nt && strcmp(b->t[t].name, name); t++)
				;
			if (t == b->nt) {
				b->t = xrealloc(b->t, (b->nt + 1) * sizeof(*b->t));
				b->t[b->nt++] = (struct target){ name, 0 };
			} else {
				free(name);
			}
			b->t[t].count += (uint64_t)(spool_hot_estimate(&v->h, (int)e) + 0.5);
		}
	}
	for (size_t i = 0; i < c.ntop; i++)
		sum(c.top[i]);
	qsort(c.top, c.ntop, sizeof(*c.top), by_total);
	size_t written = 0;
	for (size_t i = 0; i < c.ntop; i++) {
		if (!c.top[i]->total)
			continue;
		fprintf(out, "%s:%llu:%llu\n", c.top[i]->name, (unsigned long long)c.top[i]->total,
			(unsigned long long)c.top[i]->head);
		write_fs(out, c.top[i], 0);
		written++;
	}
	for (size_t i = 0; i < c.ntop; i++)
		fs_free(c.top[i]);
	free(c.top);
	free(ev);
	free(rows);
	dwarf_end(dw);
	close(fd);
	if (!nranges)
		fprintf(stderr, "vprof export: %s: no branch records in %s epoch %s (vprof run --branches records "
			"them): the counts are PC samples, where the time went, not executions\n", binary, vm->m.db,
			vm->m.epoch);
	if (!written)
		fprintf(stderr, "vprof export: %s: no counted instruction has a DWARF line: the profile is empty\n",
			binary);
	return 0;
}
