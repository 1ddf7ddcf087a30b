/*
 * On-disk format of the per-process spool, and what vprof's other files
 * share with it (section tables, keys, events, image records; the
 * profile files are merge/profile_format.h).
 *
 * Spools and profiles are little-endian (the only byte order vprof runs on; readers check
 * the byte-order mark and refuse anything else), versioned, and made of
 * sections described by a table in the header, so that later record kinds
 * (value hotlists, call stacks, load latencies) are new section kinds, not a
 * format break: a reader skips kinds it does not know.
 *
 * Spool (DB/spool/PID.SEQ.spool): written in place, through a MAP_SHARED
 * mapping, by the signal handler of one process, so that SIGKILL loses
 * nothing already counted. Its size is fixed when created (bounded memory
 * whatever the run length); its pages are backed by the filesystem as they
 * are first used (spool/writer.c, "Room"). The static part of the header is
 * checksummed at creation; the live counters and tables cannot be (they
 * change at every sample), so readers validate them by bounds, and, where
 * the section flags say SPOOL_SECF_CHECKED, by the block checks kept as
 * they change (spool/writer.c, "Block checks"). Layout:
 *
 *   page 0      struct spool_header (static part + checksum, live part)
 *   THREADS     nslots x struct spool_thread_slot: DCPI's per-CPU table,
 *               per thread here: 4-way buckets of (key, count), one cache
 *               line a bucket, evicting to the SHARED table
 *   SHARED      open-addressed table of (key, count) shared by all threads,
 *               updated with atomics (CAS on the key, add on the count); it
 *               takes evictions and the samples of threads with no slot
 *   IMAGES      append-only records of image loads and unloads
 *   VALUES      (versions 2 and 3) value hotlists: struct
 *               spool_values_head, then per thread slot a struct
 *               spool_value_table header and 128 hotlists, open-addressed
 *               by key (16 probes), evicting the probed list with the
 *               fewest values into the shared area; then the shared area,
 *               16384 hotlists (4096 in spools made before 2026-11-23)
 *               open-addressed by key, each claimed and changed
 *               under its state word (FREE -> BUSY -> READY, CAS, never
 *               waited for: a BUSY one is passed over, so a key may have
 *               several records and readers merge them). A hotlist the
 *               shared area has no room for is counted in
 *               live.values_dropped (its vtot); one left BUSY by SIGKILL or
 *               failing spool_hot_check is skipped and counted by the
 *               reader (stats values_bad).
 *   VLOG        (version 4) the value record log: struct spool_vlog_head,
 *               then SPOOL_VLOG_CHUNKS chunks of SPOOL_VLOG_CHUNK_BYTES,
 *               each a header (its writer's tid and how many records it
 *               holds) and fixed 32-byte records (key, value, aux, n): a
 *               thread's value samples as it took them, one chunk at a
 *               time (claimed by an atomic add on the head's `next`). The
 *               merge folds the records into hotlists; the writer puts a
 *               value into its thread table (VALUES) only when the log is
 *               full. A record counts once the chunk's count covers it, so
 *               a SIGKILL between the two loses that record alone.
 *
 * A spool made with values now has a VLOG section after VALUES and is
 * version 4; the layout is THREADS, SHARED, IMAGES, VALUES, VLOG and,
 * with stacks, STACKS.
 *
 * A spool made without values has no VALUES section and is version 1,
 * byte for byte what earlier vprof wrote; with values it is version 2 (an
 * earlier vprof sets it aside saying "spool version 2, this vprof reads
 * 1", not "implausible layout"). The VALUES geometry is not checksummed
 * (it sits in the section) and must equal what the reader computes.
 *
 * A key is (event << 56) | pc: user-space PCs fit in 56 bits, and a single
 * 64-bit word lets the shared table claim an entry with one CAS. Key 0 means
 * an empty entry (event numbers start at 1). A hotlist key is the same
 * with the value kind in place of the event (SPOOL_HOT_KEY, hotlist.h).
 */
#ifndef VPROF_SPOOL_FORMAT_H
#define VPROF_SPOOL_FORMAT_H

#include <stdint.h>

#include "upcall/events.h"   /* enum upcall_event */

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "vprof's formats are little-endian and vprof runs only on little-endian hosts"
#endif

