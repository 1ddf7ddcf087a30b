/* tests/unit/interp_vendor_flags.c — the vendor models against the CPUs
 * they were read from.
 *
 * Replays every row of the tables recorded on an AMD Zen 5 and an Intel
 * Xeon (tests/fixtures/x86-flags, README there) through the interpreter,
 * with that vendor's model forced: RAX, RBX, RCX from the row, RDX 0x1111,
 * RFLAGS in; one instruction; RAX, RDX and the six arithmetic flags must be
 * what the CPU produced. One PASS/FAIL line per (table, op, width), which
 * passes only if rows were compared and none differed.
 *
 * Then the host: the start-up self-check must have chosen, for every rule
 * family, a model whose native probes all agree (and on a host whose CPUID
 * family/model is a table's, that table's model), and that table is
 * replayed natively too, to show the recording is this CPU's.
 */
#include <cpuid.h>
#include "interp_native.h"

struct row {
	char op[8];
	int w;
	uint64_t a, b, c, fin, oa, od, of;
};

/* Bytes of op at width w with RAX the destination, RBX the source and
 * RCX the count / index / control (as gen_flagvec.py wrote them in AT&T
 * order). Returns the length, 0 for an op not known. */
static unsigned encode(const char *op, int w, uint8_t *b)
{
	static const struct { const char *op; uint8_t digit; } kgrp2[] = {
		{ "rol", 0 }, { "ror", 1 }, { "rcl", 2 }, { "rcr", 3 },
		{ "shl", 4 }, { "shr", 5 }, { "sar", 7 },
	};
	static const struct { const char *op; uint8_t opc, modrm, f3; } k0f[] = {
		{ "shld", 0xa5, 0xd8, 0 }, { "shrd", 0xad, 0xd8, 0 },
		{ "imul2", 0xaf, 0xc3, 0 }, { "bsf", 0xbc, 0xc3, 0 },
		{ "bsr", 0xbd, 0xc3, 0 }, { "popcnt", 0xb8, 0xc3, 1 },
		{ "tzcnt", 0xbc, 0xc3, 1 }, { "lzcnt", 0xbd, 0xc3, 1 },
		{ "bt", 0xa3, 0xc8, 0 }, { "bts", 0xab, 0xc8, 0 },
	};
	/* VEX.0F38: opcode, ModRM, vvvv register */
	static const struct { const char *op; uint8_t opc, modrm, vvvv; } kvex[] = {
		{ "bzhi", 0xf5, 0xc3, 1 }, { "bextr", 0xf7, 0xc3, 1 },
		{ "andn", 0xf2, 0xc1, 3 }, { "blsr", 0xf3, 0xcb, 0 },
	};
	static const struct { const char *op; uint8_t opc8, opc, modrm; } kone[] = {
		{ "imul1", 0xf6, 0xf7, 0xeb }, { "mul1", 0xf6, 0xf7, 0xe3 },
		{ "add", 0x00, 0x01, 0xd8 }, { "adc", 0x10, 0x11, 0xd8 },
		{ "sub", 0x28, 0x29, 0xd8 }, { "and", 0x20, 0x21, 0xd8 },
		{ "neg", 0xf6, 0xf7, 0xd8 }, { "inc", 0xfe, 0xff, 0xc0 },
	};
	unsigned n = 0;

	for (size_t i = 0; i < sizeof kvex / sizeof kvex[0]; i++)
		if (!strcmp(op, kvex[i].op)) {
			b[0] = 0xc4;
			b[1] = 0xe2;
			b[2] = (w == 64 ? 0x80 : 0) | (uint8_t)((~kvex[i].vvvv & 15) << 3);
			b[3] = kvex[i].opc;
			b[4] = kvex[i].modrm;
			return 5;
		}
	if (w == 16)
		b[n++] = 0x66;
	for (size_t i = 0; i < sizeof k0f / sizeof k0f[0]; i++)
		if (!strcmp(op, k0f[i].op)) {
			if (k0f[i].f3)
				b[n++] = 0xf3;
			if (w == 64)
				b[n++] = 0x48;
			b[n++] = 0x0f;
			b[n++] = k0f[i].opc;
			b[n++] = k0f[i].modrm;
			return n;
		}
	if (w == 64)
		b[n++] = 0x48;
	for (size_t i = 0; i < sizeof kgrp2 / sizeof kgrp2[0]; i++)
		if (!strcmp(op, kgrp2[i].op)) {
			b[n++] = w == 8 ? 0xd2 : 0xd3;
			b[n++] = 0xc0 | kgrp2[i].digit << 3;
			return n;
		}
	for (size_t i = 0; i < sizeof kone / sizeof kone[0]; i++)
		if (!strcmp(op, kone[i].op)) {
			b[n++] = w == 8 ? kone[i].opc8 : kone[i].opc;
			b[n++] = kone[i].modrm;
			return n;
		}
	return 0;
}

