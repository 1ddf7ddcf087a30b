/* interp/misc.c — everything small: NOP forms, ENDBR, PAUSE, fences,
 * flag twiddles (CLC STC CMC CLD STD LAHF SAHF), CPUID RDTSC RDTSCP XGETBV
 * (executed for real: they report this machine, which is what the
 * program would have seen), prefetches, and the instructions that end a
 * run (SYSCALL, INT*, UD*, HLT).
 *
 * Workload: rare but must not end runs needlessly (endbr64 and nops
 * start most functions and loops).
 *
 * Concurrency: no memory access except fences, which are executed.
 */
#include <cpuid.h>
#include "interp/interp.h"
#include "interp/internal.h"

static int h_nop(struct interp_exec *x) { return INTERP_OK; }

static int h_pause(struct interp_exec *x)
{
	__asm__ volatile("pause");
	return INTERP_OK;
}

static int h_fence(struct interp_exec *x)
{
	__asm__ volatile("mfence" ::: "memory");
	return INTERP_OK;
}

static int h_clc(struct interp_exec *x) { x->rflags &= ~(uint64_t)INTERP_CF; return INTERP_OK; }
static int h_stc(struct interp_exec *x) { x->rflags |= INTERP_CF; return INTERP_OK; }
static int h_cmc(struct interp_exec *x) { x->rflags ^= INTERP_CF; return INTERP_OK; }
static int h_cld(struct interp_exec *x) { x->rflags &= ~(uint64_t)INTERP_DF; return INTERP_OK; }
static int h_std(struct interp_exec *x) { x->rflags |= INTERP_DF; return INTERP_OK; }

static int h_lahf(struct interp_exec *x)
{
	uint64_t ah = (x->rflags & 0xd5) | 2;

	ST->gpr[INTERP_RAX] = (ST->gpr[INTERP_RAX] & ~0xff00ull) | ah << 8;
	return INTERP_OK;
}

static int h_sahf(struct interp_exec *x)
{
	uint64_t ah = (ST->gpr[INTERP_RAX] >> 8) & 0xd5;

	x->rflags = (x->rflags & ~0xd5ull) | ah;
	return INTERP_OK;
}

static int h_cpuid(struct interp_exec *x)
{
	unsigned a, b, c, d;

	__cpuid_count((unsigned)ST->gpr[INTERP_RAX], (unsigned)ST->gpr[INTERP_RCX], a, b, c, d);
	ST->gpr[INTERP_RAX] = a;
	ST->gpr[INTERP_RBX] = b;
	ST->gpr[INTERP_RCX] = c;
	ST->gpr[INTERP_RDX] = d;
	return INTERP_OK;
}

static int h_rdtsc(struct interp_exec *x)
{
	unsigned lo, hi;

	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	ST->gpr[INTERP_RAX] = lo;
	ST->gpr[INTERP_RDX] = hi;
	return INTERP_OK;
}

static int h_rdtscp(struct interp_exec *x)
{
	unsigned lo, hi, aux;

	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	ST->gpr[INTERP_RAX] = lo;
	ST->gpr[INTERP_RDX] = hi;
	ST->gpr[INTERP_RCX] = aux;
	return INTERP_OK;
}

static int h_xgetbv(struct interp_exec *x)
{
	unsigned lo, hi, c = (unsigned)ST->gpr[INTERP_RCX];

	if (c > 1)
		return INTERP_STOP_WOULD_FAULT;     /* #GP for unknown XCRs */
	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(c));
	ST->gpr[INTERP_RAX] = lo;
	ST->gpr[INTERP_RDX] = hi;
	return INTERP_OK;
}

static int h_syscall(struct interp_exec *x) { return INTERP_STOP_SYSCALL; }
static int h_trap(struct interp_exec *x) { return INTERP_STOP_WOULD_FAULT; }

const struct interp_family interp_family_misc[] = {
	{ ZYDIS_MNEMONIC_NOP, h_nop },
	{ ZYDIS_MNEMONIC_ENDBR64, h_nop },
	{ ZYDIS_MNEMONIC_ENDBR32, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCH, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCHW, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCHNTA, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCHT0, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCHT1, h_nop },
	{ ZYDIS_MNEMONIC_PREFETCHT2, h_nop },
	{ ZYDIS_MNEMONIC_PAUSE, h_pause },
	{ ZYDIS_MNEMONIC_LFENCE, h_fence },
	{ ZYDIS_MNEMONIC_MFENCE, h_fence },
	{ ZYDIS_MNEMONIC_SFENCE, h_fence },
	{ ZYDIS_MNEMONIC_CLC, h_clc }, { ZYDIS_MNEMONIC_STC, h_stc },
	{ ZYDIS_MNEMONIC_CMC, h_cmc }, { ZYDIS_MNEMONIC_CLD, h_cld },
	{ ZYDIS_MNEMONIC_STD, h_std },
	{ ZYDIS_MNEMONIC_LAHF, h_lahf }, { ZYDIS_MNEMONIC_SAHF, h_sahf },
	{ ZYDIS_MNEMONIC_CPUID, h_cpuid },
	{ ZYDIS_MNEMONIC_RDTSC, h_rdtsc }, { ZYDIS_MNEMONIC_RDTSCP, h_rdtscp },
	{ ZYDIS_MNEMONIC_XGETBV, h_xgetbv },
	{ ZYDIS_MNEMONIC_SYSCALL, h_syscall },
	{ ZYDIS_MNEMONIC_INT, h_syscall },
	{ ZYDIS_MNEMONIC_INT3, h_trap }, { ZYDIS_MNEMONIC_INT1, h_trap },
	{ ZYDIS_MNEMONIC_UD0, h_trap }, { ZYDIS_MNEMONIC_UD1, h_trap },
	{ ZYDIS_MNEMONIC_UD2, h_trap }, { ZYDIS_MNEMONIC_HLT, h_trap },
	{ 0, NULL }
};
