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
#include "reports/table.h"

#include <stddef.h>
#include <stdint.h>

enum report_bucket_by { BUCKET_IMAGE, BUCKET_PROC, BUCKET_LINE, BUCKET_INSN };

struct report_bucket_source {
	char label[16];              /* "A", "B", "1", ... */
	const char *spec;            /* as given */
	char db[600];
	const char *epoch;           /* NULL: the database's current epoch */
	char epochbuf[32];
	struct report_model m;
	int loaded;
	uint64_t total;              /* samples of the chosen event */
};

struct report_bucket {
	const char *image;           /* path */
	const struct report_model_image *im;/* of the first source that has it */
	const char *proc;            /* NULL by image */
	const char *file;            /* by line; NULL when unknown */
	int line;
	uint64_t vaddr;              /* by instruction */
	uint64_t *count;             /* one per source */
};

struct report_bucket_set {
	struct report_bucket *v;
	size_t n;
	size_t nsrc;
	uint64_t *counts;            /* n x nsrc */
};

/* --by: 0, or 2 after a usage message. */
int report_bucket_parse_by(const char *cmd, const char *arg, enum report_bucket_by *by);
const char *report_bucket_by_name(enum report_bucket_by by);

/* Parse one source operand against the shared options (o->db, o->epoch).
 * 0, or 2 after a usage message. */
int report_bucket_source_parse(const char *cmd, const char *spec, const struct report_opts *o,
			       struct report_bucket_source *s);

/* Load every source and choose the event (ev > 0: that one; else the
 * first source's main event). Each problem (missing database, not a
 * database, missing epoch, no samples of the event) is one message on
 * stderr; returns 0, or the exit status (1 or 2). *evout set on 0. */
int report_bucket_sources_load(const char *cmd, struct report_bucket_source *s, size_t n, int ev,
			       enum report_bucket_by by, unsigned *evout);
void report_bucket_sources_free(struct report_bucket_source *s, size_t n);

/* Group the event's PCs of every source into buckets. */
void report_bucket_group(struct report_bucket_source *s, size_t n, unsigned ev, enum report_bucket_by by,
			 struct report_bucket_set *out);
void report_bucket_set_free(struct report_bucket_set *bs);

/* Warnings about sources that may not be comparable: the busiest image of
 * one source with no samples in another (different programs?), an image
 * path with different build-ids (rebuilt: instructions then do not
 * match), mean sampling periods more than 10% apart. Each is one line
 * (no newline) in out[], at most cap; returns how many. malloc'd. */
size_t report_bucket_warnings(struct report_bucket_source *s, size_t n, unsigned ev, enum report_bucket_by by,
			      char **out, size_t cap);

/* "DIR epoch N" for messages and headers. */
const char *report_bucket_source_name(const struct report_bucket_source *s, char *buf, size_t cap);

/* The bucket's name for a text table ("proc", "file:line  proc", "0x1234
 * proc", image path). */
const char *report_bucket_text(const struct report_bucket *b, enum report_bucket_by by, char *buf, size_t cap);

/* A bucket as table columns (table.h): in text its name and image after
 * the numbers (tpos 1); in JSON procedure, [file, line | pc,] image. Add
 * the columns where the JSON keys go; report_bucket_table_row gives their values. */
void report_bucket_table_cols(struct report_table *t, enum report_bucket_by by);
void report_bucket_table_row(struct report_table *t, const struct report_bucket *b, enum report_bucket_by by);

#endif
