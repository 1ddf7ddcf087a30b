/*
 * Procedure arguments at the calls an interpreted window enters
 * (window.h): the value profile that answers "called with what, from
 * where", per call site, whichever image the callee is in.
 *
 * At a call, the callee's entry is the first instruction the run reaches
 * that is not a jump or an endbr64 (a PLT stub is `endbr64; bnd jmp
 * [GOT]`). From there, for up to ARGS_LOOK instructions of the callee
 * and until it returns, the first access to each SysV argument register
 * (rdi, rsi, rdx, rcx, r8, r9, xmm0..xmm7) decides: a read before any
 * write means the callee takes that argument, and its value as read is
 * offered to the hotlist SPOOL_VK_ARG_FIRST + a at the call
 * instruction's PC, aux the callee's entry; a write first means it does
 * not. A register read before it is written still holds what the caller
 * passed, so no copy is taken at the call. The value has the width the
 * callee read: an `int` read as edi is its 32 bits, a double read by
 * movsd or mulsd its 64, a float its 32.
 *
 * A zeroing idiom (xor r,r; pxor x,x...) writes without reading. A call
 * inside the callee before every argument was decided starts over for
 * the inner call: the outer callee's undecided registers are the inner
 * call's to read.
 */
#include "preload/window.h"
#include "spool/hotlist.h"

#define ARGS_LOOK 32           /* callee instructions looked at per call */
#define ARGS_ALL 0x3fffu       /* 6 integer + 8 vector registers */

/* Argument number of each GPR in encoding order (rax, rcx, rdx, rbx, rsp,
 * rbp, rsi, rdi, r8..r15), -1 for the others. */
static const signed char kGprArg[16] = { -1, 3, 2, -1, -1, -1, 1, 0, 4, 5, -1, -1, -1, -1, -1, -1 };

static int arg_of(const struct interp_operand *op)
{
	if (op->type != INTERP_OP_REG)
		return -1;
	if (op->rkind == INTERP_RK_GPR && op->idx < 16)
		return kGprArg[op->idx];
	if (op->rkind == INTERP_RK_VEC && op->idx < 8)
		return 6 + op->idx;
	return -1;
}

static int zeroing_idiom(const struct interp_insn *in)
{
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_XOR: case ZYDIS_MNEMONIC_SUB: case ZYDIS_MNEMONIC_PXOR:
	case ZYDIS_MNEMONIC_XORPS: case ZYDIS_MNEMONIC_XORPD: case ZYDIS_MNEMONIC_PSUBB:
	case ZYDIS_MNEMONIC_PSUBD: case ZYDIS_MNEMONIC_PSUBQ:
		return in->nvis >= 2 && in->op[0].type == INTERP_OP_REG && in->op[1].type == INTERP_OP_REG &&
		       in->op[0].reg == in->op[1].reg;
	case ZYDIS_MNEMONIC_VPXOR: case ZYDIS_MNEMONIC_VPXORD: case ZYDIS_MNEMONIC_VPXORQ:
	case ZYDIS_MNEMONIC_VXORPS: case ZYDIS_MNEMONIC_VXORPD:
		return in->nvis >= 3 && in->op[1].type == INTERP_OP_REG && in->op[2].type == INTERP_OP_REG &&
		       in->op[1].reg == in->op[2].reg;
	default:
		return 0;
	}
}

static int is_stub(const struct interp_insn *in)
{
	return in->mnemonic == ZYDIS_MNEMONIC_JMP || in->mnemonic == ZYDIS_MNEMONIC_ENDBR64 ||
	       in->mnemonic == ZYDIS_MNEMONIC_NOP;
}

void preload_args_begin(struct preload_window *w)
{
	w->args.pending = 0;
}

/* The callee at a.entry reads or writes its registers in r. */
static void decide(struct preload_window *w, const struct interp_record *r)
{
	struct preload_args_state *a = &w->args;
	const struct interp_insn *in = r->insn;
	int zero = zeroing_idiom(in);
	uint32_t written = 0;
	for (int i = 0; i < in->nops && a->pending; i++) {
		const struct interp_operand *op = &in->op[i];
		int k = arg_of(op);
		if (k < 0 || !(a->pending >> k & 1))
			continue;
		if ((op->action & ZYDIS_OPERAND_ACTION_MASK_READ) && !zero && (r->src_mask >> i & 1))
			preload_window_put(w, SPOOL_VK_ARG_FIRST + (unsigned)k, a->call_pc, r->src[i], a->entry);
		/* Read (recorded or not) or written: decided either way. An
		 * operand read without its value recorded (a hidden one) is
		 * given up rather than guessed. */
		written |= 1u << k;
	}
	a->pending &= ~written;
	if (--a->left <= 0)
		a->pending = 0;
}

void preload_args_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r)
{
	struct preload_args_state *a = &w->args;
	const struct interp_insn *in = r->insn;
	(void)st;
	if (a->pending) {
		if (!a->entry && !is_stub(in))
			a->entry = in->pc;
		if (a->entry)
			decide(w, r);
	}
	if (in->mnemonic == ZYDIS_MNEMONIC_CALL) {
		a->call_pc = in->pc;
		a->entry = 0;
		a->pending = ARGS_ALL;
		a->left = ARGS_LOOK;
	} else if (in->mnemonic == ZYDIS_MNEMONIC_RET) {
		a->pending = 0;
	}
}
