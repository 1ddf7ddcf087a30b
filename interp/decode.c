/* interp/decode.c — instruction fetch, Zydis decode, and the decode cache.
 *
 * Owns the translation from bytes at a PC to a compact struct interp_insn
 * with its handler already looked up, and the per-thread cache of those.
 *
 * Workload: Zydis's full decode costs ~100 ns here, several times a whole
 * interpreted instruction, so every run looks in a direct-mapped cache
 * keyed by PC first, and a miss on a common integer form is decoded from
 * a template (fastdec.c, ~20 ns) before Zydis is asked. An entry's bytes
 * are compared against memory once per run (epoch) so that code replaced
 * between runs (JIT, dlclose + dlopen at the same address) is decoded
 * afresh; within a run the code is trusted.
 * The compare is two masked 8-byte compares, and nothing on this path
 * uses rep stos/movsb, whose start-up cost rivals a short decode.
 * Each entry also records (xflags) whether the instruction may touch
 * vector state, for lazily converted states (state.c).
 *
 * Concurrency: the decoder object is set up once by interp_init and only
 * read afterwards; the cache is per thread.
 */
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

static ZydisDecoder g_decoder;

int interp_decode_init(void)
{
	if (ZYAN_FAILED(ZydisDecoderInit(&g_decoder, ZYDIS_MACHINE_MODE_LONG_64,
					 ZYDIS_STACK_WIDTH_64)))
		return -1;
	return 0;
}

/* Read up to 15 bytes at pc (into buf[16]) without crossing into an
 * unreadable page. 16 bytes when the page has them: two movs, where 15
 * took a rep movsb. */
static int fetch(uint64_t pc, uint8_t *buf)
{
	size_t room = 4096 - (pc & 4095);

	if (room >= 16)
		return interp_mem_load(buf, pc, 16) ? 0 : 15;
	if (room >= 15)
		return interp_mem_load(buf, pc, 15) ? 0 : 15;
	if (interp_mem_load(buf, pc, room))
		return 0;
	if (interp_mem_load(buf + room, pc + room, 15 - room) == 0)
		return 15;
	return (int)room;
}

void interp_map_reg(struct interp_operand *o, ZydisRegister r)
{
	o->reg = r;
	if (r >= ZYDIS_REGISTER_AL && r <= ZYDIS_REGISTER_R15B) {
		int n = r - ZYDIS_REGISTER_AL;
		o->rkind = INTERP_RK_GPR;
		if (n < 4)
			o->idx = n;
		else if (n < 8) {
			o->rkind = INTERP_RK_GPR8H;
			o->idx = n - 4;
		} else
			o->idx = n - 4;
	} else if (r >= ZYDIS_REGISTER_AX && r <= ZYDIS_REGISTER_R15W) {
		o->rkind = INTERP_RK_GPR;
		o->idx = r - ZYDIS_REGISTER_AX;
	} else if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D) {
		o->rkind = INTERP_RK_GPR;
		o->idx = r - ZYDIS_REGISTER_EAX;
	} else if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15) {
		o->rkind = INTERP_RK_GPR;
		o->idx = r - ZYDIS_REGISTER_RAX;
	} else if (r >= ZYDIS_REGISTER_XMM0 && r <= ZYDIS_REGISTER_XMM31) {
		o->rkind = INTERP_RK_VEC;
		o->idx = r - ZYDIS_REGISTER_XMM0;
	} else if (r >= ZYDIS_REGISTER_YMM0 && r <= ZYDIS_REGISTER_YMM31) {
		o->rkind = INTERP_RK_VEC;
		o->idx = r - ZYDIS_REGISTER_YMM0;
	} else if (r >= ZYDIS_REGISTER_ZMM0 && r <= ZYDIS_REGISTER_ZMM31) {
		o->rkind = INTERP_RK_VEC;
		o->idx = r - ZYDIS_REGISTER_ZMM0;
	} else if (r >= ZYDIS_REGISTER_K0 && r <= ZYDIS_REGISTER_K7) {
		o->rkind = INTERP_RK_K;
		o->idx = r - ZYDIS_REGISTER_K0;
	} else if (r >= ZYDIS_REGISTER_FLAGS && r <= ZYDIS_REGISTER_RFLAGS) {
		o->rkind = INTERP_RK_FLAGS;
	} else if (r >= ZYDIS_REGISTER_IP && r <= ZYDIS_REGISTER_RIP) {
		o->rkind = INTERP_RK_RIP;
	} else if (r == ZYDIS_REGISTER_MXCSR) {
		o->rkind = INTERP_RK_MXCSR;
	} else if (r >= ZYDIS_REGISTER_ES && r <= ZYDIS_REGISTER_GS) {
		o->rkind = INTERP_RK_SEG;
		o->idx = r - ZYDIS_REGISTER_ES;
	} else {
		o->rkind = INTERP_RK_OTHER;
	}
}

