/*
 * values_class.c — what a sampled value is, before anything ranks it.
 *
 * A hotlist keeps values of one kind (result, source operand, address,
 * argument...) at one instruction. Many of those values are the same in
 * every run by construction, and specializing for them gains nothing:
 *
 *   constant  fixed when the program was compiled: an immediate moved
 *             into a register, a zeroing or all-ones idiom (xor r, r;
 *             pxor x, x; pcmpeqd x, x), a load from a read-only section
 *             (a constant pool: .rodata) or from RELRO/.got, an argument
 *             the caller set from an immediate, a branch through the GOT;
 *   frame     an address in the sampled thread's stack: marked so by the
 *             handler (SPOOL_HOT_AUX_STACK), the stack pointer itself, an
 *             address computed from rsp (or rbp in a procedure that keeps
 *             a frame pointer), a pointer into the caller's stack;
 *   position  where code or data was loaded or allocated: a RIP-relative
 *             address (lea, or the address of a RIP-relative access), the
 *             instruction's own address, an image's base, a pointer to
 *             data in an image, the heap or a mapping (it says which
 *             object, not what the object holds; a code address stays
 *             data: which function a call reaches is worth promoting);
 *   data      everything else: what the program computed or read from
 *             writable memory, which is what a person can specialize for.
 *
 * The instruction comes from the image file (values_image.c), decoded by
 * Zydis; the operand a kind names is picked as the handler picks it
 * (preload/value_sample.c, observe: visible register or memory operands,
 * flags, rip and x87/mmx/control registers skipped, LEA's address
 * skipped; the first two read are SRC1 and SRC2, the first written is
 * RESULT). The same operand gives the value's type: Zydis's element type
 * (SSE/AVX scalar or packed single and double, integers of a width), so
 * 0x4000000000000000 prints as 2.0 where the code uses it as a double.
 *
 * Pointers are placed with what the database itself reveals (value_layout):
 * an image's load bias in a process is the address of a RIP-relative
 * access minus its ELF address, and the stack marks give the threads'
 * stacks; the heap and anonymous mappings by Linux's x86-64 layout.
 * A source register is traced to its definition in the procedure
 * (reg_def): a constant hoisted into a register before a loop is a
 * constant where the loop reads it. Single-threaded, nothing
 * async-signal-safe.
 */
#include "reports/value_model.h"
#include "reports/symbolize.h"

#include <Zydis/Zydis.h>
#include <gelf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

const char *report_value_class_name(enum report_value_class c)
{
	static const char *const k[VALUE_NCLASS] = { "data", "constant", "frame", "position" };
	return c < VALUE_NCLASS ? k[c] : "?";
}

size_t report_value_code_pairs(const struct report_value_model *vm, uint32_t image, unsigned kind,
			       struct report_code_pair **out)
{
	size_t n = 0, cap = 0;
	*out = NULL;
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		if (v->kind != kind || v->image != image)
			continue;
		for (uint32_t e = 0; e < v->h.n; e++) {
			uint64_t to = v->h.e[e].value;
			if (!report_value_local_code(to) || (kind == SPOOL_VK_RANGE && to < v->vaddr) ||
			    (kind == SPOOL_VK_RANGE && v->h.e[e].aux == SPOOL_RANGE_WINDOWS))
				continue;
			double windows = 0;
			for (uint32_t k = 0; kind == SPOOL_VK_RANGE && k < v->h.n; k++)
				if (v->h.e[k].value == to && v->h.e[k].aux == SPOOL_RANGE_WINDOWS)
					windows = spool_hot_estimate(&v->h, (int)k);
			if (n == cap) {
				struct report_code_pair *p = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof(*p));
				if (!p) {
					perror("vprof");
					exit(1);
				}
				*out = p;
			}
			(*out)[n++] = (struct report_code_pair){ v->vaddr, to, spool_hot_estimate(&v->h, (int)e), windows };
		}
	}
	return n;
}

const struct report_value_hot *report_value_hot_find(const struct report_value_model *vm, uint32_t image, uint64_t vaddr,
						     unsigned kind)
{
	size_t a = 0, b = vm->nhot;
	while (a < b) {
		size_t mid = (a + b) / 2;
		const struct report_value_hot *v = &vm->hot[mid];
		int less = v->image != image ? v->image < image
			   : v->vaddr != vaddr ? v->vaddr < vaddr : v->kind < kind;
		if (less)
			a = mid + 1;
		else
			b = mid;
	}
	if (a < vm->nhot && vm->hot[a].image == image && vm->hot[a].vaddr == vaddr && vm->hot[a].kind == kind)
		return &vm->hot[a];
	return NULL;
}

/* ---- decoding ---- */

struct zi {
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t vaddr;
};

static int decode_at(struct report_value_model *vm, uint32_t image, uint64_t vaddr, struct zi *z)
{
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
	long got = report_value_read_code(vm, image, vaddr, b, sizeof(b));
	ZydisDecoder dec;
	if (got <= 0)
		return -1;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	z->vaddr = vaddr;
	return ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, b, (ZyanUSize)got, &z->in, z->ops)) ? 0 : -1;
}

static int is_call(const struct zi *z)
{
	return z->in.mnemonic == ZYDIS_MNEMONIC_CALL;
}

static int is_jump(const struct zi *z)
{
	return z->in.meta.category == ZYDIS_CATEGORY_COND_BR || z->in.meta.category == ZYDIS_CATEGORY_UNCOND_BR;
}

/* A direct branch's target, or 0. */
static uint64_t branch_target(const struct zi *z)
{
	ZyanU64 t;
	if ((is_call(z) || is_jump(z)) && z->ops[0].type == ZYDIS_OPERAND_TYPE_IMMEDIATE &&
	    ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&z->in, &z->ops[0], z->vaddr, &t)))
		return t;
	return 0;
}

