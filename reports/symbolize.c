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
 * Concurrency: none. Single-threaded use by the vprof command; not
 * async-signal-safe (malloc, stdio, libelf, libdw).
 */
#include "reports/symbolize.h"

#include <dlfcn.h>
#include <dwarf.h>
#include <elf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_ID_MAX 64		/* SHA-1 is 20; leave room for odd linkers */
#define DEFAULT_DEBUG_ROOT "/usr/lib/debug"

struct sym {
	uint64_t start;
	uint64_t end;		/* exclusive; == start when it can match nothing */
	uint64_t maxend;	/* max(end) over this entry and all before it */
	uint32_t name;		/* offset in the name arena */
	uint8_t sized;		/* st_size was non-zero */
};

/* What the sort and the alias choice need while the table is built. */
struct raw_sym {
	uint64_t start, size;
	uint64_t sec_lo, sec_hi;	/* the symbol's section */
	uint32_t name;
	uint8_t rank;			/* binding preference, lower wins */
};

struct report_image {
	struct sym *syms;
	size_t nsyms;
	char *names;
	size_t names_len, names_cap;
	char *symfile;		/* file the symbols came from */
	struct raw_sym *raw;	/* only while report_image_open() runs */
	size_t nraw, rawcap;
	struct sym *fdes;	/* unnamed code bounded by .eh_frame, "sub_<hex>" */
	size_t nfdes;

	uint8_t build_id[BUILD_ID_MAX];	/* what files must match (0 len: any) */
	size_t build_id_len;
	char *path;		/* recorded path, NULL if unusable */
	char *debuglink;	/* .gnu_debuglink name of path */
	uint32_t debuglink_crc;
	bool path_has_dwarf;
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
	struct cu_range *cu_ranges;
	size_t ncu_ranges;
	bool cu_ranges_built;
};

/* One address range of one compilation unit, for the aranges fallback. */
struct cu_range {
	uint64_t lo, hi;	/* [lo, hi) */
	uint64_t maxhi;		/* max(hi) over this entry and all before it */
	Dwarf_Off die;		/* the CU's DIE offset */
};

/* One ELF file opened for reading, with what open_elf() learned of it. */
struct elf_file {
	int fd;
	Elf *elf;
	uint8_t build_id[BUILD_ID_MAX];
	int build_id_len;	/* or negative errno */
};

/* Fill the caller's one-line reason; why may be NULL when nobody asks. */
static void set_why(char *why, size_t whylen, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void set_why(char *why, size_t whylen, const char *fmt, ...)
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
static void hex(char *out, size_t cap, const uint8_t *b, size_t n)
{
	size_t i;

	if (cap == 0)
		return;
	out[0] = 0;
	for (i = 0; i < n && 2 * i + 2 < cap; i++)
		snprintf(out + 2 * i, 3, "%02x", b[i]);
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

	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4) != 0)
				continue;
			if (nh.n_descsz > cap)
				return -ERANGE;
			memcpy(out, (char *)d->d_buf + doff, nh.n_descsz);
			return (int)nh.n_descsz;
		}
	}
	if (elf_getphdrnum(elf, &nphdr) != 0)
		return -ENODATA;
	for (i = 0; i < nphdr; i++) {
		GElf_Phdr ph;
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_NOTE)
			continue;
		d = elf_getdata_rawchunk(elf, ph.p_offset, ph.p_filesz,
					 ph.p_align == 8 ? ELF_T_NHDR8 : ELF_T_NHDR);
		if (!d)
			continue;
		while ((off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
			    memcmp((char *)d->d_buf + noff, "GNU", 4) != 0)
				continue;
			if (nh.n_descsz > cap)
				return -ERANGE;
			memcpy(out, (char *)d->d_buf + doff, nh.n_descsz);
			return (int)nh.n_descsz;
		}
	}
	return -ENODATA;
}

