/*
 * Spool files: the per-process sample store (format in format.h).
 *
 * The writer (libvprof.so, writer.c): spool_create() makes and maps
 * the file when a process starts (or a fork child begins); the handler
 * then counts samples with spool_count(), which is async-signal-safe,
 * lock-free and touches one cache line in the common case. Image loads and
 * unloads are appended with spool_image(). The owner record (owner.c)
 * tells a merge whether the writer is gone.
 *
 * The reader is merge/spool_read.h (the vprof command only); it shares the
 * geometry helpers at the end of this header.
 */
#ifndef VPROF_SPOOL_SPOOL_H
#define VPROF_SPOOL_SPOOL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "spool/format.h"
#include "spool/hotlist.h"

/* Sizes of a new spool. Bounded whatever the run length: ~2.1 MiB of
 * address space, sparse on disk (untouched pages take no room). */
#define SPOOL_SLOTS 32
#define SPOOL_SLOT_BUCKETS 512            /* x4 ways = 2048 PCs per thread */
#define SPOOL_SHARED_ENTRIES 32768
#define SPOOL_IMAGE_RECORDS 1024
/* Values (only in spools made with params.values): per thread slot, a
 * table of 128 hotlists (52 KiB) open-addressed by key, SPOOL_VALUE_PROBE
 * places from its home (SPOOL_VALUE_WAYS is only recorded in the head),
 * plus a shared area of 16384 hotlists (6.5 MiB), open-addressed too:
 * 8.1 MiB more address space, touched a page at a time. */
#define SPOOL_VALUE_LISTS 128
#define SPOOL_VALUE_WAYS 4        /* recorded in the head; lookups probe instead */
#define SPOOL_VALUE_PROBE 16
#define SPOOL_VALUE_SHARED 16384    /* lists in the shared value area */
#define SPOOL_VALUE_SHARED_V1 4096  /* ... in spools before 2026-11-23 (still read) */
/* The value record log (VLOG, with values): 1024 chunks of 64 KiB, 64 MiB
 * of address space, sparse on disk: a chunk's pages are backed as its
 * records reach them. A thread at 250 value windows a second writes
 * ~160 KiB a second, so the log holds minutes of a busy thread; when it
 * is full, values go to the thread tables as before. */
#define SPOOL_VLOG_CHUNKS 1024
#define SPOOL_VLOG_CHUNK_BYTES 65536
#define SPOOL_VLOG_PER_CHUNK ((SPOOL_VLOG_CHUNK_BYTES - sizeof(struct spool_vlog_chunk)) / sizeof(struct spool_vlog_rec))
/* Chunks a writer may still claim once its pages must all be backed in
 * advance (spool_reserve_all, or a kernel without MADV_POPULATE_WRITE):
 * 16 more, 1 MiB, not the whole 64 MiB. */
#define SPOOL_VLOG_RESERVED 16

/* Who writes a spool: at SPOOL_OWNER_OFF in page 0, after the
 * header (zero in spools made before it existed, whose owners held a
 * flock instead). Written before the spool gets its .spool name. The
 * process is alive while a process with that pid and start time exists
 * (in the same boot) and is not a finished zombie; then the spool is still
 * being written. A writer never holds a descriptor on its spool. */
#define SPOOL_OWNER_OFF 3584
#define SPOOL_OWNER_MAGIC "vprfown1"
struct spool_owner {
	char magic[8];
	uint64_t pid;            /* getpid() in the writer's pid namespace */
	uint64_t start_ticks;    /* /proc/PID/stat field 22; 0: unknown */
	uint64_t pidns;          /* inode of /proc/self/ns/pid; 0: unknown */
	uint8_t boot_id[16];     /* /proc/sys/kernel/random/boot_id */
	uint64_t checksum;       /* XXH64 of the bytes above, seed 0 */
};

/* Which vprof run a spool belongs to: at SPOOL_RUN_OFF in page 0,
 * after the owner record, written before the spool gets its .spool name
 * (zero in spools of processes not started by `vprof run`, and of older
 * libvprof). id tells each run's processes apart in a shared database;
 * epoch is the epoch the run chose (0: the current one at merge time). */
#define SPOOL_RUN_OFF 3648
#define SPOOL_RUN_MAGIC "vprfrun1"
struct spool_run {
	char magic[8];
	uint64_t id;
	uint64_t epoch;
	uint64_t checksum;       /* XXH64 of the bytes above, seed 0 */
};

/* A writer's record of the spool's pages the filesystem has backed (a
 * bit per 4 KiB page): a write to a page of a MAP_SHARED file that the
 * filesystem cannot back is a SIGBUS, so every page is backed before its
 * first use (spool_room). 320 words: spools up to 80 MiB. */
