/*
 * buckets.c — load several database epochs and group their samples into
 * buckets matched across them by name (see buckets.h). Workload: a few
 * sources of a few thousand PCs each; one sort of every (bucket key,
 * source, count) entry groups them, comparing strings (each model interns
 * its own, so pointers are not shared across sources).
 */
#include "reports/buckets.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int report_bucket_parse_by(const char *cmd, const char *arg, enum report_bucket_by *by)
{
	if (!strcmp(arg, "image"))
		*by = BUCKET_IMAGE;
	else if (!strcmp(arg, "procedure"))
		*by = BUCKET_PROC;
	else if (!strcmp(arg, "line"))
		*by = BUCKET_LINE;
	else if (!strcmp(arg, "instruction"))
		*by = BUCKET_INSN;
	else
		return report_usage(cmd, "--by takes image, procedure, line or instruction");
	return 0;
}

const char *report_bucket_by_name(enum report_bucket_by by)
{
	static const char *const names[] = { "image", "procedure", "line", "instruction" };
	return names[by];
}

static int epoch_ok(const char *e)
{
	if (!strcmp(e, "all"))
		return 1;
	if (!*e || strlen(e) > 9)
		return 0;
	for (const char *p = e; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return atoi(e) >= 1;
}

int report_bucket_source_parse(const char *cmd, const char *spec, const struct report_opts *o,
			       struct report_bucket_source *s)
{
	const char *at = strrchr(spec, '@');
	char msg[700];
	s->spec = spec;
	s->epoch = o->epoch;
	if (at && (at == spec || epoch_ok(at + 1))) {
		if (!epoch_ok(at + 1)) {
			snprintf(msg, sizeof(msg), "'%s': an epoch is @N (N >= 1) or @all", spec);
			return report_usage(cmd, msg);
		}
		snprintf(s->epochbuf, sizeof(s->epochbuf), "%s", at + 1);
		s->epoch = s->epochbuf;
		if (at == spec)
			snprintf(s->db, sizeof(s->db), "%s", o->db);
		else
			snprintf(s->db, sizeof(s->db), "%.*s", (int)(at - spec), spec);
	} else {
		if (strlen(spec) >= sizeof(s->db))
			return report_usage(cmd, "database path too long");
		snprintf(s->db, sizeof(s->db), "%s", spec);
	}
	if (s->epoch && !epoch_ok(s->epoch))
		return report_usage(cmd, "--epoch takes a number >= 1 or all");
	return 0;
}

const char *report_bucket_source_name(const struct report_bucket_source *s, char *buf, size_t cap)
{
	if (s->loaded)
		snprintf(buf, cap, "%s epoch %s", s->db, s->m.epoch);
	else if (s->epoch)
		snprintf(buf, cap, "%s epoch %s", s->db, s->epoch);
	else
		snprintf(buf, cap, "%s", s->db);
	return buf;
}

/* Is s all digits (an epoch number given where a database was expected)? */
static int all_digits(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return 0;
	return 1;
}

/* The checks report_model_load does not make, each one message. */
static int source_check(const char *cmd, const struct report_bucket_source *s)
{
	struct stat st;
	char p[700];
	int st_rc = stat(s->db, &st), e = errno;
	if (st_rc < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vprof %s: %s (%s): no database there: %s%s\n", cmd, s->label, s->spec,
			st_rc < 0 ? strerror(e) : "not a directory",
			all_digits(s->spec) ? " (an epoch of --db is written @N)" : "");
		return 1;
	}
	snprintf(p, sizeof(p), "%s/epochs", s->db);
	if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vprof %s: %s (%s): not a vprof database (no epochs/ directory)\n", cmd,
			s->label, s->db);
		return 1;
	}
	if (s->epoch && strcmp(s->epoch, "all")) {
		snprintf(p, sizeof(p), "%s/epochs/%d", s->db, atoi(s->epoch));
		if (stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
			fprintf(stderr, "vprof %s: %s: database %s has no epoch %s (vprof epoch --db %s list)\n",
				cmd, s->label, s->db, s->epoch, s->db);
			return 1;
		}
	}
	return 0;
}

