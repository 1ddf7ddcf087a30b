/* interp/internal.h — glue between the files of interp/ (not for users).
 * Everything here is AS-safe unless marked otherwise. */
#ifndef VPROF_INTERP_INTERNAL_H
#define VPROF_INTERP_INTERNAL_H

#include "interp/interp.h"

/* Not AS-safe (run by interp_init). */
int interp_decode_init(void);
int interp_xsave_init(void);
int interp_dispatch_init(void);

/* Handler for a decoded instruction, or NULL (unsupported). */
interp_handler *interp_dispatch_lookup(const struct interp_insn *in);
/* Fill st->fs_base/gs_base from the running thread. */
void interp_load_segbases(struct interp_state *st);

static inline uint64_t interp_rdtscp(void)
{
	unsigned lo, hi, aux;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	return ((uint64_t)hi << 32) | lo;
}

/* Does this instruction carry a LOCK prefix? */
static inline int interp_locked(const struct interp_insn *in)
{
	return (in->attrib & ZYDIS_ATTRIB_HAS_LOCK) != 0;
}

/* Write the stores buffered so far (string ops between iterations). */
void interp_commit_stores(struct interp_exec *x);

/* Shorthand for handler files. */
#define ST (x->st)
#define IN (x->in)
#define OPS(i) (x->in->op[i].size)

#endif