int report_value_decode(struct report_value_model *vm, uint32_t image, uint64_t vaddr, struct report_value_insn *out)
{
	struct zi z;
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
	memset(out, 0, sizeof(*out));
	if (decode_at(vm, image, vaddr, &z) < 0)
		return -1;
	out->vaddr = vaddr;
	out->len = z.in.length;
	out->mnemonic = z.in.mnemonic;
	out->is_call = is_call(&z);
	out->is_jmp = is_jump(&z);
	out->is_ret = z.in.mnemonic == ZYDIS_MNEMONIC_RET;
	out->target = branch_target(&z);
	out->direct = out->target != 0;
	ZydisFormatter f;
	long got = report_value_read_code(vm, image, vaddr, b, z.in.length);
	uint64_t s, n;
	const char *name = out->direct && vm->m.images[image].sym
				   ? report_sym_lookup(vm->m.images[image].sym, out->target, &s, &n) : NULL;
	if (name && s == out->target) {
		/* a direct call or jump to a symbol: "call pow@plt" */
		char *d = report_sym_demangle(name);
		snprintf(out->text, sizeof(out->text), "%s %s", ZydisMnemonicGetString(z.in.mnemonic), d ? d : name);
		free(d);
	} else if (got == z.in.length && ZYAN_SUCCESS(ZydisFormatterInit(&f, ZYDIS_FORMATTER_STYLE_INTEL))) {
		ZydisFormatterFormatInstruction(&f, &z.in, z.ops, z.in.operand_count_visible, out->text,
						sizeof(out->text), vaddr, NULL);
	}
	return 0;
}

static ZydisRegister wide(ZydisRegister r)
{
	ZydisRegister w = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	/* xmm, ymm and zmm N are one register to us */
	if (w >= ZYDIS_REGISTER_ZMM0 && w <= ZYDIS_REGISTER_ZMM31)
		return (ZydisRegister)(ZYDIS_REGISTER_XMM0 + (w - ZYDIS_REGISTER_ZMM0));
	return w;
}

/* Does the handler see this operand (preload/value_sample.c, observe)? */
static int captured(const ZydisDecodedOperand *o)
{
	if (o->type == ZYDIS_OPERAND_TYPE_MEMORY)
		return o->mem.type != ZYDIS_MEMOP_TYPE_AGEN;
	if (o->type != ZYDIS_OPERAND_TYPE_REGISTER)
		return 0;
	switch (ZydisRegisterGetClass(o->reg.value)) {
	case ZYDIS_REGCLASS_FLAGS: case ZYDIS_REGCLASS_IP: case ZYDIS_REGCLASS_X87: case ZYDIS_REGCLASS_MMX:
	case ZYDIS_REGCLASS_CONTROL: case ZYDIS_REGCLASS_DEBUG: case ZYDIS_REGCLASS_BOUND:
	case ZYDIS_REGCLASS_TABLE: case ZYDIS_REGCLASS_TEST:
		return 0;
	default:
		return 1;
	}
}

/* The operand index the kind names (-1: none): RESULT, SRC1, SRC2. */
static int kind_operand(const struct zi *z, unsigned kind)
{
	int nsrc = 0, res = -1, src[2] = { -1, -1 };
	for (int i = 0; i < z->in.operand_count_visible; i++) {
		const ZydisDecodedOperand *o = &z->ops[i];
		if (!captured(o))
			continue;
		if ((o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && nsrc < 2)
			src[nsrc++] = i;
		if ((o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) && res < 0)
			res = i;
	}
	switch (report_value_plain_kind(kind)) {
	case SPOOL_VK_RESULT: return res;
	case SPOOL_VK_SRC1: return src[0];
	case SPOOL_VK_SRC2: return src[1];
	default: return -1;
	}
}

static int first_mem(const struct zi *z)
{
	for (int i = 0; i < z->in.operand_count_visible; i++)
		if (z->ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && z->ops[i].mem.type != ZYDIS_MEMOP_TYPE_AGEN)
			return i;
	return -1;
}

/* Does the instruction touch the stack implicitly (push, pop, call,
 * ret, leave, enter)? */
static int implicit_stack(const struct zi *z)
{
	for (int i = z->in.operand_count_visible; i < z->in.operand_count; i++)
		if (z->ops[i].type == ZYDIS_OPERAND_TYPE_MEMORY && wide(z->ops[i].mem.base) == ZYDIS_REGISTER_RSP)
			return 1;
	return 0;
}

static uint64_t riprel_target(const struct zi *z, const ZydisDecodedOperand *o)
{
	ZyanU64 t = 0;
	if (o->type != ZYDIS_OPERAND_TYPE_MEMORY || o->mem.base != ZYDIS_REGISTER_RIP ||
	    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&z->in, o, z->vaddr, &t)))
		return 0;
	return t;
}

/* A zeroing or all-ones idiom: the result does not depend on its
 * sources (xor r, r; sub r, r; pxor/xorps/xorpd x, x and their VEX
 * forms; pcmpeqb/w/d/q x, x: all ones). 1 zero, 2 all ones, 0 neither. */
static int idiom(const struct zi *z)
{
	int n = z->in.operand_count_visible;
	ZydisRegister a, b;
	if (n < 2 || z->ops[n - 1].type != ZYDIS_OPERAND_TYPE_REGISTER || z->ops[n - 2].type != ZYDIS_OPERAND_TYPE_REGISTER)
		return 0;
	a = z->ops[n - 2].reg.value;
	b = z->ops[n - 1].reg.value;
	if (a != b)
		return 0;
	switch (z->in.mnemonic) {
	case ZYDIS_MNEMONIC_XOR: case ZYDIS_MNEMONIC_SUB:
	case ZYDIS_MNEMONIC_PXOR: case ZYDIS_MNEMONIC_XORPS: case ZYDIS_MNEMONIC_XORPD:
	case ZYDIS_MNEMONIC_VPXOR: case ZYDIS_MNEMONIC_VXORPS: case ZYDIS_MNEMONIC_VXORPD:
	case ZYDIS_MNEMONIC_VPXORD: case ZYDIS_MNEMONIC_VPXORQ:
	case ZYDIS_MNEMONIC_PSUBB: case ZYDIS_MNEMONIC_PSUBW: case ZYDIS_MNEMONIC_PSUBD: case ZYDIS_MNEMONIC_PSUBQ:
	case ZYDIS_MNEMONIC_VPSUBB: case ZYDIS_MNEMONIC_VPSUBW: case ZYDIS_MNEMONIC_VPSUBD: case ZYDIS_MNEMONIC_VPSUBQ:
		return 1;
	case ZYDIS_MNEMONIC_PCMPEQB: case ZYDIS_MNEMONIC_PCMPEQW: case ZYDIS_MNEMONIC_PCMPEQD: case ZYDIS_MNEMONIC_PCMPEQQ:
	case ZYDIS_MNEMONIC_VPCMPEQB: case ZYDIS_MNEMONIC_VPCMPEQW: case ZYDIS_MNEMONIC_VPCMPEQD:
	case ZYDIS_MNEMONIC_VPCMPEQQ:
		return 2;
	default:
		return 0;
	}
}

