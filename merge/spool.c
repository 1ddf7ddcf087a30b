/*
 * Spool files: creation and in-handler counting (libvprof.so), validation
 * and traversal (vprof merge). Format and rationale in format.h.
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
 * store would have faulted (merge_spool_room; a bit per page says which
 * are). The first refusal stops the writer: every later sample is dropped
 * and counted (live.nospace_dropped). The spool stays sparse: a process
 * with one thread and a few hundred PCs backs ~150 KiB of it.
 *
 * Block checks. Each thread slot keeps the sum over its entries of
 * merge_key_mix(key) x count, and what it moved into the shared table;
 * the slot-less samples keep theirs in page 0; image records carry an
 * XXH64. A reader recomputes them and refuses a spool whose counts or
 * keys changed. A slot is BUSY while its writer changes it: one a SIGKILL
 * caught half-way is taken unchecked, so a killed process loses nothing.
 *
 * Concurrency: a thread slot is written only by its owner's handler (and by
 * its owner at thread exit, with the trigger stopped). The shared table is
 * written by every thread with atomics. Merges only take spools whose
 * owner is gone (merge_spool_finished: the owner record in page 0), and
 * read them with pread, never through a mapping: a hole in a spool on a
 * full tmpfs reads as zeros, where a mapped read would fault.
 *
 * The writer keeps no descriptor on its spool: the program must not see
 * one (a program listing /proc/self/fd, or closing what it does not know,
 * as a daemon or a sandbox does). Liveness used to be a flock held on that
 * descriptor; it is now the owner's pid and start time (and the boot).
 */
#include "merge/spool.h"
#include "merge/stacks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
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

static size_t slot_bytes(uint32_t nbuckets)
{
	return sizeof(struct merge_thread_slot) + (size_t)nbuckets * MERGE_WAYS * sizeof(struct merge_entry);
}

static struct merge_thread_slot *slot_at(const struct merge_spool *sp, uint32_t i)
{
	return (struct merge_thread_slot *)(sp->threads + (size_t)i * sp->hdr->s.slot_size);
}

/* The VALUES section: head, one table per slot, the shared area. */
static size_t value_table_bytes(void)
{
	return sizeof(struct merge_value_table) + (size_t)MERGE_VALUE_LISTS * sizeof(struct merge_hotlist);
}

/* shared: MERGE_VALUE_SHARED, or MERGE_VALUE_SHARED_V1 in older spools. */
static size_t values_bytes(uint32_t nslots, uint32_t shared)
{
	return sizeof(struct merge_values_head) + nslots * value_table_bytes() +
	       (size_t)shared * sizeof(struct merge_hotlist);
}

static void values_geometry(struct merge_values_head *h, uint32_t nslots, uint32_t shared)
{
	h->nslots = nslots;
	h->lists = MERGE_VALUE_LISTS;
	h->ways = MERGE_VALUE_WAYS;
	h->shared = shared;
	h->list_size = sizeof(struct merge_hotlist);
	h->table_size = (uint32_t)value_table_bytes();
}

static struct merge_value_table *value_table(const struct merge_spool *sp, uint32_t i)
{
	return (struct merge_value_table *)(sp->values + sizeof(struct merge_values_head) +
					    (size_t)i * value_table_bytes());
}

static struct merge_hotlist *value_shared(const struct merge_spool *sp)
{
	return (struct merge_hotlist *)(sp->values + sizeof(struct merge_values_head) +
					(size_t)sp->hdr->s.nslots * value_table_bytes());
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

/* Read a small /proc file into buf (NUL-terminated). System calls only. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	merge_fd_close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static uint64_t parse_u64(const char *p)
{
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

/* /proc/PID/stat: state (field 3), threads (20), start time (22, clock
 * ticks after boot). The command name (field 2) may hold spaces and
 * parentheses: fields are counted from its last ')'. */
static int parse_stat(const char *buf, char *state, uint64_t *threads, uint64_t *start)
{
	const char *p = NULL;
	for (const char *q = buf; *q; q++)
		if (*q == ')')
			p = q;
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	p += 2;
	*state = *p;
	int field = 3;
	for (; *p && field < 22; p++)
		if (*p == ' ') {
			field++;
			if (field == 20)
				*threads = parse_u64(p + 1);
			else if (field == 22)
				*start = parse_u64(p + 1);
		}
	return field == 22 ? 0 : -1;
}

static void read_boot_id(uint8_t id[16])
{
	char buf[64];
	int n = 0, hi = -1;
	for (int i = 0; i < 16; i++)
		id[i] = 0;
	if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) <= 0)
		return;
	for (const char *p = buf; *p && n < 16; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0)
			continue;
		if (hi < 0)
			hi = d;
		else {
			id[n++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
}

static uint64_t read_pidns(void)
{
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '[')
			return parse_u64(p + 1);
	return 0;
}

static void owner_fill(struct merge_spool_owner *o, pid_t pid)
{
	char buf[1024], state;
	uint64_t threads = 0, start = 0;
	memcpy(o->magic, MERGE_SPOOL_OWNER_MAGIC, 8);
	o->pid = (uint64_t)pid;
	if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 ||
	    parse_stat(buf, &state, &threads, &start) < 0)
		start = 0;
	o->start_ticks = start;
	o->pidns = read_pidns();
	read_boot_id(o->boot_id);
	o->checksum = XXH64(o, offsetof(struct merge_spool_owner, checksum), 0);
}

static int boot_id_known(const uint8_t id[16])
{
	for (int i = 0; i < 16; i++)
		if (id[i])
			return 1;
	return 0;
}

