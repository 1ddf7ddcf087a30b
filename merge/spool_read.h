/*
 * The spool reader (vprof command only; spool_read.c): a finished spool,
 * read into private memory and validated, and its traversals. The writer
 * and the format are in spool/.
 */
#ifndef VPROF_MERGE_SPOOL_READ_H
#define VPROF_MERGE_SPOOL_READ_H

#include "spool/spool.h"

/* Read PATH into private memory (by pread, data extents only: no
 * mapping of the file, so a hole a full filesystem cannot back reads as
 * zeros instead of raising SIGBUS) and validate magic, version, byte
 * order, checksum, layout and, where the writer kept them, the block
 * checks: each thread slot's and the shared table's sums, each image
 * record's check, the stacks' total. On failure returns negative errno
 * (-EBADMSG for corruption) and puts a reason in why. */
int merge_spool_open(struct spool *sp, const char *path, char *why, size_t whylen);
void merge_spool_close(struct spool *sp);

/* Visit every non-empty (key, count); stops early if fn returns non-zero.
 * Counts whose key is malformed are skipped and reported through *bad. */
typedef int merge_entry_fn(uint64_t key, uint64_t count, void *arg);
int merge_spool_foreach(const struct spool *sp, merge_entry_fn *fn, void *arg,
			uint64_t *bad);

/* Visit every hotlist of the VALUES section (the value record log's
 * records folded into one hotlist per key, then the thread tables, then
 * the shared area); several may share a key, and the caller merges them.
 * Damaged ones (spool_hot_check) and ones a killed writer left half-merged
 * are skipped and counted in *bad. Returns 0 at once on spools without
 * values. */
typedef int merge_hot_fn(const struct spool_hotlist *h, void *arg);
/* Values offered (spool_value): the header's count (values with no
 * slot) plus each thread table's own. */
uint64_t merge_spool_value_samples(const struct spool *sp);
int merge_spool_values(const struct spool *sp, merge_hot_fn *fn, void *arg, uint64_t *bad);
/* Value samples the value record log holds (records' n added, chunks
 * with a plausible count only), and those the thread tables took because
 * the log was full; 0 and 0 without a log. */
void merge_spool_vlog_counts(const struct spool *sp, uint64_t *logged, uint64_t *missed);

/* The run record of the spool file open on fd: 0 and *r filled, or -1
 * when it has none (or a damaged one). */
int merge_spool_run_read(int fd, struct spool_run *r);

#endif