/* Does the procedure starting at start keep a frame pointer (push rbp;
 * mov rbp, rsp at its entry, after an endbr64)? Then rbp-relative
 * addresses are frame addresses. */
static int keeps_frame_pointer(struct report_value_model *vm, uint32_t image, uint64_t start)
{
	struct zi z;
	uint64_t at = start;
	int pushed = 0;
	for (int i = 0; i < 4 && decode_at(vm, image, at, &z) == 0; i++, at += z.in.length) {
		if (z.in.mnemonic == ZYDIS_MNEMONIC_ENDBR64)
			continue;
		if (z.in.mnemonic == ZYDIS_MNEMONIC_PUSH && z.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    z.ops[0].reg.value == ZYDIS_REGISTER_RBP) {
			pushed = 1;
			continue;
		}
		return pushed && z.in.mnemonic == ZYDIS_MNEMONIC_MOV &&
		       z.ops[0].type == ZYDIS_OPERAND_TYPE_REGISTER && z.ops[0].reg.value == ZYDIS_REGISTER_RBP &&
		       z.ops[1].type == ZYDIS_OPERAND_TYPE_REGISTER && z.ops[1].reg.value == ZYDIS_REGISTER_RSP;
	}
	return 0;
}

/* Is the register (or memory base) one that points into the frame? */
static int frame_reg(ZydisRegister r, int fp)
{
	r = wide(r);
	return r == ZYDIS_REGISTER_RSP || (fp && r == ZYDIS_REGISTER_RBP);
}

/* Where a read-only load reads from, for the reason: ".rodata". */
static const char *ro_reason(struct report_value_model *vm, uint32_t image, uint64_t addr, char *buf, size_t cap)
{
	const struct report_value_elf *e = report_value_elf(vm, image);
	const struct report_value_sec *s = report_value_elf_section(e, addr);
	if (e && addr >= e->relro_lo && addr < e->relro_hi)
		snprintf(buf, cap, "loaded from %s (read-only after relocation)", s ? s->name : "RELRO");
	else
		snprintf(buf, cap, "loaded from %s (read-only)", s ? s->name : "a read-only segment");
	return buf;
}

/* Is the memory operand a read of a constant: RIP-relative, into memory
 * the program cannot write (or the GOT, written only by the dynamic
 * linker)? */
static int const_mem(struct report_value_model *vm, uint32_t image, const struct zi *z, const ZydisDecodedOperand *o)
{
	uint64_t t = riprel_target(z, o);
	if (!t)
		return 0;
	const struct report_value_elf *e = report_value_elf(vm, image);
	const struct report_value_sec *s = report_value_elf_section(e, t);
	return report_value_elf_readonly(e, t) || (s && !strncmp(s->name, ".got", 4));
}

/* The type of operand o as the instruction uses it. */
static void operand_type(const ZydisDecodedOperand *o, struct report_value_info *vi)
{
	unsigned esz = o->element_size / 8, cnt = o->element_count ? o->element_count : 1;
	unsigned sz = o->size / 8;
	vi->lanes = vi->vlanes = 1;
	switch (o->element_type) {
	case ZYDIS_ELEMENT_TYPE_FLOAT32:
	case ZYDIS_ELEMENT_TYPE_FLOAT64:
		vi->type = o->element_type == ZYDIS_ELEMENT_TYPE_FLOAT32 ? VALUE_T_FLOAT : VALUE_T_DOUBLE;
		vi->bytes = o->element_type == ZYDIS_ELEMENT_TYPE_FLOAT32 ? 4 : 8;
		vi->vlanes = cnt;
		vi->lanes = cnt * vi->bytes > 8 ? 8 / vi->bytes : cnt;
		return;
	case ZYDIS_ELEMENT_TYPE_INT:
	case ZYDIS_ELEMENT_TYPE_UINT:
		if (cnt > 1 && esz && esz < 8 && sz > 8) {
			vi->type = VALUE_T_VECTOR;
			vi->bytes = esz;
			vi->vlanes = cnt;
			vi->lanes = 8 / esz;
			return;
		}
		vi->type = o->element_type == ZYDIS_ELEMENT_TYPE_INT ? VALUE_T_INT : VALUE_T_UINT;
		vi->bytes = sz && sz <= 8 ? sz : esz && esz <= 8 ? esz : 8;
		if (sz > 8) {               /* a vector register used whole: its low 64 bits */
			vi->type = VALUE_T_VECTOR;
			vi->bytes = esz ? esz : 8;
			vi->vlanes = sz / vi->bytes;
			vi->lanes = 8 / vi->bytes;
		}
		return;
	default:
		vi->type = VALUE_T_UNKNOWN;
		vi->bytes = sz && sz <= 8 ? sz : 8;
	}
}

/* ---- where the processes had things (value_layout) ---- */

static void add_bias(struct report_value_model *vm, uint32_t image, uint64_t bias)
{
	for (int i = 0; i < vm->nbiases; i++)
		if (vm->biases[i].image == image && vm->biases[i].bias == bias)
			return;
	if (vm->nbiases < (int)(sizeof(vm->biases) / sizeof(vm->biases[0])))
		vm->biases[vm->nbiases++] = (struct value_bias){ image, bias };
}

static void add_stack(struct report_value_model *vm, uint64_t p)
{
	/* A thread's stack spans at most a few MiB: one range per 16 MiB. */
	const uint64_t span = 16ull << 20;
	for (int i = 0; i < vm->nstacks; i++) {
		if (p + span >= vm->stack_lo[i] && p <= vm->stack_hi[i] + span) {
			if (p < vm->stack_lo[i])
				vm->stack_lo[i] = p;
			if (p > vm->stack_hi[i])
				vm->stack_hi[i] = p;
			return;
		}
	}
	if (vm->nstacks < 16) {
		vm->stack_lo[vm->nstacks] = vm->stack_hi[vm->nstacks] = p;
		vm->nstacks++;
	}
}

