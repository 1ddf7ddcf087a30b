/*
 * value_model.c — the value model (value_model.h): report_model_load() for the PC
 * samples and stats, then one more pass over the same epoch(s) for the
 * hotlists, which model.c leaves alone. Hotlists of one key found in
 * several profiles (several epochs, or one per event) are merged with
 * spool_hot_merge, so each (image, address, kind) appears once.
 */
#include "reports/value_model.h"
#include "reports/symbolize.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *report_value_own(struct report_value_model *vm, char *s)
{
	if (!s) {
		perror("vprof");
		exit(1);
	}
	vm->strs = report_grow(vm->strs, &vm->capstrs, vm->nstrs, sizeof(*vm->strs));
	return vm->strs[vm->nstrs++] = s;
}

static int on_profile(const struct merge_profile *p, void *arg)
{
	struct report_value_model *vm = arg;
	if ((p->flags & MERGE_PROF_STATS) || !p->nhot)
		return 0;
	/* An image with hotlists but no sampled PC is added here. */
	uint32_t ii = report_model_image(&vm->m, p);
	for (size_t i = 0; i < p->nhot; i++) {
		vm->hot = report_grow(vm->hot, &vm->caphot, vm->nhot, sizeof(*vm->hot));
		struct report_value_hot *v = &vm->hot[vm->nhot++];
		memset(v, 0, sizeof(*v));
		v->image = ii;
		v->vaddr = SPOOL_HOT_KEY_WHERE(p->hot[i].key);
		v->kind = SPOOL_HOT_KEY_KIND(p->hot[i].key);
		v->h = p->hot[i];
	}
	return 0;
}

static int by_place(const void *a, const void *b)
{
	const struct report_value_hot *x = a, *y = b;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return (x->kind > y->kind) - (x->kind < y->kind);
}

static int pc_by_place(const void *a, const void *b)
{
	const struct report_model_pc *x = a, *y = b;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->image != y->image)
		return x->image < y->image ? -1 : 1;
	return (x->vaddr > y->vaddr) - (x->vaddr < y->vaddr);
}

uint64_t report_value_pc_samples(const struct report_value_model *vm, uint32_t image, uint64_t vaddr)
{
	struct report_model_pc key = { .event = vm->ev, .image = image, .vaddr = vaddr };
	const struct report_model_pc *pc = bsearch(&key, vm->m.pcs, vm->m.npcs, sizeof(key), pc_by_place);
	return pc ? pc->count : 0;
}

/* The time an instruction takes, as PC samples: its source line's. A
 * timer interrupt lands after the instruction that took the time (skid:
 * in a loop `s = s * k + i` the imul had 0.1% and the add after it 89%),
 * so an instruction's own count understates it; the line holds both. */
uint64_t report_value_line_samples(const struct report_value_model *vm, const struct report_value_hot *v)
{
	uint64_t own = report_value_pc_samples(vm, v->image, v->vaddr), sum = 0;
	if (!v->w.file || v->w.line <= 0)
		return own;
	for (size_t i = 0; i < vm->m.npcs; i++) {
		const struct report_model_pc *pc = &vm->m.pcs[i];
		if (pc->event == vm->ev && pc->image == v->image && pc->line == v->w.line &&
		    pc->file && !strcmp(pc->file, v->w.file))
			sum += pc->count;
	}
	return sum > own ? sum : own;
}

