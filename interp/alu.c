/* interp/alu.c — integer arithmetic and logic: ADD ADC SUB SBB CMP AND OR
 * XOR TEST INC DEC NEG NOT, and the exchanging CMPXCHG CMPXCHG8B/16B XADD.
 *
 * Workload: ~30% of executed instructions. One generic binary handler
 * computes the result with a small switch and hands flags to
 * interp_flags.
 *
 * Concurrency: with a LOCK prefix on a memory destination the
 * read-modify-write is done as a compare-and-swap loop on the real memory
 * (interp_mem_cas), so other threads see it as atomic exactly as they
 * would the real instruction.
 */
#include "interp/interp.h"
#include "interp/internal.h"

enum { OP_ADD, OP_ADC, OP_SUB, OP_SBB, OP_AND, OP_OR, OP_XOR, OP_INC, OP_DEC,
       OP_NEG, OP_NOT, OP_CMP, OP_TEST };

/* Compute op on a,b; update the flags in *flags (a working rflags).
 * Always inlined: the handlers below pass a constant op, so each gets
 * straight-line code for its own operation and flags. */
static inline __attribute__((always_inline)) uint64_t
compute(struct interp_exec *x, int op, uint64_t a, uint64_t b, unsigned size, uint64_t *flags)
{
	uint64_t r, f = *flags, cin = f & INTERP_CF;

	switch (op) {
	case OP_ADD: r = a + b; f = interp_flags_calc(f, INTERP_FL_ADD, a, b, 0, r, size); break;
	case OP_ADC: r = a + b + cin; f = interp_flags_calc(f, INTERP_FL_ADD, a, b, cin, r, size); break;
	case OP_SUB: case OP_CMP:
		r = a - b; f = interp_flags_calc(f, INTERP_FL_SUB, a, b, 0, r, size); break;
	case OP_SBB: r = a - b - cin; f = interp_flags_calc(f, INTERP_FL_SUB, a, b, cin, r, size); break;
	case OP_AND: case OP_TEST:
		r = a & b; f = interp_flags_calc(f, INTERP_FL_LOGIC, a, b, 0, r, size); break;
	case OP_OR: r = a | b; f = interp_flags_calc(f, INTERP_FL_LOGIC, a, b, 0, r, size); break;
	case OP_XOR: r = a ^ b; f = interp_flags_calc(f, INTERP_FL_LOGIC, a, b, 0, r, size); break;
	case OP_INC:   /* CF is kept */
		r = a + 1;
		f = (interp_flags_calc(f, INTERP_FL_ADD, a, 1, 0, r, size) & ~(uint64_t)INTERP_CF) | cin;
		break;
	case OP_DEC:
		r = a - 1;
		f = (interp_flags_calc(f, INTERP_FL_SUB, a, 1, 0, r, size) & ~(uint64_t)INTERP_CF) | cin;
		break;
	case OP_NEG: r = 0 - a; f = interp_flags_calc(f, INTERP_FL_SUB, 0, a, 0, r, size); break;
	default: /* NOT: no flags */
		r = ~a; break;
	}
	*flags = f;
	return r & interp_mask(size);
}

/* LOCKed read-modify-write of operand 0 (memory): CAS loop. */
static int locked_rmw(struct interp_exec *x, int op, uint64_t b, uint64_t *oldp)
{
	unsigned size = OPS(0);
	uint64_t ea = interp_ea(x, 0), old = 0, nw, f;

	if (interp_mem_load(&old, ea, size))
		return INTERP_STOP_WOULD_FAULT;
	for (;;) {
		int c;
		f = x->rflags;
		nw = compute(x, op, old, b, size, &f);
		c = interp_mem_cas(ea, &old, &nw, size);
		if (c < 0)
			return INTERP_STOP_WOULD_FAULT;
		if (c == 1)
			break;
	}
	x->rflags = f;
	if (oldp)
		*oldp = old;
	if (x->obs) {
		x->rec.acc[0].addr = ea;
		x->rec.acc[0].size = size;
		x->rec.acc[0].write = 1;
		x->rec.acc[0].latency = 0;
		x->rec.naccess = 1;
		x->rec.src[0] = old;
		x->rec.dst[0] = nw;
		x->rec.src_mask |= 1;
		x->rec.dst_mask |= 1;
	}
	return INTERP_OK;
}

