/*
 * tests/unit/symbolize.c — reports/symbolize.c against independent tools.
 *
 * The truth comes from binutils, not from libelf: symbol tables parsed from
 * `readelf -W --syms`, section bounds from `readelf -W -S`, build-ids from
 * `readelf -n`, PLT stub names from `objdump -d`, unwind ranges from
 * `readelf -wf`, source lines from `addr2line` (with objdump's decoded line
 * table as arbiter where addr2line names an inlined caller's file), C++
 * names from `c++filt`. A naive reference model (a linear scan over the
 * parsed symbols, applying the documented rules) says what each lookup
 * must return, and tens of thousands of addresses are probed: every
 * symbol's and FDE's start, middle, last byte, first byte after, and random
 * addresses in the text. Images: Debian's /usr/bin/python3.11 (stripped,
 * .dynsym only), libc.so.6 (with its debug file when libc6-dbg is
 * installed), libstdc++.so.6, and a small program compiled here with -g
 * (static, weak and local-alias functions, and an unsized assembly
 * function), stripped and with its debug file moved away in the ways the
 * library must cope with. Damaged files (missing, empty, garbage,
 * truncated, randomly corrupted) must be refused or survived, never crash.
 *
 * Prints PASS/FAIL lines; exits non-zero on any failure.
 */
#include "reports/symbolize.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3.11"
#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"
#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"

static int g_fail;
static char g_tmp[256];

static void report(bool ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void report(bool ok, const char *what, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		printf("PASS %s\n", what);
	} else {
		g_fail++;
		printf("FAIL %s: ", what);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	fflush(stdout);
}

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int sh(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof cmd, fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* ---- the reference model, fed by readelf ---- */

struct msym {
	uint64_t start, size;
	int shndx;
	int bind;		/* 0 global/unique, 1 weak, 2 local */
	bool plt;		/* a PLT stub as objdump names it */
	char *name;
};

struct msec {
	uint64_t addr, size, entsize;
	bool alloc, plt;
};

struct model {
	struct msym *s;
	size_t n;
	struct msec sec[4096];
	int nsec;
	const char *table;	/* which symbol table was parsed */
	/* unnamed code, from readelf -wf; named: 0, or an address inside the
	 * symbol that starts just after lo and names the FDE */
	struct { uint64_t lo, hi, named; } *fde;
	size_t nfde;
};

static void model_free(struct model *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->s[i].name);
	free(m->s);
	free(m->fde);
	m->fde = NULL;
	m->nfde = 0;
	m->s = NULL;
	m->n = 0;
}

/* Section headers: "[Nr] Name Type Address Off Size ES Flg ...". */
static int parse_sections(const char *file, struct model *m)
{
	char cmd[1024], line[1024];
	FILE *p;

	snprintf(cmd, sizeof cmd, "readelf -W -S '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	m->nsec = 0;
	while (fgets(line, sizeof line, p)) {
		char *lb = strchr(line, '['), *rb = strchr(line, ']');
		char name[256], type[64], flags[64] = "";
		unsigned long long addr, off, size, es;
		int idx;

		if (!lb || !rb || sscanf(lb + 1, "%d", &idx) != 1 || idx < 0 || idx >= 4096)
			continue;
		/* the null section has an empty name: its fields shift */
		if (sscanf(rb + 1, "%255s %63s %llx %llx %llx %llx %63s", name, type, &addr,
			   &off, &size, &es, flags) < 6) {
			if (idx == 0)
				m->nsec = 1;
			continue;
		}
		m->sec[idx].addr = addr;
		m->sec[idx].size = size;
		m->sec[idx].entsize = es;
		m->sec[idx].plt = !strncmp(name, ".plt", 4) && strchr(flags, 'X');
		m->sec[idx].alloc = strchr(flags, 'A') != NULL;
		if (idx + 1 > m->nsec)
			m->nsec = idx + 1;
	}
	return pclose(p) == 0 ? 0 : -EIO;
}

/* FUNC/IFUNC definitions of one table (".symtab" or ".dynsym"). */
static int parse_symbols(const char *file, const char *table, struct model *m)
{
	char cmd[1024], line[8192], cur[64] = "";
	size_t cap = 0;
	FILE *p;

	if (parse_sections(file, m) != 0)
		return -EIO;
	m->table = table;
	snprintf(cmd, sizeof cmd, "readelf -W --syms '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof line, p)) {
		char type[32], bind[32], vis[32], ndx[32], name[4096] = "";
		unsigned long long value;
		char sizes[64], *at;
		struct msym *s;
		int k;

		if (sscanf(line, "Symbol table '%63[^']'", cur) == 1)
			continue;
		if (strcmp(cur, table) != 0)
			continue;
		k = sscanf(line, " %*[0-9]: %llx %63s %31s %31s %31s %31s %4095s", &value, sizes,
			   type, bind, vis, ndx, name);
		if (k < 7 || (strcmp(type, "FUNC") && strcmp(type, "IFUNC")))
			continue;
		if (!strcmp(ndx, "UND") || !strcmp(ndx, "ABS") || !name[0])
			continue;
		/* readelf appends "@VERSION (n)" to .dynsym names; a .symtab name
		 * may itself contain "@@" (a .symver alias) and is kept whole */
		if (!strcmp(table, ".dynsym") && (at = strchr(name, '@')) != NULL)
			*at = 0;
		if (m->n == cap) {
			cap = cap ? cap * 2 : 1024;
			m->s = realloc(m->s, cap * sizeof *m->s);
			if (!m->s)
				abort();
		}
		s = &m->s[m->n];
		s->start = value;
		s->plt = false;
		s->size = strtoull(sizes, NULL, 0);	/* readelf prints big sizes in hex */
		s->shndx = atoi(ndx);
		if (s->shndx <= 0 || s->shndx >= m->nsec || !m->sec[s->shndx].alloc)
			continue;
		s->bind = !strcmp(bind, "GLOBAL") || !strcmp(bind, "UNIQUE") ? 0
			  : !strcmp(bind, "WEAK")			     ? 1
										     : 2;
		s->name = strdup(name);
		if (!s->name)
			abort();
		m->n++;
	}
	return pclose(p) == 0 ? 0 : -EIO;
}

/*
 * Add the PLT stubs objdump labels "name@plt" (it derives them from the
 * dynamic relocations, as the library must). PLT0 ("...@plt-0x10") and
 * IRELATIVE stubs ("*ABS*+0x...@plt") have no symbol to name them by.
 */
static int parse_plt(const char *file, struct model *m)
{
	char cmd[1024], line[8192];
	size_t cap = m->n;
	FILE *p;

	snprintf(cmd, sizeof cmd,
		 "objdump -d -j .plt -j .plt.sec -j .plt.got '%s' 2>/dev/null | grep '>:$'", file);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof line, p)) {
		unsigned long long a;
		char name[4096], *e;
		struct msym *s;
		int k;

		if (sscanf(line, "%llx <%4095[^>]>:", &a, name) != 2)
			continue;
		e = strstr(name, "@plt");
		if (!e || e[4] != 0 || strstr(name, "*ABS*"))
			continue;
		for (k = 1; k < m->nsec; k++)
			if (m->sec[k].alloc && a >= m->sec[k].addr && a < m->sec[k].addr + m->sec[k].size)
				break;
		if (k >= m->nsec || !m->sec[k].entsize)
			continue;
		if (m->n >= cap) {
			cap = cap ? cap * 2 : 1024;
			m->s = realloc(m->s, cap * sizeof *m->s);
			if (!m->s)
				abort();
		}
		s = &m->s[m->n++];
		s->start = a;
		s->size = m->sec[k].entsize;
		s->shndx = k;
		s->bind = 2;
		s->plt = true;
		s->name = strdup(name);
		if (!s->name)
			abort();
	}
	return pclose(p) == 0 ? 0 : -EIO;
}

