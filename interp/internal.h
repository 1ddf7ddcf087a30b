/* interp/internal.h — glue between the files of interp/ (not for users).
 * Everything here is AS-safe unless marked otherwise. */
#ifndef VPROF_INTERP_INTERNAL_H
#define VPROF_INTERP_INTERNAL_H

#include "interp/interp.h"

/* Not AS-safe (run by interp_init). */
int interp_decode_init(void);
int interp_xsave_init(void);
int interp_dispatch_init(void);

/* Handler for a decoded instruction, or NULL (unsupported). */
interp_handler *interp_dispatch_lookup(const struct interp_insn *in);
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

/* Inline fast paths of interp_read_u64/interp_write_u64 for the common
 * 64/32-bit GPR operand; everything else goes to the general helpers. */
static inline int interp_rd(struct interp_exec *x, int i, uint64_t *v)
{
	const struct interp_operand *o = &x->in->op[i];

	if (o->type == INTERP_OP_REG && o->rkind == INTERP_RK_GPR && o->size >= 4 && !x->obs) {
		*v = o->size == 8 ? x->st->gpr[o->idx] : (uint32_t)x->st->gpr[o->idx];
		return INTERP_OK;
	}
	if (o->type == INTERP_OP_IMM && !x->obs) {
		*v = (uint64_t)o->val & interp_mask(o->imm_signed ? x->in->opsize : 8);
		return INTERP_OK;
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

static inline struct interp_insn *interp_dcache_slot(struct interp_thread *th, uint64_t pc)
{
	return &th->dcache[(pc ^ (pc >> 11)) & (INTERP_DCACHE_SIZE - 1)];
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

/* Shorthand for handler files. */
#define ST (x->st)
#define IN (x->in)
#define OPS(i) (x->in->op[i].size)

#endif
