/*
 * Cache geometries: parse, this machine's, as text (cachegeom.h).
 * Not async-signal-safe (stdio, sysfs reads): start-up and the command.
 */
#include "spool/cachegeom.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse_size(const char *s, const char **end, uint64_t *out)
{
	char *e;
	unsigned long long v = strtoull(s, &e, 10);
	if (e == s)
		return -1;
	if (*e == 'K' || *e == 'k')
		v <<= 10, e++;
	else if (*e == 'M' || *e == 'm')
		v <<= 20, e++;
	else if (*e == 'G' || *e == 'g')
		v <<= 30, e++;
	*out = v;
	*end = e;
	return 0;
}

static int check_level(const char *name, const struct spool_cache_level *l, char *why, size_t whylen)
{
	if (l->line < 16 || l->line > 512 || (l->line & (l->line - 1))) {
		snprintf(why, whylen, "%s: line of %u bytes: a power of two from 16 to 512 is needed", name, l->line);
		return -1;
	}
	if (l->ways < 1 || l->ways > 64) {
		snprintf(why, whylen, "%s: %u ways: 1 to 64 are allowed", name, l->ways);
		return -1;
	}
	if (!l->size || l->size > (1u << 30) || l->size % ((uint64_t)l->ways * l->line)) {
		snprintf(why, whylen, "%s: %u bytes: a multiple of ways x line (%u), at most 1G, is needed", name,
			 l->size, l->ways * l->line);
		return -1;
	}
	return 0;
}

int spool_cache_geom_parse(const char *s, struct spool_cache_geom *g, char *why, size_t whylen)
{
	struct spool_cache_geom n = *g;
	const char *p = s;
	while (*p) {
		struct spool_cache_level *l;
		const char *name;
		if (!strncmp(p, "D1=", 3))
			l = &n.d1, name = "D1";
		else if (!strncmp(p, "LL=", 3))
			l = &n.ll, name = "LL";
		else {
			snprintf(why, whylen, "\"%s\": expected D1=SIZE:WAYS:LINE and/or LL=SIZE:WAYS:LINE, "
				 "comma-separated (as D1=32K:8:64,LL=32M:16:64)", s);
			return -1;
		}
		p += 3;
		uint64_t v[3];
		for (int i = 0; i < 3; i++) {
			if (parse_size(p, &p, &v[i]) < 0 || v[i] > (1ull << 30) || (i < 2 && *p++ != ':')) {
				snprintf(why, whylen, "\"%s\": %s wants SIZE:WAYS:LINE (as 32K:8:64)", s, name);
				return -1;
			}
		}
		*l = (struct spool_cache_level){ (uint32_t)v[0], (uint32_t)v[1], (uint32_t)v[2] };
		if (check_level(name, l, why, whylen) < 0)
			return -1;
		if (*p == ',')
			p++;
		else if (*p) {
			snprintf(why, whylen, "\"%s\": unexpected \"%s\"", s, p);
			return -1;
		}
	}
	if (n.ll.line < n.d1.line) {
		snprintf(why, whylen, "\"%s\": the last level's line (%u) is smaller than D1's (%u)", s, n.ll.line,
			 n.d1.line);
		return -1;
	}
	*g = n;
	return 0;
}

static int read_attr(const char *dir, const char *name, char *buf, size_t cap)
{
	char path[256];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	int ok = fgets(buf, (int)cap, f) != NULL;
	fclose(f);
	if (!ok)
		return -1;
	buf[strcspn(buf, "\n")] = 0;
	return 0;
}

void spool_cache_geom_machine(struct spool_cache_geom *g)
{
	*g = (struct spool_cache_geom){ { 32 << 10, 8, 64 }, { 8 << 20, 16, 64 } };
	int best = 0;
	for (int i = 0; i < 8; i++) {
		char dir[128], lv[16], type[32], size[32], ways[16], line[16];
		snprintf(dir, sizeof(dir), "/sys/devices/system/cpu/cpu0/cache/index%d", i);
		if (read_attr(dir, "level", lv, sizeof(lv)) < 0 || read_attr(dir, "type", type, sizeof(type)) < 0 ||
		    read_attr(dir, "size", size, sizeof(size)) < 0 ||
		    read_attr(dir, "ways_of_associativity", ways, sizeof(ways)) < 0 ||
		    read_attr(dir, "coherency_line_size", line, sizeof(line)) < 0)
			continue;
		uint64_t sz;
		const char *e;
		if (parse_size(size, &e, &sz) < 0)
			continue;
		struct spool_cache_level l = { (uint32_t)sz, (uint32_t)atoi(ways), (uint32_t)atoi(line) };
		char why[160];
		if (check_level("sysfs", &l, why, sizeof(why)) < 0)
			continue;
		int level = atoi(lv);
		if (level == 1 && !strcmp(type, "Data"))
			g->d1 = l;
		else if (level > best && !strcmp(type, "Unified"))
			g->ll = l, best = level;
	}
	if (g->ll.line < g->d1.line)
		g->ll.line = g->d1.line;
}

static const char *size_text(uint32_t v, char *buf, size_t cap)
{
	if (!(v & ((1u << 20) - 1)))
		snprintf(buf, cap, "%uM", v >> 20);
	else if (!(v & ((1u << 10) - 1)))
		snprintf(buf, cap, "%uK", v >> 10);
	else
		snprintf(buf, cap, "%u", v);
	return buf;
}

const char *spool_cache_geom_text(const struct spool_cache_geom *g, char *buf, size_t cap)
{
	char a[24], b[24];
	snprintf(buf, cap, "D1=%s:%u:%u,LL=%s:%u:%u", size_text(g->d1.size, a, sizeof(a)), g->d1.ways, g->d1.line,
		 size_text(g->ll.size, b, sizeof(b)), g->ll.ways, g->ll.line);
	return buf;
}