#define SPOOL_ROOM_WORDS 320

struct spool {
	int fd;                           /* a writer keeps none (-1); a reader none after open */
	size_t size;
	struct spool_header *hdr;         /* the mapping (a reader's: a private copy) */
	uint8_t *threads;                 /* first slot */
	struct spool_entry *shared;
	struct spool_image_record *images;
	uint8_t *values;                  /* VALUES section, NULL if none */
	uint8_t *vlog;                    /* VLOG section, NULL if none */
	uint8_t *stacks;                  /* STACKS section, NULL if none (stack_table.c) */
	uint8_t *codes;                   /* its interpreted code, NULL if none */
	uint32_t gen;                     /* current image generation (writer) */
	uint32_t vshared;                 /* lists in the shared value area */
	/* Writer: where each key's list is in the shared value area, so that
	 * lists are placed in the order they are first needed (a few pages,
	 * not one a list) and found in one look, not by probing records
	 * across the area's 6.8 MB: 2 x vshared entries of (index + 1), 0
	 * empty, in this process's own memory (the file needs none: readers
	 * scan the records). NULL: the area is probed from the key's hash. */
	uint32_t *vindex;
	uint32_t vnext;                   /* next list not yet placed */
	uint32_t room_all;                /* every page is backed (readers; no populate) */
	uint32_t nospace;                 /* a page was refused: the writer stops */
	uint32_t vlog_full;               /* writer: every log chunk it may use is claimed */
	uint32_t vlog_limit;              /* writer: log chunks it may claim */
	uint32_t vlog_ready;              /* writer: the log's head is written */
	uint64_t room[SPOOL_ROOM_WORDS];  /* writer: pages backed, a bit each */
	uint64_t *data;                   /* reader: pages the file holds (not
					   * holes), a bit each; NULL: all */
	char path[512];
};

struct spool_params {
	uint32_t event, backend;
	uint64_t period;
	const char *exe, *cmdline;
	int values;              /* non-zero: add a VALUES section (hotlists) */
	int stack_depth;         /* non-zero: add a STACKS section, frames kept */
	int stack_method;        /* MERGE_STACK_M_* recorded in it */
	uint64_t run_id;         /* the run record (0, 0: none) */
	uint64_t run_epoch;
	int32_t vlog_chunks;     /* value log chunks the writer may claim: 0
				  * all, < 0 none (a test's knob: the log
				  * full early, or off) */
};

/* Create DIR/PID.N.spool (O_EXCL, 0600, O_CLOEXEC), size and map it
 * MAP_SHARED, fill the static header, the owner record (which tells
 * mergers whether the owner is alive) and the run record, and close the
 * descriptor: the mapping is all the writer keeps. The pages it writes
 * now (page 0, the slot and section heads) are allocated with
 * posix_fallocate first; the rest are backed at their first use
 * (spool_room). Not async-signal-safe in general, but uses only
 * system calls and no allocation, so it may run in a fork child.
 * Returns 0 or negative errno (-ENOSPC: no room for even that). */
int spool_create(struct spool *sp, const char *dir,
		 const struct spool_params *p);

/* 0 when the bytes [p, p + len) of a writer's mapping lie in pages the
 * filesystem has backed, backing them now if need be (one
 * madvise(MADV_POPULATE_WRITE) at a page's first use, which fails where
 * the write would have raised SIGBUS); -1 when it refuses: the spool is
 * then marked (sp->nospace, live.nospace_errno) and the writer stops.
 * Async-signal-safe, lock-free; errno kept. */
int spool_room(struct spool *sp, const void *p, size_t len);

/* Back every page of the spool now, so that no later write makes a
 * system call (before a process enters a sandbox that may forbid
 * madvise); of the value record log, the chunks claimed so far and
 * SPOOL_VLOG_RESERVED more, which are all it may claim from then on.
 * 0, or -1 with the writer stopped as above. Async-signal-safe. */
int spool_reserve_all(struct spool *sp);

/* Unmap without touching the file: for a fork child dropping the parent's
 * spool. */
void spool_forget(struct spool *sp);

/* Claim a thread slot for tid. Returns the slot or NULL if none is free
 * (the thread then counts into the shared table). Async-signal-safe. */
struct spool_thread_slot *spool_claim_slot(struct spool *sp, uint32_t tid);

/* Fold a slot into the shared table and mark it free for reuse (thread
 * exit). Must not race with the handler of the owning thread: call with
 * the sample signal blocked or the trigger stopped. Async-signal-safe. */
void spool_release_slot(struct spool *sp, struct spool_thread_slot *slot);

