/*
 * Call stacks in the merge: the reader of a spool's STACKS table (the
 * writer is spool/stack_table.c), and an epoch's stacks file (see
 * stacks.h, format in profile_format.h).
 *
 * Workload: a program has a few hundred to a few thousand distinct
 * stacks of up to 64 frames. The merge turns every frame into (image,
 * offset), sorts the records by frames and sums equal ones.
 *
 * Concurrency: the merge reads finished spools only; single-threaded.
 */
#include "merge/stacks.h"
#include "merge/spool_read.h"
#include "merge/profile.h"
#include "merge/code.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

_Static_assert(sizeof(struct merge_stacks_file_head) == 64, "stacks file head size");
_Static_assert(sizeof(struct merge_stack_image) == 512, "stack image size");

int merge_spool_stacks(const struct spool *sp, merge_stack_fn *fn, void *arg, uint64_t *bad)
{
	*bad = 0;
	if (!sp->stacks)
		return 0;
	const struct spool_stack_entry *tab = spool_stack_entries(sp);
	for (uint32_t i = 0; i < SPOOL_STACK_ENTRIES; i++) {
		struct spool_stack_entry e;
		memcpy(&e, &tab[i], sizeof(e));
		if (e.state == SPOOL_HOT_FREE)
			continue;
		/* The hash the writer keyed the entry by is its frames' check. */
		if (e.state != SPOOL_HOT_READY || !e.depth || e.depth > SPOOL_STACK_MAX || !e.count ||
		    e.count > (1ull << 48) || e.hash != spool_stack_hash(e.pc, e.depth, e.gen)) {
			(*bad)++;
			continue;
		}
		int r = fn(&e, arg);
		if (r)
			return r;
	}
	return 0;
}

int merge_stacks_check_counts(const struct spool *sp)
{
	const struct spool_stacks_head *h = (const struct spool_stacks_head *)sp->stacks;
	const struct spool_stack_entry *tab = spool_stack_entries(sp);
	uint64_t sum = h->dropped;
	/* Each sample adds to `samples` before its entry or `dropped`: the
	 * counts never exceed it, even in a spool whose writer was killed. */
	for (uint32_t i = 0; i < SPOOL_STACK_ENTRIES; i++)
		if (tab[i].state == SPOOL_HOT_READY && tab[i].count <= (1ull << 48))
			sum += tab[i].count;
	return sum <= h->samples ? 0 : -1;
}

/* ---- in memory ---- */

void merge_stacks_init(struct merge_stacks *s)
{
	memset(s, 0, sizeof(*s));
}

void merge_stacks_free(struct merge_stacks *s)
{
	free(s->img);
	free(s->rec);
	free(s->frames);
	memset(s, 0, sizeof(*s));
}

static int grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	void **a = arr;
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *np = realloc(*a, c * elem);
	if (!np)
		return -ENOMEM;
	*a = np;
	*cap = c;
	return 0;
}

long merge_stacks_image(struct merge_stacks *s, const uint8_t *bid, uint32_t len, const char *path)
{
	if (len > SPOOL_BUILD_ID_MAX)
		len = SPOOL_BUILD_ID_MAX;
	for (size_t i = 0; i < s->nimg; i++) {
		const struct merge_stack_image *m = &s->img[i];
		if (len ? (m->build_id_len == len && !memcmp(m->build_id, bid, len))
			: (!m->build_id_len && !strcmp(m->path, path)))
			return (long)i;
	}
	if (s->nimg >= MERGE_FRAME_UNKNOWN || grow(&s->img, &s->capimg, s->nimg + 1, sizeof(*s->img)) < 0)
		return -1;
	struct merge_stack_image *m = &s->img[s->nimg];
	memset(m, 0, sizeof(*m));
	m->build_id_len = len;
	memcpy(m->build_id, bid, len);
	snprintf(m->path, sizeof(m->path), "%s", path);
	return (long)s->nimg++;
}

int merge_stacks_add(struct merge_stacks *s, const uint64_t *frames, uint32_t depth, uint64_t count)
{
	if (grow(&s->rec, &s->cap, s->n + 1, sizeof(*s->rec)) < 0 ||
	    grow(&s->frames, &s->capfr, s->nfr + depth, sizeof(*s->frames)) < 0)
		return -ENOMEM;
	s->rec[s->n++] = (struct merge_stack_rec){ count, depth, s->nfr };
	memcpy(s->frames + s->nfr, frames, depth * sizeof(*frames));
	s->nfr += depth;
	s->samples += count;
	return 0;
}

