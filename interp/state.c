/* interp/state.c — interpreter state <-> signal ucontext_t.
 *
 * Owns the layout knowledge of the kernel's signal frame: the general
 * registers in uc_mcontext.gregs and the FP area at uc_mcontext.fpregs,
 * which on XSAVE machines is a standard-format XSAVE image: the 512-byte
 * legacy FXSAVE region (x87, MXCSR, xmm0-15), the 64-byte XSAVE header
 * (xstate_bv) and the extended components at the offsets CPUID leaf 0xD
 * reports. A component whose xstate_bv bit is clear is in its initial
 * state (zeros for the vector/opmask ones): its bytes in the frame are
 * not meaningful, and XRSTOR on sigreturn ignores them unless the bit is
 * set, so writing back a component means setting its bit.
 *
 * Workload: two conversions per interpreted sample; the component offsets
 * are read once by interp_init because CPUID traps to the hypervisor.
 * Copying the vector components (up to ~2.5 KB with AVX-512 live) was
 * most of a conversion, and most runs never use them: the lazy
 * conversion leaves them in the frame until the run meets an instruction
 * that may (interp_state_load_vec).
 *
 * Concurrency: the offsets are written once before any handler runs, then
 * only read.
 */
#include <cpuid.h>
#include <errno.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <asm/prctl.h>
#include "interp/interp.h"

#define FP_XSTATE_MAGIC1 0x46505853u
#define FP_XSTATE_MAGIC2 0x46505845u

/* Offsets (from the start of the XSAVE image) of components 2,5,6,7. */
static struct {
	int ready;
	uint32_t off[8], size[8];
	uint64_t supported;        /* XCR0 as reported by CPUID 0xD.0 */
	int fsgsbase;              /* rdfsbase usable in user mode */
} g_xs;

int interp_xsave_init(void)
{
	unsigned a, b, c, d;

	if (g_xs.ready)
		return 0;
	if (__get_cpuid_max(0, NULL) >= 0xd) {
		__cpuid_count(0xd, 0, a, b, c, d);
		g_xs.supported = ((uint64_t)d << 32) | a;
		for (int i = 2; i < 8; i++) {
			if (!(g_xs.supported & (1ull << i)))
				continue;
			__cpuid_count(0xd, i, a, b, c, d);
			g_xs.size[i] = a;
			g_xs.off[i] = b;
		}
	}
#ifndef HWCAP2_FSGSBASE
#define HWCAP2_FSGSBASE (1 << 1)
#endif
	g_xs.fsgsbase = !!(getauxval(AT_HWCAP2) & HWCAP2_FSGSBASE);
	g_xs.ready = 1;
	return 0;
}

/* fs/gs base of the calling thread, read on first use by interp_ea. */
void interp_load_segbases(struct interp_state *st)
{
	unsigned long fs = 0, gs = 0;

	if (g_xs.fsgsbase) {
		__asm__ volatile("rdfsbase %0" : "=r"(fs));
		__asm__ volatile("rdgsbase %0" : "=r"(gs));
	} else {
		syscall(SYS_arch_prctl, ARCH_GET_FS, &fs);
		syscall(SYS_arch_prctl, ARCH_GET_GS, &gs);
	}
	st->fs_base = fs;
	st->gs_base = gs;
	st->seg_valid = 1;
}

/* ucontext gregs index for each GPR in encoding order. */
static const int kgreg[16] = {
	REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
	REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
};

/* Does the FP area carry an XSAVE header we can trust? Returns the
 * frame's xfeatures (the components the kernel saved) or 0. */
static uint64_t frame_xfeatures(const uint8_t *fp)
{
	uint32_t magic1, xsize, magic2;
	uint64_t xfeat;

	memcpy(&magic1, fp + 464, 4);
	if (magic1 != FP_XSTATE_MAGIC1)
		return 0;
	memcpy(&xfeat, fp + 472, 8);
	memcpy(&xsize, fp + 480, 4);
	memcpy(&magic2, fp + xsize, 4);
	if (magic2 != FP_XSTATE_MAGIC2)
		return 0;
	return xfeat;
}

/* Copy x87, vector and opmask registers from the FP area fp (a frame
 * with an XSAVE header if xfeat != 0): a component whose xstate_bv bit is
 * clear gets its initial state. */
static void load_vec(struct interp_state *st, const uint8_t *fp, uint64_t xfeat)
{
	uint64_t bv;

	memset(st->k, 0, sizeof st->k);
	memset(st->zmm, 0, sizeof st->zmm);
	memcpy(st->x87, fp, sizeof st->x87);
	if (!xfeat) {
		/* Plain FXSAVE frame: x87 and SSE only, both always valid. */
		for (int i = 0; i < 16; i++)
			memcpy(st->zmm[i].b, fp + 160 + 16 * i, 16);
		return;
	}
	memcpy(&bv, fp + 512, 8);
	if (bv & INTERP_XS_SSE)
		for (int i = 0; i < 16; i++)
			memcpy(st->zmm[i].b, fp + 160 + 16 * i, 16);
	if (bv & INTERP_XS_YMM && g_xs.off[2])
		for (int i = 0; i < 16; i++)
			memcpy(st->zmm[i].b + 16, fp + g_xs.off[2] + 16 * i, 16);
	if (bv & INTERP_XS_OPMASK && g_xs.off[5])
		memcpy(st->k, fp + g_xs.off[5], 64);
	if (bv & INTERP_XS_ZMM_H && g_xs.off[6])
		for (int i = 0; i < 16; i++)
			memcpy(st->zmm[i].b + 32, fp + g_xs.off[6] + 32 * i, 32);
	if (bv & INTERP_XS_HI16 && g_xs.off[7])
		for (int i = 0; i < 16; i++)
			memcpy(st->zmm[16 + i].b, fp + g_xs.off[7] + 64 * i, 64);
	if (!(bv & INTERP_XS_X87)) {
		/* initial x87 state: FCW 0x37f, everything else zero */
		memset(st->x87, 0, sizeof st->x87);
		st->x87[0] = 0x7f;
		st->x87[1] = 0x03;
	}
}

