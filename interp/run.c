/* interp/run.c — the run loop and the operand/flag helpers handlers use.
 *
 * Owns the step protocol: decode (through the cache), call the family
 * handler with an exec context whose flags, RIP and stores are working
 * copies, then commit them only if the handler returned INTERP_OK. So an
 * instruction either happens entirely or the run stops before it. (The
 * one exception to buffering, interp_store_last, is for a single store
 * made as the handler's last step that can fail: a lone mov that faults
 * writes nothing, so it is just as all-or-nothing.)
 *
 * Workload: long runs in benchmarks and tests, runs of a few instructions
 * from a signal handler; everything on the per-step path is inline-friendly
 * and touches only the state, the cache entry and the exec context. RIP
 * and RFLAGS stay in registers/the exec context for the whole run, and
 * register operands are read inline in the handlers (internal.h).
 *
 * Concurrency: per thread; program memory only through mem.c.
 */
#include <stddef.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

static const char *const kstop_name[INTERP_STOP__COUNT] = {
	[INTERP_OK] = "ok",
	[INTERP_STOP_LIMIT] = "limit",
	[INTERP_STOP_UNSUPPORTED] = "unsupported",
	[INTERP_STOP_WOULD_FAULT] = "would_fault",
	[INTERP_STOP_SYSCALL] = "syscall",
	[INTERP_STOP_DECODE] = "decode",
	[INTERP_STOP_OBSERVER] = "observer",
	[INTERP_STOP_BADSTATE] = "badstate",
};

const char *interp_stop_name(int stop)
{
	if (stop < 0 || stop >= INTERP_STOP__COUNT)
		return "?";
	return kstop_name[stop];
}

size_t interp_thread_size(void)
{
	return sizeof(struct interp_thread);
}

void interp_thread_init(struct interp_thread *th)
{
	memset(th, 0, sizeof *th);
}

static unsigned dcache_shift(unsigned entries)
{
	unsigned s = 0;

	while ((INTERP_DCACHE_SIZE >> s) > 1 && (unsigned)(INTERP_DCACHE_SIZE >> s) > entries)
		s++;
	return s;
}

size_t interp_thread_size_n(unsigned entries)
{
	return offsetof(struct interp_thread, dcache) +
	       (size_t)(INTERP_DCACHE_SIZE >> dcache_shift(entries)) * sizeof(struct interp_insn);
}

void interp_thread_init_n(struct interp_thread *th, unsigned entries)
{
	memset(th, 0, interp_thread_size_n(entries));
	th->dshift = dcache_shift(entries);
}

unsigned interp_thread_entries(const struct interp_thread *th)
{
	return INTERP_DCACHE_SIZE >> th->dshift;
}

/* ---------------------------------------------------------- operands */

uint64_t interp_ea(struct interp_exec *x, int i)
{
	return interp_ea_op(x, &x->in->op[i]);
}

int interp_rd_mem(struct interp_exec *x, int i, uint64_t *v)
{
	const struct interp_operand *o = &x->in->op[i];
	struct interp_ld r;

	if (__builtin_expect(interp_shadow_cur != NULL, 0))
		return interp_read_u64(x, i, v);
	switch (o->size) {
	case 8: r = interp_mem_ld8_raw(interp_ea_op(x, o)); break;
	case 4: r = interp_mem_ld4_raw(interp_ea_op(x, o)); break;
	case 2: r = interp_mem_ld2_raw(interp_ea_op(x, o)); break;
	case 1: r = interp_mem_ld1_raw(interp_ea_op(x, o)); break;
	default: return interp_read_u64(x, i, v);
	}
	if (__builtin_expect(r.err != 0, 0))
		return INTERP_STOP_WOULD_FAULT;
	*v = r.v;
	return INTERP_OK;
}

int interp_wr_mem_last(struct interp_exec *x, int i, uint64_t v)
{
	const struct interp_operand *o = &x->in->op[i];

	return interp_store_last(x, interp_ea_op(x, o), v, o->size);
}

void interp_note_access(struct interp_exec *x, uint64_t addr, unsigned size,
			int write, uint64_t lat)
{
	struct interp_record *r = &x->rec;

	if (r->naccess < INTERP_MAX_ACCESS) {
		struct interp_access *a = &r->acc[r->naccess];
		a->addr = addr;
		a->size = size;
		a->write = write;
		a->latency = lat;
	}
	r->naccess++;
}