static int cmp_rec(const void *a, const void *b, void *arg)
{
	const struct merge_stack_rec *x = a, *y = b;
	const uint64_t *f = arg;
	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	for (uint32_t i = 0; i < x->depth; i++)
		if (f[x->at + i] != f[y->at + i])
			return f[x->at + i] < f[y->at + i] ? -1 : 1;
	return 0;
}

void merge_stacks_compact(struct merge_stacks *s)
{
	if (!s->n)
		return;
	qsort_r(s->rec, s->n, sizeof(*s->rec), cmp_rec, s->frames);
	size_t o = 0;
	for (size_t i = 1; i < s->n; i++) {
		if (!cmp_rec(&s->rec[i], &s->rec[o], s->frames))
			s->rec[o].count += s->rec[i].count;
		else
			s->rec[++o] = s->rec[i];
	}
	s->n = o + 1;
	/* Repack the frames in record order: no holes, file order. */
	uint64_t *nf = malloc((s->nfr ? s->nfr : 1) * sizeof(*nf));
	if (!nf)
		return;          /* still correct, only not packed */
	size_t at = 0;
	for (size_t i = 0; i < s->n; i++) {
		memcpy(nf + at, s->frames + s->rec[i].at, s->rec[i].depth * sizeof(*nf));
		s->rec[i].at = at;
		at += s->rec[i].depth;
	}
	free(s->frames);
	s->frames = nf;
	s->nfr = at;
	s->capfr = at ? at : 1;
	if (!at) {
		free(nf);
		s->frames = NULL;
		s->capfr = 0;
	}
}

/* Add b's records to a, remapping b's image indices to a's. */
static int append(struct merge_stacks *a, const struct merge_stacks *b)
{
	uint32_t map[MERGE_FRAME_UNKNOWN + 1];
	uint64_t fr[SPOOL_STACK_MAX];
	for (size_t i = 0; i < b->nimg; i++) {
		long k = merge_stacks_image(a, b->img[i].build_id, b->img[i].build_id_len, b->img[i].path);
		if (k < 0)
			return -ENOMEM;
		map[i] = (uint32_t)k;
	}
	for (size_t i = 0; i < b->n; i++) {
		const struct merge_stack_rec *r = &b->rec[i];
		uint32_t d = r->depth > SPOOL_STACK_MAX ? SPOOL_STACK_MAX : r->depth;
		for (uint32_t j = 0; j < d; j++) {
			uint64_t f = b->frames[r->at + j];
			uint32_t im = MERGE_FRAME_IMG(f);
			fr[j] = im == MERGE_FRAME_UNKNOWN || im >= b->nimg ? f
				: MERGE_FRAME(map[im], MERGE_FRAME_OFF(f));
		}
		if (merge_stacks_add(a, fr, d, r->count) < 0)
			return -ENOMEM;
	}
	a->dropped += b->dropped;
	a->truncated += b->truncated;
	if (b->depth > a->depth)
		a->depth = b->depth;
	return 0;
}

int merge_stacks_merge(struct merge_stacks *a, const struct merge_stacks *b)
{
	int err = append(a, b);
	if (err == 0)
		merge_stacks_compact(a);
	return err;
}

/* ---- from a spool ---- */

struct from_ctx {
	struct merge_stacks *s;
	const struct spool *sp;
	const struct spool_image_record *im;
	size_t nim;
	long *idx;               /* stacks image index per record, -2 unknown yet */
	int err;
};

/* The latest load covering pc in generation gen or before (db.c's rule). */
static long image_of(struct from_ctx *c, unsigned gen, uint64_t pc)
{
	long hit = -1;
	for (size_t i = 0; i < c->nim; i++)
		if (pc >= c->im[i].lo && pc < c->im[i].hi && c->im[i].gen <= gen)
			hit = (long)i;
	return hit;
}