int report_value_model_load(struct report_value_model *vm, const struct report_opts *o, const char *cmd)
{
	struct merge_db mdb;
	char why[300];
	int rc;
	memset(vm, 0, sizeof(*vm));
	if ((rc = report_model_load(&vm->m, o->db, o->epoch, o->event, 1, cmd)))
		return rc;
	vm->ev = report_model_main_event(&vm->m, o->event);
	vm->total = vm->m.total[vm->ev];
	qsort(vm->m.pcs, vm->m.npcs, sizeof(*vm->m.pcs), pc_by_place);
	if (merge_db_open(&mdb, o->db, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof %s: database %s: %s\n", cmd, o->db, why);
		return 1;
	}
	/* The model has checked the epoch: "all" or a number. */
	if (!strcmp(vm->m.epoch, "all")) {
		int ep[4096], n = merge_db_epochs(&mdb, ep, 4096);
		for (int i = 0; i < n; i++)
			merge_db_load(&mdb, ep[i], on_profile, vm, stderr);
	} else {
		merge_db_load(&mdb, atoi(vm->m.epoch), on_profile, vm, stderr);
	}
	merge_db_close(&mdb);

	qsort(vm->hot, vm->nhot, sizeof(*vm->hot), by_place);
	size_t o2 = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < vm->nhot; i++) {
		if (o2 && !by_place(&vm->hot[o2 - 1], &vm->hot[i]))
			spool_hot_merge(&vm->hot[o2 - 1].h, &vm->hot[i].h, &rng);
		else
			vm->hot[o2++] = vm->hot[i];
	}
	vm->nhot = o2;
	for (size_t i = 0; i < vm->nhot; i++) {
		struct report_value_hot *v = &vm->hot[i];
		spool_hot_sort(&v->h);
		v->samples = report_value_pc_samples(vm, v->image, v->vaddr);
		report_value_where(vm, v->image, v->vaddr, &v->w);
	}
	rc = report_value_calib_read(o->db, vm->levels, VALUE_LEVELS_MAX, cmd);
	vm->nlevels = rc > 0 ? rc : 0;
	return 0;
}

void report_value_model_free(struct report_value_model *vm)
{
	report_model_free(&vm->m);
	for (size_t i = 0; i < vm->nstrs; i++)
		free(vm->strs[i]);
	free(vm->strs);
	free(vm->hot);
	report_value_elf_free(vm);
	report_value_proto_free(vm);
	memset(vm, 0, sizeof(*vm));
}

void report_value_where(struct report_value_model *vm, uint32_t image, uint64_t vaddr, struct report_value_where *w)
{
	struct report_image *sym = vm->m.images[image].sym;
	const char *sys = NULL;
	memset(w, 0, sizeof(*w));
	if (sym)
		sys = report_sym_lookup(sym, vaddr, &w->start, &w->size);
	if (!sys) {
		w->proc = w->sysname = "[no symbol]";
		w->start = vaddr;
		return;
	}
	char *d = report_sym_demangle(sys);
	w->sysname = sys;
	w->proc = d ? report_value_own(vm, d) : sys;
	if (report_sym_source_line(sym, vaddr, &w->file, &w->line) != 0) {
		w->file = NULL;
		w->line = 0;
	}
}

int report_value_code_place(const struct report_value_model *vm, uint32_t holder, uint64_t code, uint32_t *image,
			    uint64_t *vaddr)
{
	if (!code)
		return -1;
	if (!(code & SPOOL_HOT_FOREIGN)) {
		*image = holder;
		*vaddr = code;
		return 0;
	}
	if (!spool_hot_is_xref(code))
		return -1;   /* absolute, in one process's layout */
	uint32_t id = SPOOL_HOT_XREF_ID(code);
	for (size_t i = 0; i < vm->m.nimages; i++) {
		const struct report_model_image *im = &vm->m.images[i];
		if (merge_profile_xref_id(im->build_id, im->build_id_len, im->path) == id) {
			*image = (uint32_t)i;
			*vaddr = SPOOL_HOT_XREF_VADDR(code);
			return 0;
		}
	}
	return -1;
}

int report_value_site(struct report_value_model *vm, uint32_t holder, uint64_t retaddr, struct report_value_where *w)
{
	uint32_t ii;
	uint64_t va, s, n;
	if (report_value_code_place(vm, holder, retaddr, &ii, &va) < 0 || !vm->m.images[ii].sym ||
	    !report_sym_lookup(vm->m.images[ii].sym, va - 1, &s, &n))
		return -1;
	report_value_where(vm, ii, va - 1, w);
	return 0;
}

const char *report_value_source(const struct report_value_where *w, char *buf, size_t cap)
{
	if (!w->file)
		return "[no line]";
	snprintf(buf, cap, "%s:%d", w->file, w->line);
	return buf;
}

