/*
 * vprof export: the profile out to the tools people use. pprof (gzipped
 * profile.proto) for go tool pprof and continuous-profiling backends,
 * folded stacks for flame graphs, JSON for anything else. A thin command:
 * the model is loaded with lines, and a writer in export_*.c takes it.
 */
#include "reports/builtin.h"
#include "reports/report.h"
#include "reports/export.h"
#include "reports/value_model.h"

#include <errno.h>
#include <getopt.h>
#include <string.h>
#include <unistd.h>

static const char kHelp[] =
	"usage: vprof export --format pprof|folded|json|llvm-sample|autofdo-text [-o FILE]\n"
	"                    [--binary PATH] [--db DIR] [--epoch N|all] [--event E]\n"
	"  --format pprof   gzipped pprof profile.proto (needs -o): sample types\n"
	"                   samples/count and cpu/nanoseconds (count x mean period;\n"
	"                   EVENT/count for PMU events), locations with source lines,\n"
	"                   functions with demangled names, mappings with build-ids;\n"
	"                   with recorded stacks, one sample per call stack\n"
	"                   Read it with `go tool pprof -top FILE`.\n"
	"  --format folded  collapsed stacks, \"frame;frame;... COUNT\" per line, for\n"
	"                   flamegraph.pl, speedscope, Grafana: main;...;leaf COUNT per\n"
	"                   distinct call stack when they were recorded (vprof run\n"
	"                   --stacks), else \"image;procedure COUNT\" per procedure\n"
	"  --format json    the whole model: images, and per event every sampled PC\n"
	"                   with procedure, file and line (schema: docs/commands.md)\n"
	"  --format llvm-sample  the branch records of vprof run --branches for one\n"
	"                   binary (--binary PATH) as an LLVM sample profile in text\n"
	"                   form, from its DWARF (build with -g -fdebug-info-for-\n"
	"                   profiling): llvm-profdata and clang -fprofile-sample-use\n"
	"                   read it\n"
	"  --format autofdo-text  the branch records of vprof run --branches and the PC\n"
	"                   samples of one binary (--binary PATH, matched by build-id)\n"
	"                   as AutoFDO's text profile: ranges, samples, branches, for\n"
	"                   `create_llvm_prof --profiler=text --binary PATH`, which\n"
	"                   writes the LLVM sample profile clang -fprofile-sample-use\n"
	"                   reads (docs/branch-profiles.md)\n"
	"  --binary PATH    the binary an llvm-sample or autofdo-text profile is for\n"
	"  -o FILE          write to FILE (default: stdout, except for pprof)\n"
	"  --event E        pprof and folded write one event: E, else the one with\n"
	"                   the most samples\n"
	"  --db, --epoch    as for vprof report\n";

struct export_args {
	const char *format;
	const char *out;
	const char *binary;
};

static int on_opt(int ch, const char *arg, void *ctx)
{
	struct export_args *a = ctx;
	if (ch == 'f')
		a->format = arg;
	else if (ch == 'b')
		a->binary = arg;
	else
		a->out = arg;
	return 0;
}

/* --format autofdo-text and llvm-sample: the value model (for the branch
 * records) out through report_export_autofdo or _llvm_sample. */
static int export_autofdo(const struct report_opts *o, const struct export_args *a)
{
	struct report_value_model vm;
	int rc;
	if ((rc = report_value_model_load(&vm, o, "export")))
		return rc;
	unsigned ev = report_model_main_event(&vm.m, o->event);
	FILE *f = stdout;
	if (a->out && !(f = fopen(a->out, "w"))) {
		fprintf(stderr, "vprof export: %s: %s\n", a->out, strerror(errno));
		report_value_model_free(&vm);
		return 1;
	}
	rc = (!strcmp(a->format, "llvm-sample") ? report_export_llvm_sample(&vm, a->binary, f)
					       : report_export_autofdo(&vm, ev, a->binary, f)) ? 1 : 0;
	report_value_model_free(&vm);
	if (f == stdout)
		return rc ? rc : report_finish_stdout(0);
	if (fclose(f) != 0) {
		fprintf(stderr, "vprof export: %s: %s\n", a->out, strerror(errno));
		return 1;
	}
	if (rc)
		unlink(a->out);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "format", required_argument, 0, 'f' }, { "output", required_argument, 0, 'o' },
		{ "binary", required_argument, 0, 'b' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"export", kHelp, REPORT_OPT_DB | REPORT_OPT_EPOCH | REPORT_OPT_EVENT,
		extra, "f:o:", on_opt,
	};
	struct report_opts o = { 0 };
	struct export_args a = { 0 };
	struct report_model m;
	int rc = report_opts_parse(&cmd, argc, argv, &o, &a);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("export", "takes no operands");
	if (!a.format)
		return report_usage("export", "--format is required (pprof, folded, json, llvm-sample or autofdo-text)");
	int pprof = !strcmp(a.format, "pprof");
	int autofdo = !strcmp(a.format, "autofdo-text") || !strcmp(a.format, "llvm-sample");
	if (!pprof && !autofdo && strcmp(a.format, "folded") && strcmp(a.format, "json"))
		return report_usage("export", "unknown format; expected pprof, folded, json, llvm-sample or autofdo-text");
	if (autofdo != (a.binary != NULL))
		return report_usage("export", autofdo ? "--format llvm-sample and autofdo-text are for one binary: give --binary PATH"
					      : "--binary is for --format llvm-sample and autofdo-text");
	if (autofdo)
		return export_autofdo(&o, &a);
	if (pprof && !a.out)
		return report_usage("export", "--format pprof writes a binary file: give -o FILE");
	if (pprof) {
		/* With the value hotlists, as samples of a third type. */
		struct report_value_model vm;
		if ((rc = report_value_model_load(&vm, &o, "export")))
			return rc;
		unsigned ev = report_model_main_event(&vm.m, o.event);
		if (!ev) {
			fprintf(stderr, "vprof export: no samples in %s epoch %s%s%s\n", vm.m.db, vm.m.epoch,
				o.event ? " for event " : "", o.event ? upcall_event_name(o.event) : "");
			report_value_model_free(&vm);
			return 1;
		}
		rc = report_export_pprof(&vm.m, ev, a.out, &vm) ? 1 : 0;
		report_value_model_free(&vm);
		return rc;
	}
	if ((rc = report_model_load(&m, o.db, o.epoch, o.event, 1, "export")))
		return rc;
	unsigned ev = report_model_main_event(&m, o.event);
	if (!ev && strcmp(a.format, "json")) {
		fprintf(stderr, "vprof export: no samples in %s epoch %s%s%s\n", m.db, m.epoch,
			o.event ? " for event " : "", o.event ? upcall_event_name(o.event) : "");
		report_model_free(&m);
		return 1;
	}
	FILE *f = stdout;
	if (a.out && !(f = fopen(a.out, "w"))) {
		fprintf(stderr, "vprof export: %s: %s\n", a.out, strerror(errno));
		report_model_free(&m);
		return 1;
	}
	if (!strcmp(a.format, "folded"))
		report_export_folded(&m, ev, f);
	else
		report_export_json(&m, f);
	report_model_free(&m);
	if (f == stdout)
		return report_finish_stdout(0);
	if (fclose(f) != 0) {
		fprintf(stderr, "vprof export: %s: %s\n", a.out, strerror(errno));
		return 1;
	}
	return 0;
}
