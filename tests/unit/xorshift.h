/*
 * xorshift64 (upcall/xorshift.h): the unit tests'
 * reproducible random numbers. The state is the caller's, so each test
 * keeps its own seed and sequence.
 */
#ifndef VPROF_TESTS_UNIT_XORSHIFT_H
#define VPROF_TESTS_UNIT_XORSHIFT_H

#include <stdint.h>

#include "upcall/xorshift.h"

/* The shipped generator (a zero seed is replaced, as there). */
static inline uint64_t xorshift64(uint64_t *s)
{
	return upcall_xorshift64(s);
}

#endif
