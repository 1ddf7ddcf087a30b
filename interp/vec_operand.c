/* interp/vec_operand.c — operand access for the vector families: which
 * operands an instruction's sources are (EVEX write-mask operand skipped),
 * reading them as 64-byte vectors (embedded broadcast, element-by-element
 * masked loads), and writing results with each encoding's rules (legacy
 * keeps the upper bits, VEX/EVEX zero them, EVEX merges or zeroes masked
 * elements, masked stores write only the selected elements), keeping
 * xstate_bv/xstate_dirty right. The contract is in vec.h.
 *
 * Concurrency: thread state and, through interp_load/interp_store, program
 * memory.
 */
#include "interp/vec.h"

static uint64_t need_of(const struct interp_operand *op)
{
	if (op->type != INTERP_OP_REG)
		return 0;
	if (op->rkind == INTERP_RK_K)
		return INTERP_XS_OPMASK;
	if (op->rkind != INTERP_RK_VEC)
		return 0;
	if (op->idx >= 16)
		return INTERP_XS_HI16;
	return INTERP_XS_SSE | (op->size > 16 ? INTERP_XS_YMM : 0) |
	       (op->size > 32 ? INTERP_XS_ZMM_H : 0);
}

int interp_vx_layout(struct interp_exec *x, struct interp_vx_ops *o, unsigned esz)
{
	const struct interp_insn *in = x->in;
	uint64_t need = INTERP_XS_SSE;
	int start = 1;

	o->dst = 0;
	o->src[0] = o->src[1] = o->src[2] = -1;
	o->nsrc = 0;
	o->imm = -1;
	o->vl = VX_LEGACY(in) || !in->avx.vl ? 16 : in->avx.vl;
	o->esz = esz ? esz : 1;
	o->masked = 0;
	o->suppress = 0;
	o->zeroing = 0;
	o->kmask = ~0ull;
	if (VX_EVEX(in)) {
		/* Static rounding and {sae}: only the floating-point rows that
		 * run under fp_run model them (vec_fp.c). */
		if ((in->avx.rounding || in->avx.sae) && !x->static_rc_ok)
			return INTERP_STOP_UNSUPPORTED;
		if (in->nvis > 1 && in->op[1].type == INTERP_OP_REG &&
		    in->op[1].rkind == INTERP_RK_K && in->op[1].idx == in->avx.mask_idx)
			start = 2;
		if (in->avx.mask_idx && (in->avx.mask_mode == ZYDIS_MASK_MODE_MERGING ||
					 in->avx.mask_mode == ZYDIS_MASK_MODE_ZEROING)) {
			o->masked = 1;
			o->zeroing = in->avx.mask_mode == ZYDIS_MASK_MODE_ZEROING;
			o->kmask = x->st->k[in->avx.mask_idx];
			need |= INTERP_XS_OPMASK;
		}
	}
	for (int i = start; i < in->nvis; i++) {
		if (in->op[i].type == INTERP_OP_IMM)
			o->imm = i;
		else if (o->nsrc < 3)
			o->src[o->nsrc++] = i;
		else
			return INTERP_STOP_UNSUPPORTED;
	}
	for (int i = 0; i < in->nvis; i++)
		need |= need_of(&in->op[i]);
	if (need & ~x->st->xstate_avail)
		return INTERP_STOP_BADSTATE;
	return INTERP_OK;
}

static void note_src(struct interp_exec *x, int i, const interp_vec *v)
{
	if (x->obs) {
		x->rec.src[i] = v->q[0];
		x->rec.src_mask |= 1u << i;
	}
}

/* Load the elements of [ea, ea+size) that `mask` selects, in runs. */
static int load_masked(struct interp_exec *x, uint64_t ea, uint8_t *buf, unsigned size,
		       unsigned esz, uint64_t mask)
{
	unsigned n = size / esz;

	for (unsigned e = 0; e < n;) {
		unsigned f;
		int rc;

		if (!((mask >> e) & 1)) {
			e++;
			continue;
		}
		for (f = e; f < n && ((mask >> f) & 1); f++)
			;
		rc = interp_load(x, ea + e * esz, buf + e * esz, (f - e) * esz);
		if (rc)
			return rc;
		e = f;
	}
	return INTERP_OK;
}