static int from_entry(const struct spool_stack_entry *e, void *arg)
{
	struct from_ctx *c = arg;
	uint64_t fr[SPOOL_STACK_MAX];
	for (unsigned i = 0; i < e->depth; i++) {
		uint64_t pc = SPOOL_GPC_PC(e->pc[i]);
		if (SPOOL_CODE_IS(pc)) {
			/* Interpreted code: its file's [python:FILE] image. */
			const struct spool_code_entry *ce = merge_code_entry(c->sp, pc);
			char path[SPOOL_PATH_MAX];
			if (!ce) {
				fr[i] = MERGE_FRAME(MERGE_FRAME_UNKNOWN, pc);
				continue;
			}
			merge_code_path(ce, path, sizeof(path));
			long k = merge_stacks_image(c->s, NULL, 0, path);
			if (k < 0)
				return c->err = -ENOMEM;
			fr[i] = MERGE_FRAME(k, merge_code_offset(ce->name, SPOOL_CODE_LINE(pc)));
			continue;
		}
		/* A return address may sit just past its image's end (a call
		 * as the last instruction): look up the call's last byte. */
		long r = image_of(c, e->gen, i ? pc - 1 : pc);
		if (r < 0) {
			fr[i] = MERGE_FRAME(MERGE_FRAME_UNKNOWN, pc);
			continue;
		}
		if (c->idx[r] == -2) {
			const struct spool_image_record *m = &c->im[r];
			c->idx[r] = merge_stacks_image(c->s, m->build_id, m->build_id_len, m->path);
			if (c->idx[r] < 0)
				return c->err = -ENOMEM;
		}
		fr[i] = MERGE_FRAME(c->idx[r], pc - c->im[r].bias);
	}
	if (merge_stacks_add(c->s, fr, e->depth, e->count) < 0)
		return c->err = -ENOMEM;
	return 0;
}

int merge_stacks_from_spool(struct merge_stacks *s, const struct spool *sp,
			    const struct spool_image_record *im, size_t nim, uint64_t *bad)
{
	*bad = 0;
	if (!sp->stacks)
		return 0;
	const struct spool_stacks_head *h = (const struct spool_stacks_head *)sp->stacks;
	struct from_ctx c = { s, sp, im, nim, calloc(nim ? nim : 1, sizeof(long)), 0 };
	if (!c.idx)
		return -ENOMEM;
	for (size_t i = 0; i < nim; i++)
		c.idx[i] = -2;
	merge_spool_stacks(sp, from_entry, &c, bad);
	free(c.idx);
	s->dropped += h->dropped + *bad;
	s->truncated += h->truncated;
	if (h->depth > s->depth)
		s->depth = h->depth;
	return c.err;
}

/* ---- file ---- */

void merge_stacks_name(unsigned event, char *out, size_t cap)
{
	snprintf(out, cap, "stacks.%s.stk", upcall_event_name(event));
}

static int fail(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	return -EBADMSG;
}

int merge_stacks_read(const char *path, struct merge_stacks *s, char *why, size_t whylen)
{
	struct merge_profile_header h;
	uint8_t *buf;
	int err;

	merge_stacks_init(s);
	if ((err = merge_profile_file_read(path, &buf, &h, why, whylen)) < 0)
		return err;
	if (!(h.flags & MERGE_PROF_STACKS)) {
		err = fail(why, whylen, "not a vprof stacks file");
		goto out;
	}
	for (uint32_t i = 0; i < h.nsections; i++) {
		const struct spool_section *sec = &h.section[i];
		if (sec->kind != SPOOL_SEC_STACKS)
			continue;
		const uint8_t *p = buf + sec->offset, *end = p + sec->size;
		struct merge_stacks_file_head fh;
		if (sec->size < sizeof(fh)) {
			err = fail(why, whylen, "stacks section truncated");
			goto out;
		}
		memcpy(&fh, p, sizeof(fh));
		p += sizeof(fh);
		if (fh.nimages >= MERGE_FRAME_UNKNOWN ||
		    (uint64_t)(end - p) < (uint64_t)fh.nimages * sizeof(struct merge_stack_image)) {
			err = fail(why, whylen, "stacks image table out of bounds");
			goto out;
		}
		struct merge_stacks one;
		merge_stacks_init(&one);
		if (grow(&one.img, &one.capimg, fh.nimages, sizeof(*one.img)) < 0) {
			err = -ENOMEM;
			goto out;
		}
		if (fh.nimages)          /* none: one.img is NULL, and memcpy's NULL is UB */
			memcpy(one.img, p, fh.nimages * sizeof(struct merge_stack_image));
		one.nimg = fh.nimages;
		for (size_t j = 0; j < one.nimg; j++) {
			one.img[j].path[sizeof(one.img[j].path) - 1] = 0;
			if (one.img[j].build_id_len > SPOOL_BUILD_ID_MAX)
				one.img[j].build_id_len = SPOOL_BUILD_ID_MAX;
		}
		p += fh.nimages * sizeof(struct merge_stack_image);
		for (uint64_t j = 0; j < fh.nstacks; j++) {
			uint64_t count;
			uint32_t depth;
			uint64_t fr[SPOOL_STACK_MAX];
			if (end - p < 16) {
				err = fail(why, whylen, "stack record out of bounds");
				break;
			}
			memcpy(&count, p, 8);
			memcpy(&depth, p + 8, 4);
			p += 16;
			if (!depth || depth > SPOOL_STACK_MAX || (uint64_t)(end - p) < 8ull * depth) {
				err = fail(why, whylen, "stack record malformed");
				break;
			}
			memcpy(fr, p, 8ull * depth);
			p += 8ull * depth;
			for (uint32_t k = 0; k < depth; k++)
				if (MERGE_FRAME_IMG(fr[k]) != MERGE_FRAME_UNKNOWN &&
				    MERGE_FRAME_IMG(fr[k]) >= one.nimg)
					err = fail(why, whylen, "stack frame names no image");
			if (err || (err = merge_stacks_add(&one, fr, depth, count)) < 0)
				break;
		}
		if (!err && one.samples != fh.samples)
			err = fail(why, whylen, "stack total disagrees with its records");
		one.dropped = fh.dropped;
		one.truncated = fh.truncated;
		one.depth = fh.depth;
		if (!err)
			err = append(s, &one);
		merge_stacks_free(&one);
		if (err)
			goto out;
	}
	merge_stacks_compact(s);
out:
	if (err < 0)
		merge_stacks_free(s);
	free(buf);
	return err;
}

