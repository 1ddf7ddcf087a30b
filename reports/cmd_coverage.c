/*
 * vprof coverage [--db DIR] [--len N] [--freq HZ] [--json] [-o FILE] -- CMD:
 * how much of what CMD executes the interpreter can handle. Runs CMD with
 * shadow-only co-simulation (VPROF_VERIFY=1 VPROF_VERIFY_STEP=0: the
 * interpreter runs from each sample without writing anything, the
 * hardware is not stepped) and reports coverage and the instructions the
 * interpreter stopped on, most frequent first. Report on stderr or FILE;
 * exit status CMD's.
 */
#include "reports/builtin.h"
#include "reports/report.h"
#include "reports/verify_results.h"
#include "interp/interp.h"

#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void help(void)
{
	printf("usage: vprof coverage [--db DIR] [--len N] [--freq HZ] [--json] [-o FILE] -- CMD [ARGS]\n"
	       "  --len N      L, instructions the interpreter attempts per sample (default 64)\n"
	       "  --freq HZ    samples per CPU-second (default 1000)\n"
	       "  --json       the report as one JSON object\n"
	       "  -o FILE      write the report to FILE instead of stderr\n"
	       "At each sample the interpreter runs from the sampled instruction until it\n"
	       "has run L instructions or stops before one. It stops on an *unhandled*\n"
	       "instruction (no exact semantics, undecodable, or needing state it lacks)\n"
	       "or, by design, on a system call or an access that would fault (left to\n"
	       "the kernel and the program). Over all samples, with I the instructions\n"
	       "interpreted and U the runs that stopped on an unhandled instruction:\n"
	       "  coverage = I / (I + U)\n"
	       "the fraction of the sampled instruction executions the interpreter met\n"
	       "that it handled (runs ended by the limit, a system call or a fault end\n"
	       "without an unhandled instruction). Also shown: first-instruction\n"
	       "coverage, the fraction of samples whose sampled instruction itself was\n"
	       "handled, among those handled or unhandled (a time-weighted estimate).\n"
	       "Exit status: CMD's.\n");
}

int cmd_coverage(int argc, char **argv)
{
	struct report_verify_opts o;
	int rc = report_verify_parse_opts("coverage", argc, argv, help, &o);
	if (rc >= 0)
		return rc;
	const char *dbopt = o.db, *freq = o.freq, *out = o.out;
	int json = o.json;
	setenv("VPROF_VERIFY_STEP", "0", 1);

	const char *db = report_db_path(dbopt);
	char tag[80];
	int status = report_verify_launch(db, freq, o.cmd, tag, sizeof tag);
	if (status < 0) {
		fprintf(stderr, "vprof coverage: cannot start: %m\n");
		return 1;
	}
	struct report_verify_sum s;
	struct report_verify_top top[20];
	FILE *f = out ? fopen(out, "w") : stderr;
	if (!f) {
		fprintf(stderr, "vprof coverage: %s: %m\n", out);
		f = stderr;
	}
	if (report_verify_collect(db, tag, &s) < 0 || s.files == 0) {
		fprintf(f, "vprof coverage: no results in %s/verify (was CMD profiled?)\n", db);
		goto out;
	}
	const struct preload_verify_file *t = &s.tot;
	size_t ntop = report_verify_top_unhandled(t, top, 20);
	if (json) {
		fprintf(f, "{\"command\": \"coverage\", \"tag\": ");
		report_json_str(f, tag);
		fprintf(f, ", \"processes\": %d, \"interp_len\": %u, \"samples\": %llu, \"runs\": %llu, "
			"\"interpreted\": %llu, \"unhandled\": %llu, \"coverage\": %.6f, "
			"\"first_insn_coverage\": %.6f, ",
			s.files, s.interp_len, (unsigned long long)t->samples, (unsigned long long)t->runs,
			(unsigned long long)t->interpreted, (unsigned long long)t->unhandled,
			report_verify_coverage(t), report_verify_first_coverage(t));
		report_verify_json_stops(f, t);
		fprintf(f, ", ");
		report_verify_json_top(f, top, ntop);
		fprintf(f, ", \"status\": %d}\n",
			WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
	} else {
		fprintf(f, "vprof coverage: %.3f%% (%llu instructions interpreted, %llu runs stopped on "
			"an unhandled instruction; %llu runs of up to %u, %d process%s)\n",
			100 * report_verify_coverage(t), (unsigned long long)t->interpreted,
			(unsigned long long)t->unhandled, (unsigned long long)t->runs, s.interp_len,
			s.files, s.files == 1 ? "" : "es");
		fprintf(f, "  first-instruction coverage %.3f%%\n", 100 * report_verify_first_coverage(t));
		report_verify_print_stops(f, t);
		if (ntop)
			fprintf(f, "  top unhandled instructions:\n");
		for (size_t i = 0; i < ntop; i++)
			fprintf(f, "    %-14s %-12s %llu\n", report_verify_mnem_name(top[i].mnemonic),
				interp_stop_name((int)top[i].stop), (unsigned long long)top[i].count);
	}
out:
	report_verify_sum_free(&s);
	if (f != stderr)
		fclose(f);
	return report_exit_like(status);
}