static inline __attribute__((always_inline)) int binop(struct interp_exec *x, int op)
{
	uint64_t a, b = 0, r, f = x->rflags;
	int rc, unary = op == OP_INC || op == OP_DEC || op == OP_NEG || op == OP_NOT;

	if (OPS(0) > 8)
		return INTERP_STOP_UNSUPPORTED;
	if (!unary && (rc = interp_rd(x, 1, &b)))
		return rc;
	if (interp_locked(IN)) {
		if (IN->op[0].type != INTERP_OP_MEM || op == OP_CMP || op == OP_TEST)
			return INTERP_STOP_WOULD_FAULT;     /* #UD */
		return locked_rmw(x, op, b, NULL);
	}
	if ((rc = interp_rd(x, 0, &a)))
		return rc;
	r = compute(x, op, a, b, OPS(0), &f);
	if (op != OP_CMP && op != OP_TEST) {
		/* xor r32,r32 etc.: write first (memory may fail), then flags */
		if ((rc = interp_wr_last(x, 0, r)))
			return rc;
	}
	x->rflags = f;
	return INTERP_OK;
}

static int h_add(struct interp_exec *x) { return binop(x, OP_ADD); }
static int h_adc(struct interp_exec *x) { return binop(x, OP_ADC); }
static int h_sub(struct interp_exec *x) { return binop(x, OP_SUB); }
static int h_sbb(struct interp_exec *x) { return binop(x, OP_SBB); }
static int h_and(struct interp_exec *x) { return binop(x, OP_AND); }
static int h_or(struct interp_exec *x) { return binop(x, OP_OR); }
static int h_xor(struct interp_exec *x) { return binop(x, OP_XOR); }
static int h_cmp(struct interp_exec *x) { return binop(x, OP_CMP); }
static int h_test(struct interp_exec *x) { return binop(x, OP_TEST); }
static int h_inc(struct interp_exec *x) { return binop(x, OP_INC); }
static int h_dec(struct interp_exec *x) { return binop(x, OP_DEC); }
static int h_neg(struct interp_exec *x) { return binop(x, OP_NEG); }
static int h_not(struct interp_exec *x) { return binop(x, OP_NOT); }

static int h_xadd(struct interp_exec *x)
{
	uint64_t a, b, r, f = x->rflags;
	int rc;

	if ((rc = interp_rd(x, 1, &b)))
		return rc;
	if (interp_locked(IN)) {
		if (IN->op[0].type != INTERP_OP_MEM)
			return INTERP_STOP_WOULD_FAULT;
		if ((rc = locked_rmw(x, OP_ADD, b, &a)))
			return rc;
		interp_wr(x, 1, a);
		return INTERP_OK;
	}
	if ((rc = interp_rd(x, 0, &a)))
		return rc;
	r = compute(x, OP_ADD, a, b, OPS(0), &f);
	if (IN->op[0].type == INTERP_OP_MEM) {
		if ((rc = interp_wr(x, 0, r)))
			return rc;
		interp_wr(x, 1, a);
	} else {
		/* xadd r,r: the source gets the old destination first, then
		 * the destination the sum (matters when both are one reg) */
		interp_wr(x, 1, a);
		interp_wr(x, 0, r);
	}
	x->rflags = f;
	return INTERP_OK;
}

static int h_cmpxchg(struct interp_exec *x)
{
	unsigned size = OPS(0);
	uint64_t d, s, acc = interp_gpr_get(x, INTERP_RAX, size), f = x->rflags;
	int rc;

	if ((rc = interp_rd(x, 1, &s)))
		return rc;
	if (interp_locked(IN) || IN->op[0].type == INTERP_OP_MEM) {
		/* Memory form: the processor always writes the destination;
		 * a CAS gives the same visible result (and atomicity). */
		uint64_t ea = interp_ea(x, 0), exp = acc;
		int c;

		if (IN->op[0].type != INTERP_OP_MEM)
			return INTERP_STOP_WOULD_FAULT;
		if (interp_mem_wprobe(ea, size))
			return INTERP_STOP_WOULD_FAULT;
		c = interp_mem_cas(ea, &exp, &s, size);
		if (c < 0)
			return INTERP_STOP_WOULD_FAULT;
		d = c ? acc : exp;
		compute(x, OP_CMP, acc, d, size, &f);
		if (!c)
			interp_gpr_set(x, INTERP_RAX, size, d);
		x->rflags = f;
		return INTERP_OK;
	}
	if ((rc = interp_rd(x, 0, &d)))
		return rc;
	compute(x, OP_CMP, acc, d, size, &f);
	/* Register form: measured on AMD Zen 5, a failing 32-bit compare
	 * leaves the destination register untouched (no zero-extension). */
	if (acc == d)
		interp_wr(x, 0, s);
	else
		interp_gpr_set(x, INTERP_RAX, size, d);
	x->rflags = f;
	return INTERP_OK;
}

