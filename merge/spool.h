/*
 * Spool files: the per-process sample store (format in format.h).
 *
 * Writer side (libvprof.so): merge_spool_create() makes and maps the file
 * when a process starts (or a fork child begins); the handler then counts
 * samples with merge_spool_count(), which is async-signal-safe, lock-free
 * and touches one cache line in the common case. Image loads and unloads
 * are appended with merge_spool_image().
 *
 * Reader side (vprof merge): merge_spool_open() maps a finished spool
 * read-only and validates it; merge_spool_foreach() visits every counted
 * (key, count), from thread tables and the shared table.
 */
#ifndef VPROF_MERGE_SPOOL_H
#define VPROF_MERGE_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include "merge/format.h"
#include "merge/hotlist.h"

/* Sizes of a new spool. Bounded whatever the run length: ~2.1 MiB of
 * address space, sparse on disk (untouched pages take no room). */
#define MERGE_SLOTS 32
#define MERGE_SLOT_BUCKETS 512            /* x4 ways = 2048 PCs per thread */
#define MERGE_SHARED_ENTRIES 32768
#define MERGE_IMAGE_RECORDS 1024
/* Values (only in spools made with params.values): per thread slot, 128
 * hotlists 4-way set-associative (53 KiB), plus a 4096-hotlist shared
 * area (1.7 MiB): 3.3 MiB more address space, touched a page at a time. */
#define MERGE_VALUE_LISTS 128
#define MERGE_VALUE_WAYS 4        /* recorded in the head; lookups probe instead */
#define MERGE_VALUE_PROBE 16
#define MERGE_VALUE_SHARED 16384    /* lists in the shared value area */
#define MERGE_VALUE_SHARED_V1 4096  /* ... in spools before 2026-11-23 (still read) */

/* Who writes a spool: at MERGE_SPOOL_OWNER_OFF in page 0, after the
 * header (zero in spools made before it existed, whose owners held a
 * flock instead). Written before the spool gets its .spool name. The
 * process is alive while a process with that pid and start time exists
 * (in the same boot) and is not a finished zombie; then the spool is still
 * being written. A writer never holds a descriptor on its spool. */
#define MERGE_SPOOL_OWNER_OFF 3584
#define MERGE_SPOOL_OWNER_MAGIC "vprfown1"
struct merge_spool_owner {
	char magic[8];
	uint64_t pid;            /* getpid() in the writer's pid namespace */
	uint64_t start_ticks;    /* /proc/PID/stat field 22; 0: unknown */
	uint64_t pidns;          /* inode of /proc/self/ns/pid; 0: unknown */
	uint8_t boot_id[16];     /* /proc/sys/kernel/random/boot_id */
	uint64_t checksum;       /* XXH64 of the bytes above, seed 0 */
};

/* Which vprof run a spool belongs to: at MERGE_SPOOL_RUN_OFF in page 0,
 * after the owner record, written before the spool gets its .spool name
 * (zero in spools of processes not started by `vprof run`, and of older
 * libvprof). id tells each run's processes apart in a shared database;
 * epoch is the epoch the run chose (0: the current one at merge time). */
#define MERGE_SPOOL_RUN_OFF 3648
#define MERGE_SPOOL_RUN_MAGIC "vprfrun1"
struct merge_spool_run {
	char magic[8];
	uint64_t id;
	uint64_t epoch;
	uint64_t checksum;       /* XXH64 of the bytes above, seed 0 */
};

/* A writer's record of the spool's pages the filesystem has backed (a
 * bit per 4 KiB page): a write to a page of a MAP_SHARED file that the
 * filesystem cannot back is a SIGBUS, so every page is backed before its
 * first use (merge_spool_room). 64 words: spools up to 16 MiB. */
#define MERGE_ROOM_WORDS 64

