/*
 * libFuzzer target for the symbolizer's ELF reading (reports/sym_elf.c,
 * sym_table.c, symbolize.c): arbitrary bytes in a temporary file are
 * opened as an image (report_image_open: section checks, build-id notes,
 * .symtab/.dynsym, PLT stub decoding, .eh_frame ranges, debuglink), every
 * symbol is looked up at its start, middle and end and at addresses from
 * the input, and the build-id is read again (report_read_build_id). Reject
 * or accept, never crash or read out of bounds; a lookup must answer a
 * symbol that covers the address. DWARF line tables (libdw) are not
 * fuzzed here: that parser is elfutils', not ours.
 *
 * The first input byte is a mode: bit 0, open with the file's own build-id
 * as the wanted one (as reports do), else with none. Seeds
 * (fuzz/corpus/elf_fuzz/) are small real ELF files made by scripts/
 * fuzz_elf_seeds.sh: static and dynamic, with and without symbols.
 *
 *   make fuzz && build/fuzz/elf_fuzz fuzz/corpus/elf_fuzz
 */
#include "fuzz/fuzz_file.h"
#include "reports/sym_internal.h"

#include <stddef.h>

static void probe(struct report_image *im, uint64_t a)
{
	uint64_t start = 0, size = 0;
	const char *name = report_sym_lookup(im, a, &start, &size);
	if (name && (strlen(name) > 1 << 20 || a < start || (size && a - start >= size)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t id[BUILD_ID_MAX];
	char why[300];
	if (size < 1)
		return 0;
	const char *path = fuzz_file(data + 1, size - 1, NULL);
	int n = report_read_build_id(path, id, sizeof(id));
	struct report_image *im = report_image_open(path, (data[0] & 1) && n > 0 ? id : NULL,
						    (data[0] & 1) && n > 0 ? (size_t)n : 0, why,
						    sizeof(why));
	if (!im)
		return 0;
	for (size_t i = 0; i < im->nsyms && i < 256; i++) {
		const struct report_sym *s = &im->syms[i];
		if (s->end < s->start || s->name >= im->names_len)
			abort();
		probe(im, s->start);
		probe(im, s->start + (s->end - s->start) / 2);
		probe(im, s->end);
		if (s->start)
			probe(im, s->start - 1);
	}
	for (size_t i = 0; i < im->nfdes && i < 64; i++)
		probe(im, im->fdes[i].start);
	for (size_t i = 1; i + 8 <= size && i < 512; i += 8) {
		uint64_t a;
		memcpy(&a, data + i, 8);
		probe(im, a);
		probe(im, a & 0xffffff);
	}
	report_image_nsyms(im);
	report_image_symfile(im);
	report_image_close(im);
	return 0;
}

static void fix_checksum(uint8_t *buf, size_t n)
{
}
