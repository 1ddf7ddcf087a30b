/*
 * The database's store of images: a copy of every image a merge gave
 * samples, hotlists or stack frames, kept by build-id, so that a profile
 * stays named after its program is rebuilt, upgraded or deleted (perf's
 * build-id cache, ~/.debug, does the same job).
 *
 *   DB/images/.build-id/xx/rest         the image (xx: the build-id's first
 *                                       byte in hex, rest: the others)
 *   DB/images/.build-id/xx/rest.debug   its separate debug file, when one
 *                                       was found by build-id
 *
 * The layout is that of /usr/lib/debug and debuginfod's cache, so the
 * report side reads DB/images as one more debug root, and gdb's
 * debug-file-directory or $VPROF_DEBUG_DIRS can point at it too. An
 * entry is a hard link where the database and the image share a file
 * system (no space used while the original exists), else a copy; it is
 * made once per build-id and checked against its build-id whenever a
 * merge meets the image again. Images without a build-id, or whose file
 * already has another build-id when the merge runs, are not kept.
 *
 * Not async-signal-safe: called by a merge, under the database lock.
 */
#ifndef VPROF_MERGE_IMAGES_H
#define VPROF_MERGE_IMAGES_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MERGE_IMAGES_DIR "images"   /* under the database root */

struct merge_profile;
struct merge_stacks;

/* Keep the images of profiles p[0..n) and of stacks[0..UPCALL_EV_MAX)
 * (NULL: none) in the store of the database at root. Failures (a full
 * disk) are said once on errf and lose nothing but the copy. */
void merge_images_keep(const char *root, const struct merge_profile *p, size_t n,
		       const struct merge_stacks *stacks, FILE *errf);

#endif