struct merge_spool {
	int fd;                  /* a writer keeps none (-1); a reader none after open */
	size_t size;
	struct merge_spool_header *hdr;   /* the mapping (a reader's: a private copy) */
	uint8_t *threads;                 /* first slot */
	struct merge_entry *shared;
	struct merge_image_record *images;
	uint8_t *values;                  /* VALUES section, NULL if none */
	uint8_t *stacks;                  /* STACKS section, NULL if none (merge/stacks.h) */
	uint32_t gen;                     /* current image generation (writer) */
	uint32_t vshared;                 /* lists in the shared value area */
	uint32_t room_all;                /* every page is backed (readers; no populate) */
	uint32_t nospace;                 /* a page was refused: the writer stops */
	uint64_t room[MERGE_ROOM_WORDS];  /* writer: pages backed, a bit each */
	char path[512];
};

struct merge_spool_params {
	uint32_t event, backend;
	uint64_t period;
	const char *exe, *cmdline;
	int values;              /* non-zero: add a VALUES section (hotlists) */
	int stack_depth;         /* non-zero: add a STACKS section, frames kept */
	int stack_method;        /* MERGE_STACK_M_* recorded in it */
	uint64_t run_id;         /* the run record (0, 0: none) */
	uint64_t run_epoch;
};

/* Create DIR/PID.N.spool (O_EXCL, 0600, O_CLOEXEC), size and map it
 * MAP_SHARED, fill the static header, the owner record (which tells
 * mergers whether the owner is alive) and the run record, and close the
 * descriptor: the mapping is all the writer keeps. The pages it writes
 * now (page 0, the slot and section heads) are allocated with
 * posix_fallocate first; the rest are backed at their first use
 * (merge_spool_room). Not async-signal-safe in general, but uses only
 * system calls and no allocation, so it may run in a fork child.
 * Returns 0 or negative errno (-ENOSPC: no room for even that). */
int merge_spool_create(struct merge_spool *sp, const char *dir,
		       const struct merge_spool_params *p);

/* 0 when the bytes [p, p + len) of a writer's mapping lie in pages the
 * filesystem has backed, backing them now if need be (one
 * madvise(MADV_POPULATE_WRITE) at a page's first use, which fails where
 * the write would have raised SIGBUS); -1 when it refuses: the spool is
 * then marked (sp->nospace, live.nospace_errno) and the writer stops.
 * Async-signal-safe, lock-free; errno kept. */
int merge_spool_room(struct merge_spool *sp, const void *p, size_t len);

/* Back every page of the spool now, so that no later write makes a
 * system call (before a process enters a sandbox that may forbid
 * madvise). 0, or -1 with the writer stopped as above. Async-signal-safe. */
int merge_spool_reserve_all(struct merge_spool *sp);

/* Unmap without touching the file: for a fork child dropping the parent's
 * spool. */
void merge_spool_forget(struct merge_spool *sp);

/* Claim a thread slot for tid. Returns the slot or NULL if none is free
 * (the thread then counts into the shared table). Async-signal-safe. */
struct merge_thread_slot *merge_spool_claim_slot(struct merge_spool *sp, uint32_t tid);

/* Fold a slot into the shared table and mark it free for reuse (thread
 * exit). Must not race with the handler of the owning thread: call with
 * the sample signal blocked or the trigger stopped. Async-signal-safe. */
void merge_spool_release_slot(struct merge_spool *sp, struct merge_thread_slot *slot);

/* Count one sample of key in slot (NULL: shared table). Async-signal-safe,
 * lock-free; the only atomics are on the shared table. */
void merge_spool_count(struct merge_spool *sp, struct merge_thread_slot *slot, uint64_t key);

/* Append an image record. A load over a different image recorded in the
 * current generation starts a new one (sp->gen). Async-signal-safe
 * (lock-free append). _gen records with a given generation (a fork
 * child copying its parent's records). */
void merge_spool_image(struct merge_spool *sp, int kind, uint64_t bias,
		       uint64_t lo, uint64_t hi, const uint8_t *build_id,
		       uint32_t build_id_len, const char *path);
