/*
 * values_proto.c — a procedure's parameters as its source declares
 * them, so that an argument sampled in a register is named and numbered
 * as a person wrote it: `pow(x, y)`'s y arrives in xmm1, and in `double
 * power(double x, int e)` e is the second parameter although it arrives
 * in the first integer register (rdi).
 *
 * The prototype is the DWARF subprogram whose low_pc is the procedure's
 * entry, in the image or its separate debug file (found by build-id, as
 * for source lines: Debian's -dbg and -dbgsym packages). Its parameters
 * are given registers by the System V AMD64 classes: INTEGER (integers,
 * pointers, enums, small aggregates of them) take rdi, rsi, rdx, rcx, r8,
 * r9 in turn; SSE (float, double, small aggregates of them) take xmm0-7;
 * MEMORY (aggregates over 16 bytes, long double, C++ classes passed by
 * invisible reference take an INTEGER pointer instead) takes none; a
 * struct return in memory takes rdi first; a parameter that no longer
 * fits its class's registers goes to the stack whole. Where a type is
 * beyond these rules the mapping stops there, and later parameters are
 * named by their register only.
 *
 * Without DWARF (assembly routines such as glibc's memcpy variants), a
 * few libc routines are known by name. Either way, the callee's code is
 * read from its entry for what it does first with each argument register
 * (a double compare, a 32-bit add, a memory base), which types values
 * DWARF does not. Single-threaded, nothing async-signal-safe.
 */
#include "reports/value_model.h"
#include "reports/symbolize.h"

#include <Zydis/Zydis.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdlib.h>
#include <string.h>

static const char *const kRegName[] = {
	"rdi", "rsi", "rdx", "rcx", "r8", "r9",
	"xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7",
};

const char *report_value_arg_reg(unsigned kind)
{
	return report_value_kind_is_arg(kind) ? kRegName[kind - SPOOL_VK_ARG_FIRST] : "?";
}

/* ---- SysV classes of a DWARF type ---- */

enum cls { C_NONE = 0, C_INT, C_SSE, C_MEM, C_UNKNOWN };

static Dwarf_Die *type_of(Dwarf_Die *die, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, DW_AT_type, &a) ? dwarf_formref_die(&a, out) : NULL;
}

static Dwarf_Word byte_size(Dwarf_Die *t)
{
	Dwarf_Attribute a;
	Dwarf_Word w = 0;
	if (dwarf_attr_integrate(t, DW_AT_byte_size, &a))
		dwarf_formudata(&a, &w);
	return w;
}

static void merge_cls(enum cls *slot, enum cls c)
{
	/* The ABI's merge: MEMORY and unknown win, then INTEGER over SSE. */
	if (*slot == C_MEM || *slot == C_UNKNOWN)
		return;
	if (*slot == C_NONE || c == C_MEM || c == C_UNKNOWN || (c == C_INT && *slot == C_SSE))
		*slot = c;
}

/* Classify the bytes of type t at offset off into the eightbytes e[2];
 * depth bounds recursion. */
