/*
 * sym_demangle.c — C++ (Itanium ABI) names made readable by the toolchain's
 * own demangler, libstdc++'s __cxa_demangle, loaded with dlopen on first
 * use so that the vprof command does not link C++. Single-threaded.
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* Contract in symbolize.h. */
char *report_sym_demangle(const char *name)
{
	static cxa_demangle_fn demangle;
	static bool tried;
	int status = 0;
	char *out;

	/* Only "_Z" names are C++; asking about others wastes a call and
	 * may "demangle" a plain C name that happens to look like a type. */
	if (!name || strncmp(name, "_Z", 2) != 0)
		return NULL;
	if (!tried) {
		void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);

		tried = true;
		/* the handle is kept for the life of the process on purpose */
		if (h)
			demangle = (cxa_demangle_fn)dlsym(h, "__cxa_demangle");
	}
	if (!demangle)
		return NULL;
	out = demangle(name, NULL, NULL, &status);
	if (status != 0) {
		free(out);
		return NULL;
	}
	return out;
}
