/* interp/fastdec.c — the decoder's fast path for the common integer forms.
 *
 * Workload: a value sample decodes whatever its run lands on, and a cold
 * decode-cache entry costs a Zydis decode (~90-150 ns here) plus compact();
 * a 4-instruction run from a cold cache was ~550 ns, three quarters of it
 * in Zydis. Most sampled instructions are plain integer forms (mov, ALU,
 * lea, push/pop, jcc, call/ret, shifts) whose decode depends only on their
 * opcode, REX.W, ModRM.mod == 3 or not, and (for group opcodes) ModRM.reg:
 * the rest (registers, the memory operand, displacement, immediate,
 * length) is read straight from the bytes.
 *
 * So the first time a form is met, interp_fastdec() decodes one canonical
 * instance of it with Zydis, through the same path as every other
 * instruction (interp_decode_zydis), and keeps the result as a template;
 * after that it parses the bytes (one optional REX, no other prefix),
 * copies the form's template and patches what varies. (Built all at once
 * in interp_init, the ~830 forms took ~1 ms of every interpreting
 * process's start-up; a form costs its one Zydis decode when first met,
 * as a miss did before.) Anything else (a
 * legacy prefix, VEX/EVEX, an opcode not listed, a form Zydis refused at
 * init, bytes past n) returns -1 and the caller decodes with Zydis.
 * tests/unit/interp_fastdec.c checks that the two paths give byte-
 * identical entries over every REX x opcode x ModRM x SIB of the listed
 * opcodes and over random bytes.
 *
 * Concurrency: the form table is written by interp_fastdec_init (under
 * interp_init) and only read afterwards. A template is written into pool
 * space reserved by an atomic add, then published by a CAS on its key
 * (release; readers load it with acquire); two threads meeting a new form
 * at once both build it and one copy is wasted. AS-safe: no locks.
 */
#include <stddef.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

/* Form flags of an opcode (kform[map][opcode]). */
#define F_ON     0x01      /* listed */
#define F_MODRM  0x02      /* has a ModRM byte */
#define F_GROUP  0x04      /* ModRM.reg selects the operation: a form per value */
#define F_REG0   0x08      /* only ModRM.reg == 0 is listed (C6, C7, 0F 1F, setcc) */
#define F_IMM8   0x10
#define F_IMM32  0x20
#define F_IMMV   0x40      /* imm32, or imm64 with REX.W (B8+r) */
#define F_PLUSR  0x80      /* register in the opcode's low 3 bits */
#define F_REL8   0x100
#define F_REL32  0x200
#define F_F6IMM  0x400     /* F6/F7: /0 and /1 (test) take an immediate */

static uint16_t kform[2][256];

static void list(int map, int lo, int hi, uint16_t f)
{
	for (int op = lo; op <= hi; op++)
		kform[map][op] = (uint16_t)(f | F_ON);
}

