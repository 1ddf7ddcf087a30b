/* tests/unit/interp_optab.c — the instruction table (interp/internal.h,
 * struct interp_op) is sound: one row per mnemonic and form, every
 * family present (the vector families too: what links libinterp.a gets
 * them), MOVSD/CMPSD resolved by encoding, the specs self-consistent. The
 * flags each row declares are checked against the CPU by interp_diff. */
#include <stdio.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"
#include "tests/unit/check.h"

static const struct interp_op *dec(const char *hex)
{
	uint8_t b[16];
	unsigned n = 0, v;

	while (n < sizeof b && sscanf(hex, "%2x", &v) == 1) {
		b[n++] = (uint8_t)v;
		hex += 2;
		while (*hex == ' ')
			hex++;
	}
	return interp_optab_decode(b, n);
}

static const char *mn(const struct interp_op *r)
{
	return r ? ZydisMnemonicGetString(r->mnemonic) : "(none)";
}

/* The rule families as interp.h's enum interp_vrule states them: the
 * mnemonics whose undefined flags each covers (vendor.c probes them). */
static const struct { const char *names; int rule; } kvrules[] = {
	{ " shl shr sar ", INTERP_VR_SHIFT },
	{ " rol ror rcl rcr ", INTERP_VR_ROTATE },
	{ " shld shrd ", INTERP_VR_DSHIFT },
	{ " mul imul ", INTERP_VR_MUL },
	{ " div idiv ", INTERP_VR_DIV },
	{ " andn bextr blsi blsmsk blsr bzhi ", INTERP_VR_BMI },
	{ " lzcnt tzcnt ", INTERP_VR_CNT },
	{ " bsf bsr ", INTERP_VR_BSX },
};

static int expected_rule(const char *mnemonic)
{
	char key[40];

	snprintf(key, sizeof key, " %s ", mnemonic);
	for (size_t i = 0; i < sizeof kvrules / sizeof kvrules[0]; i++)
		if (strstr(kvrules[i].names, key))
			return kvrules[i].rule;
	return INTERP_VR_NONE;
}

int main(void)
{
	int n = 0, nvec = 0, bad_vr = 0, bad_fn = 0, bad_rule = 0, nrule = 0;
	const struct interp_op *r;

	interp_init();
	for (int i = 0; (r = interp_optab_row(i)); i++) {
		n++;
		if (r->opf & INTERP_OPF_VEC)
			nvec++;
		if (!r->fn || r->mnemonic == 0 || r->mnemonic > ZYDIS_MNEMONIC_MAX_VALUE)
			bad_fn++;
		/* the handler takes its vendor model from the row's rule:
		 * each mnemonic names the rule interp.h gives it */
		if (r->vrule != expected_rule(mn(r))) {
			printf("    %s: vendor rule %d, interp.h says %d\n", mn(r), r->vrule,
			       expected_rule(mn(r)));
			bad_rule++;
		}
		nrule += r->vrule != INTERP_VR_NONE;
		/* a vendor rule governs undefined flags: none without them,
		 * and a rule that exists */
		if (r->vrule != INTERP_VR_NONE && (!r->fl_undef || r->vrule < 0 ||
						    r->vrule >= INTERP_VR__COUNT)) {
			printf("    %s: vendor rule %d, undefined flags %03x\n", mn(r), r->vrule, r->fl_undef);
			bad_vr++;
		}
	}
	CHECK(n == interp_optab_rows() && n > 800, "table: %d rows gathered, %d indexed", n,
	      interp_optab_rows());
	CHECK(interp_optab_dups() == 0, "table: no mnemonic has two rows for one form (%d do)",
	      interp_optab_dups());
	CHECK(bad_fn == 0, "table: every row has a handler and a mnemonic (%d without)", bad_fn);
	CHECK(bad_vr == 0, "table: every vendor rule names undefined flags and exists (%d bad)", bad_vr);
	CHECK(bad_rule == 0 && nrule == 23, "table: the 23 rows with a vendor rule name the one interp.h "
	      "gives their mnemonic (%d rows with a rule, %d wrong)", nrule, bad_rule);
	CHECK(nvec > 600, "table: the vector families are linked in (%d vector rows)", nvec);

	/* MOVSD and CMPSD: string op in the one-byte map, SSE2 elsewhere */
	r = dec("a5");
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_MOVSD && r->form == INTERP_FORM_MAP0 &&
	      !(r->opf & INTERP_OPF_VEC) && (r->fl_read & IFL_D), "movsd (a5) is the string row");
	r = dec("f2 0f 10 c1");
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_MOVSD && r->form == INTERP_FORM_ANY &&
	      (r->opf & INTERP_OPF_VEC), "movsd xmm0, xmm1 is the SSE2 row");
	r = dec("c5 fb 10 c1");
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_VMOVSD && (r->opf & INTERP_OPF_VEC), "vmovsd: %s", mn(r));
	r = dec("a7");
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_CMPSD && r->form == INTERP_FORM_MAP0 &&
	      r->fl_written == IFL_ALL, "cmpsd (a7) is the string row, writes the six flags");
	r = dec("f2 0f c2 c1 00");
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_CMPSD && (r->opf & INTERP_OPF_VEC) &&
	      r->spec.f.byimm != NULL, "cmpsd xmm0, xmm1, 0 is the SSE2 row with its imm table");

	/* specs the handlers read instead of testing the mnemonic */
	r = dec("c5 f9 90 c1");     /* kmovb k0, k1 */
	CHECK(r && r->spec.g.width == 1 && (r->opf & INTERP_OPF_VEC), "kmovb: width 1 from the row (%s)", mn(r));
	r = dec("c4 e1 f8 98 c1");  /* kortestq k0, k1 */
	CHECK(r && r->spec.g.width == 8 && r->spec.g.op == 1 && r->fl_written == IFL_ALL,
	      "kortestq: width 8, or-test, writes flags (%s)", mn(r));
	r = dec("48 d3 e0");        /* shl rax, cl */
	CHECK(r && r->vrule == INTERP_VR_SHIFT && (r->fl_undef & IFL_A) && !(r->opf & INTERP_OPF_VEC),
	      "shl: vendor rule shift, AF undefined, general purpose");
	r = dec("48 f7 f1");        /* div rcx */
	CHECK(r && r->vrule == INTERP_VR_DIV && r->fl_undef == IFL_ALL, "div: all six flags undefined (rule div)");
	r = dec("66 0f fe c1");     /* paddd */
	CHECK(r && r->spec.v.esz == 4 && (r->opf & INTERP_OPF_NOCTL), "paddd: element size 4 (%s)", mn(r));
	r = dec("0f 0b");           /* ud2 */
	CHECK(r && r->mnemonic == ZYDIS_MNEMONIC_UD2, "ud2 has a row (it stops as a fault)");
	r = dec("0f a2");           /* cpuid */
	CHECK(r != NULL, "cpuid has a row");
	r = dec("d9 e8");           /* fld1: x87 arithmetic is not modelled */
	CHECK(r == NULL, "fld1 has no row (unsupported)");
	return g_fail;
}
