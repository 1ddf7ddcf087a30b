/*
 * symbolize.c — function names and source lines for image addresses.
 *
 * Owns the per-image symbol table used by every report command: it finds
 * the right ELF file for a build-id (the recorded path if it still matches,
 * else a separate debug file), reads one symbol table from it (.symtab, or
 * .dynsym as a last resort) and keeps the FUNC symbols in one array sorted
 * by address, names copied into one string arena so that no ELF handle is
 * held for lookups. Two synthesized kinds fill the gaps a stripped image
 * leaves: "func@plt" for PLT stubs, and "sub_<addr>" for code that only an
 * .eh_frame FDE bounds (kept in a second array, consulted on a miss). The
 * workload is many lookups per image (every sampled
 * PC of a profile, often hundreds of thousands) against a table built once,
 * so lookups are a binary search plus a short backward walk bounded by a
 * prefix maximum of symbol ends (which makes nested or overlapping symbols
 * correct without an interval tree). DWARF is costly to open and most
 * reports never need it, so libdw is opened only on the first source-line
 * query, and the file is checked against the build-id again at that point.
 *
 * Files are read with ELF_C_READ (pread into memory, not mmap) so that an
 * image truncated or rewritten under us yields an error, not a SIGBUS.
 *
 * This file is the image object itself: report_image_open() decides which
 * file to trust (the recorded path while its build-id matches, else the
 * copy the database kept, else a debug file) and in what order symbols
 * are taken from it; the parts it calls are listed in sym_internal.h.
 *
 * Concurrency: none. Single-threaded use by the vprof command; not
 * async-signal-safe (malloc, stdio, libelf, libdw).
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Contract in symbolize.h. */
struct report_image *report_image_open(const char *path, const uint8_t *build_id,
				       size_t build_id_len, char *why, size_t whylen)
{
	return report_image_open_kept(NULL, path, build_id, build_id_len, why, whylen);
}

/*
 * The copy of the image the database kept (STORE/.build-id/xx/rest,
 * merge/image_store.h), opened into *f when it is there and has the build-id;
 * its path in kept[cap].
 */
static bool open_kept(struct report_image *im, const char *store, struct report_elf_file *f, char *kept,
		      size_t cap)
{
	char hex[2 * BUILD_ID_MAX + 1];

	if (!store || im->build_id_len < 2)
		return false;
	report_sym_hex(hex, sizeof hex, im->build_id, im->build_id_len);
	if (snprintf(kept, cap, "%s/.build-id/%.2s/%s", store, hex, hex + 2) >= (int)cap ||
	    report_sym_open_elf(kept, f, NULL, 0) != 0)
		return false;
	if (report_sym_build_id_ok(im, f))
		return true;
	report_sym_close_elf(f);
	return false;
}

