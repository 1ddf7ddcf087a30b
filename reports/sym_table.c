/*
 * sym_table.c — the sorted function table of an image: FUNC symbols from
 * .symtab (or .dynsym), "func@plt" names for PLT stubs decoded from the
 * stubs' own jumps, and "sub_<hex>" entries for code only an .eh_frame FDE
 * bounds. Names live in one arena (offsets, since it grows), the table is
 * built once and then searched many times: binary search plus a walk back
 * bounded by a prefix maximum of ends. Single-threaded.
 */
#include "reports/sym_internal.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
	const struct report_raw_sym *a = pa, *b = pb;
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
static struct report_raw_sym *raw_push(struct report_image *im)
{
	if (im->nraw == im->rawcap) {
		size_t cap = im->rawcap ? 2 * im->rawcap : 1024;
		struct report_raw_sym *v = realloc(im->raw, cap * sizeof *v);

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
		struct report_raw_sym *r;
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
int report_sym_collect_plt(struct report_image *im, Elf *elf)
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
			struct report_raw_sym *r;

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
const struct report_sym *report_sym_search(const struct report_sym *v, size_t n, uint64_t vaddr)
{
	const struct report_sym *unsized = NULL;
	size_t lo = 0, hi = n, j;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (v[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (j = lo; j > 0 && v[j - 1].maxend > vaddr; j--) {
		const struct report_sym *s = &v[j - 1];

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
 * distinct procedures rather than one unknown bucket; one whose last byte
 * a symbol starting within its first 16 bytes covers is named by that
 * symbol (an FDE opened at a nop before it, as glibc's __restore_rt).
 *
 * The sorted table of .eh_frame_hdr gives each FDE's start and address;
 * the FDE's own pc_begin, decoded either as pc-relative sdata4 (what GNU
 * ld, gold and lld emit) or as an absolute pointer, must agree with the
 * table before its pc_range is believed, which avoids parsing CIE
 * augmentations. Anything else is skipped. Needs the image file itself
 * (a debug file has no .eh_frame contents). Returns 0 or -ENOMEM.
 */
int report_sym_collect_fdes(struct report_image *im, Elf *elf)
{
	Elf_Scn *hs = report_sym_find_section(elf, SHT_PROGBITS, ".eh_frame_hdr");
	Elf_Scn *fs = report_sym_find_section(elf, SHT_PROGBITS, ".eh_frame");
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
		const struct report_sym *cov;
		struct report_sym *e;
		char name[32];
		uint32_t name_off;

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
		cov = report_sym_search(im->syms, im->nsyms, start);
		if (cov)
			continue;	/* a symbol names this code */
		/* An FDE opened a little before its symbol: glibc's signal
		 * return (__restore_rt) has its FDE start at the nop before
		 * it, so that a return address into it, less one, is still
		 * inside (the unwinder's rule, and ours in stack_model.c). That nop
		 * is the symbol's, not a "sub_". */
		cov = report_sym_search(im->syms, im->nsyms, start + range - 1);
		if (cov && cov->start > start && cov->start - start < 16)
			name_off = cov->name;
		else
			name_off = UINT32_MAX;
		if (im->nfdes == cap) {
			struct report_sym *v;

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
		if (name_off != UINT32_MAX)
			e->name = name_off;
		else if (add_name(im, name, &e->name) != 0)
			return -ENOMEM;
		im->nfdes++;
	}
	/* the table is sorted by start; keep prefix-max ends for report_sym_search() */
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
int report_sym_build_table(struct report_image *im)
{
	struct report_raw_sym *raw = im->raw;
	size_t nraw = im->nraw, i, out = 0;

	if (nraw > 0)	/* raw is NULL when nothing was found */
		qsort_r(raw, nraw, sizeof *raw, raw_cmp, im->names);
	im->syms = calloc(nraw ? nraw : 1, sizeof *im->syms);
	if (!im->syms)
		return -ENOMEM;
	for (i = 0; i < nraw; i++) {
		struct report_sym *s;

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
static int load_from(struct report_image *im, struct report_elf_file *f, const char *path,
		     bool allow_dynsym)
{
	Elf_Scn *scn = report_sym_find_section(f->elf, SHT_SYMTAB, NULL);
	size_t mark = im->nraw;
	int n = 0;

	if (scn)
		n = collect_symbols(im, f->elf, scn);
	if (n <= 0)
		im->nraw = mark;
	if (n == 0 && allow_dynsym) {
		scn = report_sym_find_section(f->elf, SHT_DYNSYM, NULL);
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
int report_sym_try_load(struct report_image *im, struct report_elf_file *f, const char *path,
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
