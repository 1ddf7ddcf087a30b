/*
 * Call stacks in the merge: the reader of a spool's STACKS section (the
 * handler writes it with `vprof run --stacks`: spool/spool.h) and an
 * epoch's stacks file, stacks.EVENT.stk (formats in spool/format.h and
 * profile_format.h).
 *
 * merge_stacks_from_spool() turns every frame into (image, ELF offset)
 * with the spool's image records, as counts are, so stacks of processes
 * with other load addresses (ASLR) merge; stacks are keyed by their
 * frames and summed: merging is associative and commutative. Not
 * async-signal-safe.
 */
#ifndef VPROF_MERGE_STACKS_H
#define VPROF_MERGE_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include "merge/profile_format.h"

struct spool;

/* Reader: every READY entry of a spool's STACKS (0 at once without one);
 * entries left BUSY (a kill mid-write), malformed, or whose frames do not
 * give their hash count in *bad. */
typedef int merge_stack_fn(const struct spool_stack_entry *e, void *arg);
int merge_spool_stacks(const struct spool *sp, merge_stack_fn *fn, void *arg, uint64_t *bad);
/* The block check of a spool's STACKS: 0 when the entries' counts and the
 * stacks dropped add up to no more than the samples offered, else -1. */
int merge_stacks_check_counts(const struct spool *sp);

/* ---- an epoch's stacks, in memory ---- */

struct merge_stack_rec {
	uint64_t count;
	uint32_t depth;
	size_t at;               /* first frame in frames[] */
};

struct merge_stacks {
	struct merge_stack_image *img;
	size_t nimg, capimg;
	struct merge_stack_rec *rec;
	size_t n, cap;
	uint64_t *frames;        /* MERGE_FRAME(image, offset), innermost first */
	size_t nfr, capfr;
	uint64_t samples, dropped, truncated;
	uint32_t depth;
};

void merge_stacks_init(struct merge_stacks *s);
void merge_stacks_free(struct merge_stacks *s);
/* Index of the image (by build-id, else path), added if new; -1: no memory. */
long merge_stacks_image(struct merge_stacks *s, const uint8_t *build_id, uint32_t len,
			const char *path);
int merge_stacks_add(struct merge_stacks *s, const uint64_t *frames, uint32_t depth, uint64_t count);
void merge_stacks_compact(struct merge_stacks *s);
int merge_stacks_merge(struct merge_stacks *a, const struct merge_stacks *b);

/* Add a spool's stacks: frames located in images (the spool's MAP records,
 * nim of them) by the rule of the PC counts. Returns 0 or -ENOMEM; stacks
 * lost in the spool add to s->dropped, entries skipped to *bad. */
struct spool_image_record;
int merge_stacks_from_spool(struct merge_stacks *s, const struct spool *sp,
			    const struct spool_image_record *im, size_t nim, uint64_t *bad);

/* "stacks.EVENT.stk" */
void merge_stacks_name(unsigned event, char *out, size_t cap);
int merge_stacks_read(const char *path, struct merge_stacks *s, char *why, size_t whylen);
int merge_stacks_write(const char *path, const struct merge_stacks *s, unsigned event);

#endif
