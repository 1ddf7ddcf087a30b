/* interp/mov.c — data movement: MOV and its extending forms, LEA, CMOVcc,
 * SETcc, XCHG, BSWAP, MOVBE, the accumulator widenings (CBW..CQO).
 *
 * Workload: the most frequent family in compiled code (~35% of executed
 * instructions), so handlers are short and use the u64 operand helpers.
 *
 * Concurrency: XCHG with memory is atomic on the real memory (the
 * processor locks it implicitly), through interp_mem_cas; the rest touch
 * only the thread's state and buffered stores.
 */
#include "interp/interp.h"
#include "interp/internal.h"

static int h_mov(struct interp_exec *x)
{
	uint64_t v;
	int rc;

	if (IN->op[0].size > 8 || IN->op[1].size > 8)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_rd(x, 1, &v)))
		return rc;
	return interp_wr_last(x, 0, v);
}

static int h_movzx(struct interp_exec *x)
{
	uint64_t v;
	int rc;

	if ((rc = interp_rd(x, 1, &v)))
		return rc;
	return interp_wr(x, 0, v);
}

static int h_movsx(struct interp_exec *x)
{
	uint64_t v;
	int rc;

	if ((rc = interp_rd(x, 1, &v)))
		return rc;
	return interp_wr(x, 0, interp_sext(v, OPS(1)));
}

static int h_lea(struct interp_exec *x)
{
	return interp_wr(x, 0, interp_ea_op(x, &IN->op[1]));
}

static int h_cmov(struct interp_exec *x)
{
	uint64_t s, d;
	int rc;

	/* The source is read (and may fault) even when the move does not
	 * happen, and a 32-bit destination is zero-extended either way. */
	if ((rc = interp_rd(x, 1, &s)) || (rc = interp_rd(x, 0, &d)))
		return rc;
	return interp_wr(x, 0, interp_cond_inl(x->rflags, IN->opcode & 15) ? s : d);
}

static int h_setcc(struct interp_exec *x)
{
	return interp_wr_last(x, 0, interp_cond_inl(x->rflags, IN->opcode & 15));
}

static int h_xchg(struct interp_exec *x)
{
	uint64_t a, b;
	int rc;

	if (IN->op[0].type == INTERP_OP_MEM || IN->op[1].type == INTERP_OP_MEM) {
		int m = IN->op[0].type == INTERP_OP_MEM ? 0 : 1, r = 1 - m;
		unsigned size = OPS(m);
		uint64_t ea = interp_ea(x, m), old = 0;

		if ((rc = interp_rd(x, r, &b)))
			return rc;
		if (interp_mem_load(&old, ea, size))
			return INTERP_STOP_WOULD_FAULT;
		for (;;) {
			int c = interp_mem_cas(ea, &old, &b, size);
			if (c < 0)
				return INTERP_STOP_WOULD_FAULT;
			if (c == 1)
				break;
		}
		if (x->obs) {
			x->rec.acc[0].addr = ea;
			x->rec.naccess = 1;
			x->rec.acc[0].size = size;
			x->rec.acc[0].write = 1;
			x->rec.acc[0].latency = 0;
		}
		return interp_wr(x, r, old);
	}
	if ((rc = interp_rd(x, 0, &a)) || (rc = interp_rd(x, 1, &b)))
		return rc;
	interp_wr(x, 0, b);
	interp_wr(x, 1, a);
	return INTERP_OK;
}

static int h_bswap(struct interp_exec *x)
{
	uint64_t v;
	int rc;

	if ((rc = interp_rd(x, 0, &v)))
		return rc;
	if (OPS(0) == 8)
		v = __builtin_bswap64(v);
	else if (OPS(0) == 4)
		v = __builtin_bswap32((uint32_t)v);
	else
		return INTERP_STOP_UNSUPPORTED;   /* 16-bit form: undefined */
	return interp_wr(x, 0, v);
}

static int h_movbe(struct interp_exec *x)
{
	uint64_t v;
	int rc;
	unsigned size = OPS(0);

	if ((rc = interp_rd(x, 1, &v)))
		return rc;
	switch (size) {
	case 2: v = __builtin_bswap16((uint16_t)v); break;
	case 4: v = __builtin_bswap32((uint32_t)v); break;
	default: v = __builtin_bswap64(v); break;
	}
	return interp_wr_last(x, 0, v);
}

/* CBW/CWDE/CDQE: sign-extend the low half of the accumulator. */
static int h_cbw(struct interp_exec *x)
{
	unsigned s = IN->opsize;
	uint64_t v = interp_sext(ST->gpr[INTERP_RAX] & interp_mask(s / 2), s / 2);

	interp_gpr_set(x, INTERP_RAX, s, v);
	return INTERP_OK;
}

/* CWD/CDQ/CQO: fill rDX with the accumulator's sign. */
static int h_cwd(struct interp_exec *x)
{
	unsigned s = IN->opsize;
	uint64_t a = ST->gpr[INTERP_RAX] & interp_mask(s);

	interp_gpr_set(x, INTERP_RDX, s, (a >> (s * 8 - 1)) & 1 ? ~0ull : 0);
	return INTERP_OK;
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define MOV_OPS(X) \
	X(MOV, h_mov, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MOVZX, h_movzx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MOVSX, h_movsx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MOVSXD, h_movsx, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LEA, h_lea, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVO, h_cmov, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNO, h_cmov, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVB, h_cmov, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNB, h_cmov, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVZ, h_cmov, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNZ, h_cmov, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVBE, h_cmov, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNBE, h_cmov, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVS, h_cmov, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNS, h_cmov, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVP, h_cmov, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNP, h_cmov, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVL, h_cmov, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNL, h_cmov, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVLE, h_cmov, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CMOVNLE, h_cmov, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETO, h_setcc, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNO, h_setcc, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETB, h_setcc, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNB, h_setcc, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETZ, h_setcc, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNZ, h_setcc, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETBE, h_setcc, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNBE, h_setcc, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETS, h_setcc, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNS, h_setcc, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETP, h_setcc, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNP, h_setcc, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETL, h_setcc, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNL, h_setcc, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETLE, h_setcc, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SETNLE, h_setcc, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(XCHG, h_xchg, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(BSWAP, h_bswap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MOVBE, h_movbe, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CBW, h_cbw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CWDE, h_cbw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CDQE, h_cbw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CWD, h_cwd, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CDQ, h_cwd, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CQO, h_cwd, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_mov[] = { MOV_OPS(INTERP_GP_ROW) INTERP_OPS_END };
