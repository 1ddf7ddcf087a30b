/*
 * Per-image profiles: accumulation in memory and the checksummed file.
 *
 * Workload: a merge appends a few thousand (offset, count) pairs per image
 * and compacts once (sort + sum), so appending is a plain array push and
 * all the work is one qsort. Files are read whole into memory; they are
 * small (16 bytes per distinct sampled instruction).
 *
 * Not async-signal-safe; single-threaded use.
 */
#include "merge/profile.h"
#include "merge/jit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

void merge_profile_init(struct merge_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void merge_profile_free(struct merge_profile *p)
{
	free(p->pcs);
	free(p->hot);
	merge_jit_free(p);
	p->pcs = NULL;
	p->hot = NULL;
	p->n = p->cap = 0;
	p->nhot = p->hotcap = 0;
}

/* Room for one more element in *arr (n used of *cap, doubling from
 * first). 0 or -ENOMEM. */
static int grow(void *arr, size_t *cap, size_t n, size_t elem, size_t first)
{
	void **a = arr;
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : first;
	void *np = realloc(*a, c * elem);
	if (!np)
		return -ENOMEM;
	*a = np;
	*cap = c;
	return 0;
}

int merge_profile_add(struct merge_profile *p, uint64_t offset, uint64_t count)
{
	if (grow(&p->pcs, &p->cap, p->n, sizeof(*p->pcs), 256) < 0)
		return -ENOMEM;
	p->pcs[p->n++] = (struct merge_pc_record){ offset, count };
	p->total += count;
	return 0;
}

int merge_profile_hot_add(struct merge_profile *p, const struct spool_hotlist *h)
{
	if (grow(&p->hot, &p->hotcap, p->nhot, sizeof(*p->hot), 64) < 0)
		return -ENOMEM;
	p->hot[p->nhot] = *h;
	p->hot[p->nhot++].state = 0;   /* the spool's claim word means nothing here */
	return 0;
}

static int by_key(const void *a, const void *b)
{
	uint64_t x = ((const struct spool_hotlist *)a)->key;
	uint64_t y = ((const struct spool_hotlist *)b)->key;
	return x < y ? -1 : x > y;
}

/* Fold hotlists of equal keys. The coins come from the two hotlists'
 * contents: a merge is reproducible, and each fold draws fresh ones. */
static void compact_hot(struct merge_profile *p)
{
	size_t o = 0;
	if (!p->nhot)
		return;
	qsort(p->hot, p->nhot, sizeof(*p->hot), by_key);
	for (size_t i = 1; i < p->nhot; i++) {
		if (p->hot[i].key == p->hot[o].key) {
			uint64_t rng = XXH64(&p->hot[o], sizeof(p->hot[o]),
					     XXH64(&p->hot[i], sizeof(p->hot[i]), 0)) | 1;
			spool_hot_merge(&p->hot[o], &p->hot[i], &rng);
		} else {
			p->hot[++o] = p->hot[i];
		}
	}
	p->nhot = o + 1;
	for (size_t i = 0; i < p->nhot; i++)
		spool_hot_sort(&p->hot[i]);
}

static int by_offset(const void *a, const void *b)
{
	uint64_t x = ((const struct merge_pc_record *)a)->offset;
	uint64_t y = ((const struct merge_pc_record *)b)->offset;
	return x < y ? -1 : x > y;
}

void merge_profile_compact(struct merge_profile *p)
{
	size_t o = 0;
	compact_hot(p);
	merge_jit_compact(p);
	if (!p->n)
		return;
	qsort(p->pcs, p->n, sizeof(*p->pcs), by_offset);
	for (size_t i = 1; i < p->n; i++) {
		if (p->pcs[i].offset == p->pcs[o].offset)
			p->pcs[o].count += p->pcs[i].count;
		else
			p->pcs[++o] = p->pcs[i];
	}
	p->n = o + 1;
}

void merge_stats_add(struct merge_stats *a, const struct merge_stats *b)
{
	/* All fields are counters: add them word by word. */
	uint64_t *x = (uint64_t *)a;
	const uint64_t *y = (const uint64_t *)b;
	for (size_t i = 0; i < sizeof(*a) / sizeof(uint64_t); i++)
		x[i] += y[i];
}

int merge_profile_merge(struct merge_profile *a, const struct merge_profile *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (merge_profile_add(a, b->pcs[i].offset, b->pcs[i].count) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < b->nhot; i++)
		if (merge_profile_hot_add(a, &b->hot[i]) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < b->njit; i++)
		if (merge_jit_add(a, b->jit_arena + b->jit[i].off, b->jit[i].len) < 0)
			return -ENOMEM;
	merge_stats_add(&a->stats, &b->stats);
	merge_profile_compact(a);
	return 0;
}

void merge_profile_name(const struct merge_profile *p, char *out, size_t cap)
{
	char hex[2 * SPOOL_BUILD_ID_MAX + 1];
	if (p->flags & MERGE_PROF_STATS) {
		snprintf(out, cap, "stats.prof");
		return;
	}
	if (p->flags & MERGE_PROF_UNKNOWN) {
		snprintf(out, cap, "unknown.%s.prof", upcall_event_name(p->event));
		return;
	}
	if (p->flags & (MERGE_PROF_JIT | MERGE_PROF_KERNEL | MERGE_PROF_CODE)) {   /* by "[jit:EXE]" */
		snprintf(out, cap, "%s-%016llx.%s.prof",
			 p->flags & MERGE_PROF_JIT ? "jit" : p->flags & MERGE_PROF_CODE ? "code" : "kernel",
			 (unsigned long long)XXH64(p->path, strlen(p->path), 0),
			 upcall_event_name(p->event));
		return;
	}
	if (p->build_id_len) {
		for (uint32_t i = 0; i < p->build_id_len; i++)
			snprintf(hex + 2 * i, 3, "%02x", p->build_id[i]);
		snprintf(out, cap, "%s.%s.prof", hex, upcall_event_name(p->event));
	} else {
		/* No build-id: key by path, the best identity left. */
		snprintf(out, cap, "path-%016llx.%s.prof",
			 (unsigned long long)XXH64(p->path, strlen(p->path), 0),
			 upcall_event_name(p->event));
	}
}

static int fail(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	return -EBADMSG;
}

int merge_profile_file_read(const char *path, uint8_t **bufp, struct merge_profile_header *hp,
			    char *why, size_t whylen)
{
	struct merge_profile_header h;
	uint8_t *buf = NULL;
	struct stat st;
	int err = 0, fd;

	*bufp = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		snprintf(why, whylen, "%s", strerror(errno));
		return err;
	}
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(h) || st.st_size > (1ll << 32)) {
		err = fail(why, whylen, "truncated or oversized");
		goto out;
	}
	buf = malloc((size_t)st.st_size);
	if (!buf) {
		err = -ENOMEM;
		snprintf(why, whylen, "out of memory");
		goto out;
	}
	if (pread(fd, buf, (size_t)st.st_size, 0) != st.st_size) {
		err = fail(why, whylen, "short read");
		goto out;
	}
	memcpy(&h, buf, sizeof(h));
	if (memcmp(h.magic, MERGE_PROFILE_MAGIC, 8) != 0) {
		err = fail(why, whylen, "not a vprof profile (bad magic)");
		goto out;
	}
	if (h.bom != SPOOL_BOM) {
		err = fail(why, whylen, "wrong byte order");
		goto out;
	}
	if (h.version != MERGE_PROFILE_VERSION) {
		snprintf(why, whylen, "profile version %u, this vprof reads %u", h.version,
			 MERGE_PROFILE_VERSION);
		err = -EPROTO;
		goto out;
	}
	if (h.file_size != (uint64_t)st.st_size) {
		err = fail(why, whylen, "truncated (size differs from its header)");
		goto out;
	}
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	if (XXH64(buf + ck, h.file_size - ck, 0) != h.checksum) {
		err = fail(why, whylen, "checksum mismatch");
		goto out;
	}
	if (h.nsections > SPOOL_MAX_SECTIONS || h.build_id_len > SPOOL_BUILD_ID_MAX) {
		err = fail(why, whylen, "implausible header");
		goto out;
	}
	for (uint32_t i = 0; i < h.nsections; i++) {
		const struct spool_section *s = &h.section[i];
		if (s->offset < h.header_size || s->offset > h.file_size ||
		    s->size > h.file_size - s->offset) {
			err = fail(why, whylen, "section out of bounds");
			goto out;
		}
	}
	*hp = h;
	*bufp = buf;
	buf = NULL;
