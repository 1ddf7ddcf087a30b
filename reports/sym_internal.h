/*
 * sym_internal.h — what the files of the symbolizer share, and nothing
 * else includes. The public contract is symbolize.h; this header holds
 * the image object's layout and the calls between its parts:
 *
 *   symbolize.c     the image object: open (which source to trust), lookup, close
 *   sym_elf.c       one ELF file: safe open, build-id note, sections
 *   sym_debug.c     finding the separate debug file (build-id, debuglink)
 *   sym_table.c     symbol tables, PLT stub names, .eh_frame ranges
 *   sym_lines.c     DWARF line tables (libdw), opened on first use
 *   sym_demangle.c  C++ names through libstdc++'s __cxa_demangle
 *
 * Single-threaded, not async-signal-safe, like the rest of the vprof command.
 */
#ifndef VPROF_REPORTS_SYM_INTERNAL_H
#define VPROF_REPORTS_SYM_INTERNAL_H

#include "reports/symbolize.h"

#include <elfutils/libdw.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>

#define BUILD_ID_MAX 64		/* SHA-1 is 20; leave room for odd linkers */
#define DEFAULT_DEBUG_ROOT "/usr/lib/debug"

struct report_sym {
	uint64_t start;
	uint64_t end;		/* exclusive; == start when it can match nothing */
	uint64_t maxend;	/* max(end) over this entry and all before it */
	uint32_t name;		/* offset in the name arena */
	uint8_t sized;		/* st_size was non-zero */
};

/* What the sort and the alias choice need while the table is built. */
struct report_raw_sym {
	uint64_t start, size;
	uint64_t sec_lo, sec_hi;	/* the symbol's section */
	uint32_t name;
	uint8_t rank;			/* binding preference, lower wins */
};

struct report_image {
	struct report_sym *syms;
	size_t nsyms;
	char *names;
	size_t names_len, names_cap;
	char *symfile;		/* file the symbols came from */
	struct report_raw_sym *raw;	/* only while report_image_open() runs */
	size_t nraw, rawcap;
	struct report_sym *fdes;	/* unnamed code bounded by .eh_frame, "sub_<hex>" */
	size_t nfdes;

	uint8_t build_id[BUILD_ID_MAX];	/* what files must match (0 len: any) */
	size_t build_id_len;
	char *path;		/* the image file trusted: recorded or kept; NULL if none */
	char *debuglink;	/* .gnu_debuglink name of path */
	uint32_t debuglink_crc;
	bool path_has_dwarf;
	char *store;		/* the database's kept images (a debug root), or NULL */
	char *debug_path;	/* separate debug file, once found */
	bool debug_searched;

	/* DWARF, opened lazily on the first source-line query. */
	bool dwarf_tried;
	int dwarf_err;
	int dwarf_fd;
	Elf *dwarf_elf;
	Dwarf *dwarf;
	/* Relative source names joined with their CU's DW_AT_comp_dir, keyed
	 * by libdw's (stable) name pointer: open addressing, power-of-2. */
	struct joined { const char *key; char *path; } *joined;
	size_t njoined, joined_cap;
	/* CU address ranges, built on the first miss in .debug_aranges. */
	struct report_cu_range *cu_ranges;
	size_t ncu_ranges;
	bool cu_ranges_built;
};

/* One address range of one compilation unit, for the aranges fallback. */
struct report_cu_range {
	uint64_t lo, hi;	/* [lo, hi) */
	uint64_t maxhi;		/* max(hi) over this entry and all before it */
	Dwarf_Off die;		/* the CU's DIE offset */
};

/* One ELF file opened for reading, with what open_elf() learned of it. */
struct report_elf_file {
	int fd;
	Elf *elf;
	uint8_t build_id[BUILD_ID_MAX];
	int build_id_len;	/* or negative errno */
};

/* sym_elf.c */
void report_sym_set_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void report_sym_hex(char *out, size_t cap, const uint8_t *b, size_t n);
int report_sym_open_elf(const char *path, struct report_elf_file *f, char *why, size_t whylen);
void report_sym_close_elf(struct report_elf_file *f);
bool report_sym_build_id_ok(const struct report_image *im, const struct report_elf_file *f);
Elf_Scn *report_sym_find_section(Elf *elf, Elf64_Word type, const char *name);
bool report_sym_has_dwarf(Elf *elf);

/* sym_debug.c */
void report_sym_read_debuglink(struct report_image *im, Elf *elf);
int report_sym_find_debug_file(struct report_image *im, struct report_elf_file *f);

/* sym_table.c */
int report_sym_try_load(struct report_image *im, struct report_elf_file *f, const char *path,
			bool allow_dynsym, int *load_err);
int report_sym_collect_plt(struct report_image *im, Elf *elf);
int report_sym_build_table(struct report_image *im);
int report_sym_collect_fdes(struct report_image *im, Elf *elf);
const struct report_sym *report_sym_search(const struct report_sym *v, size_t n, uint64_t vaddr);

#endif
