/*
 * list.h — what `vprof list` shares with `vprof html` (cmd_html.c): one
 * procedure's instructions decoded from its image file (Zydis, Intel
 * syntax) and the value hotlists at an address. Defined in cmd_list.c.
 * Nothing here is async-signal-safe; one thread.
 */
#ifndef VPROF_REPORTS_LIST_H
#define VPROF_REPORTS_LIST_H

#include "reports/value_model.h"

/* A procedure to list: its image, extent, name and samples of the event. */
struct report_target {
	uint32_t image;
	uint64_t start, size;
	const char *proc;
	uint64_t samples;
};

struct report_insn {
	uint64_t vaddr;
	char text[96];
	int len;
	int ends_block;            /* a branch or return: the next instruction starts a block */
};

/* Decode [t->start, t->start + t->size) from the image file (only while
 * its build-id matches the profile); without the bytes, one entry per
 * address with samples or values, text "?...". *out is malloc'd; returns
 * the count. */
size_t report_list_disassemble(struct report_value_model *vm, const struct report_target *t, struct report_insn **out);

/* Executions per instruction of in[0, n) from the branch records (vprof
 * run --branches): each range run straight through between two taken
 * branches counts once for every instruction in it. Relative counts, summed
 * over windows. With windows, also (malloc'd) how many windows at least
 * ran each instruction: the most of any one range over it (0: unknown, a
 * profile older than the count). NULL when the image has no records. */
double *report_list_executions(const struct report_value_model *vm, const struct report_target *t,
			       const struct report_insn *in, size_t n, double **windows);

/* vprof report --by block (blocks.c): its table, from the options
 * report parsed; the command's exit status. */
int report_blocks(const struct report_opts *o);

/* The hotlists at (image, vaddr): vm->hot[*lo, return). */
size_t report_list_hot_range(const struct report_value_model *vm, uint32_t image, uint64_t vaddr, size_t *lo);

#endif
