/*
 * The cache geometry a cache simulation uses (vprof run --cachesim,
 * preload/cachesim.c): the first-level data cache and the last level,
 * each size, ways and line bytes. Parsed from VPROF_CACHE / --cache, else
 * this machine's from sysfs. Shared by the library (at start-up, not in
 * the handler) and the vprof command (to refuse a bad --cache at once).
 */
#ifndef VPROF_SPOOL_CACHEGEOM_H
#define VPROF_SPOOL_CACHEGEOM_H

#include <stddef.h>
#include <stdint.h>

struct spool_cache_level {
	uint32_t size, ways, line;   /* bytes, associativity, line bytes */
};

struct spool_cache_geom {
	struct spool_cache_level d1, ll;
};

/* "D1=32K:8:64,LL=32M:16:64" (either part may be left out: g keeps it;
 * sizes take K, M or G). Each level: line a power of two from 16 to 512
 * bytes, 1 to 64 ways, size a multiple of ways x line, at most 1 GiB; the
 * last level's line no smaller than the first's. 0, or -1 with a reason
 * in why. */
int spool_cache_geom_parse(const char *s, struct spool_cache_geom *g, char *why, size_t whylen);

/* This machine's: the level-1 data cache and the highest unified level
 * from /sys/devices/system/cpu/cpu0/cache; where sysfs says nothing,
 * 32K:8:64 and 8M:16:64. */
void spool_cache_geom_machine(struct spool_cache_geom *g);

/* "D1=32K:8:64,LL=32M:16:64", the form parse reads. */
const char *spool_cache_geom_text(const struct spool_cache_geom *g, char *buf, size_t cap);

#endif