/* Release what open_elf() took; safe on a closed or never-opened file. */
static void close_elf(struct elf_file *f)
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
static int open_elf(const char *path, struct elf_file *f, char *why, size_t whylen)
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
		set_why(why, whylen, "libelf: %s", elf_errmsg(-1));
		return -ENOSYS;
	}
	/* O_NONBLOCK: a FIFO at the recorded path must not hang the report. */
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (f->fd < 0) {
		err = -errno;
		set_why(why, whylen, "%s: %s", path, strerror(-err));
		return err;
	}
	if (fstat(f->fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		set_why(why, whylen, "%s: not a regular file", path);
		err = -ENOEXEC;
		goto fail;
	}
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	if (!f->elf || elf_kind(f->elf) != ELF_K_ELF || !gelf_getehdr(f->elf, &eh)) {
		set_why(why, whylen, "%s: not an ELF file", path);
		err = -ENOEXEC;
		goto fail;
	}
	/* libelf quietly reports zero sections when the header table lies
	 * past the end of the file; check the raw header ourselves. */
	if (elf_getshdrnum(f->elf, &shnum) != 0 ||
	    elf_getshdrstrndx(f->elf, &shstrndx) != 0) {
		set_why(why, whylen, "%s: corrupt ELF file (section headers)", path);
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
		set_why(why, whylen, "%s: truncated or corrupt ELF file (section headers)",
			path);
		err = -ENOEXEC;
		goto fail;
	}
	/* A section cut short means the file was truncated or is being
	 * rewritten: better no answer than symbols of a half-written file. */
	while ((scn = elf_nextscn(f->elf, scn)) != NULL) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh)) {
			set_why(why, whylen, "%s: corrupt ELF file (section header)", path);
			err = -ENOEXEC;
			goto fail;
		}
		if (sh.sh_type != SHT_NOBITS && sh.sh_size > 0 &&
		    (sh.sh_offset > (uint64_t)st.st_size ||
		     sh.sh_size > (uint64_t)st.st_size - sh.sh_offset)) {
			set_why(why, whylen, "%s: truncated ELF file (section %zu ends past EOF)",
				path, elf_ndxscn(scn));
			err = -ENOEXEC;
			goto fail;
		}
	}
	f->build_id_len = elf_build_id(f->elf, f->build_id, sizeof f->build_id);
	return 0;
fail:
	close_elf(f);
	return err;
}

/* Does file f carry the build-id the image wants? (Any file, if none.) */
static bool build_id_ok(const struct report_image *im, const struct elf_file *f)
{
	if (im->build_id_len == 0)
		return true;
	return f->build_id_len == (int)im->build_id_len &&
	       memcmp(f->build_id, im->build_id, im->build_id_len) == 0;
}

/* The first section of `type` (any if SHT_NULL) named `name` (any if NULL). */
static Elf_Scn *find_section(Elf *elf, Elf64_Word type, const char *name)
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
static bool has_dwarf(Elf *elf)
{
	Elf_Scn *scn = find_section(elf, SHT_NULL, ".debug_info");
	GElf_Shdr sh;

	if (!scn)
		scn = find_section(elf, SHT_NULL, ".zdebug_info");
	return scn && gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
	       sh.sh_size > 0;
}

/* Read the .gnu_debuglink name and CRC of a trusted file into im. */
static void read_debuglink(struct report_image *im, Elf *elf)
{
	Elf_Scn *scn = find_section(elf, SHT_PROGBITS, ".gnu_debuglink");
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
			       struct elf_file *f)
{
	uint32_t crc;

	if (access(path, R_OK) != 0 || open_elf(path, f, NULL, 0) != 0)
		return false;
	if (im->build_id_len > 0) {
		if (build_id_ok(im, f))
			return true;
	} else if (by_link && f->build_id_len < 0 &&
		   file_crc32(f->fd, &crc) == 0 && crc == im->debuglink_crc) {
		return true;
	}
	close_elf(f);
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
			   struct elf_file *f, char **found)
{
	char p[4096], idhex[2 * BUILD_ID_MAX + 1], dir[4096];

	if (im->build_id_len >= 2) {
		hex(idhex, sizeof idhex, im->build_id, im->build_id_len);
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
		close_elf(f);
		return false;
	}
	return true;
}

/*
 * Look for the separate debug file: $VPROF_DEBUG_DIRS roots first (so a
 * user can point at a tree of their own), then /usr/lib/debug, then the
 * debuglink beside the file in <dir>/.debug/. Leaves *f open and sets
 * im->debug_path on success; remembers the search either way.
 */
