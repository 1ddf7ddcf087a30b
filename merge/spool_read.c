/*
 * The spool reader (vprof merge): a finished spool read into private
 * memory, validated (header, layout, block checks), and traversed: its
 * (key, count) entries, value hotlists and run record. Format in
 * spool/format.h; the writer is spool/writer.c.
 *
 * Merges only take spools whose owner is gone (spool_owner_finished: the
 * owner record in page 0), and read them with pread, never through a
 * mapping: a hole in a spool on a full tmpfs reads as zeros, where a
 * mapped read would fault.
 *
 * Not async-signal-safe; one thread per spool.
 */
#include "merge/spool_read.h"
#include "merge/stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

static int bad(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	return -EBADMSG;
}

/* Mark the pages of [d, h) as data in map (a bit per 4 KiB page). */
static void mark_data(uint64_t *map, off_t d, off_t h)
{
	if (!map || h <= d)
		return;
	for (size_t pg = (size_t)d >> 12; pg <= (size_t)(h - 1) >> 12; pg++)
		map[pg >> 6] |= 1ull << (pg & 63);
}

/* Read a file of size n into buf (zero-filled), its data extents only:
 * holes read as the zeros already there. Unlike a mapping of the file, a
 * hole here costs no page of the file's filesystem, which may have none
 * to give (a read fault on a full tmpfs raises SIGBUS). The pages read
 * are marked in map (if not NULL), so that a traversal can pass over the
 * holes without touching their memory. */
static int read_extents(int fd, uint8_t *buf, size_t n, uint64_t *map)
{
	off_t at = 0;
	while ((size_t)at < n) {
		off_t d = lseek(fd, at, SEEK_DATA), h;
		if (d < 0) {
			if (errno == ENXIO)
				return 0;        /* the rest is a hole */
			d = at;                  /* no SEEK_DATA here: read it all */
			h = (off_t)n;
		} else {
			h = lseek(fd, d, SEEK_HOLE);
			if (h < 0 || (size_t)h > n)
				h = (off_t)n;
		}
		mark_data(map, d, h);
		while (d < h) {
			ssize_t r = pread(fd, buf + d, (size_t)(h - d), d);
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return -errno;
			if (r == 0)
				return -EIO;     /* shorter than fstat said */
			d += r;
		}
		at = h;
	}
	return 0;
}

/* Whether the file held the page of p (a hole reads as zeros). */
static int held(const struct spool *sp, const void *p)
{
	if (!sp->data)
		return 1;
	size_t pg = (size_t)((const uint8_t *)p - (const uint8_t *)sp->hdr) >> 12;
	return (int)((sp->data[pg >> 6] >> (pg & 63)) & 1);
}

/* The first entry of e[0..n) at or after e[i] on a page the file held
 * (entries in a hole are all zero: unused); n if none. Passes over a hole
 * without touching its memory. */
static size_t next_held(const struct spool *sp, const struct spool_entry *e, size_t i, size_t n)
{
	while (i < n && !held(sp, &e[i])) {
		uintptr_t next = ((uintptr_t)&e[i] | 4095) + 1;
		i += (next - (uintptr_t)&e[i] + sizeof(*e) - 1) / sizeof(*e);
	}
	return i < n ? i : n;
}

/* The entry after e[i] that next_held would give: the next one, or the
 * first held past a hole when the next one starts a page. */
static size_t step_held(const struct spool *sp, const struct spool_entry *e, size_t i, size_t n)
{
	i++;
	if (i < n && ((uintptr_t)&e[i] & 4095) < sizeof(*e))
		i = next_held(sp, e, i, n);
	return i;
}

/* The weighted sum of a run of (key, count) entries (format.h). */
static uint64_t entries_sum(const struct spool *sp, const struct spool_entry *e, size_t n)
{
	uint64_t sum = 0;
	for (size_t i = next_held(sp, e, 0, n); i < n; i = step_held(sp, e, i, n))
		if (e[i].key)
			sum += spool_key_mix(e[i].key) * e[i].count;
	return sum;
}