static void list_forms(void)
{
	static const uint8_t alu[] = { 0x00, 0x08, 0x10, 0x18, 0x20, 0x28, 0x30, 0x38 };
	for (unsigned i = 0; i < sizeof alu; i++) {
		list(0, alu[i], alu[i] + 3, F_MODRM);            /* op r/m,r and r,r/m */
		list(0, alu[i] + 4, alu[i] + 4, F_IMM8);          /* op al, imm8 */
		list(0, alu[i] + 5, alu[i] + 5, F_IMM32);         /* op eax/rax, imm32 */
	}
	list(0, 0x50, 0x5f, F_PLUSR);                        /* push, pop */
	list(0, 0x63, 0x63, F_MODRM);                        /* movsxd */
	list(0, 0x69, 0x69, F_MODRM | F_IMM32);              /* imul r, r/m, imm32 */
	list(0, 0x6b, 0x6b, F_MODRM | F_IMM8);
	list(0, 0x70, 0x7f, F_REL8);                         /* jcc */
	list(0, 0x80, 0x80, F_MODRM | F_GROUP | F_IMM8);
	list(0, 0x81, 0x81, F_MODRM | F_GROUP | F_IMM32);
	list(0, 0x83, 0x83, F_MODRM | F_GROUP | F_IMM8);
	list(0, 0x84, 0x85, F_MODRM);                        /* test */
	list(0, 0x88, 0x8b, F_MODRM);                        /* mov */
	list(0, 0x8d, 0x8d, F_MODRM);                        /* lea */
	list(0, 0x98, 0x99, 0);                              /* cwde/cdqe, cdq/cqo */
	list(0, 0xa8, 0xa8, F_IMM8);                         /* test al, imm8 */
	list(0, 0xa9, 0xa9, F_IMM32);
	list(0, 0xb0, 0xb7, F_PLUSR | F_IMM8);               /* mov r8, imm8 */
	list(0, 0xb8, 0xbf, F_PLUSR | F_IMMV);               /* mov r, imm */
	list(0, 0xc0, 0xc1, F_MODRM | F_GROUP | F_IMM8);     /* shifts by imm8 */
	list(0, 0xc3, 0xc3, 0);                              /* ret */
	list(0, 0xc6, 0xc6, F_MODRM | F_REG0 | F_IMM8);      /* mov r/m8, imm8 */
	list(0, 0xc7, 0xc7, F_MODRM | F_REG0 | F_IMM32);     /* mov r/m, imm32 */
	list(0, 0xd0, 0xd3, F_MODRM | F_GROUP);              /* shifts by 1, by cl */
	list(0, 0xe8, 0xe9, F_REL32);                        /* call, jmp */
	list(0, 0xeb, 0xeb, F_REL8);
	list(0, 0xf6, 0xf7, F_MODRM | F_GROUP | F_F6IMM);    /* test/not/neg/mul/div */
	list(0, 0xfe, 0xff, F_MODRM | F_GROUP);              /* inc/dec/call/jmp/push */
	list(1, 0x1f, 0x1f, F_MODRM | F_REG0);               /* nop r/m */
	list(1, 0x40, 0x4f, F_MODRM);                        /* cmovcc */
	list(1, 0x80, 0x8f, F_REL32);                        /* jcc rel32 */
	list(1, 0x90, 0x9f, F_MODRM | F_REG0);               /* setcc */
	list(1, 0xaf, 0xaf, F_MODRM);                        /* imul r, r/m */
	list(1, 0xb6, 0xb7, F_MODRM);                        /* movzx */
	list(1, 0xbe, 0xbf, F_MODRM);                        /* movsx */
}

/* Where each visible operand's varying part comes from. */
enum { S_NONE, S_REG, S_RM, S_OPREG, S_IMM, S_REL };

/* A template: where each visible operand comes from, and Zydis's decode
 * of the canonical instance up to its last operand (the rest of op[] is
 * zero, as interp_decode_zydis leaves it): 110-200 bytes, not the 330 of
 * a whole entry; the ~810 forms take ~132 KiB. */
struct form {
	uint8_t src[INTERP_MAX_OPS]; /* S_* per operand */
	struct interp_insn in;       /* only [0, offsetof op + nops) is kept */
};
#define HEAD offsetof(struct interp_insn, op)
#define FORM_BYTES(nops) ((offsetof(struct form, in) + HEAD + (nops) * sizeof(struct interp_operand) + 7) & ~(size_t)7)

#define POOL_BYTES (192 * 1024)
static uint64_t g_pool[POOL_BYTES / 8];
static size_t g_used;
static unsigned g_nforms;
/* (map, opcode, W, mod == 3, reg) -> 1 + byte offset / 8 into g_pool; 0:
 * not built yet; KEY_NONE: Zydis refused the form (or the pool is full). */
static uint16_t g_key[2][256][2][2][8];
#define KEY_NONE 0xffff

struct parsed {
	unsigned len, map, op, w, rex, mod3, reg, rm, immsz, imm_at, modrm_at;
	unsigned has_sib, disp_sz;   /* displacement: disp_sz bytes before imm_at */
	uint16_t f;
};

