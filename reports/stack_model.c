/*
 * stack_model.c — load an epoch's call stacks (merge/stacks.h) for the reports
 * and answer the questions asked of them (see stack_model.h).
 *
 * Workload: thousands of distinct stacks of up to 64 frames; each frame is
 * symbolized once (binary search in its image's table; names interned, so
 * paths compare by pointer); inclusive counts are made once at load by
 * sorting (event, image, name) triples of each stack, duplicates (a
 * recursion) counted once.
 */
#include "reports/stack_model.h"
#include "reports/report.h"
#include "reports/symbolize.h"
#include "merge/stacks.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct stack_intern {
	char *s;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static const char *intern(struct report_stacks *s, const char *str)
{
	if (2 * (s->nnames + 1) > s->capnames) {
		size_t cap = s->capnames ? 2 * s->capnames : 1024;
		struct stack_intern *t = calloc(cap, sizeof(*t));
		if (!t) {
			perror("vprof");
			exit(1);
		}
		for (size_t i = 0; i < s->capnames; i++) {
			if (!s->names[i].s)
				continue;
			size_t h = str_hash(s->names[i].s) & (cap - 1);
			while (t[h].s)
				h = (h + 1) & (cap - 1);
			t[h] = s->names[i];
		}
		free(s->names);
		s->names = t;
		s->capnames = cap;
	}
	size_t mask = s->capnames - 1, h = str_hash(str) & mask;
	for (; s->names[h].s; h = (h + 1) & mask)
		if (!strcmp(s->names[h].s, str))
			return s->names[h].s;
	if (!(s->names[h].s = strdup(str))) {
		perror("vprof");
		exit(1);
	}
	s->nnames++;
	return s->names[h].s;
}

/* A frame's names: its symbol (a return address is looked up at the
 * call, one byte before it), else "[image file name]". */
static void name_frame(struct report_stacks *s, struct report_model *m, struct report_frame *f,
		       int leaf)
{
	const struct report_model_image *im = &m->images[f->image];
	uint64_t start, size;
	if (im->code_file) {
		const char *name = report_model_code_name(im, f->vaddr);
		if (!name)
			name = im->path;
		f->proc = f->sysname = intern(s, name);
		return;
	}
	const char *sys = im->sym ? report_sym_lookup(im->sym, leaf ? f->vaddr : f->vaddr - 1, &start,
						      &size)
				  : NULL;
	if (sys) {
		char *d = report_sym_demangle(sys);
		f->sysname = intern(s, sys);
		f->proc = d ? intern(s, d) : f->sysname;
		free(d);
		return;
	}
	char buf[600];
	const char *slash = strrchr(im->path, '/');
	snprintf(buf, sizeof(buf), "[%s]", slash && slash[1] ? slash + 1 : im->path);
	f->proc = f->sysname = intern(s, buf);
}

static int add_file(struct report_stacks *s, struct report_model *m, unsigned ev,
		    const struct merge_stacks *ms)
{
	uint32_t *map = calloc(ms->nimg ? ms->nimg : 1, sizeof(*map));
	uint32_t unknown = UINT32_MAX;
	if (!map)
		return -ENOMEM;
	for (size_t i = 0; i < ms->nimg; i++) {
		struct merge_profile p;
		merge_profile_init(&p);
		p.build_id_len = ms->img[i].build_id_len;
		memcpy(p.build_id, ms->img[i].build_id, p.build_id_len);
		snprintf(p.path, sizeof(p.path), "%s", ms->img[i].path);
		p.event = ev;
		map[i] = report_model_image(m, &p);
	}
	for (size_t i = 0; i < ms->n; i++) {
		const struct merge_stack_rec *r = &ms->rec[i];
		s->v = report_grow(s->v, &s->cap, s->n, sizeof(*s->v));
		while (s->nfr + r->depth > s->capfr)
			s->frames = report_grow(s->frames, &s->capfr, s->capfr, sizeof(*s->frames));
		s->v[s->n++] = (struct report_stack){ ev, r->count, r->depth, s->nfr };
		for (uint32_t j = 0; j < r->depth; j++) {
			uint64_t fr = ms->frames[r->at + j];
			struct report_frame *f = &s->frames[s->nfr++];
			uint32_t ii = MERGE_FRAME_IMG(fr);
			if (ii == MERGE_FRAME_UNKNOWN || ii >= ms->nimg) {
				if (unknown == UINT32_MAX) {
					struct merge_profile p;
					merge_profile_init(&p);
					p.flags = MERGE_PROF_UNKNOWN;
					unknown = report_model_image(m, &p);
				}
				f->image = unknown;
				f->vaddr = MERGE_FRAME_OFF(fr);
				f->proc = f->sysname = intern(s, "[unknown]");
				continue;
			}
			f->image = map[ii];
			f->vaddr = MERGE_FRAME_OFF(fr);
			name_frame(s, m, f, j == 0);
		}
		s->total[ev] += r->count;
	}
	s->dropped[ev] += ms->dropped;
	s->truncated[ev] += ms->truncated;
	if (ms->depth > s->depth)
		s->depth = ms->depth;
	free(map);
	return 0;
}