/* Biases: every ADDR hotlist at an instruction whose one memory access
 * is RIP-relative holds bias + that ELF address (page-aligned biases
 * only). Stacks: the values marked as stack addresses, and the ADDR
 * values of rsp-based accesses. */
static void value_layout(struct report_value_model *vm)
{
	if (vm->layout_done)
		return;
	vm->layout_done = 1;
	for (size_t i = 0; i < vm->m.nimages; i++) {
		const struct report_value_elf *e = report_value_elf(vm, (uint32_t)i);
		if (e && e->type == ET_EXEC)
			add_bias(vm, (uint32_t)i, 0);
	}
	for (size_t i = 0; i < vm->nhot; i++) {
		const struct report_value_hot *v = &vm->hot[i];
		unsigned k = v->kind;
		if (k == SPOOL_VK_RESULT || k == SPOOL_VK_SRC1 || k == SPOOL_VK_SRC2 || k == SPOOL_VK_ADDR)
			for (uint32_t e = 0; e < v->h.n; e++)
				if (v->h.e[e].aux == SPOOL_HOT_AUX_STACK)
					add_stack(vm, v->h.e[e].value);
		if (k != SPOOL_VK_ADDR || !v->h.n)
			continue;
		struct zi z;
		int m;
		if (decode_at(vm, v->image, v->vaddr, &z) < 0 || (m = first_mem(&z)) < 0 || implicit_stack(&z))
			continue;
		uint64_t t = riprel_target(&z, &z.ops[m]);
		for (uint32_t e = 0; e < v->h.n; e++) {
			uint64_t a = v->h.e[e].value;
			if (t && a > t && !((a - t) & 0xfff))
				add_bias(vm, v->image, a - t);
			else if (!t && wide(z.ops[m].mem.base) == ZYDIS_REGISTER_RSP)
				add_stack(vm, a);
		}
	}
}

int report_value_place_pointer(struct report_value_model *vm, uint64_t p, uint32_t *image, uint64_t *vaddr)
{
	value_layout(vm);
	for (int i = 0; i < vm->nbiases; i++) {
		const struct report_value_elf *e = report_value_elf(vm, vm->biases[i].image);
		uint64_t va = p - vm->biases[i].bias;
		if (e && p >= vm->biases[i].bias && va >= e->lo && va < e->hi) {
			*image = vm->biases[i].image;
			*vaddr = va;
			return 0;
		}
	}
	return -1;
}

int report_value_in_stack(struct report_value_model *vm, uint64_t p)
{
	value_layout(vm);
	for (int i = 0; i < vm->nstacks; i++)
		if (p + (8ull << 20) >= vm->stack_lo[i] && p <= vm->stack_hi[i] + (1ull << 20))
			return 1;
	return 0;
}

/* The brk heap: above an executable's end (the kernel starts it within
 * 1 GiB of it), below 64 GiB past that. Without the executable's bias,
 * Linux's x86-64 layout: a PIE executable is loaded at 0x555555554000
 * plus up to 1 TiB, its heap above it. */
static int in_heap(struct report_value_model *vm, uint64_t p)
{
	int exe_known = 0;
	value_layout(vm);
	for (int i = 0; i < vm->nbiases; i++) {
		const struct report_value_elf *e = report_value_elf(vm, vm->biases[i].image);
		uint64_t end = vm->biases[i].bias + (e ? e->hi : 0);
		if (!e || !e->interp)
			continue;
		exe_known = 1;
		if (p >= end && p < end + (64ull << 30))
			return 1;
	}
	return !exe_known && p >= 0x555555554000ull && p < 0x565555554000ull + (64ull << 30);
}

/* Anonymous mappings (mmap'd heaps, arenas, thread stacks not sampled):
 * Linux's x86-64 mmap area, below the stack, above 0x7e0000000000. */
static int in_mmap(uint64_t p)
{
	return p >= 0x7e0000000000ull && p < 0x800000000000ull;
}

/* ---- what a value is ---- */

/* A code address: in an executable segment of an image. */
static int code_pointer(struct report_value_model *vm, uint64_t p, uint32_t *ii, uint64_t *va)
{
	if (report_value_place_pointer(vm, p, ii, va) < 0)
		return 0;
	const struct report_value_elf *e = report_value_elf(vm, *ii);
	for (int s = 0; e && s < e->nseg; s++)
		if (*va >= e->seg[s].vaddr && *va < e->seg[s].vaddr + e->seg[s].memsz)
			return (e->seg[s].flags & PF_X) != 0;
	return 0;
}

/* Does a 64-bit integer look like a pointer of the profiled process? */
static int looks_like_pointer(struct report_value_model *vm, uint64_t p)
{
	uint32_t ii;
	uint64_t va;
	if (p < 0x10000 || p >= 0x800000000000ull)
		return 0;
	return report_value_place_pointer(vm, p, &ii, &va) == 0 || report_value_in_stack(vm, p) || in_heap(vm, p) || in_mmap(p);
}

/* A pointer to data says which object, not what it holds: where it was
 * loaded (an image's data) or allocated (the heap, a mapping). Its class
 * is position then (a code address is not: which function is called is
 * data). */
static void pointer_class(struct report_value_model *vm, uint64_t p, struct report_value_info *vi)
{
	uint32_t ii;
	uint64_t va;
	if (vi->cls != VALUE_DATA || vi->type != VALUE_T_POINTER || !p)
		return;
	if (report_value_place_pointer(vm, p, &ii, &va) == 0) {
		if (!code_pointer(vm, p, &ii, &va)) {
			vi->cls = VALUE_POSITION;
			vi->why = "the address of data in an image (which object, not what it holds)";
		}
	} else if (report_value_in_stack(vm, p)) {
		vi->cls = VALUE_FRAME;
		vi->why = "an address in the thread's stack";
	} else if (in_heap(vm, p) || in_mmap(p)) {
		vi->cls = VALUE_POSITION;
		vi->why = "the address of an object in the heap or a mapping (which object, not what it holds)";
	}
}