/* Bytes of the immediate (or branch offset) of a form with flags f. */
static unsigned imm_size(uint16_t f, unsigned op, unsigned w, unsigned reg)
{
	if (f & (F_IMM8 | F_REL8))
		return 1;
	if (f & (F_IMM32 | F_REL32))
		return 4;
	if (f & F_IMMV)
		return w ? 8 : 4;
	if ((f & F_F6IMM) && reg < 2)
		return op == 0xf6 ? 1 : 4;
	return 0;
}

/* Length and fields of b[0..n) if it is a listed form; -1 otherwise. */
static int parse(const uint8_t *b, unsigned n, struct parsed *p)
{
	unsigned i = 0;

	memset(p, 0, sizeof *p);
	if (n == 0)
		return -1;
	if ((b[0] & 0xf0) == 0x40) {
		p->rex = b[0];
		p->w = (b[0] >> 3) & 1;
		i = 1;
	}
	if (i >= n)
		return -1;
	if (b[i] == 0x0f) {
		p->map = 1;
		if (++i >= n)
			return -1;
	}
	p->op = b[i++];
	p->f = kform[p->map][p->op];
	if (!(p->f & F_ON))
		return -1;
	if (p->f & F_MODRM) {
		if (i >= n)
			return -1;
		uint8_t m = b[i];
		unsigned mod = m >> 6, rm = m & 7;
		p->modrm_at = i++;
		p->mod3 = mod == 3;
		p->reg = (m >> 3) & 7;
		p->rm = rm;
		if ((p->f & F_REG0) && p->reg)
			return -1;
		if (mod != 3) {
			unsigned disp = mod == 1 ? 1 : mod == 2 ? 4 : 0;
			if (rm == 4) {
				if (i >= n)
					return -1;
				p->has_sib = 1;
				if (mod == 0 && (b[i] & 7) == 5)
					disp = 4;
				i++;
			} else if (mod == 0 && rm == 5) {
				disp = 4;                /* RIP-relative */
			}
			i += disp;
			p->disp_sz = disp;
		}
	}
	p->immsz = imm_size(p->f, p->op, p->w, p->reg);
	p->imm_at = i;
	i += p->immsz;
	if (i > n || i > 15)
		return -1;
	p->len = i;
	return 0;
}

static uint16_t *key_of(const struct parsed *p)
{
	unsigned op = (p->f & F_PLUSR) ? (p->op & 0xf8) : p->op;
	return &g_key[p->map][op][p->w][p->mod3][(p->f & F_GROUP) ? p->reg : 0];
}

static uint64_t le(const uint8_t *b, unsigned n)
{
	uint64_t v = 0;
	for (unsigned k = n; k-- > 0;)
		v = v << 8 | b[k];
	return v;
}

static int64_t sext(uint64_t v, unsigned n)
{
	unsigned sh = 64 - 8 * n;
	return n >= 8 ? (int64_t)v : (int64_t)(v << sh) >> sh;
}

/* The ZydisRegister numbered n (0..15) at the width of template operand o. */
static ZydisRegister gpr(const struct interp_operand *o, unsigned n, unsigned rex)
{
	switch (o->size) {
	case 1: return (ZydisRegister)(ZYDIS_REGISTER_AL + n + (rex && n >= 4 ? 4 : 0));
	case 2: return (ZydisRegister)(ZYDIS_REGISTER_AX + n);
	case 4: return (ZydisRegister)(ZYDIS_REGISTER_EAX + n);
	default: return (ZydisRegister)(ZYDIS_REGISTER_RAX + n);
	}
}

static unsigned build(const struct parsed *p, uint16_t *slot);

