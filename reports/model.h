/*
 * model.h — the profile as the report-side commands see it: every sampled
 * PC of the chosen epoch(s), each resolved once to its image, procedure
 * (demangled), and, when asked, source file and line. `vprof report`
 * groups these records into rows; `vprof export` writes them out whole.
 *
 * Strings in the model (procedure, system name, file, image path) are
 * interned: equal strings are the same pointer, and all stay valid until
 * report_model_free(). Nothing here is async-signal-safe; one thread.
 */
#ifndef VPROF_REPORTS_MODEL_H
#define VPROF_REPORTS_MODEL_H

#include "merge/profile.h"

#include <stddef.h>
#include <stdint.h>

struct report_image;

/* One image of the profile (one per build-id, or per path without one). */
struct report_model_image {
	const char *path;               /* "[unknown]" for PCs outside images */
	uint8_t build_id[SPOOL_BUILD_ID_MAX];
	uint32_t build_id_len;
	uint64_t max_vaddr;             /* highest sampled address, for mappings */
	struct report_image *sym;       /* NULL: no symbols */
	/* Interpreted code ("[python:FILE]", merge/code.h): code_file set,
	 * and the names of its functions by key (offset >>
	 * MERGE_CODE_LINE_BITS), interned. */
	const char *code_file;          /* FILE, interned; NULL: not such an image */
	struct report_code_name { uint64_t key; const char *name; } *code;
	size_t ncode, capcode;
};

/* The name of the function of an interpreted-code image at vaddr, or NULL. */
const char *report_model_code_name(const struct report_model_image *im, uint64_t vaddr);

/* One line of an interpreted function: its samples under one event (the
 * function ran it), and for callers that add them, its inclusive ones. */
struct report_code_line {
	uint32_t line;
	uint64_t samples, inclusive;
};
struct report_model;
/* The sampled lines of event ev of the interpreted function whose key
 * (offset >> MERGE_CODE_LINE_BITS) is key in image, in line order, into
 * *out (malloc'd, NULL when none); returns their number. */
size_t report_model_code_lines(const struct report_model *m, unsigned ev, uint32_t image, uint64_t key,
			       struct report_code_line **out);

/* One sampled PC under one event. */
struct report_model_pc {
	unsigned event;
	uint32_t image;                 /* index into model.images */
	uint64_t vaddr;                 /* ELF virtual address in that image */
	uint64_t count;
	const char *proc;               /* demangled; "[no symbol]", "[unknown]" */
	const char *sysname;            /* as in the symbol table (mangled) */
	uint64_t proc_start;            /* vaddr of the procedure's first byte */
	const char *file;               /* NULL unless lines asked and known */
	int line;
	const char *proc_file;          /* file and line of proc_start, likewise */
	int proc_line;
};

struct report_model {
	struct report_model_image *images;
	size_t nimages, capimages;
	struct report_model_pc *pcs;
	size_t npcs, cappcs;
	struct merge_stats stats;       /* summed over the epochs loaded */
	uint64_t total[UPCALL_EV_MAX];   /* samples per event in pcs */
	uint64_t present[UPCALL_EV_MAX]; /* per event in the epoch(s), before --event */
	char epoch[32];                 /* "3" or "all" */
	const char *db;
	int event;                      /* only this event (0: all) */
	int lines;                      /* resolve file:line too */
	const char *cmd;                /* for messages: "report", "export" */
	/* Files of the epoch(s) not in the model: set aside by a merge
	 * (NAME.corrupt; spools of any epoch), or skipped now as corrupt,
	 * "PATH (why)". stats.merged is less what skipped profiles' headers
	 * say they held (those set aside were taken out by the merge), so
	 * that it agrees with the tables. */
	char **bad;
	size_t nbad, capbad;
	uint64_t skipped_samples;       /* what skipped profiles' headers say */
	struct intern *strings;
	size_t nstrings, capstrings;
};

/*
 * Load epoch `epoch` (NULL: the current one; "all": every epoch) of the
 * database at `db` and resolve every PC. Images without symbols are named
 * once on stderr. Returns 0; or 1 after one message on stderr when the
 * database cannot be opened (or is not one), has no epoch `epoch`, or has
 * no samples of `event` (the message names the epochs or events it has);
 * or 2 after a usage message for a bad epoch.
 */
int report_model_load(struct report_model *m, const char *db, const char *epoch, int event,
		      int lines, const char *cmd);
void report_model_free(struct report_model *m);

/* The mean sampling period in ns over the processes merged (0: unknown). */
uint64_t report_model_period_ns(const struct report_model *m);

/* The model's image for profile p (matched by build-id, else path), added
 * with its symbols opened if new; an index into m->images. */
uint32_t report_model_image(struct report_model *m, const struct merge_profile *p);

/* Is the image one whose rows are not samples: [kernel:EXE] (the system
 * CPU processes recorded) or [start-up:EXE] (their CPU before sampling
 * began), each in sample-equivalents at the sampling rate? */
int report_image_unsampled(const char *path);

/* The samples of event ev in m, leaving out those unsampled rows. */
uint64_t report_model_sampled(const struct report_model *m, unsigned ev);

/* The indices of the PCs of event ev, grouped by image then procedure
 * (then address): each (image, procedure) is one run. malloc'd; *n set. */
size_t *report_model_by_proc(const struct report_model *m, unsigned ev, size_t *n);

/* The event an export writes: ev if given, else the one with most samples
 * (0 when there are none). */
unsigned report_model_main_event(const struct report_model *m, int ev);

/* v with room for element n (of size bytes): doubled (first 64) when
 * n reaches *cap; exits after a message when memory runs out. */
void *report_grow(void *v, size_t *cap, size_t n, size_t size);

/* Is ev measured in ns of CPU (clocks), rather than counted events? */
int report_event_is_clock(unsigned ev);

#endif