/* The block checks of a spool whose writer kept them (section flags):
 * every thread slot's entries against its sum, the shared table against
 * what the slots and the slot-less samples put there, every complete
 * image record against its check, the stacks' counts against the
 * samples offered. A block its writer was changing when the process died
 * (a slot left BUSY, a slot-less sample not done) cannot be checked and
 * is taken as it is: a SIGKILL must not cost the data it left. */
static int check_blocks(const struct spool *sp, char *why, size_t whylen)
{
	const struct spool_static *s = &sp->hdr->s;
	const struct spool_live *l = &sp->hdr->live;
	int torn = 0;
	if (s->section[0].flags & SPOOL_SECF_CHECKED) {
		uint64_t into_shared = l->noslot_sum;
		for (uint32_t i = 0; i < s->nslots; i++) {
			const struct spool_thread_slot *sl = spool_slot_at(sp, i);
			into_shared += sl->shared_sum;
			if (sl->busy == SPOOL_SLOT_BUSY) {
				torn = 1;
				continue;
			}
			if (sl->busy != 0 ||
			    entries_sum(sp, &sl->bucket[0][0], (size_t)sl->nbuckets * SPOOL_WAYS) != sl->sum) {
				snprintf(why, whylen, "thread slot %u fails its check (a count or a key "
					 "was changed)", i);
				return -EBADMSG;
			}
		}
		uint64_t inside = l->nothread - l->noslot_done;
		if (inside > l->threads + 1) {
			snprintf(why, whylen, "slot-less sample counters fail their check");
			return -EBADMSG;
		}
		torn |= inside != 0;
		if (!torn && (s->section[1].flags & SPOOL_SECF_CHECKED) &&
		    entries_sum(sp, sp->shared, s->shared_entries) != into_shared) {
			snprintf(why, whylen, "shared table fails its check (a count or a key was changed)");
			return -EBADMSG;
		}
	}
	if (s->section[2].flags & SPOOL_SECF_CHECKED) {
		uint64_t n = l->image_seq < s->image_records ? l->image_seq : s->image_records;
		for (uint64_t i = 0; i < n; i++) {
			const uint8_t *r = (const uint8_t *)&sp->images[i];
			uint64_t ck;
			memcpy(&ck, r + SPOOL_IMAGE_CHECK_OFF, sizeof(ck));
			if (sp->images[i].valid == 1 && XXH64(r + 4, SPOOL_IMAGE_CHECK_OFF - 4, 0) != ck) {
				snprintf(why, whylen, "image record %llu fails its check",
					 (unsigned long long)i);
				return -EBADMSG;
			}
		}
	}
	if (sp->stacks && (s->section[s->nsections - 1].flags & SPOOL_SECF_CHECKED) &&
	    merge_stacks_check_counts(sp) < 0) {
		snprintf(why, whylen, "stacks fail their check (more counted than offered)");
		return -EBADMSG;
	}
	return 0;
}

