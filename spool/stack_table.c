/*
 * The spool's STACKS table (`vprof run --stacks`): its geometry and the
 * writer the sample handler calls (spool.h; format in format.h). The
 * reader is merge/stacks.c.
 *
 * Workload: a sample offers one stack of up to 64 frames; a program has a
 * few hundred to a few thousand distinct stacks, so the common case is a
 * hash over the frames, one probe, a compare of depth words and an atomic
 * add.
 *
 * Concurrency: the table is shared by the process's threads; an entry is
 * written only by the thread that moved it FREE -> BUSY (CAS) and is
 * published READY; counts of READY entries are atomic adds.
 */
#include "spool/spool.h"

#include <xxhash.h>

_Static_assert(sizeof(struct spool_stacks_head) == 64, "stacks head size");
_Static_assert(sizeof(struct spool_stack_entry) == 544, "stack entry size");

_Static_assert(sizeof(struct spool_codes_head) == 64, "codes head size");
_Static_assert(sizeof(struct spool_code_entry) == 512, "code entry size");

size_t spool_stacks_section_bytes_v1(void)
{
	return sizeof(struct spool_stacks_head) +
	       (size_t)SPOOL_STACK_ENTRIES * sizeof(struct spool_stack_entry);
}

size_t spool_stacks_section_bytes(void)
{
	return spool_stacks_section_bytes_v1() + sizeof(struct spool_codes_head) +
	       (size_t)SPOOL_CODE_ENTRIES * sizeof(struct spool_code_entry);
}

void spool_stacks_geometry(struct spool_stacks_head *h, int depth, int method)
{
	h->entries = SPOOL_STACK_ENTRIES;
	h->entry_size = sizeof(struct spool_stack_entry);
	h->max_depth = SPOOL_STACK_MAX;
	h->depth = (uint32_t)depth;
	h->method = (uint32_t)method;
}

int spool_stacks_check(const struct spool_stacks_head *h)
{
	return h->entries == SPOOL_STACK_ENTRIES && h->entry_size == sizeof(struct spool_stack_entry) &&
	       h->max_depth == SPOOL_STACK_MAX && h->depth >= 1 && h->depth <= SPOOL_STACK_MAX ? 0 : -1;
}

struct spool_stack_entry *spool_stack_entries(const struct spool *sp)
{
	return (struct spool_stack_entry *)(sp->stacks + sizeof(struct spool_stacks_head));
}

uint64_t spool_stack_hash(const uint64_t *pc, unsigned depth, unsigned gen)
{
	uint64_t h = 0xcbf29ce484222325ull ^ gen ^ ((uint64_t)depth << 8);
	for (unsigned i = 0; i < depth; i++)
		h = (h ^ pc[i]) * 0x100000001b3ull;
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h ? h : 1;
}

static int same(const struct spool_stack_entry *e, uint64_t hash, const uint64_t *pc,
		unsigned depth, unsigned gen)
{
	if (e->hash != hash || e->depth != depth || e->gen != gen)
		return 0;
	for (unsigned i = 0; i < depth; i++)
		if (e->pc[i] != pc[i])
			return 0;
	return 1;
}

