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

/* Flush stdout and turn a write error (full disk, closed pipe) into a
 * message and exit status 1, as perf does. */
int report_finish_stdout(int rc);

#endif
