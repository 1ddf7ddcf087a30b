/* interp/ctrl.c — control transfer and the stack: Jcc JMP CALL RET LOOPcc
 * JrCXZ, PUSH POP PUSHF POPF LEAVE.
 *
 * Workload: ~25% of executed instructions; a taken branch is the only
 * place where next_rip differs from pc+len.
 *
 * Concurrency: stack stores are ordinary buffered stores on the thread's
 * own stack. The handler runs on an alternate signal stack, so pushes
 * below the interrupted RSP cannot clobber it.
 *
 * Near branches with a 66 operand-size prefix truncate RIP to 16 bits on
 * AMD but not on Intel: they stop the run (unsupported) rather than guess.
 */
#include "interp/interp.h"
#include "interp/internal.h"

static int h_jcc(struct interp_exec *x)
{
	if (IN->opsize == 2)
		return INTERP_STOP_UNSUPPORTED;
	if (interp_cond_inl(x->rflags, IN->opcode & 15))
		x->next_rip = (uint64_t)IN->op[0].val;
	return INTERP_OK;
}

static int h_jmp(struct interp_exec *x)
{
	uint64_t t;
	int rc;

	if (IN->opsize == 2 || IN->op[0].type == INTERP_OP_PTR)
		return INTERP_STOP_UNSUPPORTED;
	if (IN->op[0].type == INTERP_OP_IMM)
		t = (uint64_t)IN->op[0].val;
	else if ((rc = interp_rd(x, 0, &t)))
		return rc;
	x->next_rip = t;
	return INTERP_OK;
}

static int h_jrcxz(struct interp_exec *x)
{
	if (interp_gpr_get(x, INTERP_RCX, IN->addrsize) == 0)
		x->next_rip = (uint64_t)IN->op[0].val;
	return INTERP_OK;
}

static int h_loop(struct interp_exec *x)
{
	unsigned as = IN->addrsize;
	uint64_t c = (interp_gpr_get(x, INTERP_RCX, as) - 1) & interp_mask(as);
	int take = c != 0;

	if (IN->mnemonic == ZYDIS_MNEMONIC_LOOPE)
		take = take && (x->rflags & INTERP_ZF);
	else if (IN->mnemonic == ZYDIS_MNEMONIC_LOOPNE)
		take = take && !(x->rflags & INTERP_ZF);
	interp_gpr_set(x, INTERP_RCX, as, c);
	if (take)
		x->next_rip = (uint64_t)IN->op[0].val;
	return INTERP_OK;
}

static int h_call(struct interp_exec *x)
{
	uint64_t t, rsp = ST->gpr[INTERP_RSP] - 8, ret = x->next_rip;
	int rc;

	if (IN->opsize == 2 || IN->op[0].type == INTERP_OP_PTR)
		return INTERP_STOP_UNSUPPORTED;
	if (IN->op[0].type == INTERP_OP_IMM)
		t = (uint64_t)IN->op[0].val;
	else if ((rc = interp_rd(x, 0, &t)))
		return rc;
	if ((rc = interp_store_last(x, rsp, ret, 8)))
		return rc;
	ST->gpr[INTERP_RSP] = rsp;
	x->next_rip = t;
	return INTERP_OK;
}

static int h_ret(struct interp_exec *x)
{
	uint64_t t, rsp = ST->gpr[INTERP_RSP];
	int rc;

	if (IN->opsize == 2)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_load_u64(x, rsp, &t, 8)))
		return rc;
	rsp += 8;
	if (IN->nvis > 0 && IN->op[0].type == INTERP_OP_IMM)
		rsp += (uint64_t)IN->op[0].val & 0xffff;
	ST->gpr[INTERP_RSP] = rsp;
	x->next_rip = t;
	return INTERP_OK;
}

static int h_push(struct interp_exec *x)
{
	unsigned size = IN->opsize;
	uint64_t v, rsp = ST->gpr[INTERP_RSP] - size;
	int rc;

	if (IN->op[0].type == INTERP_OP_REG && IN->op[0].rkind == INTERP_RK_SEG)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_rd(x, 0, &v)))
		return rc;
	if ((rc = interp_store_last(x, rsp, v, size)))
		return rc;
	ST->gpr[INTERP_RSP] = rsp;
	return INTERP_OK;
}