/* Count one sample of key in slot (NULL: shared table). Async-signal-safe,
 * lock-free; the only atomics are on the shared table. */
void spool_count(struct spool *sp, struct spool_thread_slot *slot, uint64_t key);

/* Append an image record. A load over a different image recorded in the
 * current generation starts a new one (sp->gen). Async-signal-safe
 * (lock-free append). _gen records with a given generation (a fork
 * child copying its parent's records). */
void spool_image(struct spool *sp, int kind, uint64_t bias,
		 uint64_t lo, uint64_t hi, const uint8_t *build_id,
		 uint32_t build_id_len, const char *path);
void spool_image_gen(struct spool *sp, int kind, uint64_t bias,
		     uint64_t lo, uint64_t hi, const uint8_t *build_id,
		     uint32_t build_id_len, const char *path, uint32_t gen);

/* One value sample at key = SPOOL_HOT_KEY(kind, SPOOL_GPC(gen, pc)):
 * appended to the value record log in the chunk slot's thread writes
 * (the merge folds it into key's hotlist); when the log is full (or the
 * spool has none), offered to the hotlist of key in slot's value table
 * (a hotlist evicted from it is merged into the shared value area), or,
 * with slot NULL, straight into the shared value area. merge_spool_value_samples() counts every call;
 * values_dropped those the shared area had no room for. A no-op on a
 * spool made without values. Async-signal-safe, lock-free: the shared
 * area's records are claimed with a CAS and never waited for. *rng is the
 * thread's xorshift64 state (spool_hot_offer). aux: 0 for plain kinds.
 * A key whose kind is not a known MERGE_VK_* is ignored. A released slot
 * keeps its value table: hotlists are per process, and the slot's next
 * owner goes on with them. */
void spool_value(struct spool *sp, struct spool_thread_slot *slot, uint64_t key,
		 uint64_t value, uint64_t aux, uint64_t *rng);
/* The same value offered n times at once (a window's repeats, counted
 * before they reach the list): one look-up, n offers. */
void spool_value_n(struct spool *sp, struct spool_thread_slot *slot, uint64_t key,
		   uint64_t value, uint64_t aux, uint32_t n, uint64_t *rng);

/* Where the thread's next value records will be written, for a
 * prefetch before its next value sample: hint[0] its value table's
 * header, hint[1] its log chunk's header, hint[2] the chunk's next
 * record (NULL where there is none yet). Reads only what its last puts
 * touched. AS-safe. */
void spool_vlog_hints(const struct spool *sp, const struct spool_thread_slot *slot,
		      const void *hint[3]);

/* Account one interpretation run: insns interpreted, stop reason (enum
 * interp_stop; reasons >= SPOOL_INTERP_STOPS count in the last bucket).
 * Async-signal-safe (relaxed atomic adds). */
void spool_interp(struct spool *sp, uint64_t insns, unsigned stop);

/* Same for valid image records, in record order. */
typedef int spool_image_fn(const struct spool_image_record *r, void *arg);
int spool_images(const struct spool *sp, spool_image_fn *fn, void *arg);

/* Make the directories a writer needs in database root (dir.c): spool/,
 * epochs/ and the lock file, each if missing, directories 0700. 0, or
 * negative errno with the reason in why. spool_mkdir_p: mkdir -p, each
 * directory with mode. Not async-signal-safe. */
#define SPOOL_DB_ROOT_MAX 448     /* bytes of a database's path, at most */
int spool_db_create(const char *root, char *why, size_t whylen);
int spool_mkdir_p(const char *path, mode_t mode);

/* The owner record of a new spool, for the process pid (owner.c). System
 * calls only: may run in a fork child. */
void spool_owner_fill(struct spool_owner *o, pid_t pid);

/* Is the spool at path, open on fd, finished (its owner gone), so that a
 * merge may take it? 1: finished; 0: its owner runs (or cannot be told:
 * an owner in another pid namespace that has not exited normally). From
 * the owner record: no process with its pid and start time, or a zombie
 * whose threads all exited, or one that no longer maps the spool (it
 * exec'd). A spool without one (an older libvprof's) is finished when its
 * owner's flock is gone. */
int spool_owner_finished(int fd, const char *path);

/* ---- the STACKS section (stack_table.c) ----
 *
 * spool_stack() counts one stack, async-signal-safe and lock-free: one
 * table per process, entries claimed by CAS and never waited for. The
 * table is fixed (4096 stacks of up to 64 frames, 2.2 MiB of address
 * space, sparse): a stack that finds no entry in 32 probes is counted as
 * dropped, never lost silently. */
#define SPOOL_STACK_ENTRIES 4096