static int find_debug_file(struct report_image *im, struct elf_file *f)
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
			close_elf(f);
		}
	}
	return -ENOENT;
}

/*
 * Copy a name into the arena, giving its offset (offsets, not pointers,
 * because the arena moves as it grows). Returns 0, -ENOMEM or -EOVERFLOW.
 */
static int add_name(struct report_image *im, const char *s, uint32_t *off)
{
	size_t n = strlen(s) + 1;

	if (im->names_len + n > UINT32_MAX)
		return -EOVERFLOW;
	if (im->names_len + n > im->names_cap) {
		size_t cap = im->names_cap ? im->names_cap * 2 : 4096;
		char *p;

		while (cap < im->names_len + n)
			cap *= 2;
		p = realloc(im->names, cap);
		if (!p)
			return -ENOMEM;
		im->names = p;
		im->names_cap = cap;
	}
	memcpy(im->names + im->names_len, s, n);
	*off = (uint32_t)im->names_len;
	im->names_len += n;
	return 0;
}



/* Which alias a report should show: global, then weak, then local. */
static int bind_rank(unsigned char bind)
{
	switch (bind) {
	case STB_GLOBAL:
	case STB_GNU_UNIQUE:
		return 0;
	case STB_WEAK:
		return 1;
	default:
		return 2;
	}
}

/* "memcpy" over "__memcpy": internal aliases carry more underscores. */
static size_t leading_underscores(const char *s)
{
	size_t n = 0;

	while (s[n] == '_')
		n++;
	return n;
}

/* Address order; at one address, the preferred alias first. */
static int raw_cmp(const void *pa, const void *pb, void *names)
{
	const struct raw_sym *a = pa, *b = pb;
	const char *na = (const char *)names + a->name, *nb = (const char *)names + b->name;
	size_t ua, ub;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if ((a->size != 0) != (b->size != 0))
		return a->size != 0 ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	/* "memcpy" reads better than the .symtab alias "memcpy@@GLIBC_2.14" */
	if ((strchr(na, '@') == NULL) != (strchr(nb, '@') == NULL))
		return strchr(na, '@') == NULL ? -1 : 1;
	ua = leading_underscores(na);
	ub = leading_underscores(nb);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(na, nb);
}

/* Room for one more raw symbol in im->raw; NULL when out of memory. */
static struct raw_sym *raw_push(struct report_image *im)
{
	if (im->nraw == im->rawcap) {
		size_t cap = im->rawcap ? 2 * im->rawcap : 1024;
		struct raw_sym *v = realloc(im->raw, cap * sizeof *v);

		if (!v)
			return NULL;
		im->raw = v;
		im->rawcap = cap;
	}
	return &im->raw[im->nraw++];
}

/*
 * Append the FUNC symbols of one symbol table section to im->raw.
 * Returns how many, or a negative errno (the caller drops a partial list).
 */
static int collect_symbols(struct report_image *im, Elf *elf, Elf_Scn *symscn)
{
	GElf_Shdr sh;
	Elf_Data *d, *xd = NULL;
	Elf_Scn *xscn = NULL;
	size_t n, i, nsecs, before = im->nraw;
	int err;

	if (!gelf_getshdr(symscn, &sh) || sh.sh_entsize == 0 ||
	    !(d = elf_getdata(symscn, NULL)))
		return -ENOEXEC;
	if (elf_getshdrnum(elf, &nsecs) != 0)
		return -ENOEXEC;
	/* Extended section indices, for files with more than 65279 sections. */
	while ((xscn = elf_nextscn(elf, xscn)) != NULL) {
		GElf_Shdr xs;

		if (gelf_getshdr(xscn, &xs) && xs.sh_type == SHT_SYMTAB_SHNDX &&
		    elf_scnshndx(xscn) == (ssize_t)elf_ndxscn(symscn)) {
			xd = elf_getdata(xscn, NULL);
			break;
		}
	}
	n = d->d_size / sh.sh_entsize;
	for (i = 1; i < n; i++) {	/* entry 0 is the null symbol */
		GElf_Sym s;
		GElf_Shdr ss;
		Elf32_Word xndx = 0;
		size_t shndx;
		const char *name;
		struct raw_sym *r;
		unsigned char type;

		if (!gelf_getsymshndx(d, xd, (int)i, &s, &xndx))
			continue;
		type = GELF_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_GNU_IFUNC)
			continue;
		shndx = s.st_shndx == SHN_XINDEX ? xndx : s.st_shndx;
		if (shndx == SHN_UNDEF || (shndx >= SHN_LORESERVE && s.st_shndx != SHN_XINDEX) ||
		    shndx >= nsecs)
			continue;
		if (!gelf_getshdr(elf_getscn(elf, shndx), &ss) || !(ss.sh_flags & SHF_ALLOC))
			continue;
		name = elf_strptr(elf, sh.sh_link, s.st_name);
		if (!name || !*name)
			continue;
		if (s.st_value + s.st_size < s.st_value)	/* corrupt: wraps */
			continue;
		r = raw_push(im);
		if (!r)
			return -ENOMEM;
		r->start = s.st_value;
		r->size = s.st_size;
		r->sec_lo = ss.sh_addr;
		r->sec_hi = ss.sh_addr + ss.sh_size;
		r->rank = (uint8_t)bind_rank(GELF_ST_BIND(s.st_info));
		err = add_name(im, name, &r->name);
		if (err)
			return err;
	}
	return (int)(im->nraw - before);
}

