/*
 * JIT names: the /tmp/perf-PID.map reader and the names of [jit:EXE]
 * profiles (contract and format in jit.h and format.h).
 *
 * Workload: a map holds from a few hundred lines (CPython) to millions
 * (a long Node.js run with --perf-basic-prof), read once per process at
 * merge time and looked up once per distinct unknown PC of that process.
 * It is read in chunks (no whole-file buffer), lines parsed by hand (no
 * sscanf: a hostile map must cost linear time), entries sorted once; a
 * lookup is a binary search plus a bounded walk back over entries whose
 * prefix-maximum end still covers the PC, which finds the latest line
 * covering it without an interval tree.
 *
 * Not async-signal-safe; single-threaded.
 */
#include "merge/jit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#define LINE_CAP 65536          /* longer lines are junk, skipped */
#define WALK_MAX 4096           /* overlap walk bound per lookup */

void merge_perfmap_init(struct merge_perfmap *m)
{
	memset(m, 0, sizeof(*m));
}

void merge_perfmap_free(struct merge_perfmap *m)
{
	free(m->v);
	free(m->names);
	free(m->carry);
	merge_perfmap_init(m);
}

static void bad(struct merge_perfmap *m, const char *why)
{
	if (!m->bad++) {
		m->first_bad = m->lines;
		m->first_why = why;
	}
}

/* A hex number of 1..16 digits, optional 0x; *p advanced. -1 if none. */
static int hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int nd = 0;
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	for (; s < end; s++, nd++) {
		int d = *s >= '0' && *s <= '9' ? *s - '0'
		      : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
		      : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10 : -1;
		if (d < 0)
			break;
		if (nd == 16)
			return -1;
		v = v << 4 | (uint64_t)d;
	}
	if (!nd)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static int blanks(const char **p, const char *end)
{
	const char *s = *p;
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return -1;
	*p = s;
	return 0;
}

static int arena_put(char **a, size_t *len, size_t *cap, const char *s, size_t n, uint32_t *off)
{
	if (*len + n + 1 > UINT32_MAX)
		return -1;
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		while (c < *len + n + 1)
			c *= 2;
		char *na = realloc(*a, c);
		if (!na)
			return -1;
		*a = na;
		*cap = c;
	}
	memcpy(*a + *len, s, n);
	(*a)[*len + n] = 0;
	*off = (uint32_t)*len;
	*len += n + 1;
	return 0;
}

/* One complete line (without its newline). */
static void line(struct merge_perfmap *m, const char *s, size_t n)
{
	const char *p = s, *end = s + n;
	uint64_t start, size;
	m->lines++;
	if (end > p && end[-1] == '\r')
		end--;
	if (p == end)
		return;                  /* blank lines are harmless */
	if (hex(&p, end, &start) < 0 || blanks(&p, end) < 0 || hex(&p, end, &size) < 0 ||
	    blanks(&p, end) < 0) {
		bad(m, "not START SIZE NAME in hex");
		return;
	}
	if (p == end) {
		bad(m, "no name");
		return;
	}
	if (!size || start + size < start || start + size > (1ull << 56)) {
		bad(m, size ? "range past the address space" : "zero size");
		return;
	}
	for (const char *q = p; q < end; q++)
		if ((unsigned char)*q < 0x20 ? *q != '\t' : *q == 0x7f) {
			bad(m, "control character in name");
			return;
		}
	size_t len = (size_t)(end - p);
	if (len > MERGE_JIT_NAME_MAX) {
		len = MERGE_JIT_NAME_MAX;
		/* Not in the middle of a UTF-8 sequence. */
		while (len > 1 && ((unsigned char)p[len] & 0xc0) == 0x80)
			len--;
		m->cut++;
	}
	if (m->n >= MERGE_PERFMAP_MAX_SYMS) {
		m->stopped = 1;
		return;
	}
	if (m->n == m->cap) {
		size_t c = m->cap ? 2 * m->cap : 256;
		void *nv = realloc(m->v, c * sizeof(*m->v));
		if (!nv) {
			m->oom = m->stopped = 1;
			return;
		}
		m->v = nv;
		m->cap = c;
	}
	struct merge_perfmap_sym *e = &m->v[m->n];
	if (arena_put(&m->names, &m->names_len, &m->names_cap, p, len, &e->name) < 0) {
		m->oom = m->stopped = 1;
		return;
	}
	/* Tabs in a name would break processes.tsv-like consumers: spaces. */
	for (char *q = m->names + e->name; *q; q++)
		if (*q == '\t')
			*q = ' ';
	e->start = start;
	e->end = start + size;
	e->seq = (uint32_t)m->n;
	m->n++;
}