static int from_ucontext(struct interp_state *st, const ucontext_t *uc, int lazy)
{
	const greg_t *g = uc->uc_mcontext.gregs;
	const uint8_t *fp = (const uint8_t *)uc->uc_mcontext.fpregs;
	uint64_t xfeat, bv = 0;

	for (int i = 0; i < 16; i++)
		st->gpr[i] = g[kgreg[i]];
	st->rip = g[REG_RIP];
	st->rflags = g[REG_EFL];
	st->seg_valid = 0;
	st->xstate_bv = 0;
	st->xstate_dirty = 0;
	st->xstate_avail = 0;
	st->lazy_fp = NULL;
	if (!fp) {
		memset(st->k, 0, sizeof st->k);
		memset(st->zmm, 0, sizeof st->zmm);
		st->has_fpregs = 0;
		st->mxcsr = 0x1f80;
		st->mxcsr_mask = 0xffff;
		memset(st->x87, 0, sizeof st->x87);
		return 0;
	}
	st->has_fpregs = 1;
	memcpy(&st->mxcsr, fp + 24, 4);
	memcpy(&st->mxcsr_mask, fp + 28, 4);
	xfeat = frame_xfeatures(fp);
	if (!xfeat) {
		st->xstate_avail = INTERP_XS_X87 | INTERP_XS_SSE;
		st->xstate_bv = INTERP_XS_X87 | INTERP_XS_SSE;
	} else {
		memcpy(&bv, fp + 512, 8);
		st->xstate_avail = (xfeat & INTERP_XS_ALL) | INTERP_XS_X87 | INTERP_XS_SSE;
		st->xstate_bv = bv & INTERP_XS_ALL;
	}
	if (lazy)
		st->lazy_fp = fp;
	else
		load_vec(st, fp, xfeat);
	return 0;
}

int interp_from_ucontext(struct interp_state *st, const ucontext_t *uc)
{
	return from_ucontext(st, uc, 0);
}

int interp_from_ucontext_lazy(struct interp_state *st, const ucontext_t *uc)
{
	return from_ucontext(st, uc, 1);
}

void interp_state_load_vec(struct interp_state *st)
{
	const uint8_t *fp = st->lazy_fp;

	if (!fp)
		return;
	load_vec(st, fp, frame_xfeatures(fp));
	st->lazy_fp = NULL;
}

int interp_to_ucontext(const struct interp_state *st, ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	uint8_t *fp = (uint8_t *)uc->uc_mcontext.fpregs;
	uint64_t xfeat, bv, w;

	for (int i = 0; i < 16; i++)
		g[kgreg[i]] = st->gpr[i];
	g[REG_RIP] = st->rip;
	g[REG_EFL] = st->rflags;
	if (!fp)
		return 0;
	memcpy(fp + 24, &st->mxcsr, 4);
	if (st->lazy_fp)
		return 0;  /* never loaded, so nothing written but MXCSR */
	xfeat = frame_xfeatures(fp);
	if (st->xstate_dirty & INTERP_XS_X87) {
		/* x87 control/status (x87.c): FCW..FDP and ST0-7, not the
		 * MXCSR words between them (bytes 24..31, written above) */
		memcpy(fp, st->x87, 24);
		memcpy(fp + 32, st->x87 + 32, 128);
	}
	if (!xfeat) {
		for (int i = 0; i < 16; i++)
			memcpy(fp + 160 + 16 * i, st->zmm[i].b, 16);
		return 0;
	}
	memcpy(&bv, fp + 512, 8);
	if (st->xstate_dirty & INTERP_XS_X87)
		bv |= INTERP_XS_X87;
	/* Write what was written, and whatever became live that the frame
	 * holds as initial; set its bit, or XRSTOR ignores the bytes. */
	w = (st->xstate_dirty | (st->xstate_bv & ~bv)) & xfeat & INTERP_XS_ALL & ~INTERP_XS_X87;
	if (w & INTERP_XS_SSE)
		for (int i = 0; i < 16; i++)
			memcpy(fp + 160 + 16 * i, st->zmm[i].b, 16);
	if (w & INTERP_XS_YMM && g_xs.off[2])
		for (int i = 0; i < 16; i++)
			memcpy(fp + g_xs.off[2] + 16 * i, st->zmm[i].b + 16, 16);
	if (w & INTERP_XS_OPMASK && g_xs.off[5])
		memcpy(fp + g_xs.off[5], st->k, 64);
	if (w & INTERP_XS_ZMM_H && g_xs.off[6])
		for (int i = 0; i < 16; i++)
			memcpy(fp + g_xs.off[6] + 32 * i, st->zmm[i].b + 32, 32);
	if (w & INTERP_XS_HI16 && g_xs.off[7])
		for (int i = 0; i < 16; i++)
			memcpy(fp + g_xs.off[7] + 64 * i, st->zmm[16 + i].b, 64);
	bv |= w;
	memcpy(fp + 512, &bv, 8);
	return 0;
}
