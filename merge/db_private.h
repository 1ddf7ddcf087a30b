/*
 * What the database's files share inside merge/ (db.c: layout and
 * epochs; attribute.c: a spool's samples to profiles; journal.c: the
 * crash-safe commit). Nothing outside merge/ includes this. Not
 * async-signal-safe.
 */
#ifndef VPROF_MERGE_DB_PRIVATE_H
#define VPROF_MERGE_DB_PRIVATE_H

#include "merge/profile.h"
#include "merge/stacks.h"
#include "spool/spool.h"

#include <stdio.h>
#include <sys/types.h>

/* ---- db.c ---- */

/* Is dir an existing directory? */
int merge_db_epoch_exists(const char *dir);
/* A run's ledger's file name in its epoch: "run-ID.stats". */
void merge_db_ledger_name(uint64_t run_id, char *out, size_t cap);

/* ---- journal.c ---- */

/* A step a killed merge must survive (the test knobs act here). */
void merge_journal_step(void);
/* Remove a directory of plain files, and the files. */
void merge_journal_rmdir(const char *dir);

/* ---- attribute.c ---- */

/* The profiles of one merge, by image and event, and its call stacks. */
struct merge_accum {
	struct merge_profile *p;
	size_t n, cap;
	struct merge_stacks stacks[UPCALL_EV_MAX];   /* call stacks, by event */
};

/* One line per merged process, appended to DB/epochs/N/processes.tsv. */
struct merge_proclog {
	char *buf;
	size_t n, cap;
};

/* Read the spool at path and add its samples, values and stacks to acc,
 * its counters to *st, its line to *pl. 0, or negative errno with the
 * reason in why (-ENOMEM; a spool that cannot be read or is corrupt). */
int merge_attribute(const char *path, struct merge_accum *acc, struct merge_stats *st,
		    struct merge_proclog *pl, char *why, size_t whylen, FILE *errf);

#endif