int report_bucket_sources_load(const char *cmd, struct report_bucket_source *s, size_t n, int ev,
			       enum report_bucket_by by, unsigned *evout)
{
	char name[700];
	int rc;
	for (size_t i = 0; i < n; i++) {
		if ((rc = source_check(cmd, &s[i])))
			return rc;
		if ((rc = report_model_load(&s[i].m, s[i].db, s[i].epoch, ev, by == BUCKET_LINE, cmd)))
			return rc;
		s[i].loaded = 1;
	}
	unsigned e = report_model_main_event(&s[0].m, ev);
	for (size_t i = 0; i < n; i++) {
		struct report_model *m = &s[i].m;
		if (!e || !report_model_sampled(m, e)) {
			unsigned other = report_model_main_event(m, 0);
			if (!other || other == e)   /* none, or only unsampled rows */
				fprintf(stderr, "vprof %s: %s (%s) has no samples\n", cmd, s[i].label,
					report_bucket_source_name(&s[i], name, sizeof(name)));
			else
				fprintf(stderr, "vprof %s: %s (%s) has no %s samples (its samples are %s; "
					"choose one with --event)\n", cmd, s[i].label,
					report_bucket_source_name(&s[i], name, sizeof(name)),
					upcall_event_name(e ? e : (unsigned)ev), upcall_event_name(other));
			return 1;
		}
		/* The buckets' 100%: samples, as report_bucket_group counts them. */
		s[i].total = report_model_sampled(m, e);
	}
	*evout = e;
	return 0;
}

void report_bucket_sources_free(struct report_bucket_source *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i].loaded) {
			report_model_free(&s[i].m);
			s[i].loaded = 0;
		}
}

struct entry {
	struct report_bucket b;        /* count unused */
	size_t src;
	uint64_t count;
};

static enum report_bucket_by g_by;    /* qsort has no argument; one thread */

static int strnull(const char *a, const char *b)
{
	if (a == b)
		return 0;
	if (!a || !b)
		return a ? 1 : -1;
	return strcmp(a, b);
}

static int cmp_key(const struct report_bucket *x, const struct report_bucket *y)
{
	int r;
	if ((r = strcmp(x->image, y->image)))
		return r;
	if (g_by == BUCKET_INSN) {
		/* Same path, another build: not the same instruction. */
		if (x->im->build_id_len != y->im->build_id_len)
			return x->im->build_id_len < y->im->build_id_len ? -1 : 1;
		if ((r = memcmp(x->im->build_id, y->im->build_id, x->im->build_id_len)))
			return r;
		if (x->vaddr != y->vaddr)
			return x->vaddr < y->vaddr ? -1 : 1;
	}
	if ((r = strnull(x->proc, y->proc)))
		return r;
	if ((r = strnull(x->file, y->file)))
		return r;
	return x->line - y->line;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int r = cmp_key(&x->b, &y->b);
	if (r)
		return r;
	return x->src < y->src ? -1 : x->src > y->src;
}

/* The [kernel:EXE] and [start-up:EXE] rows (report_image_unsampled) are
 * CPU accounting turned into sample-equivalents, not samples: their size
 * follows the process's system time, which includes the profiler's own
 * interrupts, and flips between 0 and tens of samples from run to run (a
 * "new" bucket that outranked the planted scaling problem). diff and
 * stats compare samples only. */