#define SPOOL_BOM 0x01020304u          /* reads back as 0x04030201 if swapped */


#define SPOOL_KEY(ev, pc)  (((uint64_t)(ev) << 56) | ((uint64_t)(pc) & 0x00ffffffffffffffull))
#define SPOOL_KEY_EV(k)    ((unsigned)((k) >> 56))
#define SPOOL_KEY_PC(k)    ((k) & 0x00ffffffffffffffull)
/* The 56 bits of a key's "pc" are a user PC (below 2^48) and, above it,
 * the image generation the sample was taken in: it goes up when an image
 * is loaded where another one was (dlclose, then dlopen at the same
 * address), so the merge can give each sample the image that was there. */
#define SPOOL_PC_BITS      48
#define SPOOL_GEN_MAX      255u
#define SPOOL_GPC(gen, pc) (((uint64_t)(gen) << SPOOL_PC_BITS) | ((uint64_t)(pc) & ((1ull << SPOOL_PC_BITS) - 1)))
#define SPOOL_GPC_GEN(g)   ((unsigned)((g) >> SPOOL_PC_BITS) & 0xff)
#define SPOOL_GPC_PC(g)    ((g) & ((1ull << SPOOL_PC_BITS) - 1))

/* Section kinds, shared by spools and profiles. New kinds get new numbers;
 * never reuse one. */
enum spool_section_kind {
	SPOOL_SEC_THREADS = 1,   /* spool: thread slots */
	SPOOL_SEC_SHARED = 2,    /* spool: shared (key, count) table */
	SPOOL_SEC_IMAGES = 3,    /* spool: image records */
	SPOOL_SEC_PCS = 4,       /* profile: sorted (offset, count) records */
	SPOOL_SEC_STATS = 5,     /* epoch stats file: struct merge_stats */
	SPOOL_SEC_VALUES = 6,    /* spool and profile: value hotlists */
	SPOOL_SEC_STACKS = 7,    /* spool and stacks file: call stacks */
	SPOOL_SEC_LATENCY = 8,   /* reserved (load latencies): no file has one */
	SPOOL_SEC_JITNAMES = 9,  /* profile: names of JIT code (perf maps) */
	SPOOL_SEC_VLOG = 10,     /* spool: the value record log */
};

struct spool_section {
	uint32_t kind;
	uint32_t flags;
	uint64_t offset;         /* from the start of the file */
	uint64_t size;           /* bytes */
};

#define SPOOL_MAX_SECTIONS 8

/* Interpretation stop reasons counted (enum interp_stop, 0..15). */
#define SPOOL_INTERP_STOPS 16
/* interp_stops[] bucket of a value window that ended where it started (a
 * loop closed, preload/window.h): not an interp_stop reason. */
#define SPOOL_INTERP_STOP_LOOP 14

/* ---- spool ---------------------------------------------------------- */

#define SPOOL_MAGIC "VPROFSPL"
#define SPOOL_VERSION 2        /* written when there is a VALUES section */
#define SPOOL_VERSION_PLAIN 1  /* no VALUES section: what vprof wrote before */
#define SPOOL_VERSION_STACKS 3 /* a STACKS section last (after VALUES, if any) */
#define SPOOL_VERSION_VLOG 4   /* VALUES then VLOG, and STACKS last if any */

#define SPOOL_WAYS 4
struct spool_entry {            /* 16 bytes: 4 make one 64-byte bucket */
	uint64_t key;
	uint64_t count;
};

struct spool_thread_slot {
	uint32_t tid;            /* owner; 0 if never used */
	uint32_t state;          /* MERGE_SLOT_* */
	uint64_t samples;        /* samples this slot took */
	uint64_t evictions;
	uint32_t victim;         /* mod-4 eviction counter, as in DCPI */
	uint32_t nbuckets;       /* power of two */
	/* The block check (section flag SPOOL_SECF_CHECKED; zero before it):
	 * sum is the sum over the slot's entries of spool_key_mix(key) x
	 * count, shared_sum that over what this slot's writers added to
	 * SHARED, both mod 2^64; busy is SPOOL_SLOT_BUSY while a writer
	 * changes the slot (a kill then leaves it so, and the reader checks
	 * neither this slot nor SHARED), else 0. */
	uint32_t busy;
	uint32_t pad0;
	uint64_t sum;
	uint64_t shared_sum;
	uint8_t pad[8];
	struct spool_entry bucket[][SPOOL_WAYS];   /* nbuckets x 4 */
};
enum { SPOOL_SLOT_FREE = 0, SPOOL_SLOT_OWNED = 1 };
#define SPOOL_SLOT_BUSY 0x6b737562u    /* "busk": not a value a flipped bit makes of 0 */

