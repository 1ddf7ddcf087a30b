/*
 * invariants.h — the ranking behind `vprof invariants` (and any view
 * that shows its answer, such as `vprof html`): every value hotlist of a
 * value model (value_model.h) turned into candidates that a person could
 * specialize for, each classified (values_class.c: data, or a constant,
 * a frame address, a position, which are hidden unless asked), typed,
 * named (callee, parameter in source order, call site by file:line in
 * the caller's image), weighted by the time at stake, ranked, and given
 * one English sentence.
 *
 * Candidates, one per:
 *   operand    the top value of an instruction's result, source operand,
 *              address or stride; per call site for the @site kinds;
 *   argument   the top value of a procedure argument at one call site,
 *              per callee (the arg.* kinds: key = the call);
 *   size       the same for the size argument (rdx) of memcpy, memmove,
 *              memset, memcmp, bcmp and strncmp;
 *   target     the top target of an indirect call or jump.
 *
 * Weight = time x share. The share is the top value's estimated count
 * over the value samples it is of (the site's, the callee's), with a 95%
 * interval. The time is that of the code that depends on the value: for
 * an operand, its source line's PC samples (the interrupt lands after
 * the instruction that took the time, on the same line); for an argument
 * or a call's target, the callee's inclusive time from that call site:
 * from recorded stacks (`vprof run --stacks`: the samples whose stack
 * holds the call's return address) when the database has them, else
 * estimated from the return-address hotlists (each procedure's time,
 * with its callees', split among the call sites its samples returned
 * to, one level at a time, as gprof splits time among callers).
 *
 * The interface is stable: `vprof html` builds its view on it. Strings
 * in rows live until report_value_model_free() of the model ranked.
 * Single-threaded, nothing async-signal-safe.
 */
#ifndef VPROF_REPORTS_INVARIANTS_H
#define VPROF_REPORTS_INVARIANTS_H

#include "reports/value_model.h"

enum report_inv_what {
	INV_OPERAND = 0,
	INV_ARGUMENT,
	INV_SIZE,
	INV_TARGET,
};
const char *report_inv_what_name(enum report_inv_what w);   /* "operand", "argument", "size", "target" */

struct report_inv_row {
	enum report_inv_what what;
	enum report_value_class cls;
	const char *why;                /* why not data ("loaded from .rodata"); "" for data */
	const struct report_value_hot *v;      /* the hotlist (the first, when kinds were merged) */
	int e;                          /* its entry */
	const char *kinds;              /* kind names: "src2@site", "src1, result" */
	uint64_t value;
	const char *value_type;         /* "double", "int32", "pointer", "code address", ... */
	const char *report_value_text;         /* typed: "2.0", "3 (0x3)", "&table+0x10" */
	double share;                   /* of the value samples it is of, 0..1 */
	double share_lo, share_hi;      /* its 95% interval (Wilson) */
	double n;                       /* the estimated value samples the share is of */
	double time;                    /* time share of the code that depends on it */
	double weight;                  /* time x share */
	int time_from_stacks;           /* time from recorded stacks, not estimated */
	struct report_value_where at;          /* the instruction (for arguments and targets: the call) */
	const char *insn;               /* its text (Intel syntax), NULL without the image */
	int site_known;                 /* the call site was resolved */
	struct report_value_where site;        /* the call site: of the @site kinds, or the call itself */
	/* Arguments and targets */
	const char *callee;             /* as the program names it ("pow", "memcpy"), NULL */
	const char *callee_impl;        /* the implementation, when it differs
					 * ("__memmove_avx_unaligned_erms"), NULL */
	uint32_t callee_image;
	const char *params;             /* the callee's parameter names, "x, y", NULL */
	int argno;                      /* 1-based, source order; 0 unknown */
	const char *param;              /* its name, NULL */
	const char *param_type;         /* its C type, NULL */
	const char *reg;                /* the register it arrives in ("xmm1"), NULL */
	const char *sentence;           /* the suggestion, one line */
	uint32_t site_image;            /* the call instruction of the site, where */
	uint64_t site_vaddr;            /* site_known (0: not found) */
	uint64_t callee_entry;          /* arguments: the callee's entry in callee_image */
};

struct report_inv_opts {
	double min_share;               /* of the top value (0.5) */
	double min_time;                /* of the code at stake (0.005) */
	uint64_t min_vtot;              /* value samples a candidate needs (20) */
	int all;                        /* keep constants, frames, positions */
};

struct report_inv_result {
	struct report_inv_row *rows;           /* largest weight first */
	size_t n;
	size_t hidden[VALUE_NCLASS];    /* rows above the thresholds left out, by class */
	size_t skipped;                 /* hotlists or sites under min_vtot */
	size_t considered;              /* hotlists looked at */
	double covered;                 /* share of the samples with enough value samples behind them */
	int stacks;                     /* arguments' times from recorded stacks */
};

/* Rank the candidates of vm. Returns 0 (exits after a message when
 * memory runs out). */
int report_inv_rank(struct report_value_model *vm, const struct report_inv_opts *op, struct report_inv_result *r);
void report_inv_result_free(struct report_inv_result *r);

/* "98%" or "100% (86-100%)": a share with its interval when that is
 * wider than 2 points or the share rounds to 100%. */
const char *report_inv_share_text(const struct report_inv_row *row, char *buf, size_t cap);

#endif
