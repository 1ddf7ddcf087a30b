/* interp/shift.c — shifts and rotates: SHL/SAL SHR SAR ROL ROR RCL RCR,
 * SHLD SHRD, and the flagless BMI2 forms SARX SHLX SHRX RORX.
 *
 * Workload: ~3% of instructions, mostly shifts by an immediate.
 *
 * Flags: a masked count of 0 changes no flags (the destination is still
 * written, which zero-extends a 32-bit register). Where the manual leaves
 * OF/AF/CF or the result undefined (counts > 1, counts beyond the width),
 * each vendor's answer is computed under the model vendor.c chose
 * (interp_vmodel[]): shl/shr/sar, rol/ror/rcl/rcr and shld/shrd are three
 * rule families; one the host follows in no model stops.
 *
 * Concurrency: none beyond the thread's own state and buffered stores.
 */
#include "interp/interp.h"
#include "interp/internal.h"

enum { S_ROL, S_ROR, S_RCL, S_RCR, S_SHL, S_SHR, S_SAL, S_SAR };

static void szp(uint64_t *f, uint64_t r, unsigned size)
{
	uint64_t m = interp_mask(size);
	*f &= ~(uint64_t)(INTERP_SF | INTERP_ZF | INTERP_PF);
	if ((r & m) == 0)
		*f |= INTERP_ZF;
	if ((r >> (size * 8 - 1)) & 1)
		*f |= INTERP_SF;
	if (!__builtin_parityll(r & 0xff))
		*f |= INTERP_PF;
}

static void setf(uint64_t *f, uint64_t bit, int v)
{
	if (v)
		*f |= bit;
	else
		*f &= ~bit;
}

/* The undefined AF of a shift: Zen 5 sets it, Intel clears it. */
static void shift_af(uint64_t *f, int v)
{
	setf(f, INTERP_AF, v == INTERP_VENDOR_AMD);
}

/* Shift or rotate a (size bytes) by count c (already masked) under the
 * vendor model v. Where OF is undefined (counts above 1), Intel computes
 * it as for a count of 1, from the operand (am, a2: its top two bits);
 * Zen 5 from the result. Intel leaves the flags of an RCL/RCR whose count
 * is a multiple of width+1 alone; Zen 5 rewrites OF. */
static uint64_t do_shift(int kind, uint64_t a, unsigned c, unsigned size, uint64_t *f, int v)
{
	unsigned bits = size * 8;
	uint64_t m = interp_mask(size), r = a, msb;
	int cf, intel = v == INTERP_VENDOR_INTEL;
	uint64_t am, a2;

	a &= m;
	if (c == 0)
		return a;
	am = (a >> (bits - 1)) & 1;
	a2 = (a >> (bits - 2)) & 1;
	switch (kind) {
	case S_SHL: case S_SAL:
		r = c < 64 ? (a << c) & m : 0;
		cf = c <= bits ? (a >> (bits - c)) & 1 : 0;
		if (c > bits && c < 64)
			cf = 0;
		setf(f, INTERP_CF, cf);
		setf(f, INTERP_OF, intel ? am ^ a2 : ((r >> (bits - 1)) & 1) ^ cf);
		szp(f, r, size);
		shift_af(f, v);
		break;
	case S_SHR:
		r = c < 64 ? a >> c : 0;
		cf = c <= 64 ? (a >> (c - 1)) & 1 : 0;
		setf(f, INTERP_CF, cf);
		setf(f, INTERP_OF, intel || c == 1 ? am : ((r >> (bits - 1)) & 1) ^ ((r >> (bits - 2)) & 1));
		szp(f, r, size);
		shift_af(f, v);
		break;
	case S_SAR: {
		int64_t s = (int64_t)interp_sext(a, size);
		unsigned cc = c > 63 ? 63 : c;
		r = (uint64_t)(s >> cc) & m;
		cf = (s >> (c - 1 > 63 ? 63 : c - 1)) & 1;
		setf(f, INTERP_CF, cf);
		setf(f, INTERP_OF, 0);
		szp(f, r, size);
		shift_af(f, v);
		break;
	}
	case S_ROL: {
		unsigned k = c % bits;
		r = k ? ((a << k) | (a >> (bits - k))) & m : a;
		cf = r & 1;
		msb = (r >> (bits - 1)) & 1;
		setf(f, INTERP_CF, cf);
		setf(f, INTERP_OF, intel ? am ^ a2 : msb ^ cf);
		break;
	}
	case S_ROR: {
		unsigned k = c % bits;
		r = k ? ((a >> k) | (a << (bits - k))) & m : a;
		msb = (r >> (bits - 1)) & 1;
		setf(f, INTERP_CF, msb);
		setf(f, INTERP_OF, intel ? am ^ (a & 1) : msb ^ ((r >> (bits - 2)) & 1));
		break;
	}
	case S_RCL: {
		unsigned k = c % (bits + 1);
		uint64_t carry = *f & INTERP_CF ? 1 : 0;
		if (intel && k == 0)
			return a;
		for (unsigned i = 0; i < k; i++) {
			uint64_t out = (r >> (bits - 1)) & 1;
			r = ((r << 1) | carry) & m;
			carry = out;
		}
		setf(f, INTERP_CF, carry);
		setf(f, INTERP_OF, intel ? am ^ a2 : ((r >> (bits - 1)) & 1) ^ carry);
		break;
	}
	default: { /* RCR */
		unsigned k = c % (bits + 1);
		uint64_t carry = *f & INTERP_CF ? 1 : 0, cin = carry;
		if (intel && k == 0)
			return a;
		for (unsigned i = 0; i < k; i++) {
			uint64_t out = r & 1;
			r = (r >> 1) | (carry << (bits - 1));
			carry = out;
		}
		setf(f, INTERP_CF, carry);
		setf(f, INTERP_OF, intel ? am ^ cin : ((r >> (bits - 1)) & 1) ^ ((r >> (bits - 2)) & 1));
		break;
	}
	}
	return r & m;
}