static uint8_t gpr_num(ZydisRegister r)
{
	if (r == ZYDIS_REGISTER_NONE)
		return INTERP_NOREG;
	if (r == ZYDIS_REGISTER_RIP)
		return INTERP_RIPREL;
	if (r >= ZYDIS_REGISTER_RAX && r <= ZYDIS_REGISTER_R15)
		return r - ZYDIS_REGISTER_RAX;
	if (r >= ZYDIS_REGISTER_EAX && r <= ZYDIS_REGISTER_R15D)
		return r - ZYDIS_REGISTER_EAX;      /* addr32: masked in ea */
	if (r >= ZYDIS_REGISTER_XMM0 && r <= ZYDIS_REGISTER_XMM31)
		return r - ZYDIS_REGISTER_XMM0;
	if (r >= ZYDIS_REGISTER_YMM0 && r <= ZYDIS_REGISTER_YMM31)
		return r - ZYDIS_REGISTER_YMM0;
	if (r >= ZYDIS_REGISTER_ZMM0 && r <= ZYDIS_REGISTER_ZMM31)
		return r - ZYDIS_REGISTER_ZMM0;
	return 0xfe;                                /* unusable */
}

/* memset(e->op, 0, 256) compiles to rep stos, whose start-up cost was
 * half of this file's own time on a cold decode: 16 plain stores. */
typedef uint8_t interp_v16 __attribute__((vector_size(16), may_alias, aligned(1)));
static void clear_ops(struct interp_insn *e)
{
	interp_v16 *p = (interp_v16 *)e->op, z = {0};

	_Static_assert(sizeof e->op == 16 * sizeof z, "op[] is 256 bytes");
	p[0] = z; p[1] = z; p[2] = z; p[3] = z; p[4] = z; p[5] = z; p[6] = z; p[7] = z;
	p[8] = z; p[9] = z; p[10] = z; p[11] = z; p[12] = z; p[13] = z; p[14] = z; p[15] = z;
}

/* Are the len bytes at pc still those e was decoded from? Two 8-byte
 * compares under a mask when the page holds 16 bytes at pc. */
static int same_bytes(const struct interp_insn *e, uint64_t pc)
{
	uint8_t buf[16];
	uint64_t lo, hi, elo, ehi = 0, mlo, mhi;
	unsigned len = e->len;

	if (4096 - (pc & 4095) < 16)
		return interp_mem_load(buf, pc, len) == 0 && memcmp(buf, e->bytes, len) == 0;
	if (interp_mem_load(buf, pc, 16))
		return 0;
	memcpy(&lo, buf, 8);
	memcpy(&hi, buf + 8, 8);
	memcpy(&elo, e->bytes, 8);
	memcpy(&ehi, e->bytes + 8, 7);
	mlo = len >= 8 ? ~0ull : (1ull << (8 * len)) - 1;
	mhi = len <= 8 ? 0 : (1ull << (8 * (len - 8))) - 1;
	return (((lo ^ elo) & mlo) | ((hi ^ ehi) & mhi)) == 0;
}

/* Fill e from a Zydis decode; returns 0, or -1 if the form cannot be
 * represented (the entry then stops the run as unsupported). */
