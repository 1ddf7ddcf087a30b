/*
 * JIT code: naming samples in anonymous executable memory from the
 * /tmp/perf-PID.map files JITs write (V8/Node.js --perf-basic-prof, CPython
 * 3.12 -X perf, JVM agents such as perf-map-agent), read by `vprof merge`
 * while they still exist, and the names kept in [jit:EXE] profiles.
 *
 * A perf map is text, one symbol a line: "START SIZE NAME", START and SIZE
 * in hex with or without 0x, NAME the rest of the line. It is not ours and
 * may be anything: bad lines are skipped and counted, names longer than
 * MERGE_JIT_NAME_MAX are cut, reading stops at MERGE_PERFMAP_MAX_BYTES or
 * MERGE_PERFMAP_MAX_SYMS, and one warning line says so. Where ranges
 * overlap (a JIT reusing memory), the later line wins: the code last put
 * there.
 *
 * Keying: JIT code has no build-id and its addresses mean nothing outside
 * the process, so a sample is keyed by its symbol's name: the profile
 * "[jit:EXE]" (EXE the process's executable's base name) holds records
 * whose offset is merge_jit_key(name), and a JITNAMES section maps keys
 * back to names. Processes of one program merge by name.
 *
 * Not async-signal-safe; single-threaded (the vprof command).
 */
#ifndef VPROF_MERGE_JIT_H
#define VPROF_MERGE_JIT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "merge/profile.h"

#define MERGE_PERFMAP_MAX_BYTES (512ull << 20)
#define MERGE_PERFMAP_MAX_SYMS (4u << 20)

struct merge_perfmap_sym {
	uint64_t start, end;     /* [start, end) */
	uint64_t maxend;         /* max end over this and all before (sorted) */
	uint32_t name;           /* offset in names */
	uint32_t seq;            /* line order: later wins on overlap */
};

struct merge_perfmap {
	struct merge_perfmap_sym *v;
	size_t n, cap;
	char *names;
	size_t names_len, names_cap;
	/* What was wrong, for the one warning. */
	uint64_t lines, bad, cut;
	uint64_t first_bad;      /* line number of the first bad line */
	const char *first_why;   /* and why (static string) */
	int stopped;             /* 1: size or symbol cap reached */
	int oom;
	/* Streaming state (merge_perfmap_feed). */
	char *carry;
	size_t ncarry;
	int skipping;            /* inside an overlong line */
};

void merge_perfmap_init(struct merge_perfmap *m);
void merge_perfmap_free(struct merge_perfmap *m);
/* Parse n more bytes of a map (any split); final: no more will come (an
 * unterminated last line is counted bad: its writer may be mid-line). */
void merge_perfmap_feed(struct merge_perfmap *m, const char *buf, size_t n, int final);
/* Sort for lookups; call once after the last feed. */
void merge_perfmap_finish(struct merge_perfmap *m);
/* The name of the symbol covering pc (the latest line's), or NULL. */
const char *merge_perfmap_lookup(const struct merge_perfmap *m, uint64_t pc);
/* Read the map at path through fd-sized reads of chunk bytes (0: 1 MiB):
 * 0 read (m ready for lookups), negative errno (-ENOENT: no map). The file
 * must be a regular file owned by this user (O_NOFOLLOW); not_before (s
 * since the epoch, 0: any) rejects a map older than the process (-ESTALE:
 * an earlier process with that pid left it). */
int merge_perfmap_load(struct merge_perfmap *m, const char *path, int64_t not_before,
		       size_t chunk);
/* The one warning line about a loaded map's defects, if it had any. */
void merge_perfmap_warn(const struct merge_perfmap *m, const char *path, FILE *errf);

/* ---- names of a [jit:EXE] profile ---- */

struct merge_jit_name {
	uint64_t key;
	uint32_t off, len;       /* in the profile's jit_arena */
};

uint64_t merge_jit_key(const char *name, size_t len);
/* Record name under its key (duplicates are folded by compact). */
int merge_jit_add(struct merge_profile *p, const char *name, size_t len);
void merge_jit_compact(struct merge_profile *p);
void merge_jit_free(struct merge_profile *p);
/* The name of key (after compact), NUL-terminated, or NULL. */
const char *merge_jit_name(const struct merge_profile *p, uint64_t key);
/* The JITNAMES section of p: malloc'd bytes, size in *n (NULL, *n 0 when
 * p has no names; NULL, *n 1 when out of memory). */
void *merge_jit_encode(const struct merge_profile *p, size_t *n);
/* Read a JITNAMES section into p. 0, or -EBADMSG with why set. */
int merge_jit_decode(struct merge_profile *p, const uint8_t *b, size_t n, const char **why);

#endif
