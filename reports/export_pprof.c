/*
 * export_pprof.c — the model as pprof's profile.proto, encoded by
 * protobuf-c (code generated from reports/proto/profile.proto at build
 * time) and gzipped by zlib, as pprof reads it.
 *
 * Shape: one Mapping per image (memory_start 0, addresses are the ELF
 * virtual addresses the profile keeps, so tools that look at the binary
 * find the same bytes), one Location per sampled PC with one Line, one
 * Function per (image, procedure), one Sample per Location. The string
 * table is filled through a pointer-keyed map: the model interns its
 * strings, so equal strings are equal pointers. Everything is built in
 * arrays sized up front from the PC count, then packed once.
 */
#include "reports/export.h"
#include "merge/code.h"
#include "reports/stack_model.h"
#include "reports/value_model.h"

#include "profile.pb-c.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

typedef Perftools__Profiles__Profile Profile;
typedef Perftools__Profiles__Sample Sample;
typedef Perftools__Profiles__Location Location;
typedef Perftools__Profiles__Line Line;
typedef Perftools__Profiles__Function Function;
typedef Perftools__Profiles__Mapping Mapping;
typedef Perftools__Profiles__ValueType ValueType;
typedef Perftools__Profiles__Label Label;

struct strings {
	char **v;               /* the string table; v[0] is "" */
	size_t n;
	struct { const char *key; size_t idx; } *map;
	size_t cap;             /* power of two, at least twice n */
	size_t vcap;            /* room in v (0: as sized up front, never grown) */
};

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);
	if (!p) {
		perror("vprof export");
		exit(1);
	}
	return p;
}

/* Room for one more string: the table and its map grow (value labels are
 * added after the arrays sized up front). */
static void str_room(struct strings *t)
{
	if (t->vcap && t->n + 1 >= t->vcap) {
		t->vcap *= 2;
		char **v = realloc(t->v, t->vcap * sizeof(*v));
		if (!v) {
			perror("vprof export");
			exit(1);
		}
		t->v = v;
	}
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap * 2, mask = cap - 1;
		__typeof__(t->map) map = calloc(cap, sizeof(*map));
		if (!map) {
			perror("vprof export");
			exit(1);
		}
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->map[i].key)
				continue;
			size_t h = ((uintptr_t)t->map[i].key >> 3) * 0x9e3779b97f4a7c15ull & mask;
			while (map[h].key)
				h = (h + 1) & mask;
			map[h] = t->map[i];
		}
		free(t->map);
		t->map = map;
		t->cap = cap;
	}
}

/* The string-table index of s (NULL counts as ""). */
static int64_t str_idx(struct strings *t, const char *s)
{
	if (!s || !*s)
		return 0;
	str_room(t);
	size_t mask = t->cap - 1, h = ((uintptr_t)s >> 3) * 0x9e3779b97f4a7c15ull & mask;
	for (; t->map[h].key; h = (h + 1) & mask)
		if (t->map[h].key == s)
			return (int64_t)t->map[h].idx;
	t->map[h].key = s;
	t->map[h].idx = t->n;
	t->v[t->n] = (char *)s;
	return (int64_t)t->n++;
}

static int write_gzip(const char *path, const uint8_t *buf, size_t len)
{
	gzFile g = gzopen(path, "wb");
	if (!g) {
		int err = errno ? -errno : -ENOMEM;
		fprintf(stderr, "vprof export: %s: %s\n", path, strerror(-err));
		return err;
	}
	int ok = gzwrite(g, buf, (unsigned)len) == (int)len;
	if (gzclose(g) != Z_OK || !ok) {
		fprintf(stderr, "vprof export: %s: write failed\n", path);
		unlink(path);
		return -EIO;
	}
	return 0;
}

/* A (key, index) table for locations and functions of the stacks. */
struct idmap {
	struct { uint64_t a; const void *b; size_t idx; } *v;
	size_t cap;
};

static size_t *id_slot(struct idmap *t, uint64_t a, const void *b, int *fresh)
{
	size_t mask = t->cap - 1, h = (a * 0x9e3779b97f4a7c15ull ^ (uintptr_t)b) * 0xbf58476d1ce4e5b9ull;
	for (h &= mask; t->v[h].b; h = (h + 1) & mask)
		if (t->v[h].a == a && t->v[h].b == b) {
			*fresh = 0;
			return &t->v[h].idx;
		}
	t->v[h].a = a;
	t->v[h].b = b;
	*fresh = 1;
	return &t->v[h].idx;
}

