/*
 * libFuzzer target for the call-stack readers (merge/stacks.c): arbitrary
 * bytes in a temporary file go to merge_stacks_read (an epoch's
 * stacks.EVENT.stk); stacks it accepts are merged into an empty set,
 * compacted, written and read back, as the merge does with them (a spool's
 * STACKS table is spool_fuzz's). Reject or accept, never crash or read out
 * of bounds.
 *
 * The first input byte is a mode: odd, the .stk checksum (XXH64 of
 * everything after the checksum field) is recomputed, so mutations reach
 * the records; even, the bytes go as they are. Seeds
 * (fuzz/corpus/stacks_fuzz/) are real stacks files.
 *
 *   make fuzz && build/fuzz/stacks_fuzz fuzz/corpus/stacks_fuzz
 */
#include "fuzz/fuzz_file.h"
#include "merge/profile_format.h"
#include "merge/stacks.h"

#include <stddef.h>
#include <stdio.h>
#include <unistd.h>
#include <xxhash.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct merge_stacks s, sum, back;
	char why[160], out[64];
	if (size < 1)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1, (data[0] & 1) ? fix_checksum : NULL);
	merge_stacks_init(&s);
	if (merge_stacks_read(path, &s, why, sizeof(why)) == 0) {
		merge_stacks_init(&sum);
		if (merge_stacks_merge(&sum, &s) == 0) {
			merge_stacks_compact(&sum);
			snprintf(out, sizeof(out), "/tmp/stacks_fuzz.%d.stk", (int)getpid());
			merge_stacks_init(&back);
			if (merge_stacks_write(out, &sum, 3) == 0 &&
			    merge_stacks_read(out, &back, why, sizeof(why)) != 0)
				__builtin_trap();       /* what we wrote, we read */
			merge_stacks_free(&back);
			unlink(out);
		}
		merge_stacks_free(&sum);
	}
	merge_stacks_free(&s);
	return 0;
}

static void fix_checksum(uint8_t *buf, size_t n)
{
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	if (n >= sizeof(struct merge_profile_header))
		((struct merge_profile_header *)buf)->checksum = XXH64(buf + ck, n - ck, 0);
}
