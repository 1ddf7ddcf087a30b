/* interp/opmask.c — AVX-512 opmask instructions (kmov, kortest, ktest, the
 * k-register logic, shifts and unpacks) and vzeroupper/vzeroall.
 *
 * Workload: glibc's EVEX string functions end nearly every loop iteration
 * with kmovd/kmovq of a compare mask into a GPR (then tzcnt/bsf) or a
 * kortestd to test two masks at once, and every AVX2/EVEX function returns
 * through vzeroupper. The opmask width (b/w/d/q) comes from the mnemonic:
 * Zydis reports k operands as 64 bits whatever the instruction uses.
 *
 * Concurrency: thread state only (kmov to/from memory through
 * interp_load/interp_store).
 */
#include "interp/vec.h"

static unsigned kwidth(int m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_KMOVB: case ZYDIS_MNEMONIC_KORTESTB: case ZYDIS_MNEMONIC_KTESTB:
	case ZYDIS_MNEMONIC_KANDB: case ZYDIS_MNEMONIC_KANDNB: case ZYDIS_MNEMONIC_KORB:
	case ZYDIS_MNEMONIC_KXORB: case ZYDIS_MNEMONIC_KXNORB: case ZYDIS_MNEMONIC_KNOTB:
	case ZYDIS_MNEMONIC_KADDB: case ZYDIS_MNEMONIC_KSHIFTLB: case ZYDIS_MNEMONIC_KSHIFTRB:
		return 1;
	case ZYDIS_MNEMONIC_KMOVW: case ZYDIS_MNEMONIC_KORTESTW: case ZYDIS_MNEMONIC_KTESTW:
	case ZYDIS_MNEMONIC_KANDW: case ZYDIS_MNEMONIC_KANDNW: case ZYDIS_MNEMONIC_KORW:
	case ZYDIS_MNEMONIC_KXORW: case ZYDIS_MNEMONIC_KXNORW: case ZYDIS_MNEMONIC_KNOTW:
	case ZYDIS_MNEMONIC_KADDW: case ZYDIS_MNEMONIC_KSHIFTLW: case ZYDIS_MNEMONIC_KSHIFTRW:
	case ZYDIS_MNEMONIC_KUNPCKBW:
		return 2;
	case ZYDIS_MNEMONIC_KMOVD: case ZYDIS_MNEMONIC_KORTESTD: case ZYDIS_MNEMONIC_KTESTD:
	case ZYDIS_MNEMONIC_KANDD: case ZYDIS_MNEMONIC_KANDND: case ZYDIS_MNEMONIC_KORD:
	case ZYDIS_MNEMONIC_KXORD: case ZYDIS_MNEMONIC_KXNORD: case ZYDIS_MNEMONIC_KNOTD:
	case ZYDIS_MNEMONIC_KADDD: case ZYDIS_MNEMONIC_KSHIFTLD: case ZYDIS_MNEMONIC_KSHIFTRD:
	case ZYDIS_MNEMONIC_KUNPCKWD:
		return 4;
	default:
		return 8;
	}
}

static int kcheck(struct interp_exec *x)
{
	if (!(x->st->xstate_avail & INTERP_XS_OPMASK))
		return INTERP_STOP_BADSTATE;
	return INTERP_OK;
}

/* Read operand i as a w-byte value (k register, GPR or memory). */
static int kget(struct interp_exec *x, int i, unsigned w, uint64_t *v)
{
	const struct interp_operand *op = &x->in->op[i];
	int rc;

	if (op->type == INTERP_OP_MEM) {
		*v = 0;
		rc = interp_load(x, interp_ea(x, i), v, w);
	} else {
		rc = interp_read_u64(x, i, v);
	}
	*v &= interp_mask(w);
	return rc;
}

/* Write v (already w bytes wide) to operand i: a k register is written
 * whole (zero-extended), a GPR as 32 or 64 bits, memory as w bytes. */
static int kput(struct interp_exec *x, int i, unsigned w, uint64_t v)
{
	const struct interp_operand *op = &x->in->op[i];

	if (op->type == INTERP_OP_MEM)
		return interp_store(x, interp_ea(x, i), &v, w);
	if (op->type == INTERP_OP_REG && op->rkind == INTERP_RK_GPR) {
		interp_gpr_set(x, op->idx, w == 8 ? 8 : 4, v);
		if (x->obs) {
			x->rec.dst[i] = v;
			x->rec.dst_mask |= 1u << i;
		}
		return INTERP_OK;
	}
	if (op->type == INTERP_OP_REG && op->rkind == INTERP_RK_K)
		return interp_write_u64(x, i, v);
	return INTERP_STOP_UNSUPPORTED;
}

static int h_kmov(struct interp_exec *x)
{
	unsigned w = kwidth(x->in->mnemonic);
	uint64_t v;
	int rc;

	if ((rc = kcheck(x)) || (rc = kget(x, 1, w, &v)))
		return rc;
	return kput(x, 0, w, v);
}

