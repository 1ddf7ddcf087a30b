/*
 * sym_lines.c — source file and line of an image address from DWARF line
 * tables (libdw). DWARF is costly to open and most reports never need it,
 * so it is opened on the first query, from the image file if it has
 * .debug_info, else from its separate debug file, each checked against the
 * build-id again. CUs missing from .debug_aranges are found through a
 * sorted table of every CU's ranges, built on the first miss. Relative
 * file names are joined with DW_AT_comp_dir, as addr2line does.
 * Single-threaded.
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>

/*
 * Open the DWARF of the image once: the recorded file if it has a
 * .debug_info, else the debug file (searched for now if open did not need
 * it). Each file is checked against the build-id again, since it may have
 * changed since report_image_open(). Returns 0 or a negative errno, cached.
 */
static int open_dwarf(struct report_image *im)
{
	struct report_elf_file f = { .fd = -1 };
	int i;

	if (im->dwarf_tried)
		return im->dwarf_err;
	im->dwarf_tried = true;
	im->dwarf_err = -ENODATA;
	for (i = 0; i < 2 && !im->dwarf; i++) {
		const char *cand = i == 0 ? (im->path_has_dwarf ? im->path : NULL) : NULL;

		if (i == 1) {
			/* the image's own DWARF is missing or unusable */
			if (!im->debug_searched && report_sym_find_debug_file(im, &f) == 0)
				report_sym_close_elf(&f);
			cand = im->debug_path;
		}
		if (!cand || report_sym_open_elf(cand, &f, NULL, 0) != 0)
			continue;
		if (!report_sym_build_id_ok(im, &f) || !report_sym_has_dwarf(f.elf) ||
		    !(im->dwarf = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL))) {
			report_sym_close_elf(&f);
			continue;
		}
		im->dwarf_fd = f.fd;
		im->dwarf_elf = f.elf;
		im->dwarf_err = 0;
	}
	return im->dwarf_err;
}

static int cu_range_cmp(const void *pa, const void *pb)
{
	const struct report_cu_range *a = pa, *b = pb;

	return a->lo < b->lo ? -1 : a->lo > b->lo;
}

/*
 * Collect every CU's address ranges (DW_AT_low_pc/high_pc or DW_AT_ranges)
 * into one sorted array. Done once, on the first address .debug_aranges
 * does not answer: without it each miss would walk all CUs (over a
 * millisecond per query on libc). Returns 0 or -ENOMEM.
 */
static int build_cu_ranges(struct report_image *im)
{
	Dwarf_CU *unit = NULL, *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die die;
	size_t cap = 0, i;

	im->cu_ranges_built = true;
	while (dwarf_get_units(im->dwarf, unit, &next, &version, &type, &die, NULL) == 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t off = 0;

		unit = next;
		if (type != DW_UT_compile && type != DW_UT_partial && type != DW_UT_skeleton)
			continue;
		while ((off = dwarf_ranges(&die, off, &base, &lo, &hi)) > 0) {
			if (hi <= lo)
				continue;
			if (im->ncu_ranges == cap) {
				struct report_cu_range *v;

				cap = cap ? 2 * cap : 256;
				v = realloc(im->cu_ranges, cap * sizeof *v);
				if (!v)
					return -ENOMEM;
				im->cu_ranges = v;
			}
			im->cu_ranges[im->ncu_ranges].lo = lo;
			im->cu_ranges[im->ncu_ranges].hi = hi;
			im->cu_ranges[im->ncu_ranges++].die = dwarf_dieoffset(&die);
		}
	}
	if (im->ncu_ranges == 0)
		return 0;
	qsort(im->cu_ranges, im->ncu_ranges, sizeof *im->cu_ranges, cu_range_cmp);
	for (i = 0; i < im->ncu_ranges; i++) {
		uint64_t prev = i ? im->cu_ranges[i - 1].maxhi : 0;

		im->cu_ranges[i].maxhi = im->cu_ranges[i].hi > prev ? im->cu_ranges[i].hi : prev;
	}
	return 0;
}

/*
 * The CU covering vaddr. .debug_aranges answers quickly when present;
 * GCC may leave a CU out of it (and clang omits it by default), so fall
 * back to the CUs' own ranges, searched like the symbol table.
 */
static bool find_cu(struct report_image *im, uint64_t vaddr, Dwarf_Die *cu)
{
	size_t lo = 0, hi, j;

	if (dwarf_addrdie(im->dwarf, vaddr, cu) != NULL)
		return true;
	if (!im->cu_ranges_built && build_cu_ranges(im) != 0)
		return false;
	hi = im->ncu_ranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (im->cu_ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = lo; j > 0 && im->cu_ranges[j - 1].maxhi > vaddr; j--) {
		const struct report_cu_range *r = &im->cu_ranges[j - 1];

		if (vaddr < r->hi)
			return dwarf_offdie(im->dwarf, r->die, cu) != NULL;
	}
	return false;
}