/* Allocations of the value samples, freed after packing. */
struct extra {
	void **p;
	size_t n, cap;
};

static void *keep(struct extra *x, void *p)
{
	if (x->n == x->cap) {
		x->cap = x->cap ? 2 * x->cap : 32;
		void **v = realloc(x->p, x->cap * sizeof(*v));
		if (!v) {
			perror("vprof export");
			exit(1);
		}
		x->p = v;
	}
	return x->p[x->n++] = p;
}

static void extra_free(struct extra *x)
{
	for (size_t i = 0; i < x->n; i++)
		free(x->p[i]);
	free(x->p);
}

static char *xstrdup(struct extra *x, const char *s)
{
	char *d = strdup(s);
	if (!d) {
		perror("vprof export");
		exit(1);
	}
	return keep(x, d);
}

/* Value hotlists (vprof run --values) as samples of a third type,
 * value_samples: one Sample per hotlist entry at its instruction (a
 * Location added per hotlist, with its function and line), valued by the
 * entry's estimated count and labelled value_kind (src2@site, ...), value
 * (as vprof prints it) and, for the @site kinds, site (the call's
 * file:line). The other types are 0 there, so the profile's time is
 * unchanged; `go tool pprof -sample_index=value_samples -tags` lists the
 * values, -tagfocus selects them. */
static void add_values(Profile *prof, struct strings *t, struct report_value_model *vm, struct extra *x)
{
	size_t nv = 0, nh = 0;
	for (size_t i = 0; i < vm->nhot; i++)
		if (vm->hot[i].h.n) {
			nh++;
			nv += vm->hot[i].h.n;
		}
	if (!nv)
		return;
	size_t ns = prof->n_sample, nl = prof->n_location, nf = prof->n_function, nt = prof->n_sample_type;
	ValueType **vtp = keep(x, xcalloc(nt + 1, sizeof(*vtp)));
	ValueType *vt = keep(x, xcalloc(1, sizeof(*vt)));
	memcpy(vtp, prof->sample_type, nt * sizeof(*vtp));
	perftools__profiles__value_type__init(vt);
	vt->type = str_idx(t, "value_samples");
	vt->unit = str_idx(t, "count");
	vtp[nt] = vt;
	int64_t *vals = keep(x, xcalloc((ns + nv) * (nt + 1), sizeof(*vals)));
	for (size_t i = 0; i < ns; i++) {
		memcpy(&vals[i * (nt + 1)], prof->sample[i]->value, nt * sizeof(*vals));
		prof->sample[i]->value = &vals[i * (nt + 1)];
		prof->sample[i]->n_value = nt + 1;
	}
	Sample **sp = keep(x, xcalloc(ns + nv, sizeof(*sp)));
	Location **lp = keep(x, xcalloc(nl + nh, sizeof(*lp)));
	Function **fp = keep(x, xcalloc(nf + nh, sizeof(*fp)));
	memcpy(sp, prof->sample, ns * sizeof(*sp));
	memcpy(lp, prof->location, nl * sizeof(*lp));
	memcpy(fp, prof->function, nf * sizeof(*fp));
	Location *locs = keep(x, xcalloc(nh, sizeof(*locs)));
	Line *lines = keep(x, xcalloc(nh, sizeof(*lines)));
	Line **linep = keep(x, xcalloc(nh, sizeof(*linep)));
	Function *fns = keep(x, xcalloc(nh, sizeof(*fns)));
	uint64_t *locids = keep(x, xcalloc(nh, sizeof(*locids)));
	Sample *smp = keep(x, xcalloc(nv, sizeof(*smp)));
	Label *labels = keep(x, xcalloc(3 * nv, sizeof(*labels)));
	Label **labp = keep(x, xcalloc(3 * nv, sizeof(*labp)));
	int64_t kkind = str_idx(t, "value_kind"), kval = str_idx(t, "value"), ksite = str_idx(t, "site");
	size_t h = 0, k = 0;
	for (size_t i = 0; i < vm->nhot; i++) {
		struct report_value_hot *v = &vm->hot[i];
		if (!v->h.n)
			continue;
		Function *f = &fns[h];
		perftools__profiles__function__init(f);
		f->id = nf + h + 1;
		f->name = str_idx(t, v->w.proc);
		f->system_name = str_idx(t, v->w.sysname);
		f->filename = str_idx(t, v->w.file);
		perftools__profiles__line__init(&lines[h]);
		lines[h].function_id = f->id;
		lines[h].line = v->w.line;
		linep[h] = &lines[h];
		Location *l = &locs[h];
		perftools__profiles__location__init(l);
		l->id = nl + h + 1;
		l->mapping_id = v->image + 1;
		l->address = v->vaddr;
		l->n_line = 1;
		l->line = &linep[h];
		locids[h] = l->id;
		lp[nl + h] = l;
		fp[nf + h] = f;
		int64_t kname = str_idx(t, spool_hot_kind_name(v->kind));
		for (uint32_t j = 0; j < v->h.n; j++, k++) {
			char vb[160], sb[600];
			struct report_value_where w;
			Sample *s = &smp[k];
			Label *lb = &labels[3 * k];
			perftools__profiles__sample__init(s);
			s->n_location_id = 1;
			s->location_id = &locids[h];
			s->n_value = nt + 1;
			s->value = &vals[(ns + k) * (nt + 1)];
			s->value[nt] = (int64_t)(spool_hot_estimate(&v->h, (int)j) + 0.5);
			for (int q = 0; q < 3; q++) {
				perftools__profiles__label__init(&lb[q]);
				labp[3 * k + q] = &lb[q];
			}
			lb[0].key = kkind;
			lb[0].str = kname;
			lb[1].key = kval;
			lb[1].str = str_idx(t, xstrdup(x, report_value_text(vm, v, j, vb, sizeof(vb))));
			s->n_label = 2;
			s->label = &labp[3 * k];
			if (report_value_kind_by_site(v->kind) && report_value_site(vm, v->image, v->h.e[j].aux, &w) == 0) {
				lb[2].key = ksite;
				lb[2].str = str_idx(t, xstrdup(x, report_value_source(&w, sb, sizeof(sb))));
				s->n_label = 3;
			}
			sp[ns + k] = s;
		}
		h++;
	}
	prof->sample_type = vtp;
	prof->n_sample_type = nt + 1;
	prof->sample = sp;
	prof->n_sample = ns + nv;
	prof->location = lp;
	prof->n_location = nl + nh;
	prof->function = fp;
	prof->n_function = nf + nh;
}