/* kortest: ZF if (a|b) is zero, CF if all ones; ktest: ZF if (a&b) is
 * zero, CF if (~a&b) is zero. The other arithmetic flags are cleared. */
static int h_ktest(struct interp_exec *x)
{
	int m = x->in->mnemonic;
	unsigned w = kwidth(m);
	int ortest = m == ZYDIS_MNEMONIC_KORTESTB || m == ZYDIS_MNEMONIC_KORTESTW ||
		     m == ZYDIS_MNEMONIC_KORTESTD || m == ZYDIS_MNEMONIC_KORTESTQ;
	uint64_t a, b, f = 0, all = interp_mask(w);
	int rc;

	if ((rc = kcheck(x)) || (rc = kget(x, 0, w, &a)) || (rc = kget(x, 1, w, &b)))
		return rc;
	if (ortest) {
		if (!(a | b))
			f |= INTERP_ZF;
		if ((a | b) == all)
			f |= INTERP_CF;
	} else {
		if (!(a & b))
			f |= INTERP_ZF;
		if (!(~a & b & all))
			f |= INTERP_CF;
	}
	x->rflags = (x->rflags & ~(uint64_t)INTERP_ARITH_FLAGS) | f;
	return INTERP_OK;
}

static int h_klogic(struct interp_exec *x)
{
	int m = x->in->mnemonic;
	unsigned w = kwidth(m);
	uint64_t a, b = 0, r;
	int rc;

	if ((rc = kcheck(x)) || (rc = kget(x, 1, w, &a)))
		return rc;
	if (x->in->nvis > 2 && (rc = kget(x, 2, w, &b)))
		return rc;
	switch (m) {
	case ZYDIS_MNEMONIC_KANDB: case ZYDIS_MNEMONIC_KANDW:
	case ZYDIS_MNEMONIC_KANDD: case ZYDIS_MNEMONIC_KANDQ:
		r = a & b; break;
	case ZYDIS_MNEMONIC_KANDNB: case ZYDIS_MNEMONIC_KANDNW:
	case ZYDIS_MNEMONIC_KANDND: case ZYDIS_MNEMONIC_KANDNQ:
		r = ~a & b; break;
	case ZYDIS_MNEMONIC_KORB: case ZYDIS_MNEMONIC_KORW:
	case ZYDIS_MNEMONIC_KORD: case ZYDIS_MNEMONIC_KORQ:
		r = a | b; break;
	case ZYDIS_MNEMONIC_KXORB: case ZYDIS_MNEMONIC_KXORW:
	case ZYDIS_MNEMONIC_KXORD: case ZYDIS_MNEMONIC_KXORQ:
		r = a ^ b; break;
	case ZYDIS_MNEMONIC_KXNORB: case ZYDIS_MNEMONIC_KXNORW:
	case ZYDIS_MNEMONIC_KXNORD: case ZYDIS_MNEMONIC_KXNORQ:
		r = ~(a ^ b); break;
	case ZYDIS_MNEMONIC_KADDB: case ZYDIS_MNEMONIC_KADDW:
	case ZYDIS_MNEMONIC_KADDD: case ZYDIS_MNEMONIC_KADDQ:
		r = a + b; break;
	case ZYDIS_MNEMONIC_KNOTB: case ZYDIS_MNEMONIC_KNOTW:
	case ZYDIS_MNEMONIC_KNOTD: case ZYDIS_MNEMONIC_KNOTQ:
		r = ~a; break;
	case ZYDIS_MNEMONIC_KUNPCKBW: case ZYDIS_MNEMONIC_KUNPCKWD:
	case ZYDIS_MNEMONIC_KUNPCKDQ: {
		/* dst = src1's low half above src2's low half */
		unsigned h = w * 4;
		r = ((a & (interp_mask(w) >> h)) << h) | (b & (interp_mask(w) >> h));
		break;
	}
	default:
		return INTERP_STOP_UNSUPPORTED;
	}
	return kput(x, 0, 8, r & interp_mask(w));
}

static int h_kshift(struct interp_exec *x)
{
	int m = x->in->mnemonic;
	unsigned w = kwidth(m), c;
	uint64_t a, r;
	int left = m == ZYDIS_MNEMONIC_KSHIFTLB || m == ZYDIS_MNEMONIC_KSHIFTLW ||
		   m == ZYDIS_MNEMONIC_KSHIFTLD || m == ZYDIS_MNEMONIC_KSHIFTLQ;
	int rc;

	if ((rc = kcheck(x)) || (rc = kget(x, 1, w, &a)))
		return rc;
	c = (unsigned)(x->in->op[2].val & 0xff);
	r = c >= w * 8 ? 0 : left ? a << c : a >> c;
	return kput(x, 0, 8, r & interp_mask(w));
}

