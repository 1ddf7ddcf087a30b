/*
 * The vprof command: one table from subcommand name to cmd_<name>(), as
 * perf's builtin table. Each subcommand lives in reports/cmd_<name>.c.
 */
#include "reports/builtin.h"
#include "reports/report.h"
#include "reports/value_model.h"
#include "reports/html.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
};

static void usage(FILE *f);

static const struct command kCommands[] = {
	{ "run", cmd_run, "run a command under the profiler, then merge its samples" },
	{ "merge", cmd_merge, "fold finished spools into the database (their runs' epochs)" },
	{ "report", cmd_report, "procedures (or images, or source lines) by samples" },
	{ "list", cmd_list, "annotated disassembly of a procedure with samples and value hotlists" },
	{ "invariants", cmd_invariants, "semi-invariant values (per call site too) worth specializing for" },
	{ "latency", cmd_latency, "loads by estimated stall, with their latency distributions" },
	{ "targets", cmd_targets, "indirect-branch targets summed over every jump site (dispatch histograms)" },
	{ "branches", cmd_branches, "which way each conditional branch went, from vprof run --branches" },
	{ "memory", cmd_memory, "data-cache misses per procedure or line, from vprof run --cachesim" },
	{ "hazards", cmd_hazards, "store-forwarding failures and 4K aliasing, from vprof run --hazards" },
	{ "calibrate", cmd_calibrate, "measure this machine's load-latency levels for latency labels" },
	{ "diff", cmd_diff, "differential profile of two runs (McKenney): ratio, difference, saturation" },
	{ "stats", cmd_stats, "how much each procedure varies across runs (dcpistats)" },
	{ "export", cmd_export, "write the profile as pprof, folded stacks or JSON" },
	{ "html", cmd_html, "write a self-contained HTML page: flame graph, procedures, annotated code" },
	{ "verify", cmd_verify, "run a command checking the interpreter against the CPU (co-simulation)" },
	{ "coverage", cmd_coverage, "run a command and measure how much of it the interpreter handles" },
	{ "epoch", cmd_epoch, "show the current epoch, list epochs, or start a new one" },
	{ "help", cmd_help, "print a command's help: vprof help CMD" },
};
#define NCOMMANDS (sizeof(kCommands) / sizeof(kCommands[0]))

/* vprof help CMD: the command's own -h text, so the two never differ. */
int cmd_help(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "--help")) {
		usage(stdout);
		return report_finish_stdout(0);
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		if (strcmp(argv[1], kCommands[i].name) || kCommands[i].fn == cmd_help)
			continue;
		char *args[] = { argv[1], "-h", NULL };
		return kCommands[i].fn(2, args);
	}
	fprintf(stderr, "vprof help: unknown command '%s'\n", argv[1]);
	return 2;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: vprof COMMAND [ARGS]\n\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-10s %s\n", kCommands[i].name, kCommands[i].help);
	fprintf(f, "\nEvery command takes --db DIR (default $VPROF_DB, else ./vprof.db) "
		   "and -h for its options (vprof help CMD prints the same).\n");
}

int main(int argc, char **argv)
{
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], kCommands[i].name))
			return kCommands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "vprof: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