/* pprof takes the first Mapping for the main binary (its "File:" line):
 * put there the real image with the most samples of ev, not a synthetic
 * [kernel:...] or [jit:...] one. Mapping ids stay image + 1. */
static void main_first(Mapping **mapp, size_t n, const struct report_model *m, unsigned ev)
{
	uint64_t *cnt = xcalloc(m->nimages, sizeof(*cnt));
	size_t best = n;
	for (size_t i = 0; i < m->npcs; i++)
		if (m->pcs[i].event == ev && m->pcs[i].image < m->nimages)
			cnt[m->pcs[i].image] += m->pcs[i].count;
	for (size_t i = 0; i < n; i++) {
		size_t im = mapp[i]->id - 1;
		if (im < m->nimages && m->images[im].path[0] != '[' &&
		    (best == n || cnt[im] > cnt[mapp[best]->id - 1]))
			best = i;
	}
	if (best < n && best) {
		Mapping *x = mapp[0];
		mapp[0] = mapp[best];
		mapp[best] = x;
	}
	free(cnt);
}

/* Image i's Mapping (id i + 1): addresses are ELF vaddrs from 0 to past
 * the larger of the image's highest sampled one and hi; its hex build-id
 * is written into id. */
static Mapping *fill_mapping(Mapping *mp, size_t i, const struct report_model_image *im, uint64_t hi,
			     struct strings *t, char *id)
{
	perftools__profiles__mapping__init(mp);
	mp->id = i + 1;
	if (hi < im->max_vaddr)
		hi = im->max_vaddr;
	mp->memory_limit = (hi | 0xfff) + 1;
	mp->filename = str_idx(t, im->path);
	for (uint32_t b = 0; b < im->build_id_len; b++)
		snprintf(id + 2 * b, 3, "%02x", im->build_id[b]);
	mp->build_id = str_idx(t, id);
	mp->has_functions = im->sym != NULL;
	return mp;
}

