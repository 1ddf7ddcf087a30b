/* interp/shadow.h — a store-buffer ("shadow") mode for the interpreter.
 *
 * What it owns: while a thread has a shadow installed, every access the
 * interpreter makes to program memory through mem.c (interp_mem_load,
 * interp_mem_store, interp_mem_cas; instruction fetch included) is
 * redirected here: loads read the real memory and then see, on top of it,
 * the bytes the shadow run has stored so far; stores and compare-and-swaps
 * are appended to a log and never written. Write permission is still
 * probed on the real pages (interp_mem_wprobe changes no byte), so a store
 * that would fault stops the run exactly as it does outside the shadow.
 *
 * Workload: co-simulation (preload/verify.c): one shadow run of up to a few
 * hundred instructions per sample, then a native single-step of the same
 * instructions compared against the log. Stores are few per instruction,
 * so the log is a flat array scanned on each load; contiguous stores of one
 * instruction (REP MOVS/STOS) are merged into one entry.
 *
 * Concurrency: the shadow is per thread (initial-exec TLS pointer). All
 * functions are AS-safe: no locks, no allocation; the caller provides the
 * memory.
 */
#ifndef VPROF_INTERP_SHADOW_H
#define VPROF_INTERP_SHADOW_H

#include <stddef.h>
#include <stdint.h>

#define INTERP_SHADOW_ENTRIES 1024
#define INTERP_SHADOW_BYTES   (64 * 1024)
#define INTERP_SHADOW_LOADS   4096

struct interp_shadow_entry {
	uint64_t addr;
	uint32_t size, off;        /* bytes at data[off .. off+size) */
};

struct interp_shadow {
	uint32_t n, used;          /* entries, data bytes in use */
	uint32_t floor;            /* entries below it belong to earlier
				    * instructions: never merged into */
	uint32_t overflow;         /* a store did not fit: the run is invalid
				    * from the instruction that made it on */
	struct interp_shadow_entry e[INTERP_SHADOW_ENTRIES];
	uint8_t data[INTERP_SHADOW_BYTES];
	/* Loads as read from real memory (before the log was laid over
	 * them), so that a later check can tell whether memory changed under
	 * the run (another thread): nld entries, ld_full if some were lost. */
	uint32_t nld, ldused, ld_full, pad;
	struct interp_shadow_entry ld[INTERP_SHADOW_LOADS];
	uint8_t lddata[INTERP_SHADOW_BYTES];
};

/* The calling thread's shadow, or NULL (normal mode: real memory). */
extern __thread struct interp_shadow *interp_shadow_cur
	__attribute__((tls_model("initial-exec")));

/* Empty sh and make it the calling thread's shadow. AS-safe. */
void interp_shadow_begin(struct interp_shadow *sh);
/* Back to real memory (the log stays readable in sh). AS-safe. */
void interp_shadow_end(void);
/* Mark the log position where the next instruction's stores start. */
static inline void interp_shadow_mark(struct interp_shadow *sh)
{
	sh->floor = sh->n;
}

/* Called by mem.c while a shadow is installed (same contracts as the
 * interp_mem_* functions they stand for). AS-safe. */
int interp_shadow_load(struct interp_shadow *sh, void *dst, uint64_t src, size_t n);
int interp_shadow_store(struct interp_shadow *sh, uint64_t dst, const void *src, size_t n);
/* Has real memory changed under the first nld loads of the run, other
 * than at bytes the first nst log entries store to? With ro_only, only
 * bytes the calling thread cannot write count (read-only pages: a change
 * there is the kernel's or another process's, never this thread's).
 * 1 yes, 0 no, -1 cannot tell (load log full). AS-safe. */
int interp_shadow_raced(const struct interp_shadow *sh, uint32_t nld, uint32_t nst, int ro_only);
/* Are the bytes that loads [ld_lo, ld_hi) of the run saw still what
 * real memory holds, given that the stores in log entries [0, st_hi) have
 * been made for real since (by the hardware executing the same
 * instructions)? Checked just before the hardware executes the
 * instruction those loads belong to: 1 if some byte differs (someone else
 * wrote it), 0 if not. AS-safe. */
int interp_shadow_inputs_changed(const struct interp_shadow *sh, uint32_t ld_lo, uint32_t ld_hi,
				 uint32_t st_hi);
int interp_shadow_cas(struct interp_shadow *sh, uint64_t addr, void *expect,
		      const void *desired, unsigned size);

#endif