/* Registers in from a row. */
static void row_in(const struct row *r, struct nctx *io)
{
	memset(io, 0, sizeof *io);
	for (int i = 0; i < 16; i++)
		io->gpr[i] = 0x0101010101010101ull * (i + 1);
	io->gpr[INTERP_RSP] = (uint64_t)g_data + 4096;
	io->gpr[INTERP_RAX] = r->a;
	io->gpr[INTERP_RBX] = r->b;
	io->gpr[INTERP_RCX] = r->c;
	io->gpr[INTERP_RDX] = 0x1111;
	io->rflags = r->fin;
}

/* One (table, op, width) group's tally. */
struct tally {
	char op[8];
	int w;
	long rows, bad, stopped;
};

static int finish(const char *table, const char *how, struct tally *t)
{
	if (!t->rows)
		return 0;
	if (t->bad || t->stopped)
		printf("FAIL %s %s %s/%d: %ld of %ld rows differ, %ld stopped\n", table, how,
		       t->op, t->w, t->bad, t->rows, t->stopped);
	else
		printf("PASS %s %s %s/%d: %ld rows\n", table, how, t->op, t->w, t->rows);
	return t->bad || t->stopped;
}

/* Replay a table through the interpreter (native = 0) or this CPU.
 * Returns groups failed; *nrows gets the rows compared. */
static int replay(const char *path, const char *table, int native, long *nrows)
{
	char cmd[4200], line[512];
	struct tally t = { "", 0, 0, 0, 0 };
	int nfail = 0, shown = 0;
	FILE *f;

	*nrows = 0;
	snprintf(cmd, sizeof cmd, "zcat '%s'", path);
	if (!(f = popen(cmd, "r"))) {
		printf("FAIL %s: cannot read %s\n", table, path);
		return 1;
	}
	while (fgets(line, sizeof line, f)) {
		struct row r;
		struct nctx in, out;
		uint8_t b[16];
		unsigned len;
		unsigned long long v[7];

		if (sscanf(line, "%7s %d %llx %llx %llx %llx %llx %llx %llx", r.op, &r.w,
			   &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6]) != 9)
			continue;   /* the header */
		r.a = v[0]; r.b = v[1]; r.c = v[2]; r.fin = v[3];
		r.oa = v[4]; r.od = v[5]; r.of = v[6];
		if (strcmp(t.op, r.op) || t.w != r.w) {
			nfail += finish(table, native ? "native" : "interp", &t);
			memset(&t, 0, sizeof t);
			snprintf(t.op, sizeof t.op, "%s", r.op);
			t.w = r.w;
		}
		if (!(len = encode(r.op, r.w, b))) {
			t.stopped++;
			continue;
		}
		row_in(&r, &in);
		out = in;
		if (native)
			run_native(b, len, &out);
		else if (run_interp(b, len, &out) != INTERP_OK) {
			t.stopped++;
			continue;
		}
		t.rows++;
		(*nrows)++;
		if (out.gpr[INTERP_RAX] != r.oa || out.gpr[INTERP_RDX] != r.od ||
		    (out.rflags & 0x8d5) != r.of) {
			t.bad++;
			if (shown++ < 20)
				printf("    %s %s/%d a=%llx b=%llx c=%llx fl=%llx: want %llx %llx %03llx got "
				       "%lx %lx %03lx\n", table, r.op, r.w, v[0], v[1], v[2], v[3],
				       v[4], v[5], v[6], out.gpr[INTERP_RAX], out.gpr[INTERP_RDX],
				       out.rflags & 0x8d5);
		}
	}
	nfail += finish(table, native ? "native" : "interp", &t);
	if (pclose(f) != 0 || *nrows == 0) {
		printf("FAIL %s: %s unreadable or empty (%ld rows)\n", table, path, *nrows);
		nfail++;
	}
	return nfail;
}