/*
 * What report_sym_lookup(vaddr) must return, by the documented rules,
 * computed the slow way. Fills start/end of the answer and a mask of which
 * model symbols are acceptable names; returns false for "no symbol".
 */
static bool model_lookup(const struct model *m, uint64_t vaddr, bool from_file, uint64_t *start,
			 uint64_t *end, bool *ok_name, int *best_bind)
{
	bool found = false;
	uint64_t best = 0, bend = 0;
	size_t i, j;

#define LIVE(k) (from_file || !m->s[k].plt)
	/* sized symbols containing vaddr: the innermost (largest start) */
	for (i = 0; i < m->n; i++) {
		const struct msym *s = &m->s[i];

		if (LIVE(i) && s->size && vaddr >= s->start && vaddr - s->start < s->size &&
		    (!found || s->start > best)) {
			found = true;
			best = s->start;
		}
	}
	if (found) {
		/* any alias with the best binding among the sized ones there */
		*best_bind = 3;
		for (i = 0; i < m->n; i++)
			if (LIVE(i) && m->s[i].start == best && m->s[i].size &&
			    m->s[i].bind < *best_bind)
				*best_bind = m->s[i].bind;
		for (i = 0; i < m->n; i++) {
			const struct msym *s = &m->s[i];

			ok_name[i] = LIVE(i) && s->start == best && s->size &&
				     s->bind == *best_bind && vaddr - s->start < s->size;
			if (ok_name[i] && s->start + s->size > bend)
				bend = s->start + s->size;
		}
		*start = best;
		*end = bend;
		return true;
	}
	/* unsized: the nearest preceding, inside its section and before the
	 * next symbol, at an address where no sized symbol starts */
	for (i = 0; i < m->n; i++) {
		const struct msym *s = &m->s[i];
		const struct msec *sec = &m->sec[s->shndx];
		uint64_t lim = sec->addr + sec->size;
		bool shadowed = false;

		if (!LIVE(i) || s->size || s->start > vaddr || s->start < sec->addr ||
		    s->start >= lim)
			continue;
		for (j = 0; j < m->n; j++) {
			if (!LIVE(j))
				continue;
			if (m->s[j].start > s->start && m->s[j].start < lim)
				lim = m->s[j].start;
			if (m->s[j].start == s->start && m->s[j].size)
				shadowed = true;
		}
		if (shadowed || vaddr >= lim)
			continue;
		if (!found || s->start > best) {
			found = true;
			best = s->start;
			bend = lim;
		}
	}
	if (!found)
		return false;
	*best_bind = 3;
	for (i = 0; i < m->n; i++)
		if (LIVE(i) && m->s[i].start == best && !m->s[i].size && m->s[i].bind < *best_bind)
			*best_bind = m->s[i].bind;
	for (i = 0; i < m->n; i++)
		ok_name[i] = LIVE(i) && m->s[i].start == best && !m->s[i].size &&
			     m->s[i].bind == *best_bind;
	*start = best;
	*end = bend;
	return true;
#undef LIVE
}

/*
 * The FDEs of `file` as readelf prints them ("pc=lo..hi"), keeping those
 * the library must name "sub_<lo>": not in a PLT section and not starting
 * inside a symbol (by the model's own rules). Call after the symbols.
 * One whose last byte is in a symbol starting less than 16 bytes after
 * lo (glibc's __restore_rt, its FDE opened at the nop before it) takes
 * that symbol's name instead.
 */
static int parse_fdes(const char *file, struct model *m)
{
	char cmd[1024], line[1024];
	bool *scratch = calloc(m->n ? m->n : 1, sizeof *scratch);
	size_t cap = 0;
	FILE *p;

	if (!scratch)
		abort();
	snprintf(cmd, sizeof cmd, "readelf --debug-dump=frames '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	while (fgets(line, sizeof line, p)) {
		unsigned long long lo, hi;
		uint64_t st, en;
		char *pc = strstr(line, " FDE ");
		int bind, k;

		if (!pc || !(pc = strstr(pc, "pc=")) || sscanf(pc, "pc=%llx..%llx", &lo, &hi) != 2 ||
		    hi <= lo)
			continue;
		for (k = 1; k < m->nsec; k++)
			if (m->sec[k].plt && lo >= m->sec[k].addr && lo < m->sec[k].addr + m->sec[k].size)
				break;
		if (k < m->nsec)
			continue;
		if (model_lookup(m, lo, true, &st, &en, scratch, &bind))
			continue;
		if (m->nfde == cap) {
			cap = cap ? 2 * cap : 1024;
			m->fde = realloc(m->fde, cap * sizeof *m->fde);
			if (!m->fde)
				abort();
		}
		m->fde[m->nfde].lo = lo;
		m->fde[m->nfde].hi = hi;
		m->fde[m->nfde++].named =
			model_lookup(m, hi - 1, true, &st, &en, scratch, &bind) && st > lo &&
					st - lo < 16
				? hi - 1
				: 0;
	}
	free(scratch);
	return pclose(p) == 0 ? 0 : -EIO;
}

