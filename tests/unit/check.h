/*
 * CHECK(cond, fmt, ...): one "PASS what" or "FAIL what" line for
 * tests/run; a failure sets g_fail, which main returns.
 */
#ifndef VPROF_TESTS_CHECK_H
#define VPROF_TESTS_CHECK_H

#include <stdio.h>

static int g_fail;
#define CHECK(cond, ...)                                   \
	do {                                               \
		if (cond) {                                \
			printf("PASS ");                   \
		} else {                                   \
			printf("FAIL ");                   \
			g_fail = 1;                        \
		}                                          \
		printf(__VA_ARGS__);                       \
		printf("\n");                              \
	} while (0)

#endif
