/*
 * xorshift64 (Marsaglia 2003, shifts 13, 7, 17): the one pseudo-random
 * generator of vprof's shipped code (randomized first periods in upcall/,
 * the hotlists' coins in spool/, value sampling's choices in preload/,
 * the calibration's permutation in reports/). The state is the caller's;
 * a state of 0, which xorshift would keep forever, is replaced by a fixed
 * odd constant. AS-safe: no memory but *s.
 */
#ifndef VPROF_UPCALL_XORSHIFT_H
#define VPROF_UPCALL_XORSHIFT_H

#include <stdint.h>

static inline uint64_t upcall_xorshift64(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

#endif
