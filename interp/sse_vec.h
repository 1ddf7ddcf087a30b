/* interp/sse_vec.h — shared machinery of the vector families (sse*.c,
 * avx*.c, evex*.c); not for other users.
 *
 * One model serves legacy SSE, VEX and EVEX forms of an operation: a
 * handler reads its sources as whole 64-byte vectors (struct vx_ops says
 * which operands they are), computes the result over the vector length,
 * and vx_put writes it with the encoding's rules: legacy SSE writes leave
 * bits above the operand alone, VEX/EVEX writes zero up to bit 511, EVEX
 * write-masks merge or zero per element, and masked memory operands touch
 * (load, probe, store) only the elements the mask selects, so a masked-off
 * element in an unmapped page does not fault — as on the hardware.
 *
 * Everything here is AS-safe: no allocation, program memory only through
 * interp_load/interp_store.
 */
#ifndef VPROF_INTERP_SSE_VEC_H
#define VPROF_INTERP_SSE_VEC_H

#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

#define VX_LEGACY(in) ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY)
#define VX_VEX(in)    ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_VEX)
#define VX_EVEX(in)   ((in)->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX)

/* Operand layout of one vector instruction. */
struct vx_ops {
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
 * the vector families do not model (embedded rounding, SAE). */
int vx_layout(struct interp_exec *x, struct vx_ops *o, unsigned esz);

/* Read source operand i into v (zero-filled to 64 bytes): vector register
 * (all 64 bytes), memory (op size; EVEX embedded broadcast replicated over
 * o->vl; EVEX-masked loads read only the selected elements), GPR/k value
 * or immediate into q[0]. */
int vx_get(struct interp_exec *x, const struct vx_ops *o, int i, interp_vec *v);

/* Write result r to operand i: a vector register (legacy: op size bytes;
 * VEX/EVEX: o->vl bytes, rest zeroed; EVEX masks merge or zero per
 * element), or memory (o->vl or op size bytes; only selected elements). */
int vx_put(struct interp_exec *x, const struct vx_ops *o, int i, const interp_vec *r);

/* Mark register n changed in its first `bytes` bytes and, for VEX/EVEX
 * writes that zeroed the rest, the upper components that were live. */
void vx_touch(struct interp_exec *x, int n, unsigned bytes, int zero_upper);

/* Is memory operand i aligned as the aligned-move forms require? */
static inline int vx_aligned(struct interp_exec *x, int i, unsigned align)
{
	return (interp_ea(x, i) & (align - 1)) == 0;
}

static inline uint64_t vx_lanes_mask(unsigned n)
{
	return n >= 64 ? ~0ull : (1ull << n) - 1;
}

/* Set MXCSR exception flags raised by an operation (marks SSE state). */
static inline void vx_mxcsr_or(struct interp_exec *x, uint32_t flags)
{
	if (flags & ~x->st->mxcsr & 0x3f) {
		x->st->mxcsr |= flags & 0x3f;
		x->st->xstate_bv |= INTERP_XS_SSE;
		x->st->xstate_dirty |= INTERP_XS_SSE;
	}
}

#endif
