/*
 * The window's hazard consumer (window.h): memory-order hazards, as the
 * value-sampling paper's vreplay found replay traps on the Alpha, for an
 * x86 core. With `vprof run --hazards` the windows are long (as
 * --cachesim's) and every load is checked against the stores before it
 * that a core would still hold in its store buffer (the last HAZ_STORES
 * stores, within HAZ_DIST instructions):
 *
 *   store forwarding fails   the youngest store the load overlaps does
 *                            not hold all of the load's bytes (a narrow
 *                            store under a wide load, or a partial
 *                            overlap): the load waits for the store to
 *                            reach the cache;
 *   4K aliasing              the load overlaps no such store, but one
 *                            matches it in address bits 11:0 (another
 *                            page): the core takes the store for the
 *                            load's source until the full addresses are
 *                            compared.
 *
 * False alarms are dropped by data dependence, as vreplay did: a 4K pair
 * whose load address was computed from the store's own data (reached
 * through memory and registers: a taint each register carries, the id of
 * the youngest store whose value flowed into it) cannot have its load
 * start before the store, so the alias costs nothing more.
 *
 * Each pair (load PC, store PC, kind, distance) is counted in a
 * per-window table and reaches the thread's hotlists (SPOOL_VK_HAZARD,
 * keyed at the load) at the window's end, with the executions of each
 * load that had one in the window. State: one mapping per thread, at its
 * first hazard window (a system call, safe in the handler), freed at
 * thread exit. AS-safe: addresses are numbers, never dereferenced.
 */
#include "preload/window.h"
#include "preload/preload.h"
#include "spool/hotlist.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <Zydis/Zydis.h>

#define HAZ_STORES 48          /* a store buffer's depth (Zen 4: 64, Skylake: 56, older: 42) */
#define HAZ_DIST 64            /* instructions within which a store may still be in flight */
#define HAZ_RECS 256
#define HAZ_LOADS 1024

struct haz_store {
	uint64_t pc, addr;
	uint32_t size, idx, id;
};

struct haz_rec {
	uint64_t load, store;
	uint32_t aux, n;
};

struct haz_load {
	uint64_t pc;
	uint32_t n, hazard;
};

struct preload_hazards {
	size_t map_size;
	uint32_t nstore, next_id;
	struct haz_store st[HAZ_STORES];   /* a ring: nstore counts all */
	uint32_t taint_gpr[16], taint_vec[32];
	struct haz_rec rec[HAZ_RECS];
	struct haz_load loads[HAZ_LOADS];
};

static struct preload_hazards *state(void)
{
	size_t total = (sizeof(struct preload_hazards) + 4095) & ~(size_t)4095;
	int e = errno;
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	errno = e;
	if (m == MAP_FAILED)
		return NULL;
	struct preload_hazards *h = m;
	h->map_size = total;
	return h;
}

void preload_hazards_begin(struct preload_window *w)
{
	if (!w->hazards)
		return;
	if (!w->hz && !(w->hz = state()))
		return;
	struct preload_hazards *h = w->hz;
	h->nstore = 0;
	h->next_id = 1;
	memset(h->taint_gpr, 0, sizeof(h->taint_gpr));
	memset(h->taint_vec, 0, sizeof(h->taint_vec));
}

static uint32_t *taint_of(struct preload_hazards *h, const struct interp_operand *o)
{
	if (o->type != INTERP_OP_REG)
		return NULL;
	if ((o->rkind == INTERP_RK_GPR || o->rkind == INTERP_RK_GPR8H) && o->idx < 16)
		return &h->taint_gpr[o->idx];
	if (o->rkind == INTERP_RK_VEC && o->idx < 32)
		return &h->taint_vec[o->idx];
	return NULL;
}

static void rec(struct preload_window *w, uint64_t load, uint64_t store, uint32_t aux)
{
	struct preload_hazards *h = w->hz;
	uint64_t x = (load ^ store * 0x9e3779b97f4a7c15ull ^ aux) * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		struct haz_rec *e = &h->rec[((x >> 56) + p) & (HAZ_RECS - 1)];
		if (e->n && e->load == load && e->store == store && e->aux == aux) {
			e->n++;
			return;
		}
		if (!e->n) {
			*e = (struct haz_rec){ load, store, aux, 1 };
			return;
		}
	}
	preload_window_put(w, SPOOL_VK_HAZARD, load, store, aux);
}

/* The load's execution, counted; hazard marks it for the hotlists. */
static void load_seen(struct preload_hazards *h, uint64_t pc, int hazard)
{
	uint64_t x = pc * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		struct haz_load *e = &h->loads[((x >> 54) + p) & (HAZ_LOADS - 1)];
		if (e->n && e->pc == pc) {
			e->n++;
			e->hazard |= hazard;
			return;
		}
		if (!e->n) {
			*e = (struct haz_load){ pc, 1, (uint32_t)hazard };
			return;
		}
	}
}

