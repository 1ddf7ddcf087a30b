/*
 * model.c — load a database's epoch(s) into one flat array of resolved PCs
 * (see model.h). Workload: a few images with thousands of PCs each; every
 * PC is looked up once in its image's symbol table (binary search), and
 * names repeat a great deal, so strings are interned in one open-addressed
 * table: demangling is done once per distinct symbol, and callers compare
 * names by pointer. Symbols of each image are opened once.
 */
#include "reports/model.h"
#include "reports/report.h"
#include "reports/symbolize.h"
#include "merge/image_store.h"
#include "merge/jit.h"
#include "merge/code.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct intern {
	char *s;
	const char *alt;        /* the demangled form of s, once asked */
};

void *report_grow(void *v, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return v;
	*cap = *cap ? 2 * *cap : 64;
	v = realloc(v, *cap * size);
	if (!v) {
		perror("vprof");
		exit(1);
	}
	return v;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The slot holding s, made (with a copy of s) if there is none. */
static struct intern *intern_slot(struct report_model *m, const char *s)
{
	if (2 * (m->nstrings + 1) > m->capstrings) {
		size_t cap = m->capstrings ? 2 * m->capstrings : 1024;
		struct intern *t = calloc(cap, sizeof(*t));
		if (!t) {
			perror("vprof");
			exit(1);
		}
		for (size_t i = 0; i < m->capstrings; i++) {
			if (!m->strings[i].s)
				continue;
			size_t h = str_hash(m->strings[i].s) & (cap - 1);
			while (t[h].s)
				h = (h + 1) & (cap - 1);
			t[h] = m->strings[i];
		}
		free(m->strings);
		m->strings = t;
		m->capstrings = cap;
	}
	size_t mask = m->capstrings - 1, h = str_hash(s) & mask;
	for (; m->strings[h].s; h = (h + 1) & mask)
		if (!strcmp(m->strings[h].s, s))
			return &m->strings[h];
	if (!(m->strings[h].s = strdup(s))) {
		perror("vprof");
		exit(1);
	}
	m->nstrings++;
	return &m->strings[h];
}

static const char *intern(struct report_model *m, const char *s)
{
	return s ? intern_slot(m, s)->s : NULL;
}

/* The readable form of a symbol name: demangled once, then remembered. */
static const char *demangled(struct report_model *m, const char *sysname)
{
	struct intern *slot = intern_slot(m, sysname);
	if (slot->alt)
		return slot->alt;
	char *d = report_sym_demangle(sysname);
	const char *alt = d ? intern(m, d) : slot->s;
	free(d);
	intern_slot(m, sysname)->alt = alt;     /* the table may have moved */
	return alt;
}

int report_event_is_clock(unsigned ev)
{
	return ev == UPCALL_EV_TASK_CLOCK || ev == UPCALL_EV_CPU_TIMER || ev == UPCALL_EV_ITIMER;
}

uint64_t report_model_period_ns(const struct report_model *m)
{
	return m->stats.processes ? m->stats.period_ns_sum / m->stats.processes : 0;
}

uint32_t report_model_image(struct report_model *m, const struct merge_profile *p)
{
	int unknown = (p->flags & MERGE_PROF_UNKNOWN) != 0;
	const char *path = unknown ? "[unknown]" : p->path[0] ? p->path : "[no path]";
	for (size_t i = 0; i < m->nimages; i++) {
		const struct report_model_image *im = &m->images[i];
		if (im->build_id_len == p->build_id_len &&
		    (p->build_id_len ? !memcmp(im->build_id, p->build_id, p->build_id_len)
				     : !strcmp(im->path, path)))
			return (uint32_t)i;
	}
	m->images = report_grow(m->images, &m->capimages, m->nimages, sizeof(*m->images));
	struct report_model_image *im = &m->images[m->nimages];
	memset(im, 0, sizeof(*im));
	im->path = intern(m, path);
	im->build_id_len = p->build_id_len;
	memcpy(im->build_id, p->build_id, p->build_id_len);
	/* Interpreted code: by its path, as stacks files give no flags. */
	char file[SPOOL_PATH_MAX];
	if (merge_code_file(path, file, sizeof(file))) {
		im->code_file = intern(m, file);
		return (uint32_t)m->nimages++;
	}
	/* [jit:EXE] and [kernel:EXE] name their samples themselves. */
	if (!unknown && !(p->flags & (MERGE_PROF_JIT | MERGE_PROF_KERNEL))) {
		char why[300], store[600];
		snprintf(store, sizeof(store), "%s/" MERGE_IMAGES_DIR, m->db);
		im->sym = report_image_open_kept(store, p->path, p->build_id, p->build_id_len, why,
						 sizeof(why));
		/* Once per image: its samples show as [no symbol]. The vDSO has
		 * no file to read; that needs no saying. */
		if (!im->sym && strncmp(p->path, "linux-vdso", 10) != 0)
			fprintf(stderr, "vprof %s: no symbols for %s: %s\n", m->cmd, path, why);
	}
	return (uint32_t)m->nimages++;
}

/* File and line of vaddr, interned, or NULL/0. */
static const char *source_line(struct report_model *m, struct report_image *im,
			       uint64_t vaddr, int *line)
{
	const char *file;
	*line = 0;
	if (!im || report_sym_source_line(im, vaddr, &file, line) != 0)
		return NULL;
	return intern(m, file);
}

static int on_profile(const struct merge_profile *p, void *arg)
{
	struct report_model *m = arg;
	if (p->flags & MERGE_PROF_STATS) {
		merge_stats_add(&m->stats, &p->stats);
		return 0;
	}
	if (p->event < UPCALL_EV_MAX)
		m->present[p->event] += p->total;
	if ((m->event && (int)p->event != m->event) || p->event >= UPCALL_EV_MAX)
		return 0;
	uint32_t ii = report_model_image(m, p);
	struct report_model_image *im = &m->images[ii];
	if (p->flags & MERGE_PROF_CODE)
		for (size_t i = 0; i < p->njit; i++) {
			uint64_t key = merge_code_fkey(p->jit[i].key);
			if (report_model_code_name(im, key << MERGE_CODE_LINE_BITS))
				continue;
			im->code = report_grow(im->code, &im->capcode, im->ncode, sizeof(*im->code));
			im->code[im->ncode++] = (struct report_code_name){
				key, intern(m, p->jit_arena + p->jit[i].off) };
		}
	for (size_t i = 0; i < p->n; i++) {
		uint64_t start = 0, size;
		const char *sys = NULL;
		m->pcs = report_grow(m->pcs, &m->cappcs, m->npcs, sizeof(*m->pcs));
		struct report_model_pc *pc = &m->pcs[m->npcs++];
		memset(pc, 0, sizeof(*pc));
		pc->event = p->event;
		pc->image = ii;
		pc->vaddr = p->pcs[i].offset;
		pc->count = p->pcs[i].count;
		if (im->sym)
			sys = report_sym_lookup(im->sym, pc->vaddr, &start, &size);
		else if (p->flags & MERGE_PROF_JIT)
			sys = merge_jit_name(p, pc->vaddr), start = pc->vaddr;
		else if (p->flags & MERGE_PROF_CODE) {
			sys = merge_code_name(p, pc->vaddr);
			start = pc->vaddr & ~(uint64_t)((1u << MERGE_CODE_LINE_BITS) - 1);
			pc->file = pc->proc_file = im->code_file;
			pc->line = (int)MERGE_CODE_LINE(pc->vaddr);
		}
		else if (p->flags & MERGE_PROF_KERNEL)
			sys = strncmp(p->path, "[start-up:", 10) ? "[kernel]" : "[start-up]", start = 0;
		if (sys) {
			pc->sysname = intern(m, sys);
			pc->proc = demangled(m, sys);
			pc->proc_start = start;
		} else {
			pc->proc = pc->sysname =
				intern(m, p->flags & MERGE_PROF_UNKNOWN ? "[unknown]" : "[no symbol]");
			pc->proc_start = pc->vaddr;
		}
		if (m->lines && sys && im->sym) {
			pc->file = source_line(m, im->sym, pc->vaddr, &pc->line);
			pc->proc_file = source_line(m, im->sym, start, &pc->proc_line);
		}
		if (pc->vaddr > im->max_vaddr)
			im->max_vaddr = pc->vaddr;
		m->total[p->event] += pc->count;
	}
	return 0;
}

/* An epoch asked for that the database does not have: one message naming
 * those it has. */
static int missing_epoch(struct merge_db *db, int e, const char *cmd)
{
	char dir[700], have[200] = "";
	struct stat st;
	int ep[4096], n = merge_db_epochs(db, ep, 4096);
	merge_db_epoch_dir(db, e, dir, sizeof(dir));
	if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;
	int i = 0, len = 0;
	for (; i < n && len < (int)sizeof(have) - 20; i++)
		len += snprintf(have + len, sizeof(have) - (size_t)len, "%s%d", i ? ", " : "", ep[i]);
	if (i < n)
		snprintf(have + len, sizeof(have) - (size_t)len, " ... %d", ep[n - 1]);
	fprintf(stderr, "vprof %s: database %s has no epoch %d (%s%s)\n", cmd, db->root, e,
		n ? "its epochs: " : "it has no epochs yet", have);
	return 1;
}

/* --event E with no samples of E: one message naming the events there are. */
static void missing_event(const struct report_model *m, const char *cmd)
{
	char have[300] = "";
	size_t len = 0;
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++)
		if (m->present[ev] && len < sizeof(have) - 60)
			len += (size_t)snprintf(have + len, sizeof(have) - len, "%s%s (%llu samples)",
						len ? ", " : "", upcall_event_name(ev),
						(unsigned long long)m->present[ev]);
	fprintf(stderr, "vprof %s: %s epoch %s has no %s samples (%s%s)\n", cmd, m->db, m->epoch,
		upcall_event_name((unsigned)m->event), len ? "its events: " : "it has no samples at all",
		have);
}