/* The instruction that gave a register its value at `at`: decoding the
 * procedure [start, start + size) from its start, the one write of the
 * register in the whole procedure if there is exactly one and it comes
 * before `at` (a constant hoisted out of a loop), else the last write
 * before `at` if no branch lands between it and `at` (straight-line
 * code). A call counts as a write of the argument registers (they are
 * the caller's to save), and so does a partial write (al, ax). 0 with
 * *w decoded, or -1 (an incoming argument, or not sure). */
static int reg_def(struct report_value_model *vm, uint32_t image, uint64_t start, uint64_t size, uint64_t at,
		   ZydisRegister reg, struct zi *w)
{
	struct zi z, last;
	uint64_t pc = start, end = start + (size ? size : at - start + 1), lastat = 0, targets[512];
	int nt = 0, ndef = 0, nbefore = 0, lastok = 0;
	if (at < start || at >= end || end - start > (1u << 16))
		return -1;
	while (pc < end && decode_at(vm, image, pc, &z) == 0) {
		uint64_t t = branch_target(&z);
		if (t && nt < 512)
			targets[nt++] = t;
		int def = 0, full = 0;
		for (int i = 0; i < z.in.operand_count; i++) {
			const ZydisDecodedOperand *o = &z.ops[i];
			if (o->type == ZYDIS_OPERAND_TYPE_REGISTER && (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) &&
			    wide(o->reg.value) == reg) {
				def = 1;
				full = o->size >= 32;
			}
		}
		if (is_call(&z) && pc != at)
			def = 1, full = 0;
		if (def && pc != at) {
			ndef++;
			if (pc < at) {
				nbefore++;
				last = z;
				lastat = pc;
				lastok = full;
			}
		}
		pc += z.in.length;
	}
	if (pc < at || !nbefore || !lastok)
		return -1;
	if (ndef == 1 && nbefore == 1) {
		*w = last;
		return 0;
	}
	for (int i = 0; i < nt; i++)
		if (targets[i] > lastat && targets[i] <= at)
			return -1;
	*w = last;
	return 0;
}

/* What an instruction's result is when it depends on no data: an
 * immediate moved, an idiom, a load from read-only memory (or from
 * several operands all constant); a RIP-relative address; an address in
 * the frame. VALUE_DATA otherwise. */
