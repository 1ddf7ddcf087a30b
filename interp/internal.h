/* interp/internal.h — the contract of the instruction handlers and the
 * glue between the files of interp/ (not for users: interp.h is the
 * public API). Everything here is AS-safe unless marked otherwise. */
#ifndef VPROF_INTERP_INTERNAL_H
#define VPROF_INTERP_INTERNAL_H

#include "interp/interp.h"
#include "interp/shadow.h"

/* ------------------------------------------------ the handler contract
 *
 * The one handler signature (interp_handler, interp.h) returns INTERP_OK
 * or a stop reason; on a stop reason, the handler must not have changed
 * the state or memory (stores go through interp_write, which buffers them
 * until the handler returns OK). */

#define INTERP_MAX_STORES 8
#define INTERP_STORE_BYTES 256

/* Stores an instruction makes are buffered here, probed, then written. */
struct interp_storebuf {
	uint32_t n, used;
	struct { uint64_t addr; uint32_t size, off; } s[INTERP_MAX_STORES];
	uint8_t data[INTERP_STORE_BYTES];
};

/* ------------------------------------------------ exec context */

/* What a handler sees. Handlers read operands with interp_read*, write
 * with interp_write*, set x->next_rip for control transfers (it already
 * holds pc+len), and update flags with the interp_flags_* helpers. */
struct interp_exec {
	struct interp_state *st;
	struct interp_thread *th;
	const struct interp_insn *in;
	uint64_t next_rip;
	uint64_t rflags;           /* working copy, committed on OK */
	const struct interp_observer *obs;
	struct interp_storebuf sb;
	struct interp_record rec;
	/* Set while a handler that runs its operation under fp_run lays out
	 * its operands: EVEX static rounding and {sae} are modelled there. */
	int static_rc_ok;
	/* Ordering rule for handlers, so that a stop leaves nothing changed:
	 * 1. read every operand (reads may fail: return their status);
	 * 2. write memory operands (interp_write/interp_store probe the
	 *    pages at once and may fail; the bytes are buffered and written
	 *    only after the handler returned OK);
	 * 3. write registers and x->rflags / x->next_rip (cannot fail).
	 * Register writes go straight into the state, so after step 3 the
	 * handler must return INTERP_OK. */
};

/* ------------------------------------------------- operand helpers
 * All AS-safe. Operand numbers index in->op[]. Reads return INTERP_OK or
 * INTERP_STOP_WOULD_FAULT (memory) / INTERP_STOP_UNSUPPORTED (odd
 * registers). Values are little-endian, `size` bytes of in->op[i]. */

/* Effective address of a MEM/AGEN operand (segment base included). */
uint64_t interp_ea(struct interp_exec *x, int i);
/* Read operand i (size op[i].size, up to 64 bytes) into buf. */
int interp_read(struct interp_exec *x, int i, void *buf);
/* Read operand i zero-extended into *v (size <= 8). Immediates come
 * sign-extended to the instruction's operand size then zero-extended. */
int interp_read_u64(struct interp_exec *x, int i, uint64_t *v);
/* Write operand i from buf (op[i].size bytes). GPR 32-bit writes zero the
 * upper half; 8/16-bit writes merge. Vector register writes by VEX/EVEX
 * encoded instructions zero bytes above the operand size up to 64; legacy
 * SSE writes leave them. Memory writes are buffered until the handler
 * returns OK, then probed and committed (never partly written). */
int interp_write(struct interp_exec *x, int i, const void *buf);
int interp_write_u64(struct interp_exec *x, int i, uint64_t v);
/* Memory at an explicit address (string ops, push/pop, vector families
 * with computed addresses). */
int interp_load(struct interp_exec *x, uint64_t addr, void *buf, unsigned size);
int interp_store(struct interp_exec *x, uint64_t addr, const void *buf, unsigned size);
/* GPR access by number with a size in bytes (1/2/4/8; 32-bit zero-extends). */
uint64_t interp_gpr_get(struct interp_exec *x, int n, unsigned size);
void interp_gpr_set(struct interp_exec *x, int n, unsigned size, uint64_t v);
/* Mark vector register n written (sets xstate_bv bits for the bytes up
 * to `bytes`) before changing st->zmm[n] directly. */
