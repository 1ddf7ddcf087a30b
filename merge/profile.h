/*
 * Per-image profiles in memory and on disk (format in format.h), and the
 * profile database: DB/spool/ for live spools, DB/epochs/N/ for merged
 * profiles, DB/epochs/CURRENT naming the epoch merges go to, DB/lock taken
 * exclusively for the whole of a merge so concurrent merges serialize and
 * lose no update.
 *
 * Nothing here is async-signal-safe: these run in the vprof command (and in
 * the library only at start-up, to make the spool directory).
 */
#ifndef VPROF_MERGE_PROFILE_H
#define VPROF_MERGE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "merge/profile_format.h"
#include "spool/hotlist.h"

struct merge_profile {
	uint32_t event;
	uint32_t flags;                  /* MERGE_PROF_* */
	uint32_t build_id_len;
	uint8_t build_id[SPOOL_BUILD_ID_MAX];
	char path[512];
	struct merge_pc_record *pcs;     /* sorted and unique after compact */
	size_t n, cap;
	uint64_t total;
	struct merge_stats stats;        /* MERGE_PROF_STATS only */
	/* Value hotlists, key SPOOL_HOT_KEY(kind, offset as in pcs): sorted
	 * by key and unique after compact. */
	struct spool_hotlist *hot;
	size_t nhot, hotcap;
	/* MERGE_PROF_JIT only: the names its offsets stand for (merge/jit.h),
	 * sorted by key and unique after compact. */
	struct merge_jit_name *jit;
	size_t njit, jitcap;
	char *jit_arena;
	size_t jit_len, jit_arena_cap;
};

void merge_profile_init(struct merge_profile *p);
void merge_profile_free(struct merge_profile *p);
int merge_profile_add(struct merge_profile *p, uint64_t offset, uint64_t count);
/* Append a hotlist (its key already in this profile's terms); hotlists
 * with equal keys are merged by compact. */
int merge_profile_hot_add(struct merge_profile *p, const struct spool_hotlist *h);
void merge_profile_compact(struct merge_profile *p);
/* Add b into a (same image and event). */
int merge_profile_merge(struct merge_profile *a, const struct merge_profile *b);
void merge_stats_add(struct merge_stats *a, const struct merge_stats *b);

/* File name (no directory) of the profile for this image and event. */
void merge_profile_name(const struct merge_profile *p, char *out, size_t cap);

/* Read a profile file. -EBADMSG with a reason in why if it is corrupt. */
int merge_profile_read(const char *path, struct merge_profile *p, char *why, size_t whylen);
/* A file in the profile format (profiles, an epoch's stacks file) read
 * whole into *buf (malloc'd, the caller frees it) with its header checked:
 * magic, byte order, version, size, checksum, section count and every
 * section's bounds. 0, or negative errno with the reason in why. */
struct merge_profile_header;
int merge_profile_file_read(const char *path, uint8_t **buf, struct merge_profile_header *h,
			    char *why, size_t whylen);
/* The header of a profile file, read without checking more than its
 * magic, byte order, version and event: for what a corrupt file said it
 * held. 0, or -1. */
int merge_profile_peek(const char *path, struct merge_profile_header *h);
/* Write whole to path via a temporary file and rename. */
int merge_profile_write(const char *path, const struct merge_profile *p);

/* The 30-bit identity of an image in cross-image code addresses
 * (SPOOL_HOT_XREF, hotlist.h): a hash of its build-id, or of its path
 * when it has none. Profiles of the same image give the same identity. */
uint32_t merge_profile_xref_id(const uint8_t *build_id, uint32_t build_id_len, const char *path);

/* ---- database ---- */

struct merge_db {
	char root[512];
	int lockfd;
};

/* Open (and with create, make) a database at root. Directories are 0700:
 * value profiles can hold secrets. Without create, a directory that is not
 * a database (neither epochs/ nor spool/) is refused with -ENOENT and
 * nothing is written into it. Returns 0 or negative errno, with the
 * reason in why. */