static int shift(struct interp_exec *x, int kind)
{
	unsigned size = OPS(0);
	uint64_t a, c = 1, r, f = x->rflags;
	int rc, v = interp_vmodel_row(x);   /* shift or rotate */

	if (IN->nvis > 1 && (rc = interp_rd(x, 1, &c)))
		return rc;
	if ((rc = interp_rd(x, 0, &a)))
		return rc;
	c &= size == 8 ? 63 : 31;
	if (c && v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	r = do_shift(kind, a, (unsigned)c, size, &f, v);
	/* Intel rotates of a register by an immediate count other than 1
	 * leave OF as it was (by CL, or of memory, they compute it as for a
	 * count of 1): 32 of 32 native rol/ror by $2, $5, $8, $31 on the
	 * Xeon 6/207, each width; tests/unit/interp_diff's random forms. */
	if (v == INTERP_VENDOR_INTEL && (kind == S_ROL || kind == S_ROR) && c != 1 && IN->nvis > 1 &&
	    IN->op[1].type == INTERP_OP_IMM && IN->op[0].type == INTERP_OP_REG)
		f = (f & ~(uint64_t)INTERP_OF) | (x->rflags & INTERP_OF);
	if ((rc = interp_wr_last(x, 0, r)))
		return rc;
	x->rflags = f;
	return INTERP_OK;
}

static int h_rol(struct interp_exec *x) { return shift(x, S_ROL); }
static int h_ror(struct interp_exec *x) { return shift(x, S_ROR); }
static int h_rcl(struct interp_exec *x) { return shift(x, S_RCL); }
static int h_rcr(struct interp_exec *x) { return shift(x, S_RCR); }
static int h_shl(struct interp_exec *x) { return shift(x, S_SHL); }
static int h_shr(struct interp_exec *x) { return shift(x, S_SHR); }
static int h_sar(struct interp_exec *x) { return shift(x, S_SAR); }

/* SHLD/SHRD dst, src, count. A 16-bit count above 16 is undefined:
 * Zen 5 rotates the source by the count (CF 0, SHLD's OF 0); Intel
 * shifts through dst:src:dst, 48 bits, as it does for every 16-bit count.
 * OF for counts above 1: Zen 5 from the result, Intel as for a count of
 * 1, from the inputs. AF: Zen 5 sets it, Intel clears it. */
static int dshift(struct interp_exec *x, int left)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t a, b, c, r, f = x->rflags, m = interp_mask(size), am;
	int rc, cf, of, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 2, &c)) || (rc = interp_rd(x, 1, &b)) ||
	    (rc = interp_rd(x, 0, &a)))
		return rc;
	c &= size == 8 ? 63 : 31;
	if (c == 0)
		return interp_wr(x, 0, a);
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	a &= m;
	b &= m;
	am = (a >> (bits - 1)) & 1;
	if (v == INTERP_VENDOR_INTEL && size == 2) {
		uint64_t w = a << 32 | b << 16 | a;
		r = (left ? w >> (32 - c) : w >> c) & m;
		cf = left ? (w >> (48 - c)) & 1 : (w >> (c - 1)) & 1;
	} else if (c > bits) {        /* Zen 5, 16-bit */
		unsigned k = c & 15;
		r = k ? (left ? b << k | b >> (16 - k) : b >> k | b << (16 - k)) & m : b;
		cf = 0;
	} else if (left) {
		r = c == bits ? b : ((a << c) | (b >> (bits - c))) & m;
		cf = (a >> (bits - c)) & 1;
	} else {
		r = c == bits ? b : ((a >> c) | (b << (bits - c))) & m;
		cf = (a >> (c - 1)) & 1;
	}
	if (v == INTERP_VENDOR_INTEL)
		of = am ^ (left ? (a >> (bits - 2)) & 1 : b & 1);
	else if (!left)
		of = ((r >> (bits - 1)) ^ (r >> (bits - 2))) & 1;
	else if (c > bits)
		of = 0;
	else if (c == bits)
		of = cf;
	else
		of = ((r >> (bits - 1)) & 1) ^ cf;
	setf(&f, INTERP_CF, cf);
	setf(&f, INTERP_OF, of);
	szp(&f, r, size);
	shift_af(&f, v);
	if ((rc = interp_wr_last(x, 0, r)))
		return rc;
	x->rflags = f;
	return INTERP_OK;
}

