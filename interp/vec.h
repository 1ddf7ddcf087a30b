/* interp/vec.h — shared machinery of the vector families (vec_*.c,
 * opmask.c, crc32_movnti.c); not for other users.
 *
 * One model serves legacy SSE, VEX and EVEX forms of an operation: a
 * handler reads its sources as whole 64-byte vectors (struct interp_vx_ops says
 * which operands they are), computes the result over the vector length,
 * and interp_vx_put writes it with the encoding's rules: legacy SSE writes leave
 * bits above the operand alone, VEX/EVEX writes zero up to bit 511, EVEX
 * write-masks merge or zero per element, and masked memory operands touch
 * (load, probe, store) only the elements the mask selects where the
 * hardware does so (moves, stores, element-wise operations: measured on
 * this CPU by tests/unit/interp_vec_ops.c), so a masked-off element in an
 * unmapped page does not fault there — and does elsewhere, as on the
 * hardware.
 *
 * Everything here is AS-safe: no allocation, program memory only through
 * interp_load/interp_store.
 */
#ifndef VPROF_INTERP_VEC_H
#define VPROF_INTERP_VEC_H

#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

#define VX_LEGACY(in) ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY)
#define VX_VEX(in)    ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_VEX)
#define VX_EVEX(in)   ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX)

/* Operand layout of one vector instruction. */
struct interp_vx_ops {
	int dst;             /* op index of the destination (0) */
	int src[3];          /* op indices of the explicit sources after the
			      * destination (EVEX mask operand skipped),
			      * -1 absent; legacy 2-operand forms do not list
			      * the destination here */
	int nsrc;
	int imm;             /* op index of the immediate, -1 none */
	unsigned vl;         /* vector length in bytes: 16 for legacy */
	unsigned esz;        /* element size for masking (bytes) */
	uint64_t kmask;      /* element write mask; all ones if unmasked */
	int masked;          /* EVEX masking with k1..k7 */
	int suppress;        /* masked memory source read element by element
			      * (fault suppression); set by handlers whose
			      * memory element i feeds only result element i —
			      * others (permutes, shuffles, lane moves) read
			      * the whole operand, as the hardware does */
	int zeroing;         /* EVEX {z} */
};

/* Resolve the layout; esz is the element size the write mask counts in.
 * Returns INTERP_OK, or INTERP_STOP_BADSTATE when a register component the
 * instruction uses is not known in this state, or UNSUPPORTED for forms
 * the vector families do not model (embedded rounding and SAE, but in
 * the floating-point rows that run under fp_run: x->static_rc_ok). */
int interp_vx_layout(struct interp_exec *x, struct interp_vx_ops *o, unsigned esz);

/* Read source operand i into v (zero-filled to 64 bytes): vector register
 * (all 64 bytes), memory (op size; EVEX embedded broadcast replicated over
 * o->vl; with o->masked and o->suppress only the selected elements are
 * read), GPR/k value or immediate into q[0]. */
int interp_vx_get(struct interp_exec *x, const struct interp_vx_ops *o, int i, interp_vec *v);

/* Write result r to operand i: a vector register (legacy: op size bytes;
 * VEX/EVEX: op size bytes, the rest up to 64 zeroed; EVEX masks merge or
 * zero per element), memory (op size bytes; masked: only the selected
 * elements, one buffered store per run of them, so more than
 * INTERP_MAX_STORES runs stop as unsupported), or a GPR/k register. */
int interp_vx_put(struct interp_exec *x, const struct interp_vx_ops *o, int i, const interp_vec *r);

/* Mark register n changed in its first `bytes` bytes and, for VEX/EVEX
 * writes that zeroed the rest, the upper components that were live. */
void interp_vx_touch(struct interp_exec *x, int n, unsigned bytes, int zero_upper);

/* Is memory operand i aligned as the aligned-move forms require? */
static inline int interp_vx_aligned(struct interp_exec *x, int i, unsigned align)
{
	return (interp_ea(x, i) & (align - 1)) == 0;
}