/*
 * Probe im at every interesting address of the model plus `nrandom` random
 * ones in [lo, hi); returns the number of mismatches (first few printed).
 */
static size_t compare_with_model(struct report_image *im, const struct model *m, bool from_file,
				 size_t nrandom, uint64_t lo, uint64_t hi, size_t *nprobes)
{
	bool *ok_name = calloc(m->n ? m->n : 1, sizeof *ok_name);
	size_t i, k, bad = 0, probes = 0, total;

	if (!ok_name)
		abort();
	total = m->n * 5 + m->nfde * 4 + nrandom;
	for (k = 0; k < total; k++) {
		uint64_t a, want_start = 0, want_end = 0, got_start = 0, got_size = 0;
		char fde_name[32];
		const char *got;
		bool want, name_ok = false;
		size_t fi = SIZE_MAX;	/* the innermost FDE holding a, if no symbol does */
		int bind;

		if (k < m->n * 5) {
			const struct msym *s = &m->s[k / 5];
			uint64_t offs[5] = { 0, s->size / 2, s->size ? s->size - 1 : 1, s->size,
					     (uint64_t)-1 };

			a = s->start + offs[k % 5];
		} else if (k < m->n * 5 + m->nfde * 4) {
			size_t f = (k - m->n * 5) / 4;
			uint64_t span = m->fde[f].hi - m->fde[f].lo;
			uint64_t offs[4] = { 0, span / 2, span - 1, span };

			a = m->fde[f].lo + offs[(k - m->n * 5) % 4];
		} else {
			if (hi <= lo)
				break;
			a = lo + (((uint64_t)rand() << 31) ^ (uint64_t)rand()) % (hi - lo);
		}
		probes++;
		want = model_lookup(m, a, from_file, &want_start, &want_end, ok_name, &bind);
		for (i = 0; !want && from_file && i < m->nfde; i++) {
			if (a < m->fde[i].lo || a >= m->fde[i].hi ||
			    (fi != SIZE_MAX && m->fde[i].lo < want_start))
				continue;
			want_start = m->fde[i].lo;
			want_end = m->fde[i].hi;
			fi = i;
		}
		fde_name[0] = 0;
		if (fi != SIZE_MAX) {
			uint64_t s2, e2;

			want = true;
			memset(ok_name, 0, m->n * sizeof *ok_name);
			if (m->fde[fi].named)	/* the symbol's names, not "sub_" */
				model_lookup(m, m->fde[fi].named, from_file, &s2, &e2, ok_name,
					     &bind);
			else
				snprintf(fde_name, sizeof fde_name, "sub_%llx",
					 (unsigned long long)want_start);
		}
		got = report_sym_lookup(im, a, &got_start, &got_size);
		if (want && got) {
			name_ok = fde_name[0] && !strcmp(fde_name, got);
			for (i = 0; i < m->n && !name_ok; i++)
				name_ok = ok_name[i] && !strcmp(m->s[i].name, got);
		}
		if (want != (got != NULL) || (want && (!name_ok || got_start != want_start ||
						       got_start + got_size != want_end))) {
			if (bad++ < 5) {
				const char *wn = fde_name[0] ? fde_name : "(none)";

				for (i = 0; i < m->n; i++)
					if (want && ok_name[i]) {
						wn = m->s[i].name;
						break;
					}
				printf("  mismatch at %#llx: got %s [%#llx,+%#llx), want %s "
				       "[%#llx,%#llx)\n",
				       (unsigned long long)a, got ? got : "(none)",
				       (unsigned long long)got_start,
				       (unsigned long long)got_size, wn,
				       (unsigned long long)(want ? want_start : 0),
				       (unsigned long long)(want ? want_end : 0));
			}
		}
	}
	free(ok_name);
	*nprobes = probes;
	return bad;
}

static bool text_bounds(const char *file, uint64_t *lo, uint64_t *hi)
{
	char cmd[1024], line[1024];
	unsigned long long a, s;
	bool ok = false;
	FILE *p;

	snprintf(cmd, sizeof cmd,
		 "readelf -W -S '%s' | sed -n 's/.*\\] \\.text *PROGBITS *//p'", file);
	p = popen(cmd, "r");
	if (!p)
		return false;
	if (fgets(line, sizeof line, p) && sscanf(line, "%llx %*x %llx", &a, &s) == 2) {
		*lo = a;
		*hi = a + s;
		ok = true;
	}
	pclose(p);
	return ok;
}

/* Build-id of `file` per `readelf -n`, as bytes; returns length or -1. */
static int readelf_build_id(const char *file, uint8_t *out, size_t cap)
{
	char cmd[1024], line[1024], hexs[256];
	int n = -1;
	size_t i;
	FILE *p;

	snprintf(cmd, sizeof cmd, "readelf -n '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	while (fgets(line, sizeof line, p)) {
		char *b = strstr(line, "Build ID: ");

		if (!b || sscanf(b + 10, "%255s", hexs) != 1)
			continue;
		for (i = 0; 2 * i + 1 < strlen(hexs) && i < cap; i++) {
			unsigned v;

			sscanf(hexs + 2 * i, "%2x", &v);
			out[i] = (uint8_t)v;
		}
		n = (int)i;
		break;
	}
	pclose(p);
	return n;
}

/* ---- tests ---- */

static void test_source_lines(struct report_image *im, const char *truth_file,
			      const struct model *m, size_t nrandom, uint64_t lo, uint64_t hi,
			      const char *what);