int interp_vx_get(struct interp_exec *x, const struct interp_vx_ops *o, int i, interp_vec *v)
{
	const struct interp_operand *op = &x->in->op[i];
	int rc;

	switch (op->type) {
	case INTERP_OP_REG:
		if (op->rkind == INTERP_RK_VEC) {
			*v = x->st->zmm[op->idx];
			note_src(x, i, v);
			return INTERP_OK;
		}
		memset(v, 0, sizeof *v);
		return interp_read_u64(x, i, &v->q[0]);
	case INTERP_OP_MEM: {
		uint64_t ea = interp_ea(x, i);
		unsigned size = op->size;

		memset(v, 0, sizeof *v);
		if (size > 64)
			return INTERP_STOP_UNSUPPORTED;
		if (VX_EVEX(x->in) && x->in->avx.bcst && !x->in->avx.bcst_static) {
			/* embedded broadcast: op size is one element */
			unsigned n = o->vl / size;
			/* measured: element-wise operations with every element
			 * masked off do not read it (no fault); others do */
			if (o->masked && o->suppress && !(o->kmask & interp_vx_lanes_mask(o->vl / o->esz)))
				return INTERP_OK;
			if ((rc = interp_load(x, ea, v->b, size)))
				return rc;
			for (unsigned e = 1; e < n; e++)
				memcpy(v->b + e * size, v->b, size);
		} else if (o->masked && o->suppress && op->size >= o->esz &&
			   (o->kmask & interp_vx_lanes_mask(size / o->esz)) != interp_vx_lanes_mask(size / o->esz)) {
			if ((rc = load_masked(x, ea, v->b, size, o->esz, o->kmask)))
				return rc;
		} else if ((rc = interp_load(x, ea, v->b, size))) {
			return rc;
		}
		note_src(x, i, v);
		return INTERP_OK;
	}
	case INTERP_OP_IMM:
		memset(v, 0, sizeof *v);
		v->q[0] = (uint64_t)op->val;
		return INTERP_OK;
	default:
		return INTERP_STOP_UNSUPPORTED;
	}
}

void interp_vx_touch(struct interp_exec *x, int n, unsigned bytes, int zero_upper)
{
	interp_vreg_touch(x, n, bytes);
	if (zero_upper && n < 16) {
		/* zeroed upper parts must be written back where they were live */
		uint64_t up = bytes <= 16 ? INTERP_XS_YMM | INTERP_XS_ZMM_H :
			      bytes <= 32 ? INTERP_XS_ZMM_H : 0;
		x->st->xstate_dirty |= x->st->xstate_bv & up;
	}
}

void interp_vx_note_dst(struct interp_exec *x, int i, const void *p)
{
	if (x->obs) {
		memcpy(&x->rec.dst[i], p, 8);
		x->rec.dst_mask |= 1u << i;
	}
}

int interp_vx_put(struct interp_exec *x, const struct interp_vx_ops *o, int i, const interp_vec *r)
{
	const struct interp_operand *op = &x->in->op[i];

	if (op->type == INTERP_OP_REG && op->rkind == INTERP_RK_VEC) {
		interp_vec *reg = &x->st->zmm[op->idx];
		unsigned size = op->size;

		if (VX_LEGACY(x->in)) {
			memcpy(reg->b, r->b, size);
			interp_vx_touch(x, op->idx, size, 0);
		} else {
			if (o->masked) {
				unsigned n = size / o->esz;
				for (unsigned e = 0; e < n; e++) {
					if ((o->kmask >> e) & 1)
						memcpy(reg->b + e * o->esz, r->b + e * o->esz, o->esz);
					else if (o->zeroing)
						memset(reg->b + e * o->esz, 0, o->esz);
				}
			} else {
				memcpy(reg->b, r->b, size);
			}
			memset(reg->b + size, 0, 64 - size);
			interp_vx_touch(x, op->idx, size, 1);
		}
		interp_vx_note_dst(x, i, reg->b);
		return INTERP_OK;
	}
	if (op->type == INTERP_OP_MEM && o->masked) {
		uint64_t ea = interp_ea(x, i);
		unsigned n = op->size / o->esz;

		for (unsigned e = 0; e < n;) {
			unsigned f;
			int rc;

			if (!((o->kmask >> e) & 1)) {
				e++;
				continue;
			}
			for (f = e; f < n && ((o->kmask >> f) & 1); f++)
				;
			rc = interp_store(x, ea + e * o->esz, r->b + e * o->esz, (f - e) * o->esz);
			if (rc)
				return rc;
			e = f;
		}
		interp_vx_note_dst(x, i, r->b);
		return INTERP_OK;
	}
	if (op->type == INTERP_OP_MEM)
		return interp_write(x, i, r->b);
	return interp_write_u64(x, i, r->q[0]);
}