double report_value_share(const struct spool_hotlist *h, int i)
{
	return h->vtot ? spool_hot_estimate(h, i) / (double)h->vtot : 0.0;
}

double report_value_hot_share(const struct report_value_hot *v, int i)
{
	if (v->kind != SPOOL_VK_CACHE && v->kind != SPOOL_VK_OBJECT)
		return report_value_share(&v->h, i);
	if (v->h.e[i].value == SPOOL_CACHE_WINDOW)
		return -1;
	double tot = 0;
	for (uint32_t e = 0; e < v->h.n; e++)
		if (v->h.e[e].value != SPOOL_CACHE_WINDOW)
			tot += spool_hot_estimate(&v->h, (int)e);
	return tot > 0 ? spool_hot_estimate(&v->h, i) / tot : 0.0;
}

const char *report_value_level_of(const struct report_value_model *vm, uint64_t ticks)
{
	for (int i = 0; i < vm->nlevels; i++)
		if (ticks <= vm->levels[i].upto || i == vm->nlevels - 1)
			return vm->levels[i].name;
	return NULL;
}

/* A code address in a value (RETADDR, TARGET): symbol+offset in the
 * image report_value_code_place() finds. */
static const char *code_fmt(const struct report_value_model *vm, uint32_t holder, uint64_t v, char *buf, size_t cap)
{
	uint32_t ii;
	uint64_t va;
	if (report_value_code_place(vm, holder, v, &ii, &va) < 0) {
		if (v & SPOOL_HOT_FOREIGN)
			snprintf(buf, cap, "%#llx (in another image)", (unsigned long long)(v & ~SPOOL_HOT_XREF));
		else
			snprintf(buf, cap, "%#llx", (unsigned long long)v);
		return buf;
	}
	if (!report_value_code_text(vm, ii, va, buf, cap))
		snprintf(buf, cap, "%#llx in %s", (unsigned long long)va, vm->m.images[ii].path);
	return buf;
}

const char *report_value_code_text(const struct report_value_model *vm, uint32_t image, uint64_t va, char *buf, size_t cap)
{
	uint64_t start, size;
	const char *name = vm->m.images[image].sym ? report_sym_lookup(vm->m.images[image].sym, va, &start, &size)
						  : NULL;
	if (!name)
		return NULL;
	char *d = report_sym_demangle(name);
	if (va == start)
		snprintf(buf, cap, "%s", d ? d : name);
	else
		snprintf(buf, cap, "%s+%#llx", d ? d : name, (unsigned long long)(va - start));
	free(d);
	return buf;
}