static void test_system_image(const char *file, const char *table, size_t nrandom)
{
	uint8_t want[64], got[64];
	struct report_image *im;
	struct model m = { 0 };
	char what[256], why[512] = "";
	const char *symfile;
	uint64_t lo = 0, hi = 0;
	size_t bad, probes;
	int wn, gn;

	if (access(file, R_OK) != 0) {
		snprintf(what, sizeof what, "%s present", file);
		report(false, what, "not readable here");
		return;
	}
	wn = readelf_build_id(file, want, sizeof want);
	gn = report_read_build_id(file, got, sizeof got);
	snprintf(what, sizeof what, "build-id of %s equals readelf -n", file);
	report(wn > 0 && gn == wn && !memcmp(want, got, (size_t)wn), what,
	       "readelf %d bytes, ours %d", wn, gn);

	im = report_image_open(file, got, gn > 0 ? (size_t)gn : 0, why, sizeof why);
	snprintf(what, sizeof what, "open %s", file);
	report(im != NULL, what, "%s", why);
	if (!im)
		return;
	/* the model reads the same file the library chose (a debug file if a
	 * -dbgsym package is installed), .symtab first as the library does */
	symfile = report_image_symfile(im) ? report_image_symfile(im) : file;
	if (parse_symbols(symfile, ".symtab", &m) != 0 || m.n == 0)
		parse_symbols(symfile, table, &m);
	if (m.n > 0) {
		parse_plt(file, &m);
		parse_fdes(file, &m);
	}
	if (m.n == 0) {
		snprintf(what, sizeof what, "readelf %s of %s", table, symfile);
		report(false, what, "no symbols parsed");
		goto out;
	}
	text_bounds(file, &lo, &hi);
	{
		size_t i, nplt = 0, named = 0;

		for (i = 0; i < m.n; i++) {
			const char *got;

			if (!m.s[i].plt)
				continue;
			nplt++;
			got = report_sym_lookup(im, m.s[i].start + 4, NULL, NULL);
			named += got && !strcmp(got, m.s[i].name);
		}
		snprintf(what, sizeof what, "%s: %zu PLT stubs named as objdump names them", file,
			 nplt);
		report(nplt > 0 && named == nplt, what, "%zu of %zu", named, nplt);
	}
	bad = compare_with_model(im, &m, true, nrandom, lo, hi, &probes);
	snprintf(what, sizeof what,
		 "lookup on %s (%s of %s, %zu symbols, %zu unnamed FDEs) agrees with readelf",
		 file, m.table, symfile, m.n, m.nfde);
	report(bad == 0 && probes > 1000, what, "%zu mismatches of %zu addresses", bad, probes);

	if (strcmp(symfile, file) != 0) {
		/* a -dbgsym package is installed: its DWARF against addr2line */
		snprintf(what, sizeof what, "source lines of %s (from %s) agree with addr2line",
			 file, symfile);
		test_source_lines(im, symfile, &m, 3000, lo, hi, what);
	}
	{
		const char *f = NULL;
		int line = 0, rc = report_sym_source_line(im, m.s[0].start, &f, &line);

		/* Nothing on this machine carries DWARF for system images unless
		 * a -dbgsym package is installed; either answer must be sane. */
		snprintf(what, sizeof what, "source line on %s is an error or a real line", file);
		report(rc < 0 ? rc == -ENODATA || rc == -ENOENT : (f && line > 0), what,
		       "rc %d", rc);
	}
out:
	model_free(&m);
	report_image_close(im);
}