int interp_fastdec(struct interp_insn *e, uint64_t pc, const uint8_t *b, unsigned n)
{
	struct parsed p;

	if (parse(b, n, &p) < 0)
		return -1;
	uint16_t *slot = key_of(&p);
	unsigned k = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
	if (!k)
		k = build(&p, slot);
	if (k == KEY_NONE)
		return -1;
	const struct form *f = (const struct form *)&g_pool[k - 1];
	unsigned rx = (p.rex >> 2) & 1, xx = (p.rex >> 1) & 1, bx = p.rex & 1;

	memcpy(e, &f->in, HEAD + f->in.nops * sizeof(struct interp_operand));
	memset(&e->op[f->in.nops], 0, (INTERP_MAX_OPS - f->in.nops) * sizeof(struct interp_operand));
	e->pc = pc;
	e->len = (uint8_t)p.len;
	memcpy(e->bytes, b, p.len);
	e->opcode = (uint8_t)p.op;
	e->attrib &= ~(uint64_t)(ZYDIS_ATTRIB_HAS_SIB | ZYDIS_ATTRIB_HAS_REX);
	if (p.has_sib)
		e->attrib |= ZYDIS_ATTRIB_HAS_SIB;
	if (p.rex)
		e->attrib |= ZYDIS_ATTRIB_HAS_REX;
	for (unsigned i = 0; i < e->nvis; i++) {
		struct interp_operand *o = &e->op[i];
		switch (f->src[i]) {
		case S_REG:
			interp_map_reg(o, gpr(o, p.reg | rx << 3, p.rex));
			break;
		case S_OPREG:
			interp_map_reg(o, gpr(o, (p.op & 7) | bx << 3, p.rex));
			break;
		case S_RM:
			if (p.mod3) {
				interp_map_reg(o, gpr(o, p.rm | bx << 3, p.rex));
				break;
			}
			{
				const uint8_t *m = b + p.modrm_at;
				unsigned mod = m[0] >> 6;
				const uint8_t *disp = b + p.imm_at - p.disp_sz;
				o->base = o->index = INTERP_NOREG;
				o->scale = 0;
				if (p.rm == 4) {
					unsigned ss = m[1] >> 6, ix = ((m[1] >> 3) & 7) | xx << 3,
						 bs = m[1] & 7;
					if (ix != 4) {
						o->index = (uint8_t)ix;
						o->scale = (uint8_t)(1u << ss);
					}
					if (!(mod == 0 && bs == 5))
						o->base = (uint8_t)(bs | bx << 3);
				} else if (mod == 0 && p.rm == 5) {
					o->base = INTERP_RIPREL;
					e->attrib |= ZYDIS_ATTRIB_IS_RELATIVE;
				} else {
					o->base = (uint8_t)(p.rm | bx << 3);
				}
				o->val = p.disp_sz ? sext(le(disp, p.disp_sz), p.disp_sz) : 0;
			}
			break;
		case S_IMM: {
			uint64_t raw = le(b + p.imm_at, p.immsz);
			o->val = o->imm_signed ? sext(raw, p.immsz) : (int64_t)raw;
			break;
		}
		case S_REL:
			o->val = (int64_t)(pc + p.len + (uint64_t)sext(le(b + p.imm_at, p.immsz), p.immsz));
			break;
		}
	}
	return 0;
}

/* One canonical instance of a form: registers rcx (reg or opcode) and rdx
 * (rm), memory [rbx+8], immediates 0x11 bytes, branch offsets 0x10. */
static unsigned canonical(uint8_t *b, unsigned map, unsigned op, unsigned w, unsigned mod3,
			  unsigned reg, uint16_t f)
{
	unsigned i = 0;
	if (w)
		b[i++] = 0x48;
	if (map)
		b[i++] = 0x0f;
	b[i++] = (uint8_t)((f & F_PLUSR) ? op | 1 : op);
	if (f & F_MODRM) {
		unsigned r = (f & (F_GROUP | F_REG0)) ? reg : 1;
		if (mod3) {
			b[i++] = (uint8_t)(0xc0 | r << 3 | 2);
		} else {
			b[i++] = (uint8_t)(0x40 | r << 3 | 3);
			b[i++] = 0x08;
		}
	}
	unsigned immsz = imm_size(f, op, w, reg);
	for (unsigned k = 0; k < immsz; k++)
		b[i++] = (f & (F_REL8 | F_REL32)) ? (k ? 0 : 0x10) : 0x11;
	return i;
}

