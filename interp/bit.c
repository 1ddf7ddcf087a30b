/* interp/bit.c — bit operations: BT BTS BTR BTC, BSF BSR, TZCNT LZCNT
 * POPCNT, BMI1 (ANDN BEXTR BLSI BLSMSK BLSR), BMI2 (BZHI PDEP PEXT) and ADX
 * (ADCX ADOX).
 *
 * Workload: ~2% of instructions; TZCNT/BSF come from glibc's string
 * functions, BT from bitsets.
 *
 * Concurrency: LOCK BTS/BTR/BTC on memory are done as a compare-and-swap
 * on the real memory. BT* with a register bit offset address memory
 * outside the operand (offset >> 3, signed), exactly as the CPU does.
 */
#include "interp/interp.h"
#include "interp/internal.h"

static void setf(uint64_t *f, uint64_t bit, int v)
{
	if (v)
		*f |= bit;
	else
		*f &= ~bit;
}

/* ZF, SF from the result; the undefined AF/PF of the BMI instructions
 * under the vendor model v: AF cleared by both, PF the parity of the low
 * byte on Zen 5, cleared on Intel. */
static void zs(uint64_t *f, uint64_t r, unsigned size, int v)
{
	setf(f, INTERP_ZF, (r & interp_mask(size)) == 0);
	setf(f, INTERP_SF, (r >> (size * 8 - 1)) & 1);
	setf(f, INTERP_PF, v == INTERP_VENDOR_AMD && !__builtin_parityll(r & 0xff));
	*f &= ~(uint64_t)INTERP_AF;
}

enum { B_T, B_TS, B_TR, B_TC };

static uint64_t bt_apply(int kind, uint64_t v, unsigned bit)
{
	switch (kind) {
	case B_TS: return v | (1ull << bit);
	case B_TR: return v & ~(1ull << bit);
	case B_TC: return v ^ (1ull << bit);
	default: return v;
	}
}

static int bt(struct interp_exec *x, int kind)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t off, v = 0, nv, f = x->rflags;
	unsigned bit;
	int rc;

	if ((rc = interp_rd(x, 1, &off)))
		return rc;
	if (IN->op[0].type == INTERP_OP_MEM) {
		uint64_t ea = interp_ea(x, 0);
		if (IN->op[1].type != INTERP_OP_IMM) {
			int64_t so = (int64_t)interp_sext(off, size);
			ea += (uint64_t)((so >> (size == 8 ? 6 : size == 4 ? 5 : 4)) * (int64_t)size);
		}
		bit = off & (bits - 1);
		if (interp_locked(IN) && kind != B_T) {
			if (interp_mem_load(&v, ea, size))
				return INTERP_STOP_WOULD_FAULT;
			for (;;) {
				int c;
				nv = bt_apply(kind, v, bit);
				c = interp_mem_cas(ea, &v, &nv, size);
				if (c < 0)
					return INTERP_STOP_WOULD_FAULT;
				if (c)
					break;
			}
		} else {
			if ((rc = interp_load(x, ea, &v, size)))
				return rc;
			nv = bt_apply(kind, v, bit);
			if (kind != B_T && (rc = interp_store(x, ea, &nv, size)))
				return rc;
		}
	} else {
		if (interp_locked(IN))
			return INTERP_STOP_WOULD_FAULT;
		if ((rc = interp_rd(x, 0, &v)))
			return rc;
		bit = off & (bits - 1);
		nv = bt_apply(kind, v, bit);
		if (kind != B_T)
			interp_wr(x, 0, nv);
	}
	setf(&f, INTERP_CF, (v >> bit) & 1);
	x->rflags = f;
	return INTERP_OK;
}

static int h_bt(struct interp_exec *x) { return bt(x, B_T); }
static int h_bts(struct interp_exec *x) { return bt(x, B_TS); }
static int h_btr(struct interp_exec *x) { return bt(x, B_TR); }
static int h_btc(struct interp_exec *x) { return bt(x, B_TC); }

