/*
 * The spool writer (libvprof.so): creation, the pages the filesystem has
 * backed, and in-handler counting of samples, values, interpretation runs
 * and image records. Format and rationale in format.h; the owner record
 * in owner.c; the reader is merge/spool_read.c.
 *
 * Workload: the handler counts a few hundred to a few thousand samples per
 * second per thread, mostly hitting a small set of hot PCs, so the common
 * case is one hash, one bit test (the bucket's page is backed), one
 * 64-byte bucket, one increment and the slot's check sum beside it on the
 * slot's header line, no atomics. A miss evicts one of the bucket's four
 * entries (DCPI's mod-4 victim) into the shared table, where it is added
 * atomically: nothing is ever thrown away unless the shared table itself
 * is full, or the filesystem gives no page, and that is counted.
 *
 * Room. A store to a page of a MAP_SHARED file that its filesystem cannot
 * back (full, over quota) is a SIGBUS in the program. So create allocates
 * what it writes (posix_fallocate), and every other page is backed before
 * its first use, with madvise(MADV_POPULATE_WRITE), which fails where the
 * store would have faulted (spool_room; a bit per page says which
 * are). The first refusal stops the writer: every later sample is dropped
 * and counted (live.nospace_dropped). The spool stays sparse: a process
 * with one thread and a few hundred PCs backs ~150 KiB of it.
 *
 * Block checks. Each thread slot keeps the sum over its entries of
 * spool_key_mix(key) x count, and what it moved into the shared table;
 * the slot-less samples keep theirs in page 0; image records carry an
 * XXH64. A reader recomputes them and refuses a spool whose counts or
 * keys changed. A slot is BUSY while its writer changes it: one a SIGKILL
 * caught half-way is taken unchecked, so a killed process loses nothing.
 *
 * Concurrency: a thread slot is written only by its owner's handler (and by
 * its owner at thread exit, with the trigger stopped). The shared table is
 * written by every thread with atomics.
 *
 * The writer keeps no descriptor on its spool: the program must not see
 * one (a program listing /proc/self/fd, or closing what it does not know,
 * as a daemon or a sandbox does).
 */
#include "spool/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <xxhash.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23       /* Linux 5.14 */
#endif

static inline uint32_t key_hash(uint64_t key)
{
	/* Fibonacci hashing: PCs of a hot loop differ in their low bits. The
	 * high word is folded in first: a key's kind or event is in bits
	 * 56-63, which the product carries only above bit 56, so without the
	 * fold every kind of hotlist of one PC took the same set of ways and
	 * the same shared-area slot (with --values at 1 kHz, 8 of 35 lua5.4
	 * runs lost their dispatch hotlists, one 61% of its value samples). */
	key ^= key >> 32;
	return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 32);
}

/* Small async-signal-safe helpers: no stdio in a fork child. */
static char *put_str(char *p, char *end, const char *s)
{
	while (*s && p < end - 1)
		*p++ = *s++;
	*p = 0;
	return p;
}

static char *put_u64(char *p, char *end, uint64_t v)
{
	char tmp[24];
	int n = 0;
	do
		tmp[n++] = (char)('0' + v % 10);
	while ((v /= 10) && n < 23);
	while (n && p < end - 1)
		*p++ = tmp[--n];
	*p = 0;
	return p;
}

static void copy_str(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	if (src)
		for (; src[i] && i + 1 < cap; i++)
			dst[i] = src[i];
	dst[i] = 0;
}

/* ---- room: the pages of the file the filesystem has backed ---- */

static inline int page_backed(const struct spool *sp, size_t pg)
{
	return (int)((__atomic_load_n(&sp->room[pg >> 6], __ATOMIC_ACQUIRE) >> (pg & 63)) & 1);
}

static void mark_backed(struct spool *sp, size_t off, size_t len)
{
	for (size_t pg = off >> 12; pg <= (off + len - 1) >> 12; pg++)
		__atomic_fetch_or(&sp->room[pg >> 6], 1ull << (pg & 63), __ATOMIC_RELEASE);
}

