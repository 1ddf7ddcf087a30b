/* interp/vec_gfni.c — Galois-field instructions (GFNI: gf2p8mulb,
 * gf2p8affineqb, gf2p8affineinvqb in legacy, VEX and EVEX forms) and
 * AVX512CD's vpconflictd/q. Routed here by VDESC_LIST rows (vec_int.c, kinds K_GFNI
 * and K_CONFLICT); operand machinery in vec_operand.c.
 *
 * Workload: GFNI shows up in crypto (SM4, AES-based ciphers' S-boxes),
 * erasure coding (isa-l) and byte permutations compilers build from
 * gf2p8affineqb (bit reversal, shifts of bytes); vpconflict in vectorised
 * histogram and scatter loops.
 *
 * Masked memory operands: gf2p8mulb reads only selected bytes (element-
 * wise); the affine forms read the matrix quadword of each 8-byte group
 * and vpconflict compares every element with every earlier one, so they
 * read their whole memory operand (the unit tests check that the CPU
 * faults alike).
 *
 * Concurrency: thread state and, through interp_load/interp_store, program
 * memory.
 */
#include "interp/vec.h"

/* x * y in GF(2^8) modulo x^8 + x^4 + x^3 + x + 1 */
static uint8_t gf_mul(uint8_t a, uint8_t b)
{
	uint8_t r = 0;

	while (b) {
		if (b & 1)
			r ^= a;
		a = (uint8_t)((a << 1) ^ ((a & 0x80) ? 0x1b : 0));
		b >>= 1;
	}
	return r;
}

/* multiplicative inverse (0 -> 0): a^254 */
static uint8_t gf_inv(uint8_t a)
{
	uint8_t r = 1, p = a;

	for (unsigned e = 254; e; e >>= 1) {
		if (e & 1)
			r = gf_mul(r, p);
		p = gf_mul(p, p);
	}
	return a ? r : 0;
}

/* Bit i of the result is parity(A.byte[7 - i] & x) ^ imm.bit[i]. */
static uint8_t gf_affine(uint64_t A, uint8_t x, uint8_t imm)
{
	uint8_t r = 0;

	for (unsigned i = 0; i < 8; i++) {
		uint8_t row = (uint8_t)(A >> (8 * (7 - i)));
		r |= (uint8_t)((__builtin_parity(row & x) ^ ((imm >> i) & 1)) << i);
	}
	return r;
}

/* dd->op: 0 gf2p8mulb, 1 gf2p8affineqb, 2 gf2p8affineinvqb. Legacy:
 * op dst(x), src(A/y) [, imm]; VEX/EVEX: op dst, src1(x), src2(A/y). */
int interp_vx_h_gfni(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b, r;
	int rc, ia, ib, imm;

	if ((rc = interp_vx_layout(x, &o, 1)))
		return rc;
	interp_vx_sources(x, &o, &ia, &ib);
	imm = interp_vx_imm(x, &o);
	if (ia < 0 || ib < 0 || (dd->op && imm < 0))
		return INTERP_STOP_UNSUPPORTED;
	/* legacy SSE: a 16-byte memory operand must be aligned */
	if (VX_LEGACY(x->in) && x->in->op[ib].type == INTERP_OP_MEM && !interp_vx_aligned(x, ib, 16))
		return INTERP_STOP_WOULD_FAULT;
	if ((rc = interp_vx_get(x, &o, ia, &a)))
		return rc;
	o.suppress = dd->op == 0;
	if ((rc = interp_vx_get(x, &o, ib, &b)))
		return rc;
	memset(&r, 0, sizeof r);
	for (unsigned e = 0; e < o.vl; e++) {
		switch (dd->op) {
		case 0: r.b[e] = gf_mul(a.b[e], b.b[e]); break;
		case 1: r.b[e] = gf_affine(b.q[e / 8], a.b[e], (uint8_t)imm); break;
		default: r.b[e] = gf_affine(b.q[e / 8], gf_inv(a.b[e]), (uint8_t)imm); break;
		}
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpconflictd/q: element i gets a bit j set for every earlier element j
 * equal to it. */
int interp_vx_h_conflict(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, r;
	unsigned s = dd->esz, n;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (o.src[0] < 0)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	n = o.vl / s;
	memset(&r, 0, sizeof r);
	for (unsigned i = 0; i < n; i++) {
		uint64_t m = 0, v = eget(&a, s, i);
		for (unsigned j = 0; j < i; j++)
			if (eget(&a, s, j) == v)
				m |= 1ull << j;
		eput(&r, s, i, m);
	}
	return interp_vx_put(x, &o, o.dst, &r);
}