/* Does process pid map the spool (inode ino, file name base)? 1: yes;
 * 0: its maps were read whole and it does not (it exec'd since); -1:
 * cannot tell. Both the inode and the name are looked for, so that a
 * filesystem that shows other numbers in maps (overlayfs) errs towards
 * "maps it". */
static int maps_spool(uint64_t pid, uint64_t ino, const char *base)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%llu/maps", (unsigned long long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t bl = strlen(base);
	int found = 0, whole = 1;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		if (l && line[l - 1] == '\n')
			line[--l] = 0;
		else if (!feof(f)) {
			whole = 0;       /* a line longer than the buffer: skip it */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		unsigned long long i = 0;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &i) == 1 && i == ino)
			found = 1;
		const char *d = strstr(line, " (deleted)");
		size_t end = d ? (size_t)(d - line) : l;
		if (end > bl && line[end - bl - 1] == '/' && !strncmp(line + end - bl, base, bl))
			found = 1;
	}
	if (ferror(f))
		whole = 0;
	fclose(f);
	return found ? 1 : whole ? 0 : -1;
}

int merge_spool_finished(int fd, const char *spool_path)
{
	struct merge_spool_owner o;
	if (pread(fd, &o, sizeof(o), MERGE_SPOOL_OWNER_OFF) != (ssize_t)sizeof(o) ||
	    memcmp(o.magic, MERGE_SPOOL_OWNER_MAGIC, 8) != 0 ||
	    o.checksum != XXH64(&o, offsetof(struct merge_spool_owner, checksum), 0))
		/* An older libvprof's spool: its owner holds a flock while alive. */
		return flock(fd, LOCK_EX | LOCK_NB) == 0;
	uint8_t boot[16];
	read_boot_id(boot);
	if (boot_id_known(boot) && boot_id_known(o.boot_id) && memcmp(boot, o.boot_id, 16) != 0)
		return 1;        /* written before the last reboot */
	/* Rotated out and closed by its running owner (MERGE_EXITED_CLOSED):
	 * no writer is left in it. Rotated out but maybe still written
	 * (MERGE_EXITED_ROTATED): judged as a live owner's, by its mapping. */
	uint64_t exited = 0;
	if (pread(fd, &exited, sizeof(exited),
		  (off_t)offsetof(struct merge_spool_header, live.exited)) != sizeof(exited))
		exited = 0;
	if (exited == MERGE_EXITED_CLOSED)
		return 1;
	uint64_t ns = read_pidns();
	if (ns && o.pidns && ns != o.pidns)
		/* Its pid means nothing here: trust only a normal exit. */
		return exited == MERGE_EXITED_NORMAL;
	char path[64], buf[1024], state = 0, *q;
	uint64_t threads = 0, start = 0;
	q = put_str(path, path + sizeof(path), "/proc/");
	q = put_u64(q, path + sizeof(path), o.pid);
	put_str(q, path + sizeof(path), "/stat");
	if (read_small(path, buf, sizeof(buf)) <= 0 || parse_stat(buf, &state, &threads, &start) < 0)
		return 1;        /* no such process */
	if (o.start_ticks && start != o.start_ticks)
		return 1;        /* another process took the pid */
	/* A zombie whose threads have all exited has unmapped the spool; a
	 * zombie group leader with live threads (pthread_exit from main)
	 * counts itself and them. */
	if (state == 'X' || (state == 'Z' && threads <= 1))
		return 1;
	/* The same process, but it may have exec'd since: exec drops the old
	 * image's mapping (as it closed the flock'd descriptor before), and
	 * the new image writes a spool of its own. */
	struct stat st;
	const char *base = strrchr(spool_path, '/');
	base = base ? base + 1 : spool_path;
	if (fstat(fd, &st) == 0 && maps_spool(o.pid, (uint64_t)st.st_ino, base) == 0)
		return 1;
	return 0;
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

static inline int page_backed(const struct merge_spool *sp, size_t pg)
{
	return (int)((__atomic_load_n(&sp->room[pg >> 6], __ATOMIC_ACQUIRE) >> (pg & 63)) & 1);
}

static void mark_backed(struct merge_spool *sp, size_t off, size_t len)
{
	for (size_t pg = off >> 12; pg <= (off + len - 1) >> 12; pg++)
		__atomic_fetch_or(&sp->room[pg >> 6], 1ull << (pg & 63), __ATOMIC_RELEASE);
}

/* The first refusal stops the writer; its errno is kept in the spool. */
static void no_room(struct merge_spool *sp, int err)
{
	if (__atomic_exchange_n(&sp->nospace, 1, __ATOMIC_ACQ_REL))
		return;
	uint64_t zero = 0;
	__atomic_compare_exchange_n(&sp->hdr->live.nospace_errno, &zero, (uint64_t)err, 0,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

/* The common case inline: len bytes at p within one page already backed. */
static inline int room_fast(struct merge_spool *sp, const void *p, size_t len)
{
	size_t off = (size_t)((const uint8_t *)p - (const uint8_t *)sp->hdr);
	if (__builtin_expect(sp->room_all || ((off ^ (off + len - 1)) >> 12 == 0 &&
					      page_backed(sp, off >> 12)), 1))
		return 0;
	return merge_spool_room(sp, p, len);
}

int merge_spool_room(struct merge_spool *sp, const void *p, size_t len)
{
	if (sp->room_all)
		return 0;
	size_t off = (size_t)((const uint8_t *)p - (const uint8_t *)sp->hdr);
	size_t a = off >> 12, b = (off + len - 1) >> 12, pg = a;
	while (pg <= b && page_backed(sp, pg))
		pg++;
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

int merge_spool_reserve_all(struct merge_spool *sp)
{
	if (!sp->hdr)
		return -1;
	if (merge_spool_room(sp, sp->hdr, sp->size) < 0)
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

int merge_spool_create(struct merge_spool *sp, const char *dir,
		       const struct merge_spool_params *p)
{
	size_t hdr = 4096;
	size_t sl = slot_bytes(MERGE_SLOT_BUCKETS);
	size_t threads_off = hdr, threads_sz = sl * MERGE_SLOTS;
	size_t shared_off = threads_off + threads_sz;
	size_t shared_sz = (size_t)MERGE_SHARED_ENTRIES * sizeof(struct merge_entry);
	size_t images_off = shared_off + shared_sz;
	size_t images_sz = (size_t)MERGE_IMAGE_RECORDS * sizeof(struct merge_image_record);
	size_t values_off = images_off + images_sz;
	size_t values_sz = p->values ? values_bytes(MERGE_SLOTS, MERGE_VALUE_SHARED) : 0;
	size_t stacks_off = values_off + values_sz;
	size_t stacks_sz = p->stack_depth ? merge_stacks_section_bytes() : 0;
	size_t size = stacks_off + stacks_sz;
	pid_t pid = getpid();
	int fd = -1, err;
	void *m = MAP_FAILED;

	_Static_assert(sizeof(struct merge_spool_header) <= 4096, "spool header fits page 0");
	_Static_assert(sizeof(struct merge_image_record) == 512, "image record size");
	_Static_assert(offsetof(struct merge_image_record, path) + MERGE_PATH_MAX ==
		       MERGE_IMAGE_CHECK_OFF + 8, "image record check in the path's last 8 bytes");
	_Static_assert(sizeof(struct merge_thread_slot) == 64, "slot header is a cache line");
	_Static_assert(sizeof(struct merge_hotlist) == 416, "hotlist record size");
	_Static_assert(sizeof(struct merge_values_head) == 64, "values head size");
	_Static_assert(sizeof(struct merge_value_table) == 64, "value table header size");

	memset(sp, 0, sizeof(*sp));
	sp->fd = -1;
	if (size > (size_t)MERGE_ROOM_WORDS * 64 * 4096)
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
	for (uint32_t i = 0; i < MERGE_SLOTS; i++)
		if (back(fd, threads_off + i * sl, sizeof(struct merge_thread_slot)) < 0)
			goto fail;
	if ((values_sz && back(fd, values_off, sizeof(struct merge_values_head)) < 0) ||
	    (stacks_sz && back(fd, stacks_off, sizeof(struct merge_stacks_head)) < 0))
		goto fail;
	m = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (m == MAP_FAILED)
		goto fail;
	sp->size = size;
	sp->hdr = m;
	/* A kernel without MADV_POPULATE_WRITE (before 5.14) cannot back a
	 * page at its first use: the whole file is allocated now instead. */
	if (madvise(m, hdr, MADV_POPULATE_WRITE) < 0) {
		if (errno != EINVAL || back(fd, 0, size) < 0)
			goto fail;
		sp->room_all = 1;
	}
	mark_backed(sp, 0, hdr);
	for (uint32_t i = 0; i < MERGE_SLOTS; i++)
		mark_backed(sp, threads_off + i * sl, sizeof(struct merge_thread_slot));
	if (values_sz)
		mark_backed(sp, values_off, sizeof(struct merge_values_head));
	if (stacks_sz)
		mark_backed(sp, stacks_off, sizeof(struct merge_stacks_head));
	merge_fd_close(fd);      /* the mapping keeps the file */
	fd = -1;

	sp->threads = (uint8_t *)m + threads_off;
	sp->shared = (struct merge_entry *)((uint8_t *)m + shared_off);
	sp->images = (struct merge_image_record *)((uint8_t *)m + images_off);
	sp->values = values_sz ? (uint8_t *)m + values_off : NULL;
	sp->stacks = stacks_sz ? (uint8_t *)m + stacks_off : NULL;

	struct merge_spool_static *s = &sp->hdr->s;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	memcpy(s->magic, MERGE_SPOOL_MAGIC, 8);
	s->version = stacks_sz ? MERGE_SPOOL_VERSION_STACKS
		     : values_sz ? MERGE_SPOOL_VERSION : MERGE_SPOOL_VERSION_PLAIN;
	s->bom = MERGE_BOM;
	s->header_size = (uint32_t)hdr;
	s->nsections = 3 + (values_sz != 0) + (stacks_sz != 0);
	s->file_size = size;
	s->pid = (uint64_t)pid;
	s->ppid = (uint64_t)getppid();
	s->start_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	s->event = p->event;
	s->backend = p->backend;
	s->period = p->period;
	s->nslots = MERGE_SLOTS;
	s->slot_size = (uint32_t)sl;
	s->shared_entries = MERGE_SHARED_ENTRIES;
	s->image_records = MERGE_IMAGE_RECORDS;
	s->section[0] = (struct merge_section){ MERGE_SEC_THREADS, MERGE_SECF_CHECKED, threads_off, threads_sz };
	s->section[1] = (struct merge_section){ MERGE_SEC_SHARED, MERGE_SECF_CHECKED, shared_off, shared_sz };
	s->section[2] = (struct merge_section){ MERGE_SEC_IMAGES, MERGE_SECF_CHECKED, images_off, images_sz };
	if (values_sz) {
		s->section[3] = (struct merge_section){ MERGE_SEC_VALUES, 0, values_off, values_sz };
		values_geometry((struct merge_values_head *)sp->values, MERGE_SLOTS, MERGE_VALUE_SHARED);
		sp->vshared = MERGE_VALUE_SHARED;
	}
	if (stacks_sz) {
		s->section[s->nsections - 1] =
			(struct merge_section){ MERGE_SEC_STACKS, MERGE_SECF_CHECKED, stacks_off, stacks_sz };
		merge_stacks_geometry((struct merge_stacks_head *)sp->stacks, p->stack_depth,
				      p->stack_method);
	}
	copy_str(s->exe, sizeof(s->exe), p->exe);
	copy_str(s->cmdline, sizeof(s->cmdline), p->cmdline);
	for (uint32_t i = 0; i < MERGE_SLOTS; i++)
		slot_at(sp, i)->nbuckets = MERGE_SLOT_BUCKETS;
	s->checksum = XXH64(s, offsetof(struct merge_spool_static, checksum), 0);
	_Static_assert(sizeof(struct merge_spool_header) <= MERGE_SPOOL_OWNER_OFF,
		       "owner record after the header");
	_Static_assert(MERGE_SPOOL_OWNER_OFF + sizeof(struct merge_spool_owner) <= MERGE_SPOOL_RUN_OFF,
		       "run record after the owner record");
	_Static_assert(MERGE_SPOOL_RUN_OFF + sizeof(struct merge_spool_run) <= 4096,
		       "run record in page 0");
	owner_fill((struct merge_spool_owner *)((uint8_t *)m + MERGE_SPOOL_OWNER_OFF), pid);
	if (p->run_id) {
		struct merge_spool_run *r = (struct merge_spool_run *)((uint8_t *)m + MERGE_SPOOL_RUN_OFF);
		memcpy(r->magic, MERGE_SPOOL_RUN_MAGIC, 8);
		r->id = p->run_id;
		r->epoch = p->run_epoch;
		r->checksum = XXH64(r, offsetof(struct merge_spool_run, checksum), 0);
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
	merge_spool_forget(sp);
	unlink(tmp);
	return err;
fail:
	err = errno == EFAULT ? -ENOSPC : -errno;
	if (m != MAP_FAILED)
		munmap(m, size);
	memset(sp, 0, sizeof(*sp));
	merge_fd_close(fd);
	unlink(tmp);
	sp->fd = -1;
	return err;
}

void merge_spool_forget(struct merge_spool *sp)
{
	if (sp->hdr)
		munmap(sp->hdr, sp->size);
	sp->hdr = NULL;
	sp->fd = -1;
}

struct merge_thread_slot *merge_spool_claim_slot(struct merge_spool *sp, uint32_t tid)
{
	if (!sp->hdr || __atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return NULL;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		struct merge_thread_slot *sl = slot_at(sp, i);
		uint32_t want = MERGE_SLOT_FREE;
		if (__atomic_compare_exchange_n(&sl->state, &want, MERGE_SLOT_OWNED, 0,
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
static int shared_add(struct merge_spool *sp, uint64_t key, uint64_t count)
{
	uint32_t mask = sp->hdr->s.shared_entries - 1;
	uint32_t h = key_hash(key) & mask;
	for (uint32_t probe = 0; probe < 256; probe++) {
		struct merge_entry *e = &sp->shared[(h + probe) & mask];
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

static void lost(struct merge_spool *sp, uint64_t count, int why)
{
	struct merge_spool_live *l = &sp->hdr->live;
	__atomic_fetch_add(&l->dropped, count, __ATOMIC_RELAXED);
	__atomic_fetch_add(why == ADD_NOROOM ? &l->nospace_dropped : &l->dropped_full, count,
			   __ATOMIC_RELAXED);
}

/* A slot is BUSY while its writer changes it (compiler barriers suffice:
 * one writer, and its stores reach the mapping in program order). */
static inline void slot_busy(struct merge_thread_slot *sl)
{
	sl->busy = MERGE_SLOT_BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void slot_idle(struct merge_thread_slot *sl)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	sl->busy = 0;
}

void merge_spool_count(struct merge_spool *sp, struct merge_thread_slot *sl, uint64_t key)
{
	if (__builtin_expect(__atomic_load_n(&sp->nospace, __ATOMIC_RELAXED), 0)) {
		lost(sp, 1, ADD_NOROOM);
		return;
	}
	uint64_t mix = merge_key_mix(key);
	if (!sl) {
		struct merge_spool_live *l = &sp->hdr->live;
		__atomic_fetch_add(&l->nothread, 1, __ATOMIC_RELAXED);
		int r = shared_add(sp, key, 1);
		if (r == 0)
			__atomic_fetch_add(&l->noslot_sum, mix, __ATOMIC_RELAXED);
		else
			lost(sp, 1, r);
		__atomic_fetch_add(&l->noslot_done, 1, __ATOMIC_RELEASE);
		return;
	}
	struct merge_entry *b = sl->bucket[key_hash(key) & (sl->nbuckets - 1)];
	/* A bucket is a cache line, never across pages: its page is backed
	 * at the first key that hashes into it (a bit test after that). */
	if (room_fast(sp, b, sizeof(sl->bucket[0])) < 0) {
		lost(sp, 1, ADD_NOROOM);
		return;
	}
	slot_busy(sl);
	sl->samples++;
	for (int w = 0; w < MERGE_WAYS; w++) {
		if (b[w].key == key) {
			b[w].count++;
			sl->sum += mix;
			slot_idle(sl);
			return;
		}
	}
	for (int w = 0; w < MERGE_WAYS; w++) {
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
	struct merge_entry *v = &b[sl->victim++ % MERGE_WAYS];
	uint64_t vmix = merge_key_mix(v->key) * v->count;
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

void merge_spool_release_slot(struct merge_spool *sp, struct merge_thread_slot *sl)
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
		for (int w = 0; w < MERGE_WAYS; w++) {
			struct merge_entry *e = &sl->bucket[i][w];
			if (!e->key)
				continue;
			/* An entry the shared table has no room for stays: the
			 * merge reads every slot, and the slot's next owner
			 * counts on beside it. */
			uint64_t emix = merge_key_mix(e->key) * e->count;
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
	__atomic_store_n(&sl->state, MERGE_SLOT_FREE, __ATOMIC_RELEASE);
}

/* ---- values ---- */

/* Merge h into the shared value area: into a ready record of its key, or
 * a free one claimed for it. A record is only ever changed by the thread
 * that moved its state to BUSY, and is never waited for: a busy one is
 * passed over, which may leave two records of one key (the merge folds
 * them). Returns 0, or -1 when no record was found in 32 probes. */
static int shared_hot_merge(struct merge_spool *sp, const struct merge_hotlist *h, uint64_t *rng)
{
	struct merge_hotlist *tab = value_shared(sp);
	uint32_t mask = sp->vshared - 1;
	uint32_t at = key_hash(h->key) & mask;
	for (uint32_t probe = 0; probe < 32; probe++) {
		struct merge_hotlist *rec = &tab[(at + probe) & mask];
		if (merge_spool_room(sp, rec, sizeof(*rec)) < 0)
			return -1;
		uint32_t st = __atomic_load_n(&rec->state, __ATOMIC_ACQUIRE);
		if (st == MERGE_HOT_READY && rec->key != h->key)
			continue;
		if (st == MERGE_HOT_BUSY ||
		    !__atomic_compare_exchange_n(&rec->state, &st, MERGE_HOT_BUSY, 0,
						 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
			continue;
		/* A free record is all zeros: merging into it copies h. */
		merge_hot_merge(rec, h, rng);
		__atomic_store_n(&rec->state, MERGE_HOT_READY, __ATOMIC_RELEASE);
		return 0;
	}
	return -1;
}

static void shared_hot_put(struct merge_spool *sp, const struct merge_hotlist *h, uint64_t *rng)
{
	if (shared_hot_merge(sp, h, rng) < 0)
		__atomic_fetch_add(&sp->hdr->live.values_dropped, h->vtot, __ATOMIC_RELAXED);
}

/* A thread-table hotlist is BUSY while its owner changes it, so a reader
 * after SIGKILL skips (and counts) one caught half-way. Single writer:
 * compiler barriers are enough, the stores reach the mapping in order. */
static inline void hot_busy(struct merge_hotlist *h)
{
	h->state = MERGE_HOT_BUSY;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
}

static inline void hot_ready(struct merge_hotlist *h)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	h->state = MERGE_HOT_READY;
}

void merge_spool_value(struct merge_spool *sp, struct merge_thread_slot *sl, uint64_t key,
		       uint64_t value, uint64_t aux, uint64_t *rng)
{
	unsigned kind = MERGE_HOT_KEY_KIND(key);
	if (!sp->hdr || !sp->values || kind == MERGE_VK_NONE || kind >= MERGE_VK_MAX ||
	    __atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return;
	if (!sl) {
		__atomic_fetch_add(&sp->hdr->live.value_samples, 1, __ATOMIC_RELAXED);
		struct merge_hotlist one;
		merge_hot_init(&one, key);
		merge_hot_offer_pair(&one, value, aux, rng);
		shared_hot_put(sp, &one, rng);
		return;
	}
	/* A writer's slots are this vprof's size (a constant: a multiply,
	 * not a divide, and no read of the header page per value). */
	uint32_t idx = (uint32_t)((size_t)((uint8_t *)sl - sp->threads) / slot_bytes(MERGE_SLOT_BUCKETS));
	struct merge_value_table *t = value_table(sp, idx);
	if (merge_spool_room(sp, t, sizeof(*t)) < 0)
		return;
	/* The owner's count: a plain store to its own table (an atomic add
	 * on the shared header per value cost ~20 ns, 20 of them a run). */
	t->offered++;
	/* Open addressing over the thread's lists, MERGE_VALUE_PROBE places
	 * from the key's home: the key's list, else the first free one (a
	 * list, once used, is never free again, so a lookup may stop at a
	 * free one). With 4-way sets of 32, a loop's 61 keys overflowed
	 * sets and 2.7% of values evicted. */
	struct merge_hotlist *tab = (struct merge_hotlist *)(t + 1), *h = NULL, *victim = NULL;
	uint32_t home = key_hash(key);
	for (uint32_t p = 0; p < MERGE_VALUE_PROBE; p++) {
		struct merge_hotlist *c = &tab[(home + p) & (MERGE_VALUE_LISTS - 1)];
		if (merge_spool_room(sp, c, sizeof(*c)) < 0) {   /* backed as probed */
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
		merge_hot_init(h, 0);
	}
	hot_busy(h);
	h->key = key;
	merge_hot_offer_pair(h, value, aux, rng);
	hot_ready(h);
}

void merge_spool_interp(struct merge_spool *sp, uint64_t insns, unsigned stop)
{
	if (!sp->hdr)
		return;
	struct merge_spool_live *l = &sp->hdr->live;
	__atomic_fetch_add(&l->interp_runs, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->interp_insns, insns, __ATOMIC_RELAXED);
	__atomic_fetch_add(&l->interp_stops[stop < MERGE_INTERP_STOPS ? stop : MERGE_INTERP_STOPS - 1],
			   1, __ATOMIC_RELAXED);
}

/* Same image? By build-id when both have one, else by path. */
static int same_image(const struct merge_image_record *r, const uint8_t *bid, uint32_t bl,
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

void merge_spool_image(struct merge_spool *sp, int kind, uint64_t bias,
		       uint64_t lo, uint64_t hi, const uint8_t *build_id,
		       uint32_t build_id_len, const char *path)
{
	if (!sp->hdr)
		return;
	/* A load over a different image of the current generation starts a
	 * new generation: samples counted from now on carry it. */
	uint32_t gen = __atomic_load_n(&sp->gen, __ATOMIC_ACQUIRE);
	if (kind == MERGE_IMG_MAP) {
		uint64_t n = __atomic_load_n(&sp->hdr->live.image_seq, __ATOMIC_ACQUIRE);
		if (n > sp->hdr->s.image_records)
			n = sp->hdr->s.image_records;
		for (uint64_t i = 0; i < n; i++) {
			const struct merge_image_record *r = &sp->images[i];
			if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) != 1 || r->kind != MERGE_IMG_MAP ||
			    r->gen != gen || r->hi <= lo || r->lo >= hi ||
			    same_image(r, build_id, build_id_len, path ? path : ""))
				continue;
			if (gen < MERGE_GEN_MAX)
				__atomic_compare_exchange_n(&sp->gen, &gen, gen + 1, 0, __ATOMIC_ACQ_REL,
							    __ATOMIC_ACQUIRE);
			gen = __atomic_load_n(&sp->gen, __ATOMIC_ACQUIRE);
			break;
		}
	}
	merge_spool_image_gen(sp, kind, bias, lo, hi, build_id, build_id_len, path, gen);
}

void merge_spool_image_gen(struct merge_spool *sp, int kind, uint64_t bias,
			   uint64_t lo, uint64_t hi, const uint8_t *build_id,
			   uint32_t build_id_len, const char *path, uint32_t gen)
{
	if (!sp->hdr)
		return;
	/* A record's page is backed before its index is taken: every record
	 * below image_seq may be read (merge_spool_image, a fork child's
	 * copy) without a fault on a page the filesystem refused. */
	uint64_t i = __atomic_load_n(&sp->hdr->live.image_seq, __ATOMIC_ACQUIRE);
	for (;;) {
		if (i >= sp->hdr->s.image_records ||
		    merge_spool_room(sp, &sp->images[i], sizeof(sp->images[i])) < 0) {
			__atomic_fetch_add(&sp->hdr->live.images_lost, 1, __ATOMIC_RELAXED);
			return;
		}
		if (__atomic_compare_exchange_n(&sp->hdr->live.image_seq, &i, i + 1, 0,
						__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
			break;
	}
	struct merge_image_record *r = &sp->images[i];
	r->kind = (uint32_t)kind;
	r->seq = i;
	r->bias = bias;
	r->lo = lo;
	r->hi = hi;
	if (build_id_len > MERGE_BUILD_ID_MAX)
		build_id_len = MERGE_BUILD_ID_MAX;
	r->build_id_len = build_id_len;
	for (uint32_t j = 0; j < build_id_len; j++)
		r->build_id[j] = build_id[j];
	r->gen = gen;
	/* The path leaves room for the record's check (format.h). */
	copy_str(r->path, MERGE_IMAGE_CHECK_OFF - offsetof(struct merge_image_record, path), path);
	uint64_t ck = XXH64((const uint8_t *)r + 4, MERGE_IMAGE_CHECK_OFF - 4, 0);
	memcpy((uint8_t *)r + MERGE_IMAGE_CHECK_OFF, &ck, sizeof(ck));
	__atomic_store_n(&r->valid, 1, __ATOMIC_RELEASE);
}

/* ---- reader ---- */

static int bad(char *why, size_t whylen, const char *msg)
{
	snprintf(why, whylen, "%s", msg);
	return -EBADMSG;
}

/* Read a file of size n into buf (zero-filled), its data extents only:
 * holes read as the zeros already there. Unlike a mapping of the file, a
 * hole here costs no page of the file's filesystem, which may have none
 * to give (a read fault on a full tmpfs raises SIGBUS). */
static int read_extents(int fd, uint8_t *buf, size_t n)
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

/* The weighted sum of a run of (key, count) entries (format.h). */
static uint64_t entries_sum(const struct merge_entry *e, size_t n)
{
	uint64_t sum = 0;
	for (size_t i = 0; i < n; i++)
		if (e[i].key)
			sum += merge_key_mix(e[i].key) * e[i].count;
	return sum;
}

/* The block checks of a spool whose writer kept them (section flags):
 * every thread slot's entries against its sum, the shared table against
 * what the slots and the slot-less samples put there, every complete
 * image record against its check, the stacks' counts against the
 * samples offered. A block its writer was changing when the process died
 * (a slot left BUSY, a slot-less sample not done) cannot be checked and
 * is taken as it is: a SIGKILL must not cost the data it left. */
static int check_blocks(const struct merge_spool *sp, char *why, size_t whylen)
{
	const struct merge_spool_static *s = &sp->hdr->s;
	const struct merge_spool_live *l = &sp->hdr->live;
	int torn = 0;
	if (s->section[0].flags & MERGE_SECF_CHECKED) {
		uint64_t into_shared = l->noslot_sum;
		for (uint32_t i = 0; i < s->nslots; i++) {
			const struct merge_thread_slot *sl = slot_at(sp, i);
			into_shared += sl->shared_sum;
			if (sl->busy == MERGE_SLOT_BUSY) {
				torn = 1;
				continue;
			}
			if (sl->busy != 0 ||
			    entries_sum(&sl->bucket[0][0], (size_t)sl->nbuckets * MERGE_WAYS) != sl->sum) {
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
		if (!torn && (s->section[1].flags & MERGE_SECF_CHECKED) &&
		    entries_sum(sp->shared, s->shared_entries) != into_shared) {
			snprintf(why, whylen, "shared table fails its check (a count or a key was changed)");
			return -EBADMSG;
		}
	}
	if (s->section[2].flags & MERGE_SECF_CHECKED) {
		uint64_t n = l->image_seq < s->image_records ? l->image_seq : s->image_records;
		for (uint64_t i = 0; i < n; i++) {
			const uint8_t *r = (const uint8_t *)&sp->images[i];
			uint64_t ck;
			memcpy(&ck, r + MERGE_IMAGE_CHECK_OFF, sizeof(ck));
			if (sp->images[i].valid == 1 && XXH64(r + 4, MERGE_IMAGE_CHECK_OFF - 4, 0) != ck) {
				snprintf(why, whylen, "image record %llu fails its check",
					 (unsigned long long)i);
				return -EBADMSG;
			}
		}
	}
	if (sp->stacks && (s->section[s->nsections - 1].flags & MERGE_SECF_CHECKED) &&
	    merge_stacks_check_counts(sp) < 0) {
		snprintf(why, whylen, "stacks fail their check (more counted than offered)");
		return -EBADMSG;
	}
	return 0;
}

int merge_spool_open(struct merge_spool *sp, const char *path, char *why, size_t whylen)
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
	copy_str(sp->path, sizeof(sp->path), path);
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
	if ((err = read_extents(sp->fd, m, sp->size)) < 0) {
		snprintf(why, whylen, "read: %s", strerror(-err));
		goto fail;
	}
	mprotect(m, sp->size, PROT_READ);
	merge_fd_close(sp->fd);
	sp->fd = -1;
	const struct merge_spool_static *s = &sp->hdr->s;
	if (memcmp(s->magic, MERGE_SPOOL_MAGIC, 8) != 0) {
		err = bad(why, whylen, "not a vprof spool (bad magic)");
		goto fail;
	}
	if (s->bom != MERGE_BOM) {
		err = bad(why, whylen, "wrong byte order");
		goto fail;
	}
	if (s->version != MERGE_SPOOL_VERSION && s->version != MERGE_SPOOL_VERSION_PLAIN &&
	    s->version != MERGE_SPOOL_VERSION_STACKS) {
		snprintf(why, whylen, "spool version %u, this vprof reads %u to %u", s->version,
			 MERGE_SPOOL_VERSION_PLAIN, MERGE_SPOOL_VERSION_STACKS);
		err = -EPROTO;
		goto fail;
	}
	if (XXH64(s, offsetof(struct merge_spool_static, checksum), 0) != s->checksum) {
		err = bad(why, whylen, "header checksum mismatch");
		goto fail;
	}
	if (s->file_size != sp->size) {
		err = bad(why, whylen, "truncated (size differs from its header)");
		goto fail;
	}
	/* Layout must be what this reader computes from the counts: anything
	 * else would let a corrupt header send us outside the mapping. */
	/* Version 3: THREADS, SHARED, IMAGES, [VALUES,] STACKS. */
	int has_stacks = s->version == MERGE_SPOOL_VERSION_STACKS;
	int has_values = s->version == MERGE_SPOOL_VERSION ||
			 (has_stacks && s->nsections == 5);
	uint32_t nsec = 3 + (uint32_t)has_values + (uint32_t)has_stacks;
	if (s->nsections != nsec || s->nslots == 0 || s->nslots > 4096 ||
	    s->slot_size != slot_bytes(MERGE_SLOT_BUCKETS) ||
	    (s->shared_entries & (s->shared_entries - 1)) || s->shared_entries == 0) {
		err = bad(why, whylen, "implausible layout");
		goto fail;
	}
	uint64_t need[5] = { (uint64_t)s->nslots * s->slot_size,
			     (uint64_t)s->shared_entries * sizeof(struct merge_entry),
			     (uint64_t)s->image_records * sizeof(struct merge_image_record),
			     has_values ? values_bytes(s->nslots, MERGE_VALUE_SHARED) : merge_stacks_section_bytes(),
			     merge_stacks_section_bytes() };
	uint32_t kind[5] = { MERGE_SEC_THREADS, MERGE_SEC_SHARED, MERGE_SEC_IMAGES,
			     has_values ? MERGE_SEC_VALUES : MERGE_SEC_STACKS, MERGE_SEC_STACKS };
	/* A VALUES section of this vprof's shared area, or of the smaller one
	 * spools had before 2026-11-23. */
	uint32_t vshared = MERGE_VALUE_SHARED;
	if (has_values && s->section[3].size == values_bytes(s->nslots, MERGE_VALUE_SHARED_V1))
		need[3] = values_bytes(s->nslots, vshared = MERGE_VALUE_SHARED_V1);
	for (uint32_t i = 0; i < nsec; i++) {
		const struct merge_section *sec = &s->section[i];
		if (sec->kind != kind[i] || sec->size != need[i] ||
		    sec->offset < s->header_size || sec->offset + sec->size > sp->size) {
			err = bad(why, whylen, "section table out of bounds");
			goto fail;
		}
	}
	sp->threads = (uint8_t *)m + s->section[0].offset;
	sp->shared = (struct merge_entry *)((uint8_t *)m + s->section[1].offset);
	sp->images = (struct merge_image_record *)((uint8_t *)m + s->section[2].offset);
	if (has_stacks) {
		sp->stacks = (uint8_t *)m + s->section[nsec - 1].offset;
		if (merge_stacks_check((const struct merge_stacks_head *)sp->stacks) < 0) {
			err = bad(why, whylen, "stacks section geometry corrupt");
			goto fail;
		}
	}
	if (has_values) {
		/* The geometry lies outside the checksum: it must be exactly
		 * what this reader would have written. */
		struct merge_values_head want = { 0 };
		sp->values = (uint8_t *)m + s->section[3].offset;
		values_geometry(&want, s->nslots, vshared);
		sp->vshared = vshared;
		if (memcmp(sp->values, &want, sizeof(want)) != 0) {
			err = bad(why, whylen, "values section geometry corrupt");
			goto fail;
		}
	}
	for (uint32_t i = 0; i < s->nslots; i++) {
		if (slot_at(sp, i)->nbuckets != MERGE_SLOT_BUCKETS) {
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

void merge_spool_close(struct merge_spool *sp)
{
	/* A reader's descriptor (merge_spool_open); a writer keeps none. */
	if (sp->fd >= 0)
		merge_fd_close(sp->fd);
	merge_spool_forget(sp);
}

static int visit(uint64_t key, uint64_t count, merge_entry_fn *fn, void *arg, uint64_t *badn)
{
	if (!key || !count)
		return 0;
	unsigned ev = MERGE_KEY_EV(key);
	if (ev == MERGE_EV_NONE || ev >= MERGE_EV_MAX || count > (1ull << 48)) {
		(*badn)++;
		return 0;
	}
	return fn(key, count, arg);
}

int merge_spool_foreach(const struct merge_spool *sp, merge_entry_fn *fn, void *arg,
			uint64_t *badn)
{
	int r;
	*badn = 0;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		const struct merge_thread_slot *sl = slot_at(sp, i);
		for (uint32_t b = 0; b < sl->nbuckets; b++)
			for (int w = 0; w < MERGE_WAYS; w++)
				if ((r = visit(sl->bucket[b][w].key, sl->bucket[b][w].count, fn, arg, badn)))
					return r;
	}
	for (uint32_t i = 0; i < sp->hdr->s.shared_entries; i++)
		if ((r = visit(sp->shared[i].key, sp->shared[i].count, fn, arg, badn)))
			return r;
	return 0;
}

static int run_ok(const struct merge_spool_run *r)
{
	return !memcmp(r->magic, MERGE_SPOOL_RUN_MAGIC, 8) &&
	       r->checksum == XXH64(r, offsetof(struct merge_spool_run, checksum), 0);
}

int merge_spool_run_read(int fd, struct merge_spool_run *r)
{
	if (pread(fd, r, sizeof(*r), MERGE_SPOOL_RUN_OFF) == (ssize_t)sizeof(*r) && run_ok(r))
		return 0;
	memset(r, 0, sizeof(*r));
	return -1;
}

/* One stored hotlist: skip empty ones, count damaged or half-written ones. */
static int visit_hot(const struct merge_hotlist *h, merge_hot_fn *fn, void *arg, uint64_t *badn)
{
	uint32_t st = h->state;
	if (!h->key && st != MERGE_HOT_BUSY)
		return 0;
	if (st != MERGE_HOT_READY || merge_hot_check(h, 1, NULL) < 0) {
		(*badn)++;
		return 0;
	}
	return fn(h, arg);
}

uint64_t merge_spool_value_samples(const struct merge_spool *sp)
{
	uint64_t n = sp->hdr->live.value_samples;
	for (uint32_t i = 0; sp->values && i < sp->hdr->s.nslots; i++)
		n += value_table(sp, i)->offered;
	return n;
}

int merge_spool_values(const struct merge_spool *sp, merge_hot_fn *fn, void *arg, uint64_t *badn)
{
	int r;
	*badn = 0;
	if (!sp->values)
		return 0;
	for (uint32_t i = 0; i < sp->hdr->s.nslots; i++) {
		const struct merge_hotlist *h = (const struct merge_hotlist *)(value_table(sp, i) + 1);
		for (uint32_t j = 0; j < MERGE_VALUE_LISTS; j++)
			if ((r = visit_hot(&h[j], fn, arg, badn)))
				return r;
	}
	const struct merge_hotlist *h = value_shared(sp);
	for (uint32_t j = 0; j < sp->vshared; j++)
		if ((r = visit_hot(&h[j], fn, arg, badn)))
			return r;
	return 0;
}

int merge_spool_images(const struct merge_spool *sp, merge_image_fn *fn, void *arg)
{
	uint64_t n = sp->hdr->live.image_seq;
	if (n > sp->hdr->s.image_records)
		n = sp->hdr->s.image_records;
	for (uint64_t i = 0; i < n; i++) {
		struct merge_image_record r = sp->images[i];
		if (r.valid != 1 || r.build_id_len > MERGE_BUILD_ID_MAX)
			continue;
		r.path[sizeof(r.path) - 1] = 0;
		int rc = fn(&r, arg);
		if (rc)
			return rc;
	}
	return 0;
}
