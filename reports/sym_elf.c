/*
 * sym_elf.c — one ELF file, opened so that a damaged one is refused at
 * once: section headers and every section inside the file (a truncated or
 * half-rewritten image gives an error, not a SIGBUS or half the symbols),
 * read with ELF_C_READ rather than mmap. Also the build-id note and section
 * look-ups every other part needs. Single-threaded; not async-signal-safe.
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

/* Fill the caller's one-line reason; why may be NULL when nobody asks. */

void report_sym_set_why(char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;

	if (!why || whylen == 0)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* libelf insists on being told the version once before anything else. */
static bool elf_ready(void)
{
	static int state;	/* 0 unknown, 1 ok, -1 failed */

	if (state == 0)
		state = elf_version(EV_CURRENT) == EV_NONE ? -1 : 1;
	return state > 0;
}

/* Lower-case hex of b[n] into out[cap], cut short (NUL-ended) if needed. */
void report_sym_hex(char *out, size_t cap, const uint8_t *b, size_t n)
{
	size_t i;

	if (cap == 0)
		return;
	out[0] = 0;
	for (i = 0; i < n && 2 * i + 2 < cap; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
}

/* The GNU build-id note in one block of notes: its length copied into
 * out[cap], -ERANGE if it does not fit, or 0 when the block has none. */
static int build_id_note(Elf_Data *d, uint8_t *out, size_t cap)
{
	GElf_Nhdr nh;
	size_t off = 0, noff, doff;

	while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
		if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
		    memcmp((char *)d->d_buf + noff, "GNU", 4) != 0)
			continue;
		if (nh.n_descsz > cap)
			return -ERANGE;
		memcpy(out, (char *)d->d_buf + doff, nh.n_descsz);
		return (int)nh.n_descsz;
	}
	return 0;
}

/*
 * Find NT_GNU_BUILD_ID in the notes of `elf`: section notes first (debug
 * files keep .note.gnu.build-id but their program headers describe nothing
 * loadable), program-header notes when there are no section headers.
 * Returns the length copied into out[cap], or -ENODATA / -ERANGE.
 */
static int elf_build_id(Elf *elf, uint8_t *out, size_t cap)
{
	Elf_Scn *scn = NULL;
	size_t nphdr, i;
	int n;

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		if ((n = build_id_note(d, out, cap)) != 0)
			return n;
	}
	if (elf_getphdrnum(elf, &nphdr) != 0)
		return -ENODATA;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		Elf_Data *d;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (d && (n = build_id_note(d, out, cap)) != 0)
			return n;
	}
	return -ENODATA;
}

/* Release what report_sym_open_elf() took; safe on a closed or never-opened file. */
void report_sym_close_elf(struct report_elf_file *f)
{
	if (f->elf)
		elf_end(f->elf);
	if (f->fd >= 0)
		close(f->fd);
	f->elf = NULL;
	f->fd = -1;
}

/*
 * Open `path` as an ELF file whose section headers are all inside the file
 * (so a truncated copy is refused here rather than half-read later), and
 * read its build-id. Returns 0, or a negative errno with a reason in why.
 */
