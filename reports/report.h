/*
 * What the vprof subcommands share: the command table entry type, common
 * option handling, and JSON output helpers. Commands are thin; the data
 * model lives in merge/, symbols in reports/symbolize.c.
 *
 * Nothing here is async-signal-safe; the vprof command is single-threaded.
 */
#ifndef VPROF_REPORT_H
#define VPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>

int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_epoch(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_coverage(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_help(int argc, char **argv);

/*
 * Options the commands that read a database share. A command names which
 * it takes (REPORT_OPT_* bits) and may add its own through `extra` (its
 * getopt_long entries; their short letters must not be one of d E e j n h)
 * and `on_extra`, called with each such option's letter and argument and
 * returning 0, or non-zero after report_usage() to stop.
 *
 *   --db DIR     (-d)   database; o->db is resolved with report_db_path()
 *   --epoch N|all (-E)  epoch to read (NULL: the current one)
 *   --event E    (-e)   only this event (0: all)
 *   --json       (-j)   output as JSON
 *   -n ROWS, --limit    rows to show (0: all)
 *   -h, --help          print `help` on stdout
 */
enum {
	REPORT_OPT_DB = 1,
	REPORT_OPT_EPOCH = 2,
	REPORT_OPT_EVENT = 4,
	REPORT_OPT_JSON = 8,
	REPORT_OPT_LIMIT = 16,
};

struct report_opts {
	const char *db;
	const char *epoch;
	int event;
	int json;
	long limit;          /* preset by the caller to its default */
	int next;            /* argv index of the first operand */
};

struct option;
struct report_cmd {
	const char *name;
	const char *help;    /* the whole -h text */
	unsigned common;     /* REPORT_OPT_* */
	const struct option *extra;
	const char *extra_short;
	int (*on_extra)(int ch, const char *arg, void *ctx);
};

/* Parse argv. Returns -1 to go on; else the status the command should
 * return at once (0 after -h, 2 after a usage message). */
int report_opts_parse(const struct report_cmd *cmd, int argc, char **argv,
		      struct report_opts *o, void *ctx);

/* The database named by --db, else $VPROF_DB, else ./vprof.db. */
const char *report_db_path(const char *opt);

/* Write s as a JSON string literal (with quotes). */
void report_json_str(FILE *f, const char *s);

/* Usage error: one message naming the command, exit status 2. */
int report_usage(const char *cmd, const char *msg);

/* End as a child did: return its exit status, or, if it was killed by a
 * signal, flush our output and die of the same signal (no core of ours).
 * For `vprof run`, `verify`, `coverage`: the profiled command's status is
 * the user's. */
int report_exit_like(int status);
/* reports/selflimit.c: "vprof's cost over its bound: ..." into out
 * when the bound on vprof's cost lowered any rate; returns 1 then, else 0
 * and "". max_cost: the bound, in percent, if known (else 0). */
struct merge_stats;
int report_selflimit_line(const struct merge_stats *s, int max_cost, char *out, size_t cap);
/* reports/sandbox.c: the same for threads a seccomp sandbox stopped. */
int report_sandbox_line(const struct merge_stats *s, char *out, size_t cap);

/* Flush stdout and turn a write error (full disk, closed pipe) into a
 * message and exit status 1, as perf does. */
int report_finish_stdout(int rc);

#endif