const char *report_value_fmt(const struct report_value_model *vm, unsigned kind, uint32_t holder, uint64_t v, char *buf,
			     size_t cap)
{
	int64_t s = (int64_t)v;
	if (kind >= SPOOL_VK_MODULE_FIRST && kind <= SPOOL_VK_MODULE_LAST) {
		/* Module kinds carry their format (vprof-module.h, VPROF_FMT_*). */
		double d;
		switch (SPOOL_VK_MODULE_FORMAT(kind)) {
		case 1: snprintf(buf, cap, "%lld", (long long)s); break;
		case 2: snprintf(buf, cap, "%llu", (unsigned long long)v); break;
		case 3:   /* the shortest text that reads back as the same double */
			memcpy(&d, &v, sizeof(d));
			snprintf(buf, cap, "%.15g", d);
			if (strtod(buf, NULL) != d)
				snprintf(buf, cap, "%.17g", d);
			break;
		default: snprintf(buf, cap, "%#llx", (unsigned long long)v);
		}
		return buf;
	}
	switch (kind) {
	case SPOOL_VK_RETADDR:
	case SPOOL_VK_TARGET:
	case SPOOL_VK_RANGE:
	case SPOOL_VK_TAKEN:
		return code_fmt(vm, holder, v, buf, cap);
	case SPOOL_VK_ADDR:
	case SPOOL_VK_ADDR_LATENCY:
		snprintf(buf, cap, "%#llx", (unsigned long long)v);
		break;
	case SPOOL_VK_STRIDE:
		snprintf(buf, cap, "%lld", (long long)s);
		break;
	case SPOOL_VK_BRANCH:
		snprintf(buf, cap, "%s", v == 1 ? "taken" : v == 0 ? "fell through" : "?");
		break;
	case SPOOL_VK_CACHE:
	case SPOOL_VK_OBJECT: {
		static const char *const d1[] = { "D1 hit", "D1 miss", "D1 unknown (hit?)", "D1 unknown (miss?)" };
		static const char *const ll[] = { "", ", LL hit", ", LL miss", ", LL unknown (hit?)",
						  ", LL unknown (miss?)" };
		unsigned a = SPOOL_CACHE_D1(v), b = SPOOL_CACHE_LL(v);
		if (v == SPOOL_CACHE_WINDOW)
			snprintf(buf, cap, "(windows)");
		else
			snprintf(buf, cap, "%s%s", a < 4 ? d1[a] : "?", b == SPOOL_CACHE_NONE ? "" : b < 4 ? ll[b + 1] : "?");
		break;
	}
	case SPOOL_VK_LATENCY: {
		const char *lv = report_value_level_of(vm, v);
		snprintf(buf, cap, "%llu cycles%s%s%s", (unsigned long long)v, lv ? " (" : "",
			 lv ? lv : "", lv ? ")" : "");
		break;
	}
	default:
		if (s > -1000000000 && s < 1000000000)
			snprintf(buf, cap, "%lld (%#llx)", (long long)s, (unsigned long long)v);
		else
			snprintf(buf, cap, "%#llx", (unsigned long long)v);
	}
	return buf;
}

/* ---- calibration file ----
 *
 *   # vprof calibrate: ...
 *   overhead TICKS
 *   level NAME TYPICAL UPTO FROM_BYTES TO_BYTES
 *
 * one level line per level, fastest first, UPTO increasing (the last
 * level's UPTO is its own median: everything slower is that level too). */

static void calib_path(const char *db, char *out, size_t cap)
{
	snprintf(out, cap, "%s/calibration", db);
}

int report_value_calib_read(const char *db, struct report_value_level *lv, int cap, const char *cmd)
{
	char path[600], line[256];
	int n = 0;
	calib_path(db, path, sizeof(path));
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		struct report_value_level l = { 0 };
		unsigned long long med, upto, from, to;
		if (line[0] == '#' || !strncmp(line, "overhead ", 9))
			continue;
		if (sscanf(line, "level %15s %llu %llu %llu %llu", l.name, &med, &upto, &from, &to) != 5 ||
		    n >= cap || (n && upto <= lv[n - 1].upto)) {
			fprintf(stderr, "vprof %s: %s is malformed (run vprof calibrate again); "
				"latencies shown in cycles only\n", cmd, path);
			fclose(f);
			return -1;
		}
		l.typical = med;
		l.upto = upto;
		l.from_bytes = from;
		l.to_bytes = to;
		lv[n++] = l;
	}
	fclose(f);
	return n;
}

int report_value_calib_write(const char *db, const struct report_value_level *lv, int n, uint64_t overhead)
{
	char path[600], tmp[620];
	calib_path(db, path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	if (mkdir(db, 0700) < 0 && errno != EEXIST)
		return -errno;
	FILE *f = fopen(tmp, "w");
	if (!f)
		return -errno;
	fprintf(f, "# vprof calibrate: load latency levels in TSC ticks, measured as\n"
		   "# rdtscp; load; rdtscp (as the interpreter times loads).\n"
		   "# level NAME TYPICAL UPTO FROM_BYTES TO_BYTES\n"
		   "overhead %llu\n", (unsigned long long)overhead);
	for (int i = 0; i < n; i++)
		fprintf(f, "level %s %llu %llu %llu %llu\n", lv[i].name, (unsigned long long)lv[i].typical,
			(unsigned long long)lv[i].upto, (unsigned long long)lv[i].from_bytes,
			(unsigned long long)lv[i].to_bytes);
	if (fclose(f) != 0 || rename(tmp, path) != 0) {
		int e = errno;
		unlink(tmp);
		return -e;
	}
	return 0;
}
