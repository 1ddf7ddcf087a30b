/*
 * stack_model.h — the call stacks of a database (`vprof run --stacks`) as the
 * reports see them: every recorded stack of the epoch(s) a model was
 * loaded from, each frame resolved to the model's image and a procedure.
 *
 * report_stacks_foreach() is THE folded-path iteration: every distinct
 * root-to-leaf path of procedure names with its samples, summing to the
 * samples that got a stack. The folded export, the pprof export, the
 * inclusive/exclusive columns, --callers/--callees and the HTML flame
 * graph are all built on this data. Not async-signal-safe; one thread.
 */
#ifndef VPROF_REPORTS_STACKS_H
#define VPROF_REPORTS_STACKS_H

#include "reports/model.h"

#include <stddef.h>
#include <stdint.h>

/* One frame: the model's image, the ELF address (the sampled PC for the
 * leaf, a return address above it) and the procedure's name (interned
 * here: equal names are equal pointers). */
struct report_frame {
	uint32_t image;          /* index into model.images */
	uint64_t vaddr;
	const char *proc;        /* demangled; "[libc.so.6]" without a symbol */
	const char *sysname;     /* symbol-table name (proc when none) */
};

struct report_stack {
	unsigned event;
	uint64_t count;
	uint32_t depth;
	size_t at;               /* frames[at .. at+depth), leaf first */
};

/* One procedure's inclusive samples under one event. */
struct report_incl {
	unsigned event;
	uint32_t image;          /* model image index */
	const char *proc;
	uint64_t count;
};

struct report_stacks {
	struct report_stack *v;
	size_t n, cap;
	struct report_frame *frames;
	size_t nfr, capfr;
	uint64_t total[UPCALL_EV_MAX];       /* samples with a stack */
	uint64_t dropped[UPCALL_EV_MAX];     /* stacks lost (spool tables full) */
	uint64_t truncated[UPCALL_EV_MAX];   /* stacks cut at the depth asked */
	uint32_t depth;                     /* largest depth asked */
	struct report_incl *incl;           /* inclusive counts, made at load,
					     * sorted by (event, image, proc) */
	size_t nincl;
	struct stack_intern *names;
	size_t nnames, capnames;
};

/* Load the stacks of the epoch(s) m was loaded from (m->epoch, m->event):
 * frames symbolized with m's images (images are added to m as needed).
 * Returns 0 (s->n == 0 when the database has none). */
int report_stacks_load(struct report_stacks *s, struct report_model *m);
void report_stacks_free(struct report_stacks *s);

/* Every distinct folded path of event ev, root first (frames[0] is the
 * outermost procedure, frames[depth-1] the sampled one), with its samples,
 * in a stable order (by names). Stops when fn returns non-zero, and
 * returns that. */
typedef int report_stack_fn(const char *const *frames, size_t depth, uint64_t count, void *arg);
int report_stacks_foreach(const struct report_stacks *s, unsigned ev, report_stack_fn *fn, void *arg);

/* Samples of event ev whose stack holds procedure proc of image (a model
 * image index) at least once: its inclusive time. */
uint64_t report_stacks_inclusive(const struct report_stacks *s, unsigned ev, uint32_t image,
				 const char *proc);

/* The callers (dir -1: the frame just outside each occurrence of proc)
 * or callees (dir +1: the frame just inside; "[self]" where proc was the
 * sampled frame) of proc under event ev, each with the samples of the
 * stacks it shares with proc (counted once per stack), largest first;
 * *incl gets proc's inclusive samples. malloc'd array of *n. Matches
 * proc by name in any image. */
struct report_neighbour {
	const char *proc;
	uint32_t image;
	uint64_t count;
};
struct report_neighbour *report_stacks_neighbours(const struct report_stacks *s, unsigned ev,
						  const char *proc, int dir, size_t *n,
						  uint64_t *incl);

#endif

/* `vprof report --callers F` / `--callees F` (dir -1 / +1): F's callers or
 * callees per event with their inclusive shares of F's samples, as text
 * or JSON, at most limit rows (0: all). F is a name as report_names_pick
 * (report.h) takes it, among the procedures on the stacks. Returns the
 * exit status: 0, or 1 after a message when the database has no stacks,
 * none holds a procedure F names, or F names several (listed). */
int report_print_neighbours(struct report_model *m, const char *proc, int dir, int json,
			    long limit);

/* The line `vprof report` prints about stacks: samples with a stack,
 * dropped, truncated; nothing without stacks. */
void report_stacks_print_summary(const struct report_stacks *s, FILE *f);