void spool_stack(struct spool *sp, const uint64_t *pc, unsigned depth, unsigned gen,
		 int truncated, uint64_t weight)
{
	if (!sp->hdr || !sp->stacks || !depth)
		return;
	struct spool_stacks_head *h = (struct spool_stacks_head *)sp->stacks;
	if (__atomic_load_n(&sp->nospace, __ATOMIC_RELAXED)) {
		__atomic_fetch_add(&h->samples, weight, __ATOMIC_RELAXED);
		__atomic_fetch_add(&h->dropped, weight, __ATOMIC_RELAXED);
		return;
	}
	struct spool_stack_entry *tab = spool_stack_entries(sp);
	if (depth > SPOOL_STACK_MAX)
		depth = SPOOL_STACK_MAX;
	__atomic_fetch_add(&h->samples, weight, __ATOMIC_RELAXED);
	if (truncated)
		__atomic_fetch_add(&h->truncated, weight, __ATOMIC_RELAXED);
	uint64_t hash = spool_stack_hash(pc, depth, gen);
	uint32_t mask = SPOOL_STACK_ENTRIES - 1;
	for (uint32_t probe = 0; probe < SPOOL_STACK_PROBES; probe++) {
		struct spool_stack_entry *e = &tab[(hash + probe) & mask];
		if (spool_room(sp, e, sizeof(*e)) < 0)
			break;           /* no page for it: dropped, below */
		uint32_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (st == SPOOL_HOT_READY) {
			if (same(e, hash, pc, depth, gen)) {
				__atomic_fetch_add(&e->count, weight, __ATOMIC_RELAXED);
				return;
			}
			continue;
		}
		if (st == SPOOL_HOT_BUSY ||
		    !__atomic_compare_exchange_n(&e->state, &st, SPOOL_HOT_BUSY, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		e->hash = hash;
		e->depth = (uint16_t)depth;
		e->gen = (uint8_t)gen;
		e->flags = truncated ? 1 : 0;
		for (unsigned i = 0; i < depth; i++)
			e->pc[i] = pc[i];
		e->count = weight;
		__atomic_fetch_add(&h->used, 1, __ATOMIC_RELAXED);
		__atomic_store_n(&e->state, SPOOL_HOT_READY, __ATOMIC_RELEASE);
		return;
	}
	__atomic_fetch_add(&h->dropped, weight, __ATOMIC_RELAXED);
}

/* ---- interpreted code ---- */

struct spool_code_entry *spool_code_entries(const struct spool *sp)
{
	return (struct spool_code_entry *)(sp->codes + sizeof(struct spool_codes_head));
}

long spool_code_get(struct spool *sp, uint64_t key, struct spool_code_entry **claimed)
{
	*claimed = NULL;
	if (!sp->hdr || !sp->codes || __atomic_load_n(&sp->nospace, __ATOMIC_RELAXED))
		return -1;
	struct spool_codes_head *h = (struct spool_codes_head *)sp->codes;
	struct spool_code_entry *tab = spool_code_entries(sp);
	uint64_t hash = key * 0x9e3779b97f4a7c15ull;
	hash ^= hash >> 29;
	for (uint32_t probe = 0; probe < SPOOL_CODE_PROBES; probe++) {
		uint32_t i = (uint32_t)(hash + probe) & (SPOOL_CODE_ENTRIES - 1);
		struct spool_code_entry *e = &tab[i];
		if (spool_room(sp, e, sizeof(*e)) < 0)
			break;
		uint32_t st = __atomic_load_n(&e->state, __ATOMIC_ACQUIRE);
		if (st == SPOOL_HOT_READY) {
			if (e->key == key)
				return i;
			continue;
		}
		if (st == SPOOL_HOT_BUSY ||
		    !__atomic_compare_exchange_n(&e->state, &st, SPOOL_HOT_BUSY, 0, __ATOMIC_ACQUIRE,
						 __ATOMIC_RELAXED))
			continue;
		e->key = key;
		__atomic_fetch_add(&h->used, 1, __ATOMIC_RELAXED);
		*claimed = e;
		return i;
	}
	__atomic_fetch_add(&h->dropped, 1, __ATOMIC_RELAXED);
	return -1;
}

void spool_code_publish(struct spool *sp, struct spool_code_entry *e)
{
	(void)sp;
	e->name[sizeof(e->name) - 1] = 0;
	e->file[sizeof(e->file) - 1] = 0;
	e->check = XXH64(e->name, sizeof(e->name) + sizeof(e->file), e->firstline);
	__atomic_store_n(&e->state, SPOOL_HOT_READY, __ATOMIC_RELEASE);
}
