/*
 * export_autofdo.c — the branch records of `vprof run --branches` as the
 * text profile AutoFDO's create_llvm_prof reads (--profiler=text), for one
 * binary: three sections, each a count line and then its entries,
 *
 *   N          ranges:   START-END:COUNT   instructions run straight through,
 *                                           from a taken branch's target to
 *                                           the next taken branch
 *   M          samples:  ADDR:COUNT        PC samples
 *   K          branches: FROM->TO:COUNT    taken branches
 *
 * addresses hex, relative to the binary's first loadable segment (the
 * base create_llvm_prof adds back; for a PIE its vaddrs), counts decimal.
 * Ranges and branches are the windows' counts (hotlist estimates, exact
 * for keys with at most 16 distinct values, which a range start or a
 * branch has but at indirect branches); create_llvm_prof turns the
 * ranges into counts per instruction and, with the binary's DWARF, per
 * source line and discriminator, and the branches into call targets.
 * Branches into another image are left out (AutoFDO profiles one binary).
 */
#include "reports/export.h"
#include "reports/symbolize.h"
#include "reports/value_model.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The lowest p_vaddr of the binary's PT_LOAD segments, or -1. */
static int64_t first_load_vaddr(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int64_t lo = -1;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	size_t n;
	if (e && elf_getphdrnum(e, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD &&
			    (lo < 0 || (int64_t)ph.p_vaddr < lo))
				lo = (int64_t)ph.p_vaddr;
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return lo;
}

static long image_of(const struct report_model *m, const char *binary)
{
	uint8_t bid[SPOOL_BUILD_ID_MAX];
	int bl = report_read_build_id(binary, bid, sizeof(bid));
	char want[PATH_MAX], have[PATH_MAX];
	int wp = realpath(binary, want) != NULL;
	for (size_t i = 0; i < m->nimages; i++) {
		const struct report_model_image *im = &m->images[i];
		int same = bl > 0 && im->build_id_len
			   ? im->build_id_len == (uint32_t)bl && !memcmp(im->build_id, bid, (size_t)bl)
			   : wp && realpath(im->path, have) && !strcmp(want, have);
		if (same)
			return (long)i;
	}
	return -1;
}

long report_export_image_of(const struct report_model *m, const char *binary)
{
	long ii = image_of(m, binary);
	if (ii < 0)
		fprintf(stderr, "vprof export: %s: no samples of this binary in %s epoch %s (an image is matched by "
			"its build-id)\n", binary, m->db, m->epoch);
	return ii;
}

static uint64_t count_of(double est)
{
	return est < 1 ? 1 : (uint64_t)(est + 0.5);
}

int report_export_autofdo(struct report_value_model *vm, unsigned ev, const char *binary, FILE *f)
{
	const struct report_model *m = &vm->m;
	long ii = report_export_image_of(m, binary);
	if (ii < 0)
		return -ENOENT;
	int64_t base = first_load_vaddr(binary);
	if (base < 0) {
		fprintf(stderr, "vprof export: %s: not an ELF file with loadable segments\n", binary);
		return -EINVAL;
	}
	struct report_code_pair *r, *t;
	size_t nr = report_value_code_pairs(vm, (uint32_t)ii, SPOOL_VK_RANGE, &r);
	size_t nt = report_value_code_pairs(vm, (uint32_t)ii, SPOOL_VK_TAKEN, &t);
	size_t ns = 0;
	fprintf(f, "%zu\n", nr);
	for (size_t i = 0; i < nr; i++)
		fprintf(f, "%llx-%llx:%llu\n", (unsigned long long)(r[i].from - (uint64_t)base),
			(unsigned long long)(r[i].to - (uint64_t)base), (unsigned long long)count_of(r[i].est));
	for (size_t i = 0; i < m->npcs; i++)
		ns += m->pcs[i].event == ev && m->pcs[i].image == (uint32_t)ii && m->pcs[i].count;
	fprintf(f, "%zu\n", ns);
	for (size_t i = 0; i < m->npcs; i++) {
		const struct report_model_pc *pc = &m->pcs[i];
		if (pc->event == ev && pc->image == (uint32_t)ii && pc->count)
			fprintf(f, "%llx:%llu\n", (unsigned long long)(pc->vaddr - (uint64_t)base),
				(unsigned long long)pc->count);
	}
	fprintf(f, "%zu\n", nt);
	for (size_t i = 0; i < nt; i++)
		fprintf(f, "%llx->%llx:%llu\n", (unsigned long long)(t[i].from - (uint64_t)base),
			(unsigned long long)(t[i].to - (uint64_t)base), (unsigned long long)count_of(t[i].est));
	free(r);
	free(t);
	if (!nr)
		fprintf(stderr, "vprof export: %s: no branch records in %s epoch %s (vprof run --branches "
			"records them): the profile has PC samples only\n", binary, m->db, m->epoch);
	return 0;
}
