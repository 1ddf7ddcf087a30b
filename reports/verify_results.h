/*
 * Reading co-simulation result files (preload/verify_format.h) for
 * `vprof verify` and `vprof coverage`, and launching a command with
 * co-simulation on. Not async-signal-safe; the vprof command only.
 */
#ifndef VPROF_VERIFY_RESULTS_H
#define VPROF_VERIFY_RESULTS_H

#include <stdio.h>
#include "preload/verify_format.h"

struct verify_rec_ex {
	struct verify_record r;
	int pid;
	char exe[256];
};

struct verify_sum {
	int files, bad_files;
	uint32_t interp_len;
	struct verify_file tot;          /* counters summed (rec[] unused) */
	struct verify_rec_ex *recs;      /* mismatch records of every file */
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
struct verify_opts {
	const char *db, *freq, *out;
	int json;
	char **cmd;
};
int verify_parse_opts(const char *name, int argc, char **argv, void (*help)(void),
		      struct verify_opts *o);

int verify_launch(const char *db, const char *freq, char **argv, char *tag, size_t taglen);

/* Sum DB/verify/TAG.*.vfy. Returns 0 or negative errno. */
int verify_collect(const char *db, const char *tag, struct verify_sum *s);
void verify_sum_free(struct verify_sum *s);

/* Coverage as defined in `vprof coverage -h`: interpreted / (interpreted
 * + runs stopped on an unhandled instruction); 1.0 when nothing ran. */
double verify_coverage(const struct verify_file *t);
double verify_first_coverage(const struct verify_file *t);

/* Top unhandled (unsupported/decode/badstate) mnemonics, most frequent
 * first: fills up to n (mnemonic, stop, count) triples, returns how many. */
struct verify_top { unsigned mnemonic, stop; uint64_t count; };
size_t verify_top_unhandled(const struct verify_file *t, struct verify_top *out, size_t n);

/* Print "  stop reasons: limit N, ..." etc. */
void verify_print_stops(FILE *f, const struct verify_file *t);
void verify_json_stops(FILE *f, const struct verify_file *t);
void verify_json_top(FILE *f, const struct verify_top *top, size_t n);

/* Zydis name of a mnemonic, "(undecoded)" for 0. */
const char *verify_mnem_name(unsigned m);

#endif