/* vzeroupper: bits 128..511 of zmm0-15 become zero (zmm16-31 keep theirs);
 * vzeroall: all of zmm0-15. */
static int h_vzero(struct interp_exec *x)
{
	int all = x->in->mnemonic == ZYDIS_MNEMONIC_VZEROALL;

	for (int i = 0; i < 16; i++) {
		memset(x->st->zmm[i].b + (all ? 0 : 16), 0, all ? 64 : 48);
		if (all)
			vx_touch(x, i, 16, 1);
	}
	/* upper parts: write back zeros only where they were live */
	x->st->xstate_dirty |= x->st->xstate_bv & (INTERP_XS_YMM | INTERP_XS_ZMM_H);
	return INTERP_OK;
}

const struct interp_family interp_family_evex[] = {
	{ ZYDIS_MNEMONIC_KMOVB, h_kmov }, { ZYDIS_MNEMONIC_KMOVW, h_kmov },
	{ ZYDIS_MNEMONIC_KMOVD, h_kmov }, { ZYDIS_MNEMONIC_KMOVQ, h_kmov },
	{ ZYDIS_MNEMONIC_KORTESTB, h_ktest }, { ZYDIS_MNEMONIC_KORTESTW, h_ktest },
	{ ZYDIS_MNEMONIC_KORTESTD, h_ktest }, { ZYDIS_MNEMONIC_KORTESTQ, h_ktest },
	{ ZYDIS_MNEMONIC_KTESTB, h_ktest }, { ZYDIS_MNEMONIC_KTESTW, h_ktest },
	{ ZYDIS_MNEMONIC_KTESTD, h_ktest }, { ZYDIS_MNEMONIC_KTESTQ, h_ktest },
	{ ZYDIS_MNEMONIC_KANDB, h_klogic }, { ZYDIS_MNEMONIC_KANDW, h_klogic },
	{ ZYDIS_MNEMONIC_KANDD, h_klogic }, { ZYDIS_MNEMONIC_KANDQ, h_klogic },
	{ ZYDIS_MNEMONIC_KANDNB, h_klogic }, { ZYDIS_MNEMONIC_KANDNW, h_klogic },
	{ ZYDIS_MNEMONIC_KANDND, h_klogic }, { ZYDIS_MNEMONIC_KANDNQ, h_klogic },
	{ ZYDIS_MNEMONIC_KORB, h_klogic }, { ZYDIS_MNEMONIC_KORW, h_klogic },
	{ ZYDIS_MNEMONIC_KORD, h_klogic }, { ZYDIS_MNEMONIC_KORQ, h_klogic },
	{ ZYDIS_MNEMONIC_KXORB, h_klogic }, { ZYDIS_MNEMONIC_KXORW, h_klogic },
	{ ZYDIS_MNEMONIC_KXORD, h_klogic }, { ZYDIS_MNEMONIC_KXORQ, h_klogic },
	{ ZYDIS_MNEMONIC_KXNORB, h_klogic }, { ZYDIS_MNEMONIC_KXNORW, h_klogic },
	{ ZYDIS_MNEMONIC_KXNORD, h_klogic }, { ZYDIS_MNEMONIC_KXNORQ, h_klogic },
	{ ZYDIS_MNEMONIC_KADDB, h_klogic }, { ZYDIS_MNEMONIC_KADDW, h_klogic },
	{ ZYDIS_MNEMONIC_KADDD, h_klogic }, { ZYDIS_MNEMONIC_KADDQ, h_klogic },
	{ ZYDIS_MNEMONIC_KNOTB, h_klogic }, { ZYDIS_MNEMONIC_KNOTW, h_klogic },
	{ ZYDIS_MNEMONIC_KNOTD, h_klogic }, { ZYDIS_MNEMONIC_KNOTQ, h_klogic },
	{ ZYDIS_MNEMONIC_KUNPCKBW, h_klogic }, { ZYDIS_MNEMONIC_KUNPCKWD, h_klogic },
	{ ZYDIS_MNEMONIC_KUNPCKDQ, h_klogic },
	{ ZYDIS_MNEMONIC_KSHIFTLB, h_kshift }, { ZYDIS_MNEMONIC_KSHIFTLW, h_kshift },
	{ ZYDIS_MNEMONIC_KSHIFTLD, h_kshift }, { ZYDIS_MNEMONIC_KSHIFTLQ, h_kshift },
	{ ZYDIS_MNEMONIC_KSHIFTRB, h_kshift }, { ZYDIS_MNEMONIC_KSHIFTRW, h_kshift },
	{ ZYDIS_MNEMONIC_KSHIFTRD, h_kshift }, { ZYDIS_MNEMONIC_KSHIFTRQ, h_kshift },
	{ ZYDIS_MNEMONIC_VZEROUPPER, h_vzero }, { ZYDIS_MNEMONIC_VZEROALL, h_vzero },
	{ 0, NULL }
};