/* The weight of a key in the block checks: odd, so a changed count
 * always changes the sum, and spread, so a changed key does too. */
static inline uint64_t spool_key_mix(uint64_t key)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ull;
	key ^= key >> 29;
	return key | 1;
}

/* struct spool_section.flags of a spool's THREADS, SHARED, IMAGES and
 * STACKS sections: the writer keeps the block checks (docs/formats.md,
 * "Block checks"). Older readers ignore flags; spools without it are
 * read unchecked, as before. */
#define SPOOL_SECF_CHECKED 1u

enum spool_image_kind { SPOOL_IMG_MAP = 1, SPOOL_IMG_UNMAP = 2 };
#define SPOOL_BUILD_ID_MAX 32
#define SPOOL_PATH_MAX 432
struct spool_image_record {     /* 512 bytes */
	uint32_t valid;          /* set last (release): 1 when complete */
	uint32_t kind;           /* spool_image_kind */
	uint64_t seq;            /* order of loads/unloads in the process */
	uint64_t bias;           /* load bias: pc - bias = ELF vaddr */
	uint64_t lo, hi;         /* [lo, hi) absolute span of the PT_LOADs */
	uint32_t build_id_len;
	uint8_t build_id[SPOOL_BUILD_ID_MAX];
	uint32_t gen;            /* image generation when recorded (SPOOL_GPC) */
	/* With SPOOL_SECF_CHECKED on IMAGES the path holds at most
	 * SPOOL_PATH_MAX - 9 bytes, and its last 8 bytes are the record's
	 * check: XXH64 of bytes [4, SPOOL_IMAGE_CHECK_OFF), seed 0 (all but
	 * valid). Older readers stop at the path's terminating 0. */
	char path[SPOOL_PATH_MAX];
};
#define SPOOL_IMAGE_CHECK_OFF 504

struct spool_static {
	char magic[8];
	uint32_t version;
	uint32_t bom;
	uint32_t header_size;    /* bytes of page 0 */
	uint32_t nsections;
	uint64_t file_size;
	uint64_t pid, ppid;
	uint64_t start_ns;       /* CLOCK_REALTIME */
	uint32_t event;          /* upcall_event of the samples */
	uint32_t backend;        /* same numbering: which trigger fired them */
	uint64_t period;         /* mean period: ns for clocks, events for PMU */
	uint32_t nslots;         /* thread slots */
	uint32_t slot_size;      /* bytes per slot */
	uint32_t shared_entries; /* power of two */
	uint32_t image_records;
	struct spool_section section[SPOOL_MAX_SECTIONS];
	char exe[256];
	char cmdline[256];
	uint64_t checksum;       /* XXH64 of the bytes above, seed 0 */
};

/* Interpretation runs by length: four bins a power of two (bin 4k + j
 * holds lengths from 2^k (1 + j/4) up), lengths up to 2^24. */
#define SPOOL_RUN_BINS 96
static inline unsigned spool_run_bin(uint64_t n)
{
	if (n < 4)
		return (unsigned)n;
	unsigned k = 63u - (unsigned)__builtin_clzll(n);
	unsigned b = 4 * k + (unsigned)((n >> (k - 2)) & 3);
	return b < SPOOL_RUN_BINS ? b : SPOOL_RUN_BINS - 1;
}
/* The least length bin b holds. */
static inline uint64_t spool_run_bin_low(unsigned b)
{
	if (b < 4)
		return b;
	unsigned k = b / 4;
	return (1ull << k) + ((uint64_t)(b & 3) << (k - 2));
}

