/*
 * vprof verify [--db DIR] [--len N] [--freq HZ] [--json] [-o FILE] -- CMD:
 * run CMD (and everything it starts) with co-simulation on
 * (VPROF_VERIFY=1, preload/verify.c): at each sample the interpreter runs
 * up to N instructions in a shadow that buffers stores, the hardware then
 * single-steps the same instructions, and registers, flags and stored
 * bytes are compared after each. Prints the number of instructions
 * compared and of mismatches, each mismatch (PC, bytes, disassembly,
 * expected and actual), the stop reasons and coverage.
 *
 * The report goes to stderr (or FILE), never to stdout, so CMD's output
 * is its own. The exit status is CMD's, exactly as `vprof run` gives it:
 * mismatches are reported in the text and in "mismatches" of --json, not
 * in the status (a test asserts on those).
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
	printf("usage: vprof verify [--db DIR] [--len N] [--freq HZ] [--json] [-o FILE] -- CMD [ARGS]\n"
	       "  --len N      instructions interpreted and compared per sample (default 64, max %d)\n"
	       "  --freq HZ    samples per CPU-second (default 1000)\n"
	       "  --json       the report as one JSON object\n"
	       "  -o FILE      write the report to FILE instead of stderr\n"
	       "Co-simulation: at each sample the interpreter runs up to N instructions in a\n"
	       "shadow (stores buffered, not written), then the CPU single-steps the same\n"
	       "instructions (trap flag) and registers, arithmetic flags and DF, MXCSR,\n"
	       "the x87 control, status and tag words, vector and opmask registers and\n"
	       "the bytes each instruction stored are compared after every instruction;\n"
	       "the first difference ends that run. Not compared: TF and RF, x87 data\n"
	       "registers (the interpreter stops on x87 arithmetic),\n"
	       "instructions the CPU may answer differently each time (rdtsc, cpuid,\n"
	       "rdrand, xgetbv; they end a run), and differences explained by memory\n"
	       "that changed under the run where this thread cannot have changed it\n"
	       "(before stepping began: another thread; a read-only page: the kernel's\n"
	       "vDSO clock data): counted as \"raced\". A difference after memory it\n"
	       "read changed during stepping in a writable page is reported, marked.\n"
	       "Each compared instruction is a debug trap (~15 us of CPU here), so CMD\n"
	       "runs slower; a thread is stepped again only after half a sampling\n"
	       "period of native execution. Signals other than faults and traps are\n"
	       "held back while a run is stepped (at most N instructions). A step's\n"
	       "trap that the kernel reports as TRAP_BRKPT (the single-step bit lost\n"
	       "under a hypervisor) is taken as the step's, counted, never given to CMD.\n"
	       "Exit status: CMD's, as from `vprof run`; mismatches are reported, not\n"
	       "turned into a status.\n", VERIFY_MAX_LEN);
}

static const char *const kkind[] = { "?", "gpr", "rip", "flags", "mem", "vec", "kmask", "mxcsr",
				     "fault", "x87" };

static void disasm(const struct preload_verify_record *r, char *out, size_t cap)
{
	ZydisDecoder dec;
	ZydisFormatter fmt;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisFormatterInit(&fmt, ZYDIS_FORMATTER_STYLE_INTEL);
	snprintf(out, cap, "(undecodable)");
	if (ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, r->bytes, r->len ? r->len : 15, &in, ops)))
		ZydisFormatterFormatInstruction(&fmt, &in, ops, in.operand_count_visible, out, cap,
						r->pc, NULL);
}

static void hex(char *out, const uint8_t *b, unsigned n, int spaced)
{
	size_t o = 0;
	for (unsigned i = 0; i < n; i++)
		o += (size_t)sprintf(out + o, spaced && i ? " %02x" : "%02x", b[i]);
	out[o] = 0;
}

/* A value as the reader thinks of it: registers as 0x-numbers (little-
 * endian bytes reversed), memory as bytes in address order. */
static void value(char *out, const struct preload_verify_record *r, const uint8_t *v)
{
	if (r->kind == VERIFY_K_MEM || r->size > 8 || r->size == 0) {
		hex(out, v, r->size, 1);
		return;
	}
	uint64_t x = 0;
	memcpy(&x, v, r->size);
	sprintf(out, "0x%llx", (unsigned long long)x);
}

static void print_text(FILE *f, const struct report_verify_sum *s, int status)
{
	const struct preload_verify_file *t = &s->tot;
	fprintf(f, "vprof verify: %llu instructions compared, %llu mismatches "
		"(%llu runs stepped, %llu interpreted in %llu runs of up to %u, %d process%s)\n",
		(unsigned long long)t->compared, (unsigned long long)t->mismatches,
		(unsigned long long)t->runs_stepped, (unsigned long long)t->interpreted,
		(unsigned long long)t->runs, s->interp_len, s->files, s->files == 1 ? "" : "es");
	report_verify_print_stops(f, t);
	fprintf(f, "  coverage %.3f%% of interpreted-or-unhandled instructions, %.3f%% of sampled "
		"instructions; %llu samples skipped\n",
		100 * report_verify_coverage(t), 100 * report_verify_first_coverage(t), (unsigned long long)t->skipped);
	if (s->bad_files)
		fprintf(f, "  %d result file%s unreadable (other version?)\n", s->bad_files,
			s->bad_files == 1 ? "" : "s");
	for (size_t i = 0; i < s->nrecs; i++) {
		const struct report_verify_rec_ex *x = &s->recs[i];
		const struct preload_verify_record *r = &x->r;
		char d[256], b[64], e[200], a[200];
		disasm(r, d, sizeof d);
		hex(b, r->bytes, r->len, 1);
		value(e, r, r->expected);
		value(a, r, r->actual);
		fprintf(f, "  mismatch: %s pid %d tid %u pc 0x%llx (%s+0x%llx) [%s] %s (insn %u of its run): "
			"%s %s", x->exe, x->pid, r->tid, (unsigned long long)r->pc,
			r->image[0] ? r->image : "?", (unsigned long long)r->file_off, b, d, r->index,
			kkind[r->kind < sizeof kkind / sizeof kkind[0] ? r->kind : 0], r->what);
		if (r->kind == VERIFY_K_MEM || r->kind == VERIFY_K_FAULT)
			fprintf(f, " at 0x%llx", (unsigned long long)r->addr);
		if (r->size)
			fprintf(f, ": expected %s, actual %s", e, a);
		if (r->flags & VERIFY_F_LOADS_CHANGED)
			fprintf(f, " [memory the run read changed while stepping: another thread?]");
		if (r->flags & VERIFY_F_ATOMIC)
			fprintf(f, " [atomic on shared memory: another thread may have written it since]");
		fputc('\n', f);
	}
	if (t->nrecords > s->nrecs)
		fprintf(f, "  (%llu more mismatch records not kept)\n",
			(unsigned long long)(t->nrecords - s->nrecs));
	(void)status;
}