int merge_stacks_write(const char *path, const struct merge_stacks *s, unsigned event)
{
	struct merge_profile_header h;
	struct merge_stacks_file_head fh;
	size_t size = sizeof(fh) + s->nimg * sizeof(*s->img);
	for (size_t i = 0; i < s->n; i++)
		size += 16 + 8ull * s->rec[i].depth;
	uint8_t *sec = calloc(1, size), *p = sec;
	char tmp[700];
	int err = 0;
	if (!sec)
		return -ENOMEM;
	memset(&fh, 0, sizeof(fh));
	fh.nimages = (uint32_t)s->nimg;
	fh.depth = s->depth;
	fh.nstacks = s->n;
	fh.dropped = s->dropped;
	fh.truncated = s->truncated;
	for (size_t i = 0; i < s->n; i++)
		fh.samples += s->rec[i].count;
	memcpy(p, &fh, sizeof(fh));
	p += sizeof(fh);
	if (s->nimg)
		memcpy(p, s->img, s->nimg * sizeof(*s->img));
	p += s->nimg * sizeof(*s->img);
	for (size_t i = 0; i < s->n; i++) {
		uint32_t d = s->rec[i].depth, z = 0;
		memcpy(p, &s->rec[i].count, 8);
		memcpy(p + 8, &d, 4);
		memcpy(p + 12, &z, 4);
		memcpy(p + 16, s->frames + s->rec[i].at, 8ull * d);
		p += 16 + 8ull * d;
	}
	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MERGE_PROFILE_MAGIC, 8);
	h.version = MERGE_PROFILE_VERSION;
	h.bom = SPOOL_BOM;
	h.header_size = sizeof(h);
	h.nsections = 1;
	h.event = event;
	h.flags = MERGE_PROF_STACKS;
	h.section[0] = (struct spool_section){ SPOOL_SEC_STACKS, 0, sizeof(h), size };
	h.file_size = sizeof(h) + size;
	snprintf(h.path, sizeof(h.path), "[stacks]");
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	XXH64_state_t *x = XXH64_createState();
	if (!x) {
		free(sec);
		return -ENOMEM;
	}
	XXH64_reset(x, 0);
	XXH64_update(x, (const uint8_t *)&h + ck, sizeof(h) - ck);
	XXH64_update(x, sec, size);
	h.checksum = XXH64_digest(x);
	XXH64_freeState(x);
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		free(sec);
		return -errno;
	}
	errno = 0;
	if (write(fd, &h, sizeof(h)) != (ssize_t)sizeof(h) || write(fd, sec, size) != (ssize_t)size)
		err = errno ? -errno : -ENOSPC;  /* a short write: the disk is full */
	if (close(fd) < 0 && !err)
		err = -errno;
	free(sec);
	if (!err && rename(tmp, path) < 0)
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
