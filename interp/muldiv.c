/* interp/muldiv.c — MUL IMUL DIV IDIV and BMI2 MULX.
 *
 * Workload: ~2% of instructions; IMUL r,r/m dominates.
 *
 * Divide errors (divisor 0, quotient out of range) stop the run with
 * INTERP_STOP_WOULD_FAULT before anything changes: the program then
 * executes the DIV itself and takes its own SIGFPE.
 *
 * Flags: MUL/IMUL define only CF and OF; DIV/IDIV define none. The
 * undefined ones follow the vendor model vendor.c chose (interp_vmodel[]):
 * for MUL/IMUL, Zen 5's or Intel's, both recorded; for DIV/IDIV, Zen 5
 * clears SF ZF PF and sets AF, and the Intel Xeon (6/207) leaves all six
 * as they were (320 native divisions of each width, signed and not, from
 * four flag patterns, all unchanged; interp_init's probes check the host
 * again). Under no model they stop as unsupported.
 */
#include "interp/interp.h"
#include "interp/internal.h"

typedef unsigned __int128 u128;
typedef __int128 s128;

/* CF = OF = overflow; the undefined SF ZF AF PF under the vendor model:
 * Zen 5 leaves them, Intel takes SF and PF from the low half of the
 * product (lo) and clears ZF and AF. */
static void mul_flags(struct interp_exec *x, int v, int overflow, uint64_t lo, unsigned size)
{
	uint64_t f = x->rflags & ~(uint64_t)(INTERP_CF | INTERP_OF);

	if (overflow)
		f |= INTERP_CF | INTERP_OF;
	if (v == INTERP_VENDOR_INTEL) {
		f &= ~(uint64_t)(INTERP_SF | INTERP_ZF | INTERP_AF | INTERP_PF);
		if ((lo >> (size * 8 - 1)) & 1)
			f |= INTERP_SF;
		if (!__builtin_parityll(lo & 0xff))
			f |= INTERP_PF;
	}
	x->rflags = f;
}

/* Write the double-width result of the one-operand forms. */
static void put_wide(struct interp_exec *x, unsigned size, uint64_t lo, uint64_t hi)
{
	if (size == 1) {
		interp_gpr_set(x, INTERP_RAX, 2, (lo & 0xff) | (hi & 0xff) << 8);
		return;
	}
	interp_gpr_set(x, INTERP_RAX, size, lo);
	interp_gpr_set(x, INTERP_RDX, size, hi);
}

static int h_mul(struct interp_exec *x)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t a = interp_gpr_get(x, INTERP_RAX, size), b, lo, hi;
	int rc, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 0, &b)))
		return rc;
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	if (size == 8) {
		u128 p = (u128)a * b;
		lo = (uint64_t)p;
		hi = (uint64_t)(p >> 64);
	} else {
		uint64_t p = a * b;
		lo = p & interp_mask(size);
		hi = (p >> bits) & interp_mask(size);
	}
	put_wide(x, size, lo, hi);
	mul_flags(x, v, hi != 0, lo, size);
	return INTERP_OK;
}

static int h_imul(struct interp_exec *x)
{
	uint64_t a, b, r;
	int rc, v = interp_vmodel_row(x);

	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	if (IN->nvis == 1) {
		unsigned size = OPS(0), bits = size * 8;
		int64_t sa = (int64_t)interp_sext(interp_gpr_get(x, INTERP_RAX, size), size), sb;
		uint64_t lo, hi;
		if ((rc = interp_rd(x, 0, &b)))
			return rc;
		sb = (int64_t)interp_sext(b, size);
		if (size == 8) {
			s128 p = (s128)sa * sb;
			lo = (uint64_t)p;
			hi = (uint64_t)((u128)p >> 64);
			mul_flags(x, v, p != (s128)(int64_t)lo, lo, size);
		} else {
			int64_t p = sa * sb;
			lo = (uint64_t)p & interp_mask(size);
			hi = ((uint64_t)p >> bits) & interp_mask(size);
			mul_flags(x, v, p != (int64_t)interp_sext(lo, size), lo, size);
		}
		put_wide(x, size, lo, hi);
		return INTERP_OK;
	}
	/* imul r, r/m  or  imul r, r/m, imm */
	unsigned size = OPS(0);
	int srci = IN->nvis == 3 ? 1 : 0, multi = IN->nvis == 3 ? 2 : 1;
	if ((rc = interp_rd(x, srci, &a)) || (rc = interp_rd(x, multi, &b)))
		return rc;
	int64_t sa = (int64_t)interp_sext(a, size), sb = (int64_t)interp_sext(b, size);
	int of;
	if (size == 8) {
		s128 p = (s128)sa * sb;
		r = (uint64_t)p;
		of = p != (s128)(int64_t)r;
	} else {
		int64_t p = sa * sb;
		r = (uint64_t)p & interp_mask(size);
		of = p != (int64_t)interp_sext(r, size);
	}
	interp_wr(x, 0, r);
	mul_flags(x, v, of, r, size);
	return INTERP_OK;
}