static void load_epoch(struct report_stacks *s, struct report_model *m, struct merge_db *db, int e)
{
	char dir[600], name[128], path[800], why[200];
	merge_db_epoch_dir(db, e, dir, sizeof(dir));
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++) {
		struct merge_stacks ms;
		if (m->event && (int)ev != m->event)
			continue;
		merge_stacks_name(ev, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		int rc = merge_stacks_read(path, &ms, why, sizeof(why));
		if (rc == -ENOENT)
			continue;
		if (rc < 0) {
			fprintf(stderr, "vprof %s: %s: %s; skipped\n", m->cmd, path, why);
			continue;
		}
		add_file(s, m, ev, &ms);
		merge_stacks_free(&ms);
	}
}

static int cmp_incl(const void *a, const void *b)
{
	const struct report_incl *x = a, *y = b;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return strcmp(x->proc, y->proc);
}

/* Inclusive counts: one (event, image, proc) triple per distinct
 * procedure of each stack, then sorted and summed. */
static void make_inclusive(struct report_stacks *s)
{
	size_t cap = 0, n = 0;
	struct report_incl *v = NULL;
	for (size_t i = 0; i < s->n; i++) {
		const struct report_stack *st = &s->v[i];
		for (uint32_t j = 0; j < st->depth; j++) {
			const struct report_frame *f = &s->frames[st->at + j];
			int seen = 0;
			for (uint32_t k = 0; k < j && !seen; k++)
				seen = s->frames[st->at + k].proc == f->proc &&
				       s->frames[st->at + k].image == f->image;
			if (seen)
				continue;
			v = report_grow(v, &cap, n, sizeof(*v));
			v[n++] = (struct report_incl){ st->event, f->image, f->proc, st->count };
		}
	}
	if (n) {
		qsort(v, n, sizeof(*v), cmp_incl);
		size_t o = 0;
		for (size_t i = 1; i < n; i++) {
			if (!cmp_incl(&v[i], &v[o]))
				v[o].count += v[i].count;
			else
				v[++o] = v[i];
		}
		n = o + 1;
	}
	s->incl = v;
	s->nincl = n;
}

int report_stacks_load(struct report_stacks *s, struct report_model *m)
{
	struct merge_db db;
	char why[300];
	memset(s, 0, sizeof(*s));
	if (merge_db_open(&db, m->db, 0, why, sizeof(why)) < 0)
		return 0;
	if (!strcmp(m->epoch, "all")) {
		int ep[4096], n = merge_db_epochs(&db, ep, 4096);
		for (int i = 0; i < n; i++)
			load_epoch(s, m, &db, ep[i]);
	} else {
		load_epoch(s, m, &db, atoi(m->epoch));
	}
	merge_db_close(&db);
	make_inclusive(s);
	return 0;
}

void report_stacks_free(struct report_stacks *s)
{
	for (size_t i = 0; i < s->capnames; i++)
		free(s->names[i].s);
	free(s->names);
	free(s->v);
	free(s->frames);
	free(s->incl);
	memset(s, 0, sizeof(*s));
}

uint64_t report_stacks_inclusive(const struct report_stacks *s, unsigned ev, uint32_t image,
				 const char *proc)
{
	struct report_incl key = { ev, image, proc, 0 };
	const struct report_incl *hit = s->nincl ? bsearch(&key, s->incl, s->nincl, sizeof(key), cmp_incl)
						 : NULL;
	return hit ? hit->count : 0;
}

/* ---- folded paths ---- */

struct path {
	const char **names;      /* root first */
	uint32_t depth;
	uint64_t count;
};