void report_bucket_group(struct report_bucket_source *s, size_t n, unsigned ev, enum report_bucket_by by,
			 struct report_bucket_set *out)
{
	size_t ne = 0, cap = 0;
	struct entry *e = NULL;
	memset(out, 0, sizeof(*out));
	out->nsrc = n;
	for (size_t i = 0; i < n; i++) {
		const struct report_model *m = &s[i].m;
		for (size_t k = 0; k < m->npcs; k++) {
			const struct report_model_pc *pc = &m->pcs[k];
			if (pc->event != ev || !pc->count || report_image_unsampled(m->images[pc->image].path))
				continue;
			e = report_grow(e, &cap, ne, sizeof(*e));
			struct entry *x = &e[ne++];
			memset(x, 0, sizeof(*x));
			x->b.im = &m->images[pc->image];
			x->b.image = x->b.im->path;
			if (by != BUCKET_IMAGE)
				x->b.proc = pc->proc;
			if (by == BUCKET_LINE) {
				x->b.file = pc->file;
				x->b.line = pc->line;
			}
			if (by == BUCKET_INSN)
				x->b.vaddr = pc->vaddr;
			x->src = i;
			x->count = pc->count;
		}
	}
	g_by = by;
	qsort(e, ne, sizeof(*e), cmp_entry);
	size_t nb = 0;
	for (size_t i = 0; i < ne; i++)
		if (!i || cmp_key(&e[i].b, &e[i - 1].b))
			nb++;
	out->v = calloc(nb ? nb : 1, sizeof(*out->v));
	out->counts = calloc((nb ? nb : 1) * n, sizeof(*out->counts));
	if (!out->v || !out->counts) {
		perror("vprof");
		exit(1);
	}
	for (size_t i = 0, b = 0; i < ne; i++) {
		if (i && cmp_key(&e[i].b, &e[i - 1].b))
			b++;
		if (!i || cmp_key(&e[i].b, &e[i - 1].b)) {
			out->v[b] = e[i].b;
			out->v[b].count = &out->counts[b * n];
		}
		out->v[b].count[e[i].src] += e[i].count;
	}
	out->n = nb;
	free(e);
}

void report_bucket_set_free(struct report_bucket_set *bs)
{
	free(bs->v);
	free(bs->counts);
	memset(bs, 0, sizeof(*bs));
}

/* Samples of event ev per image path in one model: the busiest one. */
static const char *busiest_image(const struct report_model *m, unsigned ev, uint64_t *cnt)
{
	uint64_t best = 0;
	const char *bp = NULL;
	uint64_t *per = calloc(m->nimages ? m->nimages : 1, sizeof(*per));
	if (!per) {
		perror("vprof");
		exit(1);
	}
	for (size_t k = 0; k < m->npcs; k++)
		if (m->pcs[k].event == ev)
			per[m->pcs[k].image] += m->pcs[k].count;
	for (size_t i = 0; i < m->nimages; i++)
		if (per[i] > best && strcmp(m->images[i].path, "[unknown]")) {
			best = per[i];
			bp = m->images[i].path;
		}
	free(per);
	*cnt = best;
	return bp;
}

static uint64_t image_samples(const struct report_model *m, unsigned ev, const char *path)
{
	uint64_t c = 0;
	for (size_t k = 0; k < m->npcs; k++)
		if (m->pcs[k].event == ev && !strcmp(m->images[m->pcs[k].image].path, path))
			c += m->pcs[k].count;
	return c;
}