/* CMPXCHG8B / CMPXCHG16B: edx:eax vs m, ecx:ebx in; only ZF changes. */
static int h_cmpxchgNb(struct interp_exec *x)
{
	int wide = IN->mnemonic == ZYDIS_MNEMONIC_CMPXCHG16B;
	unsigned half = wide ? 8 : 4;
	uint64_t ea = interp_ea(x, 0);
	uint64_t exp[2], des[2];
	int c;

	if (IN->op[0].type != INTERP_OP_MEM)
		return INTERP_STOP_WOULD_FAULT;
	if (wide && (ea & 15))
		return INTERP_STOP_WOULD_FAULT;    /* #GP */
	if (interp_mem_wprobe(ea, 2 * half))
		return INTERP_STOP_WOULD_FAULT;
	if (wide) {
		exp[0] = ST->gpr[INTERP_RAX]; exp[1] = ST->gpr[INTERP_RDX];
		des[0] = ST->gpr[INTERP_RBX]; des[1] = ST->gpr[INTERP_RCX];
		c = interp_mem_cas(ea, exp, des, 16);
	} else {
		exp[0] = (uint32_t)ST->gpr[INTERP_RAX] | ST->gpr[INTERP_RDX] << 32;
		des[0] = (uint32_t)ST->gpr[INTERP_RBX] | ST->gpr[INTERP_RCX] << 32;
		c = interp_mem_cas(ea, exp, des, 8);
	}
	if (c < 0)
		return INTERP_STOP_WOULD_FAULT;
	if (c) {
		x->rflags |= INTERP_ZF;
	} else {
		x->rflags &= ~(uint64_t)INTERP_ZF;
		if (wide) {
			ST->gpr[INTERP_RAX] = exp[0];
			ST->gpr[INTERP_RDX] = exp[1];
		} else {
			ST->gpr[INTERP_RAX] = (uint32_t)exp[0];
			ST->gpr[INTERP_RDX] = exp[0] >> 32;
		}
	}
	return INTERP_OK;
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define ALU_OPS(X) \
	X(ADD, h_add, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(ADC, h_adc, IFL_C, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(SUB, h_sub, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(SBB, h_sbb, IFL_C, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(AND, h_and, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_A, INTERP_VR_NONE) \
	X(OR, h_or, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_A, INTERP_VR_NONE) \
	X(XOR, h_xor, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_A, INTERP_VR_NONE) \
	X(CMP, h_cmp, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(TEST, h_test, IFL_NONE, IFL_C | IFL_O | IFL_SZP, IFL_A, INTERP_VR_NONE) \
	X(INC, h_inc, IFL_NONE, IFL_O | IFL_SZP | IFL_A, IFL_NONE, INTERP_VR_NONE) \
	X(DEC, h_dec, IFL_NONE, IFL_O | IFL_SZP | IFL_A, IFL_NONE, INTERP_VR_NONE) \
	X(NEG, h_neg, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(NOT, h_not, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(XADD, h_xadd, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(CMPXCHG, h_cmpxchg, IFL_NONE, IFL_ALL, IFL_NONE, INTERP_VR_NONE) \
	X(CMPXCHG8B, h_cmpxchgNb, IFL_NONE, IFL_Z, IFL_NONE, INTERP_VR_NONE) \
	X(CMPXCHG16B, h_cmpxchgNb, IFL_NONE, IFL_Z, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_alu[] = { ALU_OPS(INTERP_GP_ROW) INTERP_OPS_END };