int interp_load(struct interp_exec *x, uint64_t addr, void *buf, unsigned size)
{
	uint64_t lat = 0;
	int rc;

	if (x->obs && (x->obs->flags & INTERP_OBS_LATENCY)) {
		uint64_t t0 = interp_rdtscp();
		rc = interp_mem_load(buf, addr, size);
		lat = interp_rdtscp() - t0;
	} else {
		rc = interp_mem_load(buf, addr, size);
	}
	if (rc)
		return INTERP_STOP_WOULD_FAULT;
	if (x->obs)
		interp_note_access(x, addr, size, 0, lat);
	return INTERP_OK;
}

int interp_store(struct interp_exec *x, uint64_t addr, const void *buf, unsigned size)
{
	struct interp_storebuf *sb = &x->sb;

	if (sb->n >= INTERP_MAX_STORES || sb->used + size > INTERP_STORE_BYTES)
		return INTERP_STOP_UNSUPPORTED;
	if (interp_mem_wprobe(addr, size))
		return INTERP_STOP_WOULD_FAULT;
	sb->s[sb->n].addr = addr;
	sb->s[sb->n].size = size;
	sb->s[sb->n].off = sb->used;
	memcpy(sb->data + sb->used, buf, size);
	sb->used += size;
	sb->n++;
	if (x->obs)
		interp_note_access(x, addr, size, 1, 0);
	return INTERP_OK;
}

/* Write the buffered stores (all probed already). Also used by string
 * instructions between iterations. */
void interp_commit_stores(struct interp_exec *x)
{
	struct interp_storebuf *sb = &x->sb;

	for (unsigned i = 0; i < sb->n; i++)
		interp_mem_store(sb->s[i].addr, sb->data + sb->s[i].off, sb->s[i].size);
	sb->n = sb->used = 0;
}

uint64_t interp_gpr_get(struct interp_exec *x, int n, unsigned size)
{
	return x->st->gpr[n] & interp_mask(size);
}

void interp_gpr_set(struct interp_exec *x, int n, unsigned size, uint64_t v)
{
	uint64_t *r = &x->st->gpr[n];

	switch (size) {
	case 8: *r = v; break;
	case 4: *r = (uint32_t)v; break;
	case 2: *r = (*r & ~0xffffull) | (v & 0xffff); break;
	default: *r = (*r & ~0xffull) | (v & 0xff); break;
	}
}

void interp_vreg_touch(struct interp_exec *x, int n, unsigned bytes)
{
	uint64_t bv = 0;

	if (n >= 16)
		bv = INTERP_XS_HI16;
	else {
		bv = INTERP_XS_SSE;
		if (bytes > 16)
			bv |= INTERP_XS_YMM;
		if (bytes > 32)
			bv |= INTERP_XS_ZMM_H;
	}
	x->st->xstate_bv |= bv;
	x->st->xstate_dirty |= bv;
}

int interp_read(struct interp_exec *x, int i, void *buf)
{
	const struct interp_operand *o = &x->in->op[i];
	uint64_t v;

	switch (o->type) {
	case INTERP_OP_MEM: {
		int rc = interp_load(x, interp_ea(x, i), buf, o->size);
		if (rc)
			return rc;
		if (x->obs) {
			v = 0;
			memcpy(&v, buf, o->size < 8 ? o->size : 8);
			goto rec;
		}
		return INTERP_OK;
	}
	case INTERP_OP_REG:
		if (o->rkind == INTERP_RK_VEC) {
			memcpy(buf, x->st->zmm[o->idx].b, o->size);
			if (x->obs) {
				v = 0;
				memcpy(&v, buf, o->size < 8 ? o->size : 8);
				goto rec;
			}
			return INTERP_OK;
		}
		/* scalar registers: */
		__attribute__((fallthrough));
	default: {
		int rc = interp_read_u64(x, i, &v);
		if (rc)
			return rc;
		memcpy(buf, &v, o->size < 8 ? o->size : 8);
		return INTERP_OK;
	}
	}
rec:
	x->rec.src[i] = v;
	x->rec.src_mask |= 1u << i;
	return INTERP_OK;
}