static void classify_at(Dwarf_Die *t, Dwarf_Word off, enum cls e[2], int depth)
{
	Dwarf_Die pt, m, et;
	if (depth > 8 || dwarf_peel_type(t, &pt) != 0) {
		e[0] = C_UNKNOWN;
		return;
	}
	Dwarf_Word sz = byte_size(&pt);
	int tag = dwarf_tag(&pt);
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	switch (tag) {
	case DW_TAG_base_type:
		if (dwarf_attr(&pt, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		if (enc == DW_ATE_float || enc == DW_ATE_complex_float) {
			const char *n = dwarf_diename(&pt);
			if ((n && strstr(n, "long double")) || sz > 16) {
				merge_cls(&e[0], C_MEM);
				return;
			}
			for (Dwarf_Word b = off / 8; b < (off + sz + 7) / 8 && b < 2; b++)
				merge_cls(&e[b], C_SSE);
			if (sz == 16 && enc == DW_ATE_float)
				e[1] = e[1] == C_SSE ? C_NONE : e[1];   /* __float128: one xmm register */
			return;
		}
		__attribute__((fallthrough));
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_enumeration_type:
	case DW_TAG_ptr_to_member_type:
		if (!sz)
			sz = 8;
		for (Dwarf_Word b = off / 8; b < (off + sz + 7) / 8; b++) {
			if (b >= 2) {
				merge_cls(&e[0], C_MEM);
				return;
			}
			merge_cls(&e[b], C_INT);
		}
		return;
	case DW_TAG_array_type: {
		Dwarf_Word esz;
		if (!type_of(&pt, &et) || !(esz = byte_size(&et)) || !sz) {
			e[0] = C_UNKNOWN;
			return;
		}
		for (Dwarf_Word o = 0; o < sz && o < 16; o += esz)
			classify_at(&et, off + o, e, depth + 1);
		return;
	}
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		if (dwarf_attr(&pt, DW_AT_calling_convention, &a) && dwarf_formudata(&a, &enc) == 0 &&
		    enc == DW_CC_pass_by_reference) {
			merge_cls(&e[off / 8 < 2 ? off / 8 : 0], C_INT);   /* a pointer to a copy */
			return;
		}
		if (sz > 16 || off + sz > 16) {
			merge_cls(&e[0], C_MEM);
			return;
		}
		if (dwarf_child(&pt, &m) != 0)
			return;   /* empty */
		do {
			Dwarf_Word mo = 0;
			if (dwarf_tag(&m) != DW_TAG_member || dwarf_hasattr(&m, DW_AT_external))
				continue;
			if (dwarf_hasattr(&m, DW_AT_bit_size) || dwarf_hasattr(&m, DW_AT_data_bit_offset)) {
				merge_cls(&e[0], C_INT);
				if (sz > 8)
					merge_cls(&e[1], C_INT);
				continue;
			}
			if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &mo) != 0) {
				e[0] = C_UNKNOWN;
				return;
			}
			if (!type_of(&m, &et)) {
				e[0] = C_UNKNOWN;
				return;
			}
			classify_at(&et, off + mo, e, depth + 1);
		} while (dwarf_siblingof(&m, &m) == 0);
		return;
	default:
		e[0] = C_UNKNOWN;
	}
}

/* The eightbytes of a parameter's type: how many, and their classes; 0
 * for memory, -1 when unknown. */
static int classify(Dwarf_Die *t, enum cls e[2])
{
	e[0] = e[1] = C_NONE;
	classify_at(t, 0, e, 0);
	if (e[0] == C_UNKNOWN || e[1] == C_UNKNOWN)
		return -1;
	if (e[0] == C_MEM || e[1] == C_MEM)
		return 0;
	return e[1] == C_NONE ? 1 : 2;
}

/* ---- C type names and value types ---- */

