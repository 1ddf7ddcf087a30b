/*
 * Shared by the fuzz targets: the readers take a path, so each input is
 * written to one temporary file per process (rewritten in place, kept to
 * the input's size, removed at exit). fix, if given, may patch the bytes
 * (a checksum) first.
 * Not thread-safe; libFuzzer runs one input at a time.
 */
#ifndef VPROF_FUZZ_FILE_H
#define VPROF_FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void fix_checksum(uint8_t *buf, size_t n);   /* each target defines it */

static char g_fuzz_path[64];

static void fuzz_file_remove(void)
{
	unlink(g_fuzz_path);
}

static const char *fuzz_file(const uint8_t *data, size_t n, void (*fix)(uint8_t *, size_t))
{
	static int fd = -1;
	static uint8_t *buf;
	static size_t cap;
	if (fd < 0) {
		snprintf(g_fuzz_path, sizeof(g_fuzz_path), "/tmp/vprof-fuzz.XXXXXX");
		fd = mkstemp(g_fuzz_path);
		if (fd < 0)
			abort();
		atexit(fuzz_file_remove);
	}
	if (n > cap) {
		free(buf);
		cap = n;
		buf = malloc(cap);
		if (!buf)
			abort();
	}
	if (n)
		memcpy(buf, data, n);
	if (fix)
		fix(buf, n);
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, n, 0) != (ssize_t)n)
		abort();
	return g_fuzz_path;
}

#endif