/* Which part of the bytes each visible operand comes from, read off
 * Zydis's operand encodings; -1 if the form has one we do not patch. */
static int sources(struct form *fm, const ZydisDecodedInstruction *d, const ZydisDecodedOperand *ops)
{
	for (unsigned i = 0; i < d->operand_count_visible && i < INTERP_MAX_OPS; i++) {
		const ZydisDecodedOperand *z = &ops[i];
		switch (z->encoding) {
		case ZYDIS_OPERAND_ENCODING_NONE:
			fm->src[i] = S_NONE;                  /* implicit: al/eax, 1, cl */
			break;
		case ZYDIS_OPERAND_ENCODING_MODRM_REG:
			if (z->type != ZYDIS_OPERAND_TYPE_REGISTER)
				return -1;
			fm->src[i] = S_REG;
			break;
		case ZYDIS_OPERAND_ENCODING_MODRM_RM:
			fm->src[i] = S_RM;
			break;
		case ZYDIS_OPERAND_ENCODING_OPCODE:
			fm->src[i] = S_OPREG;
			break;
		default:
			if (z->type != ZYDIS_OPERAND_TYPE_IMMEDIATE)
				return -1;
			fm->src[i] = z->imm.is_relative ? S_REL : S_IMM;
			break;
		}
		if (fm->src[i] != S_NONE && fm->src[i] != S_IMM && fm->src[i] != S_REL &&
		    z->type == ZYDIS_OPERAND_TYPE_REGISTER &&
		    fm->in.op[i].rkind != INTERP_RK_GPR && fm->in.op[i].rkind != INTERP_RK_GPR8H)
			return -1;
	}
	return 0;
}

/* The template of p's form, built from a canonical instance; its key
 * (or KEY_NONE). */
static unsigned build(const struct parsed *p, uint16_t *slot)
{
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	struct parsed q;
	struct form fm;
	uint8_t b[16] = { 0 };
	unsigned op = (p->f & F_PLUSR) ? (p->op & 0xf8) : p->op;
	unsigned len = canonical(b, p->map, op, p->w, p->mod3, (p->f & F_GROUP) ? p->reg : 0, p->f);
	uint16_t want = 0, k = KEY_NONE;

	memset(&fm, 0, sizeof fm);
	/* Zydis must agree with parse() on the length, and the form must be
	 * one interp_decode_zydis keeps. */
	if (interp_decode_zydis(&fm.in, 0x100000, b, len, &d, ops) == 0 && d.length == len &&
	    parse(b, len, &q) == 0 && q.len == len && key_of(&q) == slot &&
	    d.encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY && sources(&fm, &d, ops) == 0) {
		/* The instance's bytes are copied in; none of these. */
		memset(fm.in.bytes, 0, sizeof fm.in.bytes);
		size_t sz = FORM_BYTES(fm.in.nops);
		size_t at = __atomic_fetch_add(&g_used, sz, __ATOMIC_RELAXED);
		if (at + sz <= sizeof g_pool) {
			memcpy((uint8_t *)g_pool + at, &fm, sz);
			k = (uint16_t)(at / 8 + 1);
		}
	}
	if (__atomic_compare_exchange_n(slot, &want, k, 0, __ATOMIC_RELEASE, __ATOMIC_ACQUIRE)) {
		if (k != KEY_NONE)
			__atomic_fetch_add(&g_nforms, 1, __ATOMIC_RELAXED);
		return k;
	}
	return want;     /* another thread built it first */
}

int interp_fastdec_init(void)
{
	list_forms();
	return 0;
}

unsigned interp_fastdec_forms(void)
{
	return g_nforms;
}

size_t interp_fastdec_bytes(void)
{
	size_t u = __atomic_load_n(&g_used, __ATOMIC_RELAXED);
	return u < sizeof g_pool ? u : sizeof g_pool;
}
