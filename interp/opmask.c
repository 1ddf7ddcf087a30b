/* interp/opmask.c — AVX-512 opmask instructions (kmov, kortest, ktest, the
 * k-register logic, shifts and unpacks) and vzeroupper/vzeroall.
 *
 * Workload: glibc's EVEX string functions end nearly every loop iteration
 * with kmovd/kmovq of a compare mask into a GPR (then tzcnt/bsf) or a
 * kortestd to test two masks at once, and every AVX2/EVEX function returns
 * through vzeroupper.
 *
 * Concurrency: thread state only (kmov to/from memory through
 * interp_load/interp_store).
 */
#include "interp/vec.h"

/* The operation and the opmask width (b/w/d/q) come from the row:
 * Zydis reports k operands as 64 bits whatever the instruction uses. */
enum { KL_AND, KL_ANDN, KL_OR, KL_XOR, KL_XNOR, KL_ADD, KL_NOT, KL_UNPCK };
#define KROW(x) (&interp_row((x)->in)->spec.g)

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
	unsigned w = KROW(x)->width;
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
	unsigned w = KROW(x)->width;
	int ortest = KROW(x)->op;   /* 1: kortest, 0: ktest */
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
	unsigned w = KROW(x)->width;
	uint64_t a, b = 0, r;
	int rc;

	if ((rc = kcheck(x)) || (rc = kget(x, 1, w, &a)))
		return rc;
	if (x->in->nvis > 2 && (rc = kget(x, 2, w, &b)))
		return rc;
	switch (KROW(x)->op) {
	case KL_AND: r = a & b; break;
	case KL_ANDN: r = ~a & b; break;
	case KL_OR: r = a | b; break;
	case KL_XOR: r = a ^ b; break;
	case KL_XNOR: r = ~(a ^ b); break;
	case KL_ADD: r = a + b; break;
	case KL_NOT: r = ~a; break;
	case KL_UNPCK: {
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
	unsigned w = KROW(x)->width, c;
	uint64_t a, r;
	int left = KROW(x)->op;     /* 1: kshiftl, 0: kshiftr */
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
			interp_vx_touch(x, i, 16, 1);
	}
	/* upper parts: write back zeros only where they were live */
	x->st->xstate_dirty |= x->st->xstate_bv & (INTERP_XS_YMM | INTERP_XS_ZMM_H);
	return INTERP_OK;
}

/* The rows: mnemonic, handler, operation, opmask width in bytes,
 * arithmetic flags written (kortest/ktest: ZF, CF, the others cleared). */
#define OPMASK_OPS(X) \
	X(KMOVB, h_kmov, 0, 1, IFL_NONE) \
	X(KMOVW, h_kmov, 0, 2, IFL_NONE) \
	X(KMOVD, h_kmov, 0, 4, IFL_NONE) \
	X(KMOVQ, h_kmov, 0, 8, IFL_NONE) \
	X(KORTESTB, h_ktest, 1, 1, IFL_ALL) \
	X(KORTESTW, h_ktest, 1, 2, IFL_ALL) \
	X(KORTESTD, h_ktest, 1, 4, IFL_ALL) \
	X(KORTESTQ, h_ktest, 1, 8, IFL_ALL) \
	X(KTESTB, h_ktest, 0, 1, IFL_ALL) \
	X(KTESTW, h_ktest, 0, 2, IFL_ALL) \
	X(KTESTD, h_ktest, 0, 4, IFL_ALL) \
	X(KTESTQ, h_ktest, 0, 8, IFL_ALL) \
	X(KANDB, h_klogic, KL_AND, 1, IFL_NONE) \
	X(KANDW, h_klogic, KL_AND, 2, IFL_NONE) \
	X(KANDD, h_klogic, KL_AND, 4, IFL_NONE) \
	X(KANDQ, h_klogic, KL_AND, 8, IFL_NONE) \
	X(KANDNB, h_klogic, KL_ANDN, 1, IFL_NONE) \
	X(KANDNW, h_klogic, KL_ANDN, 2, IFL_NONE) \
	X(KANDND, h_klogic, KL_ANDN, 4, IFL_NONE) \
	X(KANDNQ, h_klogic, KL_ANDN, 8, IFL_NONE) \
	X(KORB, h_klogic, KL_OR, 1, IFL_NONE) \
	X(KORW, h_klogic, KL_OR, 2, IFL_NONE) \
	X(KORD, h_klogic, KL_OR, 4, IFL_NONE) \
	X(KORQ, h_klogic, KL_OR, 8, IFL_NONE) \
	X(KXORB, h_klogic, KL_XOR, 1, IFL_NONE) \
	X(KXORW, h_klogic, KL_XOR, 2, IFL_NONE) \
	X(KXORD, h_klogic, KL_XOR, 4, IFL_NONE) \
	X(KXORQ, h_klogic, KL_XOR, 8, IFL_NONE) \
	X(KXNORB, h_klogic, KL_XNOR, 1, IFL_NONE) \
	X(KXNORW, h_klogic, KL_XNOR, 2, IFL_NONE) \
	X(KXNORD, h_klogic, KL_XNOR, 4, IFL_NONE) \
	X(KXNORQ, h_klogic, KL_XNOR, 8, IFL_NONE) \
	X(KADDB, h_klogic, KL_ADD, 1, IFL_NONE) \
	X(KADDW, h_klogic, KL_ADD, 2, IFL_NONE) \
	X(KADDD, h_klogic, KL_ADD, 4, IFL_NONE) \
	X(KADDQ, h_klogic, KL_ADD, 8, IFL_NONE) \
	X(KNOTB, h_klogic, KL_NOT, 1, IFL_NONE) \
	X(KNOTW, h_klogic, KL_NOT, 2, IFL_NONE) \
	X(KNOTD, h_klogic, KL_NOT, 4, IFL_NONE) \
	X(KNOTQ, h_klogic, KL_NOT, 8, IFL_NONE) \
	X(KUNPCKBW, h_klogic, KL_UNPCK, 2, IFL_NONE) \
	X(KUNPCKWD, h_klogic, KL_UNPCK, 4, IFL_NONE) \
	X(KUNPCKDQ, h_klogic, KL_UNPCK, 8, IFL_NONE) \
	X(KSHIFTLB, h_kshift, 1, 1, IFL_NONE) \
	X(KSHIFTLW, h_kshift, 1, 2, IFL_NONE) \
	X(KSHIFTLD, h_kshift, 1, 4, IFL_NONE) \
	X(KSHIFTLQ, h_kshift, 1, 8, IFL_NONE) \
	X(KSHIFTRB, h_kshift, 0, 1, IFL_NONE) \
	X(KSHIFTRW, h_kshift, 0, 2, IFL_NONE) \
	X(KSHIFTRD, h_kshift, 0, 4, IFL_NONE) \
	X(KSHIFTRQ, h_kshift, 0, 8, IFL_NONE) \
	X(VZEROUPPER, h_vzero, 0, 0, IFL_NONE) \
	X(VZEROALL, h_vzero, 0, 0, IFL_NONE)

#define OPMASK_ROW(m, h, op, w, wr) \
	INTERP_ROW(m, h, INTERP_FORM_ANY, INTERP_OPF_VEC, IFL_NONE, wr, IFL_NONE, INTERP_VR_NONE, \
		   { .g = { op, w } })
const struct interp_op interp_ops_opmask[] = { OPMASK_OPS(OPMASK_ROW) INTERP_OPS_END };