static void print_json(FILE *f, const struct report_verify_sum *s, const char *tag, int status)
{
	const struct preload_verify_file *t = &s->tot;
	struct report_verify_top top[20];
	size_t ntop = report_verify_top_unhandled(t, top, 20);
	fprintf(f, "{\"command\": \"verify\", \"tag\": ");
	report_json_str(f, tag);
	fprintf(f, ", \"processes\": %d, \"interp_len\": %u, \"samples\": %llu, \"skipped\": %llu, "
		"\"runs\": %llu, \"interpreted\": %llu, \"runs_stepped\": %llu, \"traps\": %llu, "
		"\"compared\": %llu, \"mismatches\": %llu, \"items\": %llu, \"native_faults\": %llu, "
		"\"coverage\": %.6f, \"first_insn_coverage\": %.6f, ",
		s->files, s->interp_len, (unsigned long long)t->samples, (unsigned long long)t->skipped,
		(unsigned long long)t->runs, (unsigned long long)t->interpreted,
		(unsigned long long)t->runs_stepped, (unsigned long long)t->traps,
		(unsigned long long)t->compared, (unsigned long long)t->mismatches,
		(unsigned long long)t->items, (unsigned long long)t->native_faults, report_verify_coverage(t),
		report_verify_first_coverage(t));
	report_verify_json_stops(f, t);
	fprintf(f, ", ");
	report_verify_json_top(f, top, ntop);
	fprintf(f, ", \"status\": %d, \"records\": [", WIFEXITED(status) ? WEXITSTATUS(status)
						       : 128 + WTERMSIG(status));
	for (size_t i = 0; i < s->nrecs; i++) {
		const struct report_verify_rec_ex *x = &s->recs[i];
		const struct preload_verify_record *r = &x->r;
		char d[256], b[64], e[200], a[200];
		disasm(r, d, sizeof d);
		hex(b, r->bytes, r->len, 1);
		value(e, r, r->expected);
		value(a, r, r->actual);
		fprintf(f, "%s{\"pid\": %d, \"tid\": %u, \"exe\": ", i ? ", " : "", x->pid, r->tid);
		report_json_str(f, x->exe);
		fprintf(f, ", \"pc\": \"0x%llx\", \"image\": ", (unsigned long long)r->pc);
		report_json_str(f, r->image);
		fprintf(f, ", \"file_offset\": \"0x%llx\", \"bytes\": \"%s\", \"disasm\": ",
			(unsigned long long)r->file_off, b);
		report_json_str(f, d);
		fprintf(f, ", \"index\": %u, \"kind\": \"%s\", \"what\": ", r->index,
			kkind[r->kind < sizeof kkind / sizeof kkind[0] ? r->kind : 0]);
		report_json_str(f, r->what);
		fprintf(f, ", \"addr\": \"0x%llx\", \"expected\": \"%s\", \"actual\": \"%s\", "
			"\"loads_changed\": %s, \"atomic\": %s}", (unsigned long long)r->addr, e, a,
			r->flags & VERIFY_F_LOADS_CHANGED ? "true" : "false",
			r->flags & VERIFY_F_ATOMIC ? "true" : "false");
	}
	fprintf(f, "]}\n");
}

int cmd_verify(int argc, char **argv)
{
	struct report_verify_opts o;
	int rc = report_verify_parse_opts("verify", argc, argv, help, &o);
	if (rc >= 0)
		return rc;
	const char *dbopt = o.db, *freq = o.freq, *out = o.out;
	int json = o.json;
	unsetenv("VPROF_VERIFY_STEP");

	const char *db = report_db_path(dbopt);
	char tag[80];
	int status = report_verify_launch(db, freq, o.cmd, tag, sizeof tag);
	if (status < 0) {
		fprintf(stderr, "vprof verify: cannot start: %m\n");
		return 1;
	}
	struct report_verify_sum s;
	FILE *f = out ? fopen(out, "w") : stderr;
	if (!f) {
		fprintf(stderr, "vprof verify: %s: %m\n", out);
		f = stderr;
	}
	if (report_verify_collect(db, tag, &s) < 0 || s.files == 0)
		fprintf(f, "vprof verify: no co-simulation results in %s/verify (was CMD profiled?)\n", db);
	else if (json)
		print_json(f, &s, tag, status);
	else
		print_text(f, &s, status);
	report_verify_sum_free(&s);
	if (f != stderr)
		fclose(f);
	return report_exit_like(status);
}