/*
 * libdw gives a line's file name as recorded: relative to the CU's
 * compilation directory when the compiler stored it so (prefix-mapped
 * builds such as Debian's). Join it with DW_AT_comp_dir, as addr2line does,
 * so that names mean the same in every CU; the result is cached so that
 * each distinct name is built once per image. Returns NULL on ENOMEM.
 */
static const char *join_comp_dir(struct report_image *im, Dwarf_Die *cu, const char *src)
{
	Dwarf_Attribute attr;
	const char *dir;
	size_t h, mask;
	char *p;

	if (src[0] == '/' || !(dir = dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr))) ||
	    !dir[0])
		return src;
	if (2 * (im->njoined + 1) > im->joined_cap) {
		size_t cap = im->joined_cap ? 2 * im->joined_cap : 64, i;
		struct joined *t = calloc(cap, sizeof *t);

		if (!t)
			return NULL;
		for (i = 0; i < im->joined_cap; i++) {
			if (!im->joined[i].key)
				continue;
			h = ((uintptr_t)im->joined[i].key >> 3) * 0x9e3779b97f4a7c15ull;
			for (h &= cap - 1; t[h].key; h = (h + 1) & (cap - 1))
				;
			t[h] = im->joined[i];
		}
		free(im->joined);
		im->joined = t;
		im->joined_cap = cap;
	}
	mask = im->joined_cap - 1;
	h = (((uintptr_t)src >> 3) * 0x9e3779b97f4a7c15ull) & mask;
	for (; im->joined[h].key; h = (h + 1) & mask)
		if (im->joined[h].key == src)
			return im->joined[h].path;
	if (asprintf(&p, "%s%s%s", dir, dir[strlen(dir) - 1] == '/' ? "" : "/", src) < 0)
		return NULL;
	im->joined[h].key = src;
	im->joined[h].path = p;
	im->njoined++;
	return p;
}

/* Contract in symbolize.h. */
int report_sym_source_line(struct report_image *im, uint64_t vaddr, const char **file,
			   int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *l;
	const char *src;
	int err, ln;

	if (!im || !file || !line)
		return -EINVAL;
	err = open_dwarf(im);
	if (err)
		return err;
	if (!find_cu(im, vaddr, &cu))
		return -ENOENT;
	l = dwarf_getsrc_die(&cu, vaddr);
	if (!l || dwarf_lineno(l, &ln) != 0 || !(src = dwarf_linesrc(l, NULL, NULL)))
		return -ENOENT;
	src = join_comp_dir(im, &cu, src);
	if (!src)
		return -ENOMEM;
	*file = src;
	*line = ln;
	return 0;
}

/* Contract in symbolize.h. */
int report_sym_cu(struct report_image *im, uint64_t vaddr, void *cu)
{
	int err;

	if (!im || !cu)
		return -EINVAL;
	err = open_dwarf(im);
	if (err)
		return err;
	return find_cu(im, vaddr, cu) ? 0 : -ENOENT;
}

/* Contract in symbolize.h. */
int report_sym_outer_line(struct report_image *im, uint64_t vaddr, const char **file, int *line)
{
	int err = report_sym_source_line(im, vaddr, file, line);
	if (err)
		return err;
	Dwarf_Die cu, *inner = NULL, *scopes = NULL;
	if (!find_cu(im, vaddr, &cu))
		return 0;
	/* Past an inlined instance dwarf_getscopes gives its abstract
	 * definition's scopes; the code it was inlined into nests the
	 * innermost DIE itself. The outermost inlined_subroutine before the
	 * subprogram holds the call in the function's own source. */
	int n = dwarf_getscopes(&cu, vaddr, &inner);
	if (n > 0)
		n = dwarf_getscopes_die(&inner[0], &scopes);
	free(inner);
	Dwarf_Die *call = NULL;
	for (int i = 0; i < n; i++) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag == DW_TAG_subprogram)
			break;
		if (tag == DW_TAG_inlined_subroutine)
			call = &scopes[i];
	}
	Dwarf_Attribute a;
	Dwarf_Word ln = 0, fi = 0;
	Dwarf_Files *files;
	size_t nfiles;
	const char *src;
	if (call && dwarf_formudata(dwarf_attr(call, DW_AT_call_line, &a), &ln) == 0 && ln &&
	    dwarf_formudata(dwarf_attr(call, DW_AT_call_file, &a), &fi) == 0 &&
	    dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && fi < nfiles &&
	    (src = dwarf_filesrc(files, fi, NULL, NULL)) && (src = join_comp_dir(im, &cu, src))) {
		*file = src;
		*line = (int)ln;
	}
	free(scopes);
	return 0;
}