static const struct {
	const char *file, *name;
	int vendor;
	unsigned family, model;    /* CPUID display family/model it came from */
} ktables[] = {
	{ "amd-zen5.tsv.gz", "amd", INTERP_VENDOR_AMD, 26, 2 },
	{ "intel-xeon-6-207.tsv.gz", "intel", INTERP_VENDOR_INTEL, 6, 207 },
};

static void cpu_fms(unsigned *family, unsigned *model)
{
	unsigned a, b, c, d;

	__cpuid(1, a, b, c, d);
	*family = (a >> 8) & 15;
	*model = (a >> 4) & 15;
	if (*family == 15)
		*family += (a >> 20) & 0xff;
	if (*family == 6 || *family >= 15)
		*model |= ((a >> 16) & 15) << 4;
}

/* The start-up self-check's choice against the probes. */
static int check_host(int *host_table)
{
	unsigned fam, model;
	int nfail = 0, cpuv = interp_vendor_cpuid();

	cpu_fms(&fam, &model);
	*host_table = -1;
	for (size_t i = 0; i < sizeof ktables / sizeof ktables[0]; i++)
		if (ktables[i].family == fam && ktables[i].model == model && ktables[i].vendor == cpuv)
			*host_table = (int)i;
	printf("host: CPUID vendor %s, family %u model %u%s%s\n", interp_vendor_name(cpuv), fam,
	       model, *host_table >= 0 ? ", recorded in " : "",
	       *host_table >= 0 ? ktables[*host_table].file : "");
	for (int f = 0; f < INTERP_VR__COUNT; f++) {
		int v = interp_vendor_rule(f), probes[INTERP_VENDOR__COUNT];
		for (int k = 0; k < INTERP_VENDOR__COUNT; k++)
			probes[k] = interp_vendor_probe(f, k);
		/* the choice must be a model the probes agree with, CPUID's
		 * vendor's if it agrees, none only if no model does */
		int ok = v == INTERP_VENDOR_NONE ? 1 : probes[v] == 0;
		for (int k = 0; k < INTERP_VENDOR__COUNT; k++)
			if (probes[k] == 0 && v == INTERP_VENDOR_NONE)
				ok = 0;
		if (cpuv != INTERP_VENDOR_NONE && probes[cpuv] == 0 && v != cpuv)
			ok = 0;
		if (*host_table >= 0 && v != ktables[*host_table].vendor)
			ok = 0;   /* a recorded CPU must follow its own model */
		printf("%s self-check %s: model %s (probes differing:", ok ? "PASS" : "FAIL",
		       interp_vrule_name(f), interp_vendor_name(v));
		for (int k = 0; k < INTERP_VENDOR__COUNT; k++)
			if (probes[k] >= 0)
				printf(" %s %d", interp_vendor_name(k), probes[k]);
			else
				printf(" %s no model", interp_vendor_name(k));
		printf(")\n");
		nfail += !ok;
	}
	return nfail;
}

int main(void)
{
	const char *top = getenv("VPROF_TOP");
	char path[4096];
	long total = 0, n;
	int nfail = 0, host_table;

	native_setup();
	if (getenv("VPROF_INTERP_VENDOR"))
		printf("NOTE VPROF_INTERP_VENDOR=%s is set: the self-check still runs\n",
		       getenv("VPROF_INTERP_VENDOR"));
	interp_vendor_force(-1);
	nfail += check_host(&host_table);
	for (size_t i = 0; i < sizeof ktables / sizeof ktables[0]; i++) {
		snprintf(path, sizeof path, "%s/tests/fixtures/x86-flags/%s", top ? top : ".",
			 ktables[i].file);
		interp_vendor_force(ktables[i].vendor);
		nfail += replay(path, ktables[i].name, 0, &n);
		printf("%s: %ld rows replayed through the interpreter (%s model)\n",
		       ktables[i].name, n, ktables[i].name);
		total += n;
		if ((int)i == host_table) {
			nfail += replay(path, ktables[i].name, 1, &n);
			printf("%s: %ld rows replayed natively on this CPU\n", ktables[i].name, n);
		}
	}
	interp_vendor_force(-1);
	printf("%ld rows compared, %d groups or checks failed\n", total, nfail);
	return nfail != 0;
}
