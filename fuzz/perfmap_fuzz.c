/*
 * libFuzzer target for the perf-map reader (merge/jit.c): arbitrary bytes
 * are written to a temporary file and read with merge_perfmap_load, in
 * read chunks of a size the first input byte picks (1 to 256 bytes, so
 * lines straddle chunk boundaries, or 1 MiB), then looked up at every
 * entry's start, middle and end and at addresses taken from the input, and
 * the warning is formatted. The reader must keep its invariants (a lookup
 * answers a symbol covering the address, names are NUL-free strings of at
 * most MERGE_JIT_NAME_MAX bytes with no control characters) and never
 * crash. Names found then go through a [jit] profile's JITNAMES section
 * (encode, decode) and must come back equal.
 *
 *   make fuzz && build/fuzz/perfmap_fuzz fuzz/corpus/perfmap_fuzz
 */
#include "fuzz/fuzz_file.h"
#include "merge/jit.h"

#include <stddef.h>

static void check_name(const char *s)
{
	size_t n = strlen(s);
	if (!n || n > MERGE_JIT_NAME_MAX)
		abort();
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			abort();
}

/* The latest entry covering pc, found the slow way. */
static const struct merge_perfmap_sym *slow(const struct merge_perfmap *m, uint64_t pc)
{
	const struct merge_perfmap_sym *best = NULL;
	for (size_t i = 0; i < m->n; i++)
		if (m->v[i].start <= pc && pc < m->v[i].end && (!best || m->v[i].seq > best->seq))
			best = &m->v[i];
	return best;
}

static void probe(const struct merge_perfmap *m, uint64_t pc, struct merge_profile *p)
{
	const char *name = merge_perfmap_lookup(m, pc);
	const struct merge_perfmap_sym *want = slow(m, pc);
	/* The lookup's walk back is bounded: with few entries it is exact. */
	if (m->n < 1000 && (!name) != (!want))
		abort();
	if (m->n < 1000 && want && strcmp(name, m->names + want->name))
		abort();
	if (name) {
		check_name(name);
		if (merge_jit_add(p, name, strlen(name)) < 0)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct merge_perfmap m;
	struct merge_profile p, q;
	if (size < 1)
		return 0;
	size_t chunk = data[0] ? data[0] : 1 << 20;
	const char *path = fuzz_file(data + 1, size - 1, NULL);
	if (merge_perfmap_load(&m, path, 0, chunk) < 0)
		return 0;
	merge_profile_init(&p);
	for (size_t i = 0; i < m.n && i < 64; i++) {
		const struct merge_perfmap_sym *e = &m.v[i];
		if (e->end <= e->start || (i && e->start < m.v[i - 1].start))
			abort();
		probe(&m, e->start, &p);
		probe(&m, e->start + (e->end - e->start) / 2, &p);
		probe(&m, e->end - 1, &p);
		probe(&m, e->end, &p);
	}
	for (size_t i = 1; i + 8 <= size && i < 256; i += 8) {
		uint64_t pc;
		memcpy(&pc, data + i, 8);
		probe(&m, pc, &p);
	}
	FILE *null = fopen("/dev/null", "w");
	if (null) {
		merge_perfmap_warn(&m, path, null);
		fclose(null);
	}
	/* The names through a JITNAMES section and back. */
	merge_jit_compact(&p);
	size_t n;
	void *b = merge_jit_encode(&p, &n);
	merge_profile_init(&q);
	const char *why;
	if (b && (merge_jit_decode(&q, b, n, &why) < 0 || q.njit != p.njit))
		abort();
	for (size_t i = 0; i < p.njit; i++) {
		const char *a = merge_jit_name(&q, p.jit[i].key);
		if (!a || strcmp(a, p.jit_arena + p.jit[i].off))
			abort();
	}
	/* And arbitrary bytes as a JITNAMES section: reject or accept. */
	struct merge_profile r;
	merge_profile_init(&r);
	merge_jit_decode(&r, data, size, &why);
	merge_jit_free(&r);
	free(b);
	merge_jit_free(&q);
	merge_jit_free(&p);
	merge_perfmap_free(&m);
	return 0;
}

static void fix_checksum(uint8_t *buf, size_t n)
{
}
