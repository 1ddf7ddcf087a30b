/*
 * Interpreted code in the merge: the frames of functions of an
 * interpreted language (CPython 3.11) that the handler recorded as
 * SPOOL_CODE_FRAME(entry, line) (spool/format.h, "Interpreted code"),
 * named by the spool's code table and kept in "[python:FILE]" profiles
 * (MERGE_PROF_CODE), one per source file.
 *
 * Keying: such a frame's offset in its profile is (function key << 20 |
 * line), the function key being the top 28 bits of merge_jit_key(its
 * qualified name), and the profile's JITNAMES section holds the names
 * (merge/jit.h): sorted by their full key, the names are found by the top
 * bits. Processes of one program, and runs, merge by file, name and line.
 *
 * Not async-signal-safe; single-threaded (the vprof command).
 */
#ifndef VPROF_MERGE_CODE_H
#define VPROF_MERGE_CODE_H

#include <stddef.h>
#include <stdint.h>
#include "merge/profile.h"
#include "spool/spool.h"

#define MERGE_CODE_LINE_BITS 20
#define MERGE_CODE_LINE(off)  ((uint32_t)((off) & ((1u << MERGE_CODE_LINE_BITS) - 1)))
#define MERGE_CODE_PREFIX "[python:"
#define MERGE_CODE_PREFIX_LUA "[lua:"

/* A function's offset at line (lines past 2^20 - 1 are kept as that). */
uint64_t merge_code_offset(const char *name, uint32_t line);
/* The name of the function at offset in a MERGE_PROF_CODE profile, or NULL. */
const char *merge_code_name(const struct merge_profile *p, uint64_t offset);
/* The function key (offset >> MERGE_CODE_LINE_BITS) of a name whose
 * JITNAMES key (merge_jit_key) is jit_key. */
uint64_t merge_code_fkey(uint64_t jit_key);
/* The FILE of an interpreted-code image's path ("[python:FILE]",
 * "[lua:FILE]") into out, and 1; 0 (out untouched) for any other path. */
int merge_code_file(const char *path, char *out, size_t cap);
/* The spool's entry of a code frame pc (SPOOL_CODE_IS), checked; NULL if
 * the spool has none or it fails its check. */
const struct spool_code_entry *merge_code_entry(const struct spool *sp, uint64_t pc);
/* The profile path of an entry's file: "[python:FILE]" or "[lua:FILE]". */
void merge_code_path(const struct spool_code_entry *e, char *out, size_t cap);
/* Calls fn for each checked entry of the spool's table. */
int merge_code_foreach(const struct spool *sp,
		       int (*fn)(const struct spool_code_entry *e, void *arg), void *arg);

#endif