static int overlap(uint64_t a, uint32_t as, uint64_t b, uint32_t bs)
{
	return a < b + bs && b < a + as;
}

/* One load against the stores in flight: the hazard's kind (0 none) and
 * the store; *from: the store whose data the load reads, 0 none. */
static unsigned check_load(struct preload_hazards *h, uint64_t addr, uint32_t size, uint32_t idx, uint32_t addr_taint,
			   const struct haz_store **which, uint32_t *from)
{
	uint32_t n = h->nstore < HAZ_STORES ? h->nstore : HAZ_STORES;
	const struct haz_store *alias = NULL;
	*from = 0;
	for (uint32_t k = 0; k < n; k++) {
		const struct haz_store *s = &h->st[(h->nstore - 1 - k) % HAZ_STORES];
		if (idx - s->idx > HAZ_DIST)
			break;
		if (overlap(addr, size, s->addr, s->size)) {
			*from = s->id;
			if (s->addr <= addr && addr + size <= s->addr + s->size)
				return 0;   /* forwarded */
			*which = s;
			return SPOOL_HAZARD_FORWARD;
		}
		if (!alias && (addr >> 12) != (s->addr >> 12) &&
		    overlap(addr & 0xfff, size, s->addr & 0xfff, s->size))
			alias = s;
	}
	/* The load's address from the store's own data: a true dependence. */
	if (alias && addr_taint < alias->id) {
		*which = alias;
		return SPOOL_HAZARD_ALIAS4K;
	}
	return 0;
}

void preload_hazards_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r)
{
	struct preload_hazards *h = w->hz;
	const struct interp_insn *in = r->insn;
	(void)st;
	if (!h)
		return;
	uint32_t idx = (uint32_t)w->n;
	/* The taint of what the instruction reads: registers, and the
	 * address registers of its memory operand. */
	uint32_t src = 0, addr_taint = 0;
	for (unsigned i = 0; i < in->nops; i++) {
		const struct interp_operand *o = &in->op[i];
		uint32_t *t;
		if (o->type == INTERP_OP_MEM || o->type == INTERP_OP_AGEN) {
			if (o->base < 16 && h->taint_gpr[o->base] > addr_taint)
				addr_taint = h->taint_gpr[o->base];
			if (!o->vsib && o->index < 16 && h->taint_gpr[o->index] > addr_taint)
				addr_taint = h->taint_gpr[o->index];
			if (o->type == INTERP_OP_AGEN && addr_taint > src)
				src = addr_taint;
		} else if ((o->action & ZYDIS_OPERAND_ACTION_MASK_READ) && (t = taint_of(h, o)) && *t > src) {
			src = *t;
		}
	}
	uint32_t n = r->naccess < INTERP_MAX_ACCESS ? r->naccess : INTERP_MAX_ACCESS;
	for (uint32_t i = 0; i < n; i++) {
		const struct interp_access *a = &r->acc[i];
		if (a->write)
			continue;
		const struct haz_store *s = NULL;
		uint32_t from;
		unsigned kind = check_load(h, a->addr, a->size ? a->size : 1, idx, addr_taint, &s, &from);
		if (from > src)
			src = from;
		if (kind)
			rec(w, in->pc, s->pc, (uint32_t)SPOOL_HAZARD_AUX(kind, idx - s->idx));
		load_seen(h, in->pc, kind != 0);
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct interp_access *a = &r->acc[i];
		if (!a->write)
			continue;
		struct haz_store *s = &h->st[h->nstore++ % HAZ_STORES];
		*s = (struct haz_store){ in->pc, a->addr, a->size ? a->size : 1, idx, h->next_id++ };
	}
	/* What the instruction writes carries what it read. */
	for (unsigned i = 0; i < in->nops; i++) {
		const struct interp_operand *o = &in->op[i];
		uint32_t *t;
		if ((o->action & ZYDIS_OPERAND_ACTION_MASK_WRITE) && (t = taint_of(h, o)))
			*t = src;
	}
}

void preload_hazards_end(struct preload_window *w)
{
	struct preload_hazards *h = w->hz;
	if (!h)
		return;
	for (unsigned i = 0; i < HAZ_RECS; i++) {
		struct haz_rec *e = &h->rec[i];
		if (e->n) {
			preload_window_put_n(w, SPOOL_VK_HAZARD, e->load, e->store, e->aux, e->n);
			e->n = 0;
		}
	}
	for (unsigned i = 0; i < HAZ_LOADS; i++) {
		struct haz_load *e = &h->loads[i];
		if (e->n && e->hazard)
			preload_window_put_n(w, SPOOL_VK_HAZARD, e->pc, e->pc, 0, e->n);
		e->n = 0;
	}
}

void preload_hazards_free(struct preload_window *w)
{
	struct preload_hazards *h = w->hz;
	w->hz = NULL;
	if (h)
		munmap(h, h->map_size);
}