static inline uint64_t interp_vx_lanes_mask(unsigned n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* Set MXCSR exception flags raised by an operation (marks SSE state). */
static inline void interp_vx_mxcsr_or(struct interp_exec *x, uint32_t flags)
{
	if (flags & ~x->st->mxcsr & 0x3f) {
		x->st->mxcsr |= flags & 0x3f;
		x->st->xstate_bv |= INTERP_XS_SSE;
		x->st->xstate_dirty |= INTERP_XS_SSE;
	}
}

/* Record a written operand's low bytes for the observer. */
void interp_vx_note_dst(struct interp_exec *x, int i, const void *p);

/* The two vector sources of a binary form: legacy `op dst, src` reads dst
 * as its first source; VEX/EVEX `op dst, src1, src2` does not. */
static inline void interp_vx_sources(const struct interp_exec *x, const struct interp_vx_ops *o, int *ia, int *ib)
{
	if (VX_LEGACY(x->in)) {
		*ia = o->dst;
		*ib = o->src[0];
	} else {
		*ia = o->src[0];
		*ib = o->src[1];
	}
}

static inline int interp_vx_imm(struct interp_exec *x, const struct interp_vx_ops *o)
{
	return o->imm >= 0 ? (int)(x->in->op[o->imm].val & 0xff) : -1;
}

/* ------------------------------------------ the integer operation table
 * (VDESC_LIST in vec_int.c; handlers in vec_int.c and vec_avx512.c) */

enum interp_vop {
	V_NONE, V_MOV, V_AND, V_ANDN, V_OR, V_XOR, V_ADD, V_SUB, V_ADDUS, V_SUBUS,
	V_ADDS, V_SUBS, V_CMPEQ, V_CMPGT, V_MINU, V_MAXU, V_MINS, V_MAXS, V_AVGU,
	V_PSHUFB, V_UNPCKL, V_UNPCKH, V_PALIGNR, V_PSHUFD, V_SRLDQ, V_SLLDQ,
	V_SRL, V_SLL, V_SRA, V_TERNLOG, V_MULL, V_PACKUS, V_PACKSS, V_ABS,
	V_SHUFPS, V_SHUFPD, V_PSHUFLW, V_PSHUFHW, V_SADBW, V_MADDUBSW, V_MADDWD,
	V_DUPQ, V_DUPHI, V_DUPLO, V_MULUDQ, V_MULDQ, V_MULHU, V_MULHS, V_MULHRS,
	V_PERMQ, V_PERMD, V_PERM2, V_BLENDI, V_SIGN, V_HADD, V_HSUB,
	V_ROL, V_ROR, V_SLLV, V_SRLV, V_SRAV, V_PERMILPS, V_PERMILPD, V_VALIGN, V_SHUF128,
	V_POPCNT, V_SHLD, V_SHRD, V_MSHIFT, V_MPSADBW, V_PHMINPOS, V_HADDS, V_HSUBS,
};

/* Handler kinds. */
enum { K_BIN = 1, K_UN, K_MOV, K_CMPK, K_TESTK, K_MOVMSK, K_MOVDQ, K_BCST, K_PTEST,
       K_TERN, K_MOVHL, K_INSERT, K_EXTRACT, K_PMOVX, K_PCMPSTR, K_BLENDV, K_MADD52, K_INSPS, K_BLENDM,
       K_PERM2T, K_TOMASK, K_FROMMASK, K_COMPRESS, K_PMOVDOWN, K_ACC3, K_GATHER, K_MASKMOV, K_SCATTER,
       K_GFNI, K_CONFLICT, K_FIXUP };

/* Flags. */
#define F_ALIGN   1   /* aligned move: memory operand must be vl-aligned */
#define F_UNALIGN 2   /* legacy form with a 16-byte memory operand that does
		       * not need alignment */
#define F_NOT     4   /* K_TESTK: vptestnm (result bit when AND is zero) */
#define F_UNS     8   /* compare: unsigned predicate (vpcmpu*) */
#define F_IMMPRED 16  /* compare: predicate from imm8 (vpcmp/vpcmpu) */
#define F_GT      32  /* compare: greater-than (vpcmpgt) */
#define F_SGN     64  /* signed variant (pmovsx) */

/* struct interp_vdesc (kind, op, esz, flags) is in internal.h: a row's spec. */

/* ---- element helpers: little-endian element e of size s */
static inline uint64_t eget(const interp_vec *v, unsigned s, unsigned e)
{
	switch (s) {
	case 1: return v->b[e];
	case 2: return v->w[e];
	case 4: return v->d[e];
	default: return v->q[e];
	}
}

static inline void eput(interp_vec *v, unsigned s, unsigned e, uint64_t x)
{
	switch (s) {
	case 1: v->b[e] = (uint8_t)x; break;
	case 2: v->w[e] = (uint16_t)x; break;
	case 4: v->d[e] = (uint32_t)x; break;
	default: v->q[e] = x; break;
	}
}

static inline int64_t sx(uint64_t v, unsigned s)
{
	return (int64_t)interp_sext(v, s);
}

static inline uint64_t sat_s(int64_t v, unsigned s)
{
	int64_t hi = (int64_t)(interp_mask(s) >> 1), lo = -hi - 1;
	return (uint64_t)(v > hi ? hi : v < lo ? lo : v);
}

static inline uint64_t sat_u(int64_t v, unsigned s)
{
	int64_t hi = (int64_t)interp_mask(s);
	return (uint64_t)(v > hi ? hi : v < 0 ? 0 : v);
}

/* Handlers (vec_int.c, vec_avx512.c); each reads its spec from
 * interp_row(x->in)->spec.v. */
int interp_vx_h_bin(struct interp_exec *x);
/* interp_vx_h_bin under another spec (VEX vpcmpeq/gt, legacy forms). */
int interp_vx_bin(struct interp_exec *x, const struct interp_vdesc *dd);
int interp_vx_h_cmpk(struct interp_exec *x);
int interp_vx_h_tern(struct interp_exec *x);
int interp_vx_h_madd52(struct interp_exec *x);
int interp_vx_h_blendm(struct interp_exec *x);
int interp_vx_h_perm2t(struct interp_exec *x);
int interp_vx_h_tomask(struct interp_exec *x);
int interp_vx_h_frommask(struct interp_exec *x);
int interp_vx_h_compress(struct interp_exec *x);
int interp_vx_h_pmovdown(struct interp_exec *x);
int interp_vx_h_acc3(struct interp_exec *x);
int interp_vx_h_gather(struct interp_exec *x);
int interp_vx_h_scatter(struct interp_exec *x);
/* vec_gfni.c */
int interp_vx_h_gfni(struct interp_exec *x);
int interp_vx_h_conflict(struct interp_exec *x);
/* vec_fixup.c */
int interp_vx_h_fixup(struct interp_exec *x);

#endif
