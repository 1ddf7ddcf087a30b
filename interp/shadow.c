/* interp/shadow.c — the store-buffer mode (see shadow.h).
 *
 * Loads copy the real bytes first (fault-safe: a load that would fault
 * fails as it would outside the shadow), then replay the log over them in
 * order, so the latest store to a byte wins. Stores append; a store that
 * continues the previous entry of the same instruction extends it.
 *
 * Concurrency: per thread, AS-safe.
 */
#include <errno.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/shadow.h"

__thread struct interp_shadow *interp_shadow_cur __attribute__((tls_model("initial-exec")));

/* mem.c's raw routines (they never consult the shadow). */
int interp_mem_copy_raw(void *dst, const void *src, size_t n);

void interp_shadow_begin(struct interp_shadow *sh)
{
	sh->n = sh->used = sh->floor = sh->overflow = 0;
	sh->nld = sh->ldused = sh->ld_full = 0;
	interp_shadow_cur = sh;
}

void interp_shadow_end(void)
{
	interp_shadow_cur = NULL;
}

int interp_shadow_load(struct interp_shadow *sh, void *dst, uint64_t src, size_t n)
{
	uint8_t *d = dst;

	if (interp_mem_copy_raw(dst, (const void *)src, n))
		return -EFAULT;
	struct interp_shadow_entry *l = sh->nld ? &sh->ld[sh->nld - 1] : NULL;
	if (l && l->addr + l->size == src && l->off + l->size == sh->ldused &&
	    sh->ldused + n <= INTERP_SHADOW_BYTES) {
		/* REP MOVS/LODS/SCAS: one entry per run of bytes */
		memcpy(sh->lddata + sh->ldused, dst, n);
		sh->ldused += (uint32_t)n;
		l->size += (uint32_t)n;
	} else if (sh->nld < INTERP_SHADOW_LOADS && sh->ldused + n <= INTERP_SHADOW_BYTES) {
		sh->ld[sh->nld].addr = src;
		sh->ld[sh->nld].size = (uint32_t)n;
		sh->ld[sh->nld].off = sh->ldused;
		memcpy(sh->lddata + sh->ldused, dst, n);
		sh->ldused += (uint32_t)n;
		sh->nld++;
	} else {
		sh->ld_full = 1;
	}
	for (uint32_t i = 0; i < sh->n; i++) {
		const struct interp_shadow_entry *e = &sh->e[i];
		uint64_t lo = e->addr > src ? e->addr : src;
		uint64_t hi = e->addr + e->size < src + n ? e->addr + e->size : src + n;
		if (lo < hi)
			memcpy(d + (lo - src), sh->data + e->off + (lo - e->addr), hi - lo);
	}
	return 0;
}

int interp_shadow_store(struct interp_shadow *sh, uint64_t dst, const void *src, size_t n)
{
	if (sh->n > sh->floor) {
		struct interp_shadow_entry *l = &sh->e[sh->n - 1];
		if (l->addr + l->size == dst && l->off + l->size == sh->used &&
		    sh->used + n <= INTERP_SHADOW_BYTES) {
			memcpy(sh->data + sh->used, src, n);
			sh->used += (uint32_t)n;
			l->size += (uint32_t)n;
			return 0;
		}
	}
	if (sh->n >= INTERP_SHADOW_ENTRIES || sh->used + n > INTERP_SHADOW_BYTES) {
		sh->overflow = 1;
		return 0;       /* callers ignore it; the overflow flag tells */
	}
	sh->e[sh->n].addr = dst;
	sh->e[sh->n].size = (uint32_t)n;
	sh->e[sh->n].off = sh->used;
	memcpy(sh->data + sh->used, src, n);
	sh->used += (uint32_t)n;
	sh->n++;
	return 0;
}

/* Not atomic: nothing is written, and co-simulation compares against the
 * native execution, which does the real locked operation. */
int interp_shadow_cas(struct interp_shadow *sh, uint64_t addr, void *expect,
		      const void *desired, unsigned size)
{
	uint8_t cur[16];

	if (interp_shadow_load(sh, cur, addr, size) || interp_mem_wprobe(addr, size))
		return -EFAULT;
	if (memcmp(cur, expect, size) == 0) {
		interp_shadow_store(sh, addr, desired, size);
		return 1;
	}
	memcpy(expect, cur, size);
	return 0;
}

static int stored(const struct interp_shadow *sh, uint32_t nst, uint64_t a)
{
	for (uint32_t i = 0; i < nst; i++)
		if (a - sh->e[i].addr < sh->e[i].size)
			return 1;
	return 0;
}

int interp_shadow_raced(const struct interp_shadow *sh, uint32_t nld, uint32_t nst, int ro_only)
{
	if (nld > sh->nld)
		return sh->ld_full ? -1 : 0;
	for (uint32_t i = 0; i < nld; i++) {
		const struct interp_shadow_entry *l = &sh->ld[i];
		for (uint32_t o = 0; o < l->size; o += 64) {
			uint8_t now[64];
			uint32_t n = l->size - o < 64 ? l->size - o : 64;
			if (interp_mem_copy_raw(now, (const void *)(l->addr + o), n))
				return 1;       /* unmapped since: changed */
			for (uint32_t j = 0; j < n; j++)
				if (now[j] != sh->lddata[l->off + o + j] && !stored(sh, nst, l->addr + o + j) &&
				    (!ro_only || interp_mem_wprobe(l->addr + o + j, 1) != 0))
					return 1;
		}
	}
	return 0;
}

int interp_shadow_inputs_changed(const struct interp_shadow *sh, uint32_t ld_lo, uint32_t ld_hi,
				 uint32_t st_hi)
{
	if (ld_hi > sh->nld)
		ld_hi = sh->nld;
	for (uint32_t i = ld_lo; i < ld_hi; i++) {
		const struct interp_shadow_entry *l = &sh->ld[i];
		for (uint32_t o = 0; o < l->size; o += 64) {
			uint8_t want[64], now[64];
			uint32_t n = l->size - o < 64 ? l->size - o : 64;
			uint64_t a = l->addr + o;
			memcpy(want, sh->lddata + l->off + o, n);
			for (uint32_t k = 0; k < st_hi; k++) {
				const struct interp_shadow_entry *e = &sh->e[k];
				uint64_t lo = e->addr > a ? e->addr : a;
				uint64_t hi = e->addr + e->size < a + n ? e->addr + e->size : a + n;
				if (lo < hi)
					memcpy(want + (lo - a), sh->data + e->off + (lo - e->addr), hi - lo);
			}
			if (interp_mem_copy_raw(now, (const void *)a, n) || memcmp(now, want, n))
				return 1;
		}
	}
	return 0;
}