int merge_spool_open(struct spool *sp, const char *path, char *why, size_t whylen)
{
	struct stat st;
	int err;

	memset(sp, 0, sizeof(*sp));
	sp->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (sp->fd < 0) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return err;
	}
	snprintf(sp->path, sizeof(sp->path), "%s", path);
	if (fstat(sp->fd, &st) < 0) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		goto fail;
	}
	if ((size_t)st.st_size < 4096) {
		err = bad(why, whylen, "truncated (shorter than its header)");
		goto fail;
	}
	if ((uint64_t)st.st_size > (1ull << 32)) {
		err = bad(why, whylen, "implausibly large");
		goto fail;
	}
	sp->size = (size_t)st.st_size;
	void *m = mmap(NULL, sp->size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED) {
		err = -errno;
		snprintf(why, whylen, "mmap: %s", strerror(errno));
		goto fail;
	}
	sp->hdr = m;
	sp->room_all = 1;
	sp->data = calloc((sp->size >> 18) + 1, sizeof(uint64_t));
	if ((err = read_extents(sp->fd, m, sp->size, sp->data)) < 0) {
		snprintf(why, whylen, "read: %s", strerror(-err));
		goto fail;
	}
	mprotect(m, sp->size, PROT_READ);
	upcall_fd_close(sp->fd);
	sp->fd = -1;
	const struct spool_static *s = &sp->hdr->s;
	if (memcmp(s->magic, SPOOL_MAGIC, 8) != 0) {
		err = bad(why, whylen, "not a vprof spool (bad magic)");
		goto fail;
	}
	if (s->bom != SPOOL_BOM) {
		err = bad(why, whylen, "wrong byte order");
		goto fail;
	}
	if (s->version != SPOOL_VERSION && s->version != SPOOL_VERSION_PLAIN &&
	    s->version != SPOOL_VERSION_STACKS && s->version != SPOOL_VERSION_VLOG) {
		snprintf(why, whylen, "spool version %u, this vprof reads %u to %u", s->version,
			 SPOOL_VERSION_PLAIN, SPOOL_VERSION_VLOG);
		err = -EPROTO;
		goto fail;
	}
	if (XXH64(s, offsetof(struct spool_static, checksum), 0) != s->checksum) {
		err = bad(why, whylen, "header checksum mismatch");
		goto fail;
	}
	if (s->file_size != sp->size) {
		err = bad(why, whylen, "truncated (size differs from its header)");
		goto fail;
	}
	/* Layout must be what this reader computes from the counts: anything
	 * else would let a corrupt header send us outside the mapping. */
	/* Version 2: THREADS, SHARED, IMAGES, VALUES; 3: THREADS, SHARED,
	 * IMAGES, [VALUES,] STACKS; 4: THREADS, SHARED, IMAGES, VALUES,
	 * VLOG[, STACKS]. */
	int has_vlog = s->version == SPOOL_VERSION_VLOG;
	int has_stacks = s->version == SPOOL_VERSION_STACKS || (has_vlog && s->nsections == 6);
	int has_values = s->version == SPOOL_VERSION || has_vlog ||
			 (s->version == SPOOL_VERSION_STACKS && s->nsections == 5);
	uint32_t nsec = 3 + (uint32_t)has_values + (uint32_t)has_vlog + (uint32_t)has_stacks;
	if (s->nsections != nsec || s->nslots == 0 || s->nslots > 4096 ||
	    s->slot_size != spool_slot_bytes(SPOOL_SLOT_BUCKETS) ||
	    (s->shared_entries & (s->shared_entries - 1)) || s->shared_entries == 0) {
		err = bad(why, whylen, "implausible layout");
		goto fail;
	}
	uint64_t need[6] = { (uint64_t)s->nslots * s->slot_size,
			     (uint64_t)s->shared_entries * sizeof(struct spool_entry),
			     (uint64_t)s->image_records * sizeof(struct spool_image_record) };
	uint32_t kind[6] = { SPOOL_SEC_THREADS, SPOOL_SEC_SHARED, SPOOL_SEC_IMAGES };
	uint32_t k = 3;
	if (has_values) {
		need[k] = spool_values_bytes(s->nslots, SPOOL_VALUE_SHARED);
		kind[k++] = SPOOL_SEC_VALUES;
	}
	if (has_vlog) {
		need[k] = spool_vlog_bytes();
		kind[k++] = SPOOL_SEC_VLOG;
	}
	if (has_stacks) {
		need[k] = spool_stacks_section_bytes();
		kind[k++] = SPOOL_SEC_STACKS;
	}
	/* A VALUES section of this vprof's shared area, or of the smaller one
	 * spools had before 2026-11-23. */
	uint32_t vshared = SPOOL_VALUE_SHARED;
	if (has_values && s->section[3].size == spool_values_bytes(s->nslots, SPOOL_VALUE_SHARED_V1))
		need[3] = spool_values_bytes(s->nslots, vshared = SPOOL_VALUE_SHARED_V1);
	/* A STACKS section without interpreted code, as spools had before
	 * 2026-11-24. */
	int stacks_v1 = has_stacks && s->section[nsec - 1].size == spool_stacks_section_bytes_v1();
	if (stacks_v1)
		need[nsec - 1] = spool_stacks_section_bytes_v1();
	for (uint32_t i = 0; i < nsec; i++) {
		const struct spool_section *sec = &s->section[i];
		if (sec->kind != kind[i] || sec->size != need[i] ||
		    sec->offset < s->header_size || sec->offset + sec->size > sp->size) {
			err = bad(why, whylen, "section table out of bounds");
			goto fail;
		}
	}
	sp->threads = (uint8_t *)m + s->section[0].offset;
	sp->shared = (struct spool_entry *)((uint8_t *)m + s->section[1].offset);
	sp->images = (struct spool_image_record *)((uint8_t *)m + s->section[2].offset);
	if (has_stacks) {
		sp->stacks = (uint8_t *)m + s->section[nsec - 1].offset;
		if (spool_stacks_check((const struct spool_stacks_head *)sp->stacks) < 0) {
			err = bad(why, whylen, "stacks section geometry corrupt");
			goto fail;
		}
		if (!stacks_v1) {
			const struct spool_codes_head *ch = (const struct spool_codes_head *)
				(sp->stacks + spool_stacks_section_bytes_v1());
			if (ch->entries != SPOOL_CODE_ENTRIES ||
			    ch->entry_size != sizeof(struct spool_code_entry)) {
				err = bad(why, whylen, "interpreted code table geometry corrupt");
				goto fail;
			}
			sp->codes = (uint8_t *)ch;
		}
	}
	if (has_vlog) {
		struct spool_vlog_head want = { 0 };
		spool_vlog_geometry(&want);
		sp->vlog = (uint8_t *)m + s->section[4].offset;
		const struct spool_vlog_head *h = (const struct spool_vlog_head *)sp->vlog;
		/* All zero: no chunk was ever claimed (its writer writes the
		 * head with the first). */
		int unused = !h->chunks && !h->chunk_bytes && !h->rec_size && !h->next;
		if (!unused &&
		    (h->chunks != want.chunks || h->chunk_bytes != want.chunk_bytes || h->rec_size != want.rec_size)) {
			err = bad(why, whylen, "value log geometry corrupt");
			goto fail;
		}
	}
	if (has_values) {
		/* The geometry lies outside the checksum: it must be exactly
		 * what this reader would have written. */
		struct spool_values_head want = { 0 };
		sp->values = (uint8_t *)m + s->section[3].offset;
		spool_values_geometry(&want, s->nslots, vshared);
		sp->vshared = vshared;
		if (memcmp(sp->values, &want, sizeof(want)) != 0) {
			err = bad(why, whylen, "values section geometry corrupt");
			goto fail;
		}
	}
	for (uint32_t i = 0; i < s->nslots; i++) {
		if (spool_slot_at(sp, i)->nbuckets != SPOOL_SLOT_BUCKETS) {
			err = bad(why, whylen, "thread slot header corrupt");
			goto fail;
		}
	}
	if ((err = check_blocks(sp, why, whylen)) < 0)
		goto fail;
	return 0;