static void type_name(Dwarf_Die *t, char *buf, size_t cap, int depth)
{
	Dwarf_Die in;
	const char *n = dwarf_diename(t);
	buf[0] = 0;
	if (depth > 6) {
		snprintf(buf, cap, "...");
		return;
	}
	switch (dwarf_tag(t)) {
	case DW_TAG_base_type:
	case DW_TAG_typedef:
		snprintf(buf, cap, "%s", n ? n : "?");
		return;
	case DW_TAG_structure_type: snprintf(buf, cap, "struct %s", n ? n : "{...}"); return;
	case DW_TAG_class_type: snprintf(buf, cap, "%s", n ? n : "class {...}"); return;
	case DW_TAG_union_type: snprintf(buf, cap, "union %s", n ? n : "{...}"); return;
	case DW_TAG_enumeration_type: snprintf(buf, cap, "enum %s", n ? n : "{...}"); return;
	case DW_TAG_const_type:
	case DW_TAG_volatile_type: {
		char inner[96] = "void";
		if (type_of(t, &in))
			type_name(&in, inner, sizeof(inner), depth + 1);
		snprintf(buf, cap, "%s %s", dwarf_tag(t) == DW_TAG_const_type ? "const" : "volatile", inner);
		return;
	}
	case DW_TAG_restrict_type:
		if (type_of(t, &in))
			type_name(&in, buf, cap, depth + 1);
		return;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type: {
		char inner[96] = "void";
		const char *star = dwarf_tag(t) == DW_TAG_pointer_type ? "*" : dwarf_tag(t) == DW_TAG_reference_type ? "&" : "&&";
		if (type_of(t, &in)) {
			if (dwarf_tag(&in) == DW_TAG_subroutine_type) {
				snprintf(buf, cap, "function %s", star);
				return;
			}
			type_name(&in, inner, sizeof(inner), depth + 1);
		}
		snprintf(buf, cap, "%s %s", inner, star);
		return;
	}
	case DW_TAG_array_type: {
		char inner[96] = "?";
		if (type_of(t, &in))
			type_name(&in, inner, sizeof(inner), depth + 1);
		snprintf(buf, cap, "%s[]", inner);
		return;
	}
	default:
		snprintf(buf, cap, "%s", n ? n : "?");
	}
}

static void value_type_of(Dwarf_Die *t, enum report_value_type *vt, unsigned *bytes)
{
	Dwarf_Die pt, in;
	Dwarf_Attribute a;
	Dwarf_Word enc = 0;
	*vt = VALUE_T_UNKNOWN;
	*bytes = 8;
	if (dwarf_peel_type(t, &pt) != 0)
		return;
	Dwarf_Word sz = byte_size(&pt);
	switch (dwarf_tag(&pt)) {
	case DW_TAG_base_type:
		if (dwarf_attr(&pt, DW_AT_encoding, &a))
			dwarf_formudata(&a, &enc);
		*bytes = sz && sz <= 8 ? (unsigned)sz : 8;
		if (enc == DW_ATE_float)
			*vt = sz == 4 ? VALUE_T_FLOAT : sz == 8 ? VALUE_T_DOUBLE : VALUE_T_UNKNOWN;
		else if (enc == DW_ATE_boolean)
			*vt = VALUE_T_BOOL;
		else if (enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char)
			*vt = VALUE_T_UINT;
		else if (enc == DW_ATE_signed || enc == DW_ATE_signed_char)
			*vt = VALUE_T_INT;
		return;
	case DW_TAG_enumeration_type:
		*vt = VALUE_T_INT;
		*bytes = sz && sz <= 8 ? (unsigned)sz : 4;
		return;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		*vt = type_of(&pt, &in) && dwarf_tag(&in) == DW_TAG_subroutine_type ? VALUE_T_CODE : VALUE_T_POINTER;
		return;
	default:
		return;
	}
}

/* ---- the subprogram at an entry ---- */

/* The DIE of the subprogram whose low_pc is entry, under parent
 * (namespaces and classes searched too). */