static int compact(struct interp_insn *e, const ZydisDecodedInstruction *d,
		   const ZydisDecodedOperand *ops)
{
	int bad = 0;

	e->mnemonic = d->mnemonic;
	e->len = d->length;
	e->opsize = d->operand_width / 8;
	e->addrsize = d->address_width / 8;
	e->attrib = d->attributes;
	e->encoding = d->encoding;
	e->opcode_map = d->opcode_map;
	e->opcode = d->opcode;
	e->nvis = d->operand_count_visible;
	e->nops = d->operand_count;
	if (e->nops > INTERP_MAX_OPS) {
		e->nops = INTERP_MAX_OPS;
		bad = 1;
	}
	memset(&e->avx, 0, sizeof e->avx);
	if (d->encoding == ZYDIS_INSTRUCTION_ENCODING_VEX ||
	    d->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX) {
		e->avx.vl = d->avx.vector_length / 8;
		e->avx.mask_mode = d->avx.mask.mode;
		if (d->avx.mask.reg >= ZYDIS_REGISTER_K0 && d->avx.mask.reg <= ZYDIS_REGISTER_K7)
			e->avx.mask_idx = d->avx.mask.reg - ZYDIS_REGISTER_K0;
		e->avx.bcst = d->avx.broadcast.mode;
		e->avx.bcst_static = d->avx.broadcast.is_static;
		e->avx.rounding = d->avx.rounding.mode;
		e->avx.sae = d->avx.has_sae;
	}
	clear_ops(e);
	for (int i = 0; i < e->nops; i++) {
		const ZydisDecodedOperand *z = &ops[i];
		struct interp_operand *o = &e->op[i];

		o->action = z->actions;
		o->visible = z->visibility != ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
			     z->visibility != ZYDIS_OPERAND_VISIBILITY_IMPLICIT;
		o->size = (z->size + 7) / 8;
		o->elem_type = z->element_type;
		o->elem_size = z->element_size / 8;
		o->elem_count = z->element_count;
		o->base = o->index = INTERP_NOREG;
		switch (z->type) {
		case ZYDIS_OPERAND_TYPE_REGISTER:
			o->type = INTERP_OP_REG;
			interp_map_reg(o, z->reg.value);
			break;
		case ZYDIS_OPERAND_TYPE_MEMORY:
			o->type = z->mem.type == ZYDIS_MEMOP_TYPE_AGEN ? INTERP_OP_AGEN : INTERP_OP_MEM;
			if (z->mem.type == ZYDIS_MEMOP_TYPE_MIB)
				bad = 1;
			o->vsib = z->mem.type == ZYDIS_MEMOP_TYPE_VSIB;
			o->base = gpr_num(z->mem.base);
			o->index = gpr_num(z->mem.index);
			if (o->base == 0xfe || o->index == 0xfe ||
			    (o->index == INTERP_RIPREL))
				bad = 1;
			o->scale = z->mem.index == ZYDIS_REGISTER_NONE ? 0 : z->mem.scale;
			o->seg = z->mem.segment == ZYDIS_REGISTER_FS ? 1 :
				 z->mem.segment == ZYDIS_REGISTER_GS ? 2 : 0;
			o->val = z->mem.disp.value;
			break;
		case ZYDIS_OPERAND_TYPE_IMMEDIATE:
			o->type = INTERP_OP_IMM;
			o->imm_signed = z->imm.is_signed;
			o->val = z->imm.is_signed ? (int64_t)z->imm.value.s : (int64_t)z->imm.value.u;
			if (z->imm.is_relative)     /* branch target: make absolute */
				o->val = (int64_t)(e->pc + e->len + (uint64_t)z->imm.value.s);
			break;
		default:
			o->type = INTERP_OP_PTR;
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}


/* May the instruction read or write x87, vector, opmask or MXCSR state?
 * Conservative: anything handled by a vector family, or with such a
 * register among its operands (hidden ones included: LDMXCSR, XSAVE). */
static int touches_vec(const struct interp_insn *e)
{
	if (!e->fn || (interp_row(e)->opf & INTERP_OPF_VEC))
		return 1;
	for (int i = 0; i < e->nops; i++) {
		const struct interp_operand *o = &e->op[i];

		if (o->type == INTERP_OP_REG &&
		    (o->rkind == INTERP_RK_VEC || o->rkind == INTERP_RK_K ||
		     o->rkind == INTERP_RK_MXCSR || o->rkind == INTERP_RK_OTHER))
			return 1;
		if ((o->type == INTERP_OP_MEM || o->type == INTERP_OP_AGEN) && o->vsib)
			return 1;
	}
	return 0;
}

int interp_decode_zydis(struct interp_insn *e, uint64_t pc, const uint8_t *b, unsigned n,
		       ZydisDecodedInstruction *d, ZydisDecodedOperand *ops)
{
	if (n == 0 || ZYAN_FAILED(ZydisDecoderDecodeFull(&g_decoder, b, n, d, ops)))
		return -1;
	e->pc = pc;
	memcpy(e->bytes, b, d->length);
	e->row = compact(e, d, ops) == 0 ? interp_optab_lookup(e) : 0;
	e->fn = interp_row(e)->fn;
	/* An EVEX control mask (element selector, not a write mask) means
	 * what the instruction says; rows that do not model it stop. */
	if ((interp_row(e)->opf & INTERP_OPF_NOCTL) && e->avx.mask_idx &&
	    (e->avx.mask_mode == ZYDIS_MASK_MODE_CONTROL ||
	     e->avx.mask_mode == ZYDIS_MASK_MODE_CONTROL_ZEROING))
		e->fn = NULL;
	e->xflags = touches_vec(e) ? INTERP_XF_VEC : 0;
	return 0;
}

const struct interp_insn *
interp_decode_slow(struct interp_thread *th, struct interp_insn *e, uint64_t pc, int *stop)
{
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint8_t buf[16];
	int n;

	if (e->pc == pc && e->len) {
		if (same_bytes(e, pc)) {
			e->epoch = th->epoch;
			th->hits++;
			return e;
		}
	}
	n = fetch(pc, buf);
	if (interp_fastdec(e, pc, buf, (unsigned)n) < 0 &&
	    interp_decode_zydis(e, pc, buf, (unsigned)n, &d, ops) < 0) {
		*stop = INTERP_STOP_DECODE;
		e->len = 0;
		return NULL;
	}
	th->decoded++;
	e->epoch = th->epoch;
	return e;
}

/* For tests: the row the decoder would give the instruction in b[0..n)
 * (decoded as if at address b). Not AS-safe (uses the stack freely). */
const struct interp_op *interp_optab_decode(const uint8_t *b, unsigned n)
{
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct interp_insn e;

	memset(&e, 0, sizeof e);
	if (n > sizeof e.bytes || interp_decode_zydis(&e, (uint64_t)(uintptr_t)b, b, n, &d, ops) < 0 ||
	    !e.row)
		return NULL;
	return &interp_optab[e.row];
}