static int bsx(struct interp_exec *x, int rev)
{
	unsigned size = OPS(0);
	uint64_t s;
	int rc;

	if ((rc = interp_rd(x, 1, &s)))
		return rc;
	if (interp_vmodel_row(x) == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;   /* both models agree; the host not */
	if (s == 0) {
		/* destination unchanged (AMD documents it; Intel does it);
		 * undefined flags: Zen 5 leaves only ZF and PF set */
		x->rflags = (x->rflags & ~(uint64_t)INTERP_ARITH_FLAGS) | INTERP_ZF | INTERP_PF;
		return INTERP_OK;
	}
	uint64_t r = rev ? 63 - __builtin_clzll(s) : __builtin_ctzll(s);
	/* undefined flags: Zen 5 clears CF OF SF AF, PF = parity(result) */
	x->rflags &= ~(uint64_t)INTERP_ARITH_FLAGS;
	setf(&x->rflags, INTERP_PF, !__builtin_parityll(r & 0xff));
	interp_wr(x, 0, r);
	(void)size;
	return INTERP_OK;
}

static int h_bsf(struct interp_exec *x) { return bsx(x, 0); }
static int h_bsr(struct interp_exec *x) { return bsx(x, 1); }

static int cnt(struct interp_exec *x, int which)
{
	unsigned size = OPS(0), bits = size * 8;
	uint64_t s, r, f = x->rflags;
	int rc, v = which == 2 ? 0 : interp_vmodel_row(x);   /* popcnt: none */

	if ((rc = interp_rd(x, 1, &s)))
		return rc;
	if (which != 2 && v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	s &= interp_mask(size);
	if (which == 0)        /* tzcnt */
		r = s ? (uint64_t)__builtin_ctzll(s) : bits;
	else if (which == 1)   /* lzcnt */
		r = s ? (uint64_t)(__builtin_clzll(s) - (64 - bits)) : bits;
	else
		r = __builtin_popcountll(s);
	if (which == 2) {
		f &= ~(uint64_t)INTERP_ARITH_FLAGS;
		setf(&f, INTERP_ZF, s == 0);
	} else {
		/* undefined: both clear SF AF PF; Zen 5 keeps OF, Intel
		 * clears it */
		f &= ~(uint64_t)(INTERP_SF | INTERP_AF | INTERP_PF);
		if (v == INTERP_VENDOR_INTEL)
			f &= ~(uint64_t)INTERP_OF;
		setf(&f, INTERP_CF, s == 0);
		setf(&f, INTERP_ZF, r == 0);
	}
	interp_wr(x, 0, r);
	x->rflags = f;
	return INTERP_OK;
}

static int h_tzcnt(struct interp_exec *x) { return cnt(x, 0); }
static int h_lzcnt(struct interp_exec *x) { return cnt(x, 1); }
static int h_popcnt(struct interp_exec *x) { return cnt(x, 2); }

static int h_andn(struct interp_exec *x)
{
	unsigned size = OPS(0);
	uint64_t a, b, r, f = x->rflags;
	int rc, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 1, &a)) || (rc = interp_rd(x, 2, &b)))
		return rc;
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	r = ~a & b & interp_mask(size);
	zs(&f, r, size, v);
	f &= ~(uint64_t)(INTERP_CF | INTERP_OF);
	interp_wr(x, 0, r);
	x->rflags = f;
	return INTERP_OK;
}

static int h_bextr(struct interp_exec *x)
{
	unsigned size = OPS(0), bits = size * 8, start, len;
	uint64_t s, c, r, f = x->rflags;
	int rc, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 1, &s)) || (rc = interp_rd(x, 2, &c)))
		return rc;
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	start = c & 0xff;
	len = (c >> 8) & 0xff;
	r = start < bits ? s >> start : 0;
	if (len < 64)
		r &= (1ull << len) - 1;
	r &= interp_mask(size);
	zs(&f, r, size, v);
	f &= ~(uint64_t)(INTERP_CF | INTERP_OF | INTERP_SF);
	if (v == INTERP_VENDOR_AMD)   /* measured: Zen 5 sets AF */
		f |= INTERP_AF;
	interp_wr(x, 0, r);
	x->rflags = f;
	return INTERP_OK;
}

enum { BL_I, BL_MSK, BL_R };

static int bls(struct interp_exec *x, int kind)
{
	unsigned size = OPS(0);
	uint64_t s, r, f = x->rflags, m = interp_mask(size);
	int rc, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 1, &s)))
		return rc;
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	switch (kind) {
	case BL_I: r = (0 - s) & s; setf(&f, INTERP_CF, s != 0); break;
	case BL_MSK: r = (s - 1) ^ s; setf(&f, INTERP_CF, s == 0); break;
	default: r = (s - 1) & s; setf(&f, INTERP_CF, s == 0); break;
	}
	r &= m;
	zs(&f, r, size, v);
	f &= ~(uint64_t)INTERP_OF;
	interp_wr(x, 0, r);
	x->rflags = f;
	return INTERP_OK;
}

static int h_blsi(struct interp_exec *x) { return bls(x, BL_I); }
static int h_blsmsk(struct interp_exec *x) { return bls(x, BL_MSK); }
static int h_blsr(struct interp_exec *x) { return bls(x, BL_R); }

static int h_bzhi(struct interp_exec *x)
{
	unsigned size = OPS(0), bits = size * 8, n;
	uint64_t s, i, r, f = x->rflags;
	int rc, v = interp_vmodel_row(x);

	if ((rc = interp_rd(x, 1, &s)) || (rc = interp_rd(x, 2, &i)))
		return rc;
	if (v == INTERP_VENDOR_NONE)
		return INTERP_STOP_UNSUPPORTED;
	n = i & 0xff;
	if (n < bits) {
		r = s & ((1ull << n) - 1);
		setf(&f, INTERP_CF, 0);
	} else {
		r = s;
		setf(&f, INTERP_CF, 1);
	}
	r &= interp_mask(size);
	zs(&f, r, size, v);
	f &= ~(uint64_t)INTERP_OF;
	interp_wr(x, 0, r);
	x->rflags = f;
	return INTERP_OK;
}