void interp_vreg_touch(struct interp_exec *x, int n, unsigned bytes);

/* Mask of (1 << size*8) - 1 for size 1..8. */
static inline uint64_t interp_mask(unsigned size)
{
	return size >= 8 ? ~0ull : (1ull << (size * 8)) - 1;
}
static inline uint64_t interp_sext(uint64_t v, unsigned size)
{
	unsigned sh = 64 - size * 8;
	return size >= 8 ? v : (uint64_t)((int64_t)(v << sh) >> sh);
}

/* --------------------------------------------------- flag helpers
 * One helper per operation kind computes all six arithmetic flags of a
 * result of `size` bytes into x->rflags (AS-safe). */
enum interp_flagop { INTERP_FL_ADD, INTERP_FL_SUB, INTERP_FL_LOGIC };
void interp_flags(struct interp_exec *x, int op, uint64_t a, uint64_t b,
		  uint64_t carry_in, uint64_t res, unsigned size);
/* Evaluate condition code cc (the low nibble of Jcc/SETcc/CMOVcc). */
int interp_cond(uint64_t rflags, unsigned cc);

/* Not AS-safe (run by interp_init). */
int interp_decode_init(void);
/* Not AS-safe: the fast path's templates (fastdec.c), after the table. */
int interp_fastdec_init(void);
unsigned interp_fastdec_forms(void);      /* templates built */
size_t interp_fastdec_bytes(void);        /* ... and the bytes they take */

/* Decoding b[0..n) at pc into e (all but epoch). interp_decode_zydis:
 * with Zydis (d and ops get its output), -1 if it cannot decode.
 * interp_fastdec: the common integer forms from templates, byte-identical
 * to what interp_decode_zydis gives, -1 for anything else. Both AS-safe. */
int interp_decode_zydis(struct interp_insn *e, uint64_t pc, const uint8_t *b, unsigned n,
			ZydisDecodedInstruction *d, ZydisDecodedOperand *ops);
int interp_fastdec(struct interp_insn *e, uint64_t pc, const uint8_t *b, unsigned n);
/* Fill a register operand's reg, rkind and idx from a ZydisRegister. */
void interp_map_reg(struct interp_operand *o, ZydisRegister r);
int interp_xsave_init(void);
int interp_optab_init(void);
/* Not AS-safe. Choose the vendor model: VPROF_INTERP_VENDOR, else CPUID's vendor
 * checked by native probes (vendor.c). */
int interp_vendor_init(void);

/* The model each rule family follows (enum interp_vendor, indexed by
 * enum interp_vrule); written by interp_init and interp_vendor_force
 * only, read by the handlers. */
extern uint8_t interp_vmodel[INTERP_VR__COUNT];

/* ------------------------------------------------ the instruction table
 *
 * One row per mnemonic (two for MOVSD and CMPSD, which name a string op in
 * the one-byte map and an SSE2 op elsewhere): the handler and the spec it
 * runs from. Each family file lists its rows in an X-macro list and
 * exports them as interp_ops_<family>[] (ending with a row whose fn is
 * NULL); optab.c gathers and indexes them by mnemonic once, at
 * interp_init, and the decoder stores the row's index with the decoded
 * instruction (in->row), so a handler reads its spec with one load
 * (interp_row(x->in)): no second table, no switch. */

/* Spec of a vector integer/move row (vec_int.c's VDESC_LIST; kinds,
 * operations and flags in vec.h). */
struct interp_vdesc {
	uint8_t kind, op, esz, flags;
};

/* d = op(a, b, c); mx[0] MXCSR to run under, mx[1] MXCSR after, mx[2]
 * scratch for the host's. (vec_fp.c) */
typedef void interp_fp_fn(uint8_t *d, const uint8_t *a, const uint8_t *b,
			  const uint8_t *c, uint32_t *mx);