struct spool_live {       /* updated while the process runs */
	uint64_t samples;        /* every sample the handler saw for us */
	uint64_t dropped;        /* samples not counted, all causes */
	uint64_t dropped_busy;   /* reserved: samples not interpreted in vprof code */
	uint64_t dropped_full;   /* ... of which: shared table full */
	uint64_t shared_used;    /* entries claimed in SHARED */
	uint64_t threads;        /* threads that armed a trigger */
	uint64_t nothread;       /* samples of threads with no slot (SHARED) */
	uint64_t image_seq;      /* next image record index */
	uint64_t images_lost;    /* image records that did not fit */
	uint64_t exited;         /* MERGE_EXITED_*: 1 once the process exited normally */
	uint64_t cpu_ns;         /* process CPU time at exit (if exited) */
	/* Value sampling (zero in spools without a VALUES section). */
	uint64_t value_samples;  /* values offered through spool_value */
	uint64_t values_dropped; /* ... of which lost: shared value area full */
	uint64_t value_evictions;/* hotlists moved from a thread table to SHARED */
	uint64_t interp_runs;    /* interpretation runs at samples */
	uint64_t interp_insns;   /* instructions they interpreted */
	uint64_t interp_stops[SPOOL_INTERP_STOPS]; /* runs by interp_stop reason */
	/* Appended with kernel time: the process's CPU split at exit, from
	 * getrusage. Page 0 is zero-filled, so an older libvprof's spool
	 * reads cpu_split 0 (no split known); older readers ignore these. */
	uint64_t cpu_user_ns;    /* user-mode CPU at exit (if cpu_split) */
	uint64_t cpu_sys_ns;     /* system (kernel) CPU at exit (if cpu_split) */
	uint64_t cpu_split;      /* 1 when the two above were recorded */
	uint64_t ring_fallbacks; /* threads sampled by signals: ring not mapped */
	/* Appended with the bound on vprof's own cost (preload/selflimit.c);
	 * zero in older spools. */
	uint64_t cost_ns;        /* handler and drain time measured, all threads */
	uint64_t limit_threads;  /* threads whose sampling rate was lowered */
	uint64_t limit_lowerings;/* times a thread's rate was lowered */
	uint64_t limit_cpu_ns;   /* thread CPU spent at a lowered rate */
	uint64_t limit_samples;  /* samples taken in that CPU */
	uint64_t limit_interp_threads; /* threads whose interpretation was thinned */
	/* Appended (proportionality): the process's CPU before its
	 * first thread's trigger was armed (exec, the dynamic loader, the
	 * constructors up to the end of ours), which no sample can see;
	 * precise (CLOCK_PROCESS_CPUTIME_ID), and its system part as
	 * getrusage then split it. armed_valid 1 when recorded. */
	uint64_t armed_cpu_ns;
	uint64_t armed_sys_ns;
	uint64_t armed_valid;
	/* Appended with reserved spool space (zero in older spools): the
	 * samples and image records lost because the filesystem gave no room
	 * for a page of the spool (sampling stops at the first), and the
	 * errno of that first refusal (ENOSPC for a full filesystem or
	 * quota). */
	uint64_t nospace_dropped;
	uint64_t nospace_errno;
	/* Appended with the block checks: the sum of spool_key_mix(key) over
	 * the samples of threads without a slot (counted in SHARED), and how
	 * many of those samples are done (nothread minus this: writers still
	 * inside when the process died). */
	uint64_t noslot_sum;
	uint64_t noslot_done;
	/* Appended with seccomp sandboxes (preload/sandbox.c); zero in
	 * older spools. Threads that stopped sampling before entering a
	 * sandbox that forbids what sampling needs; that stopped at a call
	 * of vprof's a sandbox refused (entered without vprof seeing it);
	 * made inside such a sandbox, never armed. */
	uint64_t sandbox_stopped;
	uint64_t sandbox_refused;
	uint64_t sandbox_unarmed;
	/* Appended with the kernel's share of the cost bound
	 * (preload/selflimit.c): the kernel's cost of the samples counted
	 * against --max-cost (the calibrated cost of one, times them), and
	 * how many samples that was. */
	uint64_t kernel_cost_ns;
	uint64_t kernel_cost_samples;
	/* Appended with cache simulation (preload/cachesim.c); zero in older
	 * spools and in runs without it. The simulated geometry (bytes, ways,
	 * line bytes of the first-level data cache, then of the last level),
	 * and the interpretation runs by length: bin SPOOL_RUN_BIN(n) for a
	 * run of n instructions. */
	uint64_t cache_geom[6];
	uint64_t run_bins[SPOOL_RUN_BINS];
};

