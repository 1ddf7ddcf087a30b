/*
 * Reading co-simulation result files (preload/verify_format.h) for
 * `vprof verify` and `vprof coverage`, and launching a command with
 * co-simulation on. Not async-signal-safe; the vprof command only.
 */
#ifndef VPROF_VERIFY_RESULTS_H
#define VPROF_VERIFY_RESULTS_H

#include <stdio.h>
#include "preload/verify_format.h"

struct report_verify_rec_ex {
	struct preload_verify_record r;
	int pid;
	char exe[256];
};

struct report_verify_sum {
	int files, bad_files;
	uint32_t interp_len;
	struct preload_verify_file tot;          /* counters summed (rec[] unused) */
	struct report_verify_rec_ex *recs;      /* mismatch records of every file */
	size_t nrecs;
};

/* Run CMD (argv, NULL-terminated) as `vprof run --db DB [--freq HZ] --`
 * does, with VPROF_VERIFY=1 and the given extra environment already set by
 * the caller, under a fresh tag (written to tag). Returns CMD's wait
 * status (as from waitpid), or -1 if it could not be started. */
/* Options vprof verify and vprof coverage share: --db --len --freq --json
 * -o/--output -h. Sets VPROF_INTERP_LEN from --len. Returns -1 when the
 * command should go on (o filled, o->cmd the command to run), else the
 * status to return: 0 after -h, 2 on a usage error. */
struct report_verify_opts {
	const char *db, *freq, *out;
	int json;
	char **cmd;
};
int report_verify_parse_opts(const char *name, int argc, char **argv, void (*help)(void),
			     struct report_verify_opts *o);

int report_verify_launch(const char *db, const char *freq, char **argv, char *tag, size_t taglen);

/* Sum DB/verify/TAG.*.vfy. Returns 0 or negative errno. */
int report_verify_collect(const char *db, const char *tag, struct report_verify_sum *s);
void report_verify_sum_free(struct report_verify_sum *s);

/* Coverage as defined in `vprof coverage -h`: interpreted / (interpreted
 * + runs stopped on an unhandled instruction); 1.0 when nothing ran. */
double report_verify_coverage(const struct preload_verify_file *t);
double report_verify_first_coverage(const struct preload_verify_file *t);

/* Top unhandled (unsupported/decode/badstate) mnemonics, most frequent
 * first: fills up to n (mnemonic, stop, count) triples, returns how many. */
struct report_verify_top { unsigned mnemonic, stop; uint64_t count; };
size_t report_verify_top_unhandled(const struct preload_verify_file *t, struct report_verify_top *out, size_t n);

/* Print "  stop reasons: limit N, ..." etc. */
void report_verify_print_stops(FILE *f, const struct preload_verify_file *t);
void report_verify_json_stops(FILE *f, const struct preload_verify_file *t);
void report_verify_json_top(FILE *f, const struct report_verify_top *top, size_t n);

/* Zydis name of a mnemonic, "(undecoded)" for 0. */
const char *report_verify_mnem_name(unsigned m);

#endif
