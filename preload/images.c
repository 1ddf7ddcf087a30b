/*
 * Image records: which file is loaded where, with its build-id read from
 * the PT_NOTE in memory (so the record names the bits that ran, even if the
 * file is replaced on disk later).
 *
 * Scans run at start-up, before each dlopen and after each dlclose, at
 * thread creation and at exit; the merge attributes a PC to the latest
 * recorded load covering it. A process killed with SIGKILL after a dlopen
 * and before any later scan leaves that image's samples in the unknown
 * profile.
 *
 * Not signal-safe (dl_iterate_phdr takes the loader lock); serialized by a
 * mutex.
 */
#include "preload/preload.h"

#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define MAX_KNOWN 1024

struct known {
	uint64_t bias, lo, hi;
	int seen;                /* found by the current scan */
};

static struct known g_known[MAX_KNOWN];
static int g_nknown;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static char g_exe[SPOOL_PATH_MAX];

static uint32_t find_build_id(const struct dl_phdr_info *info, uint8_t *out)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_NOTE)
			continue;
		const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr);
		const uint8_t *end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const uint8_t *name = p + sizeof(*n);
			const uint8_t *desc = name + ((n->n_namesz + 3) & ~3u);
			if (desc + n->n_descsz > end)
				break;
			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    memcmp(name, "GNU", 4) == 0) {
				uint32_t l = n->n_descsz > SPOOL_BUILD_ID_MAX ? SPOOL_BUILD_ID_MAX
									     : n->n_descsz;
				memcpy(out, desc, l);
				return l;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 0;
}

static int scan_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t lo = UINT64_MAX, hi = 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD)
			continue;
		uint64_t a = info->dlpi_addr + ph->p_vaddr;
		if (a < lo)
			lo = a;
		if (a + ph->p_memsz > hi)
			hi = a + ph->p_memsz;
	}
	if (hi <= lo)
		return 0;
	for (int i = 0; i < g_nknown; i++) {
		if (g_known[i].bias == info->dlpi_addr && g_known[i].lo == lo && g_known[i].hi == hi) {
			g_known[i].seen = 1;
			return 0;
		}
	}
	uint8_t bid[SPOOL_BUILD_ID_MAX];
	uint32_t bl = find_build_id(info, bid);
	const char *name = info->dlpi_name;
	if (!name || !*name)
		name = g_exe;        /* the main program */
	spool_image(arg, SPOOL_IMG_MAP, info->dlpi_addr, lo, hi, bid, bl, name);
	if (g_nknown < MAX_KNOWN)
		g_known[g_nknown++] = (struct known){ info->dlpi_addr, lo, hi, 1 };
	return 0;
}

void preload_images_scan(void)
{
	struct spool *prev, *sp;
	if (!g_vprof.active)
		return;
	pthread_mutex_lock(&g_lock);
	if (!(sp = preload_spool_enter(&prev))) {
		pthread_mutex_unlock(&g_lock);
		return;
	}
	if (!g_exe[0]) {
		ssize_t n = readlink("/proc/self/exe", g_exe, sizeof(g_exe) - 1);
		g_exe[n > 0 ? n : 0] = 0;
	}
	for (int i = 0; i < g_nknown; i++)
		g_known[i].seen = 0;
	dl_iterate_phdr(scan_one, sp);
	for (int i = 0; i < g_nknown; i++) {
		if (g_known[i].seen)
			continue;
		spool_image(sp, SPOOL_IMG_UNMAP, g_known[i].bias, g_known[i].lo,
			    g_known[i].hi, NULL, 0, "");
		g_known[i--] = g_known[--g_nknown];
	}
	preload_spool_exit(sp, prev);
	pthread_mutex_unlock(&g_lock);
}

/* A fork child has its parent's images: copy the parent's records instead
 * of walking the loader's list, whose lock another thread of the parent may
 * have held at fork time. */
static int copy_record(const struct spool_image_record *r, void *arg)
{
	struct spool *sp = arg;
	spool_image_gen(sp, (int)r->kind, r->bias, r->lo, r->hi, r->build_id,
			r->build_id_len, r->path, r->gen);
	if (r->gen > sp->gen)
		sp->gen = r->gen;
	return 0;
}

void preload_images_inherit(const struct spool *parent)
{
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (sp) {
		spool_images(parent, copy_record, sp);
		preload_spool_exit(sp, prev);
	}
	/* g_known was copied with the rest of memory and stays right. */
	pthread_mutex_init(&g_lock, NULL);
}
