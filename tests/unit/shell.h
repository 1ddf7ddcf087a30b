/*
 * shell_run(out, cap, fmt, ...): run a shell command (popen), its stdout
 * into out (NUL-ended, cut at cap - 1 bytes); returns its exit status, or
 * 128 when it did not exit. For the tests that drive the vprof command.
 */
#ifndef VPROF_TESTS_SHELL_H
#define VPROF_TESTS_SHELL_H

#include <stdarg.h>
#include <stdio.h>
#include <sys/wait.h>

static inline int shell_run(char *out, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static inline int shell_run(char *out, size_t cap, const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	FILE *p = popen(cmd, "r");
	size_t n = 0;
	if (!p)
		return -1;
	while (n + 1 < cap) {
		size_t k = fread(out + n, 1, cap - n - 1, p);
		if (!k)
			break;
		n += k;
	}
	out[n] = 0;
	int st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#endif