/* Spec of a floating-point row (vec_fp.c's FDESC_LIST and FIMM_LIST). */
struct interp_fdesc {
	uint8_t kind, esz;
	uint16_t flags;
	interp_fp_fn *fn, *fn64;       /* fn64: the 64-bit integer form (cvt*) */
	interp_fp_fn *const *byimm;    /* FK_IMM: one function per imm8 value */
};

/* Spec of a general-purpose or opmask row: what its handler takes from
 * the row instead of testing the mnemonic. */
struct interp_gdesc {
	uint8_t op;                    /* family-defined operation */
	uint8_t width;                 /* operand width in bytes the mnemonic
					* implies (opmask b/w/d/q), 0: from
					* the operands */
};

enum interp_form {
	INTERP_FORM_ANY,               /* any encoding and map */
	INTERP_FORM_MAP0,              /* legacy one-byte map only (string
					* MOVSD/CMPSD): preferred there */
};

/* interp_op.opf */
#define INTERP_OPF_VEC    1u   /* may touch x87/vector/opmask/MXCSR state:
				* the run loop loads a lazy state first */
#define INTERP_OPF_NOCTL  2u   /* an EVEX control mask (element selector)
				* is not modelled: such a form is
				* unsupported */

/* Arithmetic flags as the rows name them (bits of RFLAGS). */
#define IFL_C INTERP_CF
#define IFL_P INTERP_PF
#define IFL_A INTERP_AF
#define IFL_Z INTERP_ZF
#define IFL_S INTERP_SF
#define IFL_O INTERP_OF
#define IFL_D INTERP_DF
#define IFL_SZP  (IFL_S | IFL_Z | IFL_P)
#define IFL_ALL  INTERP_ARITH_FLAGS
#define IFL_NONE 0

#define INTERP_VR_NONE (-1)

struct interp_op {
	interp_handler *fn;
	uint16_t mnemonic;             /* ZydisMnemonic */
	uint8_t form;                  /* enum interp_form */
	uint8_t opf;                   /* INTERP_OPF_* */
	uint16_t fl_read;              /* arithmetic flags (and DF) read */
	uint16_t fl_written;           /* written with a defined value */
	uint16_t fl_undef;             /* left undefined by the manuals (some
					* forms or counts): their value
					* follows vendor rule vrule */
	int8_t vrule;                  /* enum interp_vrule, INTERP_VR_NONE */
	union {
		struct interp_gdesc g;
		struct interp_vdesc v;
		struct interp_fdesc f;
	} spec;
};

/* A row in full: mnemonic, handler, form, INTERP_OPF_*, flags read,
 * written, undefined, vendor rule, spec (a braced union initializer). */
#define INTERP_ROW(m, h, form_, opf_, rd, wr, ud, vr, ...) \
	{ .fn = h, .mnemonic = ZYDIS_MNEMONIC_##m, .form = form_, .opf = opf_, \
	  .fl_read = rd, .fl_written = wr, .fl_undef = ud, .vrule = vr, .spec = __VA_ARGS__ },
/* A general-purpose row (the X-macro rows of the GP family files):
 * mnemonic, handler, flags read, written, undefined, vendor rule. */
#define INTERP_GP_ROW(m, h, rd, wr, ud, vr) \
	INTERP_ROW(m, h, INTERP_FORM_ANY, 0, rd, wr, ud, vr, { .g = { 0, 0 } })
/* The same for a general-register instruction that may touch vector or
 * x87 state (crc32_movnti.c, x87.c). */
#define INTERP_GPV_ROW(m, h, rd, wr, ud, vr) \
	INTERP_ROW(m, h, INTERP_FORM_ANY, INTERP_OPF_VEC, rd, wr, ud, vr, { .g = { 0, 0 } })
#define INTERP_OPS_END { .fn = NULL }

/* The families' rows (one array per family file). */
extern const struct interp_op interp_ops_mov[], interp_ops_alu[], interp_ops_ctrl[],
	interp_ops_shift[], interp_ops_muldiv[], interp_ops_bit[], interp_ops_string[],
	interp_ops_misc[], interp_ops_crc32_movnti[], interp_ops_x87[], interp_ops_opmask[],
	interp_ops_vec_int[], interp_ops_vec_fp[];

