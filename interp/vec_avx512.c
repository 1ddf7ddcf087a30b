/* interp/vec_avx512.c — the AVX-512-only vector operations: compares and
 * tests into opmasks (vpcmp*, vptestm/nm), ternary logic, IFMA, vpblendm,
 * two-table permutes, mask<->vector moves, compress/expand and the
 * down-converting moves. The rows that route mnemonics here are VDESC_LIST in
 * vec_int.c; the operand machinery is vec_operand.c.
 *
 * Workload: vpcmp and vptestnm into k, and vpternlogd, sit in the inner loops
 * of glibc's EVEX string functions; the rest shows up in OpenSSL and in
 * node's SIMD string code.
 *
 * Concurrency: thread state and, through interp_load/interp_store, program
 * memory.
 */
#include "interp/vec.h"

/* Compare into an opmask (EVEX) or into a vector (VEX vpcmpeq/vpcmpgt). */
static int cmp_pred(unsigned pred, int uns, uint64_t x, uint64_t y, unsigned s)
{
	int lt = uns ? x < y : sx(x, s) < sx(y, s);
	int eq = x == y;

	switch (pred & 7) {
	case 0: return eq;
	case 1: return lt;
	case 2: return lt || eq;
	case 3: return 0;
	case 4: return !eq;
	case 5: return !lt;
	case 6: return !lt && !eq;
	default: return 1;
	}
}

int interp_vx_h_cmpk(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b;
	unsigned s = dd->esz, n;
	uint64_t m = 0;
	unsigned pred;
	int rc;

	if (!VX_EVEX(x->in)) {
		/* VEX vpcmpeq/vpcmpgt write vectors */
		struct interp_vdesc v = { K_BIN, dd->op, dd->esz, 0 };
		return interp_vx_bin(x, &v);
	}
	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	o.suppress = 1;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)) || (rc = interp_vx_get(x, &o, o.src[1], &b)))
		return rc;
	pred = dd->flags & F_IMMPRED ? (unsigned)interp_vx_imm(x, &o) :
	       dd->flags & F_GT ? 6 : 0;
	n = o.vl / s;
	if (s == 1 && dd->kind == K_TESTK) {
		/* the hot forms (vptestnmb in strlen/strcpy loops) */
		for (unsigned e = 0; e < n; e++)
			m |= (uint64_t)((a.b[e] & b.b[e]) != 0) << e;
		if (dd->flags & F_NOT)
			m = ~m & interp_vx_lanes_mask(n);
		n = 0;
	} else if (s == 1 && dd->kind == K_CMPK && (pred & 3) == 0) {
		/* byte eq/ne: vpcmpeqb, vpcmpneqb, vpcmpnequb */
		for (unsigned e = 0; e < n; e++)
			m |= (uint64_t)(a.b[e] == b.b[e]) << e;
		if (pred & 4)
			m = ~m & interp_vx_lanes_mask(n);
		n = 0;
	}
	for (unsigned e = 0; e < n; e++) {
		uint64_t p = eget(&a, s, e), q = eget(&b, s, e);
		int t = dd->kind == K_TESTK ? ((p & q) != 0) ^ !!(dd->flags & F_NOT) :
			cmp_pred(pred, !!(dd->flags & F_UNS), p, q, s);
		m |= (uint64_t)t << e;
	}
	m &= o.kmask;
	return interp_write_u64(x, o.dst, m);
}

/* vpternlogd/q: each result bit is imm8[(a<<2)|(b<<1)|c] of the three
 * source bits; a is the destination. */
