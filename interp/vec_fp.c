/* interp/vec_fp.c — floating point of SSE/SSE2 and AVX/FMA: scalar and
 * packed arithmetic, conversions, (u)comis, movss/movsd, fused
 * multiply-add; AES, SHA and (V)PCLMULQDQ, run on the host the same way;
 * the imm8 compares and rounds; LDMXCSR/STMXCSR. Each is one row
 * (FDESC_LIST, FIMM_LIST) naming its handler by kind.
 *
 * Exactness comes from the hardware: the interpreter runs on the very CPU
 * whose behaviour it must reproduce, so each operation executes the real
 * instruction on copies of the operands, under the program's MXCSR
 * (rounding, FTZ, DAZ) with all exceptions masked, and the exception flags
 * it raised are ORed into the program's MXCSR. If the program has one of
 * the raised exceptions unmasked, the hardware would trap (#XM): the run
 * stops with would_fault and the program takes its own SIGFPE natively.
 * (Underflow unmasked is the exception: the trap condition differs from
 * the masked flag condition, so such programs stop as unsupported.)
 * A VEX.256/EVEX.512 packed operation runs the 128-bit form on each lane
 * (lane results and flags are independent). EVEX write-masked arithmetic
 * and FMA run with 1.0 in the masked-off elements, so that only selected
 * elements can raise flags; other masked FP stops.
 *
 * Workload: libm (pow/exp/log: vfmadd*sd, vmulsd, vaddsd), numeric loops
 * compiled for baseline x86-64 (movsd/addsd/mulsd/cvtsi2sd/ucomisd).
 *
 * Concurrency: the host MXCSR is saved and restored inside each asm block,
 * so nothing leaks into the interpreter's (or the handler's) own FP code.
 */
#include "interp/vec.h"

/* d = op(a, b, c); mx[0] MXCSR to run under, mx[1] MXCSR after, mx[2]
 * scratch for the host's. In the bodies: %0 d, %1 a, %2 b, %3 c. */
typedef interp_fp_fn fp_fn;   /* internal.h */

#define FP_RAW(name, body) \
	static void fp_##name(uint8_t *d, const uint8_t *a, const uint8_t *b, \
			      const uint8_t *c, uint32_t *mx) \
	{ \
		__asm__ volatile("stmxcsr 8(%4)\n\tldmxcsr (%4)\n\t" body \
				 "stmxcsr 4(%4)\n\tldmxcsr 8(%4)\n\t" \
				 : : "r"(d), "r"(a), "r"(b), "r"(c), "r"(mx) \
				 : "rax", "xmm0", "xmm1", "xmm2", "memory", "cc"); \
	}
#define LD2 "movdqu (%1), %%xmm0\n\tmovdqu (%2), %%xmm1\n\t"
#define STX "movdqu %%xmm0, (%0)\n\t"
/* two-operand SSE op: xmm0 = a op b (scalar forms keep a's upper part) */
#define FP2(name) FP_RAW(name, LD2 #name " %%xmm1, %%xmm0\n\t" STX)

FP2(addsd) FP2(addss) FP2(addpd) FP2(addps)
FP2(subsd) FP2(subss) FP2(subpd) FP2(subps)
FP2(mulsd) FP2(mulss) FP2(mulpd) FP2(mulps)
FP2(divsd) FP2(divss) FP2(divpd) FP2(divps)
FP2(minsd) FP2(minss) FP2(minpd) FP2(minps)
FP2(maxsd) FP2(maxss) FP2(maxpd) FP2(maxps)
FP2(sqrtsd) FP2(sqrtss) FP2(sqrtpd) FP2(sqrtps)
FP2(cvtss2sd) FP2(cvtsd2ss)
FP2(cvtdq2pd) FP2(cvtdq2ps) FP2(cvtps2pd) FP2(cvtpd2ps)
FP2(cvttps2dq) FP2(cvtps2dq) FP2(cvttpd2dq) FP2(cvtpd2dq)
FP2(haddpd) FP2(haddps) FP2(addsubpd) FP2(addsubps) FP2(hsubpd) FP2(hsubps)
/* AVX-512 (EVEX-only: a program using them runs on a CPU that has them) */
#define FPV2(name) FP_RAW(name, LD2 #name " %%xmm1, %%xmm0\n\t" STX)
#define FPV3(name) FP_RAW(name, LD2 #name " %%xmm1, %%xmm0, %%xmm0\n\t" STX)
FPV2(vcvtqq2pd) FPV2(vcvtuqq2pd) FPV2(vcvtpd2qq) FPV2(vcvttpd2qq) FPV2(vcvtpd2uqq)
FPV2(vcvttpd2uqq) FPV2(vcvtudq2ps) FPV2(vcvtps2udq) FPV2(vcvttps2udq)
FPV2(vrcp14ps) FPV2(vrcp14pd) FPV2(vrsqrt14ps) FPV2(vrsqrt14pd) FPV2(vgetexpps) FPV2(vgetexppd)
FPV3(vscalefps) FPV3(vscalefpd) FPV3(vscalefss) FPV3(vscalefsd) FPV3(vrcp14ss) FPV3(vrcp14sd)
FPV3(vrsqrt14ss) FPV3(vrsqrt14sd) FPV3(vgetexpss) FPV3(vgetexpsd)
FP_RAW(vcvtusi2sdl, "movdqu (%1), %%xmm0\n\tvcvtusi2sdl (%2), %%xmm0, %%xmm0\n\t" STX)
FP_RAW(vcvtusi2sdq, "movdqu (%1), %%xmm0\n\tvcvtusi2sdq (%2), %%xmm0, %%xmm0\n\t" STX)
FP_RAW(vcvtusi2ssl, "movdqu (%1), %%xmm0\n\tvcvtusi2ssl (%2), %%xmm0, %%xmm0\n\t" STX)
FP_RAW(vcvtusi2ssq, "movdqu (%1), %%xmm0\n\tvcvtusi2ssq (%2), %%xmm0, %%xmm0\n\t" STX)
/* F16C (VEX: a program using them runs on a CPU that has them) */
FP_RAW(vcvtph2ps, LD2 "vcvtph2ps %%xmm1, %%xmm0\n\t" STX)
#define PH_FN(i) FP_RAW(vcvtps2ph_##i, LD2 "vcvtps2ph $" #i ", %%xmm1, %%xmm0\n\t" STX)
PH_FN(0) PH_FN(1) PH_FN(2) PH_FN(3) PH_FN(4) PH_FN(5) PH_FN(6) PH_FN(7)
static fp_fn *const k_vcvtps2ph[8] = {
	fp_vcvtps2ph_0, fp_vcvtps2ph_1, fp_vcvtps2ph_2, fp_vcvtps2ph_3,
	fp_vcvtps2ph_4, fp_vcvtps2ph_5, fp_vcvtps2ph_6, fp_vcvtps2ph_7,
};
/* approximations: this CPU's own tables, which is what the program gets */
FP2(rcpss) FP2(rsqrtss) FP2(rcpps) FP2(rsqrtps)
/* AES-NI: no MXCSR effect, run the same way (a program using them runs on
 * a CPU that has them) */
FP2(aesenc) FP2(aesenclast) FP2(aesdec) FP2(aesdeclast) FP2(aesimc)
/* SHA extensions (legacy encoding only); sha256rnds2 also reads xmm0 (c) */
FP2(sha256msg1) FP2(sha256msg2) FP2(sha1msg1) FP2(sha1msg2) FP2(sha1nexte)
FP_RAW(sha256rnds2, "movdqu (%1), %%xmm1\n\tmovdqu (%2), %%xmm2\n\tmovdqu (%3), %%xmm0\n\t"
       "sha256rnds2 %%xmm0, %%xmm2, %%xmm1\n\tmovdqu %%xmm1, (%0)\n\t")