fail:
	merge_spool_close(sp);
	return err;
}

void merge_spool_close(struct spool *sp)
{
	/* A reader's descriptor (merge_spool_open); a writer keeps none. */
	if (sp->fd >= 0)
		upcall_fd_close(sp->fd);
	free(sp->data);
	sp->data = NULL;
	spool_forget(sp);
}

static int visit(uint64_t key, uint64_t count, merge_entry_fn *fn, void *arg, uint64_t *badn)
{
	if (!key || !count)
		return 0;
	unsigned ev = SPOOL_KEY_EV(key);
	if (ev == UPCALL_EV_NONE || ev >= UPCALL_EV_MAX || count > (1ull << 48)) {
		(*badn)++;
		return 0;
	}
	return fn(key, count, arg);
}

/* visit() each entry of e[0..n), passing over holes. */
static int visit_run(const struct spool *sp, const struct spool_entry *e, size_t n,
		     merge_entry_fn *fn, void *arg, uint64_t *badn)
{
	int r;
	for (size_t i = next_held(sp, e, 0, n); i < n; i = step_held(sp, e, i, n))
		if ((r = visit(e[i].key, e[i].count, fn, arg, badn)))
			return r;
	return 0;
}

int merge_spool_foreach(const struct spool *sp, merge_entry_fn *fn, void *arg,
			uint64_t *badn)
{
	int r;
	*badn = 0;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		const struct spool_thread_slot *sl = spool_slot_at(sp, i);
		if ((r = visit_run(sp, &sl->bucket[0][0], (size_t)sl->nbuckets * SPOOL_WAYS, fn, arg, badn)))
			return r;
	}
	return visit_run(sp, sp->shared, sp->hdr->s.shared_entries, fn, arg, badn);
}