static int h_pdep(struct interp_exec *x)
{
	uint64_t s, m, r = 0;
	int rc;

	if ((rc = interp_rd(x, 1, &s)) || (rc = interp_rd(x, 2, &m)))
		return rc;
	for (uint64_t k = 1; m; m &= m - 1, k <<= 1)
		if (s & k)
			r |= m & -m;
	return interp_wr(x, 0, r);
}

static int h_pext(struct interp_exec *x)
{
	uint64_t s, m, r = 0;
	int rc;

	if ((rc = interp_rd(x, 1, &s)) || (rc = interp_rd(x, 2, &m)))
		return rc;
	for (uint64_t k = 1; m; m &= m - 1, k <<= 1)
		if (s & m & -m)
			r |= k;
	return interp_wr(x, 0, r);
}

/* ADCX (carry in/out through CF) and ADOX (through OF). */
static int adx(struct interp_exec *x, uint64_t flag)
{
	unsigned size = OPS(0);
	uint64_t a, b, c = x->rflags & flag ? 1 : 0, r, m = interp_mask(size);
	int rc, out;

	if ((rc = interp_rd(x, 0, &a)) || (rc = interp_rd(x, 1, &b)))
		return rc;
	r = (a + b + c) & m;
	out = r < a || (c && r == a);
	interp_wr(x, 0, r);
	setf(&x->rflags, flag, out);
	return INTERP_OK;
}

static int h_adcx(struct interp_exec *x) { return adx(x, INTERP_CF); }
static int h_adox(struct interp_exec *x) { return adx(x, INTERP_OF); }

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define BIT_OPS(X) \
	X(BT, h_bt, IFL_NONE, IFL_C, IFL_O | IFL_S | IFL_A | IFL_P, INTERP_VR_NONE) \
	X(BTS, h_bts, IFL_NONE, IFL_C, IFL_O | IFL_S | IFL_A | IFL_P, INTERP_VR_NONE) \
	X(BTR, h_btr, IFL_NONE, IFL_C, IFL_O | IFL_S | IFL_A | IFL_P, INTERP_VR_NONE) \
	X(BTC, h_btc, IFL_NONE, IFL_C, IFL_O | IFL_S | IFL_A | IFL_P, INTERP_VR_NONE) \
	X(BSF, h_bsf, IFL_NONE, IFL_Z, IFL_C | IFL_P | IFL_A | IFL_S | IFL_O, INTERP_VR_BSX) \
	X(BSR, h_bsr, IFL_NONE, IFL_Z, IFL_C | IFL_P | IFL_A | IFL_S | IFL_O, INTERP_VR_BSX) \
	X(TZCNT, h_tzcnt, IFL_NONE, IFL_C | IFL_Z, IFL_O | IFL_S | IFL_P | IFL_A, INTERP_VR_CNT) \
	X(LZCNT, h_lzcnt, IFL_NONE, IFL_C | IFL_Z, IFL_O | IFL_S | IFL_P | IFL_A, INTERP_VR_CNT) \
	X(POPCNT, h_popcnt, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(ANDN, h_andn, IFL_NONE, IFL_S | IFL_Z | IFL_C | IFL_O, IFL_A | IFL_P, INTERP_VR_BMI) \
	X(BEXTR, h_bextr, IFL_NONE, IFL_Z | IFL_C | IFL_O, IFL_A | IFL_S | IFL_P, INTERP_VR_BMI) \
	X(BLSI, h_blsi, IFL_NONE, IFL_S | IFL_Z | IFL_C | IFL_O, IFL_A | IFL_P, INTERP_VR_BMI) \
	X(BLSMSK, h_blsmsk, IFL_NONE, IFL_S | IFL_Z | IFL_C | IFL_O, IFL_A | IFL_P, INTERP_VR_BMI) \
	X(BLSR, h_blsr, IFL_NONE, IFL_S | IFL_Z | IFL_C | IFL_O, IFL_A | IFL_P, INTERP_VR_BMI) \
	X(BZHI, h_bzhi, IFL_NONE, IFL_S | IFL_Z | IFL_C | IFL_O, IFL_A | IFL_P, INTERP_VR_BMI) \
	X(PDEP, h_pdep, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PEXT, h_pext, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(ADCX, h_adcx, IFL_C, IFL_C, IFL_NONE, INTERP_VR_NONE) \
	X(ADOX, h_adox, IFL_O, IFL_O, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_bit[] = { BIT_OPS(INTERP_GP_ROW) INTERP_OPS_END };