int interp_vx_h_tern(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b, c, r;
	unsigned imm;
	int rc;

	if ((rc = interp_vx_layout(x, &o, dd->esz)))
		return rc;
	o.suppress = 1;
	if ((rc = interp_vx_get(x, &o, o.dst, &a)) || (rc = interp_vx_get(x, &o, o.src[0], &b)) ||
	    (rc = interp_vx_get(x, &o, o.src[1], &c)))
		return rc;
	imm = (unsigned)interp_vx_imm(x, &o);
	memset(&r, 0, sizeof r);
	for (unsigned i = 0; i < o.vl / 8; i++) {
		uint64_t res = 0;
		for (unsigned k = 0; k < 8; k++) {
			if (!((imm >> k) & 1))
				continue;
			res |= ((k & 4) ? a.q[i] : ~a.q[i]) & ((k & 2) ? b.q[i] : ~b.q[i]) &
			       ((k & 1) ? c.q[i] : ~c.q[i]);
		}
		r.q[i] = res;
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpmadd52luq/huq: dst += low/high 52 bits of the 104-bit product of the
 * sources' low 52 bits, per quadword. */
int interp_vx_h_madd52(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b, c, r;
	const uint64_t m52 = (1ull << 52) - 1;
	int rc;

	if ((rc = interp_vx_layout(x, &o, 8)))
		return rc;
	if (o.nsrc < 2)
		return INTERP_STOP_UNSUPPORTED;
	o.suppress = 1;
	if ((rc = interp_vx_get(x, &o, o.dst, &a)) || (rc = interp_vx_get(x, &o, o.src[0], &b)) ||
	    (rc = interp_vx_get(x, &o, o.src[1], &c)))
		return rc;
	memset(&r, 0, sizeof r);
	for (unsigned i = 0; i < o.vl / 8; i++) {
		unsigned __int128 p = (unsigned __int128)(b.q[i] & m52) * (c.q[i] & m52);
		r.q[i] = a.q[i] + (dd->op ? (uint64_t)(p >> 52) & m52 : (uint64_t)p & m52);
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpblendm*: the write mask selects src2 over src1 (zeroing: over 0);
 * every element is written. */
int interp_vx_h_blendm(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b, r;
	unsigned s = dd->esz;
	/* Zydis calls this mask a control mask: interp_vx_layout leaves it */
	uint64_t k = x->in->avx.mask_idx ? x->st->k[x->in->avx.mask_idx] : ~0ull;
	int z = x->in->avx.mask_mode == ZYDIS_MASK_MODE_CONTROL_ZEROING ||
		x->in->avx.mask_mode == ZYDIS_MASK_MODE_ZEROING;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (o.nsrc < 2)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	/* src2 elements not selected are not read (measured: no fault) */
	o.masked = x->in->avx.mask_idx != 0;
	o.suppress = 1;
	o.kmask = k;
	if ((rc = interp_vx_get(x, &o, o.src[1], &b)))
		return rc;
	memset(&r, 0, sizeof r);
	for (unsigned e = 0; e < o.vl / s; e++)
		eput(&r, s, e, (k >> e) & 1 ? eget(&b, s, e) : z ? 0 : eget(&a, s, e));
	o.masked = 0;
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpermt2*: dst (table 1, also the merge value) and src2 (table 2) indexed
 * by src1; vpermi2*: dst holds the indices, src1/src2 the tables. */
int interp_vx_h_perm2t(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec d, a, b, r;
	unsigned s = dd->esz, n;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (o.nsrc < 2)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.dst, &d)) || (rc = interp_vx_get(x, &o, o.src[0], &a)) ||
	    (rc = interp_vx_get(x, &o, o.src[1], &b)))
		return rc;
	n = o.vl / s;
	memset(&r, 0, sizeof r);
	for (unsigned i = 0; i < n; i++) {
		const interp_vec *idx = dd->op ? &d : &a;
		const interp_vec *t1 = dd->op ? &a : &d;
		unsigned k = (unsigned)eget(idx, s, i) & (2 * n - 1);
		eput(&r, s, i, k < n ? eget(t1, s, k) : eget(&b, s, k - n));
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpmov?2m: the sign bit of each element into an opmask. */
int interp_vx_h_tomask(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a;
	unsigned s = dd->esz;
	uint64_t m = 0;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	for (unsigned e = 0; e < o.vl / s; e++)
		m |= ((eget(&a, s, e) >> (8 * s - 1)) & 1) << e;
	return interp_write_u64(x, o.dst, m);
}

/* vpmovm2?: each element all ones where the opmask bit is set. The opmask
 * is operand 1, which interp_vx_layout would take for a write mask. */
int interp_vx_h_frommask(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec r;
	unsigned s = dd->esz;
	uint64_t k;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (x->in->op[1].type != INTERP_OP_REG || x->in->op[1].rkind != INTERP_RK_K || o.masked)
		return INTERP_STOP_UNSUPPORTED;
	k = x->st->k[x->in->op[1].idx];
	memset(&r, 0, sizeof r);
	for (unsigned e = 0; e < o.vl / s; e++)
		eput(&r, s, e, (k >> e) & 1 ? interp_mask(s) : 0);
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vpcompress: the selected elements packed to the bottom (register: the
 * rest zeroed or kept; memory: only they are stored, contiguously).
 * vpexpand: the bottom elements of the source spread to the selected
 * positions (memory: only as many as are selected are read). */
int interp_vx_h_compress(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, r;
	unsigned s = dd->esz, n, j = 0;
	const struct interp_operand *d = &x->in->op[0];
	uint64_t k;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	n = o.vl / s;
	k = o.kmask & interp_vx_lanes_mask(n);
	if (dd->op && x->in->op[o.src[0]].type == INTERP_OP_MEM) {
		/* expand from memory: the first popcount(k) elements */
		memset(&a, 0, sizeof a);
		j = (unsigned)__builtin_popcountll(k);
		if (j && (rc = interp_load(x, interp_ea(x, o.src[0]), a.b, j * s)))
			return rc;
	} else if ((rc = interp_vx_get(x, &o, o.src[0], &a))) {
		return rc;
	}
	memset(&r, 0, sizeof r);
	if (!dd->op) {
		for (unsigned e = 0; e < n; e++)
			if ((k >> e) & 1)
				eput(&r, s, j++, eget(&a, s, e));
		if (d->type == INTERP_OP_MEM) {
			if (j && (rc = interp_store(x, interp_ea(x, 0), r.b, j * s)))
				return rc;
			return INTERP_OK;
		}
		/* register: elements j.. merge with the old value unless {z} */
		if (!o.zeroing)
			for (unsigned e = j; e < n; e++)
				eput(&r, s, e, eget(&x->st->zmm[d->idx], s, e));
		o.masked = 0;
		return interp_vx_put(x, &o, 0, &r);
	}
	j = 0;
	for (unsigned e = 0; e < n; e++)
		if ((k >> e) & 1)
			eput(&r, s, e, eget(&a, s, j++));
	return interp_vx_put(x, &o, 0, &r);
}

/* vpmov{,s,us}{wb,db,qb,dw,qw,qd}: each element narrowed (truncated or
 * saturated) into a destination of vl * esz / op bytes. */
int interp_vx_h_pmovdown(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, r;
	unsigned si = dd->op, so = dd->esz, n;
	int rc;

	if ((rc = interp_vx_layout(x, &o, so)))
		return rc;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	n = o.vl / si;
	memset(&r, 0, sizeof r);
	for (unsigned e = 0; e < n; e++) {
		uint64_t v = eget(&a, si, e);
		if (dd->flags & F_UNS)
			v = v > interp_mask(so) ? interp_mask(so) : v;
		else if (dd->flags & F_SGN)
			v = sat_s(sx(v, si), so);
		eput(&r, so, e, v);
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* Three-source operations that accumulate into the destination, per
 * element: dd->op 0 vpshldv (dst:src2 << src3), 1 vpshrdv (src2:dst >>
 * src3), 2 vpdpbusd (dst + four u8*s8), 3 vpdpwssd (dst + two s16*s16);
 * +4: the sum saturates to int32. */
int interp_vx_h_acc3(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	struct interp_vx_ops o;
	interp_vec a, b, c, r;
	unsigned s = dd->esz;
	int rc;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	if (o.nsrc < 2)
		return INTERP_STOP_UNSUPPORTED;
	o.suppress = 1;
	if ((rc = interp_vx_get(x, &o, o.dst, &a)) || (rc = interp_vx_get(x, &o, o.src[0], &b)) ||
	    (rc = interp_vx_get(x, &o, o.src[1], &c)))
		return rc;
	memset(&r, 0, sizeof r);
	for (unsigned e = 0; e < o.vl / s; e++) {
		uint64_t p = eget(&a, s, e), q = eget(&b, s, e), m = interp_mask(s), v;
		unsigned k = (unsigned)eget(&c, s, e) & (8 * s - 1);
		int64_t sum = sx(p, s);

		switch (dd->op & 3) {
		case 0: v = k ? (p << k) | ((q & m) >> (8 * s - k)) : p; break;
		case 1: v = k ? ((p & m) >> k) | (q << (8 * s - k)) : p; break;
		case 2:
			for (unsigned j = 0; j < 4; j++)
				sum += (int64_t)b.b[4 * e + j] * (int8_t)c.b[4 * e + j];
			v = dd->op & 4 ? sat_s(sum, 4) : (uint64_t)sum;
			break;
		default:
			for (unsigned j = 0; j < 2; j++)
				sum += (int64_t)(int16_t)b.w[2 * e + j] * (int16_t)c.w[2 * e + j];
			v = dd->op & 4 ? sat_s(sum, 4) : (uint64_t)sum;
			break;
		}
		eput(&r, s, e, v & m);
	}
	return interp_vx_put(x, &o, o.dst, &r);
}

/* Gathers. VEX: element i is loaded where the mask vector's element i has
 * its sign bit set; EVEX: where k bit i is set. Then the whole mask (vector
 * or k) becomes zero, and the destination above the gathered elements is
 * zeroed. A fault on any selected element stops the run before anything
 * changed: the hardware then does its partial progress itself. */
int interp_vx_h_gather(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	const struct interp_insn *in = x->in;
	unsigned isz = dd->op, dsz = dd->esz, n, big = isz > dsz ? isz : dsz;
	int evex = VX_EVEX(in), mi = -1, rc;
	const struct interp_operand *m = NULL, *d = &in->op[0];
	interp_vec idx, mask, r;
	uint64_t k = 0;

	for (int i = 0; i < in->nvis; i++)
		if (in->op[i].type == INTERP_OP_MEM && in->op[i].vsib)
			mi = i;
	if (mi < 0 || d->type != INTERP_OP_REG || d->rkind != INTERP_RK_VEC)
		return INTERP_STOP_UNSUPPORTED;
	m = &in->op[mi];
	if (!(x->st->xstate_avail & INTERP_XS_SSE) ||
	    ((d->idx >= 16 || m->index >= 16) && !(x->st->xstate_avail & INTERP_XS_HI16)) ||
	    (in->avx.vl > 16 && !(x->st->xstate_avail & INTERP_XS_YMM)) ||
	    (in->avx.vl > 32 && !(x->st->xstate_avail & INTERP_XS_ZMM_H)) ||
	    (evex && !(x->st->xstate_avail & INTERP_XS_OPMASK)))
		return INTERP_STOP_BADSTATE;
	n = in->avx.vl / big;
	idx = x->st->zmm[m->index];
	if (evex) {
		if (!in->avx.mask_idx || in->avx.mask_mode != ZYDIS_MASK_MODE_MERGING)
			return INTERP_STOP_UNSUPPORTED;
		k = x->st->k[in->avx.mask_idx];
	} else {
		if (in->nvis < 3 || in->op[2].type != INTERP_OP_REG || in->op[2].rkind != INTERP_RK_VEC)
			return INTERP_STOP_UNSUPPORTED;
		mask = x->st->zmm[in->op[2].idx];
		for (unsigned e = 0; e < n; e++)
			k |= ((eget(&mask, dsz, e) >> (8 * dsz - 1)) & 1) << e;
	}
	memset(&r, 0, sizeof r);
	memcpy(r.b, x->st->zmm[d->idx].b, n * dsz);
	for (unsigned e = 0; e < n; e++) {
		uint64_t v = 0;

		if (!((k >> e) & 1))
			continue;
		uint64_t a = interp_ea_index(x, m, (uint64_t)sx(eget(&idx, isz, e), isz) * m->scale);
		if ((rc = interp_load(x, a, &v, dsz)))
			return rc;
		eput(&r, dsz, e, v);
	}
	/* commit: destination, then the mask */
	memcpy(x->st->zmm[d->idx].b, r.b, 64);
	interp_vx_touch(x, d->idx, 64, 1);
	interp_vx_note_dst(x, 0, r.b);
	if (evex) {
		x->st->k[in->avx.mask_idx] = 0;
		x->st->xstate_bv |= INTERP_XS_OPMASK;
		x->st->xstate_dirty |= INTERP_XS_OPMASK;
	} else {
		memset(x->st->zmm[in->op[2].idx].b, 0, 64);
		interp_vx_touch(x, in->op[2].idx, 64, 1);
	}
	return INTERP_OK;
}

/* Scatters (EVEX): the selected elements stored in element order, so for
 * equal addresses the highest element wins; then k becomes zero. Each is
 * one buffered store: more than INTERP_MAX_STORES selected elements stop
 * as unsupported, a fault on any stops before anything is written. */
int interp_vx_h_scatter(struct interp_exec *x)
{
	const struct interp_vdesc *dd = &interp_row(x->in)->spec.v;
	const struct interp_insn *in = x->in;
	unsigned isz = dd->op, dsz = dd->esz, n, big = isz > dsz ? isz : dsz;
	const struct interp_operand *m = &in->op[0], *s = &in->op[2];
	interp_vec idx, v;
	uint64_t k;
	int rc;

	if (in->nvis < 3 || m->type != INTERP_OP_MEM || !m->vsib || !in->avx.mask_idx ||
	    s->type != INTERP_OP_REG || s->rkind != INTERP_RK_VEC)
		return INTERP_STOP_UNSUPPORTED;
	if (!(x->st->xstate_avail & INTERP_XS_OPMASK) ||
	    ((s->idx >= 16 || m->index >= 16) && !(x->st->xstate_avail & INTERP_XS_HI16)) ||
	    (in->avx.vl > 16 && !(x->st->xstate_avail & INTERP_XS_YMM)) ||
	    (in->avx.vl > 32 && !(x->st->xstate_avail & INTERP_XS_ZMM_H)))
		return INTERP_STOP_BADSTATE;
	n = in->avx.vl / big;
	idx = x->st->zmm[m->index];
	v = x->st->zmm[s->idx];
	k = x->st->k[in->avx.mask_idx];
	for (unsigned e = 0; e < n; e++) {
		uint64_t val = eget(&v, dsz, e);

		if (!((k >> e) & 1))
			continue;
		uint64_t a = interp_ea_index(x, m, (uint64_t)sx(eget(&idx, isz, e), isz) * m->scale);
		if ((rc = interp_store(x, a, &val, dsz)))
			return rc;
	}
	x->st->k[in->avx.mask_idx] = 0;
	x->st->xstate_bv |= INTERP_XS_OPMASK;
	x->st->xstate_dirty |= INTERP_XS_OPMASK;
	return INTERP_OK;
}
