/*
 * values_image.c — what the value reports read of an image file beyond
 * its function symbols: the loadable segments (code bytes for the
 * decoder), the sections (is an address read-only, and which section is
 * it in), the PT_GNU_RELRO range, the data symbols (a pointer shown as
 * `table+0x10`), and the load biases this database's own values reveal,
 * so that a pointer of the profiled process can be placed in an image.
 *
 * One record per image of the model, filled on first use; the file stays
 * open until report_value_model_free(), and is used only while its build-id is
 * the profile's. Single-threaded, nothing async-signal-safe.
 */
#include "reports/value_model.h"
#include "reports/symbolize.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int dsym_by_start(const void *a, const void *b)
{
	const struct report_value_dsym *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* OBJECT and TLS-less data symbols of one ELF file (.symtab, else
 * .dynsym), sorted by address. */
static void read_data_symbols(struct report_value_elf *e, Elf *elf)
{
	Elf_Scn *scn = NULL, *pick = NULL;
	GElf_Shdr sh, psh = { 0 };
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || (sh.sh_type == SHT_DYNSYM && !pick)) {
			pick = scn;
			psh = sh;
		}
	}
	Elf_Data *d = pick ? elf_getdata(pick, NULL) : NULL;
	if (!d || !psh.sh_entsize)
		return;
	size_t n = psh.sh_size / psh.sh_entsize, len = 0, cap = 0, k = 0;
	e->dsym = calloc(n ? n : 1, sizeof(*e->dsym));
	if (!e->dsym)
		return;
	for (size_t i = 0; i < n; i++) {
		GElf_Sym s;
		const char *name;
		if (!gelf_getsym(d, (int)i, &s) || GELF_ST_TYPE(s.st_info) != STT_OBJECT || !s.st_value ||
		    s.st_shndx == SHN_UNDEF || !(name = elf_strptr(elf, psh.sh_link, s.st_name)) || !*name)
			continue;
		size_t l = strlen(name) + 1;
		if (len + l > cap) {
			size_t nc = cap ? 2 * cap : 4096;
			while (nc < len + l)
				nc *= 2;
			char *p = realloc(e->dnames, nc);
			if (!p)
				break;
			e->dnames = p;
			cap = nc;
		}
		memcpy(e->dnames + len, name, l);
		e->dsym[k++] = (struct report_value_dsym){ s.st_value, s.st_size, (const char *)(uintptr_t)len };
		len += l;
	}
	for (size_t i = 0; i < k; i++)
		e->dsym[i].name = e->dnames + (uintptr_t)e->dsym[i].name;
	qsort(e->dsym, k, sizeof(*e->dsym), dsym_by_start);
	e->ndsym = k;
}

static void read_elf(struct report_value_model *vm, uint32_t image, struct report_value_elf *e)
{
	const struct report_model_image *im = &vm->m.images[image];
	uint8_t bid[SPOOL_BUILD_ID_MAX];
	e->state = -1;
	e->fd = -1;
	if (!im->path || im->path[0] != '/')
		return;
	/* The file the symbolizer trusted: the recorded one, or the copy the
	 * database kept of a rebuilt image (merge/image_store.c). */
	const char *file = im->sym && report_image_file(im->sym) ? report_image_file(im->sym) : im->path;
	if (im->build_id_len) {
		int len = report_read_build_id(file, bid, sizeof(bid));
		if (len != (int)im->build_id_len || memcmp(bid, im->build_id, (size_t)len))
			return;
	}
	int fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	size_t nph = 0;
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph) != 0) {
		if (elf)
			elf_end(elf);
		close(fd);
		return;
	}
	e->type = eh.e_type;
	e->lo = UINT64_MAX;
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;
		if (!gelf_getphdr(elf, (int)i, &ph))
			continue;
		/* An executable (libc.so.6 has a PT_INTERP too: a library by its name) */
		if (ph.p_type == PT_INTERP && (eh.e_type == ET_EXEC || !strstr(strrchr(im->path, '/'), ".so")))
			e->interp = 1;
		if (ph.p_type == PT_GNU_RELRO) {
			e->relro_lo = ph.p_vaddr;
			e->relro_hi = ph.p_vaddr + ph.p_memsz;
		}
		if (ph.p_type != PT_LOAD || e->nseg >= VALUE_ELF_SEGS)
			continue;
		e->seg[e->nseg++] = (struct report_value_seg){ ph.p_vaddr, ph.p_filesz, ph.p_memsz, ph.p_offset, ph.p_flags };
		if (ph.p_vaddr < e->lo)
			e->lo = ph.p_vaddr;
		if (ph.p_vaddr + ph.p_memsz > e->hi)
			e->hi = ph.p_vaddr + ph.p_memsz;
	}
	size_t shstr = 0, nsec = 0;
	Elf_Scn *scn = NULL;
	elf_getshdrstrndx(elf, &shstr);
	elf_getshdrnum(elf, &nsec);
	e->sec = calloc(nsec ? nsec : 1, sizeof(*e->sec));
	while (e->sec && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) || !sh.sh_size)
			continue;
		struct report_value_sec *s = &e->sec[e->nsec++];
		s->addr = sh.sh_addr;
		s->size = sh.sh_size;
		s->flags = sh.sh_flags;
		s->type = sh.sh_type;
		name = elf_strptr(elf, shstr, sh.sh_name);
		snprintf(s->name, sizeof(s->name), "%s", name ? name : "?");
	}
	/* Data symbols from the file the function symbols came from (a
	 * debug file's .symtab names the statics a stripped image lacks). */
	const char *symfile = im->sym ? report_image_symfile(im->sym) : NULL;
	if (symfile && strcmp(symfile, im->path)) {
		int dfd = open(symfile, O_RDONLY | O_CLOEXEC);
		Elf *delf = dfd >= 0 ? elf_begin(dfd, ELF_C_READ, NULL) : NULL;
		if (delf) {
			read_data_symbols(e, delf);
			elf_end(delf);
		}
		if (dfd >= 0)
			close(dfd);
	}
	if (!e->ndsym) {
		free(e->dsym);
		e->dsym = NULL;
		read_data_symbols(e, elf);
	}
	elf_end(elf);
	e->fd = fd;
	e->state = e->nseg ? 1 : -1;
}