out:
	free(buf);
	close(fd);
	return err;
}

int merge_profile_read(const char *path, struct merge_profile *p, char *why, size_t whylen)
{
	struct merge_profile_header h;
	uint8_t *buf;
	int err;

	merge_profile_init(p);
	if ((err = merge_profile_file_read(path, &buf, &h, why, whylen)) < 0)
		return err;
	p->event = h.event;
	p->flags = (uint32_t)h.flags;
	p->build_id_len = h.build_id_len;
	memcpy(p->build_id, h.build_id, sizeof(p->build_id));
	memcpy(p->path, h.path, sizeof(p->path));
	p->path[sizeof(p->path) - 1] = 0;
	for (uint32_t i = 0; i < h.nsections; i++) {
		const struct spool_section *s = &h.section[i];
		if (s->kind == SPOOL_SEC_PCS) {
			size_t n = s->size / sizeof(struct merge_pc_record);
			const struct merge_pc_record *r = (const void *)(buf + s->offset);
			for (size_t j = 0; j < n; j++)
				if ((err = merge_profile_add(p, r[j].offset, r[j].count)) < 0)
					goto out;
		} else if (s->kind == SPOOL_SEC_STATS && s->size >= MERGE_STATS_V1_SIZE) {
			/* Shorter from an older vprof: the newer fields stay 0. */
			memcpy(&p->stats, buf + s->offset,
			       s->size < sizeof(p->stats) ? s->size : sizeof(p->stats));
		} else if (s->kind == SPOOL_SEC_VALUES) {
			const struct spool_hotlist *h = (const void *)(buf + s->offset);
			const char *w;
			if (s->size % sizeof(*h)) {
				err = fail(why, whylen, "values section is not whole hotlists");
				goto out;
			}
			for (size_t j = 0; j < s->size / sizeof(*h); j++) {
				struct spool_hotlist t;
				memcpy(&t, &h[j], sizeof(t));
				if (spool_hot_check(&t, 0, &w) < 0) {
					snprintf(why, whylen, "value hotlist %zu: %s", j, w);
					err = -EBADMSG;
					goto out;
				}
				if ((err = merge_profile_hot_add(p, &t)) < 0)
					goto out;
			}
		} else if (s->kind == SPOOL_SEC_JITNAMES) {
			const char *w = "";
			if ((err = merge_jit_decode(p, buf + s->offset, s->size, &w)) < 0) {
				snprintf(why, whylen, "%s", w);
				goto out;
			}
		}
		/* Other kinds belong to later versions of vprof: skipped. */
	}
	if (p->total != h.total) {
		err = fail(why, whylen, "sample total disagrees with its records");
		goto out;
	}
out:
	if (err < 0)
		merge_profile_free(p);
	free(buf);
	return err;
}

