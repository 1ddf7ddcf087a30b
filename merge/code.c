/*
 * Interpreted code in the merge (contract in code.h).
 */
#include "merge/code.h"
#include "merge/jit.h"

#include <stdio.h>
#include <string.h>
#include <xxhash.h>

#define FKEY_SHIFT 36            /* the function key: a name's key's top 28 bits */

uint64_t merge_code_fkey(uint64_t jit_key)
{
	return jit_key >> FKEY_SHIFT;
}

uint64_t merge_code_offset(const char *name, uint32_t line)
{
	uint64_t fkey = merge_code_fkey(merge_jit_key(name, strlen(name)));
	uint32_t lmax = (1u << MERGE_CODE_LINE_BITS) - 1;
	return fkey << MERGE_CODE_LINE_BITS | (line > lmax ? lmax : line);
}

const char *merge_code_name(const struct merge_profile *p, uint64_t offset)
{
	uint64_t fkey = offset >> MERGE_CODE_LINE_BITS, want = fkey << FKEY_SHIFT;
	size_t lo = 0, hi = p->njit;
	while (lo < hi) {               /* the first name whose key >= want */
		size_t mid = lo + (hi - lo) / 2;
		if (p->jit[mid].key < want)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < p->njit && merge_code_fkey(p->jit[lo].key) == fkey ? p->jit_arena + p->jit[lo].off
								       : NULL;
}

static int entry_ok(const struct spool_code_entry *e)
{
	if (e->state != SPOOL_HOT_READY || (e->lang != SPOOL_LANG_PYTHON && e->lang != SPOOL_LANG_LUA))
		return 0;
	if (XXH64(e->name, sizeof(e->name) + sizeof(e->file), e->firstline) != e->check)
		return 0;
	return memchr(e->name, 0, sizeof(e->name)) && memchr(e->file, 0, sizeof(e->file));
}

const struct spool_code_entry *merge_code_entry(const struct spool *sp, uint64_t pc)
{
	if (!sp->codes || !SPOOL_CODE_IS(pc) || SPOOL_CODE_IDX(pc) >= SPOOL_CODE_ENTRIES)
		return NULL;
	const struct spool_code_entry *e = &spool_code_entries(sp)[SPOOL_CODE_IDX(pc)];
	return entry_ok(e) ? e : NULL;
}

int merge_code_file(const char *path, char *out, size_t cap)
{
	static const char *const prefix[] = { MERGE_CODE_PREFIX, MERGE_CODE_PREFIX_LUA };
	for (int i = 0; i < 2; i++) {
		size_t n = strlen(prefix[i]), len = strlen(path);
		if (strncmp(path, prefix[i], n) || len <= n || path[len - 1] != ']')
			continue;
		snprintf(out, cap, "%.*s", (int)(len - n - 1), path + n);
		return 1;
	}
	return 0;
}

void merge_code_path(const struct spool_code_entry *e, char *out, size_t cap)
{
	snprintf(out, cap, "%s%s]", e->lang == SPOOL_LANG_LUA ? MERGE_CODE_PREFIX_LUA : MERGE_CODE_PREFIX,
		 e->file[0] ? e->file : "?");
}

int merge_code_foreach(const struct spool *sp,
		       int (*fn)(const struct spool_code_entry *e, void *arg), void *arg)
{
	if (!sp->codes)
		return 0;
	const struct spool_code_entry *tab = spool_code_entries(sp);
	for (uint32_t i = 0; i < SPOOL_CODE_ENTRIES; i++) {
		if (!entry_ok(&tab[i]))
			continue;
		int r = fn(&tab[i], arg);
		if (r)
			return r;
	}
	return 0;
}