size_t spool_stacks_section_bytes(void);
void spool_stacks_geometry(struct spool_stacks_head *h, int depth, int method);
/* 0 if h has the geometry this vprof writes, else -1. */
int spool_stacks_check(const struct spool_stacks_head *h);

/* Count one stack of `weight` samples: pc[0] the sampled PC, then return
 * addresses, depth frames (1..SPOOL_STACK_MAX), taken in image generation
 * gen; truncated: the unwinder had more frames than depth. A no-op on a
 * spool without STACKS. Async-signal-safe. */
void spool_stack(struct spool *sp, const uint64_t *pc, unsigned depth, unsigned gen,
		 int truncated, uint64_t weight);

/* The table's entries, and the hash an entry is keyed by (FNV-1a over
 * the frames, then a final mix; never 0): the reader's check. */
struct spool_stack_entry *spool_stack_entries(const struct spool *sp);
uint64_t spool_stack_hash(const uint64_t *pc, unsigned depth, unsigned gen);

/* Interpreted code after the stacks (format.h, "Interpreted code"):
 * spool_code_get() finds key's entry (its index) or claims a free one,
 * returned BUSY in *claimed for the caller to fill and then publish with
 * spool_code_publish(); -1 when there is no table, no room or no page.
 * Async-signal-safe and lock-free. spool_stacks_section_bytes() covers
 * the table; spool_stacks_section_bytes_v1() is the size without it. */
long spool_code_get(struct spool *sp, uint64_t key, struct spool_code_entry **claimed);
void spool_code_publish(struct spool *sp, struct spool_code_entry *e);
struct spool_code_entry *spool_code_entries(const struct spool *sp);
size_t spool_stacks_section_bytes_v1(void);

/* ---- geometry, shared by the writer and the reader ---- */

static inline size_t spool_slot_bytes(uint32_t nbuckets)
{
	return sizeof(struct spool_thread_slot) + (size_t)nbuckets * SPOOL_WAYS * sizeof(struct spool_entry);
}

static inline struct spool_thread_slot *spool_slot_at(const struct spool *sp, uint32_t i)
{
	return (struct spool_thread_slot *)(sp->threads + (size_t)i * sp->hdr->s.slot_size);
}

/* The VALUES section: head, one table per slot, the shared area. */
static inline size_t spool_value_table_bytes(void)
{
	return sizeof(struct spool_value_table) + (size_t)SPOOL_VALUE_LISTS * sizeof(struct spool_hotlist);
}

/* shared: SPOOL_VALUE_SHARED, or SPOOL_VALUE_SHARED_V1 in older spools. */
static inline size_t spool_values_bytes(uint32_t nslots, uint32_t shared)
{
	return sizeof(struct spool_values_head) + nslots * spool_value_table_bytes() +
	       (size_t)shared * sizeof(struct spool_hotlist);
}

static inline void spool_values_geometry(struct spool_values_head *h, uint32_t nslots, uint32_t shared)
{
	h->nslots = nslots;
	h->lists = SPOOL_VALUE_LISTS;
	h->ways = SPOOL_VALUE_WAYS;
	h->shared = shared;
	h->list_size = sizeof(struct spool_hotlist);
	h->table_size = (uint32_t)spool_value_table_bytes();
}

static inline struct spool_value_table *spool_value_table_at(const struct spool *sp, uint32_t i)
{
	return (struct spool_value_table *)(sp->values + sizeof(struct spool_values_head) +
					    (size_t)i * spool_value_table_bytes());
}

static inline struct spool_hotlist *spool_value_shared(const struct spool *sp)
{
	return (struct spool_hotlist *)(sp->values + sizeof(struct spool_values_head) +
					(size_t)sp->hdr->s.nslots * spool_value_table_bytes());
}

/* The VLOG section: head, then the chunks. */
static inline size_t spool_vlog_bytes(void)
{
	return sizeof(struct spool_vlog_head) + (size_t)SPOOL_VLOG_CHUNKS * SPOOL_VLOG_CHUNK_BYTES;
}

static inline void spool_vlog_geometry(struct spool_vlog_head *h)
{
	h->chunks = SPOOL_VLOG_CHUNKS;
	h->chunk_bytes = SPOOL_VLOG_CHUNK_BYTES;
	h->rec_size = sizeof(struct spool_vlog_rec);
}

static inline struct spool_vlog_chunk *spool_vlog_chunk_at(const struct spool *sp, uint32_t i)
{
	return (struct spool_vlog_chunk *)(sp->vlog + sizeof(struct spool_vlog_head) +
					   (size_t)i * SPOOL_VLOG_CHUNK_BYTES);
}

#endif