/* integer source (b holds it) */
FP_RAW(cvtsi2sdl, "movdqu (%1), %%xmm0\n\tcvtsi2sdl (%2), %%xmm0\n\t" STX)
FP_RAW(cvtsi2sdq, "movdqu (%1), %%xmm0\n\tcvtsi2sdq (%2), %%xmm0\n\t" STX)
FP_RAW(cvtsi2ssl, "movdqu (%1), %%xmm0\n\tcvtsi2ssl (%2), %%xmm0\n\t" STX)
FP_RAW(cvtsi2ssq, "movdqu (%1), %%xmm0\n\tcvtsi2ssq (%2), %%xmm0\n\t" STX)
/* integer result into d[0..7] */
#define FP2I(name, insn, reg) \
	FP_RAW(name, "movdqu (%2), %%xmm1\n\t" insn " %%xmm1, " reg "\n\tmov %%rax, (%0)\n\t")
FP2I(cvttsd2sil, "xor %%eax, %%eax\n\tcvttsd2si", "%%eax")
FP2I(cvttsd2siq, "cvttsd2si", "%%rax")
FP2I(cvtsd2sil, "xor %%eax, %%eax\n\tcvtsd2si", "%%eax")
FP2I(cvtsd2siq, "cvtsd2si", "%%rax")
FP2I(cvttss2sil, "xor %%eax, %%eax\n\tcvttss2si", "%%eax")
FP2I(cvttss2siq, "cvttss2si", "%%rax")
FP2I(cvtss2sil, "xor %%eax, %%eax\n\tcvtss2si", "%%eax")
FP2I(cvtss2siq, "cvtss2si", "%%rax")
FP2I(vcvttsd2usil, "xor %%eax, %%eax\n\tvcvttsd2usi", "%%eax")
FP2I(vcvttsd2usiq, "vcvttsd2usi", "%%rax")
FP2I(vcvtsd2usil, "xor %%eax, %%eax\n\tvcvtsd2usi", "%%eax")
FP2I(vcvtsd2usiq, "vcvtsd2usi", "%%rax")
FP2I(vcvttss2usil, "xor %%eax, %%eax\n\tvcvttss2usi", "%%eax")
FP2I(vcvttss2usiq, "vcvttss2usi", "%%rax")
FP2I(vcvtss2usil, "xor %%eax, %%eax\n\tvcvtss2usi", "%%eax")
FP2I(vcvtss2usiq, "vcvtss2usi", "%%rax")
/* compares into flags: lahf gives SF ZF AF PF CF in their RFLAGS places */
#define FPCMP(name) FP_RAW(name, LD2 #name " %%xmm1, %%xmm0\n\tlahf\n\tmov %%ah, (%0)\n\t")
FPCMP(ucomisd) FPCMP(comisd) FPCMP(ucomiss) FPCMP(comiss)


/* Predicate and rounding-control immediates are part of the instruction,
 * so there is one host function per immediate value. cmp predicates 0..7
 * use the legacy encoding (runs on any SSE2 CPU); 8..31 exist only in VEX
 * form, so a program using them runs on an AVX CPU. */