static int cmp_path(const void *a, const void *b)
{
	const struct path *x = a, *y = b;
	for (uint32_t i = 0; i < x->depth && i < y->depth; i++) {
		if (x->names[i] == y->names[i])
			continue;
		return strcmp(x->names[i], y->names[i]);
	}
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

int report_stacks_foreach(const struct report_stacks *s, unsigned ev, report_stack_fn *fn, void *arg)
{
	size_t n = 0, nnames = 0;
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].event == ev) {
			n++;
			nnames += s->v[i].depth;
		}
	struct path *p = calloc(n ? n : 1, sizeof(*p));
	const char **names = calloc(nnames ? nnames : 1, sizeof(*names));
	if (!p || !names) {
		perror("vprof");
		exit(1);
	}
	size_t k = 0, at = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct report_stack *st = &s->v[i];
		if (st->event != ev)
			continue;
		p[k] = (struct path){ names + at, st->depth, st->count };
		for (uint32_t j = 0; j < st->depth; j++)
			names[at + j] = s->frames[st->at + st->depth - 1 - j].proc;
		at += st->depth;
		k++;
	}
	int rc = 0;
	if (n) {
		qsort(p, n, sizeof(*p), cmp_path);
		size_t o = 0;
		for (size_t i = 1; i < n; i++) {
			if (!cmp_path(&p[i], &p[o]))
				p[o].count += p[i].count;
			else
				p[++o] = p[i];
		}
		for (size_t i = 0; i <= o && !rc; i++)
			rc = fn(p[i].names, p[i].depth, p[i].count, arg);
	}
	free(names);
	free(p);
	return rc;
}

/* ---- callers and callees ---- */

static int by_count_desc(const void *a, const void *b)
{
	const struct report_neighbour *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->proc, y->proc);
}

static int cmp_pair(const void *a, const void *b)
{
	const struct report_neighbour *x = a, *y = b;
	if (x->proc != y->proc)
		return (uintptr_t)x->proc < (uintptr_t)y->proc ? -1 : 1;
	return x->image < y->image ? -1 : x->image > y->image;
}

struct report_neighbour *report_stacks_neighbours(const struct report_stacks *s, unsigned ev,
						  const char *proc, int dir, size_t *nout,
						  uint64_t *incl)
{
	struct report_neighbour *v = NULL;
	size_t n = 0, cap = 0;
	const char *self = NULL;
	*incl = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct report_stack *st = &s->v[i];
		const struct report_frame *f = &s->frames[st->at];
		size_t first = n;
		int has = 0;
		if (st->event != ev)
			continue;
		for (uint32_t j = 0; j < st->depth; j++) {
			if (strcmp(f[j].proc, proc))
				continue;
			has = 1;
			/* frames are leaf first: the caller is j+1, the callee j-1 */
			const char *nb;
			uint32_t img;
			if (dir < 0) {
				if (j + 1 >= st->depth)
					continue;      /* the outermost frame: no caller known */
				nb = f[j + 1].proc;
				img = f[j + 1].image;
			} else if (j == 0) {
				if (!self)
					self = intern((struct report_stacks *)s, "[self]");
				nb = self;
				img = f[0].image;
			} else {
				nb = f[j - 1].proc;
				img = f[j - 1].image;
			}
			int dup = 0;
			for (size_t q = first; q < n && !dup; q++)
				dup = v[q].proc == nb && v[q].image == img;
			if (dup)
				continue;
			v = report_grow(v, &cap, n, sizeof(*v));
			v[n++] = (struct report_neighbour){ nb, img, 0 };
		}
		for (size_t q = first; q < n; q++)
			v[q].count = st->count;
		if (has)
			*incl += st->count;
	}
	/* Fold the per-stack entries: sort by (proc, image), sum. */
	if (n) {
		qsort(v, n, sizeof(*v), cmp_pair);
		size_t o = 0;
		for (size_t i = 1; i < n; i++) {
			if (!cmp_pair(&v[i], &v[o]))
				v[o].count += v[i].count;
			else
				v[++o] = v[i];
		}
		n = o + 1;
		qsort(v, n, sizeof(*v), by_count_desc);
	}
	*nout = n;
	return v;
}

/* ---- vprof report --callers / --callees ---- */

