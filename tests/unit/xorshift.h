/*
 * xorshift64 (Marsaglia 2003, shifts 13, 7, 17): the unit tests'
 * reproducible random numbers. The state is the caller's, so each test
 * keeps its own seed and sequence.
 */
#ifndef VPROF_TESTS_UNIT_XORSHIFT_H
#define VPROF_TESTS_UNIT_XORSHIFT_H

#include <stdint.h>

static inline uint64_t xorshift64(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

#endif
