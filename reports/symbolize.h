/*
 * symbolize.h — image symbols and source lines for the report commands.
 *
 * A profile names an image by build-id and holds PCs as image-relative
 * virtual addresses (the sampled PC minus the load bias, i.e. what st_value
 * means in that file). This library turns such an address back into a
 * function name and, when DWARF can be found, a source file and line.
 *
 * Nothing here is async-signal-safe: it allocates, opens files and calls
 * libelf/libdw. It is meant for the `vprof` command, which uses it from one
 * thread; a struct report_image must not be shared between threads.
 */
#ifndef VPROF_REPORTS_SYMBOLIZE_H
#define VPROF_REPORTS_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

struct report_image;

/*
 * Open the symbols of the image that was loaded from `path` with build-id
 * `build_id` (build_id_len bytes; 0 when the image had none or it is
 * unknown, and then the file is trusted as it is).
 *
 * The file at `path` is used only if its NT_GNU_BUILD_ID note matches, since
 * it may have been rebuilt or replaced since the profile was taken. Symbols
 * come from its .symtab, else from a separate debug file (found by build-id
 * under each root of $VPROF_DEBUG_DIRS, a colon-separated list, then under
 * /usr/lib/debug, as ROOT/.build-id/xx/rest.debug; or by the file's
 * .gnu_debuglink name in ROOT/<dir of path>/ and <dir of path>/.debug/),
 * else from its .dynsym; PLT stubs are named "func@plt" (from the image
 * file's own code and relocations, so not when only a debug file matched).
 * A debug file is used only if its build-id (or, when
 * there is no build-id at all, the debuglink CRC) matches.
 *
 * Returns NULL, with a one-line reason in why[whylen], only when neither the
 * file nor a debug file can be used. An image without any symbols still
 * opens; its lookups then fail. `path` may be NULL (look up by build-id only).
 */
struct report_image *report_image_open(const char *path, const uint8_t *build_id,
				       size_t build_id_len, char *why, size_t whylen);

/*
 * As report_image_open(), with the images a database kept at merge time
 * (`store`: DB/images, layout in merge/image_store.h; NULL: none): when the
 * file at `path` has another build-id or is gone, the kept copy
 * STORE/.build-id/xx/rest is the image file, and STORE is a debug root
 * after those of $VPROF_DEBUG_DIRS, so a rebuilt program's earlier
 * profiles keep their names and lines.
 */
struct report_image *report_image_open_kept(const char *store, const char *path,
					    const uint8_t *build_id, size_t build_id_len,
					    char *why, size_t whylen);

/*
 * The image file whose bytes are the profiled build (the recorded path, or
 * the database's kept copy), or NULL when only a debug file matched.
 * Valid until report_image_close().
 */
const char *report_image_file(const struct report_image *im);

/*
 * The function containing `vaddr` (an ELF virtual address of the image), or
 * NULL. A sized FUNC symbol contains [st_value, st_value + st_size); if none
 * does, an unsized one (st_size 0, hand-written assembly) is taken to extend
 * to the next symbol or the end of its section, whichever comes first, as
 * perf does. Among aliases at one address the choice is deterministic:
 * sized before unsized, global before weak before local, unversioned
 * before "name@VERSION", fewer leading underscores, then the smallest name. The name stays valid until
 * report_image_close(). sym_start/sym_size (either may be NULL) receive the
 * symbol's start and the extent used for the match. O(log n).
 *
 * Code that no symbol names (static functions of a stripped image, .cold
 * parts) is still bounded by its unwind entry: when the image file itself
 * matched, an address inside an .eh_frame FDE that no symbol covers gets
 * the name "sub_<hex start>" (the objdump/IDA convention) and the FDE's
 * range, so such code shows as distinct procedures, not one unknown
 * bucket. Callers can tell these names by the "sub_" prefix.
 */
const char *report_sym_lookup(struct report_image *im, uint64_t vaddr,
			      uint64_t *sym_start, uint64_t *sym_size);

/*
 * The source file and line of the instruction at `vaddr`, from the DWARF
 * line table of the image or of its debug file (opened on first use, checked
 * against the build-id again). *file stays valid until report_image_close().
 * Returns 0, or -ENODATA when the image has no usable DWARF, -ENOENT when
 * the address is not covered, -EINVAL for bad arguments.
 */
int report_sym_source_line(struct report_image *im, uint64_t vaddr,
			   const char **file, int *line);

/*
 * The DWARF compilation unit covering `vaddr`, from the same DWARF as
 * report_sym_source_line() (opened on first use); *cu is a libdw
 * Dwarf_Die (passed as void * so that this header needs no libdw), valid
 * until report_image_close(). Returns 0, or a negative errno as
 * report_sym_source_line() does.
 */
int report_sym_cu(struct report_image *im, uint64_t vaddr, void *cu);

/*
 * As report_sym_source_line(), but where vaddr lies in code inlined into
 * its function, the line of the outermost inlined call: the line in the
 * function's own source (an allocation inlined from a library header
 * reads as the user's line that led to it).
 */
int report_sym_outer_line(struct report_image *im, uint64_t vaddr, const char **file, int *line);

/* Free everything report_image_open() made. NULL is allowed. */
void report_image_close(struct report_image *im);

/* How many symbols the lookup table holds (for reports and tests). */
size_t report_image_nsyms(const struct report_image *im);

/*
 * Which file the symbols were read from (path, debug file), or NULL when the
 * image has no symbols. Valid until report_image_close().
 */
const char *report_image_symfile(const struct report_image *im);

/*
 * The demangled form of a C++ (Itanium ABI, "_Z...") symbol name, in a
 * malloc'd string the caller frees; NULL when the name is not mangled, is
 * malformed, or no demangler is available. The demangler is libstdc++'s
 * __cxa_demangle, loaded with dlopen on first use so that the vprof command
 * does not link C++; without libstdc++ names simply stay mangled.
 */
char *report_sym_demangle(const char *name);

/*
 * Copy the NT_GNU_BUILD_ID of the ELF file at `path` into out[cap].
 * Returns its length, or -ENOENT/-EACCES/... from open, -ENOEXEC when the
 * file is not a readable ELF file, -ENODATA when it has no build-id note,
 * -ERANGE when cap is too small.
 */
int report_read_build_id(const char *path, uint8_t *out, size_t cap);

#endif
