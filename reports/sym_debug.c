/*
 * sym_debug.c — the separate debug file of an image: by build-id under
 * $VPROF_DEBUG_DIRS roots then /usr/lib/debug (ROOT/.build-id/xx/rest.debug,
 * the layout Debian's -dbg packages and debuginfod's cache share), or by
 * the image's .gnu_debuglink name. A candidate is trusted only when its
 * build-id (or, with none, the debuglink CRC) matches. Single-threaded.
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Read the .gnu_debuglink name and CRC of a trusted file into im. */
void report_sym_read_debuglink(struct report_image *im, Elf *elf)
{
	Elf_Scn *scn = report_sym_find_section(elf, SHT_PROGBITS, ".gnu_debuglink");
	Elf_Data *d;
	size_t n, crc_off;

	if (!scn || !(d = elf_getdata(scn, NULL)) || !d->d_buf)
		return;
	n = strnlen(d->d_buf, d->d_size);
	crc_off = (n + 4) & ~(size_t)3;	/* name, NUL, pad to 4, CRC */
	if (n == 0 || n == d->d_size || crc_off + 4 > d->d_size || memchr(d->d_buf, '/', n))
		return;
	im->debuglink = strndup(d->d_buf, n);
	memcpy(&im->debuglink_crc, (char *)d->d_buf + crc_off, 4);
	/* The CRC is stored in the file's byte order; we only read x86-64. */
}

/* The CRC-32 (IEEE, reflected) that .gnu_debuglink uses. */
static int file_crc32(int fd, uint32_t *out)
{
	static uint32_t table[256];
	uint8_t buf[65536];
	uint32_t crc = 0xffffffffu;
	ssize_t n;
	off_t off = 0;
	int i, j;

	if (table[1] == 0) {
		for (i = 0; i < 256; i++) {
			uint32_t c = (uint32_t)i;

			for (j = 0; j < 8; j++)
				c = (c & 1) ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	while ((n = pread(fd, buf, sizeof buf, off)) > 0) {
		for (i = 0; i < n; i++)
			crc = table[(crc ^ buf[i]) & 0xff] ^ (crc >> 8);
		off += n;
	}
	if (n < 0)
		return -errno;
	*out = crc ^ 0xffffffffu;
	return 0;
}

/*
 * Is the debug-file candidate at `path` the one for this image? Build-ids
 * decide when there is one to compare; without any, the debuglink CRC does.
 * On success the file is left open in *f.
 */
static bool debug_candidate_ok(struct report_image *im, const char *path, bool by_link,
			       struct report_elf_file *f)
{
	uint32_t crc;

	if (access(path, R_OK) != 0 || report_sym_open_elf(path, f, NULL, 0) != 0)
		return false;
	if (im->build_id_len > 0) {
		if (report_sym_build_id_ok(im, f))
			return true;
	} else if (by_link && f->build_id_len < 0 &&
		   file_crc32(f->fd, &crc) == 0 && crc == im->debuglink_crc) {
		return true;
	}
	report_sym_close_elf(f);
	return false;
}

/* The directory part of im->path ("" for a bare name), into buf. */
static void path_dir(const char *path, char *buf, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 0;

	if (n >= cap)
		n = 0;
	memcpy(buf, path, n);
	buf[n] = 0;
}

/*
 * Try one root (ROOT/.build-id/xx/rest.debug, then ROOT/<dir>/<debuglink>).
 * Returns true with *f open on a match.
 */
static bool try_debug_root(struct report_image *im, const char *root, size_t rootlen,
			   struct report_elf_file *f, char **found)
{
	char p[4096], idhex[2 * BUILD_ID_MAX + 1], dir[4096];

	if (im->build_id_len >= 2) {
		report_sym_hex(idhex, sizeof idhex, im->build_id, im->build_id_len);
		if (snprintf(p, sizeof p, "%.*s/.build-id/%.2s/%s.debug", (int)rootlen, root,
			     idhex, idhex + 2) < (int)sizeof p &&
		    debug_candidate_ok(im, p, false, f))
			goto hit;
	}
	if (im->debuglink && im->path) {
		path_dir(im->path, dir, sizeof dir);
		if (snprintf(p, sizeof p, "%.*s%s%s/%s", (int)rootlen, root,
			     dir[0] == '/' ? "" : "/", dir, im->debuglink) < (int)sizeof p &&
		    debug_candidate_ok(im, p, true, f))
			goto hit;
	}
	return false;
hit:
	*found = strdup(p);
	if (!*found) {
		report_sym_close_elf(f);
		return false;
	}
	return true;
}

/*
 * Look for the separate debug file: $VPROF_DEBUG_DIRS roots first (so a
 * user can point at a tree of their own), then the database's kept images
 * (im->store), then /usr/lib/debug, then the debuglink beside the file in
 * <dir>/.debug/. Leaves *f open and sets
 * im->debug_path on success; remembers the search either way.
 */
int report_sym_find_debug_file(struct report_image *im, struct report_elf_file *f)
{
	const char *dirs = getenv("VPROF_DEBUG_DIRS");
	char p[4096], dir[4096];

	im->debug_searched = true;
	while (dirs && *dirs) {
		size_t n = strcspn(dirs, ":");

		if (n > 0 && try_debug_root(im, dirs, n, f, &im->debug_path))
			return 0;
		dirs += n;
		if (*dirs == ':')
			dirs++;
	}
	if (im->store && try_debug_root(im, im->store, strlen(im->store), f, &im->debug_path))
		return 0;
	if (try_debug_root(im, DEFAULT_DEBUG_ROOT, strlen(DEFAULT_DEBUG_ROOT), f,
			   &im->debug_path))
		return 0;
	if (im->debuglink && im->path) {
		path_dir(im->path, dir, sizeof dir);
		if (snprintf(p, sizeof p, "%s/.debug/%s", dir[0] ? dir : ".",
			     im->debuglink) < (int)sizeof p &&
		    debug_candidate_ok(im, p, true, f)) {
			im->debug_path = strdup(p);
			if (im->debug_path)
				return 0;
			report_sym_close_elf(f);
		}
	}
	return -ENOENT;
}