void merge_perfmap_feed(struct merge_perfmap *m, const char *buf, size_t n, int final)
{
	size_t i = 0;
	if (!m->carry && !m->stopped && !(m->carry = malloc(LINE_CAP)))
		m->oom = m->stopped = 1;
	while (i < n && !m->stopped) {
		const char *nl = memchr(buf + i, '\n', n - i);
		size_t take = nl ? (size_t)(nl - (buf + i)) : n - i;
		if (m->skipping) {
			m->skipping = !nl;
		} else if (!nl) {                    /* a line continued later */
			if (m->ncarry + take > LINE_CAP) {
				m->lines++;
				bad(m, "line longer than 64 KiB");
				m->ncarry = 0;
				m->skipping = 1;
			} else {
				memcpy(m->carry + m->ncarry, buf + i, take);
				m->ncarry += take;
			}
		} else if (m->ncarry) {
			if (m->ncarry + take > LINE_CAP) {
				m->lines++;
				bad(m, "line longer than 64 KiB");
			} else {
				memcpy(m->carry + m->ncarry, buf + i, take);
				line(m, m->carry, m->ncarry + take);
			}
			m->ncarry = 0;
		} else if (take > LINE_CAP) {
			m->lines++;
			bad(m, "line longer than 64 KiB");
		} else {
			line(m, buf + i, take);
		}
		i += take + (nl != NULL);
	}
	if (final) {
		if ((m->ncarry || m->skipping) && !m->stopped) {
			m->lines++;
			bad(m, "last line unterminated (cut short)");
		}
		m->ncarry = 0;
		m->skipping = 0;
		free(m->carry);
		m->carry = NULL;
	}
}

static int by_start(const void *a, const void *b)
{
	const struct merge_perfmap_sym *x = a, *y = b;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void merge_perfmap_finish(struct merge_perfmap *m)
{
	uint64_t mx = 0;
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), by_start);
	for (size_t i = 0; i < m->n; i++) {
		if (m->v[i].end > mx)
			mx = m->v[i].end;
		m->v[i].maxend = mx;
	}
}

const char *merge_perfmap_lookup(const struct merge_perfmap *m, uint64_t pc)
{
	size_t lo = 0, hi = m->n;
	while (lo < hi) {                /* first entry with start > pc */
		size_t mid = lo + (hi - lo) / 2;
		if (m->v[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct merge_perfmap_sym *best = NULL;
	for (size_t i = lo, steps = 0; i-- > 0 && m->v[i].maxend > pc && steps < WALK_MAX; steps++)
		if (m->v[i].end > pc && (!best || m->v[i].seq > best->seq))
			best = &m->v[i];
	return best ? m->names + best->name : NULL;
}

int merge_perfmap_load(struct merge_perfmap *m, const char *path, int64_t not_before,
		       size_t chunk)
{
	struct stat st;
	uint64_t total = 0;
	int err = 0;
	merge_perfmap_init(m);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out;
	}
	/* /tmp is shared: only a map this user made is believed. */
	if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
		err = -EPERM;
		goto out;
	}
	if (not_before && st.st_mtime < not_before) {
		err = -ESTALE;
		goto out;
	}
	if (!chunk)
		chunk = 1 << 20;
	char *buf = malloc(chunk);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	for (;;) {
		if (total >= MERGE_PERFMAP_MAX_BYTES) {
			m->stopped = 1;
			break;
		}
		ssize_t r = read(fd, buf, chunk);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			err = -errno;
			break;
		}
		if (r == 0)
			break;
		total += (uint64_t)r;
		merge_perfmap_feed(m, buf, (size_t)r, 0);
	}
	free(buf);
	merge_perfmap_feed(m, NULL, 0, 1);
	if (err < 0)
		merge_perfmap_free(m);
	else
		merge_perfmap_finish(m);
out:
	close(fd);
	return err;
}

void merge_perfmap_warn(const struct merge_perfmap *m, const char *path, FILE *errf)
{
	char msg[600];
	int o = 0;
	if (!m->bad && !m->cut && !m->stopped)
		return;
	if (m->bad)
		o += snprintf(msg + o, sizeof(msg) - (size_t)o,
			      ", %llu of %llu lines skipped (first: line %llu, %s)",
			      (unsigned long long)m->bad, (unsigned long long)m->lines,
			      (unsigned long long)m->first_bad, m->first_why);
	if (m->cut && o < (int)sizeof(msg))
		o += snprintf(msg + o, sizeof(msg) - (size_t)o, ", %llu names cut to %d bytes",
			      (unsigned long long)m->cut, MERGE_JIT_NAME_MAX);
	if (m->stopped && o < (int)sizeof(msg))
		snprintf(msg + o, sizeof(msg) - (size_t)o, ", read stopped at %s",
			 m->oom ? "out of memory" : "its size limit (512 MiB or 4M symbols)");
	fprintf(errf, "vprof: perf map %s: damaged%s; %zu symbols used\n", path, msg, m->n);
}