void merge_spool_image_gen(struct merge_spool *sp, int kind, uint64_t bias,
			   uint64_t lo, uint64_t hi, const uint8_t *build_id,
			   uint32_t build_id_len, const char *path, uint32_t gen);

/* One value sample at key = MERGE_HOT_KEY(kind, MERGE_GPC(gen, pc)):
 * offered to the hotlist of key in slot's value table (a hotlist evicted
 * from it is merged into the shared value area), or, with slot NULL,
 * straight into the shared value area. merge_spool_value_samples() counts every call;
 * values_dropped those the shared area had no room for. A no-op on a
 * spool made without values. Async-signal-safe, lock-free: the shared
 * area's records are claimed with a CAS and never waited for. *rng is the
 * thread's xorshift64 state (merge_hot_offer). aux: 0 for plain kinds.
 * A key whose kind is not a known MERGE_VK_* is ignored. A released slot
 * keeps its value table: hotlists are per process, and the slot's next
 * owner goes on with them. */
void merge_spool_value(struct merge_spool *sp, struct merge_thread_slot *slot, uint64_t key,
		       uint64_t value, uint64_t aux, uint64_t *rng);

/* Account one interpretation run: insns interpreted, stop reason (enum
 * interp_stop; reasons >= MERGE_INTERP_STOPS count in the last bucket).
 * Async-signal-safe (relaxed atomic adds). */
void merge_spool_interp(struct merge_spool *sp, uint64_t insns, unsigned stop);

/* ---- reader ---- */

/* Is the spool at path, open on fd, finished (its owner gone), so that a
 * merge may take it? 1: finished; 0: its owner runs (or cannot be told:
 * an owner in another pid namespace that has not exited normally). From
 * the owner record: no process with its pid and start time, or a zombie
 * whose threads all exited, or one that no longer maps the spool (it
 * exec'd). A spool without one (an older libvprof's) is finished when its
 * owner's flock is gone. */
int merge_spool_finished(int fd, const char *path);

/* Read PATH into private memory (by pread, data extents only: no
 * mapping of the file, so a hole a full filesystem cannot back reads as
 * zeros instead of raising SIGBUS) and validate magic, version, byte
 * order, checksum, layout and, where the writer kept them, the block
 * checks: each thread slot's and the shared table's sums, each image
 * record's check, the stacks' total. On failure returns negative errno
 * (-EBADMSG for corruption) and puts a reason in why. */
int merge_spool_open(struct merge_spool *sp, const char *path, char *why, size_t whylen);
void merge_spool_close(struct merge_spool *sp);

/* Visit every non-empty (key, count); stops early if fn returns non-zero.
 * Counts whose key is malformed are skipped and reported through *bad. */
typedef int merge_entry_fn(uint64_t key, uint64_t count, void *arg);
int merge_spool_foreach(const struct merge_spool *sp, merge_entry_fn *fn, void *arg,
			uint64_t *bad);

/* Visit every hotlist of the VALUES section (thread tables, then the
 * shared area); several may share a key, and the caller merges them.
 * Damaged ones (merge_hot_check) and ones a killed writer left half-merged
 * are skipped and counted in *bad. Returns 0 at once on spools without
 * values. */
typedef int merge_hot_fn(const struct merge_hotlist *h, void *arg);
/* Values offered (merge_spool_value): the header's count (values with no
 * slot) plus each thread table's own. */
uint64_t merge_spool_value_samples(const struct merge_spool *sp);
int merge_spool_values(const struct merge_spool *sp, merge_hot_fn *fn, void *arg, uint64_t *bad);

/* The run record of the spool file open on fd: 0 and *r filled, or -1
 * when it has none (or a damaged one). */
int merge_spool_run_read(int fd, struct merge_spool_run *r);

/* Same for valid image records, in record order. */
typedef int merge_image_fn(const struct merge_image_record *r, void *arg);
int merge_spool_images(const struct merge_spool *sp, merge_image_fn *fn, void *arg);

#endif