/* What both shapes end with: the main binary's mapping first, the value
 * samples, the string table; packed, gzipped and written. */
static int finish(Profile *prof, struct strings *t, const struct report_model *m, unsigned ev,
		  Mapping **mapp, size_t nmap, struct report_value_model *vm, const char *path)
{
	struct extra x = { 0 };
	main_first(mapp, nmap, m, ev);
	prof->n_mapping = nmap;
	prof->mapping = mapp;
	if (vm)
		add_values(prof, t, vm, &x);
	prof->n_string_table = t->n;
	prof->string_table = t->v;
	size_t len = perftools__profiles__profile__get_packed_size(prof);
	uint8_t *buf = xcalloc(len, 1);
	perftools__profiles__profile__pack(prof, buf);
	int rc = write_gzip(path, buf, len);
	extra_free(&x);
	free(buf);
	return rc;
}

/* Recorded call stacks as pprof samples: one Sample per distinct stack
 * (its frames leaf first, as pprof wants), one Location per (image,
 * address), one Function per (image, procedure). */
static int export_stacks(const struct report_model *m, const struct report_stacks *st, unsigned ev,
			 const char *path, struct report_value_model *vm)
{
	size_t nst = 0, nfr = 0, nimg = m->nimages;
	for (size_t i = 0; i < st->n; i++)
		if (st->v[i].event == ev) {
			nst++;
			nfr += st->v[i].depth;
		}
	uint64_t period = report_model_period_ns(m);
	int clock = report_event_is_clock(ev);
	struct strings t = { xcalloc(16 + 2 * nimg + 2 * nfr, sizeof(char *)), 1, NULL, 64,
			     16 + 2 * nimg + 2 * nfr };
	while (t.cap < 2 * (16 + 2 * nimg + 2 * nfr))
		t.cap *= 2;
	t.map = xcalloc(t.cap, sizeof(*t.map));
	t.v[0] = "";
	struct idmap locmap = { NULL, 64 }, fnmap = { NULL, 64 };
	while (locmap.cap < 2 * nfr + 2)
		locmap.cap *= 2;
	fnmap.cap = locmap.cap;
	locmap.v = xcalloc(locmap.cap, sizeof(*locmap.v));
	fnmap.v = xcalloc(fnmap.cap, sizeof(*fnmap.v));

	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT, PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	ValueType per;
	ValueType *vtp[2] = { &vt[0], &vt[1] };
	vt[0].type = str_idx(&t, "samples");
	vt[0].unit = str_idx(&t, "count");
	vt[1].type = str_idx(&t, clock ? "cpu" : upcall_event_name(ev));
	vt[1].unit = str_idx(&t, clock ? "nanoseconds" : "count");
	per = vt[1];
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.period_type = &per;
	prof.period = (int64_t)period;
	prof.default_sample_type = vt[1].type;
	char comment[700];
	snprintf(comment, sizeof(comment), "vprof %s epoch %s, event %s, call stacks", m->db,
		 m->epoch, upcall_event_name(ev));
	int64_t cidx = str_idx(&t, comment);
	prof.n_comment = 1;
	prof.comment = &cidx;

	Location *locs = xcalloc(nfr, sizeof(*locs)), **locp = xcalloc(nfr, sizeof(*locp));
	Line *lines = xcalloc(nfr, sizeof(*lines)), **linep = xcalloc(nfr, sizeof(*linep));
	Function *fns = xcalloc(nfr, sizeof(*fns)), **fnp = xcalloc(nfr, sizeof(*fnp));
	Sample *samples = xcalloc(nst, sizeof(*samples)), **sp = xcalloc(nst, sizeof(*sp));
	uint64_t *locids = xcalloc(nfr, sizeof(*locids));
	int64_t *values = xcalloc(2 * nst, sizeof(*values));
	uint64_t *maxv = xcalloc(nimg, sizeof(*maxv));
	size_t nloc = 0, nfn = 0, k = 0, at = 0;
	for (size_t i = 0; i < st->n; i++) {
		const struct report_stack *s = &st->v[i];
		if (s->event != ev)
			continue;
		for (uint32_t j = 0; j < s->depth; j++) {
			const struct report_frame *f = &st->frames[s->at + j];
			int fresh;
			size_t *fi = id_slot(&fnmap, f->image, f->proc, &fresh);
			if (fresh) {
				Function *fn = &fns[nfn];
				perftools__profiles__function__init(fn);
				fn->id = nfn + 1;
				fn->name = str_idx(&t, f->proc);
				fn->system_name = str_idx(&t, f->sysname);
				/* Interpreted code: its source file. */
				if (m->images[f->image].code_file)
					fn->filename = str_idx(&t, m->images[f->image].code_file);
				fnp[nfn] = fn;
				*fi = ++nfn;
			}
			size_t fid = *fi;
			size_t *li = id_slot(&locmap, f->vaddr, &m->images[f->image], &fresh);
			if (fresh) {
				Location *l = &locs[nloc];
				perftools__profiles__location__init(l);
				perftools__profiles__line__init(&lines[nloc]);
				lines[nloc].function_id = fid;
				if (m->images[f->image].code_file)
					lines[nloc].line = MERGE_CODE_LINE(f->vaddr);
				linep[nloc] = &lines[nloc];
				l->id = nloc + 1;
				l->mapping_id = f->image + 1;
				l->address = f->vaddr;
				l->n_line = 1;
				l->line = &linep[nloc];
				locp[nloc] = l;
				*li = ++nloc;
				if (f->vaddr > maxv[f->image])
					maxv[f->image] = f->vaddr;
			}
			locids[at + j] = *li;
		}
		Sample *smp = &samples[k];
		perftools__profiles__sample__init(smp);
		smp->n_location_id = s->depth;
		smp->location_id = &locids[at];
		values[2 * k] = (int64_t)s->count;
		values[2 * k + 1] = (int64_t)(s->count * (period ? period : 1));
		smp->n_value = 2;
		smp->value = &values[2 * k];
		sp[k++] = smp;
		at += s->depth;
	}
	Mapping *maps = xcalloc(nimg, sizeof(*maps)), **mapp = xcalloc(nimg, sizeof(*mapp));
	char (*ids)[2 * SPOOL_BUILD_ID_MAX + 1] = xcalloc(nimg, sizeof(*ids));
	for (size_t i = 0; i < nimg; i++)
		mapp[i] = fill_mapping(&maps[i], i, &m->images[i], maxv[i], &t, ids[i]);
	prof.n_location = nloc;
	prof.location = locp;
	prof.n_function = nfn;
	prof.function = fnp;
	prof.n_sample = k;
	prof.sample = sp;
	int rc = finish(&prof, &t, m, ev, mapp, nimg, vm, path);
	free(ids);
	free(mapp);
	free(maps);
	free(maxv);
	free(values);
	free(locids);
	free(sp);
	free(samples);
	free(fnp);
	free(fns);
	free(linep);
	free(lines);
	free(locp);
	free(locs);
	free(locmap.v);
	free(fnmap.v);
	free(t.map);
	free(t.v);
	return rc;
}

