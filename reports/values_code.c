/*
 * The code behind a value: an image's instruction bytes, and whether an
 * operand a hotlist keeps is one of the procedure's arguments, so that
 * `vprof invariants` can say "argument 2 of pow()" where that is sure.
 */
#include "reports/values.h"
#include "reports/symbolize.h"

#include <Zydis/Zydis.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long value_read_code(const struct model_image *im, uint64_t vaddr, uint8_t *buf, size_t n)
{
	uint8_t bid[MERGE_BUILD_ID_MAX];
	long got = -1;
	/* The file the symbolizer trusted: the recorded one or the kept copy. */
	const char *file = report_image_file(im->sym) ? report_image_file(im->sym) : im->path;
	if (im->build_id_len) {
		int len = report_read_build_id(file, bid, sizeof(bid));
		if (len != (int)im->build_id_len || memcmp(bid, im->build_id, (size_t)len))
			return -1;
	}
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t nph = 0;
	if (e && elf_getphdrnum(e, &nph) == 0) {
		for (size_t i = 0; i < nph && got < 0; i++) {
			GElf_Phdr ph;
			if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD ||
			    vaddr < ph.p_vaddr || vaddr >= ph.p_vaddr + ph.p_filesz)
				continue;
			size_t left = ph.p_vaddr + ph.p_filesz - vaddr;
			got = pread(fd, buf, n < left ? n : left, (off_t)(ph.p_offset + vaddr - ph.p_vaddr));
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return got;
}

/* The System V AMD64 integer argument registers, in order. */
static const ZydisRegister kArgRegs[] = {
	ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX,
	ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9,
};

/* The register of the nth (0-based) source operand as the handler counts
 * them (preload/values.c: visible register or memory operands that are
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

int value_argument(struct value_model *vm, const struct value_hot *v)
{
	unsigned k = v->kind;
	int nth = k == MERGE_VK_SRC1 || k == MERGE_VK_SRC1_BY_SITE ? 0
		: k == MERGE_VK_SRC2 || k == MERGE_VK_SRC2_BY_SITE ? 1 : -1;
	if (nth < 0 || !v->w.size || v->w.size > (1u << 20) || v->vaddr < v->w.start ||
	    v->vaddr >= v->w.start + v->w.size)
		return 0;
	uint8_t *code = malloc(v->w.size);
	long got = code ? value_read_code(&vm->m.images[v->image], v->w.start, code, v->w.size) : -1;
	ZydisDecoder dec;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisRegister reg = ZYDIS_REGISTER_NONE;
	uint64_t at = v->vaddr - v->w.start;
	int arg = 0;
	if (got > (long)at && ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, code + at, (ZyanUSize)(got - (long)at), &in, ops)))
		reg = nth_source(&in, ops, nth);
	for (int i = 0; i < 6 && reg != ZYDIS_REGISTER_NONE; i++)
		if (kArgRegs[i] == reg)
			arg = i + 1;
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
