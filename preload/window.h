/*
 * The interpreted window of a value sample, and the consumers that read
 * it. window.c drives; each consumer is a file of its own and keeps its
 * per-window state in the struct below, none reaching into another's.
 *
 * A value sample interprets the thread onward from the interrupted
 * context: a window of at most K + R instructions (K = VPROF_INTERP_LEN,
 * the instructions whose operands are recorded, default 4; R =
 * VPROF_INTERP_REACH, how much further it may run, default 64). The
 * driver keeps what every consumer needs to know about where the run is:
 * the call depth relative to the sampled procedure, the call site the
 * code now running was called from (followed through calls and returns
 * inside the window), and whether the run came back around to where it
 * started (a loop closed: the start PC, in the starting frame, once at
 * least K instructions ran and, if the window met a load, it has timed
 * one: operands.c does not time the first), which ends the window.
 * Consumers see each instruction once it has committed, in order, then
 * the end:
 *
 *   operands.c  result, sources, address and load latency of K
 *               instructions: the K that led back to the start when the
 *               loop closed (an interrupt lands after the instruction
 *               that cost the time, so those are where the sample's time
 *               went), none before a branch that decided the way back;
 *               else the window's first K; indirect branch targets,
 *               wherever they are in the window
 *   args.c      the argument registers of each call the window enters,
 *               as the callee first reads them, per call site
 *   branches.c  where branches went (indirect targets; with --branches,
 *               outcomes, taken branches and ranges)
 *   cachesim.c  each data reference through simulated caches (with
 *               --cachesim: long windows, MemSpy's trace samples)
 *   hazards.c   loads against the stores still in flight: store
 *               forwarding that fails, 4K aliasing (with --hazards)
 *
 * A customization module (module.c) replaces both, on a window of exactly
 * VPROF_INTERP_LEN instructions (its documented contract).
 *
 * Everything here runs in the sample handler: async-signal-safe, no
 * malloc, no locks, bounded stack; the state is the thread's own (mapped
 * at its first value sample, value_sample.c).
 */
#ifndef VPROF_PRELOAD_WINDOW_H
#define VPROF_PRELOAD_WINDOW_H

#include "interp/interp.h"
#include <stdint.h>

#define WINDOW_SITES 16        /* call sites remembered through nested calls */

/* What operands.c keeps of one instruction until the window ends. */
struct preload_operands_insn {
	uint64_t pc, site;
	uint64_t val[4];               /* result, src1, src2, address */
	uint64_t lat, lat_addr;        /* its timed load: binned latency, address */
	uint8_t have;                  /* bit i: val[i] present; bit 4: lat */
	uint8_t stack;                 /* bit i: val[i] is a stack address */
};

struct preload_operands_state {
	struct preload_operands_insn *first, *last;   /* keep entries each */
	int keep;                      /* VPROF_INTERP_LEN: instructions recorded */
	int nfirst, nlast;             /* last[] is a ring: nlast counts all */
	int lat_skip;                  /* the window's first load is not timed */
	int lat_wait;                  /* a load was met and none timed yet */
	int last_branch;               /* note index of the last data-dependent branch, -1 */
};

struct preload_args_state {
	uint64_t call_pc;              /* the call being followed */
	uint64_t entry;                /* the callee's entry; 0 while in stubs */
	uint32_t pending;              /* bit a: argument a not read nor written yet */
	int left;                      /* callee instructions still looked at */
};

/* branches.c's records of one window, counted before they reach the
 * thread's hotlists: a 4096-instruction window runs round its loops and
 * repeats the same few branches and ranges hundreds of times. */
#define WINDOW_BRANCH_RECS 256
struct preload_branch_rec {
	uint64_t pc, value;
	uint32_t kind, n;
};