#define IMM_LEG(name, insn, imm) FP_RAW(name##_##imm, LD2 insn " $" #imm ", %%xmm1, %%xmm0\n\t" STX)
#define IMM_VEX(name, insn, imm) FP_RAW(name##_##imm, LD2 insn " $" #imm ", %%xmm1, %%xmm0, %%xmm0\n\t" STX)
#define REP8(M, n, i, b) M(n, i, b##0) M(n, i, b##1) M(n, i, b##2) M(n, i, b##3) \
	M(n, i, b##4) M(n, i, b##5) M(n, i, b##6) M(n, i, b##7)
#define CMP_FNS(n, insn, vinsn) \
	IMM_LEG(n, insn, 0) IMM_LEG(n, insn, 1) IMM_LEG(n, insn, 2) IMM_LEG(n, insn, 3) \
	IMM_LEG(n, insn, 4) IMM_LEG(n, insn, 5) IMM_LEG(n, insn, 6) IMM_LEG(n, insn, 7) \
	IMM_VEX(n, vinsn, 8) IMM_VEX(n, vinsn, 9) IMM_VEX(n, vinsn, 10) IMM_VEX(n, vinsn, 11) \
	IMM_VEX(n, vinsn, 12) IMM_VEX(n, vinsn, 13) IMM_VEX(n, vinsn, 14) IMM_VEX(n, vinsn, 15) \
	IMM_VEX(n, vinsn, 16) IMM_VEX(n, vinsn, 17) IMM_VEX(n, vinsn, 18) IMM_VEX(n, vinsn, 19) \
	IMM_VEX(n, vinsn, 20) IMM_VEX(n, vinsn, 21) IMM_VEX(n, vinsn, 22) IMM_VEX(n, vinsn, 23) \
	IMM_VEX(n, vinsn, 24) IMM_VEX(n, vinsn, 25) IMM_VEX(n, vinsn, 26) IMM_VEX(n, vinsn, 27) \
	IMM_VEX(n, vinsn, 28) IMM_VEX(n, vinsn, 29) IMM_VEX(n, vinsn, 30) IMM_VEX(n, vinsn, 31) \
	static fp_fn *const k_##n[32] = { \
		fp_##n##_0, fp_##n##_1, fp_##n##_2, fp_##n##_3, fp_##n##_4, fp_##n##_5, \
		fp_##n##_6, fp_##n##_7, fp_##n##_8, fp_##n##_9, fp_##n##_10, fp_##n##_11, \
		fp_##n##_12, fp_##n##_13, fp_##n##_14, fp_##n##_15, fp_##n##_16, fp_##n##_17, \
		fp_##n##_18, fp_##n##_19, fp_##n##_20, fp_##n##_21, fp_##n##_22, fp_##n##_23, \
		fp_##n##_24, fp_##n##_25, fp_##n##_26, fp_##n##_27, fp_##n##_28, fp_##n##_29, \
		fp_##n##_30, fp_##n##_31 };
CMP_FNS(cmpsd, "cmpsd", "vcmpsd")
CMP_FNS(cmpss, "cmpss", "vcmpss")
CMP_FNS(cmppd, "cmppd", "vcmppd")
CMP_FNS(cmpps, "cmpps", "vcmpps")
/* round*: imm bits 0..3 matter (rounding control, MXCSR.RC select,
 * precision-exception suppression) */
#define RND_FNS(n) \
	IMM_LEG(n, #n, 0) IMM_LEG(n, #n, 1) IMM_LEG(n, #n, 2) IMM_LEG(n, #n, 3) \
	IMM_LEG(n, #n, 4) IMM_LEG(n, #n, 5) IMM_LEG(n, #n, 6) IMM_LEG(n, #n, 7) \
	IMM_LEG(n, #n, 8) IMM_LEG(n, #n, 9) IMM_LEG(n, #n, 10) IMM_LEG(n, #n, 11) \
	IMM_LEG(n, #n, 12) IMM_LEG(n, #n, 13) IMM_LEG(n, #n, 14) IMM_LEG(n, #n, 15) \
	static fp_fn *const k_##n[32] = { \
		fp_##n##_0, fp_##n##_1, fp_##n##_2, fp_##n##_3, fp_##n##_4, fp_##n##_5, \
		fp_##n##_6, fp_##n##_7, fp_##n##_8, fp_##n##_9, fp_##n##_10, fp_##n##_11, \
		fp_##n##_12, fp_##n##_13, fp_##n##_14, fp_##n##_15 };
RND_FNS(roundsd) RND_FNS(roundss) RND_FNS(roundpd) RND_FNS(roundps)
/* pclmulqdq: only imm bits 0 and 4 select (the handler masks the rest) */
IMM_LEG(pclmul, "pclmulqdq", 0) IMM_LEG(pclmul, "pclmulqdq", 1)
IMM_LEG(pclmul, "pclmulqdq", 16) IMM_LEG(pclmul, "pclmulqdq", 17)
IMM_LEG(sha1rnds4, "sha1rnds4", 0) IMM_LEG(sha1rnds4, "sha1rnds4", 1)
IMM_LEG(sha1rnds4, "sha1rnds4", 2) IMM_LEG(sha1rnds4, "sha1rnds4", 3)
static fp_fn *const k_sha1rnds4[32] = {
	fp_sha1rnds4_0, fp_sha1rnds4_1, fp_sha1rnds4_2, fp_sha1rnds4_3,
};
static fp_fn *const k_pclmul[32] = {
	[0] = fp_pclmul_0, [1] = fp_pclmul_1, [16] = fp_pclmul_16, [17] = fp_pclmul_17,
};

/* FMA: xmm0 = dst (a), xmm1 = src2 (b), xmm2 = src3 (c) */
#define FMA1(name) FP_RAW(name, "vmovdqu (%1), %%xmm0\n\tvmovdqu (%2), %%xmm1\n\t" \
			  "vmovdqu (%3), %%xmm2\n\t" #name " %%xmm2, %%xmm1, %%xmm0\n\t" \
			  "vmovdqu %%xmm0, (%0)\n\t")
#define FMA_T(op, ord) FMA1(op##ord##sd) FMA1(op##ord##ss) FMA1(op##ord##pd) FMA1(op##ord##ps)
#define FMA_O(op) FMA_T(op, 132) FMA_T(op, 213) FMA_T(op, 231)
FMA_O(vfmadd) FMA_O(vfmsub) FMA_O(vfnmadd) FMA_O(vfnmsub)
#define FMA_AS(op) FMA1(op##132pd) FMA1(op##213pd) FMA1(op##231pd) \
	FMA1(op##132ps) FMA1(op##213ps) FMA1(op##231ps)
FMA_AS(vfmaddsub) FMA_AS(vfmsubadd)

/* ------------------------------------------------------- descriptors */

enum { FK_BIN = 1, FK_UN, FK_CMPF, FK_CVT2I, FK_CVTI2F, FK_FMA, FK_MOVS, FK_IMM, FK_MXCSR,
       FK_AESKG, FK_PS2PH };
#define FF_SCALAR 1     /* one element: no lanes beyond the first 16 bytes */
#define FF_NARROW 2     /* packed conversion to half the width (pd2ps): each
			 * 16-byte source lane gives 8 bytes of the result */
#define FF_WIDEN 128    /* to twice the width (dq2pd): each 8 source bytes
			 * give a 16-byte result lane */
#define FF_PACKED 4
#define FF_IMM11  8     /* FK_IMM: only imm bits 0 and 4 count (pclmulqdq) */
#define FF_IMM3   16    /* FK_IMM: only imm bits 0..1 count (sha1rnds4) */
#define FF_XMM0   32    /* reads xmm0 implicitly (sha256rnds2) */
#define FF_UNALIGN 64   /* legacy form without the 16-byte alignment check
			 * on AMD (Zen 5: the SHA rows); elsewhere (the Intel
			 * Xeon 6/207 faults on a misaligned sha256msg2) the
			 * check is made */
#define FF_MASKOK 256   /* EVEX write-masking modelled: same element type in
			 * and out, and 1.0 in every input raises nothing */
#define FF_CMPK   512   /* EVEX form compares into an opmask */

/* struct interp_fdesc (kind, esz, flags, fn, fn64, byimm) is in internal.h: a
 * row's spec. */

#define FDESC_LIST(X) \
	X(ADDSD, FK_BIN, FF_SCALAR, 8, addsd, 0) X(VADDSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, addsd, 0) \
	X(ADDSS, FK_BIN, FF_SCALAR, 4, addss, 0) X(VADDSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, addss, 0) \
	X(ADDPD, FK_BIN, FF_PACKED, 8, addpd, 0) X(VADDPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, addpd, 0) \
	X(ADDPS, FK_BIN, FF_PACKED, 4, addps, 0) X(VADDPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, addps, 0) \
	X(SUBSD, FK_BIN, FF_SCALAR, 8, subsd, 0) X(VSUBSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, subsd, 0) \
	X(SUBSS, FK_BIN, FF_SCALAR, 4, subss, 0) X(VSUBSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, subss, 0) \
	X(SUBPD, FK_BIN, FF_PACKED, 8, subpd, 0) X(VSUBPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, subpd, 0) \
	X(SUBPS, FK_BIN, FF_PACKED, 4, subps, 0) X(VSUBPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, subps, 0) \
	X(MULSD, FK_BIN, FF_SCALAR, 8, mulsd, 0) X(VMULSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, mulsd, 0) \
	X(MULSS, FK_BIN, FF_SCALAR, 4, mulss, 0) X(VMULSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, mulss, 0) \
	X(MULPD, FK_BIN, FF_PACKED, 8, mulpd, 0) X(VMULPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, mulpd, 0) \
	X(MULPS, FK_BIN, FF_PACKED, 4, mulps, 0) X(VMULPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, mulps, 0) \
	X(DIVSD, FK_BIN, FF_SCALAR, 8, divsd, 0) X(VDIVSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, divsd, 0) \
	X(DIVSS, FK_BIN, FF_SCALAR, 4, divss, 0) X(VDIVSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, divss, 0) \
	X(DIVPD, FK_BIN, FF_PACKED, 8, divpd, 0) X(VDIVPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, divpd, 0) \
	X(DIVPS, FK_BIN, FF_PACKED, 4, divps, 0) X(VDIVPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, divps, 0) \
	X(MINSD, FK_BIN, FF_SCALAR, 8, minsd, 0) X(VMINSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, minsd, 0) \
	X(MINSS, FK_BIN, FF_SCALAR, 4, minss, 0) X(VMINSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, minss, 0) \
	X(MINPD, FK_BIN, FF_PACKED, 8, minpd, 0) X(VMINPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, minpd, 0) \
	X(MINPS, FK_BIN, FF_PACKED, 4, minps, 0) X(VMINPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, minps, 0) \
	X(MAXSD, FK_BIN, FF_SCALAR, 8, maxsd, 0) X(VMAXSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, maxsd, 0) \
	X(MAXSS, FK_BIN, FF_SCALAR, 4, maxss, 0) X(VMAXSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, maxss, 0) \
	X(MAXPD, FK_BIN, FF_PACKED, 8, maxpd, 0) X(VMAXPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, maxpd, 0) \
	X(MAXPS, FK_BIN, FF_PACKED, 4, maxps, 0) X(VMAXPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, maxps, 0) \
	X(SQRTSD, FK_BIN, FF_SCALAR, 8, sqrtsd, 0) X(VSQRTSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, sqrtsd, 0) \
	X(SQRTSS, FK_BIN, FF_SCALAR, 4, sqrtss, 0) X(VSQRTSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, sqrtss, 0) \
	X(SQRTPD, FK_UN, FF_PACKED, 8, sqrtpd, 0) X(VSQRTPD, FK_UN, FF_PACKED | FF_MASKOK, 8, sqrtpd, 0) \
	X(SQRTPS, FK_UN, FF_PACKED, 4, sqrtps, 0) X(VSQRTPS, FK_UN, FF_PACKED | FF_MASKOK, 4, sqrtps, 0) \
	X(HADDPD, FK_BIN, FF_PACKED, 8, haddpd, 0) X(VHADDPD, FK_BIN, FF_PACKED, 8, haddpd, 0) \
	X(HADDPS, FK_BIN, FF_PACKED, 4, haddps, 0) X(VHADDPS, FK_BIN, FF_PACKED, 4, haddps, 0) \
	X(ADDSUBPD, FK_BIN, FF_PACKED, 8, addsubpd, 0) X(VADDSUBPD, FK_BIN, FF_PACKED, 8, addsubpd, 0) \
	X(CVTSS2SD, FK_BIN, FF_SCALAR, 8, cvtss2sd, 0) X(VCVTSS2SD, FK_BIN, FF_SCALAR, 8, cvtss2sd, 0) \
	X(CVTSD2SS, FK_BIN, FF_SCALAR, 4, cvtsd2ss, 0) X(VCVTSD2SS, FK_BIN, FF_SCALAR, 4, cvtsd2ss, 0) \
	X(CVTDQ2PD, FK_UN, FF_WIDEN, 8, cvtdq2pd, 0) X(VCVTDQ2PD, FK_UN, FF_WIDEN, 8, cvtdq2pd, 0) \
	X(CVTPS2PD, FK_UN, FF_WIDEN, 8, cvtps2pd, 0) X(VCVTPS2PD, FK_UN, FF_WIDEN, 8, cvtps2pd, 0) \
	X(CVTPD2PS, FK_UN, FF_NARROW, 4, cvtpd2ps, 0) X(VCVTPD2PS, FK_UN, FF_NARROW, 4, cvtpd2ps, 0) \
	X(CVTTPD2DQ, FK_UN, FF_NARROW, 4, cvttpd2dq, 0) X(CVTPD2DQ, FK_UN, FF_NARROW, 4, cvtpd2dq, 0) \
	X(VCVTTPD2DQ, FK_UN, FF_NARROW, 4, cvttpd2dq, 0) X(VCVTPD2DQ, FK_UN, FF_NARROW, 4, cvtpd2dq, 0) \
	X(VCVTQQ2PD, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvtqq2pd, 0) \
	X(VCVTUQQ2PD, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvtuqq2pd, 0) \
	X(VCVTPD2QQ, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvtpd2qq, 0) \
	X(VCVTTPD2QQ, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvttpd2qq, 0) \
	X(VCVTPD2UQQ, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvtpd2uqq, 0) \
	X(VCVTTPD2UQQ, FK_UN, FF_PACKED | FF_MASKOK, 8, vcvttpd2uqq, 0) \
	X(VCVTUDQ2PS, FK_UN, FF_PACKED | FF_MASKOK, 4, vcvtudq2ps, 0) \
	X(VCVTPS2UDQ, FK_UN, FF_PACKED | FF_MASKOK, 4, vcvtps2udq, 0) \
	X(VCVTTPS2UDQ, FK_UN, FF_PACKED | FF_MASKOK, 4, vcvttps2udq, 0) \
	X(VRCP14PS, FK_UN, FF_PACKED | FF_MASKOK, 4, vrcp14ps, 0) \
	X(VRCP14PD, FK_UN, FF_PACKED | FF_MASKOK, 8, vrcp14pd, 0) \
	X(VRSQRT14PS, FK_UN, FF_PACKED | FF_MASKOK, 4, vrsqrt14ps, 0) \
	X(VRSQRT14PD, FK_UN, FF_PACKED | FF_MASKOK, 8, vrsqrt14pd, 0) \
	X(VGETEXPPS, FK_UN, FF_PACKED | FF_MASKOK, 4, vgetexpps, 0) \
	X(VGETEXPPD, FK_UN, FF_PACKED | FF_MASKOK, 8, vgetexppd, 0) \
	X(VSCALEFPS, FK_BIN, FF_PACKED | FF_MASKOK, 4, vscalefps, 0) \
	X(VSCALEFPD, FK_BIN, FF_PACKED | FF_MASKOK, 8, vscalefpd, 0) \
	X(VSCALEFSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, vscalefss, 0) \
	X(VSCALEFSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, vscalefsd, 0) \
	X(VRCP14SS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, vrcp14ss, 0) \
	X(VRCP14SD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, vrcp14sd, 0) \
	X(VRSQRT14SS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, vrsqrt14ss, 0) \
	X(VRSQRT14SD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, vrsqrt14sd, 0) \
	X(VGETEXPSS, FK_BIN, FF_SCALAR | FF_MASKOK, 4, vgetexpss, 0) \
	X(VGETEXPSD, FK_BIN, FF_SCALAR | FF_MASKOK, 8, vgetexpsd, 0) \
	X(VCVTUSI2SD, FK_CVTI2F, FF_SCALAR, 8, vcvtusi2sdl, vcvtusi2sdq) \
	X(VCVTUSI2SS, FK_CVTI2F, FF_SCALAR, 4, vcvtusi2ssl, vcvtusi2ssq) \
	X(VCVTTSD2USI, FK_CVT2I, FF_SCALAR, 8, vcvttsd2usil, vcvttsd2usiq) \
	X(VCVTSD2USI, FK_CVT2I, FF_SCALAR, 8, vcvtsd2usil, vcvtsd2usiq) \
	X(VCVTTSS2USI, FK_CVT2I, FF_SCALAR, 4, vcvttss2usil, vcvttss2usiq) \
	X(VCVTSS2USI, FK_CVT2I, FF_SCALAR, 4, vcvtss2usil, vcvtss2usiq) \
	X(VCVTPH2PS, FK_UN, FF_WIDEN, 4, vcvtph2ps, 0) X(VCVTPS2PH, FK_PS2PH, 0, 2, 0, 0) \
	X(RCPSS, FK_BIN, FF_SCALAR, 4, rcpss, 0) X(VRCPSS, FK_BIN, FF_SCALAR, 4, rcpss, 0) \
	X(RSQRTSS, FK_BIN, FF_SCALAR, 4, rsqrtss, 0) X(VRSQRTSS, FK_BIN, FF_SCALAR, 4, rsqrtss, 0) \
	X(RCPPS, FK_UN, FF_PACKED, 4, rcpps, 0) X(VRCPPS, FK_UN, FF_PACKED, 4, rcpps, 0) \
	X(RSQRTPS, FK_UN, FF_PACKED, 4, rsqrtps, 0) X(VRSQRTPS, FK_UN, FF_PACKED, 4, rsqrtps, 0) \
	X(ADDSUBPS, FK_BIN, FF_PACKED, 4, addsubps, 0) X(VADDSUBPS, FK_BIN, FF_PACKED, 4, addsubps, 0) \
	X(HSUBPD, FK_BIN, FF_PACKED, 8, hsubpd, 0) X(VHSUBPD, FK_BIN, FF_PACKED, 8, hsubpd, 0) \
	X(HSUBPS, FK_BIN, FF_PACKED, 4, hsubps, 0) X(VHSUBPS, FK_BIN, FF_PACKED, 4, hsubps, 0) \
	X(CVTDQ2PS, FK_UN, FF_PACKED, 4, cvtdq2ps, 0) X(VCVTDQ2PS, FK_UN, FF_PACKED, 4, cvtdq2ps, 0) \
	X(CVTTPS2DQ, FK_UN, FF_PACKED, 4, cvttps2dq, 0) X(VCVTTPS2DQ, FK_UN, FF_PACKED, 4, cvttps2dq, 0) \
	X(CVTPS2DQ, FK_UN, FF_PACKED, 4, cvtps2dq, 0) X(VCVTPS2DQ, FK_UN, FF_PACKED, 4, cvtps2dq, 0) \
	X(CVTSI2SD, FK_CVTI2F, FF_SCALAR, 8, cvtsi2sdl, cvtsi2sdq) \
	X(VCVTSI2SD, FK_CVTI2F, FF_SCALAR, 8, cvtsi2sdl, cvtsi2sdq) \
	X(CVTSI2SS, FK_CVTI2F, FF_SCALAR, 4, cvtsi2ssl, cvtsi2ssq) \
	X(VCVTSI2SS, FK_CVTI2F, FF_SCALAR, 4, cvtsi2ssl, cvtsi2ssq) \
	X(CVTTSD2SI, FK_CVT2I, FF_SCALAR, 8, cvttsd2sil, cvttsd2siq) \
	X(VCVTTSD2SI, FK_CVT2I, FF_SCALAR, 8, cvttsd2sil, cvttsd2siq) \
	X(CVTSD2SI, FK_CVT2I, FF_SCALAR, 8, cvtsd2sil, cvtsd2siq) \
	X(VCVTSD2SI, FK_CVT2I, FF_SCALAR, 8, cvtsd2sil, cvtsd2siq) \
	X(CVTTSS2SI, FK_CVT2I, FF_SCALAR, 4, cvttss2sil, cvttss2siq) \
	X(VCVTTSS2SI, FK_CVT2I, FF_SCALAR, 4, cvttss2sil, cvttss2siq) \
	X(CVTSS2SI, FK_CVT2I, FF_SCALAR, 4, cvtss2sil, cvtss2siq) \
	X(VCVTSS2SI, FK_CVT2I, FF_SCALAR, 4, cvtss2sil, cvtss2siq) \
	X(UCOMISD, FK_CMPF, FF_SCALAR, 8, ucomisd, 0) X(VUCOMISD, FK_CMPF, FF_SCALAR, 8, ucomisd, 0) \
	X(COMISD, FK_CMPF, FF_SCALAR, 8, comisd, 0) X(VCOMISD, FK_CMPF, FF_SCALAR, 8, comisd, 0) \
	X(UCOMISS, FK_CMPF, FF_SCALAR, 4, ucomiss, 0) X(VUCOMISS, FK_CMPF, FF_SCALAR, 4, ucomiss, 0) \
	X(COMISS, FK_CMPF, FF_SCALAR, 4, comiss, 0) X(VCOMISS, FK_CMPF, FF_SCALAR, 4, comiss, 0) \
	X(AESENC, FK_BIN, FF_PACKED, 16, aesenc, 0) X(VAESENC, FK_BIN, FF_PACKED, 16, aesenc, 0) \
	X(AESENCLAST, FK_BIN, FF_PACKED, 16, aesenclast, 0) \
	X(VAESENCLAST, FK_BIN, FF_PACKED, 16, aesenclast, 0) \
	X(AESDEC, FK_BIN, FF_PACKED, 16, aesdec, 0) X(VAESDEC, FK_BIN, FF_PACKED, 16, aesdec, 0) \
	X(AESDECLAST, FK_BIN, FF_PACKED, 16, aesdeclast, 0) \
	X(VAESDECLAST, FK_BIN, FF_PACKED, 16, aesdeclast, 0) \
	X(AESIMC, FK_UN, FF_PACKED, 16, aesimc, 0) X(VAESIMC, FK_UN, FF_PACKED, 16, aesimc, 0) \
	X(SHA256MSG1, FK_BIN, FF_PACKED | FF_UNALIGN, 16, sha256msg1, 0) X(SHA256MSG2, FK_BIN, FF_PACKED | FF_UNALIGN, 16, sha256msg2, 0) \
	X(SHA1MSG1, FK_BIN, FF_PACKED | FF_UNALIGN, 16, sha1msg1, 0) X(SHA1MSG2, FK_BIN, FF_PACKED | FF_UNALIGN, 16, sha1msg2, 0) \
	X(SHA1NEXTE, FK_BIN, FF_PACKED | FF_UNALIGN, 16, sha1nexte, 0) \
	X(SHA256RNDS2, FK_BIN, FF_PACKED | FF_UNALIGN | FF_XMM0, 16, sha256rnds2, 0) \
	X(AESKEYGENASSIST, FK_AESKG, FF_PACKED, 16, aesenclast, 0) \
	X(VAESKEYGENASSIST, FK_AESKG, FF_PACKED, 16, aesenclast, 0) \
	X(LDMXCSR, FK_MXCSR, 0, 4, 0, 0) X(VLDMXCSR, FK_MXCSR, 0, 4, 0, 0) \
	X(STMXCSR, FK_MXCSR, 0, 4, 0, 0) X(VSTMXCSR, FK_MXCSR, 0, 4, 0, 0) \
	X(MOVSD, FK_MOVS, FF_SCALAR, 8, 0, 0) X(VMOVSD, FK_MOVS, FF_SCALAR, 8, 0, 0) \
	X(MOVSS, FK_MOVS, FF_SCALAR, 4, 0, 0) X(VMOVSS, FK_MOVS, FF_SCALAR, 4, 0, 0) \
	FMA_LIST(X, VFMADD, vfmadd) FMA_LIST(X, VFMSUB, vfmsub) \
	FMA_LIST(X, VFNMADD, vfnmadd) FMA_LIST(X, VFNMSUB, vfnmsub) \
	FMA_AS_LIST(X, VFMADDSUB, vfmaddsub) FMA_AS_LIST(X, VFMSUBADD, vfmsubadd)

#define FMA_AS_LIST(X, M, m) \
	X(M##132PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##132pd, 0) \
	X(M##213PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##213pd, 0) \
	X(M##231PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##231pd, 0) \
	X(M##132PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##132ps, 0) \
	X(M##213PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##213ps, 0) \
	X(M##231PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##231ps, 0)
#define FMA_LIST(X, M, m) \
	X(M##132SD, FK_FMA, FF_SCALAR | FF_MASKOK, 8, m##132sd, 0) \
	X(M##213SD, FK_FMA, FF_SCALAR | FF_MASKOK, 8, m##213sd, 0) \
	X(M##231SD, FK_FMA, FF_SCALAR | FF_MASKOK, 8, m##231sd, 0) \
	X(M##132SS, FK_FMA, FF_SCALAR | FF_MASKOK, 4, m##132ss, 0) \
	X(M##213SS, FK_FMA, FF_SCALAR | FF_MASKOK, 4, m##213ss, 0) \
	X(M##231SS, FK_FMA, FF_SCALAR | FF_MASKOK, 4, m##231ss, 0) \
	X(M##132PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##132pd, 0) \
	X(M##213PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##213pd, 0) \
	X(M##231PD, FK_FMA, FF_PACKED | FF_MASKOK, 8, m##231pd, 0) \
	X(M##132PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##132ps, 0) \
	X(M##213PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##213ps, 0) \
	X(M##231PS, FK_FMA, FF_PACKED | FF_MASKOK, 4, m##231ps, 0)

/* the immediate forms: one function per imm8 value, in k_<name> */
#define FIMM_LIST(X) \
	X(CMPSD, FF_SCALAR, 8, cmpsd) X(VCMPSD, FF_SCALAR | FF_MASKOK | FF_CMPK, 8, cmpsd) \
	X(CMPSS, FF_SCALAR, 4, cmpss) X(VCMPSS, FF_SCALAR | FF_MASKOK | FF_CMPK, 4, cmpss) \
	X(CMPPD, FF_PACKED, 8, cmppd) X(VCMPPD, FF_PACKED | FF_MASKOK | FF_CMPK, 8, cmppd) \
	X(CMPPS, FF_PACKED, 4, cmpps) X(VCMPPS, FF_PACKED | FF_MASKOK | FF_CMPK, 4, cmpps) \
	X(ROUNDSD, FF_SCALAR, 8, roundsd) X(VROUNDSD, FF_SCALAR, 8, roundsd) \
	X(ROUNDSS, FF_SCALAR, 4, roundss) X(VROUNDSS, FF_SCALAR, 4, roundss) \
	X(ROUNDPD, FF_PACKED, 8, roundpd) X(VROUNDPD, FF_PACKED, 8, roundpd) \
	X(ROUNDPS, FF_PACKED, 4, roundps) X(VROUNDPS, FF_PACKED, 4, roundps) \
	X(PCLMULQDQ, FF_PACKED | FF_IMM11, 8, pclmul) X(VPCLMULQDQ, FF_PACKED | FF_IMM11, 8, pclmul) \
	X(SHA1RNDS4, FF_PACKED | FF_UNALIGN | FF_IMM3, 16, sha1rnds4)
#define fp_0 NULL

/* ------------------------------------------------------- running */

/* Run fn on each 16-byte lane of vl bytes under the program's MXCSR.
 * Returns INTERP_OK with the flags merged, or WOULD_FAULT when a raised
 * exception is unmasked in the program's MXCSR (nothing changed). */
static int fp_run(struct interp_exec *x, fp_fn *fn, uint8_t *d, const uint8_t *a,
		  const uint8_t *b, const uint8_t *c, unsigned vl, uint32_t *raised)
{
	uint32_t prog = x->st->mxcsr, mx[3], run = prog;
	/* EVEX static rounding ({rn,rd,ru,rz}-sae: ZydisRoundingMode 1..4,
	 * MXCSR.RC 0..3) and {sae}: the operation runs under that rounding
	 * (else the program's), every exception suppressed: no flag is set
	 * and nothing traps. */
	int sae = VX_EVEX(x->in) && (x->in->avx.rounding || x->in->avx.sae);

	*raised = 0;
	if (VX_EVEX(x->in) && x->in->avx.rounding >= 1 && x->in->avx.rounding <= 4)
		run = (prog & ~0x6000u) | (uint32_t)(x->in->avx.rounding - 1) << 13;
	/* With underflow unmasked the hardware traps on any tiny result,
	 * exact or not; masked, it flags only inexact tiny ones, so the
	 * masked run cannot tell: leave such programs to the hardware. */
	if (!(prog & 0x800) && !sae)
		return INTERP_STOP_UNSUPPORTED;
	for (unsigned off = 0; off < vl; off += 16) {
		mx[0] = (run & ~0x3fu) | 0x1f80;
		mx[1] = 0;
		fn(d + off, a + off, b + off, c + off, mx);
		*raised |= mx[1] & 0x3f;
	}
	if (sae)
		*raised = 0;
	if (*raised & ~(prog >> 7) & 0x3f)
		return INTERP_STOP_WOULD_FAULT;
	return INTERP_OK;
}

static int fp_layout(struct interp_exec *x, struct interp_vx_ops *o, const struct interp_fdesc *fd)
{
	x->static_rc_ok = 1;
	int rc = interp_vx_layout(x, o, fd->esz);
	x->static_rc_ok = 0;

	if (rc)
		return rc;
	/* masked-off lanes must not raise exceptions: see fp_neutral (control
	 * masks are not modelled) */
	if ((o->masked && !(fd->flags & FF_MASKOK)) ||
	    (VX_EVEX(x->in) && x->in->avx.mask_idx && !o->masked))
		return INTERP_STOP_UNSUPPORTED;
	if ((fd->flags & FF_SCALAR))
		o->vl = 16;
	if (o->masked && (fd->flags & FF_SCALAR)) {
		/* a masked-off scalar memory source: suppression not modelled */
		for (int i = 0; i < x->in->nvis; i++)
			if (x->in->op[i].type == INTERP_OP_MEM && !(o->kmask & 1))
				return INTERP_STOP_UNSUPPORTED;
	}
	o->suppress = 1;        /* packed FP is element-wise */
	/* legacy packed forms fault on a misaligned 16-byte memory operand */
	if (VX_LEGACY(x->in) && !((fd->flags & FF_UNALIGN) && interp_vendor_cpuid() == INTERP_VENDOR_AMD))
		for (int i = 0; i < x->in->nvis; i++)
			if (x->in->op[i].type == INTERP_OP_MEM && x->in->op[i].size == 16 &&
			    !interp_vx_aligned(x, i, 16))
				return INTERP_STOP_WOULD_FAULT;
	return INTERP_OK;
}

/* EVEX write-masking: masked-off elements must raise no exception, so
 * their inputs become 1.0 (1+1, 1*1, 1/1, sqrt 1, 1*1+1 ... are exact and
 * quiet) before the whole vector runs; interp_vx_put then keeps or zeroes them. */
static void fp_neutral(const struct interp_vx_ops *o, const struct interp_fdesc *fd, interp_vec *v)
{
	unsigned n = fd->flags & FF_SCALAR ? 1 : o->vl / fd->esz;

	for (unsigned e = 0; e < n; e++)
		if (!((o->kmask >> e) & 1)) {
			if (fd->esz == 8)
				v->q[e] = 0x3ff0000000000000ull;
			else
				v->d[e] = 0x3f800000u;
		}
}

/* A masked scalar result: element 0 from r or, masked off, the old
 * destination (or zero); the rest as computed (src1's or dst's upper). */
static void fp_scalar_merge(struct interp_exec *x, struct interp_vx_ops *o, const struct interp_fdesc *fd,
			    interp_vec *r)
{
	if (o->masked && !(o->kmask & 1)) {
		if (o->zeroing)
			memset(r->b, 0, fd->esz);
		else
			memcpy(r->b, x->st->zmm[x->in->op[o->dst].idx].b, fd->esz);
	}
	o->masked = 0;
}

/* The end of an arithmetic row: r into the destination (a scalar row's
 * element 0 under its mask), then the exceptions it raised into MXCSR. */
static int fp_commit(struct interp_exec *x, struct interp_vx_ops *o, const struct interp_fdesc *fd,
		     interp_vec *r, uint32_t raised)
{
	int rc;

	if (fd->flags & FF_SCALAR)
		fp_scalar_merge(x, o, fd, r);
	if ((rc = interp_vx_put(x, o, o->dst, r)))
		return rc;
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

static int h_fbin(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, b, r, t;
	uint32_t raised = 0, lr;
	int rc, ia, ib;

	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	if (fd->kind == FK_UN) {
		ib = o.src[0];
		ia = VX_LEGACY(x->in) ? o.dst : o.src[0];
	} else {
		interp_vx_sources(x, &o, &ia, &ib);
	}
	if (ia < 0 || ib < 0)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, ia, &a)) || (rc = interp_vx_get(x, &o, ib, &b)))
		return rc;
	if (o.masked) {
		fp_neutral(&o, fd, &a);
		fp_neutral(&o, fd, &b);
	}
	memset(&r, 0, sizeof r);
	if (fd->flags & (FF_WIDEN | FF_NARROW)) {
		/* the destination's lanes come from 8-byte source pieces, or
		 * 16-byte source lanes give 8-byte pieces; vl is the wider side */
		unsigned lanes = (fd->flags & FF_WIDEN) ? x->in->op[o.dst].size / 16 : o.vl / 16;
		memset(&t, 0, sizeof t);
		for (unsigned l = 0; l < lanes && l < 4; l++) {
			if (fd->flags & FF_WIDEN)
				rc = fp_run(x, fd->fn, r.b + 16 * l, t.b, b.b + 8 * l, b.b, 16, &lr);
			else if (!(rc = fp_run(x, fd->fn, t.b, t.b + 16, b.b + 16 * l, b.b, 16, &lr)))
				memcpy(r.b + 8 * l, t.b, 8);
			if (rc)
				return rc;
			raised |= lr;
		}
	} else if ((rc = fp_run(x, fd->fn, r.b, a.b, b.b,
				(fd->flags & FF_XMM0) ? x->st->zmm[0].b : b.b, o.vl, &raised))) {
		return rc;
	}
	return fp_commit(x, &o, fd, &r, raised);
}

/* cmpXX and roundXX with an immediate: legacy op dst, src, imm; VEX op dst,
 * src1, src2, imm (vroundpd: dst, src, imm). EVEX vcmp* writes an opmask:
 * the lane results become its bits. */
static int h_fimm(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, b, r;
	uint32_t raised;
	unsigned imm;
	fp_fn *fn;
	int rc, ia, ib;

	/* EVEX: vcmp* (into an opmask) and vpclmulqdq (no write mask: EVEX.aaa
	 * must be 0, the 16-byte lanes are independent) */
	if (VX_EVEX(x->in) && !(fd->flags & (FF_CMPK | FF_IMM11)))
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	if (o.imm < 0)
		return INTERP_STOP_UNSUPPORTED;
	imm = (unsigned)(x->in->op[o.imm].val & 0xff);
	if (fd->flags & FF_IMM11)
		imm &= 0x11;
	if (fd->flags & FF_IMM3)
		imm &= 3;
	if (VX_LEGACY(x->in)) {
		ia = o.dst;
		ib = o.src[0];
	} else if (o.nsrc == 1) {
		ia = ib = o.src[0];
	} else {
		ia = o.src[0];
		ib = o.src[1];
	}
	fn = fd->byimm[imm & 31];
	if (imm > 31 || !fn || ia < 0 || ib < 0)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, ia, &a)) || (rc = interp_vx_get(x, &o, ib, &b)))
		return rc;
	if (o.masked) {
		fp_neutral(&o, fd, &a);
		fp_neutral(&o, fd, &b);
	}
	memset(&r, 0, sizeof r);
	if ((rc = fp_run(x, fn, r.b, a.b, b.b, b.b, o.vl, &raised)))
		return rc;
	if (VX_EVEX(x->in) && (fd->flags & FF_CMPK)) {
		/* EVEX vcmp: the all-ones/zero elements become opmask bits */
		unsigned n = fd->flags & FF_SCALAR ? 1 : o.vl / fd->esz;
		uint64_t m = 0;
		for (unsigned e = 0; e < n; e++)
			if (fd->esz == 8 ? r.q[e] != 0 : r.d[e] != 0)
				m |= 1ull << e;
		if ((rc = interp_write_u64(x, o.dst, m & o.kmask)))
			return rc;
	} else if ((rc = interp_vx_put(x, &o, o.dst, &r))) {
		return rc;
	}
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

static int h_fma(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, b, c, r;
	uint32_t raised;
	int rc;

	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	if (o.nsrc < 2)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.dst, &a)) || (rc = interp_vx_get(x, &o, o.src[0], &b)) ||
	    (rc = interp_vx_get(x, &o, o.src[1], &c)))
		return rc;
	if (o.masked) {
		fp_neutral(&o, fd, &a);
		fp_neutral(&o, fd, &b);
		fp_neutral(&o, fd, &c);
	}
	memset(&r, 0, sizeof r);
	if ((rc = fp_run(x, fd->fn, r.b, a.b, b.b, c.b, o.vl, &raised)))
		return rc;
	return fp_commit(x, &o, fd, &r, raised);
}

static int h_fcmp(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, b, r;
	uint32_t raised;
	int rc;

	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	if ((rc = interp_vx_get(x, &o, o.dst, &a)) || (rc = interp_vx_get(x, &o, o.src[0], &b)))
		return rc;
	memset(&r, 0, sizeof r);
	if ((rc = fp_run(x, fd->fn, r.b, a.b, b.b, b.b, 16, &raised)))
		return rc;
	x->rflags = (x->rflags & ~(uint64_t)INTERP_ARITH_FLAGS) |
		    (r.b[0] & (INTERP_ZF | INTERP_PF | INTERP_CF));
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

static int h_cvt2i(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec b, r;
	uint32_t raised;
	const struct interp_operand *d = &x->in->op[0];
	int rc;

	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	if (d->type != INTERP_OP_REG || d->rkind != INTERP_RK_GPR)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.src[0], &b)))
		return rc;
	memset(&r, 0, sizeof r);
	if ((rc = fp_run(x, d->size == 8 ? fd->fn64 : fd->fn, r.b, b.b, b.b, b.b, 16, &raised)))
		return rc;
	interp_gpr_set(x, d->idx, d->size == 8 ? 8 : 4, r.q[0]);
	if (x->obs) {
		x->rec.dst[0] = r.q[0];
		x->rec.dst_mask |= 1;
	}
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

static int h_cvti2f(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, b, r;
	uint32_t raised;
	int rc, ia, ib;

	if ((rc = fp_layout(x, &o, fd)))
		return rc;
	ia = VX_LEGACY(x->in) ? o.dst : o.src[0];
	ib = VX_LEGACY(x->in) ? o.src[0] : o.src[1];
	if (ia < 0 || ib < 0)
		return INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, ia, &a)) || (rc = interp_vx_get(x, &o, ib, &b)))
		return rc;
	memset(&r, 0, sizeof r);
	if ((rc = fp_run(x, x->in->op[ib].size == 8 ? fd->fn64 : fd->fn, r.b, a.b, b.b, b.b,
			 16, &raised)))
		return rc;
	if ((rc = interp_vx_put(x, &o, o.dst, &r)))
		return rc;
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

/* movss/movsd: a load zeroes the rest of the xmm (VEX: of the zmm); a
 * register move replaces the low element only (VEX: the rest from src1);
 * a store writes the low element. EVEX write-masked (bit 0 of k counts):
 * a selected element moves as above; a masked-off one is neither read
 * nor stored (no fault, measured), and the destination's element 0 keeps
 * its value (merging) or becomes zero ({z}), the rest as unmasked. */
static int h_movs(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	const struct interp_operand *d = &x->in->op[0];
	interp_vec a, b;
	unsigned s = fd->esz;
	int rc, off;

	if ((rc = interp_vx_layout(x, &o, s)))
		return rc;
	off = o.masked && !(o.kmask & 1);
	if (d->type == INTERP_OP_MEM) {
		if (off)
			return INTERP_OK;
		if ((rc = interp_vx_get(x, &o, o.src[0], &b)))
			return rc;
		return interp_store(x, interp_ea(x, 0), b.b, s);
	}
	if (d->type != INTERP_OP_REG || d->rkind != INTERP_RK_VEC)
		return INTERP_STOP_UNSUPPORTED;
	if (o.nsrc == 1 && x->in->op[o.src[0]].type == INTERP_OP_MEM) {
		memset(&a, 0, sizeof a);
		if (!off && (rc = interp_load(x, interp_ea(x, o.src[0]), a.b, s)))
			return rc;
	} else if (o.masked && o.nsrc != 2) {
		return INTERP_STOP_UNSUPPORTED;
	} else if (VX_LEGACY(x->in) && o.nsrc == 1) {
		if ((rc = interp_vx_get(x, &o, o.src[0], &b)))
			return rc;
		a = x->st->zmm[d->idx];
		memcpy(a.b, b.b, s);
	} else if (o.nsrc == 2) {
		if ((rc = interp_vx_get(x, &o, o.src[0], &a)) || (rc = interp_vx_get(x, &o, o.src[1], &b)))
			return rc;
		memcpy(a.b, b.b, s);
	} else {
		return INTERP_STOP_UNSUPPORTED;
	}
	if (off && o.zeroing)
		memset(a.b, 0, s);
	else if (off)
		memcpy(a.b, x->st->zmm[d->idx].b, s);
	{
		interp_vec *reg = &x->st->zmm[d->idx];
		int legacy = VX_LEGACY(x->in);

		memcpy(reg->b, a.b, 16);
		if (!legacy)
			memset(reg->b + 16, 0, 48);
		interp_vx_touch(x, d->idx, 16, !legacy);
		if (x->obs) {
			x->rec.dst[0] = reg->q[0];
			x->rec.dst_mask |= 1;
		}
	}
	return INTERP_OK;
}

/* aeskeygenassist: SubWord of source dwords 1 and 3, rotated and XORed
 * with the imm8 round constant. SubWord comes from the host's aesenclast
 * with a zero round key on a state whose four columns are the same word
 * (ShiftRows then moves nothing). */
static int h_aeskg(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec b, t, z, r;
	uint32_t sub[2], raised, rcon;
	int rc;

	if ((rc = fp_layout(x, &o, fd)) || (rc = interp_vx_get(x, &o, o.src[0], &b)))
		return rc;
	if (o.imm < 0)
		return INTERP_STOP_UNSUPPORTED;
	rcon = (uint32_t)interp_vx_imm(x, &o);
	memset(&z, 0, sizeof z);
	for (int i = 0; i < 2; i++) {
		uint32_t w = b.d[1 + 2 * i];
		memset(&t, 0, sizeof t);
		t.d[0] = t.d[1] = t.d[2] = t.d[3] = w;
		if ((rc = fp_run(x, fd->fn, r.b, t.b, z.b, z.b, 16, &raised)))
			return rc;
		sub[i] = r.d[0];
	}
	memset(&r, 0, sizeof r);
	r.d[0] = sub[0];
	r.d[1] = ((sub[0] >> 8) | (sub[0] << 24)) ^ rcon;
	r.d[2] = sub[1];
	r.d[3] = ((sub[1] >> 8) | (sub[1] << 24)) ^ rcon;
	return interp_vx_put(x, &o, o.dst, &r);
}

/* vcvtps2ph xmm/m64, xmm, imm (ymm source: xmm/m128): each 16-byte source
 * lane gives 8 bytes; imm[2:0] is the rounding control. */
static int h_ps2ph(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	struct interp_vx_ops o;
	interp_vec a, t, z, r;
	uint32_t raised = 0, lr;
	const struct interp_operand *d = &x->in->op[0];
	int rc;

	if ((rc = fp_layout(x, &o, fd)) || o.imm < 0 || o.src[0] < 0)
		return rc ? rc : INTERP_STOP_UNSUPPORTED;
	if ((rc = interp_vx_get(x, &o, o.src[0], &a)))
		return rc;
	memset(&r, 0, sizeof r);
	memset(&z, 0, sizeof z);
	for (unsigned l = 0; l < o.vl / 16; l++) {
		if ((rc = fp_run(x, k_vcvtps2ph[interp_vx_imm(x, &o) & 7], t.b, z.b, a.b + 16 * l, z.b,
				 16, &lr)))
			return rc;
		memcpy(r.b + 8 * l, t.b, 8);
		raised |= lr;
	}
	if (d->type == INTERP_OP_MEM)
		rc = interp_store(x, interp_ea(x, 0), r.b, o.vl / 2);
	else
		rc = interp_vx_put(x, &o, 0, &r);
	if (rc)
		return rc;
	interp_vx_mxcsr_or(x, raised);
	return INTERP_OK;
}

/* ldmxcsr/stmxcsr: loading reserved bits is #GP (left to the hardware). */
static int h_mxcsr(struct interp_exec *x)
{
	const struct interp_fdesc *fd = &interp_row(x->in)->spec.f;
	int m = x->in->mnemonic;
	uint32_t v, allowed = x->st->mxcsr_mask ? x->st->mxcsr_mask : 0xffbf;
	int rc;

	(void)fd;
	if (!(x->st->xstate_avail & INTERP_XS_SSE))
		return INTERP_STOP_BADSTATE;
	if (x->in->op[0].type != INTERP_OP_MEM)
		return INTERP_STOP_UNSUPPORTED;
	if (m == ZYDIS_MNEMONIC_STMXCSR || m == ZYDIS_MNEMONIC_VSTMXCSR)
		return interp_store(x, interp_ea(x, 0), &x->st->mxcsr, 4);
	v = 0;
	if ((rc = interp_load(x, interp_ea(x, 0), &v, 4)))
		return rc;
	if (v & ~allowed)
		return INTERP_STOP_WOULD_FAULT;
	x->st->mxcsr = v;
	x->st->xstate_bv |= INTERP_XS_SSE;
	x->st->xstate_dirty |= INTERP_XS_SSE;
	return INTERP_OK;
}

/* ------------------------------------------------------- the rows
 *
 * Each kind's handler is the row's handler; it reads its spec (fn, fn64,
 * byimm, esz, flags) from the row the decoder stored with the
 * instruction. (u)comis* write ZF PF CF and clear OF SF AF. */
#define FKFN_FK_BIN h_fbin
#define FKFN_FK_UN h_fbin
#define FKFN_FK_FMA h_fma
#define FKFN_FK_CMPF h_fcmp
#define FKFN_FK_CVT2I h_cvt2i
#define FKFN_FK_CVTI2F h_cvti2f
#define FKFN_FK_MOVS h_movs
#define FKFN_FK_MXCSR h_mxcsr
#define FKFN_FK_AESKG h_aeskg
#define FKFN_FK_PS2PH h_ps2ph
#define FDESC_ROW(m, k, fl, e, fn, fn64) \
	INTERP_ROW(m, FKFN_##k, INTERP_FORM_ANY, INTERP_OPF_VEC, IFL_NONE, \
		   k == FK_CMPF ? IFL_ALL : IFL_NONE, IFL_NONE, INTERP_VR_NONE, \
		   { .f = { k, e, fl, fp_##fn, fp_##fn64, 0 } })
#define FIMM_ROW(m, fl, e, t) \
	INTERP_ROW(m, h_fimm, INTERP_FORM_ANY, INTERP_OPF_VEC, IFL_NONE, IFL_NONE, IFL_NONE, \
		   INTERP_VR_NONE, { .f = { FK_IMM, e, fl, 0, 0, k_##t } })
const struct interp_op interp_ops_vec_fp[] = {
	FDESC_LIST(FDESC_ROW)
	FIMM_LIST(FIMM_ROW)
	INTERP_OPS_END
};
