/*
 * buckets.h — several profiles side by side, for `vprof diff` (McKenney's
 * differential profiling) and `vprof stats` (dcpistats). A "source" is one
 * database epoch named on the command line; every source is loaded into
 * its own model (model.h), and the sampled PCs of one event are grouped
 * into buckets (image, procedure, source line or instruction) matched
 * across sources by name: image path, demangled procedure, file:line, and
 * for instructions also the image's build-id and the ELF address.
 *
 * Source syntax (docs/commands.md, "vprof diff"):
 *   DIR       the database DIR, epoch --epoch N|all (default: its current)
 *   DIR@N     epoch N (or all) of DIR
 *   @N        epoch N (or all) of the --db database ($VPROF_DB, ./vprof.db)
 *
 * Nothing here is async-signal-safe; the vprof command is one thread.
 */
#ifndef VPROF_REPORTS_BUCKETS_H
#define VPROF_REPORTS_BUCKETS_H

#include "reports/model.h"
#include "reports/report.h"

#include <stddef.h>
#include <stdint.h>

enum bucket_by { BUCKET_IMAGE, BUCKET_PROC, BUCKET_LINE, BUCKET_INSN };

struct bucket_source {
	char label[16];              /* "A", "B", "1", ... */
	const char *spec;            /* as given */
	char db[600];
	const char *epoch;           /* NULL: the database's current epoch */
	char epochbuf[32];
	struct report_model m;
	int loaded;
	uint64_t total;              /* samples of the chosen event */
};

struct bucket {
	const char *image;           /* path */
	const struct model_image *im;/* of the first source that has it */
	const char *proc;            /* NULL by image */
	const char *file;            /* by line; NULL when unknown */
	int line;
	uint64_t vaddr;              /* by instruction */
	uint64_t *count;             /* one per source */
};

struct bucket_set {
	struct bucket *v;
	size_t n;
	size_t nsrc;
	uint64_t *counts;            /* n x nsrc */
};

/* --by: 0, or 2 after a usage message. */
int bucket_parse_by(const char *cmd, const char *arg, enum bucket_by *by);
const char *bucket_by_name(enum bucket_by by);

/* Parse one source operand against the shared options (o->db, o->epoch).
 * 0, or 2 after a usage message. */
int bucket_source_parse(const char *cmd, const char *spec, const struct report_opts *o,
			struct bucket_source *s);

/* Load every source and choose the event (ev > 0: that one; else the
 * first source's main event). Each problem (missing database, not a
 * database, missing epoch, no samples of the event) is one message on
 * stderr; returns 0, or the exit status (1 or 2). *evout set on 0. */
int bucket_sources_load(const char *cmd, struct bucket_source *s, size_t n, int ev,
			enum bucket_by by, unsigned *evout);
void bucket_sources_free(struct bucket_source *s, size_t n);

/* Group the event's PCs of every source into buckets. */
void bucket_group(struct bucket_source *s, size_t n, unsigned ev, enum bucket_by by,
		  struct bucket_set *out);
void bucket_set_free(struct bucket_set *bs);

/* Warnings about sources that may not be comparable: the busiest image of
 * one source with no samples in another (different programs?), an image
 * path with different build-ids (rebuilt: instructions then do not
 * match), mean sampling periods more than 10% apart. Each is one line
 * (no newline) in out[], at most cap; returns how many. malloc'd. */
size_t bucket_warnings(struct bucket_source *s, size_t n, unsigned ev, enum bucket_by by,
		       char **out, size_t cap);

/* "DIR epoch N" for messages and headers. */
const char *bucket_source_name(const struct bucket_source *s, char *buf, size_t cap);

/* The bucket's name for a text table ("proc", "file:line  proc", "0x1234
 * proc", image path) and its JSON fields (no braces, trailing comma). */
const char *bucket_text(const struct bucket *b, enum bucket_by by, char *buf, size_t cap);
void bucket_json_fields(FILE *f, const struct bucket *b, enum bucket_by by);

#endif