const struct report_value_elf *report_value_elf(struct report_value_model *vm, uint32_t image)
{
	if (image >= vm->m.nimages)
		return NULL;
	if (image >= vm->nelf) {
		size_t n = vm->m.nimages;
		struct report_value_elf *p = realloc(vm->elf, n * sizeof(*p));
		if (!p)
			return NULL;
		memset(p + vm->nelf, 0, (n - vm->nelf) * sizeof(*p));
		vm->elf = p;
		vm->nelf = n;
	}
	struct report_value_elf *e = &vm->elf[image];
	if (!e->state)
		read_elf(vm, image, e);
	return e->state > 0 ? e : NULL;
}

void report_value_elf_free(struct report_value_model *vm)
{
	for (size_t i = 0; i < vm->nelf; i++) {
		struct report_value_elf *e = &vm->elf[i];
		if (e->fd >= 0 && e->state)
			close(e->fd);
		free(e->sec);
		free(e->dsym);
		free(e->dnames);
	}
	free(vm->elf);
	vm->elf = NULL;
	vm->nelf = 0;
}

long report_value_read_code(struct report_value_model *vm, uint32_t image, uint64_t vaddr, uint8_t *buf, size_t n)
{
	const struct report_value_elf *e = report_value_elf(vm, image);
	for (int i = 0; e && i < e->nseg; i++) {
		const struct report_value_seg *s = &e->seg[i];
		if (vaddr < s->vaddr || vaddr >= s->vaddr + s->filesz)
			continue;
		size_t left = s->vaddr + s->filesz - vaddr;
		return pread(e->fd, buf, n < left ? n : left, (off_t)(s->off + vaddr - s->vaddr));
	}
	return -1;
}

const struct report_value_sec *report_value_elf_section(const struct report_value_elf *e, uint64_t vaddr)
{
	for (size_t i = 0; e && i < e->nsec; i++)
		if (vaddr >= e->sec[i].addr && vaddr < e->sec[i].addr + e->sec[i].size)
			return &e->sec[i];
	return NULL;
}

int report_value_elf_readonly(const struct report_value_elf *e, uint64_t vaddr)
{
	if (!e)
		return 0;
	if (vaddr >= e->relro_lo && vaddr < e->relro_hi)
		return 1;
	const struct report_value_sec *s = report_value_elf_section(e, vaddr);
	if (s)
		return !(s->flags & SHF_WRITE);
	for (int i = 0; i < e->nseg; i++)
		if (vaddr >= e->seg[i].vaddr && vaddr < e->seg[i].vaddr + e->seg[i].memsz)
			return !(e->seg[i].flags & PF_W);
	return 0;
}

const struct report_value_dsym *report_value_elf_data_symbol(const struct report_value_elf *e, uint64_t vaddr)
{
	size_t lo = 0, hi = e ? e->ndsym : 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (e->dsym[mid].start <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* The last symbol starting at or below vaddr that covers it. */
	for (size_t j = lo; j > 0 && lo - j < 8; j--) {
		const struct report_value_dsym *s = &e->dsym[j - 1];
		if (vaddr < s->start + (s->size ? s->size : 1))
			return s;
	}
	return NULL;
}