static int find_subprogram(Dwarf_Die *parent, uint64_t entry, Dwarf_Die *out, int depth)
{
	Dwarf_Die c;
	if (depth > 6 || dwarf_child(parent, &c) != 0)
		return -1;
	do {
		int tag = dwarf_tag(&c);
		Dwarf_Addr lo;
		if (tag == DW_TAG_subprogram && dwarf_lowpc(&c, &lo) == 0 && lo == entry) {
			*out = c;
			return 0;
		}
		if ((tag == DW_TAG_namespace || tag == DW_TAG_class_type || tag == DW_TAG_structure_type ||
		     tag == DW_TAG_module) && find_subprogram(&c, entry, out, depth + 1) == 0)
			return 0;
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

/* The subprogram's parameters, in source order: the concrete DIE's, or
 * its abstract origin's when it lists none. */
static int params_die(Dwarf_Die *sp, Dwarf_Die *holder)
{
	Dwarf_Die c, o;
	Dwarf_Attribute a;
	*holder = *sp;
	if (dwarf_child(sp, &c) == 0)
		do {
			if (dwarf_tag(&c) == DW_TAG_formal_parameter)
				return 0;
		} while (dwarf_siblingof(&c, &c) == 0);
	if ((dwarf_attr(sp, DW_AT_abstract_origin, &a) || dwarf_attr(sp, DW_AT_specification, &a)) &&
	    dwarf_formref_die(&a, &o)) {
		*holder = o;
		return 0;
	}
	return 0;
}

static void from_dwarf(struct report_value_model *vm, struct report_value_proto *p)
{
	struct report_image *sym = vm->m.images[p->image].sym;
	Dwarf_Die cu, sp, holder, c, t;
	if (!sym || report_sym_cu(sym, p->entry, &cu) != 0 || dwarf_srclang(&cu) == DW_LANG_Mips_Assembler ||
	    find_subprogram(&cu, p->entry, &sp, 0) != 0)
		return;   /* (an assembler's subprograms have no parameters) */
	const char *n = dwarf_diename(&sp);
	if (!n) {
		Dwarf_Attribute a;
		n = dwarf_formstring(dwarf_attr_integrate(&sp, DW_AT_name, &a));
	}
	snprintf(p->name, sizeof(p->name), "%s", n ? n : "");
	p->known = 1;
	int nint = 0, nsse = 0, stop = 0;
	enum cls e[2];
	/* A return value in memory: its address comes first, in rdi. */
	if (type_of(&sp, &t) && classify(&t, e) == 0)
		nint = 1;
	params_die(&sp, &holder);
	if (dwarf_child(&holder, &c) != 0)
		return;
	do {
		if (dwarf_tag(&c) != DW_TAG_formal_parameter || p->nparams >= VALUE_PARAMS_MAX)
			continue;
		struct report_value_param *pa = &p->p[p->nparams++];
		const char *pn = dwarf_diename(&c);
		pa->number = p->nparams;
		snprintf(pa->name, sizeof(pa->name), "%s", pn ? pn : "");
		if (!type_of(&c, &t)) {
			stop = 1;
			continue;
		}
		type_name(&t, pa->type, sizeof(pa->type), 0);
		value_type_of(&t, &pa->vt, &pa->bytes);
		int k = classify(&t, e);
		if (k < 0)
			stop = 1;
		if (stop || k == 0)
			continue;
		int ni = (e[0] == C_INT) + (k == 2 && e[1] == C_INT), ns = k - ni;
		if (nint + ni > 6 || nsse + ns > 8)
			continue;   /* on the stack, whole */
		pa->kind = e[0] == C_INT ? SPOOL_VK_ARG_FIRST + (unsigned)nint : SPOOL_VK_ARG_XMM0 + (unsigned)nsse;
		nint += ni;
		nsse += ns;
		if (k == 2)
			pa->vt = VALUE_T_UNKNOWN;   /* an aggregate's first eightbyte: shown raw */
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* libc routines written in assembly have no DWARF subprogram. */
static const struct known {
	const char *name;
	const char *params[3], *types[3];
} kKnown[] = {
	{ "memcpy", { "dest", "src", "n" }, { "void *", "const void *", "size_t" } },
	{ "memmove", { "dest", "src", "n" }, { "void *", "const void *", "size_t" } },
	{ "memset", { "s", "c", "n" }, { "void *", "int", "size_t" } },
	{ "memcmp", { "s1", "s2", "n" }, { "const void *", "const void *", "size_t" } },
	{ "bcmp", { "s1", "s2", "n" }, { "const void *", "const void *", "size_t" } },
	{ "strncmp", { "s1", "s2", "n" }, { "const char *", "const char *", "size_t" } },
	{ "strcmp", { "s1", "s2", NULL }, { "const char *", "const char *", NULL } },
	{ "strlen", { "s", NULL, NULL }, { "const char *", NULL, NULL } },
	{ "memchr", { "s", "c", "n" }, { "const void *", "int", "size_t" } },
	{ "strchr", { "s", "c", NULL }, { "const char *", "int", NULL } },
};

static void from_name(struct report_value_proto *p, const char *name)
{
	for (size_t i = 0; i < sizeof(kKnown) / sizeof(kKnown[0]); i++) {
		if (strcmp(name, kKnown[i].name))
			continue;
		p->known = 1;
		snprintf(p->name, sizeof(p->name), "%s", name);
		p->nparams = 0;
		for (int j = 0; j < 3 && kKnown[i].params[j]; j++) {
			struct report_value_param *pa = &p->p[p->nparams++];
			memset(pa, 0, sizeof(*pa));
			snprintf(pa->name, sizeof(pa->name), "%s", kKnown[i].params[j]);
			snprintf(pa->type, sizeof(pa->type), "%s", kKnown[i].types[j]);
			pa->number = j + 1;
			pa->kind = SPOOL_VK_ARG_FIRST + (unsigned)j;
			pa->vt = strchr(pa->type, '*') ? VALUE_T_POINTER : !strcmp(pa->type, "int") ? VALUE_T_INT : VALUE_T_UINT;
			pa->bytes = !strcmp(pa->type, "int") ? 4 : 8;
		}
		return;
	}
}

/* ---- what the callee does first with each argument register ---- */

static int arg_index(ZydisRegister r)
{
	static const ZydisRegister k[] = {
		ZYDIS_REGISTER_RDI, ZYDIS_REGISTER_RSI, ZYDIS_REGISTER_RDX, ZYDIS_REGISTER_RCX,
		ZYDIS_REGISTER_R8, ZYDIS_REGISTER_R9,
	};
	ZydisRegister w = ZydisRegisterGetLargestEnclosing(ZYDIS_MACHINE_MODE_LONG_64, r);
	for (int i = 0; i < 6; i++)
		if (k[i] == w)
			return i;
	if (w >= ZYDIS_REGISTER_ZMM0 && w <= ZYDIS_REGISTER_ZMM7)
		return 6 + (w - ZYDIS_REGISTER_ZMM0);
	return -1;
}

/* Straight-line decode from the entry (following direct jumps), at most
 * 64 instructions: the first read of each argument register gives its
 * type (an SSE double compare: double; a 32-bit add: int32; a memory
 * base: a pointer); a write first leaves it unknown. */
static void first_uses(struct report_value_model *vm, struct report_value_proto *p)
{
	uint8_t b[ZYDIS_MAX_INSTRUCTION_LENGTH];
	ZydisDecoder dec;
	ZydisDecodedInstruction in;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	int done[14] = { 0 };
	uint64_t at = p->entry;
	ZydisDecoderInit(&dec, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	for (int n = 0; n < 64; n++) {
		long got = report_value_read_code(vm, p->image, at, b, sizeof(b));
		if (got <= 0 || !ZYAN_SUCCESS(ZydisDecoderDecodeFull(&dec, b, (ZyanUSize)got, &in, ops)))
			return;
		for (int i = 0; i < in.operand_count; i++) {
			const ZydisDecodedOperand *o = &ops[i];
			int ai;
			if (o->type == ZYDIS_OPERAND_TYPE_MEMORY && o->mem.type != ZYDIS_MEMOP_TYPE_AGEN) {
				if ((ai = arg_index(o->mem.base)) >= 0 && !done[ai]) {
					done[ai] = 1;
					p->reg_vt[ai] = VALUE_T_POINTER;
					p->reg_bytes[ai] = 8;
				}
				if ((ai = arg_index(o->mem.index)) >= 0 && !done[ai]) {
					done[ai] = 1;
					p->reg_vt[ai] = VALUE_T_INT;
					p->reg_bytes[ai] = 8;
				}
				continue;
			}
			if (o->type != ZYDIS_OPERAND_TYPE_REGISTER || (ai = arg_index(o->reg.value)) < 0 || done[ai])
				continue;
			if (o->actions & ZYDIS_OPERAND_ACTION_MASK_READ) {
				struct report_value_info vi;
				unsigned esz = o->element_size / 8;
				done[ai] = 1;
				if (o->element_type == ZYDIS_ELEMENT_TYPE_FLOAT64)
					vi.type = VALUE_T_DOUBLE, vi.bytes = 8;
				else if (o->element_type == ZYDIS_ELEMENT_TYPE_FLOAT32)
					vi.type = VALUE_T_FLOAT, vi.bytes = 4;
				else if (ai >= 6)
					vi.type = VALUE_T_UNKNOWN, vi.bytes = 8;
				else
					vi.type = o->element_type == ZYDIS_ELEMENT_TYPE_UINT ? VALUE_T_UINT : VALUE_T_INT,
					vi.bytes = o->size / 8 ? o->size / 8 : esz ? esz : 8;
				p->reg_vt[ai] = vi.type;
				p->reg_bytes[ai] = vi.bytes;
			} else if (o->actions & ZYDIS_OPERAND_ACTION_MASK_WRITE) {
				done[ai] = 1;
			}
		}
		if (in.mnemonic == ZYDIS_MNEMONIC_RET || in.mnemonic == ZYDIS_MNEMONIC_CALL)
			return;
		if (in.meta.category == ZYDIS_CATEGORY_UNCOND_BR) {
			ZyanU64 t;
			if (ops[0].type != ZYDIS_OPERAND_TYPE_IMMEDIATE ||
			    !ZYAN_SUCCESS(ZydisCalcAbsoluteAddress(&in, &ops[0], at, &t)))
				return;
			at = t;
			continue;
		}
		at += in.length;
	}
}

/* The libc routine a symbol implements, for the routines known by name:
 * "memcpy" for __memmove_avx_unaligned_erms, "memcmp" for
 * __memcmp_avx2_movbe. */
static const char *known_family(const char *sym)
{
	static const char *const k[] = { "memcmp", "bcmp", "memset", "memmove", "memcpy", "strncmp",
					 "strcmp", "strlen", "memchr", "strchr" };
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++)
		if (sym && strstr(sym, k[i]))
			return !strcmp(k[i], "memmove") ? "memmove" : k[i];
	return NULL;
}

const struct report_value_proto *report_value_proto_of(struct report_value_model *vm, uint32_t image, uint64_t entry,
						       const char *fallback)
{
	for (size_t i = 0; i < vm->nprotos; i++) {
		struct report_value_proto *p = &vm->protos[i];
		if (p->image != image || p->entry != entry)
			continue;
		if (!p->known && fallback)
			from_name(p, fallback);
		return p;
	}
	if (image >= vm->m.nimages)
		return NULL;
	vm->protos = report_grow(vm->protos, &vm->capprotos, vm->nprotos, sizeof(*vm->protos));
	struct report_value_proto *p = &vm->protos[vm->nprotos++];
	memset(p, 0, sizeof(*p));
	p->image = image;
	p->entry = entry;
	from_dwarf(vm, p);
	if (!p->known) {
		uint64_t s, n;
		const char *sym = vm->m.images[image].sym ? report_sym_lookup(vm->m.images[image].sym, entry, &s, &n) : NULL;
		const char *fam = fallback ? fallback : known_family(sym);
		if (fam)
			from_name(p, fam);
	}
	first_uses(vm, p);
	return p;
}

const struct report_value_param *report_value_proto_param(const struct report_value_proto *p, unsigned kind)
{
	for (int i = 0; p && i < p->nparams; i++)
		if (p->p[i].kind == kind)
			return &p->p[i];
	return NULL;
}

void report_value_proto_free(struct report_value_model *vm)
{
	free(vm->protos);
	vm->protos = NULL;
	vm->nprotos = vm->capprotos = 0;
}
