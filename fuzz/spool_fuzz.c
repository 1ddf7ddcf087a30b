/*
 * libFuzzer target for the spool reader (merge/spool_read.c): arbitrary bytes
 * are written to a temporary file and opened with merge_spool_open; a
 * spool it accepts is walked whole (images, counts, value hotlists), as
 * `vprof merge` does. The reader must reject or accept, never crash or
 * read outside the file.
 *
 * The first input byte is a mode: odd, the header checksum is recomputed
 * over the rest before writing, so that mutations get past the checksum
 * to the layout and the records behind it; even, the bytes go as they are.
 * Seeds (fuzz/corpus/spool_fuzz/) are small but valid spools made by
 * fuzz/mkseed.c (one thread slot, a few shared entries and hotlists).
 *
 *   make fuzz && build/fuzz/spool_fuzz fuzz/corpus/spool_fuzz
 */
#include "fuzz/fuzz_file.h"
#include "merge/spool_read.h"
#include "merge/stacks.h"

#include <stddef.h>
#include <xxhash.h>

static int count_cb(uint64_t key, uint64_t count, void *arg)
{
	*(uint64_t *)arg += key ^ count;
	return 0;
}

static int hot_cb(const struct spool_hotlist *h, void *arg)
{
	*(uint64_t *)arg += h->key;
	return 0;
}

static int stack_cb(const struct spool_stack_entry *e, void *arg)
{
	(void)e;
	++*(uint64_t *)arg;
	return 0;
}

static int image_cb(const struct spool_image_record *r, void *arg)
{
	*(uint64_t *)arg += r->lo + r->hi + r->path[0];
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct spool sp;
	char why[160];
	uint64_t sink = 0, bad;
	if (size < 1)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1, (data[0] & 1) ? fix_checksum : NULL);
	if (merge_spool_open(&sp, path, why, sizeof(why)) == 0) {
		spool_images(&sp, image_cb, &sink);
		merge_spool_foreach(&sp, count_cb, &sink, &bad);
		merge_spool_values(&sp, hot_cb, &sink, &bad);
		merge_spool_stacks(&sp, stack_cb, &sink, &bad);
		merge_spool_close(&sp);
	}
	return 0;
}

static void fix_checksum(uint8_t *buf, size_t n)
{
	struct spool_static *s = (struct spool_static *)buf;
	if (n >= sizeof(*s))
		s->checksum = XXH64(s, offsetof(struct spool_static, checksum), 0);
}