/* Relocated GOT slot -> the dynamic symbol it will hold, for PLT names. */
struct got_slot {
	uint64_t addr;
	const char *name;	/* in the ELF's string table, valid while open */
};

static int got_cmp(const void *pa, const void *pb)
{
	const struct got_slot *a = pa, *b = pb;

	return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/*
 * Name the PLT stubs "func@plt", as perf and objdump do, so that samples in
 * them are not lost as unknown: each stub jumps through a GOT slot
 * (jmp *disp32(%rip), encoded ff 25, possibly after endbr64 or a bnd
 * prefix), and the dynamic relocation of that slot names the function.
 * Decoding the jump rather than assuming "entry i is relocation i" copes
 * with .plt, .plt.sec (IBT) and .plt.got alike. Needs the code bytes, so
 * only the image file itself will do, never a debug file. Returns 0 or a
 * negative errno; a file without a PLT is not an error.
 */
static int collect_plt(struct report_image *im, Elf *elf)
{
	struct got_slot *slots = NULL;
	size_t nslots = 0, cap = 0, shstrndx;
	Elf_Scn *scn = NULL;
	int err = 0;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return 0;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh, symsh;
		Elf_Data *d, *symd;
		Elf_Scn *symscn;
		size_t i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA || sh.sh_entsize == 0 ||
		    !(symscn = elf_getscn(elf, sh.sh_link)) || !gelf_getshdr(symscn, &symsh) ||
		    symsh.sh_type != SHT_DYNSYM || !(d = elf_getdata(scn, NULL)) ||
		    !(symd = elf_getdata(symscn, NULL)))
			continue;
		n = d->d_size / sh.sh_entsize;
		for (i = 0; i < n; i++) {
			GElf_Rela r;
			GElf_Sym s;
			const char *name;
			unsigned long type;

			if (!gelf_getrela(d, (int)i, &r))
				continue;
			type = GELF_R_TYPE(r.r_info);
			if ((type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT) ||
			    GELF_R_SYM(r.r_info) == 0 ||
			    !gelf_getsym(symd, (int)GELF_R_SYM(r.r_info), &s) ||
			    !(name = elf_strptr(elf, symsh.sh_link, s.st_name)) || !*name)
				continue;
			if (nslots == cap) {
				struct got_slot *v;

				cap = cap ? 2 * cap : 256;
				v = realloc(slots, cap * sizeof *v);
				if (!v) {
					err = -ENOMEM;
					goto out;
				}
				slots = v;
			}
			slots[nslots].addr = r.r_offset;
			slots[nslots++].name = name;
		}
	}
	if (nslots == 0)
		goto out;
	qsort(slots, nslots, sizeof *slots, got_cmp);

	scn = NULL;
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;
		const char *sname;
		const uint8_t *code;
		uint64_t esz, off;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(sname = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(sname, ".plt", 4) != 0 || !(d = elf_getdata(scn, NULL)) ||
		    !d->d_buf || d->d_size > sh.sh_size)
			continue;
		code = d->d_buf;
		esz = sh.sh_entsize >= 8 && sh.sh_entsize <= 64 ? sh.sh_entsize : 16;
		for (off = 0; off + esz <= d->d_size; off += esz) {
			struct got_slot key, *hit;
			uint64_t k;
			int32_t disp;
			char name[512];
			struct raw_sym *r;

			for (k = 0; k + 6 <= esz; k++)
				if (code[off + k] == 0xff && code[off + k + 1] == 0x25)
					break;
			if (k + 6 > esz)
				continue;	/* PLT0, or a lazy IBT stub */
			memcpy(&disp, code + off + k + 2, 4);
			key.addr = sh.sh_addr + off + k + 6 + (int64_t)disp;
			hit = bsearch(&key, slots, nslots, sizeof *slots, got_cmp);
			if (!hit)
				continue;
			snprintf(name, sizeof name, "%s@plt", hit->name);
			r = raw_push(im);
			if (!r) {
				err = -ENOMEM;
				goto out;
			}
			r->start = sh.sh_addr + off;
			r->size = esz;
			r->sec_lo = sh.sh_addr;
			r->sec_hi = sh.sh_addr + sh.sh_size;
			r->rank = 2;
			err = add_name(im, name, &r->name);
			if (err)
				goto out;
		}
	}