/* The table: the families' rows copied once by interp_init into one
 * array, so that a decoded instruction keeps its row as a 16-bit index
 * (struct interp_insn stays 320 bytes) and a handler reaches its spec
 * with one indexed load. Row 0 is no row. */
#define INTERP_OPTAB_MAX 1536
extern struct interp_op interp_optab[INTERP_OPTAB_MAX];
static inline const struct interp_op *interp_row(const struct interp_insn *in)
{
	return &interp_optab[in->row];
}
/* The vendor model (enum interp_vendor) in effect for the instruction's
 * row: the row names its rule (vrule), so the handler does not. Only for
 * rows that name one. */
static inline int interp_vmodel_row(const struct interp_exec *x);
/* The row index for a decoded instruction, or 0 (unsupported). */
unsigned interp_optab_lookup(const struct interp_insn *in);
/* For tests: rows in the table, and rows that claimed a mnemonic (and
 * form) another row already had or did not fit (0 in a sound table). */
int interp_optab_rows(void);
int interp_optab_dups(void);
/* For tests: every row, in family order; NULL after the last. */
const struct interp_op *interp_optab_row(int i);
/* For tests: the row the decoder gives the instruction in b[0..n), NULL
 * if none (decode.c). Not AS-safe. */
const struct interp_op *interp_optab_decode(const uint8_t *b, unsigned n);
/* Fill st->fs_base/gs_base from the running thread. */
void interp_load_segbases(struct interp_state *st);

static inline uint64_t interp_rdtscp(void)
{
	unsigned lo, hi, aux;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	return ((uint64_t)hi << 32) | lo;
}

/* Does this instruction carry a LOCK prefix? */
static inline int interp_locked(const struct interp_insn *in)
{
	return (in->attrib & ZYDIS_ATTRIB_HAS_LOCK) != 0;
}

/* The six arithmetic flags of a result (the body of interp_flags): f is
 * the RFLAGS to update. Always inlined, so that a constant op folds. */
static inline __attribute__((always_inline)) uint64_t
interp_flags_calc(uint64_t f, int op, uint64_t a, uint64_t b, uint64_t cin,
		  uint64_t res, unsigned size)
{
	uint64_t m = interp_mask(size), sign = 1ull << (size * 8 - 1);

	f &= ~(uint64_t)INTERP_ARITH_FLAGS;
	a &= m;
	b &= m;
	res &= m;
	switch (op) {
	case INTERP_FL_ADD:
		if (res < a || (cin && res == a))
			f |= INTERP_CF;
		if ((a ^ res) & (b ^ res) & sign)
			f |= INTERP_OF;
		f |= (a ^ b ^ res) & INTERP_AF;
		break;
	case INTERP_FL_SUB:
		if (a < b || (cin && a == b))
			f |= INTERP_CF;
		if ((a ^ b) & (a ^ res) & sign)
			f |= INTERP_OF;
		f |= (a ^ b ^ res) & INTERP_AF;
		break;
	default:
		break;
	}
	if (res == 0)
		f |= INTERP_ZF;
	if (res & sign)
		f |= INTERP_SF;
	if (!__builtin_parityll(res & 0xff))
		f |= INTERP_PF;
	return f;
}

/* Write the stores buffered so far (string ops between iterations). */
void interp_commit_stores(struct interp_exec *x);

/* Effective address of memory operand o with index_term (index x scale)
 * in place of its index: a VSIB operand's element i (vec_avx512.c's
 * gathers and scatters) passes its index lane times the scale. */
static inline uint64_t interp_ea_index(struct interp_exec *x, const struct interp_operand *o,
				       uint64_t index_term)
{
	uint64_t ea = (uint64_t)o->val + index_term;

	if (o->base == INTERP_RIPREL)
		ea += x->in->pc + x->in->len;
	else if (o->base != INTERP_NOREG)
		ea += x->st->gpr[o->base];
	if (x->in->addrsize == 4)
		ea = (uint32_t)ea;
	if (o->seg) {
		if (!x->st->seg_valid)
			interp_load_segbases(x->st);
		ea += o->seg == 1 ? x->st->fs_base : x->st->gs_base;
	}
	return ea;
}