static int divide(struct interp_exec *x, int sgn)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t d, lo, hi, q, r;
	int rc;

	if ((rc = interp_rd(x, 0, &d)))
		return rc;
	if (d == 0)
		return INTERP_STOP_WOULD_FAULT;
	int v = interp_vmodel_row(x);
	if (v != INTERP_VENDOR_AMD && v != INTERP_VENDOR_INTEL)
		return INTERP_STOP_UNSUPPORTED;
	if (size == 1) {
		uint64_t ax = interp_gpr_get(x, INTERP_RAX, 2);
		lo = ax & 0xff;
		hi = ax >> 8;
	} else {
		lo = interp_gpr_get(x, INTERP_RAX, size);
		hi = interp_gpr_get(x, INTERP_RDX, size);
	}
	if (!sgn) {
		u128 n = ((u128)hi << bits) | lo, qq;
		if (size == 8)
			n = ((u128)hi << 64) | lo;
		qq = n / d;
		if (qq > interp_mask(size))
			return INTERP_STOP_WOULD_FAULT;
		q = (uint64_t)qq;
		r = (uint64_t)(n % d);
	} else {
		s128 n, sd = (int64_t)interp_sext(d, size), qq;
		if (size == 8)
			n = (s128)(((u128)hi << 64) | lo);
		else
			n = (int64_t)interp_sext((hi << bits) | lo, size * 2);
		qq = n / sd;
		s128 lim = (s128)1 << (bits - 1);
		if (qq >= lim || qq < -lim)
			return INTERP_STOP_WOULD_FAULT;
		q = (uint64_t)qq & interp_mask(size);
		r = (uint64_t)(n % sd) & interp_mask(size);
	}
	put_wide(x, size, q, r);
	/* all undefined; Zen 5: SF ZF PF cleared, AF set, CF OF kept; Intel:
	 * all kept */
	if (v == INTERP_VENDOR_AMD)
		x->rflags = (x->rflags & ~(uint64_t)(INTERP_SF | INTERP_ZF | INTERP_PF)) | INTERP_AF;
	return INTERP_OK;
}

static int h_div(struct interp_exec *x) { return divide(x, 0); }
static int h_idiv(struct interp_exec *x) { return divide(x, 1); }

/* MULX hi, lo, src: rdx * src, no flags; hi written last (wins if same). */
static int h_mulx(struct interp_exec *x)
{
	unsigned size = OPS(0);
	uint64_t a = interp_gpr_get(x, INTERP_RDX, size), b, lo, hi;
	int rc;

	if ((rc = interp_rd(x, 2, &b)))
		return rc;
	if (size == 8) {
		u128 p = (u128)a * b;
		lo = (uint64_t)p;
		hi = (uint64_t)(p >> 64);
	} else {
		uint64_t p = a * b;
		lo = (uint32_t)p;
		hi = p >> 32;
	}
	interp_wr(x, 1, lo);
	interp_wr(x, 0, hi);
	return INTERP_OK;
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define MULDIV_OPS(X) \
	X(MUL, h_mul, IFL_NONE, IFL_C | IFL_O, IFL_SZP | IFL_A, INTERP_VR_MUL) \
	X(IMUL, h_imul, IFL_NONE, IFL_C | IFL_O, IFL_SZP | IFL_A, INTERP_VR_MUL) \
	X(DIV, h_div, IFL_NONE, IFL_NONE, IFL_ALL, INTERP_VR_DIV) \
	X(IDIV, h_idiv, IFL_NONE, IFL_NONE, IFL_ALL, INTERP_VR_DIV) \
	X(MULX, h_mulx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_muldiv[] = { MULDIV_OPS(INTERP_GP_ROW) INTERP_OPS_END };