static int run_ok(const struct spool_run *r)
{
	return !memcmp(r->magic, SPOOL_RUN_MAGIC, 8) &&
	       r->checksum == XXH64(r, offsetof(struct spool_run, checksum), 0);
}

int merge_spool_run_read(int fd, struct spool_run *r)
{
	if (pread(fd, r, sizeof(*r), SPOOL_RUN_OFF) == (ssize_t)sizeof(*r) && run_ok(r))
		return 0;
	memset(r, 0, sizeof(*r));
	return -1;
}

/* One stored hotlist: skip empty ones, count damaged or half-written
 * ones. One whose key and state lie in holes is unused (both read as 0)
 * and passed over without touching its memory, so that the merge does
 * not fault in the ~8 MiB of a values spool that a short run never
 * wrote. */
static int visit_hot(const struct spool *sp, const struct spool_hotlist *h, merge_hot_fn *fn,
		     void *arg, uint64_t *badn)
{
	if (!held(sp, &h->key) && !held(sp, &h->state))
		return 0;
	uint32_t st = h->state;
	if (!h->key && st != SPOOL_HOT_BUSY)
		return 0;
	if (st != SPOOL_HOT_READY || spool_hot_check(h, 1, NULL) < 0) {
		(*badn)++;
		return 0;
	}
	return fn(h, arg);
}

uint64_t merge_spool_value_samples(const struct spool *sp)
{
	uint64_t n = sp->hdr->live.value_samples;
	for (uint32_t i = 0; sp->values && i < sp->hdr->s.nslots; i++) {
		const struct spool_value_table *t = spool_value_table_at(sp, i);
		if (held(sp, t))
			n += t->offered;
	}
	return n;
}

/* The value record log folded into one hotlist per key, in the order
 * each chunk's thread wrote its records (chunks in the order they were
 * claimed), with coins from a generator seeded by the spool's identity:
 * a merge is reproducible. A chunk whose count is out of bounds, or a
 * record of no known kind, is skipped and counted in *badn. */
struct vlog_fold {
	uint64_t *keys;          /* open-addressed, key 0 free */
	uint32_t *at;            /* index + 1 in lists */
	size_t cap;              /* power of two */
	struct spool_hotlist *lists;
	size_t n, ncap;
};

static struct spool_hotlist *fold_list(struct vlog_fold *f, uint64_t key)
{
	if (2 * (f->n + 1) > f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 4096;
		uint64_t *keys = calloc(cap, sizeof(*keys));
		uint32_t *at = calloc(cap, sizeof(*at));
		if (!keys || !at) {
			free(keys);
			free(at);
			return NULL;
		}
		for (size_t i = 0; i < f->cap; i++) {
			if (!f->keys[i])
				continue;
			size_t j = XXH64(&f->keys[i], 8, 0) & (cap - 1);
			while (keys[j])
				j = (j + 1) & (cap - 1);
			keys[j] = f->keys[i];
			at[j] = f->at[i];
		}
		free(f->keys);
		free(f->at);
		f->keys = keys;
		f->at = at;
		f->cap = cap;
	}
	size_t j = XXH64(&key, 8, 0) & (f->cap - 1);
	while (f->keys[j] && f->keys[j] != key)
		j = (j + 1) & (f->cap - 1);
	if (f->keys[j])
		return &f->lists[f->at[j] - 1];
	if (f->n == f->ncap) {
		size_t ncap = f->ncap ? 2 * f->ncap : 1024;
		struct spool_hotlist *l = realloc(f->lists, ncap * sizeof(*l));
		if (!l)
			return NULL;
		f->lists = l;
		f->ncap = ncap;
	}
	spool_hot_init(&f->lists[f->n], key);
	f->keys[j] = key;
	f->at[j] = (uint32_t)++f->n;
	return &f->lists[f->n - 1];
}

