/*
 * values_code.c — whether an operand a hotlist keeps is one of the
 * procedure's arguments, so that `vprof invariants` can name it as the
 * source does ("e of power()", values_proto.c) where that is sure.
 */
#include "reports/value_model.h"

#include <Zydis/Zydis.h>
#include <stdlib.h>

/* The System V AMD64 argument registers, in the order of the ARG kinds:
 * the integer class, then the SSE class. */
static const ZydisRegister kArgRegs[] = {
	ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX,
	ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9,
	ZYDIS_REGISTER_ZMM0, ZYDIS_REGISTER_ZMM1, ZYDIS_REGISTER_ZMM2, ZYDIS_REGISTER_ZMM3,
	ZYDIS_REGISTER_ZMM4, ZYDIS_REGISTER_ZMM5, ZYDIS_REGISTER_ZMM6, ZYDIS_REGISTER_ZMM7,
};

/* The register of the nth (0-based) source operand as the handler counts
 * them (preload/value_sample.c: visible register or memory operands that are
 * read, flags and rip skipped), widened to 64 bits; NONE if that operand
 * is memory or absent. */
static ZydisRegister nth_source(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, int nth)
{
	int k = 0;
	for (int i = 0; i < in->operand_count_visible; i++) {
		const ZydisDecodedOperand *o = &ops[i];
		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER && o->type != ZYDIS_OPERAND_TYPE_MEMORY)
			continue;
		if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
			ZydisRegisterClass c = ZydisRegisterGetClass(o->reg.value);
			if (c == ZYDIS_REGCLASS_FLAGS || c == ZYDIS_REGCLASS_IP || c == ZYDIS_REGCLASS_SEGMENT)
				continue;
		}
		if (!(o->actions & ZYDIS_OPERAND_ACTION_MASK_READ))
			continue;
		if (k++ == nth)
			return o->type == ZYDIS_OPERAND_TYPE_REGISTER
				       ? ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, o->reg.value)
				       : ZYDIS_REGISTER_NONE;
	}
	return ZYDIS_REGISTER_NONE;
}

/* Does in write reg (any part of it), or may it (a call, a syscall)? */
static int clobbers(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops, ZydisRegister reg)
{
	if (in->mnemonic == ZYDIS_MNEMONIC_CALL || in->mnemonic == ZYDIS_MNEMONIC_SYSCALL ||
	    in->mnemonic == ZYDIS_MNEMONIC_SYSENTER)
		return 1;
	for (int i = 0; i < in->operand_count; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
		    ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].reg.value) == reg)
			return 1;
	return 0;
}

unsigned report_value_argument(struct report_value_model *vm, const struct report_value_hot *v)
{
	unsigned k = v->kind;
	int nth = k == SPOOL_VK_SRC1 || k == SPOOL_VK_SRC1_BY_SITE ? 0
		: k == SPOOL_VK_SRC2 || k == SPOOL_VK_SRC2_BY_SITE ? 1 : -1;
	if (nth < 0 || !v->w.size || v->w.size > (1u << 20) || v->vaddr < v->w.start ||
	    v->vaddr >= v->w.start + v->w.size)
		return 0;
	uint8_t *code = malloc(v->w.size);
	long got = code ? report_value_read_code(vm, v->image, v->w.start, code, v->w.size) : -1;
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisRegister reg = ZYDIS_REGISTER_NONE;
	uint64_t at = v->vaddr - v->w.start;
	unsigned arg = 0;
	if (got > (long)at && ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + at, (ZyanUSize)(got - (long)at), &in, ops)))
		reg = nth_source(&in, ops, nth);
	for (int i = 0; i < 14 && reg != ZYDIS_REGISTER_NONE; i++)
		if (kArgRegs[i] == reg)
			arg = SPOOL_VK_ARG_FIRST + i;
	/* The register still holds the argument only if nothing in the
	 * whole procedure writes it or calls out (no flow analysis: any
	 * write anywhere, or bytes that do not decode, and we say nothing). */
	for (long off = 0; arg && off < got;) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, (ZyanUSize)(got - off), &in, ops)) ||
		    clobbers(&in, ops, reg))
			arg = 0;
		else
			off += in.length;
	}
	if (got < (long)v->w.size)
		arg = 0;
	free(code);
	return arg;
}
