/*
 * On-disk format of the per-image profile, the epoch's stats file and
 * stacks file (the merge's output; section tables, keys and events are
 * spool/format.h's).
 *
 * Profile (DB/epochs/N/BUILDID.EVENT.prof): written whole by `vprof merge`
 * to a temporary file and renamed into place, under the database lock;
 * checksummed over everything after the checksum field. Sections: PCS
 * (sorted (offset, count)), and, when the image has value samples, VALUES:
 * struct spool_hotlist records sorted by key = SPOOL_HOT_KEY(kind, ELF
 * offset), one per key, state 0. Profiles stay version 1: an earlier
 * reader skips VALUES. The stats file's STATS section grew fields at its
 * end (values, interpretation runs and stops); a shorter one, at least
 * MERGE_STATS_V1_SIZE, reads with them zero.
 */
#ifndef VPROF_MERGE_PROFILE_FORMAT_H
#define VPROF_MERGE_PROFILE_FORMAT_H

#include "spool/format.h"

#define MERGE_PROFILE_MAGIC "VPROFPRF"
#define MERGE_PROFILE_VERSION 1

struct merge_pc_record {
	uint64_t offset;         /* ELF vaddr in the image (absolute pc if unknown) */
	uint64_t count;
};

/* The epoch's stats file (DB/epochs/N/stats.prof) is a profile file whose
 * only section is SPOOL_SEC_STATS holding one of these; merged by adding. */
struct merge_stats {
	uint64_t processes;      /* spools merged */
	uint64_t samples;        /* samples their handlers saw */
	uint64_t merged;         /* samples found in their tables */
	uint64_t dropped;
	uint64_t unknown;        /* samples outside any recorded image */
	uint64_t corrupt;        /* spools rejected as corrupt */
	uint64_t killed;         /* spools of processes that did not exit */
	uint64_t cpu_ns;         /* CPU time of the processes that exited */
	uint64_t by_event[UPCALL_EV_MAX];    /* samples per event */
	uint64_t by_backend[UPCALL_EV_MAX];  /* processes per trigger */
	uint64_t period_ns_sum;  /* sum of mean periods, for the average */
	/* Appended with value sampling; a stats file written before has a
	 * shorter section, and reads back with these zero. */
	uint64_t value_samples;  /* values offered in the processes */
	uint64_t values_dropped; /* ... lost: spools' shared value areas full */
	uint64_t values_bad;     /* hotlists skipped: damaged or half-written */
	uint64_t interp_runs;
	uint64_t interp_insns;
	uint64_t interp_stops[SPOOL_INTERP_STOPS];
	/* Appended with kernel time and JIT names (zero when read from an
	 * older, shorter section). */
	uint64_t cpu_user_ns;    /* user CPU of the processes with a split */
	uint64_t cpu_sys_ns;     /* ... and their system CPU */
	uint64_t split_processes;/* processes that recorded the split */
	uint64_t kernel_samples; /* sample-equivalents in [kernel] profiles */
	uint64_t jit_samples;    /* samples named from perf maps ([jit:EXE]) */
	uint64_t ring_fallbacks; /* threads whose ring could not be mapped */
	/* Appended with the bound on vprof's own cost: the
	 * spools' live counters of the same names, added. */
	uint64_t cost_ns;
	uint64_t limit_threads;
	uint64_t limit_lowerings;
	uint64_t limit_cpu_ns;
	uint64_t limit_samples;
	uint64_t limit_interp_threads;
	/* The CPU before sampling began ([start-up:EXE] rows). */
	uint64_t startup_samples;   /* sample-equivalents in [start-up] rows */
	uint64_t startup_cpu_ns;    /* the processes' CPU before arming */
	/* Appended with reserved spool space: samples lost because the
	 * database's filesystem gave a spool no room (live.nospace_dropped),
	 * and the spools whose writer stopped so: for want of room (ENOSPC)
	 * or another refusal. */
	uint64_t nospace_dropped;
	uint64_t nospace_spools;
	uint64_t room_failed_spools;
	/* Appended with the report of files set aside: profiles a merge found
	 * corrupt and moved aside (NAME.corrupt), and the samples their
	 * headers said they held, taken out of `merged` (and by_event,
	 * kernel_samples, startup_samples) so that the totals agree with the
	 * profiles left. */
	uint64_t aside_files;
	uint64_t aside_samples;
	/* The spools' live counters of the same names, added. */
	uint64_t sandbox_stopped;
	uint64_t sandbox_refused;
	uint64_t sandbox_unarmed;
	uint64_t kernel_cost_ns;
	uint64_t kernel_cost_samples;
	/* Appended with cache simulation: the processes that simulated caches
	 * and the sum of their geometries (live.cache_geom: one geometry an
	 * epoch is the sum over cache_procs), and the interpretation runs by
	 * length (live.run_bins), added. */
	uint64_t cache_procs;
	uint64_t cache_geom_sum[6];
	uint64_t run_bins[SPOOL_RUN_BINS];
	/* Appended with the value record log: the value samples that reached
	 * the merge through the spools' logs, and those their writers put in
	 * the thread tables because the log was full (a part of
	 * value_samples each). */
	uint64_t values_logged;
	uint64_t values_log_missed;
};
/* Size of struct merge_stats before the value fields: the least a stats
 * section may hold. */