int report_export_pprof(const struct report_model *m, unsigned ev, const char *path,
			struct report_value_model *vm)
{
	/* With recorded stacks, samples are whole call stacks. The stacks add
	 * the images they name to the model's table (a cache of opened
	 * symbols); the model is otherwise unchanged. */
	struct report_stacks st;
	report_stacks_load(&st, (struct report_model *)m);
	if (st.total[ev]) {
		int rc = export_stacks(m, &st, ev, path, vm);
		report_stacks_free(&st);
		return rc;
	}
	report_stacks_free(&st);
	size_t n, nfn = 0, nimg = m->nimages;
	size_t *ord = report_model_by_proc(m, ev, &n);
	uint64_t period = report_model_period_ns(m);
	int clock = report_event_is_clock(ev);
	/* strings: a few constants, a build-id and path per image, and per
	 * PC at most a procedure, a system name and two files */
	struct strings t = { xcalloc(16 + 2 * nimg + 4 * n, sizeof(char *)), 1, NULL, 64,
			     16 + 2 * nimg + 4 * n };
	while (t.cap < 2 * (16 + 2 * nimg + 4 * n))
		t.cap *= 2;
	t.map = xcalloc(t.cap, sizeof(*t.map));
	t.v[0] = "";

	Profile prof = PERFTOOLS__PROFILES__PROFILE__INIT;
	ValueType vt[2] = { PERFTOOLS__PROFILES__VALUE_TYPE__INIT, PERFTOOLS__PROFILES__VALUE_TYPE__INIT };
	ValueType per = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
	ValueType *vtp[2] = { &vt[0], &vt[1] };
	const char *kind = clock ? "cpu" : upcall_event_name(ev), *unit = clock ? "nanoseconds" : "count";
	vt[0].type = str_idx(&t, "samples");
	vt[0].unit = str_idx(&t, "count");
	vt[1].type = str_idx(&t, kind);
	vt[1].unit = str_idx(&t, unit);
	per = vt[1];
	prof.n_sample_type = 2;
	prof.sample_type = vtp;
	prof.period_type = &per;
	prof.period = (int64_t)period;
	prof.default_sample_type = vt[1].type;
	char comment[700];
	snprintf(comment, sizeof(comment), "vprof %s epoch %s, event %s", m->db, m->epoch,
		 upcall_event_name(ev));
	int64_t cidx = str_idx(&t, comment);
	prof.n_comment = 1;
	prof.comment = &cidx;