int interp_read_u64(struct interp_exec *x, int i, uint64_t *out)
{
	const struct interp_operand *o = &x->in->op[i];
	uint64_t v;

	switch (o->type) {
	case INTERP_OP_REG:
		switch (o->rkind) {
		case INTERP_RK_GPR:
			v = x->st->gpr[o->idx] & interp_mask(o->size);
			break;
		case INTERP_RK_GPR8H:
			v = (x->st->gpr[o->idx] >> 8) & 0xff;
			break;
		case INTERP_RK_K:
			v = x->st->k[o->idx] & interp_mask(o->size);
			break;
		case INTERP_RK_VEC:
			memcpy(&v, x->st->zmm[o->idx].b, 8);
			v &= interp_mask(o->size);
			break;
		case INTERP_RK_FLAGS:
			v = x->rflags & interp_mask(o->size);
			break;
		case INTERP_RK_MXCSR:
			v = x->st->mxcsr;
			break;
		default:
			return INTERP_STOP_UNSUPPORTED;
		}
		break;
	case INTERP_OP_MEM:
		v = 0;
		if (o->size > 8)
			return INTERP_STOP_UNSUPPORTED;
		{
			int rc = interp_load(x, interp_ea(x, i), &v, o->size);
			if (rc)
				return rc;
		}
		break;
	case INTERP_OP_IMM:
		v = (uint64_t)o->val;
		if (o->imm_signed)
			v &= interp_mask(x->in->opsize ? x->in->opsize : 8);
		break;
	case INTERP_OP_AGEN:
		v = interp_ea(x, i);
		break;
	default:
		return INTERP_STOP_UNSUPPORTED;
	}
	*out = v;
	if (x->obs) {
		x->rec.src[i] = v;
		x->rec.src_mask |= 1u << i;
	}
	return INTERP_OK;
}

int interp_write(struct interp_exec *x, int i, const void *buf)
{
	const struct interp_operand *o = &x->in->op[i];

	if (o->type == INTERP_OP_REG && o->rkind == INTERP_RK_VEC) {
		interp_vec *r = &x->st->zmm[o->idx];
		memcpy(r->b, buf, o->size);
		if (x->in->encoding == ZYDIS_INSTRUCTION_ENCODING_VEX ||
		    x->in->encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX)
			memset(r->b + o->size, 0, 64 - o->size);
		interp_vreg_touch(x, o->idx, o->size);
		if (x->obs) {
			uint64_t v = 0;
			memcpy(&v, buf, o->size < 8 ? o->size : 8);
			x->rec.dst[i] = v;
			x->rec.dst_mask |= 1u << i;
		}
		return INTERP_OK;
	}
	if (o->type == INTERP_OP_MEM && o->size > 8) {
		int rc = interp_store(x, interp_ea(x, i), buf, o->size);
		if (rc == INTERP_OK && x->obs) {
			uint64_t v;
			memcpy(&v, buf, 8);
			x->rec.dst[i] = v;
			x->rec.dst_mask |= 1u << i;
		}
		return rc;
	}
	{
		uint64_t v = 0;
		memcpy(&v, buf, o->size < 8 ? o->size : 8);
		return interp_write_u64(x, i, v);
	}
}

int interp_write_u64(struct interp_exec *x, int i, uint64_t v)
{
	const struct interp_operand *o = &x->in->op[i];

	switch (o->type) {
	case INTERP_OP_REG:
		switch (o->rkind) {
		case INTERP_RK_GPR:
			interp_gpr_set(x, o->idx, o->size, v);
			break;
		case INTERP_RK_GPR8H: {
			uint64_t *r = &x->st->gpr[o->idx];
			*r = (*r & ~0xff00ull) | ((v & 0xff) << 8);
			break;
		}
		case INTERP_RK_K:
			x->st->k[o->idx] = v & interp_mask(o->size);
			x->st->xstate_bv |= INTERP_XS_OPMASK;
			x->st->xstate_dirty |= INTERP_XS_OPMASK;
			break;
		case INTERP_RK_VEC: {
			uint8_t b[64] = {0};
			memcpy(b, &v, 8);
			return interp_write(x, i, b);
		}
		case INTERP_RK_MXCSR:
			x->st->mxcsr = (uint32_t)v;
			x->st->xstate_dirty |= INTERP_XS_SSE;
			break;
		default:
			return INTERP_STOP_UNSUPPORTED;
		}
		break;
	case INTERP_OP_MEM: {
		int rc = interp_store(x, interp_ea(x, i), &v, o->size);
		if (rc)
			return rc;
		break;
	}
	default:
		return INTERP_STOP_UNSUPPORTED;
	}
	if (x->obs) {
		x->rec.dst[i] = v;
		x->rec.dst_mask |= 1u << i;
	}
	return INTERP_OK;
}