/* live.exited: 0 running (or killed), 1 the process exited normally (its
 * last spool), 2 rotated out by its running owner (VPROF_EPOCH_SECS), its
 * last writers maybe still in it, 3 rotated out and closed (unmapped). */
enum { SPOOL_EXITED_NO = 0, SPOOL_EXITED_NORMAL = 1, SPOOL_EXITED_ROTATED = 2,
       SPOOL_EXITED_CLOSED = 3 };

struct spool_header {
	struct spool_static s;
	uint8_t pad0[64 - sizeof(struct spool_static) % 64];
	struct spool_live live;
};

/* VALUES section of a spool (version 2; spools made without values have
 * none and stay version 1). Geometry first, so a reader checks it against
 * what it computes before touching anything; then one value table per
 * thread slot (same index as THREADS), then the shared area. Records are
 * struct spool_hotlist (spool/hotlist.h). */
struct spool_values_head {      /* 64 bytes */
	uint32_t nslots;         /* == the static header's nslots */
	uint32_t lists;          /* hotlists per thread table, ways x sets */
	uint32_t ways;           /* set associativity of thread tables */
	uint32_t shared;         /* hotlists in the shared area, power of two */
	uint32_t list_size;      /* sizeof(struct spool_hotlist) */
	uint32_t table_size;     /* bytes per thread table */
	uint8_t pad[40];
};
struct spool_value_table {      /* header of one thread's table, 64 bytes */
	uint32_t victim;         /* unused since the victim is the way with the
				  * fewest value samples (was: mod-ways) */
	uint32_t pad0;
	uint64_t evictions;
	uint64_t offered;        /* values offered through this table (its
				  * owner's, plain stores): part of
				  * live.value_samples (0 in older spools) */
	uint32_t vlog_chunk;     /* the log chunk its owner writes, + 1 (0: none
				  * yet; version 4) */
	uint32_t pad1;
	uint64_t vlog_missed;    /* values its owner put here because the log
				  * was full or a page was refused (version 4) */
	uint8_t pad[24];
	/* followed by lists x struct spool_hotlist, set-major */
};
/* VLOG section of a spool (version 4): the value record log. */
struct spool_vlog_head {        /* 64 bytes, the geometry first */
	uint32_t chunks;         /* SPOOL_VLOG_CHUNKS */
	uint32_t chunk_bytes;    /* SPOOL_VLOG_CHUNK_BYTES, its header included */
	uint32_t rec_size;       /* sizeof(struct spool_vlog_rec) */
	uint32_t pad0;
	uint64_t next;           /* chunks claimed (atomic add; may pass `chunks`:
				  * the log is then full) */
	uint8_t pad[40];
};
struct spool_vlog_chunk {       /* 64-byte header, then the records */
	uint32_t tid;            /* the thread that claimed it */
	uint32_t count;          /* records written, each whole before it counts */
	uint8_t pad[56];
};
struct spool_vlog_rec {         /* 32 bytes */
	uint64_t key;            /* SPOOL_HOT_KEY(kind, SPOOL_GPC(gen, pc)) */
	uint64_t value, aux;
	uint32_t n;              /* times offered (a window's repeats) */
	uint32_t pad;
};

/* Shared-area records' claim word (struct spool_hotlist.state). */
enum { SPOOL_HOT_FREE = 0, SPOOL_HOT_BUSY = 1, SPOOL_HOT_READY = 2 };

/* STACKS section of a spool (version 3, `vprof run --stacks`): call
 * stacks counted in one table shared by the process's threads, open-
 * addressed by a hash of (generation, frames); entries are claimed and
 * changed under their state word (FREE -> BUSY -> READY by CAS; a BUSY one
 * is passed over, so one stack may have several entries, which the merge
 * folds). A stack with no room in SPOOL_STACK_PROBES probes is counted in
 * `dropped`, one cut at the asked depth in `truncated`. pc[0] is the
 * sampled PC, pc[1..] return addresses, innermost first; all in the
 * entry's image generation (SPOOL_GPC). Details: spool.h, "the STACKS
 * section". */