static void add_warning(char **out, size_t cap, size_t *nw, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void add_warning(char **out, size_t cap, size_t *nw, const char *fmt, ...)
{
	va_list ap;
	if (*nw >= cap)
		return;
	va_start(ap, fmt);
	if (vasprintf(&out[*nw], fmt, ap) >= 0)
		(*nw)++;
	va_end(ap);
}

size_t report_bucket_warnings(struct report_bucket_source *s, size_t n, unsigned ev, enum report_bucket_by by,
			      char **out, size_t cap)
{
	size_t nw = 0;
	/* Different programs: one source's busiest image absent from another. */
	for (size_t i = 0; i < n; i++) {
		uint64_t c;
		const char *img = busiest_image(&s[i].m, ev, &c);
		if (!img)
			continue;
		for (size_t j = 0; j < n; j++)
			if (j != i && !image_samples(&s[j].m, ev, img)) {
				add_warning(out, cap, &nw, "%s's busiest image %s (%.0f%% of its samples) has "
					    "no samples in %s: are these runs of the same program?",
					    s[i].label, img, 100.0 * (double)c / (double)s[i].total, s[j].label);
				break;
			}
	}
	/* Rebuilt images: same path, another build-id. */
	for (size_t i = 0; i < s[0].m.nimages; i++) {
		const struct report_model_image *a = &s[0].m.images[i];
		for (size_t j = 1; j < n; j++) {
			const struct report_model_image *b = NULL;
			for (size_t k = 0; k < s[j].m.nimages && !b; k++)
				if (!strcmp(s[j].m.images[k].path, a->path))
					b = &s[j].m.images[k];
			if (b && (a->build_id_len != b->build_id_len ||
				  memcmp(a->build_id, b->build_id, a->build_id_len))) {
				add_warning(out, cap, &nw, "%s differs between %s and %s (another build-id): "
					    "%s", a->path, s[0].label, s[j].label,
					    by == BUCKET_INSN ? "its instructions are not matched"
							      : "its procedures and lines are matched by name");
				break;
			}
		}
	}
	/* Sampling periods: counts compare only at equal periods. */
	uint64_t p0 = report_model_period_ns(&s[0].m);
	for (size_t j = 1; j < n && p0; j++) {
		uint64_t pj = report_model_period_ns(&s[j].m);
		if (pj && fabs((double)pj - (double)p0) > 0.1 * (double)p0) {
			add_warning(out, cap, &nw, "%s and %s were sampled at different mean periods "
				    "(%.3f and %.3f ms): their counts are not in the same units",
				    s[0].label, s[j].label, (double)p0 / 1e6, (double)pj / 1e6);
			break;
		}
	}
	return nw;
}

const char *report_bucket_text(const struct report_bucket *b, enum report_bucket_by by, char *buf, size_t cap)
{
	switch (by) {
	case BUCKET_IMAGE:
		return b->image;
	case BUCKET_PROC:
		return b->proc;
	case BUCKET_LINE:
		if (b->file)
			snprintf(buf, cap, "%s:%d  %s", b->file, b->line, b->proc);
		else
			snprintf(buf, cap, "[no line]  %s", b->proc);
		return buf;
	case BUCKET_INSN:
		snprintf(buf, cap, "%#llx  %s", (unsigned long long)b->vaddr, b->proc);
		return buf;
	}
	return "";
}

/* The bucket's columns: in text, its name then its image (after the
 * numbers: tpos 1); in JSON, procedure, file and line or pc, then image. */
void report_bucket_table_cols(struct report_table *t, enum report_bucket_by by)
{
	if (by != BUCKET_IMAGE) {
		report_table_col(t, (struct report_table_col){ .head = "bucket", .type = TABLE_STR, .gap = 2, .tpos = 1 });
		report_table_col(t, (struct report_table_col){ .key = "procedure", .type = TABLE_STR });
	}
	if (by == BUCKET_LINE) {
		report_table_col(t, (struct report_table_col){ .key = "file", .type = TABLE_STR });
		report_table_col(t, (struct report_table_col){ .key = "line", .type = TABLE_INT });
	}
	if (by == BUCKET_INSN)
		report_table_col(t, (struct report_table_col){ .key = "pc", .type = TABLE_UINT, .jfmt = "\"%#llx\"" });
	report_table_col(t, (struct report_table_col){ .head = "image", .key = "image", .type = TABLE_STR, .gap = 2,
					 .tpos = 1 });
}

void report_bucket_table_row(struct report_table *t, const struct report_bucket *b, enum report_bucket_by by)
{
	char buf[1200];
	if (by != BUCKET_IMAGE) {
		report_table_str(t, report_bucket_text(b, by, buf, sizeof(buf)));
		report_table_str(t, b->proc);
	}
	if (by == BUCKET_LINE) {
		report_table_str(t, b->file);
		report_table_int(t, b->line);
	}
	if (by == BUCKET_INSN)
		report_table_uint(t, b->vaddr);
	report_table_str(t, b->image);
}
