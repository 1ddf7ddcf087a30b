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

const struct interp_family interp_family_ctrl[] = {
	{ ZYDIS_MNEMONIC_JO, h_jcc }, { ZYDIS_MNEMONIC_JNO, h_jcc },
	{ ZYDIS_MNEMONIC_JB, h_jcc }, { ZYDIS_MNEMONIC_JNB, h_jcc },
	{ ZYDIS_MNEMONIC_JZ, h_jcc }, { ZYDIS_MNEMONIC_JNZ, h_jcc },
	{ ZYDIS_MNEMONIC_JBE, h_jcc }, { ZYDIS_MNEMONIC_JNBE, h_jcc },
	{ ZYDIS_MNEMONIC_JS, h_jcc }, { ZYDIS_MNEMONIC_JNS, h_jcc },
	{ ZYDIS_MNEMONIC_JP, h_jcc }, { ZYDIS_MNEMONIC_JNP, h_jcc },
	{ ZYDIS_MNEMONIC_JL, h_jcc }, { ZYDIS_MNEMONIC_JNL, h_jcc },
	{ ZYDIS_MNEMONIC_JLE, h_jcc }, { ZYDIS_MNEMONIC_JNLE, h_jcc },
	{ ZYDIS_MNEMONIC_JMP, h_jmp },
	{ ZYDIS_MNEMONIC_JRCXZ, h_jrcxz }, { ZYDIS_MNEMONIC_JECXZ, h_jrcxz },
	{ ZYDIS_MNEMONIC_LOOP, h_loop }, { ZYDIS_MNEMONIC_LOOPE, h_loop },
	{ ZYDIS_MNEMONIC_LOOPNE, h_loop },
	{ ZYDIS_MNEMONIC_CALL, h_call },
	{ ZYDIS_MNEMONIC_RET, h_ret },
	{ ZYDIS_MNEMONIC_PUSH, h_push }, { ZYDIS_MNEMONIC_POP, h_pop },
	{ ZYDIS_MNEMONIC_LEAVE, h_leave },
	{ ZYDIS_MNEMONIC_PUSHFQ, h_pushf }, { ZYDIS_MNEMONIC_PUSHF, h_pushf },
	{ ZYDIS_MNEMONIC_POPFQ, h_popf }, { ZYDIS_MNEMONIC_POPF, h_popf },
	{ 0, NULL }
};