	Mapping *maps = xcalloc(nimg, sizeof(*maps)), **mapp = xcalloc(nimg, sizeof(*mapp));
	char (*ids)[2 * SPOOL_BUILD_ID_MAX + 1] = xcalloc(nimg, sizeof(*ids));
	int *used = xcalloc(nimg, sizeof(*used));
	Location *locs = xcalloc(n, sizeof(*locs)), **locp = xcalloc(n, sizeof(*locp));
	Line *lines = xcalloc(n, sizeof(*lines)), **linep = xcalloc(n, sizeof(*linep));
	Function *fns = xcalloc(n, sizeof(*fns)), **fnp = xcalloc(n, sizeof(*fnp));
	Sample *samples = xcalloc(n, sizeof(*samples)), **sp = xcalloc(n, sizeof(*sp));
	uint64_t *locids = xcalloc(n, sizeof(*locids));
	int64_t *values = xcalloc(2 * n, sizeof(*values));

	for (size_t i = 0; i < n; i++) {
		const struct report_model_pc *pc = &m->pcs[ord[i]];
		const struct report_model_pc *prev = i ? &m->pcs[ord[i - 1]] : NULL;
		if (!prev || prev->image != pc->image || prev->proc != pc->proc) {
			Function *f = &fns[nfn];
			perftools__profiles__function__init(f);
			f->id = nfn + 1;
			f->name = str_idx(&t, pc->proc);
			f->system_name = str_idx(&t, pc->sysname);
			f->filename = str_idx(&t, pc->proc_file);
			f->start_line = pc->proc_line;
			fnp[nfn++] = f;
		}
		Location *l = &locs[i];
		perftools__profiles__location__init(l);
		perftools__profiles__line__init(&lines[i]);
		lines[i].function_id = nfn;
		lines[i].line = pc->line;
		linep[i] = &lines[i];
		l->id = i + 1;
		l->mapping_id = pc->image + 1;
		l->address = pc->vaddr;
		l->n_line = 1;
		l->line = &linep[i];
		locp[i] = l;
		used[pc->image] |= 1 | (pc->file ? 2 : 0);

		Sample *s = &samples[i];
		perftools__profiles__sample__init(s);
		locids[i] = l->id;
		s->n_location_id = 1;
		s->location_id = &locids[i];
		values[2 * i] = (int64_t)pc->count;
		values[2 * i + 1] = (int64_t)(pc->count * (period ? period : 1));
		s->n_value = 2;
		s->value = &values[2 * i];
		sp[i] = s;
	}
	/* every image gets a mapping, so that mapping_id = image + 1 */
	for (size_t i = 0; i < nimg; i++) {
		Mapping *mp = mapp[i] = fill_mapping(&maps[i], i, &m->images[i], 0, &t, ids[i]);
		mp->has_filenames = mp->has_line_numbers = (used[i] & 2) != 0;
	}
	prof.n_location = n;
	prof.location = locp;
	prof.n_function = nfn;
	prof.function = fnp;
	prof.n_sample = n;
	prof.sample = sp;
	int rc = finish(&prof, &t, m, ev, mapp, nimg, vm, path);

	free(values);
	free(locids);
	free(sp);
	free(samples);
	free(fnp);
	free(fns);
	free(linep);
	free(lines);
	free(locp);
	free(locs);
	free(used);
	free(ids);
	free(mapp);
	free(maps);
	free(t.map);
	free(t.v);
	free(ord);
	return rc;
}
