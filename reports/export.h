/*
 * export.h — writers that take the model (model.h) out of vprof: pprof's
 * profile.proto (gzipped), collapsed stacks for flame graphs, and JSON.
 * Each writes one event (see report_model_main_event). Nothing here is
 * async-signal-safe; one thread.
 */
#ifndef VPROF_REPORTS_EXPORT_H
#define VPROF_REPORTS_EXPORT_H

#include "reports/model.h"

#include <stdio.h>

/*
 * Write event ev of m to `path` as a gzip-compressed pprof Profile:
 * sample types samples/count and cpu/nanoseconds (count x mean period; for
 * PMU events, EVENT/count), one Location per sampled PC (address = ELF
 * virtual address, with its source line), one Function per procedure
 * (demangled name, symbol-table name, file and line of its first byte),
 * one Mapping per image (path, build-id). With recorded call stacks, one
 * Sample per distinct stack, its locations leaf first (return addresses
 * above the leaf), and locations for every frame. Returns 0, or -errno
 * after a message on stderr.
 */
struct report_value_model;
int report_export_pprof(const struct report_model *m, unsigned ev, const char *path,
			struct report_value_model *vm);

/* One call stack and its samples; frames[0] is the root (main). */
struct report_folded_stack {
	const char *const *frames;
	size_t depth;
	uint64_t count;
};

/* Write stacks as collapsed-stack lines "root;...;leaf COUNT" (the format
 * of flamegraph.pl, speedscope and Grafana). A ';' or newline inside a
 * frame name is written as ':' or ' ' so each line stays one stack. */
void report_folded_write(FILE *f, const struct report_folded_stack *v, size_t n);

/* Event ev of m in folded form: the recorded call stacks, one line per
 * distinct path "main;...;leaf COUNT" (report_stacks_foreach), when the
 * database has them (vprof run --stacks); else two frames per line,
 * "image;procedure" (the image's file name), one line per procedure. */
void report_export_folded(const struct report_model *m, unsigned ev, FILE *f);

/* The branch records (vprof run --branches) and PC samples of event ev
 * in the image that is `binary` (matched by build-id), as the text
 * profile AutoFDO's `create_llvm_prof --profiler=text` reads (ranges,
 * samples, branches; export_autofdo.c). Returns 0, or -errno after a
 * message on stderr. */
int report_export_autofdo(struct report_value_model *vm, unsigned ev, const char *binary, FILE *f);

/* The same branch records as an LLVM sample profile in text form
 * (llvm-profdata, clang -fprofile-sample-use), from binary's DWARF: counts
 * per source location (line offset from the function's first line, base
 * discriminator), inlined code under its call site, call targets
 * (export_llvm.c). Returns 0, or -errno after a message on stderr. */
int report_export_llvm_sample(struct report_value_model *vm, const char *binary, FILE *f);

/* The image of m that is `binary`: by build-id when both have one, else
 * by path; -1 after a message on stderr when none is. */
long report_export_image_of(const struct report_model *m, const char *binary);

/* The whole model as JSON (schema in docs/commands.md, "vprof export"). */
void report_export_json(const struct report_model *m, FILE *f);

#endif