void report_stacks_print_summary(const struct report_stacks *s, FILE *f)
{
	uint64_t t = 0, d = 0, tr = 0;
	for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++) {
		t += s->total[ev];
		d += s->dropped[ev];
		tr += s->truncated[ev];
	}
	if (!t && !d)
		return;
	fprintf(f, "call stacks: %llu samples with a stack, %llu dropped (stack tables full), "
		   "%llu cut at depth %u\n", (unsigned long long)t, (unsigned long long)d,
		(unsigned long long)tr, s->depth);
}

int report_print_neighbours(struct report_model *m, const char *proc, int dir, int json,
			    long limit)
{
	struct report_stacks s;
	const char *what = dir < 0 ? "callers" : "callees";
	int found = 0, first = 1;
	report_stacks_load(&s, m);
	if (!s.n) {
		fprintf(stderr, "vprof report: no call stacks in %s epoch %s (profile with "
			"vprof run --stacks)\n", m->db, m->epoch);
		report_stacks_free(&s);
		return 1;
	}
	/* F as vprof list takes it: the one procedure on the stacks the name
	 * matches most closely, weighed by its inclusive samples. */
	struct report_names names;
	const char *want = proc;
	report_names_init(&names, want);
	for (size_t i = 0; i < s.nincl; i++)
		report_names_add(&names, s.incl[i].proc, NULL, m->images[s.incl[i].image].path,
				 s.incl[i].count);
	for (size_t i = 0; i < s.nfr; i++)    /* a mangled name, as typed */
		if (s.frames[i].sysname != s.frames[i].proc && !strcmp(s.frames[i].sysname, want))
			report_names_add(&names, s.frames[i].proc, s.frames[i].sysname,
					 m->images[s.frames[i].image].path, 0);
	int rc = report_names_pick(&names, "report", &proc);
	report_names_free(&names);
	if (rc < 0) {
		if (rc == -1)
			fprintf(stderr, "vprof report: no recorded call stack holds %s\n", want);
		report_stacks_free(&s);
		return 1;
	}
	if (json) {
		printf("{\"db\":");
		report_json_str(stdout, m->db);
		printf(",\"epoch\":\"%s\",\"%s_of\":", m->epoch, what);
		report_json_str(stdout, proc);
		printf(",\"events\":[");
	}
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++) {
		size_t n;
		uint64_t incl;
		if (!s.total[ev])
			continue;
		struct report_neighbour *v = report_stacks_neighbours(&s, ev, proc, dir, &n, &incl);
		if (!incl) {
			free(v);
			continue;
		}
		found = 1;
		if (json) {
			printf("%s{\"event\":\"%s\",\"total\":%llu,\"inclusive\":%llu,\"rows\":[",
			       first ? "" : ",", upcall_event_name(ev), (unsigned long long)m->total[ev],
			       (unsigned long long)incl);
		} else {
			/* Of the event's total, the 100% of vprof report's incl%. */
			printf("%sevent %s: %s of %s: %llu samples inclusive (%.2f%% of the event's %llu)\n",
			       first ? "" : "\n", upcall_event_name(ev), what, proc,
			       (unsigned long long)incl, 100.0 * (double)incl / (double)m->total[ev],
			       (unsigned long long)m->total[ev]);
			printf("%10s %7s  %-40s %s\n", "samples", "%", dir < 0 ? "caller" : "callee",
			       "image");
		}
		first = 0;
		for (size_t i = 0; i < n && (limit <= 0 || (long)i < limit); i++) {
			const char *img = m->images[v[i].image].path;
			double pct = 100.0 * (double)v[i].count / (double)incl;
			if (json) {
				printf("%s{\"procedure\":", i ? "," : "");
				report_json_str(stdout, v[i].proc);
				printf(",\"image\":");
				report_json_str(stdout, img);
				printf(",\"samples\":%llu,\"percent\":%.4f}", (unsigned long long)v[i].count,
				       pct);
			} else {
				printf("%10llu %7.2f  %-40s %s\n", (unsigned long long)v[i].count, pct,
				       v[i].proc, img);
			}
		}
		if (!json && limit > 0 && (long)n > limit)
			printf("%10s (%zu more rows; -n 0 shows all)\n", "...", n - (size_t)limit);
		if (json)
			printf("]}");
		free(v);
	}
	if (json)
		printf("]}\n");
	report_stacks_free(&s);
	if (!found) {
		fprintf(stderr, "vprof report: no recorded call stack holds %s\n", proc);
		return 1;
	}
	return 0;
}