static int h_pop(struct interp_exec *x)
{
	unsigned size = IN->opsize;
	uint64_t v = 0, rsp = ST->gpr[INTERP_RSP];
	int rc;

	if (IN->op[0].type == INTERP_OP_REG && IN->op[0].rkind == INTERP_RK_SEG)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_load_u64(x, rsp, &v, size)))
		return rc;
	if (IN->op[0].type == INTERP_OP_MEM) {
		/* pop [rsp+d] addresses with the already incremented RSP */
		uint64_t ea;
		ST->gpr[INTERP_RSP] = rsp + size;
		ea = interp_ea(x, 0);
		ST->gpr[INTERP_RSP] = rsp;
		if ((rc = interp_store_last(x, ea, v, size)))
			return rc;
		ST->gpr[INTERP_RSP] = rsp + size;
		return INTERP_OK;
	}
	ST->gpr[INTERP_RSP] = rsp + size;
	return interp_wr(x, 0, v);   /* pop rsp: the loaded value wins */
}

static int h_leave(struct interp_exec *x)
{
	uint64_t v, rbp = ST->gpr[INTERP_RBP];
	int rc;

	if (IN->opsize != 8)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_load_u64(x, rbp, &v, 8)))
		return rc;
	ST->gpr[INTERP_RSP] = rbp + 8;
	ST->gpr[INTERP_RBP] = v;
	return INTERP_OK;
}

static int h_pushf(struct interp_exec *x)
{
	unsigned size = IN->opsize;
	uint64_t v = x->rflags & ~0x30000ull, rsp = ST->gpr[INTERP_RSP] - size;   /* RF, VM read as 0 */
	int rc;

	if ((rc = interp_store_last(x, rsp, v, size)))
		return rc;
	ST->gpr[INTERP_RSP] = rsp;
	return INTERP_OK;
}

static int h_popf(struct interp_exec *x)
{
	/* What user mode (CPL 3, IOPL 0) may change. */
	const uint64_t chg = INTERP_ARITH_FLAGS | INTERP_TF | INTERP_DF |
			     (1u << 14) | INTERP_AC | INTERP_ID;
	unsigned size = IN->opsize;
	uint64_t v = 0, rsp = ST->gpr[INTERP_RSP];
	int rc;

	if ((rc = interp_load(x, rsp, &v, size)))
		return rc;
	if (v & INTERP_TF)
		return INTERP_STOP_UNSUPPORTED;     /* would start trapping */
	uint64_t m = chg & interp_mask(size);
	x->rflags = (x->rflags & ~m) | (v & m);
	ST->gpr[INTERP_RSP] = rsp + size;
	return INTERP_OK;
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define CTRL_OPS(X) \
	X(JO, h_jcc, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNO, h_jcc, IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JB, h_jcc, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNB, h_jcc, IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JZ, h_jcc, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNZ, h_jcc, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JBE, h_jcc, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNBE, h_jcc, IFL_C | IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JS, h_jcc, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNS, h_jcc, IFL_S, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JP, h_jcc, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNP, h_jcc, IFL_P, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JL, h_jcc, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNL, h_jcc, IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JLE, h_jcc, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JNLE, h_jcc, IFL_Z | IFL_S | IFL_O, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JMP, h_jmp, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JRCXZ, h_jrcxz, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(JECXZ, h_jrcxz, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LOOP, h_loop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LOOPE, h_loop, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LOOPNE, h_loop, IFL_Z, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CALL, h_call, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(RET, h_ret, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PUSH, h_push, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(POP, h_pop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LEAVE, h_leave, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PUSHFQ, h_pushf, IFL_ALL | IFL_D, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PUSHF, h_pushf, IFL_ALL | IFL_D, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(POPFQ, h_popf, IFL_NONE, IFL_ALL | IFL_D, IFL_NONE, INTERP_VR_NONE) \
	X(POPF, h_popf, IFL_NONE, IFL_ALL | IFL_D, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_ctrl[] = { CTRL_OPS(INTERP_GP_ROW) INTERP_OPS_END };