/* A file not in the model: named in the report. */
static void bad_file(const char *path, const char *why, void *arg)
{
	struct report_model *m = arg;
	char buf[1200];
	snprintf(buf, sizeof(buf), "%s (%s)", path, why);
	m->bad = report_grow(m->bad, &m->capbad, m->nbad, sizeof(*m->bad));
	m->bad[m->nbad] = strdup(buf);
	if (!m->bad[m->nbad]) {
		perror("vprof");
		exit(1);
	}
	m->nbad++;
	if (strcmp(why, "set aside") != 0) {
		/* Skipped now: its samples are in the stats, not in the
		 * tables; take out what its header says it held. */
		struct merge_profile_header h;
		if (merge_profile_peek(path, &h) == 0 &&
		    !(h.flags & (MERGE_PROF_STATS | MERGE_PROF_STACKS | MERGE_PROF_KERNEL)))
			m->skipped_samples += h.total;
	}
}

int report_model_load(struct report_model *m, const char *db, const char *epoch, int event,
		      int lines, const char *cmd)
{
	struct merge_db mdb;
	char why[300];
	memset(m, 0, sizeof(*m));
	m->db = db;
	m->event = event;
	m->lines = lines;
	m->cmd = cmd;
	if (merge_db_open(&mdb, db, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof %s: database %s: %s\n", cmd, db, why);
		return 1;
	}
	if (epoch && !strcmp(epoch, "all")) {
		int ep[4096], n = merge_db_epochs(&mdb, ep, 4096);
		for (int i = 0; i < n; i++) {
			merge_db_load_ex(&mdb, ep[i], on_profile, bad_file, m, stderr);
			merge_db_aside(&mdb, ep[i], bad_file, m);
		}
		merge_db_aside(&mdb, -1, bad_file, m);
		snprintf(m->epoch, sizeof(m->epoch), "all");
	} else {
		char *end = NULL;
		long e = epoch ? strtol(epoch, &end, 10) : merge_db_epoch(&mdb);
		if (e < 1 || e > 1000000000 || (end && *end)) {
			merge_db_close(&mdb);
			return report_usage(cmd, "--epoch takes a number >= 1 or all");
		}
		if (epoch && missing_epoch(&mdb, (int)e, cmd)) {
			merge_db_close(&mdb);
			return 1;
		}
		merge_db_load_ex(&mdb, (int)e, on_profile, bad_file, m, stderr);
		merge_db_aside(&mdb, (int)e, bad_file, m);
		merge_db_aside(&mdb, -1, bad_file, m);
		snprintf(m->epoch, sizeof(m->epoch), "%ld", e);
	}
	m->stats.merged = m->stats.merged > m->skipped_samples ? m->stats.merged - m->skipped_samples : 0;
	merge_db_close(&mdb);
	if (event > 0 && !m->present[event]) {
		missing_event(m, cmd);
		report_model_free(m);
		return 1;
	}
	return 0;
}

int report_image_unsampled(const char *path)
{
	return !strncmp(path, "[kernel:", 8) || !strncmp(path, "[start-up:", 10);
}

uint64_t report_model_sampled(const struct report_model *m, unsigned ev)
{
	uint64_t n = 0;
	for (size_t i = 0; i < m->npcs; i++)
		if (m->pcs[i].event == ev && !report_image_unsampled(m->images[m->pcs[i].image].path))
			n += m->pcs[i].count;
	return n;
}

static int cmp_by_proc(const void *a, const void *b, void *arg)
{
	const struct report_model *m = arg;
	const struct report_model_pc *x = &m->pcs[*(const size_t *)a], *y = &m->pcs[*(const size_t *)b];
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	if (x->proc != y->proc)
		return strcmp(x->proc, y->proc);
	return x->vaddr < y->vaddr ? -1 : x->vaddr > y->vaddr;
}

size_t *report_model_by_proc(const struct report_model *m, unsigned ev, size_t *n)
{
	size_t *v = malloc((m->npcs ? m->npcs : 1) * sizeof(*v));
	if (!v) {
		perror("vprof");
		exit(1);
	}
	*n = 0;
	for (size_t i = 0; i < m->npcs; i++)
		if (m->pcs[i].event == ev)
			v[(*n)++] = i;
	qsort_r(v, *n, sizeof(*v), cmp_by_proc, (void *)m);
	return v;
}

unsigned report_model_main_event(const struct report_model *m, int ev)
{
	unsigned best = 0;
	if (ev > 0)
		return m->total[ev] ? (unsigned)ev : 0;
	for (unsigned e = 1; e < UPCALL_EV_MAX; e++)
		if (m->total[e] > m->total[best])
			best = e;
	return m->total[best] ? best : 0;
}

const char *report_model_code_name(const struct report_model_image *im, uint64_t vaddr)
{
	uint64_t key = vaddr >> MERGE_CODE_LINE_BITS;
	for (size_t i = 0; i < im->ncode; i++)
		if (im->code[i].key == key)
			return im->code[i].name;
	return NULL;
}

static int by_line(const void *a, const void *b)
{
	const struct report_code_line *x = a, *y = b;
	return (x->line > y->line) - (x->line < y->line);
}

size_t report_model_code_lines(const struct report_model *m, unsigned ev, uint32_t image, uint64_t key,
			       struct report_code_line **out)
{
	struct report_code_line *v = NULL;
	size_t n = 0, cap = 0;
	for (size_t i = 0; i < m->npcs; i++) {
		const struct report_model_pc *pc = &m->pcs[i];
		if (pc->event != ev || pc->image != image || pc->vaddr >> MERGE_CODE_LINE_BITS != key)
			continue;
		v = report_grow(v, &cap, n, sizeof(*v));
		v[n++] = (struct report_code_line){ MERGE_CODE_LINE(pc->vaddr), pc->count, 0 };
	}
	if (n)
		qsort(v, n, sizeof(*v), by_line);
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (o && v[o - 1].line == v[i].line)
			v[o - 1].samples += v[i].samples;
		else
			v[o++] = v[i];
	}
	*out = v;
	return o;
}

void report_model_free(struct report_model *m)
{
	for (size_t i = 0; i < m->nimages; i++) {
		report_image_close(m->images[i].sym);
		free(m->images[i].code);
	}
	for (size_t i = 0; i < m->capstrings; i++)
		free(m->strings[i].s);
	free(m->strings);
	free(m->images);
	free(m->pcs);
	for (size_t i = 0; i < m->nbad; i++)
		free(m->bad[i]);
	free(m->bad);
	memset(m, 0, sizeof(*m));
}