/* Contract in symbolize.h. */
struct report_image *report_image_open_kept(const char *store, const char *path,
					    const uint8_t *build_id, size_t build_id_len,
					    char *why, size_t whylen)
{
	struct report_image *im;
	struct report_elf_file file = { .fd = -1 }, dbg = { .fd = -1 };
	char reason[512] = "", want[2 * BUILD_ID_MAX + 1], have[2 * BUILD_ID_MAX + 1];
	char kept[4096];
	bool file_ok = false;
	int n = 0, load_err = 0;

	if (build_id_len > BUILD_ID_MAX || (build_id_len > 0 && !build_id)) {
		report_sym_set_why(why, whylen, "bad build-id argument (%zu bytes)", build_id_len);
		return NULL;
	}
	im = calloc(1, sizeof *im);
	if (!im) {
		report_sym_set_why(why, whylen, "out of memory");
		return NULL;
	}
	im->dwarf_fd = -1;
	im->build_id_len = build_id_len;
	if (build_id_len)
		memcpy(im->build_id, build_id, build_id_len);
	if (store && !(im->store = strdup(store))) {
		n = -ENOMEM;
		goto fail_n;
	}

	if (!path || !*path) {
		snprintf(reason, sizeof reason, "no path recorded");
	} else if (report_sym_open_elf(path, &file, reason, sizeof reason) == 0) {
		if (report_sym_build_id_ok(im, &file)) {
			file_ok = true;
		} else {
			report_sym_hex(want, sizeof want, im->build_id, im->build_id_len);
			if (file.build_id_len > 0)
				report_sym_hex(have, sizeof have, file.build_id, (size_t)file.build_id_len);
			else
				snprintf(have, sizeof have, "none");
			snprintf(reason, sizeof reason,
				 "%s: build-id mismatch (file has %s, profile wants %s)", path,
				 have, want);
			report_sym_close_elf(&file);
		}
	}
	/* Rebuilt, replaced or deleted since: the copy the merge kept. */
	if (!file_ok && open_kept(im, store, &file, kept, sizeof kept)) {
		file_ok = true;
		path = kept;
	}
	if (file_ok) {
		im->path = strdup(path);
		if (!im->path) {
			n = -ENOMEM;
			goto fail_n;
		}
		/* The file's own id finds its debug file when none was given. */
		if (im->build_id_len == 0 && file.build_id_len > 0) {
			im->build_id_len = (size_t)file.build_id_len;
			memcpy(im->build_id, file.build_id, im->build_id_len);
		}
		report_sym_read_debuglink(im, file.elf);
		im->path_has_dwarf = report_sym_has_dwarf(file.elf);
		n = report_sym_try_load(im, &file, path, false, &load_err);
	}
	/* Stripped, replaced or unreadable: the debug file may still have it. */
	if (n == 0 && (file_ok || im->build_id_len > 0) && report_sym_find_debug_file(im, &dbg) == 0)
		n = report_sym_try_load(im, &dbg, im->debug_path, false, &load_err);
	if (n == 0 && file_ok)
		n = report_sym_try_load(im, &file, path, true, &load_err);
	if (n < 0)
		goto fail_n;
	if (file_ok) {
		int err = report_sym_collect_plt(im, file.elf);

		if (err == -ENOMEM) {
			n = err;
			goto fail_n;
		}
	}
	if (report_sym_build_table(im) != 0 || (file_ok && report_sym_collect_fdes(im, file.elf) != 0)) {
		n = -ENOMEM;
		goto fail_n;
	}
	if (!file_ok && !im->debug_path) {
		if (im->build_id_len > 0) {
			report_sym_hex(want, sizeof want, im->build_id, im->build_id_len);
			report_sym_set_why(why, whylen, "%s; no debug file for build-id %s%s", reason, want,
					   store ? ", and the database kept no copy of it" : "");
		} else {
			report_sym_set_why(why, whylen, "%s", reason);
		}
		goto fail;
	}
	/* A symbol table that exists but cannot be read means a damaged
	 * file; an image with no tables at all is merely stripped. */
	if (n == 0 && load_err < 0) {
		n = load_err;
		goto fail_n;
	}
	report_sym_close_elf(&file);
	report_sym_close_elf(&dbg);
	return im;
fail_n:
	report_sym_set_why(why, whylen, "%s: reading symbols: %s", path ? path : "?", strerror(-n));
fail:
	report_sym_close_elf(&file);
	report_sym_close_elf(&dbg);
	report_image_close(im);
	return NULL;
}

/* Contract in symbolize.h. */
const char *report_sym_lookup(struct report_image *im, uint64_t vaddr, uint64_t *sym_start,
			      uint64_t *sym_size)
{
	const struct report_sym *hit;

	if (!im)
		return NULL;
	hit = report_sym_search(im->syms, im->nsyms, vaddr);
	if (!hit)	/* code no symbol names: its unwind entry still bounds it */
		hit = report_sym_search(im->fdes, im->nfdes, vaddr);
	if (!hit)
		return NULL;
	if (sym_start)
		*sym_start = hit->start;
	if (sym_size)
		*sym_size = hit->end - hit->start;
	return im->names + hit->name;
}

/* Contract in symbolize.h. */
size_t report_image_nsyms(const struct report_image *im)
{
	return im ? im->nsyms : 0;
}

/* Contract in symbolize.h. */
const char *report_image_symfile(const struct report_image *im)
{
	return im ? im->symfile : NULL;
}

/* Contract in symbolize.h. */
const char *report_image_file(const struct report_image *im)
{
	return im ? im->path : NULL;
}

/* Contract in symbolize.h. */
void report_image_close(struct report_image *im)
{
	if (!im)
		return;
	for (size_t i = 0; i < im->joined_cap; i++)
		free(im->joined[i].path);
	free(im->joined);
	free(im->cu_ranges);
	if (im->dwarf)
		dwarf_end(im->dwarf);
	if (im->dwarf_elf)
		elf_end(im->dwarf_elf);
	if (im->dwarf_fd >= 0)
		close(im->dwarf_fd);
	free(im->raw);
	free(im->fdes);
	free(im->syms);
	free(im->names);
	free(im->symfile);
	free(im->path);
	free(im->debuglink);
	free(im->debug_path);
	free(im->store);
	free(im);
}