/* ------------------------------------------------------------- flags */

void interp_flags(struct interp_exec *x, int op, uint64_t a, uint64_t b,
		  uint64_t cin, uint64_t res, unsigned size)
{
	x->rflags = interp_flags_calc(x->rflags, op, a, b, cin, res, size);
}

int interp_cond(uint64_t f, unsigned cc)
{
	return interp_cond_inl(f, cc);
}

/* --------------------------------------------------------------- run */

/* Out of line on purpose: inlined, gcc loads next_rip and rflags as one
 * 16-byte pair for the two stores into st, ahead of the obs test, and
 * that load cannot be forwarded from the handler's two 8-byte stores. */
static __attribute__((noinline)) int call_observer(struct interp_exec *x, uint64_t rip)
{
	x->rec.rflags_out = x->rflags;
	x->st->rip = rip;
	x->st->rflags = x->rflags;
	return x->obs->insn(x->obs->arg, x->st, &x->rec);
}

int interp_run(struct interp_state *st, struct interp_thread *th, int max_insns,
	       const struct interp_observer *obs, struct interp_result *res)
{
	struct interp_exec x;
	int n = 0, stop = INTERP_STOP_LIMIT;
	const struct interp_insn *in = NULL;
	/* RIP lives in a local and RFLAGS in x.rflags for the whole run; both
	 * go back to st only at the end (and before each observer call).
	 * Storing them into st per instruction, as a pair, made the next
	 * load of st->rip wait on a failed store-to-load forward. */
	uint64_t rip = st->rip;

	if (++th->epoch == 0)
		th->epoch = 1;
	x.st = st;
	x.th = th;
	x.obs = obs;
	x.rflags = st->rflags;
	x.sb.n = x.sb.used = 0;
	x.static_rc_ok = 0;
	if (st->rflags & INTERP_TF) {
		/* A program being single-stepped expects a trap per insn. */
		stop = INTERP_STOP_BADSTATE;
		goto out;
	}
	while (n < max_insns) {
		uint64_t fl = x.rflags;
		int rc;

		in = interp_decode_fast(th, rip, &stop);
		if (__builtin_expect(!in, 0))
			goto out;
		if (__builtin_expect(!in->fn, 0)) {
			stop = INTERP_STOP_UNSUPPORTED;
			goto out;
		}
		if (__builtin_expect(in->xflags & INTERP_XF_VEC, 0) && st->lazy_fp)
			interp_state_load_vec(st);
		x.in = in;
		x.next_rip = rip + in->len;
		if (obs) {
			x.rec.insn = in;
			x.rec.src_mask = x.rec.dst_mask = 0;
			x.rec.naccess = 0;
			x.rec.rflags_in = fl;
		}
		rc = in->fn(&x);
		if (__builtin_expect(rc != INTERP_OK, 0)) {
			x.sb.n = x.sb.used = 0;
			x.rflags = fl;
			stop = rc;
			goto out;
		}
		if (x.sb.n)
			interp_commit_stores(&x);
		rip = x.next_rip;
		n++;
		if (obs && obs->insn && call_observer(&x, rip)) {
			stop = INTERP_STOP_OBSERVER;
			in = NULL;
			goto out;
		}
	}
	in = NULL;
	stop = INTERP_STOP_LIMIT;
out:
	st->rip = rip;
	st->rflags = x.rflags;
	if (res) {
		res->executed = n;
		res->stop = stop;
		res->stop_pc = rip;
		res->stop_mnemonic = in ? in->mnemonic : 0;
	}
	return n;
}