static void perf_note(void)
{
	struct report_image *im = report_image_open(LIBC, NULL, 0, NULL, 0);
	struct timespec t0, t1;
	uint64_t lo, hi, i, hits = 0;
	double ns;

	if (!im || !text_bounds(LIBC, &lo, &hi))
		goto out;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < 1000000; i++)
		hits += report_sym_lookup(im, lo + (i * 2654435761u) % (hi - lo), NULL, NULL) != NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ns = ((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6;
	printf("note: %zu libc symbols, 1e6 lookups at %.0f ns each, %llu hits\n",
	       report_image_nsyms(im), ns, (unsigned long long)hits);
out:
	report_image_close(im);
}

static const char *const k_fixture_src =
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"static int vp_helper(int x)\n"			/* line 3 */
	"{\n"
	"\tint y = x * 3;\n"
	"\treturn y ^ (x >> 2);\n"
	"}\n"
	"int vp_alpha(int n)\n"				/* line 8 */
	"{\n"
	"\tint s = 0;\n"
	"\tfor (int i = 0; i < n; i++)\n"
	"\t\ts += vp_helper(i) + (i & 7 ? i / 3 : i * 5);\n"
	"\treturn s;\n"
	"}\n"
	"__attribute__((noinline)) int vp_gamma(int n)\n"	/* line 15 */
	"{\n"
	"\treturn n * n + VARIANT;\n"
	"}\n"
	"extern int vp_gamma_weak(int) __attribute__((weak, alias(\"vp_gamma\")));\n"
	"static int vp_gamma_local(int) __attribute__((alias(\"vp_gamma\"), used));\n"
	"__asm__(\".text\\n.globl vp_asm\\n.type vp_asm,@function\\nvp_asm:\\n"
	"\\tnop\\n\\tnop\\n\\tmovl $7, %eax\\n\\tret\\n\");\n"
	"int vp_asm(void);\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"\tint n = argc > 1 ? atoi(argv[1]) : 10;\n"
	"\tprintf(\"%d\\n\", vp_alpha(n) + vp_gamma(n) + vp_gamma_weak(n) + vp_asm());\n"
	"\treturn 0;\n"
	"}\n";

static bool make_fixture(const char *name, int variant, const char *extra)
{
	char src[512];
	FILE *f;

	snprintf(src, sizeof src, "%s/%s.c", g_tmp, name);
	f = fopen(src, "w");
	if (!f)
		return false;
	fprintf(f, "#define VARIANT %d\n", variant);
	fputs(k_fixture_src, f);
	fclose(f);
	return sh("gcc -g -O1 %s -o %s/%s %s", extra, g_tmp, name, src) == 0;
}

/*
 * A second opinion on file names: addr2line names the file of the
 * enclosing function for some inlined code, where the line table itself
 * (which both libdw and this reader use) names the included file. The
 * decoded line table as printed by binutils' objdump is the arbiter: the
 * last row at or before the address, unless that row ends a sequence.
 */
struct lrow {
	uint64_t addr;
	size_t order;
	int line;		/* 0: end of sequence */
	char name[64];
};

static int lrow_cmp(const void *pa, const void *pb)
{
	const struct lrow *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if ((a->line == 0) != (b->line == 0))	/* an end before a start */
		return a->line == 0 ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

static struct lrow *objdump_rows(const char *file, size_t *n)
{
	char cmd[1024], line[1024];
	struct lrow *r = NULL;
	size_t cap = 0;
	FILE *p;

	*n = 0;
	snprintf(cmd, sizeof cmd, "objdump --dwarf=decodedline '%s' 2>/dev/null", file);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	while (fgets(line, sizeof line, p)) {
		char name[256], ln[32];
		unsigned long long a;

		if (sscanf(line, "%255s %31s 0x%llx", name, ln, &a) != 3 ||
		    (ln[0] != '-' && (ln[0] < '0' || ln[0] > '9')))
			continue;
		if (*n == cap) {
			cap = cap ? 2 * cap : 65536;
			r = realloc(r, cap * sizeof *r);
			if (!r)
				abort();
		}
		r[*n].addr = a;
		r[*n].order = *n;
		r[*n].line = ln[0] == '-' ? 0 : atoi(ln);
		snprintf(r[*n].name, sizeof r[*n].name, "%.63s",
			 strrchr(name, '/') ? strrchr(name, '/') + 1 : name);
		(*n)++;
	}
	pclose(p);
	qsort(r, *n, sizeof *r, lrow_cmp);
	return r;
}

static const struct lrow *row_at(const struct lrow *r, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].addr <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == 0 || r[lo - 1].line == 0 ? NULL : &r[lo - 1];
}

/* addr2line on every byte of every fixture function vs our source lines. */
static void test_source_lines(struct report_image *im, const char *truth_file,
			      const struct model *m, size_t nrandom, uint64_t lo, uint64_t hi,
			      const char *what)
{
	char cmd[1024], addrs[512], line[2048];
	FILE *in, *out;
	size_t i, nprobes = 0, bad = 0, nfd = 0;
	struct lrow *fdiff = calloc(4096, sizeof *fdiff);
	uint64_t a;

	snprintf(addrs, sizeof addrs, "%s/addrs", g_tmp);
	in = fopen(addrs, "w");
	if (!in || !fdiff)
		abort();
	for (i = 0; i < m->n && nrandom == 0; i++)
		if (!strncmp(m->s[i].name, "vp_", 3) && m->s[i].size)
			for (a = m->s[i].start; a < m->s[i].start + m->s[i].size; a++)
				fprintf(in, "%llx\n", (unsigned long long)a);
	for (i = 0; i < nrandom && hi > lo; i++)
		fprintf(in, "%llx\n", (unsigned long long)(lo + (((uint64_t)rand() << 31) ^
								  (uint64_t)rand()) % (hi - lo)));
	fclose(in);
	snprintf(cmd, sizeof cmd, "addr2line -a -e '%s' < '%s' 2>/dev/null", truth_file, addrs);
	out = popen(cmd, "r");
	if (!out)
		abort();
	/* -a prints each address, then "file:line[ (discriminator N)]" */
	while (fgets(line, sizeof line, out)) {
		unsigned long long addr;
		char loc[2048], *colon;
		const char *gf = NULL;
		int wl, gl = 0, rc;

		if (sscanf(line, "0x%llx", &addr) != 1 || !fgets(loc, sizeof loc, out))
			continue;
		loc[strcspn(loc, " \n")] = 0;
		colon = strrchr(loc, ':');
		if (!colon)
			continue;
		*colon = 0;
		wl = atoi(colon + 1);
		nprobes++;
		rc = report_sym_source_line(im, addr, &gf, &gl);
		if (strcmp(loc, "??") == 0 || wl == 0) {
			if (rc == 0 && bad++ < 5)
				printf("  %#llx: addr2line knows nothing, we say %s:%d\n", addr, gf,
				       gl);
			continue;
		}
		if (rc == 0 && gl == wl && strcmp(gf, loc) != 0 && nfd < 4096) {
			fdiff[nfd].addr = addr;	/* judged by the line table below */
			fdiff[nfd].order = nfd;
			fdiff[nfd].line = gl;
			snprintf(fdiff[nfd].name, sizeof fdiff[nfd].name, "%s",
				 strrchr(gf, '/') ? strrchr(gf, '/') + 1 : gf);
			nfd++;
			continue;
		}
		if (rc != 0 || strcmp(gf, loc) != 0 || gl != wl) {
			if (bad++ < 5)
				printf("  %#llx: addr2line %s:%d, we %s:%d (rc %d)\n", addr, loc, wl,
				       rc == 0 ? gf : "-", gl, rc);
		}
	}
	pclose(out);
	if (nfd > 0) {
		size_t nrows;
		struct lrow *rows = objdump_rows(truth_file, &nrows);

		for (i = 0; i < nfd; i++) {
			const struct lrow *r = row_at(rows, nrows, fdiff[i].addr);

			if (r && r->line == fdiff[i].line && !strcmp(r->name, fdiff[i].name))
				continue;
			if (bad++ < 5)
				printf("  %#llx: we %s:%d, objdump's line table %s:%d\n",
				       (unsigned long long)fdiff[i].addr, fdiff[i].name,
				       fdiff[i].line, r ? r->name : "-", r ? r->line : 0);
		}
		printf("note: %zu of %zu file names differ from addr2line's; the line table "
		       "decides\n", nfd, nprobes);
		free(rows);
	}
	free(fdiff);
	/* the disagreement is about inlined code only: a minority of PCs (a
	 * path-joining mistake would show on nearly all of them) */
	report(bad == 0 && nprobes > 50 && nfd <= nprobes / 10, what,
	       "%zu of %zu addresses differ, %zu file names differ from addr2line", bad, nprobes,
	       nfd);
}

/*
 * Independent of addr2line: every line we give for an address inside a
 * function must lie in that function's own lines of the source text we
 * wrote, or in the lines of a function inlined into it.
 */
static void test_line_ranges(struct report_image *im, const struct model *m, const char *what)
{
	/* lines count the "#define VARIANT" line make_fixture() puts first */
	static const struct { const char *fn; int lo1, hi1, lo2, hi2; } k_fn[] = {
		{ "vp_alpha", 9, 15, 4, 8 },	/* vp_helper may be inlined */
		{ "vp_gamma", 16, 19, 16, 19 },
	};
	size_t i, j, probes = 0;
	uint64_t a;
	int bad = 0;

	for (i = 0; i < sizeof k_fn / sizeof k_fn[0]; i++) {
		for (j = 0; j < m->n; j++) {
			if (strcmp(m->s[j].name, k_fn[i].fn) != 0)
				continue;
			for (a = m->s[j].start; a < m->s[j].start + m->s[j].size; a++) {
				const char *f = NULL;
				int line = 0, rc = report_sym_source_line(im, a, &f, &line);

				probes++;
				if (rc == 0 && strstr(f, "/prog.c") &&
				    ((line >= k_fn[i].lo1 && line <= k_fn[i].hi1) ||
				     (line >= k_fn[i].lo2 && line <= k_fn[i].hi2)))
					continue;
				if (bad++ < 5)
					printf("  %s+%#llx: rc %d %s:%d\n", k_fn[i].fn,
					       (unsigned long long)(a - m->s[j].start), rc,
					       f ? f : "-", line);
			}
		}
	}
	report(bad == 0 && probes > 10, what, "%d of %zu addresses outside their function",
	       bad, probes);
}

static void test_fixture(void)
{
	char prog[512], prog2[512], stripped[512], dbgdir[512], dbgfile[768], why[512];
	char hexs[130], wrong_why[512] = "";
	uint8_t id[64], id2[64], wrong[64];
	struct report_image *im;
	struct model m = { 0 };
	size_t bad, probes;
	int n, n2, i;
	const char *name;
	uint64_t st, sz, tlo = 0, thi = 0;

	if (!make_fixture("prog", 1, "") || !make_fixture("prog2", 2, "")) {
		report(false, "compile the -g fixture", "gcc failed");
		return;
	}
	snprintf(prog, sizeof prog, "%s/prog", g_tmp);
	snprintf(prog2, sizeof prog2, "%s/prog2", g_tmp);
	n = report_read_build_id(prog, id, sizeof id);
	n2 = report_read_build_id(prog2, id2, sizeof id2);
	report(n > 0 && n2 == n && memcmp(id, id2, (size_t)n) != 0,
	       "fixture variants have distinct build-ids", "lengths %d %d", n, n2);
	if (n <= 0)
		return;
	if (parse_symbols(prog, ".symtab", &m) != 0 || m.n == 0 || parse_plt(prog, &m) != 0 ||
	    parse_fdes(prog, &m) != 0) {
		report(false, "readelf .symtab of fixture", "nothing parsed");
		return;
	}

	text_bounds(prog, &tlo, &thi);

	/* 1. the unstripped program: .symtab and its own DWARF */
	unsetenv("VPROF_DEBUG_DIRS");
	im = report_image_open(prog, id, (size_t)n, why, sizeof why);
	report(im != NULL, "open -g fixture", "%s", why);
	if (im) {
		bad = compare_with_model(im, &m, true, 2000, tlo, thi, &probes);
		report(bad == 0, "fixture .symtab lookups agree with readelf", "%zu of %zu", bad,
		       probes);
		name = report_sym_lookup(im, 0, NULL, NULL);
		for (i = 0; i < (int)m.n; i++)
			if (!strcmp(m.s[i].name, "vp_gamma"))
				name = report_sym_lookup(im, m.s[i].start + 1, &st, &sz);
		report(name && !strcmp(name, "vp_gamma"),
		       "global vp_gamma preferred over its weak and local aliases", "got %s",
		       name ? name : "(none)");
		for (i = 0, name = NULL; i < (int)m.n; i++)
			if (!strcmp(m.s[i].name, "vp_asm"))
				name = report_sym_lookup(im, m.s[i].start + 2, &st, &sz);
		report(name && !strcmp(name, "vp_asm") && sz > 2,
		       "unsized assembly function found by the fallback", "got %s",
		       name ? name : "(none)");
		test_source_lines(im, prog, &m, 0, 0, 0, "fixture source lines agree with addr2line");
		test_line_ranges(im, &m, "fixture lines lie inside their functions in the source");
		report_image_close(im);
	}

	/* 1b. without .debug_aranges (clang's default): the CU range table */
	if (sh("objcopy --remove-section=.debug_aranges %s %s/noar", prog, g_tmp) == 0) {
		char p[600];

		snprintf(p, sizeof p, "%s/noar", g_tmp);
		im = report_image_open(p, NULL, 0, why, sizeof why);
		report(im != NULL, "open fixture without .debug_aranges", "%s", why);
		if (im) {
			test_source_lines(im, prog, &m, 0, 0, 0,
					  "no aranges: fixture lines agree with addr2line");
			test_source_lines(im, prog, &m, 3000, tlo, thi,
					  "no aranges: lines of random text agree with addr2line");
			report_image_close(im);
		}
	} else {
		report(false, "remove .debug_aranges", "objcopy failed");
	}

	/* 2. a wrong build-id: the file's symbols must not be used */
	memcpy(wrong, id, (size_t)n);
	wrong[n - 1] ^= 0x5a;
	im = report_image_open(prog, wrong, (size_t)n, wrong_why, sizeof wrong_why);
	report(im == NULL && strstr(wrong_why, "build-id mismatch"),
	       "build-id mismatch refused with a reason", "im %p, why '%s'", (void *)im,
	       wrong_why);
	printf("note: mismatch reason: %s\n", wrong_why);
	report_image_close(im);

	/* 3. stripped binary, debug file under VPROF_DEBUG_DIRS by build-id */
	for (i = 0; i < n; i++)
		snprintf(hexs + 2 * i, 3, "%02x", id[i]);
	snprintf(stripped, sizeof stripped, "%s/prog.stripped", g_tmp);
	snprintf(dbgdir, sizeof dbgdir, "%s/dbg", g_tmp);
	snprintf(dbgfile, sizeof dbgfile, "%s/.build-id/%.2s/%s.debug", dbgdir, hexs, hexs + 2);
	if (sh("objcopy --only-keep-debug %s %s/prog.debug && cp %s %s && strip --strip-all %s"
	       " && mkdir -p %s/.build-id/%.2s && cp %s/prog.debug %s",
	       prog, g_tmp, prog, stripped, stripped, dbgdir, hexs, g_tmp, dbgfile) != 0) {
		report(false, "make stripped fixture and debug file", "objcopy/strip failed");
		goto out;
	}
	im = report_image_open(stripped, id, (size_t)n, why, sizeof why);
	report(im != NULL && report_sym_lookup(im, m.s[0].start, NULL, NULL) == NULL,
	       "stripped fixture without debug dirs opens, has no vp_ symbols", "%s",
	       im ? "symbols found anyway" : why);
	if (im) {
		const char *f;
		int line;
		int rc = report_sym_source_line(im, m.s[0].start, &f, &line);

		report(rc == -ENODATA, "stripped fixture: no DWARF", "rc %d", rc);
		report_image_close(im);
	}
	{
		char env[1200];

		snprintf(env, sizeof env, "/nonexistent/vprof-debug:%s", dbgdir);
		setenv("VPROF_DEBUG_DIRS", env, 1);
	}
	im = report_image_open(stripped, id, (size_t)n, why, sizeof why);
	report(im != NULL && report_image_symfile(im) &&
		       !strcmp(report_image_symfile(im), dbgfile),
	       "debug file found by build-id under VPROF_DEBUG_DIRS", "%s",
	       im ? (report_image_symfile(im) ? report_image_symfile(im) : "no symbols") : why);
	if (im) {
		bad = compare_with_model(im, &m, true, 2000, tlo, thi, &probes);
		report(bad == 0, "debug-file lookups agree with readelf of the original",
		       "%zu of %zu", bad, probes);
		test_source_lines(im, prog, &m, 0, 0, 0, "debug-file source lines agree with addr2line");
		report_image_close(im);
	}

	/* 4. the path now holds another build: symbols come from the debug file */
	why[0] = 0;
	im = report_image_open(prog2, id, (size_t)n, why, sizeof why);
	report(im != NULL, "replaced file: opened through the debug file", "%s", why);
	if (im) {
		/* the stubs' code is in the replaced file: no @plt names */
		bad = compare_with_model(im, &m, false, 2000, tlo, thi, &probes);
		report(bad == 0, "replaced file: lookups are those of the original build",
		       "%zu of %zu", bad, probes);
		report_image_close(im);
	}
	unsetenv("VPROF_DEBUG_DIRS");

	/* 5. .gnu_debuglink in <dir>/.debug/, with and without a build-id */
	if (sh("mkdir -p %s/ln/.debug && cp %s/prog.debug %s/ln/.debug/prog.debug && "
	       "objcopy --add-gnu-debuglink=%s/ln/.debug/prog.debug %s %s/ln/prog",
	       g_tmp, g_tmp, g_tmp, g_tmp, stripped, g_tmp) == 0) {
		char p[600];

		snprintf(p, sizeof p, "%s/ln/prog", g_tmp);
		im = report_image_open(p, NULL, 0, why, sizeof why);
		name = report_image_symfile(im);
		report(im && name && strstr(name, "/ln/.debug/prog.debug"),
		       "debug file found by .gnu_debuglink in <dir>/.debug/", "%s",
		       im ? (name ? name : "no symbols") : why);
		if (im) {
			bad = compare_with_model(im, &m, true, 500, tlo, thi, &probes);
			report(bad == 0, "debuglink lookups agree with readelf", "%zu of %zu", bad,
			       probes);
		}
		report_image_close(im);
	} else {
		report(false, "make debuglink fixture", "objcopy failed");
	}
	if (make_fixture("nb", 3, "-Wl,--build-id=none") && make_fixture("nb2", 4, "-Wl,--build-id=none") &&
	    sh("cd %s && mkdir -p nbd/.debug && objcopy --only-keep-debug nb nbd/.debug/nb.debug && "
	       "objcopy --strip-all --add-gnu-debuglink=nbd/.debug/nb.debug nb nbd/nb && "
	       "objcopy --only-keep-debug nb2 nbd/.debug/nb2.debug",
	       g_tmp) == 0) {
		char p[600];
		uint8_t tmp[64];

		snprintf(p, sizeof p, "%s/nbd/nb", g_tmp);
		report(report_read_build_id(p, tmp, sizeof tmp) == -ENODATA,
		       "no build-id note gives -ENODATA", "%s", "-");
		im = report_image_open(p, NULL, 0, why, sizeof why);
		name = im ? report_sym_lookup(im, 0, NULL, NULL) : NULL;
		report(im && report_image_symfile(im) &&
			       strstr(report_image_symfile(im), "nb.debug"),
		       "no build-id: debuglink file accepted by its CRC", "%s",
		       im ? "debug file not used" : why);
		report_image_close(im);
		/* a debug file of another build under the linked name: CRC differs */
		sh("cd %s/nbd/.debug && mv nb.debug nb.good && cp nb2.debug nb.debug", g_tmp);
		im = report_image_open(p, NULL, 0, why, sizeof why);
		report(im && !report_image_symfile(im),
		       "no build-id: debuglink file of another build refused by CRC", "%s",
		       im ? report_image_symfile(im) : why);
		report_image_close(im);
	} else {
		report(false, "make build-id-less fixture", "gcc/objcopy failed");
	}

	/* 6. damaged copies */
	{
		static const long k_sizes[] = { 0, 16, 64, 1000, -2, -1 };
		struct stat stt;
		char p[600];
		size_t k;
		int refused = 0, tried = 0;

		snprintf(p, sizeof p, "%s/trunc", g_tmp);
		if (stat(prog, &stt) == 0) {
			for (k = 0; k < sizeof k_sizes / sizeof k_sizes[0]; k++) {
				long len = k_sizes[k] == -2 ? stt.st_size / 2
					   : k_sizes[k] == -1 ? stt.st_size - 1
							     : k_sizes[k];

				sh("cp %s %s && truncate -s %ld %s", prog, p, len, p);
				why[0] = 0;
				im = report_image_open(p, NULL, 0, why, sizeof why);
				tried++;
				if (!im && why[0])
					refused++;
				else
					printf("  truncated to %ld: %s\n", len,
					       im ? "opened" : "no reason");
				report_image_close(im);
			}
		}
		report(tried > 0 && refused == tried, "truncated copies refused with a reason",
		       "%d of %d", refused, tried);

		/* truncated, but the profile knows the build-id: debug file */
		setenv("VPROF_DEBUG_DIRS", dbgdir, 1);
		sh("cp %s %s && truncate -s %ld %s", prog, p, (long)stt.st_size / 2, p);
		im = report_image_open(p, id, (size_t)n, why, sizeof why);
		report(im && report_image_nsyms(im) > 0,
		       "truncated file with a known build-id falls back to the debug file", "%s",
		       im ? "no symbols" : why);
		report_image_close(im);
		unsetenv("VPROF_DEBUG_DIRS");

		snprintf(p, sizeof p, "%s/garbage", g_tmp);
		sh("head -c 8192 /dev/urandom > %s", p);
		why[0] = 0;
		im = report_image_open(p, NULL, 0, why, sizeof why);
		report(!im && why[0], "garbage file refused with a reason", "%s", why);
		report(report_read_build_id(p, id2, sizeof id2) == -ENOEXEC,
		       "build-id of garbage is -ENOEXEC", "%s", "-");
		report_image_close(im);
	}

	/* 7. random corruption: anything may happen except a crash */
	{
		FILE *f;
		char p[600];
		struct stat stt;
		int it, opened = 0, k;

		snprintf(p, sizeof p, "%s/fuzz", g_tmp);
		srand(12345);
		if (stat(prog, &stt) == 0) {
			for (it = 0; it < 300; it++) {
				sh("cp %s %s", prog, p);
				f = fopen(p, "r+");
				if (!f)
					break;
				for (k = 0; k < 24; k++) {
					fseek(f, rand() % stt.st_size, SEEK_SET);
					fputc(rand() & 0xff, f);
				}
				fclose(f);
				im = report_image_open(p, NULL, 0, why, sizeof why);
				if (im) {
					const char *sf;
					int sl;

					opened++;
					for (k = 0; k < (int)m.n; k++) {
						report_sym_lookup(im, m.s[k].start + 1, NULL, NULL);
						report_sym_source_line(im, m.s[k].start, &sf, &sl);
					}
				}
				report_image_close(im);
			}
		}
		printf("note: %d of 300 corrupted copies still opened\n", opened);
		report(true, "300 randomly corrupted copies: no crash", "%s", "-");
	}
out:
	model_free(&m);
}

/*
 * c++filt spells the standard abbreviations out (Ss as the whole
 * basic_string<...>), __cxa_demangle does not; both are right. Rewrite the
 * long forms to the short ones, in place, before comparing.
 */
static void shorten_std(char *s)
{
	static const char *const k_long[][2] = {
		{ "std::basic_string<char, std::char_traits<char>, std::allocator<char> >",
		  "std::string" },
		{ "std::basic_istream<char, std::char_traits<char> >", "std::istream" },
		{ "std::basic_ostream<char, std::char_traits<char> >", "std::ostream" },
		{ "std::basic_iostream<char, std::char_traits<char> >", "std::iostream" },
		/* "> >" is spaced only between two closing brackets */
		{ "std::string >", "std::string>" },
		{ "std::istream >", "std::istream>" },
		{ "std::ostream >", "std::ostream>" },
		{ "std::iostream >", "std::iostream>" },
	};
	size_t k;
	char *p;

	for (k = 0; k < sizeof k_long / sizeof k_long[0]; k++) {
		size_t ll = strlen(k_long[k][0]), sl = strlen(k_long[k][1]);

		while ((p = strstr(s, k_long[k][0])) != NULL) {
			memcpy(p, k_long[k][1], sl);
			memmove(p + sl, p + ll, strlen(p + ll) + 1);
		}
	}
}

/* report_sym_demangle() against c++filt on libstdc++'s exported names. */
static void test_demangle(void)
{
	char cmd[1024], line[8192], want[8192];
	struct model m = { 0 };
	size_t i, tried = 0, bad = 0;
	FILE *in, *out;

	if (access(LIBSTDCXX, R_OK) != 0 || parse_symbols(LIBSTDCXX, ".dynsym", &m) != 0) {
		printf("note: no libstdc++, demangling not tested\n");
		return;
	}
	snprintf(cmd, sizeof cmd, "%s/names", g_tmp);
	in = fopen(cmd, "w");
	if (!in)
		abort();
	for (i = 0; i < m.n; i++)
		fprintf(in, "%s\n", m.s[i].name);
	fclose(in);
	snprintf(cmd, sizeof cmd, "c++filt < %s/names", g_tmp);
	out = popen(cmd, "r");
	if (!out)
		abort();
	for (i = 0; i < m.n && fgets(want, sizeof want, out); i++) {
		char *got = report_sym_demangle(m.s[i].name);

		want[strcspn(want, "\n")] = 0;
		shorten_std(want);
		if (got)
			shorten_std(got);
		tried++;
		/* c++filt echoes what it cannot demangle; we return NULL */
		if (got ? strcmp(got, want) != 0 : strcmp(m.s[i].name, want) != 0) {
			if (bad++ < 5)
				printf("  %s: c++filt '%s', we '%s'\n", m.s[i].name, want,
				       got ? got : "(null)");
		}
		free(got);
	}
	pclose(out);
	snprintf(line, sizeof line, "demangled %zu libstdc++ names as c++filt does", tried);
	report(bad == 0 && tried > 1000, line, "%zu differ", bad);
	report(report_sym_demangle("main") == NULL && report_sym_demangle("_Zgarbage(") == NULL,
	       "plain and malformed names are not demangled", "%s", "-");
	model_free(&m);
}

static void test_missing(void)
{
	char why[512] = "";
	uint8_t id[20] = { 1, 2, 3 };
	struct report_image *im;

	im = report_image_open("/nonexistent/vprof/image.so", NULL, 0, why, sizeof why);
	report(!im && strstr(why, "No such file"), "missing file refused with a reason", "'%s'",
	       why);
	why[0] = 0;
	im = report_image_open("/nonexistent/vprof/image.so", id, sizeof id, why, sizeof why);
	report(!im && why[0], "missing file with unknown build-id refused", "'%s'", why);
	why[0] = 0;
	im = report_image_open(NULL, id, sizeof id, why, sizeof why);
	report(!im && why[0], "no path and unknown build-id refused", "'%s'", why);
	{
		char fifo[300];

		snprintf(fifo, sizeof fifo, "%s/fifo", g_tmp);
		if (mkfifo(fifo, 0600) == 0) {
			alarm(20);	/* a hang here is the failure */
			why[0] = 0;
			im = report_image_open(fifo, NULL, 0, why, sizeof why);
			alarm(0);
			report(!im && why[0], "a FIFO at the path is refused without blocking",
			       "'%s'", why);
			report_image_close(im);
		}
	}
	report(report_read_build_id("/nonexistent/x", id, sizeof id) == -ENOENT,
	       "build-id of missing file is -ENOENT", "%s", "-");
	report(report_sym_lookup(NULL, 0, NULL, NULL) == NULL, "lookup on NULL image", "%s", "-");
	report_image_close(NULL);
}

int main(void)
{
	snprintf(g_tmp, sizeof g_tmp, "/tmp/vprof-sym.XXXXXX");
	if (!mkdtemp(g_tmp)) {
		perror("mkdtemp");
		return 1;
	}
	srand(1);
	test_missing();
	test_system_image(PYTHON, ".dynsym", 20000);
	test_system_image(LIBC, ".dynsym", 20000);
	/* C++: long mangled names, many weak and same-address symbols */
	if (access(LIBSTDCXX, R_OK) == 0)
		test_system_image(LIBSTDCXX, ".dynsym", 20000);
	test_fixture();
	test_demangle();
	perf_note();
	if (!getenv("VPROF_KEEP_TMP"))
		sh("rm -rf '%s'", g_tmp);
	else
		printf("note: kept %s\n", g_tmp);
	return g_fail ? 1 : 0;
}