out:
	free(slots);
	return err;
}

/*
 * The innermost entry of v[n] (sorted, with prefix-max ends) containing
 * vaddr: a binary search for the last start at or before vaddr, then a
 * walk back only while some earlier entry can still reach vaddr. A sized
 * entry wins over an unsized one whose guessed end reaches here. NULL if
 * none.
 */
static const struct sym *search(const struct sym *v, size_t n, uint64_t vaddr)
{
	const struct sym *unsized = NULL;
	size_t lo = 0, hi = n, j;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = lo; j > 0 && v[j - 1].maxend > vaddr; j--) {
		const struct sym *s = &v[j - 1];

		if (vaddr >= s->end)
			continue;
		if (s->sized)
			return s;
		if (!unsized)
			unsized = s;
	}
	return unsized;
}

/* Read a little-endian signed 32-bit or unsigned 64-bit value. */
static int64_t rd_s32(const uint8_t *p)
{
	int32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t rd_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/*
 * Functions no symbol names (static functions of a stripped image, .cold
 * parts) still have unwind entries: every FDE in .eh_frame covers one
 * function's code exactly. Collect the FDEs whose start no symbol covers
 * into im->fdes, named "sub_<hex start>", so that such code is reported as
 * distinct procedures rather than one unknown bucket.
 *
 * The sorted table of .eh_frame_hdr gives each FDE's start and address;
 * the FDE's own pc_begin, decoded either as pc-relative sdata4 (what GNU
 * ld, gold and lld emit) or as an absolute pointer, must agree with the
 * table before its pc_range is believed, which avoids parsing CIE
 * augmentations. Anything else is skipped. Needs the image file itself
 * (a debug file has no .eh_frame contents). Returns 0 or -ENOMEM.
 */
static int collect_fdes(struct report_image *im, Elf *elf)
{
	Elf_Scn *hs = find_section(elf, SHT_PROGBITS, ".eh_frame_hdr");
	Elf_Scn *fs = find_section(elf, SHT_PROGBITS, ".eh_frame");
	GElf_Shdr hsh, fsh;
	Elf_Data *hd, *fd;
	const uint8_t *h, *f;
	size_t cap = 0, i, n;
	uint64_t count, plt[4][2];
	size_t nplt = 0, k;

	if (!hs || !fs || !gelf_getshdr(hs, &hsh) || !gelf_getshdr(fs, &fsh) ||
	    !(hd = elf_getdata(hs, NULL)) || !(fd = elf_getdata(fs, NULL)) || !hd->d_buf ||
	    !fd->d_buf || hd->d_size < 12)
		return 0;
	h = hd->d_buf;
	f = fd->d_buf;
	/* The PLT's FDEs each cover a run of stubs: named stubs are found
	 * first, and the rest are not one function; leave them out. */
	{
		Elf_Scn *ps = NULL;
		size_t shstrndx;

		if (elf_getshdrstrndx(elf, &shstrndx) != 0)
			return 0;
		while ((ps = elf_nextscn(elf, ps)) != NULL && nplt < 4) {
			GElf_Shdr psh;
			const char *nm;

			if (gelf_getshdr(ps, &psh) && (psh.sh_flags & SHF_EXECINSTR) &&
			    (nm = elf_strptr(elf, shstrndx, psh.sh_name)) &&
			    strncmp(nm, ".plt", 4) == 0) {
				plt[nplt][0] = psh.sh_addr;
				plt[nplt++][1] = psh.sh_addr + psh.sh_size;
			}
		}
	}
	/* version 1; table of (initial location, FDE address) pairs, both
	 * datarel sdata4 from the header's start; count udata4 */
	if (h[0] != 1 || h[2] != 0x03 || h[3] != 0x3b)
		return 0;
	count = (uint32_t)rd_s32(h + 8);
	if (count > (hd->d_size - 12) / 8)
		return 0;
	for (i = 0; i < count; i++) {
		uint64_t start = hsh.sh_addr + (uint64_t)rd_s32(h + 12 + 8 * i);
		uint64_t fde = hsh.sh_addr + (uint64_t)rd_s32(h + 16 + 8 * i);
		uint64_t off = fde - fsh.sh_addr, range, fstart;
		const struct sym *cov;
		struct sym *e;
		char name[32];

		/* length (4) and CIE pointer (4), then pc_begin, pc_range */
		if (fde < fsh.sh_addr || off > fd->d_size || fd->d_size - off < 8 + 16)
			continue;
		if ((uint32_t)rd_s32(f + off) == 0xffffffffu)
			continue;	/* 64-bit DWARF length: not seen in .eh_frame */
		fstart = fsh.sh_addr + off + 8 + (uint64_t)rd_s32(f + off + 8);
		if (fstart == start) {
			range = (uint32_t)rd_s32(f + off + 12);
		} else if (rd_u64(f + off + 8) == start) {
			range = rd_u64(f + off + 16);
		} else {
			continue;
		}
		if (range == 0 || start + range < start)
			continue;
		for (k = 0; k < nplt; k++)
			if (start >= plt[k][0] && start < plt[k][1])
				break;
		if (k < nplt)
			continue;
		cov = search(im->syms, im->nsyms, start);
		if (cov)
			continue;	/* a symbol names this code */
		if (im->nfdes == cap) {
			struct sym *v;

			cap = cap ? 2 * cap : 256;
			v = realloc(im->fdes, cap * sizeof *v);
			if (!v)
				return -ENOMEM;
			im->fdes = v;
		}
		e = &im->fdes[im->nfdes];
		e->start = start;
		e->end = start + range;
		e->sized = 1;
		snprintf(name, sizeof name, "sub_%llx", (unsigned long long)start);
		if (add_name(im, name, &e->name) != 0)
			return -ENOMEM;
		im->nfdes++;
	}
	/* the table is sorted by start; keep prefix-max ends for search() */
	for (n = 0; n < im->nfdes; n++) {
		uint64_t prev = n ? im->fdes[n - 1].maxend : 0;

		if (n && im->fdes[n].start < im->fdes[n - 1].start) {
			im->nfdes = 0;	/* unsorted: a broken table, do not guess */
			return 0;
		}
		im->fdes[n].maxend = im->fdes[n].end > prev ? im->fdes[n].end : prev;
	}
	return 0;
}

/*
 * Turn im->raw into the lookup table: sorted, one entry per address (the
 * preferred alias), sized entries ending at st_value + st_size, unsized
 * ones at the next symbol or their section's end, whichever is first.
 * Frees im->raw. Returns 0 or -ENOMEM.
 */
static int build_table(struct report_image *im)
{
	struct raw_sym *raw = im->raw;
	size_t nraw = im->nraw, i, out = 0;

	if (nraw > 0)	/* raw is NULL when nothing was found */
		qsort_r(raw, nraw, sizeof *raw, raw_cmp, im->names);
	im->syms = calloc(nraw ? nraw : 1, sizeof *im->syms);
	if (!im->syms)
		return -ENOMEM;
	for (i = 0; i < nraw; i++) {
		struct sym *s;

		if (i > 0 && raw[i].start == raw[i - 1].start)
			continue;	/* an alias; the preferred one came first */
		s = &im->syms[out++];
		s->start = raw[i].start;
		s->name = raw[i].name;
		s->sized = raw[i].size != 0;
		if (s->sized) {
			s->end = raw[i].start + raw[i].size;
		} else {
			/* perf's rule for hand-written code: up to the next
			 * symbol, never past the section. */
			size_t j = i + 1;
			uint64_t end = raw[i].sec_hi;

			while (j < nraw && raw[j].start == raw[i].start)
				j++;
			if (j < nraw && raw[j].start < end)
				end = raw[j].start;
			if (raw[i].start < raw[i].sec_lo || raw[i].start >= raw[i].sec_hi)
				end = raw[i].start;
			s->end = end;
		}
		s->maxend = s->end;
		if (out > 1 && im->syms[out - 2].maxend > s->maxend)
			s->maxend = im->syms[out - 2].maxend;
	}
	im->nsyms = out;
	free(im->raw);
	im->raw = NULL;
	im->nraw = im->rawcap = 0;
	return 0;
}

/*
 * Append the symbols of f to im->raw: .symtab if it has any functions,
 * else .dynsym if allowed. Returns how many, or a negative errno; nothing
 * is left behind from a table that gave none.
 */
static int load_from(struct report_image *im, struct elf_file *f, const char *path,
		     bool allow_dynsym)
{
	Elf_Scn *scn = find_section(f->elf, SHT_SYMTAB, NULL);
	size_t mark = im->nraw;
	int n = 0;

	if (scn)
		n = collect_symbols(im, f->elf, scn);
	if (n <= 0)
		im->nraw = mark;
	if (n == 0 && allow_dynsym) {
		scn = find_section(f->elf, SHT_DYNSYM, NULL);
		if (scn)
			n = collect_symbols(im, f->elf, scn);
		if (n <= 0)
			im->nraw = mark;
	}
	if (n > 0) {
		im->symfile = strdup(path);
		if (!im->symfile)
			return -ENOMEM;
	}
	return n;
}

/*
 * Take the symbols of one source into im, if it has any. A table that
 * cannot be read is remembered in *load_err and the next source is tried;
 * only running out of memory stops the search. Returns the symbol count.
 */
static int try_load(struct report_image *im, struct elf_file *f, const char *path,
		    bool allow_dynsym, int *load_err)
{
	int n = load_from(im, f, path, allow_dynsym);

	if (n == -ENOMEM)
		return n;
	if (n < 0) {
		if (*load_err == 0)
			*load_err = n;
		return 0;
	}
	return n;
}

/* Contract in symbolize.h. */
struct report_image *report_image_open(const char *path, const uint8_t *build_id,
				       size_t build_id_len, char *why, size_t whylen)
{
	struct report_image *im;
	struct elf_file file = { .fd = -1 }, dbg = { .fd = -1 };
	char reason[512] = "", want[2 * BUILD_ID_MAX + 1], have[2 * BUILD_ID_MAX + 1];
	bool file_ok = false;
	int n = 0, load_err = 0;

	if (build_id_len > BUILD_ID_MAX || (build_id_len > 0 && !build_id)) {
		set_why(why, whylen, "bad build-id argument (%zu bytes)", build_id_len);
		return NULL;
	}
	im = calloc(1, sizeof *im);
	if (!im) {
		set_why(why, whylen, "out of memory");
		return NULL;
	}
	im->dwarf_fd = -1;
	im->build_id_len = build_id_len;
	if (build_id_len)
		memcpy(im->build_id, build_id, build_id_len);

	if (!path || !*path) {
		snprintf(reason, sizeof reason, "no path recorded");
	} else if (open_elf(path, &file, reason, sizeof reason) == 0) {
		if (build_id_ok(im, &file)) {
			file_ok = true;
		} else {
			hex(want, sizeof want, im->build_id, im->build_id_len);
			if (file.build_id_len > 0)
				hex(have, sizeof have, file.build_id, (size_t)file.build_id_len);
			else
				snprintf(have, sizeof have, "none");
			snprintf(reason, sizeof reason,
				 "%s: build-id mismatch (file has %s, profile wants %s)", path,
				 have, want);
		}
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
		read_debuglink(im, file.elf);
		im->path_has_dwarf = has_dwarf(file.elf);
		n = try_load(im, &file, path, false, &load_err);
	}
	/* Stripped, replaced or unreadable: the debug file may still have it. */
	if (n == 0 && (file_ok || im->build_id_len > 0) && find_debug_file(im, &dbg) == 0)
		n = try_load(im, &dbg, im->debug_path, false, &load_err);
	if (n == 0 && file_ok)
		n = try_load(im, &file, path, true, &load_err);
	if (n < 0)
		goto fail_n;
	if (file_ok) {
		int err = collect_plt(im, file.elf);

		if (err == -ENOMEM) {
			n = err;
			goto fail_n;
		}
	}
	if (build_table(im) != 0 || (file_ok && collect_fdes(im, file.elf) != 0)) {
		n = -ENOMEM;
		goto fail_n;
	}
	if (!file_ok && !im->debug_path) {
		if (im->build_id_len > 0) {
			hex(want, sizeof want, im->build_id, im->build_id_len);
			set_why(why, whylen, "%s; no debug file for build-id %s", reason, want);
		} else {
			set_why(why, whylen, "%s", reason);
		}
		goto fail;
	}
	/* A symbol table that exists but cannot be read means a damaged
	 * file; an image with no tables at all is merely stripped. */
	if (n == 0 && load_err < 0) {
		n = load_err;
		goto fail_n;
	}
	close_elf(&file);
	close_elf(&dbg);
	return im;
fail_n:
	set_why(why, whylen, "%s: reading symbols: %s", path ? path : "?", strerror(-n));
fail:
	close_elf(&file);
	close_elf(&dbg);
	report_image_close(im);
	return NULL;
}

/* Contract in symbolize.h. */
const char *report_sym_lookup(struct report_image *im, uint64_t vaddr, uint64_t *sym_start,
			      uint64_t *sym_size)
{
	const struct sym *hit;

	if (!im)
		return NULL;
	hit = search(im->syms, im->nsyms, vaddr);
	if (!hit)	/* code no symbol names: its unwind entry still bounds it */
		hit = search(im->fdes, im->nfdes, vaddr);
	if (!hit)
		return NULL;
	if (sym_start)
		*sym_start = hit->start;
	if (sym_size)
		*sym_size = hit->end - hit->start;
	return im->names + hit->name;
}

/*
 * Open the DWARF of the image once: the recorded file if it has a
 * .debug_info, else the debug file (searched for now if open did not need
 * it). Each file is checked against the build-id again, since it may have
 * changed since report_image_open(). Returns 0 or a negative errno, cached.
 */
static int open_dwarf(struct report_image *im)
{
	struct elf_file f = { .fd = -1 };
	int i;

	if (im->dwarf_tried)
		return im->dwarf_err;
	im->dwarf_tried = true;
	im->dwarf_err = -ENODATA;
	for (i = 0; i < 2 && !im->dwarf; i++) {
		const char *cand = i == 0 ? (im->path_has_dwarf ? im->path : NULL) : NULL;

		if (i == 1) {
			/* the image's own DWARF is missing or unusable */
			if (!im->debug_searched && find_debug_file(im, &f) == 0)
				close_elf(&f);
			cand = im->debug_path;
		}
		if (!cand || open_elf(cand, &f, NULL, 0) != 0)
			continue;
		if (!build_id_ok(im, &f) || !has_dwarf(f.elf) ||
		    !(im->dwarf = dwarf_begin_elf(f.elf, DWARF_C_READ, NULL))) {
			close_elf(&f);
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
	const struct cu_range *a = pa, *b = pb;

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
				struct cu_range *v;

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
		const struct cu_range *r = &im->cu_ranges[j - 1];

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
	free(im);
}

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

/* Contract in symbolize.h. */
int report_read_build_id(const char *path, uint8_t *out, size_t cap)
{
	struct elf_file f;
	int err;

	if (!path || (!out && cap > 0))
		return -EINVAL;
	err = open_elf(path, &f, NULL, 0);
	if (err)
		return err;
	err = f.build_id_len;
	if (err > 0) {
		if ((size_t)err > cap)
			err = -ERANGE;
		else
			memcpy(out, f.build_id, (size_t)err);
	}
	close_elf(&f);
	return err;
}
