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

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define MISC_OPS(X) \
	X(NOP, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(ENDBR64, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(ENDBR32, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCH, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCHW, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCHNTA, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCHT0, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCHT1, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PREFETCHT2, h_nop, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(PAUSE, h_pause, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(LFENCE, h_fence, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(MFENCE, h_fence, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SFENCE, h_fence, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(CLC, h_clc, IFL_NONE, IFL_C, IFL_NONE, INTERP_VR_NONE) \
	X(STC, h_stc, IFL_NONE, IFL_C, IFL_NONE, INTERP_VR_NONE) \
	X(CMC, h_cmc, IFL_C, IFL_C, IFL_NONE, INTERP_VR_NONE) \
	X(CLD, h_cld, IFL_NONE, IFL_D, IFL_NONE, INTERP_VR_NONE) \
	X(STD, h_std, IFL_NONE, IFL_D, IFL_NONE, INTERP_VR_NONE) \
	X(LAHF, h_lahf, IFL_SZP | IFL_A | IFL_C, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SAHF, h_sahf, IFL_NONE, IFL_SZP | IFL_A | IFL_C, IFL_NONE, INTERP_VR_NONE) \
	X(CPUID, h_cpuid, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(RDTSC, h_rdtsc, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(RDTSCP, h_rdtscp, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(XGETBV, h_xgetbv, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(SYSCALL, h_syscall, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(INT, h_syscall, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(INT3, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(INT1, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(UD0, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(UD1, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(UD2, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(HLT, h_trap, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_misc[] = { MISC_OPS(INTERP_GP_ROW) INTERP_OPS_END };