struct preload_window {
	uint64_t start_pc, start_rsp;
	uint64_t stack_lo, stack_hi;   /* the thread's stack */
	uint64_t site;                 /* return address of the code now running, 0 unknown */
	uint64_t sites[WINDOW_SITES];  /* the callers' sites, by depth */
	/* The frames: at depth d > 0 (calls inside the window) the callee's
	 * frame top (its CFA) and entry; the sampled frame's top (0 unknown)
	 * and its caller's return address. cachesim.c names stack objects by
	 * them. */
	uint64_t frame_top[WINDOW_SITES], frame_entry[WINDOW_SITES];
	uint64_t start_cfa, start_site;
	int depth;                     /* calls minus returns since the start */
	int n;                         /* instructions committed so far */
	int closed;                    /* the loop closed: the window ended there */
	uint64_t *rng;                 /* the thread's xorshift state, for hotlists */
	int operands;                  /* record operands and arguments (--values) */
	int branches;                  /* record branches: outcomes, ranges, taken (--branches) */
	int no_close;                  /* run the whole length: no end where the loop closes */
	int cachesim;                  /* simulate caches (--cachesim) */
	struct preload_cachesim *cs;   /* cachesim.c's state, the thread's; NULL until its first window */
	int hazards;                   /* find memory-order hazards (--hazards) */
	struct preload_hazards *hz;    /* hazards.c's state, the thread's; NULL until its first window */
	uint64_t range_start;          /* the last taken branch's target, 0 before the first */
	struct preload_operands_state ops;
	struct preload_args_state args;
	/* last: its pages are touched only by windows that record branches */
	struct preload_branch_rec br[WINDOW_BRANCH_RECS];
};

/* Run a window from st (the sampled procedure's return address: site,
 * and its frame's CFA: cfa, 0 unknown) of at most keep + reach
 * instructions, through every
 * consumer; w->ops.first/last hold keep entries each.
 * Returns the instructions executed; res as interp_run's; w->closed says
 * whether it ended where it started. */
int preload_window_run(struct preload_window *w, struct interp_state *st, struct interp_thread *th, int keep,
		       int reach, uint64_t site, uint64_t cfa, struct interp_result *res);

/* A hotlist value sample of the window: kind at pc (absolute) with aux,
 * into the thread's slot of the spool the sample entered. */
void preload_window_put(struct preload_window *w, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux);
/* The same, n times at once. */
void preload_window_put_n(struct preload_window *w, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux,
			  uint32_t n);

/* Is v an address in the sampled thread's stack (a frame, not data)? */
static inline int preload_window_is_stack(const struct preload_window *w, uint64_t v)
{
	return v >= w->stack_lo && v < w->stack_hi;
}

/* A conditional branch: which way it goes depends on data (jcc, jrcxz,
 * loop). */
static inline int preload_window_is_cond_branch(const struct interp_insn *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JL: case ZYDIS_MNEMONIC_JLE:
	case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE: case ZYDIS_MNEMONIC_JNL:
	case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO: case ZYDIS_MNEMONIC_JNP:
	case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ: case ZYDIS_MNEMONIC_JO:
	case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
		return 1;
	default:
		return 0;
	}
}

/* An indirect call or jump (its target is a register or memory). */
static inline int preload_window_is_indirect(const struct interp_insn *in)
{
	return (in->mnemonic == ZYDIS_MNEMONIC_CALL || in->mnemonic == ZYDIS_MNEMONIC_JMP) && in->nvis &&
	       in->op[0].type != INTERP_OP_IMM;
}

/* branches.c: where branches went. Every indirect call or jump's target
 * (SPOOL_VK_TARGET), and with w->branches each conditional branch's
 * outcome (SPOOL_VK_BRANCH: 1 taken, 0 fell through), each taken branch
 * (SPOOL_VK_TAKEN) and each range run straight through between two taken
 * branches (SPOOL_VK_RANGE); the instruction the sample landed on is not
 * recorded (see branches.c). */
void preload_branches_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r);
/* The window's branch records out to the hotlists, at its end. */
void preload_branches_end(struct preload_window *w);

/* cachesim.c: _begin maps the thread's simulated caches at its first
 * window and starts a generation; _end writes the window's counts;
 * _free unmaps them (thread exit). */
struct preload_cachesim;
void preload_cachesim_begin(struct preload_window *w);
void preload_cachesim_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r);
void preload_cachesim_end(struct preload_window *w);
void preload_cachesim_free(struct preload_window *w);

/* hazards.c: as cachesim.c's, for memory-order hazards. */
struct preload_hazards;
void preload_hazards_begin(struct preload_window *w);
void preload_hazards_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r);
void preload_hazards_end(struct preload_window *w);
void preload_hazards_free(struct preload_window *w);

/* operands.c */
void preload_operands_begin(struct preload_window *w);
void preload_operands_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r);
void preload_operands_end(struct preload_window *w);

/* args.c. _insn sees r before the driver moves depth and site for r's
 * call or return. */
void preload_args_begin(struct preload_window *w);
void preload_args_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r);

#endif