#define SPOOL_STACK_MAX 64       /* frames kept at most (--stack-depth) */
#define SPOOL_STACK_PROBES 32
struct spool_stacks_head {      /* 64 bytes, the geometry first */
	uint32_t entries;        /* power of two */
	uint32_t entry_size;     /* sizeof(struct spool_stack_entry) */
	uint32_t max_depth;      /* SPOOL_STACK_MAX */
	uint32_t depth;          /* frames asked (1..SPOOL_STACK_MAX) */
	uint64_t samples;        /* samples offered a stack (weights summed) */
	uint64_t dropped;        /* ... of which not recorded: table full */
	uint64_t truncated;      /* ... recorded, cut at `depth` */
	uint64_t used;           /* entries claimed */
	uint32_t method;         /* MERGE_STACK_M_*: how the writer unwound */
	uint8_t pad[12];
};
enum { SPOOL_STACK_M_NONE = 0, SPOOL_STACK_M_UNWIND = 1, SPOOL_STACK_M_FP = 2,
       SPOOL_STACK_M_CURSOR = 3, SPOOL_STACK_M_CFI = 4 };
struct spool_stack_entry {      /* 544 bytes */
	uint64_t hash;           /* of gen and pc[0..depth) */
	uint32_t state;          /* SPOOL_HOT_FREE/BUSY/READY */
	uint16_t depth;
	uint8_t gen;             /* image generation (SPOOL_GPC) */
	uint8_t flags;           /* 1: truncated */
	uint64_t count;
	uint64_t pad;
	uint64_t pc[SPOOL_STACK_MAX];
};

/* Interpreted code in a STACKS section, after its entries (sections of
 * spool_stacks_section_bytes(); one of the size spools had before holds
 * none): the functions of an interpreted language (CPython 3.11,
 * Lua 5.4.4) the handler met, one entry each, named the first time it
 * is seen. A frame of such a function, in a stack's pc[] or as a counted PC, is
 * SPOOL_CODE_FRAME(entry index, line): bit 47 set, which no user-space
 * address has. Entries are claimed FREE -> BUSY by CAS and published
 * READY, as stacks are; a function with no room in SPOOL_CODE_PROBES
 * probes is counted in `dropped` and its frames are left native. */
#define SPOOL_CODE_ENTRIES 2048
#define SPOOL_CODE_PROBES 32
#define SPOOL_CODE_NAME_MAX 160
#define SPOOL_CODE_FILE_MAX 320
#define SPOOL_CODE_TAG (1ull << 47)
#define SPOOL_CODE_FRAME(idx, line) \
	(SPOOL_CODE_TAG | ((uint64_t)(idx) & 0xfffffu) << 24 | ((uint64_t)(line) & 0xffffffu))
#define SPOOL_CODE_IS(pc)    (((pc) & SPOOL_CODE_TAG) != 0)
#define SPOOL_CODE_IDX(pc)   ((uint32_t)((pc) >> 24) & 0xfffffu)
#define SPOOL_CODE_LINE(pc)  ((uint32_t)(pc) & 0xffffffu)
enum { SPOOL_LANG_PYTHON = 1, SPOOL_LANG_LUA = 2 };
struct spool_codes_head {       /* 64 bytes */
	uint32_t entries;        /* SPOOL_CODE_ENTRIES */
	uint32_t entry_size;     /* sizeof(struct spool_code_entry) */
	uint64_t used;           /* entries claimed */
	uint64_t dropped;        /* functions that found no entry */
	uint8_t pad[40];
};
struct spool_code_entry {       /* 512 bytes */
	uint64_t key;            /* the writer's identity of the code (its
				  * address mixed with its fields) */
	uint32_t state;          /* SPOOL_HOT_FREE/BUSY/READY */
	uint8_t lang;            /* SPOOL_LANG_* */
	uint8_t pad[3];
	uint32_t firstline;      /* the function's first line */
	uint32_t pad2;
	uint64_t check;          /* XXH64 of name and file */
	char name[SPOOL_CODE_NAME_MAX];   /* qualified name, NUL-terminated */
	char file[SPOOL_CODE_FILE_MAX];   /* source file as the interpreter names it */
};

#endif
