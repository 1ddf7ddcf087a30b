/*
 * libFuzzer target for the profile reader (merge/profile.c): arbitrary
 * bytes in a temporary file go to merge_profile_read; a profile it accepts
 * is named, merged into an empty one and compacted, as the merge and the
 * reports use it. Reject or accept, never crash or read out of bounds.
 *
 * The first input byte is a mode: odd, the checksum (XXH64 of everything
 * after the checksum field) is recomputed, so mutations reach the section
 * table and the records; even, the bytes go as they are. Seeds
 * (fuzz/corpus/profile_fuzz/) are real profiles: per image, unknown, stats.
 *
 *   make fuzz && build/fuzz/profile_fuzz fuzz/corpus/profile_fuzz
 */
#include "fuzz/fuzz_file.h"
#include "merge/profile.h"

#include <stddef.h>
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct merge_profile p, sum;
	char why[160], name[256];
	if (size < 1)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1, (data[0] & 1) ? fix_checksum : NULL);
	if (merge_profile_read(path, &p, why, sizeof(why)) == 0) {
		merge_profile_name(&p, name, sizeof(name));
		merge_profile_init(&sum);
		sum.event = p.event;
		sum.flags = p.flags;
		if (merge_profile_merge(&sum, &p) == 0)
			merge_profile_compact(&sum);
		merge_profile_free(&sum);
		merge_profile_free(&p);
	}
	return 0;
}

static void fix_checksum(uint8_t *buf, size_t n)
{
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	if (n >= sizeof(struct merge_profile_header))
		((struct merge_profile_header *)buf)->checksum = XXH64(buf + ck, n - ck, 0);
}