static int h_shld(struct interp_exec *x) { return dshift(x, 1); }
static int h_shrd(struct interp_exec *x) { return dshift(x, 0); }

/* BMI2: dst, src (r/m), count (vvvv); no flags. */
static int bmi_shift(struct interp_exec *x, int kind)
{
	unsigned size = OPS(0);
	uint64_t a, c, r;
	int rc;

	if ((rc = interp_rd(x, 1, &a)) || (rc = interp_rd(x, 2, &c)))
		return rc;
	c &= size == 8 ? 63 : 31;
	if (kind == S_SHL)
		r = a << c;
	else if (kind == S_SHR)
		r = a >> c;
	else
		r = (uint64_t)((int64_t)interp_sext(a, size) >> c);
	return interp_wr(x, 0, r & interp_mask(size));
}

static int h_shlx(struct interp_exec *x) { return bmi_shift(x, S_SHL); }
static int h_shrx(struct interp_exec *x) { return bmi_shift(x, S_SHR); }
static int h_sarx(struct interp_exec *x) { return bmi_shift(x, S_SAR); }

static int h_rorx(struct interp_exec *x)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t a, c, r, m = interp_mask(size);
	int rc;

	if ((rc = interp_rd(x, 1, &a)) || (rc = interp_rd(x, 2, &c)))
		return rc;
	c &= bits - 1;
	r = c ? ((a >> c) | (a << (bits - c))) & m : a;
	return interp_wr(x, 0, r);
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define SHIFT_OPS(X) \
	X(SHL, h_shl, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_O | IFL_A, INTERP_VR_SHIFT) \
	X(SHR, h_shr, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_O | IFL_A, INTERP_VR_SHIFT) \
	X(SAR, h_sar, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_O | IFL_A, INTERP_VR_SHIFT) \
	X(ROL, h_rol, IFL_NONE, IFL_C | IFL_O, IFL_O, INTERP_VR_ROTATE) \
	X(ROR, h_ror, IFL_NONE, IFL_C | IFL_O, IFL_O, INTERP_VR_ROTATE) \
	X(RCL, h_rcl, IFL_C, IFL_C | IFL_O, IFL_O, INTERP_VR_ROTATE) \
	X(RCR, h_rcr, IFL_C, IFL_C | IFL_O, IFL_O, INTERP_VR_ROTATE) \
	X(SHLD, h_shld, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_ALL, INTERP_VR_DSHIFT) \
	X(SHRD, h_shrd, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_ALL, INTERP_VR_DSHIFT) \
	X(SHLX, h_shlx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SHRX, h_shrx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SARX, h_sarx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(RORX, h_rorx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_shift[] = { SHIFT_OPS(INTERP_GP_ROW) INTERP_OPS_END };