int report_sym_open_elf(const char *path, struct report_elf_file *f, char *why, size_t whylen)
{
	struct stat st;
	GElf_Ehdr eh;
	Elf_Scn *scn = NULL;
	size_t shnum, shstrndx;
	int err;

	f->fd = -1;
	f->elf = NULL;
	f->build_id_len = -ENODATA;
	if (!elf_ready()) {
		report_sym_set_why(why, whylen, "libelf: %s", elf_errmsg(-1));
		return -ENOSYS;
	}
	/* O_NONBLOCK: a FIFO at the recorded path must not hang the report. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0) {
		err = -errno;
		report_sym_set_why(why, whylen, "%s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		report_sym_set_why(why, whylen, "%s: not a regular file", path);
		err = -ENOEXEC;
		goto fail;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh)) {
		report_sym_set_why(why, whylen, "%s: not an ELF file", path);
		err = -ENOEXEC;
		goto fail;
	}
	/* libelf quietly reports zero sections when the header table lies
	 * past the end of the file; check the raw header ourselves. */
	if (elf_getshdrnum(f->elf, &shnum) != 0 ||
	    elf_getshdrstrndx(f->elf, &shstrndx) != 0) {
		report_sym_set_why(why, whylen, "%s: corrupt ELF file (section headers)", path);
		err = -ENOEXEC;
		goto fail;
	}
	if (shnum < eh.e_shnum)
		shnum = eh.e_shnum;
	if (shnum == 0)
		shnum = 1;	/* e_shnum 0: the count is in section header 0 */
	if (eh.e_shoff != 0 && (eh.e_shoff > (uint64_t)st.st_size ||
				(uint64_t)shnum * eh.e_shentsize >
					(uint64_t)st.st_size - eh.e_shoff)) {
		report_sym_set_why(why, whylen, "%s: truncated or corrupt ELF file (section headers)",
			path);
		err = -ENOEXEC;
		goto fail;
	}
	/* A section cut short means the file was truncated or is being
	 * rewritten: better no answer than symbols of a half-written file. */
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			report_sym_set_why(why, whylen, "%s: corrupt ELF file (section header)", path);
			err = -ENOEXEC;
			goto fail;
		}
		if (sh.sh_type != SHT_NOBITS && sh.sh_size > 0 &&
		    (sh.sh_offset > (uint64_t)st.st_size ||
		     sh.sh_size > (uint64_t)st.st_size - sh.sh_offset)) {
			report_sym_set_why(why, whylen, "%s: truncated ELF file (section %zu ends past EOF)",
				path, elf_ndxscn(scn));
			err = -ENOEXEC;
			goto fail;
		}
	}
	f->build_id_len = elf_build_id(f->elf, f->build_id, sizeof f->build_id);
	return 0;
fail:
	report_sym_close_elf(f);
	return err;
}

/* Does file f carry the build-id the image wants? (Any file, if none.) */
bool report_sym_build_id_ok(const struct report_image *im, const struct report_elf_file *f)
{
	if (im->build_id_len == 0)
		return true;
	return f->build_id_len == (int)im->build_id_len &&
	       memcmp(f->build_id, im->build_id, im->build_id_len) == 0;
}

/* The first section of `type` (any if SHT_NULL) named `name` (any if NULL). */
Elf_Scn *report_sym_find_section(Elf *elf, Elf64_Word type, const char *name)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		const char *n;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (type != SHT_NULL && sh.sh_type != type)
			continue;
		if (name) {
			n = elf_strptr(elf, shstrndx, sh.sh_name);
			if (!n || strcmp(n, name) != 0)
				continue;
		}
		return scn;
	}
	return NULL;
}

/* A .debug_info with contents (not the NOBITS stub a stripped file keeps). */
bool report_sym_has_dwarf(Elf *elf)
{
	Elf_Scn *scn = report_sym_find_section(elf, SHT_NULL, ".debug_info");
	GElf_Shdr sh;

	if (!scn)
		scn = report_sym_find_section(elf, SHT_NULL, ".zdebug_info");
	return scn && gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
	       sh.sh_size > 0;
}

/* Contract in symbolize.h. */
int report_read_build_id(const char *path, uint8_t *out, size_t cap)
{
	struct report_elf_file f;
	int err;

	if (!path || (!out && cap > 0))
		return -EINVAL;
	err = report_sym_open_elf(path, &f, NULL, 0);
	if (err)
		return err;
	err = f.build_id_len;
	if (err > 0) {
		if ((size_t)err > cap)
			err = -ERANGE;
		else
			memcpy(out, f.build_id, (size_t)err);
	}
	report_sym_close_elf(&f);
	return err;
}