static enum report_value_class result_class(struct report_value_model *vm, uint32_t image, const struct zi *z, int fp,
					    const char **why)
{
	static char buf[200];
	int id = idiom(z);
	if (id) {
		*why = id == 1 ? "a zeroing idiom (the result does not depend on the operands)"
			       : "an all-ones idiom (the result does not depend on the operands)";
		return VALUE_CONSTANT;
	}
	if (z->in.mnemonic == ZYDIS_MNEMONIC_LEA) {
		const ZydisDecodedOperand *a = &z->ops[1];
		if (a->mem.base == ZYDIS_REGISTER_RIP) {
			*why = "a RIP-relative address (lea)";
			return VALUE_POSITION;
		}
		if (frame_reg(a->mem.base, fp) && a->mem.index == ZYDIS_REGISTER_NONE) {
			*why = "an address in the frame (lea)";
			return VALUE_FRAME;
		}
		return VALUE_DATA;
	}
	int reads = 0, consts = 0, imm = 0, rsp = 0;
	uint64_t from = 0;
	for (int i = 0; i < z->in.operand_count; i++) {
		const ZydisDecodedOperand *s = &z->ops[i];
		if (!(s->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && s->type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
			continue;
		if (s->type == ZYDIS_OPERAND_TYPE_REGISTER && ZydisRegisterGetClass(s->reg.value) == ZYDIS_REGCLASS_FLAGS)
			continue;
		if (s->type == ZYDIS_OPERAND_TYPE_REGISTER && s->visibility == ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
		    wide(s->reg.value) == ZYDIS_REGISTER_RSP)
			continue;   /* (push imm: the value is the immediate) */
		reads++;
		if (s->type == ZYDIS_OPERAND_TYPE_IMMEDIATE)
			consts++, imm++;
		else if (s->type == ZYDIS_OPERAND_TYPE_MEMORY && const_mem(vm, image, z, s))
			consts++, from = riprel_target(z, s);
		else if (s->type == ZYDIS_OPERAND_TYPE_REGISTER && s->visibility != ZYDIS_OPERAND_VISIBILITY_HIDDEN &&
			 frame_reg(s->reg.value, fp) && z->in.mnemonic == ZYDIS_MNEMONIC_MOV)
			rsp = 1;
	}
	if (reads && consts == reads) {
		*why = imm == reads ? "an immediate"
		       : imm ? "computed from read-only data"
			     : ro_reason(vm, image, from, buf, sizeof(buf));
		return VALUE_CONSTANT;
	}
	if (rsp) {
		*why = "the stack pointer";
		return VALUE_FRAME;
	}
	return VALUE_DATA;
}

static const ZydisRegister kArgReg[] = {
	ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RCX, ZYDIS_REGISTER_R8,
	ZYDIS_REGISTER_R9, ZYDIS_REGISTER_XMM0, ZYDIS_REGISTER_XMM1, ZYDIS_REGISTER_XMM2, ZYDIS_REGISTER_XMM3,
	ZYDIS_REGISTER_XMM4, ZYDIS_REGISTER_XMM5, ZYDIS_REGISTER_XMM6, ZYDIS_REGISTER_XMM7,
};

/* A register's value at `at` that the procedure set from a constant:
 * its class and why ("set from an immediate at +0x12"). */
static enum report_value_class reg_class(struct report_value_model *vm, const struct report_value_hot *v, ZydisRegister reg,
					 int fp, const char **why)
{
	static char buf[300];
	struct zi w;
	const char *inner = "";
	if (reg_def(vm, v->image, v->w.start, v->w.size, v->vaddr, reg, &w) < 0)
		return VALUE_DATA;
	enum report_value_class c = result_class(vm, v->image, &w, fp, &inner);
	if (c != VALUE_DATA) {
		snprintf(buf, sizeof(buf), "set at +%#llx: %s", (unsigned long long)(w.vaddr - v->w.start), inner);
		*why = buf;
	}
	return c;
}

/* An argument: typed by the callee's prototype (or its first use of the
 * register); constant when the caller set it from an immediate or a
 * read-only load, frame when it points into the stack. */
static void arg_info(struct report_value_model *vm, const struct report_value_hot *v, uint32_t e, struct report_value_info *vi)
{
	unsigned k = v->kind, ki = k - SPOOL_VK_ARG_FIRST;
	uint64_t val = v->h.e[e].value;
	uint32_t ci;
	uint64_t cva;
	vi->lanes = vi->vlanes = 1;
	vi->type = report_value_kind_is_xmm_arg(k) ? VALUE_T_UNKNOWN : VALUE_T_INT;
	vi->bytes = 8;
	if (report_value_code_place(vm, v->image, v->h.e[e].aux, &ci, &cva) == 0) {
		const struct report_value_proto *p = report_value_proto_of(vm, ci, cva, NULL);
		const struct report_value_param *pa = p ? report_value_proto_param(p, k) : NULL;
		if (pa && pa->vt) {
			vi->type = pa->vt;
			vi->bytes = pa->bytes;
		} else if (p && p->reg_vt[ki]) {
			vi->type = p->reg_vt[ki];
			vi->bytes = p->reg_bytes[ki];
		}
	}
	const char *why = "";
	enum report_value_class c = reg_class(vm, v, kArgReg[ki], keeps_frame_pointer(vm, v->image, v->w.start), &why);
	if (c != VALUE_DATA) {
		vi->cls = c;
		vi->why = why;
		return;
	}
	if (!report_value_kind_is_xmm_arg(k) && report_value_in_stack(vm, val)) {
		vi->cls = VALUE_FRAME;
		vi->why = "a pointer into the caller's stack";
		vi->type = VALUE_T_POINTER;
	} else if (!report_value_kind_is_xmm_arg(k) && vi->bytes == 8 &&
		   (vi->type == VALUE_T_INT || vi->type == VALUE_T_UINT) && looks_like_pointer(vm, val)) {
		vi->type = code_pointer(vm, val, &ci, &cva) ? VALUE_T_CODE : VALUE_T_POINTER;
	}
	pointer_class(vm, val, vi);
}

void report_value_info_of(struct report_value_model *vm, const struct report_value_hot *v, uint32_t e, struct report_value_info *vi)
{
	unsigned k = v->kind, pk = report_value_plain_kind(k);
	uint64_t val = e < v->h.n ? v->h.e[e].value : 0;
	struct zi z;
	uint32_t ii;
	uint64_t va;
	memset(vi, 0, sizeof(*vi));
	vi->why = "";
	vi->type = VALUE_T_INT;
	vi->bytes = 8;
	vi->lanes = vi->vlanes = 1;
	if (report_value_kind_is_arg(k)) {
		arg_info(vm, v, e, vi);
		return;
	}
	switch (k) {
	case SPOOL_VK_RETADDR:
	case SPOOL_VK_TARGET:
		vi->type = VALUE_T_CODE;
		break;
	case SPOOL_VK_ADDR:
	case SPOOL_VK_ADDR_LATENCY:
		vi->type = VALUE_T_POINTER;
		break;
	case SPOOL_VK_LATENCY:
		vi->type = VALUE_T_UINT;
		return;
	case SPOOL_VK_RANGE:
	case SPOOL_VK_TAKEN:
		vi->type = VALUE_T_CODE;
		return;
	case SPOOL_VK_STRIDE:
	case SPOOL_VK_BRANCH:
	case SPOOL_VK_CACHE:
		return;
	default:
		if (k >= SPOOL_VK_MODULE_FIRST)
			return;
	}
	if (decode_at(vm, v->image, v->vaddr, &z) < 0)
		return;
	int fp = keeps_frame_pointer(vm, v->image, v->w.start);

	if (k == SPOOL_VK_TARGET) {
		int m = first_mem(&z);
		const struct report_value_sec *s = report_value_elf_section(report_value_elf(vm, v->image), v->vaddr);
		if ((m >= 0 && const_mem(vm, v->image, &z, &z.ops[m])) || (s && !strncmp(s->name, ".plt", 4))) {
			vi->cls = VALUE_CONSTANT;
			vi->why = "a branch through the GOT (the dynamic linker's binding)";
		}
		return;
	}
	if (k == SPOOL_VK_ADDR || k == SPOOL_VK_ADDR_LATENCY) {
		int m = first_mem(&z);
		if (k == SPOOL_VK_ADDR && v->h.e[e].aux == SPOOL_HOT_AUX_STACK) {
			vi->cls = VALUE_FRAME;
			vi->why = "an address in the thread's stack";
		} else if (m < 0 || implicit_stack(&z)) {
			vi->cls = VALUE_FRAME;
			vi->why = "a stack slot (push, pop, call or ret)";
		} else if (riprel_target(&z, &z.ops[m])) {
			vi->cls = VALUE_POSITION;
			vi->why = "a RIP-relative address";
		} else if (frame_reg(z.ops[m].mem.base, fp) && z.ops[m].mem.index == ZYDIS_REGISTER_NONE) {
			vi->cls = VALUE_FRAME;
			vi->why = "a stack slot's address";
		}
		pointer_class(vm, val, vi);
		return;
	}

	/* RESULT, SRC1, SRC2 and their @site forms */
	int oi = kind_operand(&z, k);
	if (oi >= 0)
		operand_type(&z.ops[oi], vi);
	if (oi >= 0 && pk == SPOOL_VK_RESULT && z.ops[oi].type == ZYDIS_OPERAND_TYPE_REGISTER && z.ops[oi].size > 64) {
		/* A scalar moved or converted into a vector register (movq,
		 * movsd, cvtsi2sd): typed as the scalar the register now holds. */
		for (int i = 0; i < z.in.operand_count_visible; i++) {
			const ZydisDecodedOperand *s = &z.ops[i];
			if (i != oi && (s->actions & ZYDIS_OPERAND_ACTION_MASK_READ) && s->size && s->size <= 64 &&
			    (s->type == ZYDIS_OPERAND_TYPE_MEMORY || s->type == ZYDIS_OPERAND_TYPE_REGISTER)) {
				struct report_value_info t = *vi;
				operand_type(s, &t);
				if (z.ops[oi].element_type == ZYDIS_ELEMENT_TYPE_FLOAT64 ||
				    z.ops[oi].element_type == ZYDIS_ELEMENT_TYPE_FLOAT32) {
					vi->vlanes = 1;   /* the scalar lane of a scalar SSE op */
					vi->lanes = 1;
				} else {
					*vi = t;
				}
				break;
			}
		}
	}
	int id = idiom(&z);
	if (id) {
		vi->cls = VALUE_CONSTANT;
		vi->why = id == 1 ? "a zeroing idiom (the result does not depend on the operands)"
				  : "an all-ones idiom (the result does not depend on the operands)";
		return;
	}
	/* A mark of the handler: this value was an address in the stack (on
	 * the plain kind's entry for an @site kind). */
	int marked = 0;
	if (k == pk)
		marked = v->h.e[e].aux == SPOOL_HOT_AUX_STACK;
	else {
		const struct report_value_hot *p = report_value_hot_find(vm, v->image, v->vaddr, pk);
		for (uint32_t j = 0; p && j < p->h.n && !marked; j++)
			marked = p->h.e[j].value == val && p->h.e[j].aux == SPOOL_HOT_AUX_STACK;
	}
	if (marked) {
		vi->cls = VALUE_FRAME;
		vi->why = "an address in the thread's stack";
		vi->type = VALUE_T_POINTER;
		return;
	}
	if (oi < 0)
		return;
	const ZydisDecodedOperand *o = &z.ops[oi];
	static char why[200];
	if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && const_mem(vm, v->image, &z, o)) {
		vi->cls = VALUE_CONSTANT;
		vi->why = ro_reason(vm, v->image, riprel_target(&z, o), why, sizeof(why));
		return;
	}
	if (o->type == ZYDIS_OPERAND_TYPE_REGISTER && frame_reg(o->reg.value, fp) &&
	    ZydisRegisterGetWidth(ZYDIS_MACHINE_MODE_LONG_64, o->reg.value) == 64) {
		vi->cls = VALUE_FRAME;
		vi->why = wide(o->reg.value) == ZYDIS_REGISTER_RSP ? "the stack pointer" : "the frame pointer";
		vi->type = VALUE_T_POINTER;
		return;
	}
	if (pk == SPOOL_VK_RESULT) {
		const char *w = "";
		enum report_value_class c = result_class(vm, v->image, &z, fp, &w);
		if (c != VALUE_DATA) {
			vi->cls = c;
			vi->why = w;
			if (c != VALUE_CONSTANT)
				vi->type = VALUE_T_POINTER;
			return;
		}
	} else if (o->type == ZYDIS_OPERAND_TYPE_REGISTER) {
		/* A source register the procedure set from a constant (a
		 * constant hoisted into a register before the loop). */
		const char *w = "";
		enum report_value_class c = reg_class(vm, v, wide(o->reg.value), fp, &w);
		if (c != VALUE_DATA) {
			vi->cls = c;
			vi->why = w;
			return;
		}
	}
	/* By the value: the instruction's own address, an image's base. */
	if (report_value_place_pointer(vm, val, &ii, &va) == 0) {
		const struct report_value_elf *el = report_value_elf(vm, ii);
		if (ii == v->image && (va == v->vaddr || va == v->vaddr + z.in.length)) {
			vi->cls = VALUE_POSITION;
			vi->why = "the instruction's own address";
		} else if (el && va == el->lo) {
			vi->cls = VALUE_POSITION;
			vi->why = "an image's base address";
		}
		if (vi->bytes == 8 && (vi->type == VALUE_T_INT || vi->type == VALUE_T_UINT || vi->type == VALUE_T_UNKNOWN))
			vi->type = code_pointer(vm, val, &ii, &va) ? VALUE_T_CODE : VALUE_T_POINTER;
		pointer_class(vm, val, vi);
		return;
	}
	if (vi->bytes == 8 && (vi->type == VALUE_T_INT || vi->type == VALUE_T_UINT || vi->type == VALUE_T_UNKNOWN) &&
	    looks_like_pointer(vm, val))
		vi->type = VALUE_T_POINTER;
	pointer_class(vm, val, vi);
}

/* ---- text ---- */

/* A double as a person writes it: 2.0, 0.5, 1e-09, the shortest text
 * that reads back as the same number. */
static void fmt_double(double d, char *buf, size_t cap)
{
	if (isnan(d)) {
		snprintf(buf, cap, "nan");
		return;
	}
	if (isinf(d)) {
		snprintf(buf, cap, d < 0 ? "-inf" : "inf");
		return;
	}
	for (int p = 1; p <= 17; p++) {
		snprintf(buf, cap, "%.*g", p, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (!strpbrk(buf, ".en"))
		strncat(buf, ".0", cap - strlen(buf) - 1);
}

static void fmt_float(float f, char *buf, size_t cap)
{
	for (int p = 1; p <= 9; p++) {
		snprintf(buf, cap, "%.*g", p, (double)f);
		if (strtof(buf, NULL) == f)
			break;
	}
	if (!strpbrk(buf, ".eni"))
		strncat(buf, ".0", cap - strlen(buf) - 1);
}

static uint64_t lane(uint64_t v, unsigned bytes, unsigned i)
{
	return bytes >= 8 ? v : (v >> (8 * bytes * i)) & ((1ull << (8 * bytes)) - 1);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');
	return s && s[1] ? s + 1 : path;
}

/* A pointer: "&name+0x10" (a data symbol of an image), a code symbol,
 * "gzip .bss+0x40", "[stack] 0x7ffe...", "[heap] 0x55...", "[mmap]
 * 0x7f..." (in_heap, in_mmap), else hex. */
static const char *pointer_text(struct report_value_model *vm, uint64_t p, char *buf, size_t cap)
{
	uint32_t ii;
	uint64_t va;
	char sb[200];
	if (!p) {
		snprintf(buf, cap, "NULL");
		return buf;
	}
	if (report_value_place_pointer(vm, p, &ii, &va) == 0) {
		const struct report_value_elf *e = report_value_elf(vm, ii);
		const struct report_value_dsym *ds = report_value_elf_data_symbol(e, va);
		const struct report_value_sec *s = report_value_elf_section(e, va);
		if (ds)
			snprintf(buf, cap, "&%s%s%.0llx", ds->name, va > ds->start ? "+0x" : "",
				 (unsigned long long)(va - ds->start));
		else if (s && (s->flags & SHF_EXECINSTR) && report_value_code_text(vm, ii, va, sb, sizeof(sb)))
			snprintf(buf, cap, "%s", sb);
		else
			snprintf(buf, cap, "%s %s+%#llx", base_name(vm->m.images[ii].path), s ? s->name : "?",
				 (unsigned long long)(s ? va - s->addr : va));
		return buf;
	}
	snprintf(buf, cap, "%s%#llx", report_value_in_stack(vm, p) ? "[stack] " : in_heap(vm, p) ? "[heap] "
				       : in_mmap(p) ? "[mmap] " : "", (unsigned long long)p);
	return buf;
}

const char *report_value_typed_fmt(struct report_value_model *vm, uint64_t v, const struct report_value_info *vi, char *buf, size_t cap)
{
	char a[64], b[64];
	switch (vi->type) {
	case VALUE_T_DOUBLE:
	case VALUE_T_FLOAT:
		if (vi->lanes <= 1) {
			if (vi->type == VALUE_T_DOUBLE) {
				double d;
				memcpy(&d, &v, 8);
				fmt_double(d, buf, cap);
			} else {
				float f;
				uint32_t u = (uint32_t)v;
				memcpy(&f, &u, 4);
				fmt_float(f, buf, cap);
			}
			if (vi->vlanes > 1) {
				size_t l = strlen(buf);
				snprintf(buf + l, cap - l, " (lane 0 of %u)", vi->vlanes);
			}
			return buf;
		}
		{
			float f0, f1;
			uint32_t u0 = (uint32_t)v, u1 = (uint32_t)(v >> 32);
			memcpy(&f0, &u0, 4);
			memcpy(&f1, &u1, 4);
			fmt_float(f0, a, sizeof(a));
			fmt_float(f1, b, sizeof(b));
			snprintf(buf, cap, "{%s, %s%s}", a, b, vi->vlanes > 2 ? ", ..." : "");
		}
		return buf;
	case VALUE_T_VECTOR: {
		size_t l = 0;
		l += (size_t)snprintf(buf, cap, "{");
		for (unsigned i = 0; i < vi->lanes && l < cap; i++)
			l += (size_t)snprintf(buf + l, cap - l, "%s%#llx", i ? ", " : "",
					      (unsigned long long)lane(v, vi->bytes, i));
		if (l < cap)
			snprintf(buf + l, cap - l, "%s}", vi->vlanes > vi->lanes ? ", ..." : "");
		return buf;
	}
	case VALUE_T_POINTER:
		return pointer_text(vm, v, buf, cap);
	case VALUE_T_CODE: {
		uint32_t ii;
		uint64_t va;
		if (report_value_place_pointer(vm, v, &ii, &va) == 0 && report_value_code_text(vm, ii, va, buf, cap))
			return buf;
		snprintf(buf, cap, "%#llx", (unsigned long long)v);
		return buf;
	}
	case VALUE_T_BOOL:
		snprintf(buf, cap, "%s", (v & 0xff) ? "true" : "false");
		return buf;
	case VALUE_T_UINT:
	case VALUE_T_INT:
	case VALUE_T_UNKNOWN:
	default: {
		unsigned by = vi->bytes && vi->bytes < 8 ? vi->bytes : 8;
		uint64_t m = by >= 8 ? ~0ull : (1ull << (8 * by)) - 1, u = v & m;
		int64_t s = by >= 8 ? (int64_t)u : (u >> (8 * by - 1)) ? (int64_t)(u | ~m) : (int64_t)u;
		if (vi->type == VALUE_T_UINT || (vi->type == VALUE_T_UNKNOWN && s < 0 && by == 8))
			s = (int64_t)u >= 0 ? (int64_t)u : 0;
		if (vi->type != VALUE_T_UINT && s > -1000000000000ll && s < 1000000000000ll)
			snprintf(buf, cap, "%lld (%#llx)", (long long)s, (unsigned long long)u);
		else if (vi->type == VALUE_T_UINT && u < 1000000000000ull)
			snprintf(buf, cap, "%llu (%#llx)", (unsigned long long)u, (unsigned long long)u);
		else
			snprintf(buf, cap, "%#llx", (unsigned long long)u);
		return buf;
	}
	}
}

const char *report_value_type_name(const struct report_value_info *vi)
{
	static char buf[32];
	switch (vi->type) {
	case VALUE_T_DOUBLE: return vi->vlanes > 1 ? "double lane" : "double";
	case VALUE_T_FLOAT: return vi->lanes > 1 ? "float lanes" : vi->vlanes > 1 ? "float lane" : "float";
	case VALUE_T_VECTOR:
		snprintf(buf, sizeof(buf), "int%u lanes", 8 * vi->bytes);
		return buf;
	case VALUE_T_POINTER: return "pointer";
	case VALUE_T_CODE: return "code address";
	case VALUE_T_BOOL: return "bool";
	case VALUE_T_UINT:
		snprintf(buf, sizeof(buf), "uint%u", 8 * (vi->bytes ? vi->bytes : 8));
		return buf;
	case VALUE_T_INT:
		snprintf(buf, sizeof(buf), "int%u", 8 * (vi->bytes ? vi->bytes : 8));
		return buf;
	default: return "unknown";
	}
}

const char *report_value_text(struct report_value_model *vm, const struct report_value_hot *v, uint32_t e, char *buf, size_t cap)
{
	uint64_t val = v->h.e[e].value;
	struct report_value_info vi;
	/* Kinds whose values are not operands keep their own text. */
	if (v->kind == SPOOL_VK_LATENCY || v->kind == SPOOL_VK_RETADDR || v->kind == SPOOL_VK_TARGET ||
	    v->kind == SPOOL_VK_STRIDE || spool_hot_kind_is_record(v->kind) ||
	    v->kind >= SPOOL_VK_MODULE_FIRST)
		return report_value_fmt(vm, v->kind, v->image, val, buf, cap);
	report_value_info_of(vm, v, e, &vi);
	return report_value_typed_fmt(vm, val, &vi, buf, cap);
}