int merge_profile_peek(const char *path, struct merge_profile_header *h)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = pread(fd, h, sizeof(*h), 0);
	close(fd);
	return n == (ssize_t)sizeof(*h) && !memcmp(h->magic, MERGE_PROFILE_MAGIC, 8) &&
	       h->bom == SPOOL_BOM && h->version == MERGE_PROFILE_VERSION && h->event < UPCALL_EV_MAX
		       ? 0 : -1;
}

static int write_all(int fd, const void *b, size_t n)
{
	const uint8_t *p = b;
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct profile_sec {
	uint32_t kind;
	const void *data;
	size_t size;
};

static int write_sections(const char *path, const struct merge_profile *p,
			  const struct profile_sec *sec, uint32_t nsec);

int merge_profile_write(const char *path, const struct merge_profile *p)
{
	struct profile_sec sec[3];
	uint32_t nsec = 0;

	if (p->flags & MERGE_PROF_STATS) {
		sec[nsec++] = (typeof(sec[0])){ SPOOL_SEC_STATS, &p->stats, sizeof(p->stats) };
	} else {
		sec[nsec++] = (typeof(sec[0])){ SPOOL_SEC_PCS, p->pcs, p->n * sizeof(*p->pcs) };
		if (p->nhot)
			sec[nsec++] = (typeof(sec[0])){ SPOOL_SEC_VALUES, p->hot,
							p->nhot * sizeof(*p->hot) };
		if (p->njit) {
			size_t jn;
			void *jb = merge_jit_encode(p, &jn);
			if (!jb)
				return -ENOMEM;
			sec[nsec++] = (typeof(sec[0])){ SPOOL_SEC_JITNAMES, jb, jn };
		}
	}
	int rc = write_sections(path, p, sec, nsec);
	if (nsec && sec[nsec - 1].kind == SPOOL_SEC_JITNAMES)
		free((void *)sec[nsec - 1].data);
	return rc;
}

static int write_sections(const char *path, const struct merge_profile *p,
			  const struct profile_sec *sec, uint32_t nsec)
{
	struct merge_profile_header h;
	uint64_t off = sizeof(h);
	char tmp[600];
	int fd, err = 0;

	memset(&h, 0, sizeof(h));
	memcpy(h.magic, MERGE_PROFILE_MAGIC, 8);
	h.version = MERGE_PROFILE_VERSION;
	h.bom = SPOOL_BOM;
	h.header_size = sizeof(h);
	h.nsections = nsec;
	h.event = p->event;
	h.build_id_len = p->build_id_len;
	memcpy(h.build_id, p->build_id, sizeof(h.build_id));
	h.total = (p->flags & MERGE_PROF_STATS) ? 0 : p->total;
	h.flags = p->flags;
	for (uint32_t i = 0; i < nsec; i++) {
		h.section[i] = (struct spool_section){ sec[i].kind, 0, off, sec[i].size };
		off += sec[i].size;
	}
	h.file_size = off;
	snprintf(h.path, sizeof(h.path), "%s", p->path);

	XXH64_state_t *x = XXH64_createState();
	if (!x)
		return -ENOMEM;
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	XXH64_reset(x, 0);
	XXH64_update(x, (const uint8_t *)&h + ck, sizeof(h) - ck);
	for (uint32_t i = 0; i < nsec; i++)
		if (sec[i].size)
			XXH64_update(x, sec[i].data, sec[i].size);
	h.checksum = XXH64_digest(x);
	XXH64_freeState(x);

	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if ((err = write_all(fd, &h, sizeof(h))) < 0)
		goto fail;
	for (uint32_t i = 0; i < nsec; i++)
		if (sec[i].size && (err = write_all(fd, sec[i].data, sec[i].size)) < 0)
			goto fail;
	/* No fsync: the rename is atomic for readers and a file torn by a
	 * power cut fails its checksum; an fsync per image made merges of
	 * many-process runs slow. A close that fails (a filesystem that
	 * reports a full disk only then) fails the write. */
	if (close(fd) < 0) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	if (rename(tmp, path) < 0) {
		err = -errno;
		unlink(tmp);
		return err;
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return err;
}

uint32_t merge_profile_xref_id(const uint8_t *build_id, uint32_t build_id_len, const char *path)
{
	uint64_t h = build_id_len ? XXH64(build_id, build_id_len, 0x78726566) : XXH64(path, strlen(path), 0x78726566);
	return (uint32_t)(h & 0x3fffffffu);
}