static int visit_vlog(const struct spool *sp, merge_hot_fn *fn, void *arg, uint64_t *badn)
{
	const struct spool_vlog_head *h = (const struct spool_vlog_head *)sp->vlog;
	uint64_t chunks = h->next < SPOOL_VLOG_CHUNKS ? h->next : SPOOL_VLOG_CHUNKS;
	struct vlog_fold f = { 0 };
	uint64_t rng = XXH64(&sp->hdr->s, offsetof(struct spool_static, checksum), 0x766c6f67) | 1;
	int r = 0;
	for (uint32_t k = 0; k < chunks && !r; k++) {
		const struct spool_vlog_chunk *c = spool_vlog_chunk_at(sp, k);
		if (c->count > SPOOL_VLOG_PER_CHUNK) {
			(*badn)++;
			continue;
		}
		const struct spool_vlog_rec *rec = (const struct spool_vlog_rec *)(c + 1);
		for (uint32_t i = 0; i < c->count; i++) {
			unsigned kind = SPOOL_HOT_KEY_KIND(rec[i].key);
			if (kind == SPOOL_VK_NONE || kind >= SPOOL_VK_MAX || !rec[i].n) {
				(*badn)++;
				continue;
			}
			struct spool_hotlist *l = fold_list(&f, rec[i].key);
			if (!l) {
				r = -ENOMEM;
				break;
			}
			for (uint32_t j = 0; j < rec[i].n; j++)
				spool_hot_offer_pair(l, rec[i].value, rec[i].aux, &rng);
		}
	}
	for (size_t i = 0; i < f.n && !r; i++)
		r = fn(&f.lists[i], arg);
	free(f.keys);
	free(f.at);
	free(f.lists);
	return r;
}

void merge_spool_vlog_counts(const struct spool *sp, uint64_t *logged, uint64_t *missed)
{
	*logged = *missed = 0;
	if (!sp->vlog)
		return;
	const struct spool_vlog_head *h = (const struct spool_vlog_head *)sp->vlog;
	uint64_t chunks = h->next < SPOOL_VLOG_CHUNKS ? h->next : SPOOL_VLOG_CHUNKS;
	for (uint32_t k = 0; k < chunks; k++) {
		const struct spool_vlog_chunk *c = spool_vlog_chunk_at(sp, k);
		const struct spool_vlog_rec *rec = (const struct spool_vlog_rec *)(c + 1);
		for (uint32_t i = 0; c->count <= SPOOL_VLOG_PER_CHUNK && i < c->count; i++)
			*logged += rec[i].n;
	}
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		const struct spool_value_table *t = spool_value_table_at(sp, i);
		if (held(sp, t))
			*missed += t->vlog_missed;
	}
}

int merge_spool_values(const struct spool *sp, merge_hot_fn *fn, void *arg, uint64_t *badn)
{
	int r;
	*badn = 0;
	if (!sp->values)
		return 0;
	if (sp->vlog && (r = visit_vlog(sp, fn, arg, badn)))
		return r;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		const struct spool_hotlist *h = (const struct spool_hotlist *)(spool_value_table_at(sp, i) + 1);
		for (uint32_t j = 0; j < SPOOL_VALUE_LISTS; j++)
			if ((r = visit_hot(sp, &h[j], fn, arg, badn)))
				return r;
	}
	const struct spool_hotlist *h = spool_value_shared(sp);
	for (uint32_t j = 0; j < sp->vshared; j++)
		if ((r = visit_hot(sp, &h[j], fn, arg, badn)))
			return r;
	return 0;
}