/* Effective address of operand o (the body of interp_ea). */
static inline uint64_t interp_ea_op(struct interp_exec *x, const struct interp_operand *o)
{
	return interp_ea_index(x, o, o->index != INTERP_NOREG && !o->vsib
				     ? x->st->gpr[o->index] * o->scale : 0);
}

/* mem.c's single-mov routines (between the probe labels, so a fault in
 * one returns -EFAULT instead of crashing). A load returns the value in
 * v and 0 or -EFAULT in err (rax:rdx). A store is one mov, which writes
 * nothing when it faults, so it needs no write probe. They bypass the
 * co-simulation shadow: callers check interp_shadow_cur first. */
struct interp_ld { uint64_t v; int64_t err; };
struct interp_ld interp_mem_ld1_raw(uint64_t addr);
struct interp_ld interp_mem_ld2_raw(uint64_t addr);
struct interp_ld interp_mem_ld4_raw(uint64_t addr);
struct interp_ld interp_mem_ld8_raw(uint64_t addr);
int interp_mem_st1_raw(uint64_t addr, uint64_t v);
int interp_mem_st2_raw(uint64_t addr, uint64_t v);
int interp_mem_st4_raw(uint64_t addr, uint64_t v);
int interp_mem_st8_raw(uint64_t addr, uint64_t v);

void interp_note_access(struct interp_exec *x, uint64_t addr, unsigned size,
			int write, uint64_t lat);

/* interp_rd's memory case and interp_wr_last's (run.c): one call each,
 * so that the register cases stay inline in every handler. */
int interp_rd_mem(struct interp_exec *x, int i, uint64_t *v);
int interp_wr_mem_last(struct interp_exec *x, int i, uint64_t v);

/* Inline fast paths of interp_read_u64/interp_write_u64 for the common
 * GPR, immediate and 1/2/4/8-byte memory operands when no observer runs;
 * everything else goes to the general helpers. */
static inline __attribute__((always_inline)) int
interp_rd(struct interp_exec *x, int i, uint64_t *v)
{
	const struct interp_operand *o = &x->in->op[i];

	if (__builtin_expect(x->obs == NULL, 1)) {
		if (o->type == INTERP_OP_REG && o->rkind == INTERP_RK_GPR && o->size >= 4) {
			*v = o->size == 8 ? x->st->gpr[o->idx] : (uint32_t)x->st->gpr[o->idx];
			return INTERP_OK;
		}
		if (o->type == INTERP_OP_IMM) {
			*v = (uint64_t)o->val & interp_mask(o->imm_signed ? x->in->opsize : 8);
			return INTERP_OK;
		}
		if (o->type == INTERP_OP_MEM)
			return interp_rd_mem(x, i, v);
	}
	return interp_read_u64(x, i, v);
}

static inline int interp_wr(struct interp_exec *x, int i, uint64_t v)
{
	const struct interp_operand *o = &x->in->op[i];

	if (o->type == INTERP_OP_REG && o->rkind == INTERP_RK_GPR && o->size >= 4 && !x->obs) {
		x->st->gpr[o->idx] = o->size == 8 ? v : (uint32_t)v;
		return INTERP_OK;
	}
	return interp_write_u64(x, i, v);
}

/* The store of an instruction that makes exactly one store, called as
 * the handler's last step that can fail (only register, flag and RIP
 * updates may follow). Then nothing can be left half done, so a store of
 * 1/2/4/8 bytes within one page is written at once with one fault-safe
 * mov: no `lock or` write probe, no buffering. Otherwise, or if a store
 * is already buffered, or under co-simulation (the shadow must see every
 * store), it is an ordinary interp_store. */