int merge_db_open(struct merge_db *db, const char *root, int create, char *why, size_t whylen);
void merge_db_close(struct merge_db *db);
int merge_db_lock(struct merge_db *db);        /* exclusive, blocking */
void merge_db_unlock(struct merge_db *db);
int merge_db_epoch(struct merge_db *db);       /* current epoch number (>= 1) */
int merge_db_epoch_new(struct merge_db *db);   /* start the next; returns it */
/* Every epoch number present, ascending; returns the count. */
int merge_db_epochs(struct merge_db *db, int *out, int cap);
void merge_db_epoch_dir(struct merge_db *db, int epoch, char *out, size_t cap);

/* What one merge did. */
struct merge_result {
	struct merge_stats stats;        /* this merge's spools only */
	int spools_busy;                 /* skipped: owner still running */
	int profiles_written;
	int profiles_corrupt;            /* existing profiles moved aside */
	int spools;                      /* spools consumed (a rotating process leaves several) */
	int epochs;                      /* epochs written (runs' spools go to their own) */
	struct merge_stats run;          /* merge_db_merge_run: that run's spools read */
};

/* Fold every finished spool into an epoch: the one its run record names
 * (the epoch its `vprof run` chose, merge_db_run_begin) if that still
 * exists, else the current one; one crash-safe commit per epoch. Each
 * run's share is added to its ledger in that epoch (merge_db_run_end).
 * Corrupt spools are renamed to NAME.corrupt (kept for inspection) and
 * reported on err. */
int merge_db_merge(struct merge_db *db, struct merge_result *res, FILE *err);
/* The same, with res->run the stats of the spools of run run_id it read,
 * whether or not their epoch's commit then succeeded (a full disk). */
int merge_db_merge_run(struct merge_db *db, uint64_t run_id, struct merge_result *res, FILE *err);

/* A `vprof run`'s place in the database. Under the lock: with add, the
 * current epoch; else the current epoch if nothing is in it yet, or a new
 * one. Its ledger (DB/epochs/N/run-ID.stats, a stats file in the profile
 * format) is made there at once: it claims the epoch, so that a run
 * started meanwhile takes another, and merges add the run's processes to
 * it. Returns the epoch, or negative errno; *fresh is set when no data was
 * in it before (a new or empty epoch). */
int merge_db_run_begin(struct merge_db *db, uint64_t run_id, int add, int *fresh);
/* The run's ledger in epoch e, read into *st (zero if none) and removed,
 * under the lock: what every merge so far took of the run's processes,
 * whoever ran it. 0, or negative errno. */
int merge_db_run_end(struct merge_db *db, int e, uint64_t run_id, struct merge_stats *st);

/* Fold ready-made profiles (image and unknown profiles, and one with
 * MERGE_PROF_STATS) and processes.tsv lines (text, may be empty) into the
 * current epoch, crash-safe as a merge: staged, committed by one rename,
 * applied (vprof merge --from). Profiles are compacted in place. stacks:
 * UPCALL_EV_MAX call-stack sets by event (merge/stacks.h), or NULL. */
struct merge_stacks;
int merge_db_fold(struct merge_db *db, struct merge_profile *p, size_t n, const char *proclines,
		  size_t len, struct merge_stacks *stacks, struct merge_result *res, FILE *err);

/* Delete epoch e (never the current one) under the database lock: renamed
 * to epochs/.drop.E first (one rename: it is gone or whole), then emptied;
 * leftovers of a killed drop are removed first. -EBUSY for the current
 * epoch, or while a committed merge waits to be applied. */
int merge_db_epoch_drop(struct merge_db *db, int e);

/* Load every profile of an epoch (0: current). Calls fn for each; corrupt
 * files are reported on err and skipped. */
typedef int merge_profile_fn(const struct merge_profile *p, void *arg);
int merge_db_load(struct merge_db *db, int epoch, merge_profile_fn *fn, void *arg, FILE *err);
/* The same, also calling skipped(path, why, arg) for each file skipped as
 * corrupt. */
typedef void merge_path_fn(const char *path, const char *why, void *arg);
int merge_db_load_ex(struct merge_db *db, int epoch, merge_profile_fn *fn, merge_path_fn *skipped,
		     void *arg, FILE *err);
/* Visit the files merges set aside as corrupt (NAME.corrupt, kept for
 * inspection) in epoch e (0: the current one), or with e < 0 the spools
 * set aside (DB/spool, whichever epoch they were for); why is "set
 * aside". */
int merge_db_aside(struct merge_db *db, int epoch, merge_path_fn *fn, void *arg);

#endif
