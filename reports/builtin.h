/*
 * The vprof subcommands, one cmd_<name>(argc, argv) each, defined in
 * reports/cmd_<name>.c (cmd_help in vprof.c, which holds the command
 * table), as perf's builtin.h. Each returns the command's exit status.
 * Not async-signal-safe; the vprof command is single-threaded.
 */
#ifndef VPROF_REPORTS_BUILTIN_H
#define VPROF_REPORTS_BUILTIN_H

int cmd_run(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_list(int argc, char **argv);
int cmd_invariants(int argc, char **argv);
int cmd_latency(int argc, char **argv);
int cmd_targets(int argc, char **argv);
int cmd_branches(int argc, char **argv);
int cmd_memory(int argc, char **argv);
int cmd_hazards(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_stats(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_html(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_coverage(int argc, char **argv);
int cmd_epoch(int argc, char **argv);
int cmd_help(int argc, char **argv);

#endif