static inline int interp_store_last(struct interp_exec *x, uint64_t addr, uint64_t v,
				    unsigned size)
{
	int rc;

	if (__builtin_expect(x->sb.n != 0 || interp_shadow_cur != NULL ||
			     (addr & 4095) + size > 4096, 0))
		return interp_store(x, addr, &v, size);
	switch (size) {
	case 8: rc = interp_mem_st8_raw(addr, v); break;
	case 4: rc = interp_mem_st4_raw(addr, v); break;
	case 2: rc = interp_mem_st2_raw(addr, v); break;
	case 1: rc = interp_mem_st1_raw(addr, v); break;
	default: return interp_store(x, addr, &v, size);
	}
	if (__builtin_expect(rc != 0, 0))
		return INTERP_STOP_WOULD_FAULT;
	if (x->obs)
		interp_note_access(x, addr, size, 1, 0);
	return INTERP_OK;
}

/* interp_load of a 1/2/4/8-byte value into *v (zero-extended): one
 * fault-safe mov when no observer runs and no shadow is installed. */
static inline int interp_load_u64(struct interp_exec *x, uint64_t addr, uint64_t *v,
				  unsigned size)
{
	struct interp_ld r;

	if (__builtin_expect(x->obs != NULL || interp_shadow_cur != NULL, 0))
		goto slow;
	switch (size) {
	case 8: r = interp_mem_ld8_raw(addr); break;
	case 4: r = interp_mem_ld4_raw(addr); break;
	case 2: r = interp_mem_ld2_raw(addr); break;
	case 1: r = interp_mem_ld1_raw(addr); break;
	default: goto slow;
	}
	if (__builtin_expect(r.err != 0, 0))
		return INTERP_STOP_WOULD_FAULT;
	*v = r.v;
	return INTERP_OK;
slow:
	*v = 0;
	return interp_load(x, addr, v, size);
}

/* The body of interp_cond, for Jcc/SETcc/CMOVcc. */
static inline int interp_cond_inl(uint64_t f, unsigned cc)
{
	int r;

	switch ((cc >> 1) & 7) {
	case 0: r = !!(f & INTERP_OF); break;
	case 1: r = !!(f & INTERP_CF); break;
	case 2: r = !!(f & INTERP_ZF); break;
	case 3: r = !!(f & (INTERP_CF | INTERP_ZF)); break;
	case 4: r = !!(f & INTERP_SF); break;
	case 5: r = !!(f & INTERP_PF); break;
	case 6: r = !!(f & INTERP_SF) != !!(f & INTERP_OF); break;
	default: r = (f & INTERP_ZF) || (!!(f & INTERP_SF) != !!(f & INTERP_OF)); break;
	}
	return r ^ (cc & 1);
}

/* interp_wr for a handler's one store, under interp_store_last's rule. */
static inline __attribute__((always_inline)) int
interp_wr_last(struct interp_exec *x, int i, uint64_t v)
{
	const struct interp_operand *o = &x->in->op[i];

	if (o->type == INTERP_OP_MEM && !x->obs)
		return interp_wr_mem_last(x, i, v);
	return interp_wr(x, i, v);
}

static inline struct interp_insn *interp_dcache_slot(struct interp_thread *th, uint64_t pc)
{
	return &th->dcache[(pc ^ (pc >> 11)) & ((INTERP_DCACHE_SIZE - 1) >> th->dshift)];
}
const struct interp_insn *interp_decode_slow(struct interp_thread *th, struct interp_insn *e,
					     uint64_t pc, int *stop);
/* The decode-cache hit path, inlined into the run loop. */
static inline const struct interp_insn *interp_decode_fast(struct interp_thread *th,
							   uint64_t pc, int *stop)
{
	struct interp_insn *e = interp_dcache_slot(th, pc);

	if (__builtin_expect(e->pc == pc && e->epoch == th->epoch && e->len, 1))
		return e;
	return interp_decode_slow(th, e, pc, stop);
}

static inline int interp_vmodel_row(const struct interp_exec *x)
{
	return interp_vmodel[(uint8_t)interp_row(x->in)->vrule];
}

/* Shorthand for handler files. */
#define ST (x->st)
#define IN (x->in)
#define OPS(i) (x->in->op[i].size)

#endif