/* The first refusal stops the writer; its errno is kept in the spool. */
static void no_room(struct spool *sp, int err)
{
	if (__atomic_exchange_n(&sp->nospace, 1, __ATOMIC_ACQ_REL))
		return;
	uint64_t zero = 0;
	__atomic_compare_exchange_n(&sp->hdr->live.nospace_errno, &zero, (uint64_t)err, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* The common case inline: len bytes at p within one page already backed. */
static inline int room_fast(struct spool *sp, const void *p, size_t len)
{
	size_t off = (size_t)((const uint8_t *)p - (const uint8_t *)sp->hdr);
	if (__builtin_expect(sp->room_all || ((off ^ (off + len - 1)) >> 12 == 0 &&
					      page_backed(sp, off >> 12)), 1))
		return 0;
	return spool_room(sp, p, len);
}

/* The first page of [p, p + len) not yet backed, or one past its last
 * page (*last) when all are. */
static size_t first_unbacked(const struct spool *sp, const void *p, size_t len, size_t *last)
{
	size_t off = (size_t)((const uint8_t *)p - (const uint8_t *)sp->hdr);
	size_t pg = off >> 12;
	*last = (off + len - 1) >> 12;
	while (pg <= *last && page_backed(sp, pg))
		pg++;
	return pg;
}

/* Are all of [p, p + len) backed? Backs nothing: for reads that must not
 * touch a page the filesystem may have no room for. */
static int backed(const struct spool *sp, const void *p, size_t len)
{
	size_t b;
	return sp->room_all || first_unbacked(sp, p, len, &b) > b;
}

int spool_room(struct spool *sp, const void *p, size_t len)
{
	if (sp->room_all)
		return 0;
	size_t b, pg = first_unbacked(sp, p, len, &b);
	if (pg > b)
		return 0;
	if (__atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return -1;
	/* Two threads may both get here for one page: populating twice is
	 * harmless. EFAULT is the SIGBUS the write would have raised: the
	 * filesystem is full, or the owner over quota. */
	int saved = errno;
	int rc = madvise((uint8_t *)sp->hdr + (pg << 12), (b - pg + 1) << 12, MADV_POPULATE_WRITE);
	int err = errno;
	errno = saved;
	if (rc < 0) {
		no_room(sp, err == EFAULT ? ENOSPC : err);
		return -1;
	}
	mark_backed(sp, pg << 12, (b - pg + 1) << 12);
	return 0;
}

/* The log's bytes a writer limited to `chunks` chunks may write: from
 * the section's start to the end of the last of them. */
static size_t vlog_span(uint32_t chunks)
{
	return sizeof(struct spool_vlog_head) + (size_t)chunks * SPOOL_VLOG_CHUNK_BYTES;
}

int spool_reserve_all(struct spool *sp)
{
	if (!sp->hdr)
		return -1;
	size_t end = sp->size;
	if (sp->vlog) {
		/* The limit first: a chunk claimed from now on lies below it,
		 * so the pages backed next are all a writer can reach. */
		const struct spool_vlog_head *h = (const struct spool_vlog_head *)sp->vlog;
		uint64_t next = __atomic_load_n(&h->next, __ATOMIC_RELAXED);
		uint64_t lim = next + SPOOL_VLOG_RESERVED;
		if (lim < sp->vlog_limit)
			__atomic_store_n(&sp->vlog_limit, (uint32_t)lim, __ATOMIC_RELAXED);
		size_t at = (size_t)(sp->vlog - (uint8_t *)sp->hdr);
		size_t after = at + spool_vlog_bytes();
		if (after < sp->size && spool_room(sp, (uint8_t *)sp->hdr + after, sp->size - after) < 0)
			return -1;
		end = at + vlog_span(sp->vlog_limit);
	}
	if (spool_room(sp, sp->hdr, end) < 0)
		return -1;
	sp->room_all = 1;
	return 0;
}

/* Allocate [off, off + len) of the file now, where create writes. */
static int back(int fd, size_t off, size_t len)
{
	int e = posix_fallocate(fd, (off_t)off, (off_t)len);
	if (e) {
		errno = e;
		return -1;
	}
	return 0;
}

int spool_create(struct spool *sp, const char *dir,
		 const struct spool_params *p)
{
	size_t hdr = 4096;
	size_t sl = spool_slot_bytes(SPOOL_SLOT_BUCKETS);
	size_t threads_off = hdr, threads_sz = sl * SPOOL_SLOTS;
	size_t shared_off = threads_off + threads_sz;
	size_t shared_sz = (size_t)SPOOL_SHARED_ENTRIES * sizeof(struct spool_entry);
	size_t images_off = shared_off + shared_sz;
	size_t images_sz = (size_t)SPOOL_IMAGE_RECORDS * sizeof(struct spool_image_record);
	size_t values_off = images_off + images_sz;
	size_t values_sz = p->values ? spool_values_bytes(SPOOL_SLOTS, SPOOL_VALUE_SHARED) : 0;
	size_t vlog_off = values_off + values_sz;
	size_t vlog_sz = p->values ? spool_vlog_bytes() : 0;
	size_t stacks_off = vlog_off + vlog_sz;
	size_t stacks_sz = p->stack_depth ? spool_stacks_section_bytes() : 0;
	size_t size = stacks_off + stacks_sz;
	pid_t pid = getpid();
	int fd = -1, err;
	void *m = MAP_FAILED;

	_Static_assert(sizeof(struct spool_header) <= 4096, "spool header fits page 0");
	_Static_assert(sizeof(struct spool_image_record) == 512, "image record size");
	_Static_assert(offsetof(struct spool_image_record, path) + SPOOL_PATH_MAX ==
		       SPOOL_IMAGE_CHECK_OFF + 8, "image record check in the path's last 8 bytes");
	_Static_assert(sizeof(struct spool_thread_slot) == 64, "slot header is a cache line");
	_Static_assert(sizeof(struct spool_hotlist) == 416, "hotlist record size");
	_Static_assert(sizeof(struct spool_values_head) == 64, "values head size");
	_Static_assert(sizeof(struct spool_value_table) == 64, "value table header size");
	_Static_assert(sizeof(struct spool_vlog_head) == 64, "value log head size");
	_Static_assert(sizeof(struct spool_vlog_chunk) == 64, "value log chunk header size");
	_Static_assert(sizeof(struct spool_vlog_rec) == 32, "value log record size");

	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	if (size > (size_t)SPOOL_ROOM_WORDS * 64 * 4096)
		return -EFBIG;
	/* Build the file under a name mergers ignore, and only then give it its
	 * .spool name: a merger must never see a spool whose header (or owner
	 * record) is not yet written and take it for a corrupt (or finished)
	 * one. */
	char tmp[sizeof(sp->path)];
	char *q = put_str(tmp, tmp + sizeof(tmp), dir);
	q = put_str(q, tmp + sizeof(tmp), "/.new.");
	q = put_u64(q, tmp + sizeof(tmp), (uint64_t)pid);
	put_str(q, tmp + sizeof(tmp), ".tmp");
	unlink(tmp);             /* left by an earlier process with our pid */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0)
		goto fail;
	/* What is written here, now: page 0 and the heads of the slots and
	 * sections. A filesystem that cannot give that much fails the create
	 * (the program runs unprofiled), rather than a store into the
	 * mapping raising SIGBUS in the program. */
	if (back(fd, 0, hdr) < 0)
		goto fail;
	for (uint32_t i = 0; i < SPOOL_SLOTS; i++)
		if (back(fd, threads_off + i * sl, sizeof(struct spool_thread_slot)) < 0)
			goto fail;
	if ((values_sz && back(fd, values_off, sizeof(struct spool_values_head)) < 0) ||
	    (stacks_sz && (back(fd, stacks_off, sizeof(struct spool_stacks_head)) < 0 ||
			   back(fd, stacks_off + spool_stacks_section_bytes_v1(),
				sizeof(struct spool_codes_head)) < 0)))
		goto fail;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	sp->size = size;
	sp->hdr = m;
	/* A kernel without MADV_POPULATE_WRITE (before 5.14) cannot back a
	 * page at its first use: the whole file is allocated now instead,
	 * but for the value record log's chunks past the first
	 * SPOOL_VLOG_RESERVED, which its writer then never claims. */
	sp->vlog_limit = p->vlog_chunks < 0 ? 0
			 : p->vlog_chunks && p->vlog_chunks < SPOOL_VLOG_CHUNKS ? (uint32_t)p->vlog_chunks
			 : SPOOL_VLOG_CHUNKS;
	if (madvise(m, hdr, MADV_POPULATE_WRITE) < 0) {
		size_t upto = vlog_sz ? vlog_off + vlog_span(SPOOL_VLOG_RESERVED) : size;
		if (errno != EINVAL || back(fd, 0, upto) < 0 ||
		    (upto < stacks_off && stacks_sz && back(fd, stacks_off, stacks_sz) < 0))
			goto fail;
		if (vlog_sz && sp->vlog_limit > SPOOL_VLOG_RESERVED)
			sp->vlog_limit = SPOOL_VLOG_RESERVED;
		sp->room_all = 1;
	}
	mark_backed(sp, 0, hdr);
	for (uint32_t i = 0; i < SPOOL_SLOTS; i++)
		mark_backed(sp, threads_off + i * sl, sizeof(struct spool_thread_slot));
	if (values_sz)
		mark_backed(sp, values_off, sizeof(struct spool_values_head));
	if (stacks_sz) {
		mark_backed(sp, stacks_off, sizeof(struct spool_stacks_head));
		mark_backed(sp, stacks_off + spool_stacks_section_bytes_v1(),
			    sizeof(struct spool_codes_head));
	}
	upcall_fd_close(fd);      /* the mapping keeps the file */
	fd = -1;

	sp->threads = (uint8_t *)m + threads_off;
	sp->shared = (struct spool_entry *)((uint8_t *)m + shared_off);
	sp->images = (struct spool_image_record *)((uint8_t *)m + images_off);
	sp->values = values_sz ? (uint8_t *)m + values_off : NULL;
	sp->vlog = vlog_sz ? (uint8_t *)m + vlog_off : NULL;
	sp->stacks = stacks_sz ? (uint8_t *)m + stacks_off : NULL;
	sp->codes = stacks_sz ? sp->stacks + spool_stacks_section_bytes_v1() : NULL;

	struct spool_static *s = &sp->hdr->s;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memcpy(s->magic, SPOOL_MAGIC, 8);
	s->version = vlog_sz ? SPOOL_VERSION_VLOG : stacks_sz ? SPOOL_VERSION_STACKS : SPOOL_VERSION_PLAIN;
	s->bom = SPOOL_BOM;
	s->header_size = (uint32_t)hdr;
	s->nsections = 3 + (values_sz != 0) + (vlog_sz != 0) + (stacks_sz != 0);
	s->file_size = size;
	s->pid = (uint64_t)pid;
	s->ppid = (uint64_t)getppid();
	s->start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	s->event = p->event;
	s->backend = p->backend;
	s->period = p->period;
	s->nslots = SPOOL_SLOTS;
	s->slot_size = (uint32_t)sl;
	s->shared_entries = SPOOL_SHARED_ENTRIES;
	s->image_records = SPOOL_IMAGE_RECORDS;
	s->section[0] = (struct spool_section){ SPOOL_SEC_THREADS, SPOOL_SECF_CHECKED, threads_off, threads_sz };
	s->section[1] = (struct spool_section){ SPOOL_SEC_SHARED, SPOOL_SECF_CHECKED, shared_off, shared_sz };
	s->section[2] = (struct spool_section){ SPOOL_SEC_IMAGES, SPOOL_SECF_CHECKED, images_off, images_sz };
	if (values_sz) {
		s->section[3] = (struct spool_section){ SPOOL_SEC_VALUES, 0, values_off, values_sz };
		spool_values_geometry((struct spool_values_head *)sp->values, SPOOL_SLOTS, SPOOL_VALUE_SHARED);
		sp->vshared = SPOOL_VALUE_SHARED;
		void *ix = mmap(NULL, 2 * (size_t)SPOOL_VALUE_SHARED * sizeof(uint32_t), PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		sp->vindex = ix == MAP_FAILED ? NULL : ix;
		sp->vnext = 0;
		/* The log's head is written (and its page backed) by the
		 * first chunk claimed: a spool whose log is never used backs
		 * no page more than before it had one. */
		s->section[4] = (struct spool_section){ SPOOL_SEC_VLOG, 0, vlog_off, vlog_sz };
	}
	if (stacks_sz) {
		s->section[s->nsections - 1] =
			(struct spool_section){ SPOOL_SEC_STACKS, SPOOL_SECF_CHECKED, stacks_off, stacks_sz };
		spool_stacks_geometry((struct spool_stacks_head *)sp->stacks, p->stack_depth,
				      p->stack_method);
		struct spool_codes_head *ch = (struct spool_codes_head *)sp->codes;
		ch->entries = SPOOL_CODE_ENTRIES;
		ch->entry_size = sizeof(struct spool_code_entry);
	}
	copy_str(s->exe, sizeof(s->exe), p->exe);
	copy_str(s->cmdline, sizeof(s->cmdline), p->cmdline);
	for (uint32_t i = 0; i < SPOOL_SLOTS; i++)
		spool_slot_at(sp, i)->nbuckets = SPOOL_SLOT_BUCKETS;
	s->checksum = XXH64(s, offsetof(struct spool_static, checksum), 0);
	_Static_assert(sizeof(struct spool_header) <= SPOOL_OWNER_OFF,
		       "owner record after the header");
	_Static_assert(SPOOL_OWNER_OFF + sizeof(struct spool_owner) <= SPOOL_RUN_OFF,
		       "run record after the owner record");
	_Static_assert(SPOOL_RUN_OFF + sizeof(struct spool_run) <= 4096,
		       "run record in page 0");
	spool_owner_fill((struct spool_owner *)((uint8_t *)m + SPOOL_OWNER_OFF), pid);
	if (p->run_id) {
		struct spool_run *r = (struct spool_run *)((uint8_t *)m + SPOOL_RUN_OFF);
		memcpy(r->magic, SPOOL_RUN_MAGIC, 8);
		r->id = p->run_id;
		r->epoch = p->run_epoch;
		r->checksum = XXH64(r, offsetof(struct spool_run, checksum), 0);
	}
	for (unsigned n = 0; n < 1000; n++) {
		q = put_str(sp->path, sp->path + sizeof(sp->path), dir);
		q = put_str(q, sp->path + sizeof(sp->path), "/");
		q = put_u64(q, sp->path + sizeof(sp->path), (uint64_t)pid);
		q = put_str(q, sp->path + sizeof(sp->path), ".");
		q = put_u64(q, sp->path + sizeof(sp->path), n);
		put_str(q, sp->path + sizeof(sp->path), ".spool");
		if (link(tmp, sp->path) == 0) {
			unlink(tmp);
			return 0;
		}
		if (errno != EEXIST)
			break;
	}
	err = -errno;
	spool_forget(sp);
	unlink(tmp);
	return err;
fail:
	err = errno == EFAULT ? -ENOSPC : -errno;
	if (m != MAP_FAILED)
		munmap(m, size);
	memset(sp, 0, sizeof(*sp));
	upcall_fd_close(fd);
	unlink(tmp);
	sp->fd = -1;
	return err;
}

void spool_forget(struct spool *sp)
{
	if (sp->vindex)
		munmap(sp->vindex, 2 * (size_t)sp->vshared * sizeof(uint32_t));
	sp->vindex = NULL;
	if (sp->hdr)
		munmap(sp->hdr, sp->size);
	sp->hdr = NULL;
	sp->fd = -1;
}

struct spool_thread_slot *spool_claim_slot(struct spool *sp, uint32_t tid)
{
	if (!sp->hdr || __atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return NULL;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		struct spool_thread_slot *sl = spool_slot_at(sp, i);
		uint32_t want = SPOOL_SLOT_FREE;
		if (__atomic_compare_exchange_n(&sl->state, &want, SPOOL_SLOT_OWNED, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
			sl->tid = tid;
			return sl;
		}
	}
	return NULL;
}

enum { ADD_FULL = -1, ADD_NOROOM = -2 };

/* Add count to key in the shared table. Returns 0, ADD_FULL if no entry
 * was found in 256 probes, ADD_NOROOM if the filesystem refused a page. */
static int shared_add(struct spool *sp, uint64_t key, uint64_t count)
{
	uint32_t mask = sp->hdr->s.shared_entries - 1;
	uint32_t h = key_hash(key) & mask;
	for (uint32_t probe = 0; probe < 256; probe++) {
		struct spool_entry *e = &sp->shared[(h + probe) & mask];
		if (room_fast(sp, e, sizeof(*e)) < 0)
			return ADD_NOROOM;
		uint64_t k = __atomic_load_n(&e->key, __ATOMIC_ACQUIRE);
		if (k == 0) {
			uint64_t zero = 0;
			if (__atomic_compare_exchange_n(&e->key, &zero, key, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				__atomic_fetch_add(&sp->hdr->live.shared_used, 1, __ATOMIC_RELAXED);
				k = key;
			} else {
				k = zero;       /* somebody else claimed it: with what? */
			}
		}
		if (k == key) {
			__atomic_fetch_add(&e->count, count, __ATOMIC_RELAXED);
			return 0;
		}
	}
	return ADD_FULL;
}

static void lost(struct spool *sp, uint64_t count, int why)
{
	struct spool_live *l = &sp->hdr->live;
	__atomic_fetch_add(&l->dropped, count, __ATOMIC_RELAXED);
	__atomic_fetch_add(why == ADD_NOROOM ? &l->nospace_dropped : &l->dropped_full, count,
			   __ATOMIC_RELAXED);
}

/* A slot is BUSY while its writer changes it (compiler barriers suffice:
 * one writer, and its stores reach the mapping in program order). */
static inline void slot_busy(struct spool_thread_slot *sl)
{
	sl->busy = SPOOL_SLOT_BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void slot_idle(struct spool_thread_slot *sl)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	sl->busy = 0;
}

void spool_count(struct spool *sp, struct spool_thread_slot *sl, uint64_t key)
{
	if (__builtin_expect(__atomic_load_n(&sp->nospace, __ATOMIC_RELAXED), 0)) {
		lost(sp, 1, ADD_NOROOM);
		return;
	}
	uint64_t mix = spool_key_mix(key);
	if (!sl) {
		struct spool_live *l = &sp->hdr->live;
		__atomic_fetch_add(&l->nothread, 1, __ATOMIC_RELAXED);
		int r = shared_add(sp, key, 1);
		if (r == 0)
			__atomic_fetch_add(&l->noslot_sum, mix, __ATOMIC_RELAXED);
		else
			lost(sp, 1, r);
		__atomic_fetch_add(&l->noslot_done, 1, __ATOMIC_RELEASE);
		return;
	}
	struct spool_entry *b = sl->bucket[key_hash(key) & (sl->nbuckets - 1)];
	/* A bucket is a cache line, never across pages: its page is backed
	 * at the first key that hashes into it (a bit test after that). */
	if (room_fast(sp, b, sizeof(sl->bucket[0])) < 0) {
		lost(sp, 1, ADD_NOROOM);
		return;
	}
	slot_busy(sl);
	sl->samples++;
	for (int w = 0; w < SPOOL_WAYS; w++) {
		if (b[w].key == key) {
			b[w].count++;
			sl->sum += mix;
			slot_idle(sl);
			return;
		}
	}
	for (int w = 0; w < SPOOL_WAYS; w++) {
		if (b[w].key == 0) {
			b[w].count = 1;
			b[w].key = key;
			sl->sum += mix;
			slot_idle(sl);
			return;
		}
	}
	/* Evict: first move the victim's count into the shared table, then
	 * reuse the entry. If SIGKILL lands between the two, the victim is
	 * counted twice at most once per process: acceptable, and rare. */
	struct spool_entry *v = &b[sl->victim++ % SPOOL_WAYS];
	uint64_t vmix = spool_key_mix(v->key) * v->count;
	sl->evictions++;
	int r = shared_add(sp, v->key, v->count);
	if (r == 0)
		sl->shared_sum += vmix;
	else
		lost(sp, v->count, r);
	v->count = 1;
	v->key = key;
	sl->sum += mix - vmix;
	slot_idle(sl);
}

void spool_release_slot(struct spool *sp, struct spool_thread_slot *sl)
{
	if (!sl)
		return;
	slot_busy(sl);
	for (uint32_t i = 0; i < sl->nbuckets; i++) {
		/* A bucket on a page never backed was never used (and may
		 * not be read: the read would need the page). */
		size_t pg = (size_t)((uint8_t *)sl->bucket[i] - (uint8_t *)sp->hdr) >> 12;
		if (!sp->room_all && !page_backed(sp, pg))
			continue;
		for (int w = 0; w < SPOOL_WAYS; w++) {
			struct spool_entry *e = &sl->bucket[i][w];
			if (!e->key)
				continue;
			/* An entry the shared table has no room for stays: the
			 * merge reads every slot, and the slot's next owner
			 * counts on beside it. */
			uint64_t emix = spool_key_mix(e->key) * e->count;
			if (shared_add(sp, e->key, e->count) < 0)
				continue;
			sl->shared_sum += emix;
			sl->sum -= emix;
			/* Clear the key first: a crash between the two leaves a
			 * zero-count entry, never a double count. */
			e->key = 0;
			e->count = 0;
		}
	}
	sl->tid = 0;
	slot_idle(sl);
	__atomic_store_n(&sl->state, SPOOL_SLOT_FREE, __ATOMIC_RELEASE);
}

/* ---- values ---- */

/* Merge h into the shared value area: into a ready record of its key, or
 * a free one claimed for it. A record is only ever changed by the thread
 * that moved its state to BUSY, and is never waited for: a busy one is
 * passed over, which may leave two records of one key (the merge folds
 * them).
 *
 * With the writer's index (sp->vindex), a key's record is found by
 * probing the index (16 entries a cache line) and a new key takes the
 * next record in order, claimed with an atomic add and published in the
 * index with a CAS once its key is written; a record that loses the race
 * for its index entry, or is made beside a busy one, stays unindexed but
 * in the file, where the merge finds and folds it. Placed in order, the
 * area's records fill a page before the next is touched: python3's value
 * samples touched ~1700 pages of it, one per record, each first write a
 * page reserved, and each look-up probed records across the whole area.
 * Without the index (it could not be mapped), records are probed from the
 * key's hash as before. Returns 0, or -1 when no record was found. */
static int claim_merge(struct spool *sp, struct spool_hotlist *rec, const struct spool_hotlist *h,
		       uint64_t *rng)
{
	uint32_t st = __atomic_load_n(&rec->state, __ATOMIC_ACQUIRE);
	if (st == SPOOL_HOT_BUSY ||
	    !__atomic_compare_exchange_n(&rec->state, &st, SPOOL_HOT_BUSY, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return -1;
	/* A free record is all zeros: merging into it copies h. */
	spool_hot_merge(rec, h, rng);
	__atomic_store_n(&rec->state, SPOOL_HOT_READY, __ATOMIC_RELEASE);
	return 0;
}

/* A record not used yet, at the end of those placed, merged from h:
 * its index + 1, or 0 when the area is full or its page has no room. */
static uint32_t place_new(struct spool *sp, const struct spool_hotlist *h, uint64_t *rng)
{
	struct spool_hotlist *tab = spool_value_shared(sp);
	uint32_t r = __atomic_fetch_add(&sp->vnext, 1, __ATOMIC_RELAXED);
	if (r >= sp->vshared || spool_room(sp, &tab[r], sizeof(tab[r])) < 0 ||
	    claim_merge(sp, &tab[r], h, rng) < 0)
		return 0;
	return r + 1;
}

static int shared_hot_merge(struct spool *sp, const struct spool_hotlist *h, uint64_t *rng)
{
	struct spool_hotlist *tab = spool_value_shared(sp);
	uint32_t *ix = sp->vindex;
	if (ix) {
		uint32_t mask = 2 * sp->vshared - 1, r = 0;
		uint32_t at = key_hash(h->key) & mask;
		for (uint32_t probe = 0; probe < 64; probe++) {
			uint32_t *slot = &ix[(at + probe) & mask];
			uint32_t v = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
			if (!v) {
				/* h's record (placed once), published here; a
				 * CAS lost to another key's goes on probing */
				if (!r && !(r = place_new(sp, h, rng)))
					return -1;
				if (__atomic_compare_exchange_n(slot, &v, r, 0, __ATOMIC_RELEASE,
								__ATOMIC_ACQUIRE))
					return 0;
			}
			if (v > sp->vshared || tab[v - 1].key != h->key)
				continue;
			if (r)   /* placed, and the key has a record indexed: r is its second */
				return 0;
			if (claim_merge(sp, &tab[v - 1], h, rng) == 0)
				return 0;
			return place_new(sp, h, rng) ? 0 : -1;   /* busy: a second record */
		}
		return r ? 0 : -1;   /* r unindexed: in the file all the same */
	}
	uint32_t mask = sp->vshared - 1;
	uint32_t at = key_hash(h->key) & mask;
	for (uint32_t probe = 0; probe < 32; probe++) {
		struct spool_hotlist *rec = &tab[(at + probe) & mask];
		if (spool_room(sp, rec, sizeof(*rec)) < 0)
			return -1;
		uint32_t st = __atomic_load_n(&rec->state, __ATOMIC_ACQUIRE);
		if (st == SPOOL_HOT_READY && rec->key != h->key)
			continue;
		if (claim_merge(sp, rec, h, rng) == 0)
			return 0;
	}
	return -1;
}

static void shared_hot_put(struct spool *sp, const struct spool_hotlist *h, uint64_t *rng)
{
	if (shared_hot_merge(sp, h, rng) < 0)
		__atomic_fetch_add(&sp->hdr->live.values_dropped, h->vtot, __ATOMIC_RELAXED);
}

/* A thread-table hotlist is BUSY while its owner changes it, so a reader
 * after SIGKILL skips (and counts) one caught half-way. Single writer:
 * compiler barriers are enough, the stores reach the mapping in order. */
static inline void hot_busy(struct spool_hotlist *h)
{
	h->state = SPOOL_HOT_BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void hot_ready(struct spool_hotlist *h)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h->state = SPOOL_HOT_READY;
}

/* The log's pages are backed VLOG_STEP bytes at a time (within the
 * chunk): one madvise per ~25 value windows rather than per ~6, while a
 * thread that takes few value samples still backs only 16 KiB. */
#define VLOG_STEP 16384

static int vlog_room(struct spool *sp, struct spool_vlog_chunk *c, const struct spool_vlog_rec *r)
{
	size_t off = (size_t)((const uint8_t *)r - (const uint8_t *)sp->hdr);
	if (sp->room_all || ((off ^ (off + sizeof(*r) - 1)) >> 12 == 0 && page_backed(sp, off >> 12)))
		return 0;
	uint8_t *pg = (uint8_t *)sp->hdr + (off & ~(size_t)4095);
	size_t left = (size_t)((uint8_t *)c + SPOOL_VLOG_CHUNK_BYTES - pg);
	return spool_room(sp, pg, left < VLOG_STEP ? left : VLOG_STEP);
}

/* The value record log: the record goes at the end of the chunk t's
 * owner writes, or of a new one claimed for it. A record's page is backed
 * before its first byte is written (a chunk's pages one at a time, as
 * its records reach them). Single writer per chunk: its owner thread,
 * whose signal handler is the only other writer and runs to completion
 * before the interrupted code goes on; the count is stored after the
 * record, so a reader after SIGKILL sees whole records only. Returns 0,
 * or -1 when the log is full or a page was refused (the caller puts the
 * value in the thread table). */
static int vlog_put(struct spool *sp, struct spool_value_table *t, uint32_t tid, uint64_t key,
		    uint64_t value, uint64_t aux, uint32_t n)
{
	struct spool_vlog_chunk *c = NULL;
	if (t->vlog_chunk && t->vlog_chunk <= SPOOL_VLOG_CHUNKS) {
		c = spool_vlog_chunk_at(sp, t->vlog_chunk - 1);
		if (c->count >= SPOOL_VLOG_PER_CHUNK)
			c = NULL;
	}
	if (!c) {
		if (sp->vlog_full)
			return -1;
		struct spool_vlog_head *h = (struct spool_vlog_head *)sp->vlog;
		if (!sp->vlog_ready) {
			/* Every writer stores the same geometry: no race to lose. */
			if (room_fast(sp, h, sizeof(*h)) < 0)
				return -1;
			spool_vlog_geometry(h);
			sp->vlog_ready = 1;
		}
		uint64_t k = __atomic_fetch_add(&h->next, 1, __ATOMIC_RELAXED);
		if (k >= __atomic_load_n(&sp->vlog_limit, __ATOMIC_RELAXED)) {
			sp->vlog_full = 1;
			return -1;
		}
		c = spool_vlog_chunk_at(sp, (uint32_t)k);
		if (room_fast(sp, c, sizeof(*c)) < 0)
			return -1;
		c->tid = tid;
		c->count = 0;
		t->vlog_chunk = (uint32_t)k + 1;
	}
	struct spool_vlog_rec *r = (struct spool_vlog_rec *)(c + 1) + c->count;
	if (vlog_room(sp, c, r) < 0)
		return -1;
	r->key = key;
	r->value = value;
	r->aux = aux;
	r->n = n;
	r->pad = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	c->count++;
	return 0;
}

/* The value table of a writer's slot sl. A writer's slots are this
 * vprof's size (a constant: a multiply, not a divide, and no read of the
 * header page per value). */
static struct spool_value_table *value_table_of(const struct spool *sp, const struct spool_thread_slot *sl)
{
	uint32_t idx = (uint32_t)((size_t)((const uint8_t *)sl - sp->threads) / spool_slot_bytes(SPOOL_SLOT_BUCKETS));
	return spool_value_table_at(sp, idx);
}

void spool_vlog_hints(const struct spool *sp, const struct spool_thread_slot *sl,
		      const void *hint[3])
{
	hint[0] = hint[1] = hint[2] = NULL;
	if (!sl || !sp->hdr || !sp->values || !sp->vlog)
		return;
	/* The table's header is backed once a value went through it (all of
	 * it: spool_value_n); before that it holds nothing to read. */
	const struct spool_value_table *t = value_table_of(sp, sl);
	if (!backed(sp, t, sizeof(*t)))
		return;
	hint[0] = t;
	if (!t->vlog_chunk || t->vlog_chunk > SPOOL_VLOG_CHUNKS)
		return;
	const struct spool_vlog_chunk *c = spool_vlog_chunk_at(sp, t->vlog_chunk - 1);
	hint[1] = c;
	if (c->count < SPOOL_VLOG_PER_CHUNK)
		hint[2] = (const struct spool_vlog_rec *)(c + 1) + c->count;
}

void spool_value(struct spool *sp, struct spool_thread_slot *sl, uint64_t key,
		 uint64_t value, uint64_t aux, uint64_t *rng)
{
	spool_value_n(sp, sl, key, value, aux, 1, rng);
}

void spool_value_n(struct spool *sp, struct spool_thread_slot *sl, uint64_t key,
		   uint64_t value, uint64_t aux, uint32_t n, uint64_t *rng)
{
	unsigned kind = SPOOL_HOT_KEY_KIND(key);
	if (!n || !sp->hdr || !sp->values || kind == SPOOL_VK_NONE || kind >= SPOOL_VK_MAX ||
	    __atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return;
	if (!sl) {
		__atomic_fetch_add(&sp->hdr->live.value_samples, n, __ATOMIC_RELAXED);
		struct spool_hotlist one;
		spool_hot_init(&one, key);
		for (uint32_t i = 0; i < n; i++)
			spool_hot_offer_pair(&one, value, aux, rng);
		shared_hot_put(sp, &one, rng);
		return;
	}
	struct spool_value_table *t = value_table_of(sp, sl);
	if (spool_room(sp, t, sizeof(*t)) < 0)
		return;
	/* The owner's count: a plain store to its own table (an atomic add
	 * on the shared header per value cost ~20 ns, 20 of them a run). */
	t->offered += n;
	/* The log first: a record is a few sequential bytes, where a
	 * hotlist's look-up and update touch tens of lines all over the
	 * thread's table and, on an eviction, the shared area; a value
	 * sample in a program of thousands of instructions found each of
	 * them cold (xz: the puts were ~40% of the handler's time). */
	if (sp->vlog) {
		if (vlog_put(sp, t, sl->tid, key, value, aux, n) == 0)
			return;
		t->vlog_missed += n;
	}
	/* Open addressing over the thread's lists, SPOOL_VALUE_PROBE places
	 * from the key's home: the key's list, else the first free one (a
	 * list, once used, is never free again, so a lookup may stop at a
	 * free one). With 4-way sets of 32, a loop's 61 keys overflowed
	 * sets and 2.7% of values evicted. */
	struct spool_hotlist *tab = (struct spool_hotlist *)(t + 1), *h = NULL, *victim = NULL;
	uint32_t home = key_hash(key);
	for (uint32_t p = 0; p < SPOOL_VALUE_PROBE; p++) {
		struct spool_hotlist *c = &tab[(home + p) & (SPOOL_VALUE_LISTS - 1)];
		if (spool_room(sp, c, sizeof(*c)) < 0) {   /* backed as probed */
			__atomic_fetch_add(&sp->hdr->live.values_dropped, 1, __ATOMIC_RELAXED);
			return;
		}
		if (c->key == key || c->key == 0) {
			h = c;
			break;
		}
		if (!victim || c->vtot < victim->vtot)
			victim = c;
	}
	if (!h) {
		/* Evict into the shared area the probed list with the fewest
		 * value samples: a hot instruction's list stays in the thread
		 * (each eviction is a merge into the shared area). The victim
		 * stays BUSY until it is reused: a SIGKILL in between loses
		 * it, counted, rather than counting it twice. */
		h = victim;
		t->evictions++;
		__atomic_fetch_add(&sp->hdr->live.value_evictions, 1, __ATOMIC_RELAXED);
		hot_busy(h);
		shared_hot_put(sp, h, rng);
		h->key = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		spool_hot_init(h, 0);
	}
	hot_busy(h);
	h->key = key;
	for (uint32_t i = 0; i < n; i++)
		spool_hot_offer_pair(h, value, aux, rng);
	hot_ready(h);
}

void spool_interp(struct spool *sp, uint64_t insns, unsigned stop)
{
	if (!sp->hdr)
		return;
	struct spool_live *l = &sp->hdr->live;
	__atomic_fetch_add(&l->interp_runs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->interp_insns, insns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->interp_stops[stop < SPOOL_INTERP_STOPS ? stop : SPOOL_INTERP_STOPS - 1],
			   1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->run_bins[spool_run_bin(insns)], 1, __ATOMIC_RELAXED);
}

/* Same image? By build-id when both have one, else by path. */
static int same_image(const struct spool_image_record *r, const uint8_t *bid, uint32_t bl,
		      const char *path)
{
	if (r->build_id_len && bl)
		return r->build_id_len == bl && !memcmp(r->build_id, bid, bl);
	for (size_t i = 0; i < sizeof(r->path); i++) {
		if (r->path[i] != path[i])
			return 0;
		if (!path[i])
			return 1;
	}
	return 1;
}

void spool_image(struct spool *sp, int kind, uint64_t bias,
		 uint64_t lo, uint64_t hi, const uint8_t *build_id,
		 uint32_t build_id_len, const char *path)
{
	if (!sp->hdr)
		return;
	/* A load over a different image of the current generation starts a
	 * new generation: samples counted from now on carry it. */
	uint32_t gen = __atomic_load_n(&sp->gen, __ATOMIC_ACQUIRE);
	if (kind == SPOOL_IMG_MAP) {
		uint64_t n = __atomic_load_n(&sp->hdr->live.image_seq, __ATOMIC_ACQUIRE);
		if (n > sp->hdr->s.image_records)
			n = sp->hdr->s.image_records;
		for (uint64_t i = 0; i < n; i++) {
			const struct spool_image_record *r = &sp->images[i];
			if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) != 1 || r->kind != SPOOL_IMG_MAP ||
			    r->gen != gen || r->hi <= lo || r->lo >= hi ||
			    same_image(r, build_id, build_id_len, path ? path : ""))
				continue;
			if (gen < SPOOL_GEN_MAX)
				__atomic_compare_exchange_n(&sp->gen, &gen, gen + 1, 0, __ATOMIC_ACQ_REL,
							    __ATOMIC_ACQUIRE);
			gen = __atomic_load_n(&sp->gen, __ATOMIC_ACQUIRE);
			break;
		}
	}
	spool_image_gen(sp, kind, bias, lo, hi, build_id, build_id_len, path, gen);
}

void spool_image_gen(struct spool *sp, int kind, uint64_t bias,
		     uint64_t lo, uint64_t hi, const uint8_t *build_id,
		     uint32_t build_id_len, const char *path, uint32_t gen)
{
	if (!sp->hdr)
		return;
	/* A record's page is backed before its index is taken: every record
	 * below image_seq may be read (spool_image, a fork child's
	 * copy) without a fault on a page the filesystem refused. */
	uint64_t i = __atomic_load_n(&sp->hdr->live.image_seq, __ATOMIC_ACQUIRE);
	for (;;) {
		if (i >= sp->hdr->s.image_records ||
		    spool_room(sp, &sp->images[i], sizeof(sp->images[i])) < 0) {
			__atomic_fetch_add(&sp->hdr->live.images_lost, 1, __ATOMIC_RELAXED);
			return;
		}
		if (__atomic_compare_exchange_n(&sp->hdr->live.image_seq, &i, i + 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	struct spool_image_record *r = &sp->images[i];
	r->kind = (uint32_t)kind;
	r->seq = i;
	r->bias = bias;
	r->lo = lo;
	r->hi = hi;
	if (build_id_len > SPOOL_BUILD_ID_MAX)
		build_id_len = SPOOL_BUILD_ID_MAX;
	r->build_id_len = build_id_len;
	for (uint32_t j = 0; j < build_id_len; j++)
		r->build_id[j] = build_id[j];
	r->gen = gen;
	/* The path leaves room for the record's check (format.h). */
	copy_str(r->path, SPOOL_IMAGE_CHECK_OFF - offsetof(struct spool_image_record, path), path);
	uint64_t ck = XXH64((const uint8_t *)r + 4, SPOOL_IMAGE_CHECK_OFF - 4, 0);
	memcpy((uint8_t *)r + SPOOL_IMAGE_CHECK_OFF, &ck, sizeof(ck));
	__atomic_store_n(&r->valid, 1, __ATOMIC_RELEASE);
}


int spool_images(const struct spool *sp, spool_image_fn *fn, void *arg)
{
	uint64_t n = sp->hdr->live.image_seq;
	if (n > sp->hdr->s.image_records)
		n = sp->hdr->s.image_records;
	for (uint64_t i = 0; i < n; i++) {
		struct spool_image_record r = sp->images[i];
		if (r.valid != 1 || r.build_id_len > SPOOL_BUILD_ID_MAX)
			continue;
		r.path[sizeof(r.path) - 1] = 0;
		int rc = fn(&r, arg);
		if (rc)
			return rc;
	}
	return 0;
}