#define MERGE_STATS_V1_SIZE (8 * (8 + 2 * UPCALL_EV_MAX + 1))

struct merge_profile_header {
	char magic[8];
	uint32_t version;
	uint32_t bom;
	uint32_t header_size;
	uint32_t nsections;
	uint64_t file_size;
	uint64_t checksum;       /* XXH64 of bytes [offsetof(checksum)+8, file_size) */
	uint32_t event;
	uint32_t build_id_len;
	uint8_t build_id[SPOOL_BUILD_ID_MAX];
	uint64_t total;          /* sum of counts in PCS */
	uint64_t flags;          /* MERGE_PROF_* */
	struct spool_section section[SPOOL_MAX_SECTIONS];
	char path[512];          /* image path as last recorded */
};
/* MERGE_PROF_JIT: "[jit:EXE]", samples in JIT code named by the process's
 * /tmp/perf-PID.map at merge time; a record's offset is the key
 * (merge_jit_key) of the name in the JITNAMES section. MERGE_PROF_KERNEL:
 * "[kernel:EXE]", one record at offset 0 whose count is the processes'
 * system CPU in sample-equivalents (docs/formats.md, "Kernel time"). */
/* MERGE_PROF_CODE: "[python:FILE]", the functions of one source file of
 * an interpreted language, offsets and names as merge/code.h says. */
enum { MERGE_PROF_UNKNOWN = 1, MERGE_PROF_STATS = 2, MERGE_PROF_JIT = 4, MERGE_PROF_KERNEL = 8,
       MERGE_PROF_CODE = 16 };

/* JITNAMES section: records { uint64_t key; uint32_t len; uint32_t zero;
 * char name[len]; zero padding to 8 bytes }, sorted by key, one per key;
 * key = XXH64(name, len, 0). */
#define MERGE_JIT_NAME_MAX 512
enum { MERGE_PROF_STACKS = 16 };   /* with the flags above */
/* An epoch's call stacks, DB/epochs/N/stacks.EVENT.stk: a profile file
 * (same header, flags MERGE_PROF_STACKS, total 0) whose one section is
 * STACKS: struct merge_stacks_file_head, nimages x struct
 * merge_stack_image, then nstacks records { uint64 count; uint32 depth;
 * uint32 0; uint64 frame[depth] } sorted and unique, frame =
 * MERGE_FRAME(image index, ELF offset), innermost first; image index
 * MERGE_FRAME_UNKNOWN holds an absolute PC. Named .stk so that readers
 * of *.prof before it never see it. */
#define MERGE_FRAME(img, off)  (((uint64_t)(img) << 48) | ((uint64_t)(off) & ((1ull << 48) - 1)))
#define MERGE_FRAME_IMG(f)     ((uint32_t)((f) >> 48))
#define MERGE_FRAME_OFF(f)     ((f) & ((1ull << 48) - 1))
#define MERGE_FRAME_UNKNOWN    0xffffu
struct merge_stacks_file_head { /* 64 bytes */
	uint32_t nimages;
	uint32_t depth;          /* largest depth asked by the processes */
	uint64_t nstacks;
	uint64_t samples;        /* sum of the records' counts */
	uint64_t dropped;        /* stacks lost (spool tables full) */
	uint64_t truncated;      /* stacks cut at the asked depth */
	uint8_t pad[24];
};
struct merge_stack_image {      /* 512 bytes */
	uint32_t build_id_len;
	uint8_t build_id[SPOOL_BUILD_ID_MAX];
	uint32_t pad;
	char path[472];
};

#endif
