/* tests/unit/interp_dcache.c — decode caches of run-time size
 * (interp_thread_init_n): the same loop, interpreted with caches of 512,
 * 64, 2 and 1 entries, computes the same result; a small cache lives in
 * the first interp_thread_size_n bytes only (the struct is placed so that
 * its prefix ends at a PROT_NONE page: touching an entry past it faults);
 * and the counts of Zydis decodes show the sizes really differ (a 1-entry
 * cache re-decodes a 3-instruction loop at every instruction).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"
#include "tests/unit/check.h"

/* xor eax,eax; L: add rax,rdi; dec rcx; jnz L */
static const uint8_t k_loop[] = { 0x31, 0xc0, 0x48, 0x01, 0xf8, 0x48, 0xff, 0xc9, 0x75, 0xf8 };

static int run_loop(unsigned entries, uint64_t *rax, uint64_t *decoded, uint8_t *code)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t sz = entries ? interp_thread_size_n(entries) : interp_thread_size();
	size_t span = (sz + (size_t)pg - 1) / (size_t)pg * (size_t)pg;
	uint8_t *m = mmap(NULL, span + (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + span, (size_t)pg, PROT_NONE))
		return -1;
	struct interp_thread *th = (struct interp_thread *)(m + span - (sz & ~(size_t)7));
	if (entries)
		interp_thread_init_n(th, entries);
	else
		interp_thread_init(th);
	struct interp_state st;
	struct interp_result r;
	memset(&st, 0, sizeof st);
	st.rip = (uint64_t)(uintptr_t)code;
	st.rflags = 0x202;
	st.gpr[INTERP_RCX] = 100;
	st.gpr[INTERP_RDI] = 3;
	/* two runs: the second starts a new epoch, as each value sample does */
	int n = interp_run(&st, th, 150, NULL, &r);
	n += interp_run(&st, th, 151, NULL, &r);
	*rax = st.gpr[INTERP_RAX];
	*decoded = th->decoded;
	unsigned have = interp_thread_entries(th);
	munmap(m, span + (size_t)pg);
	CHECK(have == (entries ? entries : INTERP_DCACHE_SIZE) || (entries == 3 && have == 2),
	      "cache asked %u entries (0: interp_thread_init, the full size), has %u", entries, have);
	return n;
}

int main(void)
{
	if (interp_init() < 0 || fault_handler_install() < 0) {
		printf("FAIL interp_init\n");
		return 1;
	}
	uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED)
		return 1;
	memset(code, 0xcc, 4096);
	memcpy(code, k_loop, sizeof k_loop);

	CHECK(interp_thread_size_n(64) == offsetof(struct interp_thread, dcache) + 64 * sizeof(struct interp_insn),
	      "interp_thread_size_n(64) is the header and 64 entries (%zu)", interp_thread_size_n(64));
	CHECK(interp_thread_size_n(100000) == interp_thread_size() && interp_thread_size_n(0) == interp_thread_size_n(1),
	      "sizes clamp to 1..INTERP_DCACHE_SIZE entries");

	static const unsigned sizes[] = { 0, 64, 3, 1 };
	uint64_t dec[4];
	for (int i = 0; i < 4; i++) {
		uint64_t rax = 0;
		int n = run_loop(sizes[i], &rax, &dec[i], code);
		CHECK(n == 301 && rax == 300, "%u-entry cache: 301 instructions, rax = 300 (ran %d, rax %llu, %llu decodes)",
		      sizes[i] ? sizes[i] : INTERP_DCACHE_SIZE, n, (unsigned long long)rax, (unsigned long long)dec[i]);
	}
	CHECK(dec[0] == 4 && dec[1] == 4, "512 and 64 entries decode each of the 4 PCs once (%llu, %llu)",
	      (unsigned long long)dec[0], (unsigned long long)dec[1]);
	CHECK(dec[3] > 200, "1 entry re-decodes the loop's instructions (%llu decodes)", (unsigned long long)dec[3]);
	return g_fail;
}