/* ---- names of [jit:EXE] profiles ---- */

uint64_t merge_jit_key(const char *name, size_t len)
{
	return XXH64(name, len, 0);
}

int merge_jit_add(struct merge_profile *p, const char *name, size_t len)
{
	if (p->njit == p->jitcap) {
		size_t c = p->jitcap ? 2 * p->jitcap : 64;
		void *nv = realloc(p->jit, c * sizeof(*p->jit));
		if (!nv)
			return -ENOMEM;
		p->jit = nv;
		p->jitcap = c;
	}
	struct merge_jit_name *e = &p->jit[p->njit];
	if (arena_put(&p->jit_arena, &p->jit_len, &p->jit_arena_cap, name, len, &e->off) < 0)
		return -ENOMEM;
	e->key = merge_jit_key(name, len);
	e->len = (uint32_t)len;
	p->njit++;
	return 0;
}

static int by_jkey(const void *a, const void *b)
{
	const struct merge_jit_name *x = a, *y = b;
	return x->key < y->key ? -1 : x->key > y->key;
}

void merge_jit_compact(struct merge_profile *p)
{
	if (!p->njit)
		return;
	qsort(p->jit, p->njit, sizeof(*p->jit), by_jkey);
	/* One per key, in a fresh arena (duplicates from merges dropped). */
	char *na = NULL;
	size_t nlen = 0, ncap = 0, o = 0;
	for (size_t i = 0; i < p->njit; i++) {
		if (o && p->jit[i].key == p->jit[o - 1].key)
			continue;
		struct merge_jit_name e = p->jit[i];
		if (arena_put(&na, &nlen, &ncap, p->jit_arena + e.off, e.len, &e.off) < 0) {
			free(na);            /* keep the old, uncompacted, still right */
			return;
		}
		p->jit[o++] = e;
	}
	free(p->jit_arena);
	p->jit_arena = na;
	p->jit_len = nlen;
	p->jit_arena_cap = ncap;
	p->njit = o;
}

void merge_jit_free(struct merge_profile *p)
{
	free(p->jit);
	free(p->jit_arena);
	p->jit = NULL;
	p->jit_arena = NULL;
	p->njit = p->jitcap = p->jit_len = p->jit_arena_cap = 0;
}

const char *merge_jit_name(const struct merge_profile *p, uint64_t key)
{
	size_t lo = 0, hi = p->njit;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->jit[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->njit && p->jit[lo].key == key ? p->jit_arena + p->jit[lo].off : NULL;
}

void *merge_jit_encode(const struct merge_profile *p, size_t *n)
{
	size_t sz = 0;
	*n = 0;
	if (!p->njit)
		return NULL;
	for (size_t i = 0; i < p->njit; i++)
		sz += 16 + ((p->jit[i].len + 7u) & ~7u);
	uint8_t *b = calloc(1, sz);
	if (!b) {
		*n = 1;
		return NULL;
	}
	uint8_t *w = b;
	for (size_t i = 0; i < p->njit; i++) {
		const struct merge_jit_name *e = &p->jit[i];
		memcpy(w, &e->key, 8);
		memcpy(w + 8, &e->len, 4);
		memcpy(w + 16, p->jit_arena + e->off, e->len);
		w += 16 + ((e->len + 7u) & ~7u);
	}
	*n = sz;
	return b;
}

int merge_jit_decode(struct merge_profile *p, const uint8_t *b, size_t n, const char **why)
{
	size_t at = 0;
	while (at < n) {
		uint64_t key;
		uint32_t len, zero;
		if (n - at < 16) {
			*why = "JIT names section: a record cut short";
			return -EBADMSG;
		}
		memcpy(&key, b + at, 8);
		memcpy(&len, b + at + 8, 4);
		memcpy(&zero, b + at + 12, 4);
		size_t rec = 16 + (((size_t)len + 7u) & ~(size_t)7u);
		if (!len || len > MERGE_JIT_NAME_MAX || zero || rec > n - at) {
			*why = "JIT names section: a record of implausible length";
			return -EBADMSG;
		}
		const char *name = (const char *)b + at + 16;
		if (memchr(name, 0, len) || merge_jit_key(name, len) != key) {
			*why = "JIT names section: a name does not match its key";
			return -EBADMSG;
		}
		if (merge_jit_add(p, name, len) < 0) {
			*why = "out of memory";
			return -ENOMEM;
		}
		at += rec;
	}
	merge_jit_compact(p);
	return 0;
}
