/* interp/vec_fixup.c — vfixupimm{ps,pd,ss,sd} (AVX-512F): special
 * values fixed up through a per-element table, as the SDM's
 * FIXUPIMM pseudocode defines it. Routed here by VDESC_LIST rows (vec_int.c, kind
 * K_FIXUP: op 0 packed, 1 scalar).
 *
 * Per element: the first source (src1, the instruction's second operand)
 * is classified into a token (QNaN, SNaN, zero, +1, -inf, +inf, negative,
 * positive; with MXCSR.DAZ a denormal counts as zero), the token selects
 * a 4-bit response from the low 32 bits of the table element (src2),
 * and the response gives the result (keep the destination, src1, its
 * quiet form, a constant). imm8 asks for #ZE/#IE on some tokens: their
 * flags go into MXCSR, and one that is unmasked stops the run
 * (would_fault) so the program takes #XM natively. Masked-off elements
 * keep or zero their destination and raise nothing; {sae} stops
 * (interp_vx_layout).
 *
 * Workload: libm-style vector code (SVML, Sleef) for the special cases
 * of exp/log/pow.
 *
 * Concurrency: thread state and, through interp_load, program memory.
 */
#include "interp/vec.h"

#define MX_IE 0x01u
#define MX_ZE 0x04u

/* One element of size s (4 or 8): the new value of dst given src1 (v) and
 * the table (t); exceptions raised into *raised. */
static uint64_t fixup1(uint64_t dst, uint64_t v, uint64_t t, unsigned s, unsigned imm,
		       int daz, uint32_t *raised)
{
	int dbl = s == 8;
	unsigned mbits = dbl ? 52 : 23;
	uint64_t sign = 1ull << (8 * s - 1), emask = dbl ? 0x7ffull : 0xffull;
	uint64_t mant = v & ((1ull << mbits) - 1), exp = (v >> mbits) & emask;
	uint64_t one = dbl ? 0x3ff0000000000000ull : 0x3f800000ull;
	uint64_t qbit = 1ull << (mbits - 1), inf = emask << mbits;
	unsigned j, resp;
	uint64_t r;

	if (daz && exp == 0 && mant)
		v &= sign;                      /* tsrc = 0.0, sign kept (measured) */
	exp = (v >> mbits) & emask;
	mant = v & ((1ull << mbits) - 1);
	if (exp == emask && mant)
		j = (v & qbit) ? 0 : 1;
	else if (exp == 0 && mant == 0)
		j = 2;
	else if (v == one)
		j = 3;
	else if (exp == emask)
		j = (v & sign) ? 4 : 5;
	else
		j = (v & sign) ? 6 : 7;
	resp = (unsigned)(t >> (4 * j)) & 15;
	switch (resp) {
	case 0: r = dst; break;
	case 1: r = v; break;
	case 2: r = v | inf | qbit; break;   /* measured: a number's bits kept */
	case 3: r = dbl ? 0xfff8000000000000ull : 0xffc00000ull; break;
	case 4: r = sign | inf; break;
	case 5: r = inf; break;
	case 6: r = (v & sign) | inf; break;
	case 7: r = sign; break;
	case 8: r = 0; break;
	case 9: r = sign | one; break;
	case 10: r = one; break;
	case 11: r = dbl ? 0x3fe0000000000000ull : 0x3f000000ull; break;
	case 12: r = dbl ? 0x4056800000000000ull : 0x42b40000ull; break;
	case 13: r = dbl ? 0x3ff921fb54442d18ull : 0x3fc90fdbull; break;
	case 14: r = dbl ? 0x7fefffffffffffffull : 0x7f7fffffull; break;
	default: r = dbl ? 0xffefffffffffffffull : 0xff7fffffull; break;
	}
	switch (j) {
	case 2:
		*raised |= ((imm & 1) ? MX_ZE : 0) | ((imm & 2) ? MX_IE : 0);
		break;
	case 3:
		*raised |= ((imm & 4) ? MX_ZE : 0) | ((imm & 8) ? MX_IE : 0);
		break;
	case 1: *raised |= (imm & 16) ? MX_IE : 0; break;
	case 4: *raised |= (imm & 32) ? MX_IE : 0; break;
	case 6: *raised |= (imm & 64) ? MX_IE : 0; break;
	case 5: *raised |= (imm & 128) ? MX_IE : 0; break;
	default: break;
	}
	return r;
}

int interp_vx_h_fixup(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec d, a, b, r;
	unsigned s = dd->esz, n, imm;
	uint32_t raised = 0;
	int scalar = dd->op == 1, rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (!VX_EVEX(x->in) || o.nsrc < 2 || o.imm < 0)
		return INTERP_STOP_UNSUPPORTED;
	/* control masks are not modelled */
	if (x->in->avx.mask_idx && !o.masked)
		return INTERP_STOP_UNSUPPORTED;
	o.suppress = 1;
	if (scalar)
		o.vl = 16;
	if ((rc = interp_vx_get(x, &o, o.dst, &d)) || (rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	/* a masked-off scalar's table element is not read (measured: no
	 * fault); interp_vx_get suppresses the packed forms' masked-off elements */
	if (scalar && o.masked && !(o.kmask & 1))
		memset(&b, 0, sizeof b);
	else if ((rc = interp_vx_get(x, &o, o.src[1], &b)))
		return rc;
	imm = (unsigned)interp_vx_imm(x, &o);
	n = scalar ? 1 : o.vl / s;
	/* scalar: the rest of the low 128 bits from src1 */
	r = a;
	for (unsigned e = 0; e < n; e++) {
		uint32_t el = 0;
		uint64_t v;

		if (o.masked && !((o.kmask >> e) & 1))
			continue;                       /* interp_vx_put keeps or zeroes it */
		v = fixup1(eget(&d, s, e), eget(&a, s, e), eget(&b, s, e), s, imm,
			   (x->st->mxcsr & 0x40) != 0, &el);
		eput(&r, s, e, v);
		raised |= el;
	}
	if (raised & ~(x->st->mxcsr >> 7) & 0x3f)
		return INTERP_STOP_WOULD_FAULT;
	if (scalar && o.masked) {
		/* element 0 by the mask; the upper elements are src1's */
		if (!(o.kmask & 1))
			eput(&r, s, 0, o.zeroing ? 0 : eget(&d, s, 0));
		o.masked = 0;
	}
	if ((rc = interp_vx_put(x, &o, o.dst, &r)))
		return rc;
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}
