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

/* The ARG kind reg carries (a 64-bit or zmm register), 0 for one that
 * is not an argument register. */
static unsigned arg_kind(ZydisRegister reg)
{
	for (unsigned i = 0; reg != ZYDIS_REGISTER_NONE && i < sizeof kArgRegs / sizeof kArgRegs[0]; i++)
		if (kArgRegs[i] == reg)
			return SPOOL_VK_ARG_FIRST + i;
	return 0;
}

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
	if (got > (long)at && ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + at, (ZyanUSize)(got - (long)at), &in, ops)))
		reg = nth_source(&in, ops, nth);
	unsigned arg = arg_kind(reg);
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

/* The register in's first visible written register operand is part of,
 * widened to 64 bits (zmm for vector registers); NONE if there is none. */
static ZydisRegister first_written(const ZydisDecodedInstruction *in, const ZydisDecodedOperand *ops)
{
	for (int i = 0; i < in->operand_count_visible; i++)
		if (ops[i].type == ZYDIS_OPERAND_TYPE_REGISTER && (ops[i].actions & ZYDIS_OPERAND_ACTION_MASK_WRITE))
			return ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, ops[i].reg.value);
	return ZYDIS_REGISTER_NONE;
}

unsigned report_value_sets_argument(struct report_value_model *vm, const struct report_value_hot *v,
				    uint64_t call_vaddr)
{
	enum { MAX_BYTES = 128 };
	if (v->kind != SPOOL_VK_RESULT && v->kind != SPOOL_VK_RESULT_BY_SITE)
		return 0;
	if (call_vaddr <= v->vaddr || call_vaddr - v->vaddr > MAX_BYTES - 16)
		return 0;
	uint8_t code[MAX_BYTES];
	long got = report_value_read_code(vm, v->image, v->vaddr, code, sizeof(code));
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	if (got <= 0 || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code, (ZyanUSize)got, &in, ops)))
		return 0;
	ZydisRegister reg = first_written(&in, ops);
	unsigned arg = arg_kind(reg);
	/* Straight on to the call: nothing between writes the register or
	 * leaves the line of code (a jump, a return). */
	long off = in.length, end = (long)(call_vaddr - v->vaddr);
	while (arg && off < end) {
		if (!ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, (ZyanUSize)(got - off), &in, ops)) ||
		    clobbers(&in, ops, reg) || in.meta.category == ZYDIS_CATEGORY_COND_BR ||
		    in.meta.category == ZYDIS_CATEGORY_UNCOND_BR || in.meta.category == ZYDIS_CATEGORY_RET)
			arg = 0;
		else
			off += in.length;
	}
	if (off != end || off >= got || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + off, (ZyanUSize)(got - off), &in, ops)) ||
	    in.mnemonic != ZYDIS_MNEMONIC_CALL)
		return 0;
	return arg;
}
