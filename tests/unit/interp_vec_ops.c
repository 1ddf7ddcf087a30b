/* tests/unit/interp_vec_ops.c — the vector families (interp/sse*.c,
 * avx*.c, evex*.c) against this CPU.
 *
 * Each instruction in kinsns (assembled by gas from the text beside it) is
 * run many times with random operands: natively, by a trampoline that
 * loads all 32 zmm, 8 opmask registers, MXCSR, 16 GPRs and RFLAGS from
 * g_vs and stores them back afterwards, and in the interpreter from the
 * same state and the same data pages. Everything is compared: every zmm
 * byte, k0-k7, GPRs, arithmetic flags, MXCSR and the data pages. Pointer
 * registers (rdi, rsi, rdx) point into two data pages followed by a
 * PROT_NONE guard page, often so that the operand crosses into the guard
 * page: the hardware faults or (masked-off elements) does not, and the
 * interpreter must agree — stop with would_fault and change nothing, or
 * run without touching the guard page. Also checked: every register
 * component the interpreter changed is marked in xstate_bv and
 * xstate_dirty.
 *
 * Every other run re-encodes the instruction with random register numbers
 * (Zydis encoder), so all 32 registers and operand aliasing are covered.
 *
 * Usage: interp_vec_ops [iterations-per-insn [seed [filter]]]
 * Default: 300 per instruction, fixed seed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include "interp/interp.h"
#include "tests/unit/xorshift.h"

/* ---------------------------------------------------------- the list */

/* F: kind of random operands. I: integer/bytes, D: doubles, S: floats.
 * Flag U: "unsupported" is an acceptable interpreter answer (e.g. masked
 * stores with more pieces than the store buffer holds). */
#define INSNS(X) \
	/* SSE2 moves and logic */ \
	X(I, 0, "movdqa (%rdi), %xmm1") X(I, 0, "movdqa %xmm2, (%rsi)") X(I, 0, "movdqa %xmm3, %xmm9") \
	X(I, 0, "movdqu (%rdi), %xmm1") X(I, 0, "movdqu %xmm12, (%rsi)") \
	X(I, 0, "movaps (%rdi), %xmm1") X(I, 0, "movups %xmm4, (%rdi)") X(I, 0, "movapd %xmm4, %xmm5") \
	X(I, 0, "movd %xmm1, %eax") X(I, 0, "movd %ecx, %xmm1") X(I, 0, "movq %xmm1, %rax") \
	X(I, 0, "movq %rcx, %xmm14") X(I, 0, "movq (%rdi), %xmm1") X(I, 0, "movq %xmm3, (%rdi)") \
	X(I, 0, "movq %xmm3, %xmm4") X(I, 0, "movd (%rsi), %xmm2") X(I, 0, "movd %xmm2, (%rsi)") \
	X(I, 0, "movhps (%rdi), %xmm1") X(I, 0, "movhps %xmm1, (%rdi)") X(I, 0, "movlpd (%rdi), %xmm1") \
	X(I, 0, "movhlps %xmm2, %xmm1") X(I, 0, "movlhps %xmm2, %xmm1") \
	X(I, 0, "pxor %xmm1, %xmm2") X(I, 0, "pxor (%rdi), %xmm2") X(I, 0, "por %xmm1, %xmm2") \
	X(I, 0, "pand %xmm1, %xmm2") X(I, 0, "pandn %xmm1, %xmm2") X(I, 0, "xorps %xmm1, %xmm2") \
	X(I, 0, "andpd (%rsi), %xmm2") X(I, 0, "andnps %xmm3, %xmm2") X(I, 0, "orpd %xmm3, %xmm2") \
	X(I, 0, "pcmpeqb %xmm1, %xmm2") X(I, 0, "pcmpeqb (%rdi), %xmm0") X(I, 0, "pcmpeqw %xmm1, %xmm2") \
	X(I, 0, "pcmpeqd %xmm1, %xmm2") X(I, 0, "pcmpeqq %xmm1, %xmm2") X(I, 0, "pcmpgtb %xmm1, %xmm2") \
	X(I, 0, "pcmpgtd %xmm1, %xmm2") X(I, 0, "pcmpgtq %xmm1, %xmm2") \
	X(I, 0, "pmovmskb %xmm1, %eax") X(I, 0, "pmovmskb %xmm9, %r10d") X(I, 0, "movmskps %xmm1, %eax") \
	X(I, 0, "movmskpd %xmm1, %ecx") \
	X(I, 0, "pminub %xmm1, %xmm2") X(I, 0, "pminub (%rdi), %xmm2") X(I, 0, "pmaxub %xmm1, %xmm2") \
	X(I, 0, "pminud %xmm1, %xmm2") X(I, 0, "pminsw %xmm1, %xmm2") X(I, 0, "pmaxsd %xmm1, %xmm2") \
	X(I, 0, "paddb %xmm1, %xmm2") X(I, 0, "paddw %xmm1, %xmm2") X(I, 0, "paddd %xmm1, %xmm2") \
	X(I, 0, "paddq %xmm1, %xmm2") X(I, 0, "psubb %xmm1, %xmm2") X(I, 0, "psubq %xmm1, %xmm2") \
	X(I, 0, "paddusb %xmm1, %xmm2") X(I, 0, "psubusb %xmm1, %xmm2") X(I, 0, "psubusw %xmm1, %xmm2") \
	X(I, 0, "paddsw %xmm1, %xmm2") X(I, 0, "psubsb %xmm1, %xmm2") X(I, 0, "pavgb %xmm1, %xmm2") \
	X(I, 0, "pmullw %xmm1, %xmm2") X(I, 0, "pmulld %xmm1, %xmm2") X(I, 0, "psadbw %xmm1, %xmm2") \
	X(I, 0, "pmaddwd %xmm1, %xmm2") X(I, 0, "pmaddubsw %xmm1, %xmm2") X(I, 0, "pabsb %xmm1, %xmm2") \
	X(I, 0, "pabsd %xmm1, %xmm2") \
	X(I, 0, "pshufb %xmm1, %xmm2") X(I, 0, "pshufd $0x1b, %xmm1, %xmm2") X(I, 0, "pshufd $0, (%rdi), %xmm2") \
	X(I, 0, "pshuflw $0x9c, %xmm1, %xmm2") X(I, 0, "pshufhw $0x39, %xmm1, %xmm2") \
	X(I, 0, "punpcklbw %xmm1, %xmm2") X(I, 0, "punpcklwd %xmm1, %xmm2") X(I, 0, "punpckldq %xmm1, %xmm2") \
	X(I, 0, "punpcklqdq %xmm1, %xmm2") X(I, 0, "punpckhbw %xmm1, %xmm2") X(I, 0, "punpckhqdq %xmm1, %xmm2") \
	X(I, 0, "unpcklpd %xmm1, %xmm2") X(I, 0, "unpckhps %xmm1, %xmm2") X(I, 0, "shufps $0x4e, %xmm1, %xmm2") \
	X(I, 0, "shufpd $1, %xmm1, %xmm2") X(I, 0, "packuswb %xmm1, %xmm2") X(I, 0, "packsswb %xmm1, %xmm2") \
	X(I, 0, "packssdw %xmm1, %xmm2") X(I, 0, "packusdw %xmm1, %xmm2") \
	X(I, 0, "palignr $5, %xmm1, %xmm2") X(I, 0, "palignr $17, %xmm1, %xmm2") X(I, 0, "palignr $15, (%rdi), %xmm2") \
	X(I, 0, "psrldq $3, %xmm2") X(I, 0, "pslldq $7, %xmm2") X(I, 0, "psrldq $16, %xmm2") \
	X(I, 0, "psrlw $3, %xmm2") X(I, 0, "psrld $31, %xmm2") X(I, 0, "psrlq $40, %xmm2") \
	X(I, 0, "psllw $17, %xmm2") X(I, 0, "pslld $1, %xmm2") X(I, 0, "psllq $63, %xmm2") \
	X(I, 0, "psraw $9, %xmm2") X(I, 0, "psrad $33, %xmm2") X(I, 0, "psrlw %xmm1, %xmm2") \
	X(I, 0, "pslld %xmm1, %xmm2") X(I, 0, "psrad %xmm1, %xmm2") \
	X(I, 0, "pmovzxbw %xmm1, %xmm2") X(I, 0, "pmovsxbd (%rdi), %xmm2") X(I, 0, "pmovzxdq %xmm1, %xmm2") \
	X(I, 0, "pinsrb $5, %eax, %xmm2") X(I, 0, "pinsrw $3, (%rdi), %xmm2") X(I, 0, "pinsrd $2, %ecx, %xmm2") \
	X(I, 0, "pinsrq $1, %rcx, %xmm2") X(I, 0, "pextrb $9, %xmm2, %eax") X(I, 0, "pextrw $3, %xmm2, %ecx") \
	X(I, 0, "pextrd $3, %xmm2, %eax") X(I, 0, "pextrq $1, %xmm2, %rax") X(I, 0, "pextrd $1, %xmm2, (%rdi)") \
	X(I, 0, "ptest %xmm1, %xmm2") X(I, 0, "ptest (%rdi), %xmm2") \
	X(I, 0, "movntdq %xmm1, (%rdi)") X(I, 0, "lddqu (%rsi), %xmm3") \
	/* AVX / AVX2 */ \
	X(I, 0, "vmovdqu (%rdi), %ymm1") X(I, 0, "vmovdqu %ymm1, (%rsi)") X(I, 0, "vmovdqa (%rdi), %ymm1") \
	X(I, 0, "vmovdqa %ymm3, %ymm1") X(I, 0, "vmovdqu (%rdi), %xmm1") X(I, 0, "vmovups %xmm5, (%rdi)") \
	X(I, 0, "vmovaps %ymm5, %ymm6") X(I, 0, "vmovntdq %ymm1, (%rdi)") \
	X(I, 0, "vmovd %xmm1, %eax") X(I, 0, "vmovd %ecx, %xmm1") X(I, 0, "vmovq %rcx, %xmm1") \
	X(I, 0, "vmovq %xmm2, %xmm1") X(I, 0, "vmovq (%rdi), %xmm1") \
	X(I, 0, "vpcmpeqb %ymm1, %ymm2, %ymm3") X(I, 0, "vpcmpeqb (%rdi), %ymm2, %ymm3") \
	X(I, 0, "vpcmpeqb %xmm1, %xmm2, %xmm3") X(I, 0, "vpcmpeqd %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpcmpgtb %ymm1, %ymm2, %ymm3") X(I, 0, "vpmovmskb %ymm1, %eax") X(I, 0, "vpmovmskb %xmm1, %eax") \
	X(I, 0, "vpminub %ymm1, %ymm2, %ymm3") X(I, 0, "vpminub (%rdi), %ymm2, %ymm3") X(I, 0, "vpmaxub %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpminud %ymm1, %ymm2, %ymm3") X(I, 0, "vpxor %ymm1, %ymm2, %ymm3") X(I, 0, "vpor %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpand %ymm1, %ymm2, %ymm3") X(I, 0, "vpandn %ymm1, %ymm2, %ymm3") X(I, 0, "vpandn %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vxorps %xmm1, %xmm2, %xmm3") X(I, 0, "vandpd %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpaddb %ymm1, %ymm2, %ymm3") X(I, 0, "vpsubb %ymm1, %ymm2, %ymm3") X(I, 0, "vpaddd %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpsubq %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpshufb %ymm1, %ymm2, %ymm3") X(I, 0, "vpshufd $0xb1, %ymm1, %ymm3") \
	X(I, 0, "vpalignr $7, %ymm1, %ymm2, %ymm3") X(I, 0, "vpsrldq $5, %ymm1, %ymm3") X(I, 0, "vpslldq $5, %ymm1, %ymm3") \
	X(I, 0, "vpsrlq $7, %ymm1, %ymm3") X(I, 0, "vpsllw %xmm4, %ymm1, %ymm3") \
	X(I, 0, "vpunpcklbw %ymm1, %ymm2, %ymm3") X(I, 0, "vpunpckhdq %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpackuswb %ymm1, %ymm2, %ymm3") X(I, 0, "vshufps $0x93, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpbroadcastb %xmm1, %ymm2") X(I, 0, "vpbroadcastb (%rdi), %ymm2") X(I, 0, "vpbroadcastd %xmm1, %xmm2") \
	X(I, 0, "vpbroadcastq (%rsi), %ymm2") X(I, 0, "vbroadcastss %xmm1, %ymm2") X(I, 0, "vbroadcasti128 (%rdi), %ymm2") \
	X(I, 0, "vptest %ymm1, %ymm2") X(I, 0, "vptest %xmm1, %xmm2") \
	X(I, 0, "vpmovzxbw %xmm1, %ymm2") X(I, 0, "vpmovsxwd (%rdi), %ymm2") \
	X(I, 0, "vinserti128 $1, %xmm1, %ymm2, %ymm3") X(I, 0, "vextracti128 $1, %ymm1, %xmm3") \
	X(I, 0, "vextracti128 $1, %ymm1, (%rdi)") X(I, 0, "vpinsrb $3, %eax, %xmm2, %xmm3") \
	X(I, 0, "vpextrq $1, %xmm2, %rax") X(I, 0, "vmovhps (%rdi), %xmm2, %xmm3") \
	/* AVX-512 as glibc uses it */ \
	X(I, 0, "vmovdqu64 (%rdi), %zmm16") X(I, 0, "vmovdqu64 %zmm17, (%rsi)") X(I, 0, "vmovdqu64 (%rdi), %ymm16") \
	X(I, 0, "vmovdqu64 %ymm16, (%rsi)") X(I, 0, "vmovdqu64 %ymm16, %ymm17") X(I, 0, "vmovdqu64 %zmm1, %zmm2") \
	X(I, 0, "vmovdqa64 (%rdi), %zmm16") X(I, 0, "vmovdqa64 %ymm16, (%rsi)") X(I, 0, "vmovdqu32 (%rdi), %zmm3{%k2}{z}") \
	X(I, 0, "vmovdqu8 (%rdi), %zmm16{%k1}{z}") X(I, 0, "vmovdqu8 (%rdi), %ymm16{%k1}{z}") \
	X(I, 0, "vmovdqu8 (%rsi), %ymm17{%k2}") X(I, 0, "vmovdqu8 (%rsi), %xmm17{%k2}") \
	X(I, U, "vmovdqu8 %ymm16, (%rdi){%k1}") X(I, U, "vmovdqu8 %zmm16, (%rdi){%k3}") \
	X(I, U, "vmovdqu8 %xmm16, (%rdi){%k3}") X(I, U, "vmovdqu64 %zmm16, (%rdi){%k3}") \
	X(I, 0, "vmovdqu8 %zmm18, %zmm16{%k1}") X(I, 0, "vmovdqu16 %zmm18, %zmm16{%k1}{z}") \
	X(I, U, "vmovups %zmm16, (%rdi){%k2}") X(I, U, "vmovdqa64 %zmm16, (%rsi){%k2}") /* U: all masked off, misaligned */ \
	X(I, U, "vmovdqu32 %ymm16, (%rdi){%k2}") X(I, U, "vmovdqu16 %zmm16, (%rdi){%k2}") \
	X(I, U, "vmovupd %ymm16, (%rdi){%k3}") X(I, 0, "vmovups (%rdi), %zmm16{%k1}{z}") \
	X(I, U, "vmovapd (%rdi), %ymm16{%k1}") X(I, 0, "vmovdqu16 (%rsi), %zmm16{%k1}") \
	X(I, 0, "vmovups (%rdi), %zmm16") X(I, 0, "vmovdqu64 %xmm20, %xmm21") \
	X(I, 0, "vpcmpeqb (%rdi), %ymm16, %k0") X(I, 0, "vpcmpeqb %zmm17, %zmm16, %k1") \
	X(I, 0, "vpcmpeqb %ymm17, %ymm16, %k1{%k2}") X(I, 0, "vpcmpeqd (%rdi), %ymm16, %k1") \
	X(I, 0, "vpcmpneqb (%rdi), %ymm16, %k1") X(I, 0, "vpcmpneqb %zmm17, %zmm16, %k1{%k2}") \
	X(I, 0, "vpcmpub $1, %ymm17, %ymm18, %k1") X(I, 0, "vpcmpltub (%rsi), %ymm18, %k1") \
	X(I, 0, "vpcmpnequb %zmm17, %zmm18, %k1{%k3}") X(I, 0, "vpcmpgtb %ymm17, %ymm18, %k1") \
	X(I, 0, "vpcmpb $2, %ymm17, %ymm18, %k1") X(I, 0, "vpcmpneqd %ymm17, %ymm18, %k1") \
	X(I, 0, "vpcmpud $6, %zmm17, %zmm18, %k1") X(I, 0, "vpcmpeqb (%rdi), %ymm16, %k1{%k2}") \
	X(I, 0, "vpminub %ymm17, %ymm18, %ymm19") X(I, 0, "vpminub (%rdi), %ymm18, %ymm19") \
	X(I, 0, "vpminub %zmm17, %zmm18, %zmm19") X(I, 0, "vpminud %ymm17, %ymm18, %ymm19") \
	X(I, 0, "vpminub %ymm17, %ymm18, %ymm19{%k1}{z}") X(I, 0, "vpmaxub %zmm17, %zmm18, %zmm19{%k1}") \
	X(I, 0, "vptestnmb %ymm17, %ymm17, %k0") X(I, 0, "vptestnmb %zmm17, %zmm18, %k1{%k2}") \
	X(I, 0, "vptestmb %ymm17, %ymm18, %k1") X(I, 0, "vptestnmd %ymm17, %ymm17, %k1") \
	X(I, 0, "vptestmd %zmm17, %zmm18, %k1") \
	X(I, 0, "vpxorq %ymm17, %ymm18, %ymm19") X(I, 0, "vpxorq (%rdi), %ymm18, %ymm19") X(I, 0, "vpxord %zmm17, %zmm18, %zmm19{%k1}") \
	X(I, 0, "vporq %ymm17, %ymm18, %ymm19") X(I, 0, "vpandq %zmm17, %zmm18, %zmm19") X(I, 0, "vpandnd %ymm17, %ymm18, %ymm19") \
	X(I, 0, "vpternlogd $0xde, %ymm17, %ymm18, %ymm19") X(I, 0, "vpternlogd $0x96, %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vpternlogq $0x81, (%rdi), %ymm18, %ymm19") X(I, 0, "vpternlogd $0xfe, %ymm17, %ymm18, %ymm19{%k1}") \
	X(I, 0, "vpbroadcastb %esi, %ymm16") X(I, 0, "vpbroadcastb %eax, %zmm16") X(I, 0, "vpbroadcastd %eax, %ymm16") \
	X(I, 0, "vpbroadcastq %rax, %zmm16") X(I, 0, "vpbroadcastb %xmm17, %zmm16") X(I, 0, "vpbroadcastb %ecx, %zmm16{%k1}{z}") \
	X(I, 0, "vpaddd (%rax){1to16}, %zmm1, %zmm2{%k3}") X(I, 0, "vpaddd (%rsi){1to8}, %ymm1, %ymm2") \
	X(I, 0, "vpsubb %zmm17, %zmm18, %zmm19") X(I, 0, "vpaddq %ymm17, %ymm18, %ymm19{%k2}{z}") \
	X(I, 0, "vpshufb %zmm17, %zmm18, %zmm19") X(I, 0, "vpalignr $9, %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vpsrlq $3, %zmm17, %zmm19") X(I, 0, "vpsrldq $5, %zmm17, %zmm19") \
	X(I, 0, "vpshufb (%rdi), %zmm18, %zmm19{%k1}") X(I, 0, "vpalignr $3, (%rdi), %zmm18, %zmm19{%k1}") \
	X(I, 0, "vpunpcklbw (%rdi), %zmm18, %zmm19{%k1}") X(I, 0, "vpsrlw (%rdi), %zmm18, %zmm19{%k1}") \
	X(I, 0, "vpshufd $0x1b, (%rdi), %zmm19{%k1}") X(I, 0, "vpaddd (%rdi), %zmm18, %zmm19{%k1}") \
	X(I, 0, "vpmaddwd (%rdi), %zmm18, %zmm19{%k1}") X(I, 0, "vpsrlw $3, (%rdi), %zmm19{%k1}") \
	X(I, 0, "vpackuswb (%rdi), %zmm18, %zmm19{%k1}") X(I, 0, "vpermilps $0x1b, (%rdi), %zmm19{%k1}") \
	X(I, 0, "vpabsb (%rdi), %zmm19{%k1}{z}") X(I, 0, "vprold $3, (%rdi), %zmm19{%k1}") \
	X(I, 0, "vpminub (%rdi), %zmm18, %zmm19{%k1}{z}") X(I, 0, "vpcmpeqb (%rdi), %zmm16, %k1{%k2}") \
	/* blends, dups, multiplies, permutes, AES, carry-less multiply */ \
	X(I, 0, "blendvpd %xmm0, %xmm1, %xmm2") X(I, 0, "pblendvb %xmm0, (%rdi), %xmm2") X(I, 0, "blendvps %xmm0, %xmm1, %xmm2") \
	X(I, 0, "vblendvpd %xmm4, %xmm1, %xmm2, %xmm3") X(I, 0, "vpblendvb %ymm4, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "blendpd $1, %xmm1, %xmm2") X(I, 0, "blendps $5, %xmm1, %xmm2") X(I, 0, "pblendw $0xa5, %xmm1, %xmm2") \
	X(I, 0, "vpblendd $0x3c, %ymm1, %ymm2, %ymm3") X(I, 0, "vpblendw $0x71, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "movddup %xmm1, %xmm2") X(I, 0, "movddup (%rdi), %xmm2") X(I, 0, "movshdup %xmm1, %xmm2") \
	X(I, 0, "vmovsldup %ymm1, %ymm2") X(I, 0, "vmovddup %ymm1, %ymm2") \
	X(I, 0, "pmuludq %xmm1, %xmm2") X(I, 0, "pmuldq %xmm1, %xmm2") X(I, 0, "pmulhuw %xmm1, %xmm2") \
	X(I, 0, "pmulhw %xmm1, %xmm2") X(I, 0, "pmulhrsw %xmm1, %xmm2") X(I, 0, "vpmuludq %ymm1, %ymm2, %ymm3") \
	X(I, 0, "psignb %xmm1, %xmm2") X(I, 0, "psignd %xmm1, %xmm2") X(I, 0, "phaddw %xmm1, %xmm2") \
	X(I, 0, "phsubd %xmm1, %xmm2") X(I, 0, "vphaddd %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpermilps $0x1b, %ymm1, %ymm2") X(I, 0, "vpermilpd $0x5, %ymm1, %ymm2") X(I, 0, "vpermilps %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpermilpd %xmm1, %xmm2, %xmm3") X(I, 0, "vpermilps $0x93, (%rdi), %xmm2") \
	X(I, 0, "extractps $2, %xmm1, %eax") X(I, 0, "extractps $1, %xmm1, (%rdi)") X(I, 0, "vextractps $3, %xmm1, %ecx") \
	X(I, 0, "insertps $0x5a, %xmm1, %xmm2") X(I, 0, "insertps $0xe1, (%rdi), %xmm2") X(I, 0, "vinsertps $0x30, %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vextracti32x4 $2, %zmm17, %xmm18") X(I, 0, "vextracti64x4 $1, %zmm17, %ymm18") \
	X(I, 0, "vextracti32x4 $3, %zmm17, (%rdi){%k1}") X(I, 0, "vextracti64x2 $1, %ymm17, %xmm18{%k1}{z}") \
	X(I, 0, "vinserti32x4 $2, %xmm17, %zmm18, %zmm19") X(I, 0, "vinserti64x4 $1, (%rdi), %zmm18, %zmm19") \
	X(I, 0, "vinserti32x4 $1, %xmm17, %ymm18, %ymm19{%k2}") \
	X(I, 0, "vbroadcasti32x4 (%rdi), %zmm18") X(I, 0, "vbroadcasti64x4 (%rsi), %zmm18") \
	X(I, 0, "vbroadcasti32x4 (%rdi), %ymm18") \
	X(I, 0, "vshufi32x4 $0x4e, %zmm17, %zmm18, %zmm19") X(I, 0, "vshufi64x2 $0x2, %ymm17, %ymm18, %ymm19") \
	X(I, 0, "vshuff32x4 $0xb1, %zmm17, %zmm18, %zmm19{%k1}{z}") \
	X(I, 0, "valignq $3, %zmm17, %zmm18, %zmm19") X(I, 0, "valignd $13, %zmm17, %zmm18, %zmm19") \
	X(I, 0, "valignq $1, %ymm17, %ymm18, %ymm19") X(I, 0, "valignd $5, %xmm17, %xmm18, %xmm19{%k3}") \
	X(I, 0, "vpblendmq %zmm17, %zmm18, %zmm19{%k1}") X(I, 0, "vpblendmb %ymm17, %ymm18, %ymm19{%k1}{z}") \
	X(I, 0, "vpblendmd (%rdi), %zmm18, %zmm19{%k2}") \
	X(I, 0, "vpavgb %ymm1, %ymm2, %ymm3") X(I, 0, "vpavgw %zmm17, %zmm18, %zmm19") X(I, 0, "vpaddsb %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpsubsw %zmm17, %zmm18, %zmm19{%k1}") X(I, 0, "vpopcntb %zmm17, %zmm18") X(I, 0, "vpopcntq %ymm17, %ymm18{%k1}{z}") \
	X(I, 0, "vpopcntd (%rdi), %zmm18") X(I, 0, "vpermb %zmm17, %zmm18, %zmm19") X(I, 0, "vpermb (%rdi), %ymm18, %ymm19{%k1}") \
	X(I, 0, "vpermw %zmm17, %zmm18, %zmm19") X(I, 0, "vpermq %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vpermt2b %zmm17, %zmm18, %zmm19") X(I, 0, "vpermt2d %ymm17, %ymm18, %ymm19{%k2}") \
	X(I, 0, "vpermi2d %zmm17, %zmm18, %zmm19") X(I, 0, "vpermi2q (%rdi), %zmm18, %zmm19{%k1}{z}") \
	X(I, 0, "vpermt2q %xmm17, %xmm18, %xmm19") \
	X(I, 0, "vpmovb2m %zmm17, %k1") X(I, 0, "vpmovd2m %ymm17, %k2") X(I, 0, "vpmovm2b %k1, %zmm17") \
	X(I, 0, "vpmovm2d %k0, %ymm17") X(I, 0, "vpmovm2q %k3, %xmm17") \
	X(I, 0, "vpcompressb %zmm17, %zmm18{%k1}") X(I, 0, "vpcompressd %zmm17, %zmm18{%k1}{z}") \
	X(I, U, "vpcompressb %zmm17, (%rdi){%k1}") X(I, U, "vpcompressq %ymm17, (%rdi){%k2}") \
	X(I, 0, "vpexpandd %zmm17, %zmm18{%k1}") X(I, 0, "vpexpandb %ymm17, %ymm18{%k1}{z}") \
	X(I, 0, "vpexpandd (%rdi), %zmm18{%k1}") X(I, 0, "vpexpandq (%rsi), %ymm18{%k2}{z}") \
	X(I, 0, "vpmovwb %zmm17, %ymm18") X(I, 0, "vpmovdw %ymm17, %xmm18{%k1}") X(I, 0, "vpmovqb %zmm17, %xmm18") \
	X(I, 0, "vpmovdb %zmm17, (%rdi)") X(I, U, "vpmovwb %zmm17, (%rdi){%k1}") X(I, 0, "vpmovuswb %zmm17, %ymm18") \
	X(I, 0, "vpmovsdw %zmm17, %ymm18{%k1}{z}") X(I, 0, "vpmovsqd %ymm17, %xmm18") X(I, 0, "vpmovusqd %zmm17, %ymm18") \
	X(I, 0, "vpermq $0x4e, %ymm1, %ymm2") X(I, 0, "vpermd %ymm1, %ymm2, %ymm3") X(I, 0, "vpermd %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vperm2i128 $0x21, %ymm1, %ymm2, %ymm3") X(I, 0, "vperm2i128 $0x8a, (%rdi), %ymm2, %ymm3") \
	X(I, 0, "aesenc %xmm1, %xmm2") X(I, 0, "aesenclast %xmm1, %xmm2") X(I, 0, "aesdec (%rdi), %xmm2") \
	X(I, 0, "aesdeclast %xmm1, %xmm2") X(I, 0, "aesimc %xmm1, %xmm2") X(I, 0, "vaesenc %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vaesenc %ymm1, %ymm2, %ymm3") X(I, 0, "aeskeygenassist $0x1b, %xmm1, %xmm2") \
	X(I, 0, "aeskeygenassist $0x80, (%rdi), %xmm2") X(I, 0, "vaeskeygenassist $0x36, %xmm1, %xmm2") \
	X(I, 0, "pclmulqdq $0, %xmm1, %xmm2") X(I, 0, "pclmulqdq $0x11, %xmm1, %xmm2") X(I, 0, "pclmulqdq $0x01, (%rdi), %xmm2") \
	X(I, 0, "vpclmulqdq $0x10, %xmm1, %xmm2, %xmm3") X(I, 0, "pclmulqdq $0xff, %xmm1, %xmm2") \
	X(I, 0, "stmxcsr (%rdi)") X(I, 0, "vstmxcsr (%rsi)") X(I, 0, "ldmxcsr (%rdx)") \
	X(I, 0, "vprold $7, %zmm17, %zmm18") X(I, 0, "vprolq $13, %ymm17, %ymm18{%k1}") X(I, 0, "vprord $16, %xmm17, %xmm18") \
	X(I, 0, "vprorq $0, %zmm17, %zmm18") X(I, 0, "vprolvd %zmm1, %zmm2, %zmm3") X(I, 0, "vprorvq %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpsllvd %ymm1, %ymm2, %ymm3") X(I, 0, "vpsrlvq %ymm1, %ymm2, %ymm3") X(I, 0, "vpsravd %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vpsrlvq %zmm17, %zmm18, %zmm19") X(I, 0, "vpsravq %zmm17, %zmm18, %zmm19") X(I, 0, "vpsllvw %ymm17, %ymm18, %ymm19") \
	X(I, 0, "vpmadd52luq %zmm17, %zmm18, %zmm19") X(I, 0, "vpmadd52huq %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vpmadd52luq (%rdi), %ymm18, %ymm19") X(I, 0, "vpmadd52huq (%rdi){1to4}, %ymm18, %ymm19{%k2}") \
	X(I, 0, "sha256rnds2 %xmm0, %xmm1, %xmm2") X(I, 0, "sha256msg1 %xmm1, %xmm2") X(I, 0, "sha256msg2 (%rdi), %xmm2") \
	X(I, 0, "sha1rnds4 $2, %xmm1, %xmm2") X(I, 0, "sha1nexte %xmm1, %xmm2") X(I, 0, "sha1msg1 %xmm1, %xmm2") \
	X(I, 0, "sha1msg2 %xmm1, %xmm2") \
	X(I, 0, "vpsignw %ymm1, %ymm2, %ymm3") X(I, 0, "vpsignb %xmm1, %xmm2, %xmm3") \
	X(I, 0, "mpsadbw $5, %xmm1, %xmm2") X(I, 0, "mpsadbw $2, (%rdi), %xmm2") X(I, 0, "vmpsadbw $0x2d, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "phminposuw %xmm1, %xmm2") X(I, 0, "vphminposuw (%rdi), %xmm2") \
	X(I, 0, "vpshldd $5, %zmm17, %zmm18, %zmm19") X(I, 0, "vpshrdq $63, %ymm17, %ymm18, %ymm19{%k1}") \
	X(I, 0, "vpshldw $0, %xmm17, %xmm18, %xmm19") X(I, 0, "vpshrdw $9, %zmm17, %zmm18, %zmm19") \
	X(I, 0, "vpshldvd %zmm17, %zmm18, %zmm19") X(I, 0, "vpshrdvq %ymm1, %ymm18, %ymm19{%k2}{z}") \
	X(I, 0, "vpshldvw %zmm17, %zmm18, %zmm19") X(I, 0, "vpshrdvw (%rdi), %zmm18, %zmm19") \
	X(I, 0, "vpdpbusd %zmm17, %zmm18, %zmm19") X(I, 0, "vpdpwssd %ymm17, %ymm18, %ymm19{%k1}") \
	X(I, 0, "vpdpbusds %zmm17, %zmm18, %zmm19") X(I, 0, "vpdpwssds (%rdi), %zmm18, %zmm19") \
	X(I, 0, "{vex} vpdpbusd %ymm1, %ymm2, %ymm3") X(I, 0, "{vex} vpdpwssd %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vpmultishiftqb %zmm17, %zmm18, %zmm19") X(I, 0, "vpmultishiftqb (%rdi){1to8}, %zmm18, %zmm19{%k1}") \
	X(D, 0, "vfmaddsub231pd %ymm1, %ymm2, %ymm3") X(S, 0, "vfmsubadd132ps (%rdi), %ymm2, %ymm3") \
	X(D, 0, "vfmaddsub213pd %zmm17, %zmm18, %zmm19{%k1}") \
	/* gathers: indices are small (see random_state), base rdx */ \
	X(I, 0, "vpgatherdd %ymm3, (%rdx,%ymm1,4), %ymm5") X(I, 0, "vpgatherqd %xmm3, 8(%rdx,%ymm1,2), %xmm5") \
	X(I, 0, "vpgatherdq %ymm3, (%rdx,%xmm1,8), %ymm5") X(I, 0, "vpgatherqq %xmm3, (%rdx,%xmm1,1), %xmm5") \
	X(I, 0, "vgatherdps %xmm3, -4(%rdx,%xmm4,4), %xmm5") X(I, 0, "vgatherqpd %ymm3, (%rdx,%ymm4,8), %ymm5") \
	X(I, 0, "vpgatherdd (%rdx,%zmm17,4), %zmm18{%k1}") X(I, 0, "vgatherqpd (%rdx,%ymm17,8), %ymm18{%k2}") \
	X(I, 0, "vpgatherqd (%rdx,%zmm17,1), %ymm18{%k1}") X(I, 0, "vpgatherdq 16(%rdx,%xmm17,2), %xmm18{%k3}") \
	X(I, 0, "phaddsw %xmm1, %xmm2") X(I, 0, "vphsubsw %ymm1, %ymm2, %ymm3") X(I, 0, "vphsubd %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpmaskmovd (%rdi), %ymm1, %ymm2") X(I, 0, "vmaskmovpd (%rsi), %xmm1, %xmm2") \
	X(I, U, "vpmaskmovq %ymm2, %ymm1, (%rdi)") X(I, U, "vmaskmovps %ymm2, %ymm1, (%rdi)") \
	/* scatters: SC keeps zmm17 small and the registers as written, so that
	 * no native store lands outside the data pages */ \
	X(I, SC, "vpscatterdd %zmm18, (%rdx,%zmm17,4){%k1}") X(I, SC, "vscatterqpd %ymm18, 8(%rdx,%ymm17,8){%k2}") \
	X(I, SC, "vpscatterqd %xmm18, (%rdx,%ymm17,1){%k1}") X(I, SC, "vpscatterdq %xmm18, 16(%rdx,%xmm17,2){%k3}") \
	X(I, 0, "crc32b %cl, %eax") X(I, 0, "crc32w %cx, %eax") X(I, 0, "crc32l %ecx, %eax") \
	X(I, 0, "crc32q %rcx, %rax") X(I, 0, "crc32b (%rdi), %rax") X(I, 0, "crc32l (%rsi), %r9d") \
	X(I, 0, "movnti %eax, (%rdi)") X(I, 0, "movnti %rcx, (%rsi)") \
	/* SSE4.2 string compares: every aggregation, format, polarity */ \
	X(I, 0, "pcmpistri $0x00, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x3a, (%rdi), %xmm2") \
	X(I, 0, "pcmpistri $0x04, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x44, %xmm1, %xmm2") \
	X(I, 0, "pcmpistri $0x08, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x18, %xmm1, %xmm2") \
	X(I, 0, "pcmpistri $0x0c, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x4d, %xmm1, %xmm2") \
	X(I, 0, "pcmpistri $0x12, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x36, %xmm1, %xmm2") \
	X(I, 0, "pcmpistri $0x0f, %xmm1, %xmm2") X(I, 0, "pcmpistri $0x07, %xmm1, %xmm2") \
	X(I, 0, "pcmpistrm $0x40, %xmm1, %xmm2") X(I, 0, "pcmpistrm $0x0a, %xmm1, %xmm2") \
	X(I, 0, "pcmpistrm $0x19, %xmm1, %xmm2") X(I, 0, "pcmpestri $0x00, %xmm1, %xmm2") \
	X(I, 0, "pcmpestri $0x0c, %xmm1, %xmm2") X(I, 0, "pcmpestri $0x35, %xmm1, %xmm2") \
	X(I, 0, "pcmpestri $0x07, %xmm1, %xmm2") X(I, 0, "pcmpestrm $0x48, %xmm1, %xmm2") \
	X(I, 0, "vpcmpistri $0x1a, %xmm1, %xmm2") X(I, 0, "vpcmpestrm $0x44, (%rdi), %xmm2") \
	/* opmask registers, vzeroupper */ \
	X(I, 0, "kmovd %k0, %eax") X(I, 0, "kmovq %k1, %rax") X(I, 0, "kmovd %k2, %r9d") X(I, 0, "kmovw %k2, %ecx") \
	X(I, 0, "kmovb %k2, %ecx") X(I, 0, "kmovd %eax, %k1") X(I, 0, "kmovq %rcx, %k3") X(I, 0, "kmovw %ecx, %k3") \
	X(I, 0, "kmovb %ecx, %k3") X(I, 0, "kmovq %k1, %k2") X(I, 0, "kmovd %k1, %k2") X(I, 0, "kmovq (%rdi), %k1") \
	X(I, 0, "kmovd %k1, (%rdi)") X(I, 0, "kmovw (%rsi), %k1") \
	X(I, 0, "kortestd %k1, %k2") X(I, 0, "kortestq %k1, %k2") X(I, 0, "kortestw %k1, %k1") X(I, 0, "kortestb %k3, %k1") \
	X(I, 0, "ktestd %k1, %k2") X(I, 0, "ktestq %k1, %k2") \
	X(I, 0, "kord %k1, %k2, %k3") X(I, 0, "korq %k1, %k2, %k3") X(I, 0, "kandd %k1, %k2, %k3") \
	X(I, 0, "kandnq %k1, %k2, %k3") X(I, 0, "kxorq %k1, %k2, %k3") X(I, 0, "kxnord %k1, %k2, %k3") \
	X(I, 0, "knotd %k1, %k3") X(I, 0, "kaddq %k1, %k2, %k3") X(I, 0, "kaddb %k1, %k2, %k3") \
	X(I, 0, "kunpckdq %k1, %k2, %k3") X(I, 0, "kunpckbw %k1, %k2, %k3") X(I, 0, "kunpckwd %k1, %k2, %k3") \
	X(I, 0, "kshiftrq $3, %k1, %k2") X(I, 0, "kshiftld $31, %k1, %k2") X(I, 0, "kshiftrd $32, %k1, %k2") \
	X(I, 0, "kshiftlb $5, %k1, %k2") \
	X(I, 0, "vzeroupper") X(I, 0, "vzeroall") \
	/* scalar and packed floating point */ \
	X(D, 0, "movsd (%rdi), %xmm1") X(D, 0, "movsd %xmm1, (%rdi)") X(D, 0, "movsd %xmm2, %xmm1") \
	X(S, 0, "movss (%rdi), %xmm1") X(S, 0, "movss %xmm1, (%rsi)") X(S, 0, "movss %xmm2, %xmm1") \
	X(D, 0, "vmovsd (%rdi), %xmm1") X(D, 0, "vmovsd %xmm1, (%rdi)") X(D, 0, "vmovsd %xmm2, %xmm3, %xmm1") \
	X(S, 0, "vmovss (%rdi), %xmm17") X(S, 0, "vmovss %xmm2, %xmm3, %xmm1") \
	X(D, 0, "addsd %xmm1, %xmm2") X(D, 0, "addsd (%rdi), %xmm2") X(D, 0, "subsd %xmm1, %xmm2") \
	X(D, 0, "mulsd %xmm1, %xmm2") X(D, 0, "divsd %xmm1, %xmm2") X(D, 0, "sqrtsd %xmm1, %xmm2") \
	X(D, 0, "minsd %xmm1, %xmm2") X(D, 0, "maxsd (%rsi), %xmm2") \
	X(S, 0, "addss %xmm1, %xmm2") X(S, 0, "mulss (%rdi), %xmm2") X(S, 0, "divss %xmm1, %xmm2") \
	X(S, 0, "sqrtss %xmm1, %xmm2") \
	X(D, 0, "addpd %xmm1, %xmm2") X(D, 0, "mulpd (%rdi), %xmm2") X(S, 0, "addps %xmm1, %xmm2") \
	X(S, 0, "divps %xmm1, %xmm2") X(D, 0, "sqrtpd %xmm1, %xmm2") X(D, 0, "haddpd %xmm1, %xmm2") \
	X(D, 0, "vaddsd %xmm1, %xmm2, %xmm3") X(D, 0, "vaddsd (%rdi), %xmm2, %xmm3") X(D, 0, "vmulsd %xmm1, %xmm2, %xmm3") \
	X(D, 0, "vsubsd %xmm1, %xmm2, %xmm3") X(D, 0, "vdivsd %xmm1, %xmm2, %xmm3") X(D, 0, "vsqrtsd %xmm1, %xmm2, %xmm3") \
	X(D, 0, "vaddpd %ymm1, %ymm2, %ymm3") X(D, 0, "vmulpd (%rdi), %ymm2, %ymm3") X(S, 0, "vaddps %ymm1, %ymm2, %ymm3") \
	X(D, 0, "vaddpd %zmm17, %zmm18, %zmm19") X(D, 0, "vsqrtpd %ymm1, %ymm3") \
	X(D, 0, "vaddpd %zmm17, %zmm18, %zmm19{%k1}") X(S, 0, "vmulps (%rdi), %zmm18, %zmm19{%k1}{z}") \
	X(D, 0, "vfmadd231pd %zmm17, %zmm18, %zmm19{%k2}") X(S, 0, "vsqrtps %zmm17, %zmm19{%k1}") \
	X(D, 0, "vaddsd %xmm17, %xmm18, %xmm19{%k1}") X(D, 0, "vfmadd213sd %xmm17, %xmm18, %xmm19{%k1}{z}") \
	X(D, 0, "vdivpd (%rdi){1to8}, %zmm18, %zmm19{%k1}") X(S, 0, "vdivss %xmm17, %xmm18, %xmm19{%k3}{z}") \
	/* EVEX static rounding and {sae}: run under that rounding, every exception suppressed */ \
	X(D, 0, "vaddpd {rz-sae}, %zmm17, %zmm18, %zmm19") X(S, 0, "vmulps {rd-sae}, %zmm17, %zmm18, %zmm19") \
	X(D, 0, "vaddsd {ru-sae}, %xmm17, %xmm18, %xmm19") X(D, 0, "vfmadd231pd {rn-sae}, %zmm17, %zmm18, %zmm19") \
	X(D, 0, "vdivpd {rz-sae}, %zmm17, %zmm18, %zmm19{%k1}") X(S, 0, "vsqrtps {ru-sae}, %zmm17, %zmm19") \
	X(D, 0, "vcvtpd2qq {rd-sae}, %zmm17, %zmm18") X(D, 0, "vcvttpd2qq {sae}, %zmm17, %zmm18") \
	X(D, 0, "vmaxpd {sae}, %zmm17, %zmm18, %zmm19") X(D, 0, "vcmppd $1, {sae}, %zmm17, %zmm18, %k2") \
	X(I, 0, "vcvtqq2pd %zmm17, %zmm18") X(I, 0, "vcvtuqq2pd %ymm17, %ymm18{%k1}") X(D, 0, "vcvtpd2qq %zmm17, %zmm18") \
	X(D, 0, "vcvttpd2uqq %zmm17, %zmm18{%k2}{z}") X(I, 0, "vcvtudq2ps (%rdi), %zmm18") X(S, 0, "vcvttps2udq %ymm17, %ymm18") \
	X(S, 0, "vrcp14ps %zmm17, %zmm18") X(D, 0, "vrsqrt14pd %ymm17, %ymm18{%k1}") X(D, 0, "vgetexppd %zmm17, %zmm18") \
	X(D, 0, "vscalefpd %zmm17, %zmm18, %zmm19") X(S, 0, "vscalefss %xmm17, %xmm18, %xmm19{%k1}") \
	X(D, 0, "vrcp14sd %xmm17, %xmm18, %xmm19") X(S, 0, "vgetexpss %xmm17, %xmm18, %xmm19") \
	X(D, 0, "vcvtusi2sd %rax, %xmm18, %xmm19") X(S, 0, "vcvtusi2ss %ecx, %xmm18, %xmm19") \
	X(D, 0, "vcvttsd2usi %xmm17, %rax") X(D, 0, "vcvtsd2usi %xmm17, %eax") X(S, 0, "vcvttss2usi %xmm1, %rcx") \
	X(I, 0, "vcvtph2ps %xmm1, %ymm2") X(I, 0, "vcvtph2ps (%rdi), %xmm2") X(S, 0, "vcvtps2ph $0, %ymm1, %xmm2") \
	X(S, 0, "vcvtps2ph $4, %xmm1, (%rdi)") X(S, 0, "vcvtps2ph $3, %ymm1, (%rsi)") X(S, 0, "vcvtps2ph $1, %xmm1, %xmm2") \
	X(D, 0, "vminpd %ymm17, %ymm18, %ymm19{%k1}") X(S, 0, "vfnmsub132ps (%rsi), %zmm18, %zmm19{%k2}") \
	X(D, 0, "cvtsi2sd %rax, %xmm1") X(D, 0, "cvtsi2sd %eax, %xmm1") X(D, 0, "cvtsi2sdl (%rdi), %xmm1") \
	X(S, 0, "cvtsi2ss %rax, %xmm1") X(D, 0, "vcvtsi2sd %rax, %xmm2, %xmm1") X(S, 0, "vcvtsi2ss %ecx, %xmm2, %xmm1") \
	X(D, 0, "cvttsd2si %xmm1, %eax") X(D, 0, "cvttsd2si %xmm1, %rax") X(D, 0, "cvtsd2si %xmm1, %rax") \
	X(D, 0, "cvttsd2si (%rdi), %ecx") X(S, 0, "cvttss2si %xmm1, %eax") X(S, 0, "cvtss2si %xmm1, %rax") \
	X(D, 0, "vcvttsd2si %xmm1, %rax") \
	X(S, 0, "cvtss2sd %xmm1, %xmm2") X(D, 0, "cvtsd2ss %xmm1, %xmm2") X(D, 0, "vcvtsd2ss %xmm1, %xmm2, %xmm3") \
	X(S, 0, "vcvtss2sd (%rdi), %xmm2, %xmm3") X(I, 0, "cvtdq2pd %xmm1, %xmm2") X(I, 0, "cvtdq2ps %xmm1, %xmm2") \
	X(S, 0, "cvttps2dq %xmm1, %xmm2") X(D, 0, "cvttpd2dq %xmm1, %xmm2") X(D, 0, "cvtpd2ps %xmm1, %xmm2") \
	X(S, 0, "cvtps2pd %xmm1, %xmm2") X(I, 0, "vcvtdq2ps %ymm1, %ymm2") \
	X(I, 0, "vcvtdq2pd %xmm1, %ymm2") X(S, 0, "vcvtps2pd (%rdi), %ymm2") X(D, 0, "vcvtpd2ps %ymm1, %xmm2") \
	X(D, 0, "vcvttpd2dq %ymm1, %xmm2") X(D, 0, "vcvtpd2dq %xmm1, %xmm2") X(I, 0, "vcvtdq2pd %xmm1, %xmm2") \
	X(S, 0, "rcpss %xmm1, %xmm2") X(S, 0, "rsqrtps %xmm1, %xmm2") X(S, 0, "vrcpps %ymm1, %ymm2") \
	X(S, 0, "addsubps %xmm1, %xmm2") X(D, 0, "hsubpd %xmm1, %xmm2") X(S, 0, "vhsubps %ymm1, %ymm2, %ymm3") \
	X(D, 0, "ucomisd %xmm1, %xmm0") X(D, 0, "ucomisd (%rdi), %xmm0") X(D, 0, "comisd %xmm1, %xmm0") \
	X(S, 0, "ucomiss %xmm1, %xmm0") X(S, 0, "comiss %xmm1, %xmm0") X(D, 0, "vucomisd %xmm1, %xmm0") \
	X(D, 0, "xorpd %xmm1, %xmm2") X(D, 0, "andpd %xmm1, %xmm2") X(S, 0, "xorps %xmm1, %xmm2") \
	X(D, 0, "unpcklpd %xmm1, %xmm2") \
	X(D, 0, "cmpltsd %xmm1, %xmm2") X(D, 0, "cmpnlesd (%rdi), %xmm2") X(D, 0, "cmpunordsd %xmm1, %xmm2") \
	X(D, 0, "cmpeqpd %xmm1, %xmm2") X(S, 0, "cmpneqps %xmm1, %xmm2") X(S, 0, "cmpless %xmm1, %xmm2") \
	X(D, 0, "vcmpltsd %xmm1, %xmm2, %xmm3") X(D, 0, "vcmpnge_uqsd %xmm1, %xmm2, %xmm3") \
	X(D, 0, "vcmpeq_ospd %ymm1, %ymm2, %ymm3") X(S, 0, "vcmptrue_usps %ymm1, %ymm2, %ymm3") \
	X(D, 0, "vcmppd $1, %zmm17, %zmm18, %k1") X(S, 0, "vcmpps $0x1d, (%rdi), %zmm18, %k1{%k2}") \
	X(D, 0, "vcmpsd $3, %xmm17, %xmm18, %k1") X(S, 0, "vcmpss $0x11, %xmm17, %xmm18, %k1{%k3}") \
	X(D, 0, "vcmppd $4, (%rdi){1to4}, %ymm18, %k2{%k1}") \
	X(D, 0, "roundsd $9, %xmm1, %xmm2") X(D, 0, "roundsd $10, (%rdi), %xmm2") X(D, 0, "roundsd $4, %xmm1, %xmm2") \
	X(D, 0, "roundsd $0, %xmm1, %xmm2") X(S, 0, "roundss $11, %xmm1, %xmm2") X(D, 0, "roundpd $1, %xmm1, %xmm2") \
	X(S, 0, "roundps $12, %xmm1, %xmm2") X(D, 0, "vroundsd $9, %xmm1, %xmm2, %xmm3") X(D, 0, "vroundpd $2, %ymm1, %ymm3") \
	X(D, 0, "vfmadd132sd %xmm1, %xmm2, %xmm3") X(D, 0, "vfmadd213sd (%rdi), %xmm2, %xmm3") \
	X(D, 0, "vfmadd231sd %xmm1, %xmm2, %xmm3") X(D, 0, "vfmsub132sd %xmm1, %xmm2, %xmm3") \
	X(D, 0, "vfnmadd231sd %xmm1, %xmm2, %xmm3") X(D, 0, "vfnmsub213sd %xmm1, %xmm2, %xmm3") \
	X(S, 0, "vfmadd231ss %xmm1, %xmm2, %xmm3") X(D, 0, "vfmadd231pd %ymm1, %ymm2, %ymm3") \
	X(S, 0, "vfmadd213ps (%rdi), %ymm2, %ymm3") X(D, 0, "vfmadd132sd %xmm17, %xmm18, %xmm19") \
	/* carry-less multiply in every encoding and length */ \
	X(I, 0, "pclmulqdq $0x10, (%rsi), %xmm2") X(I, 0, "vpclmulqdq $0x11, %xmm1, %xmm2, %xmm3") \
	X(I, 0, "vpclmulqdq $0x01, (%rdi), %xmm2, %xmm3") X(I, 0, "vpclmulqdq $0x11, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vpclmulqdq $0x10, (%rdi), %ymm2, %ymm3") X(I, 0, "vpclmulqdq $0x00, %xmm17, %xmm18, %xmm19") \
	X(I, 0, "vpclmulqdq $0x11, %ymm17, %ymm18, %ymm19") X(I, 0, "vpclmulqdq $0x01, (%rsi), %ymm18, %ymm19") \
	X(I, 0, "vpclmulqdq $0x10, %zmm17, %zmm18, %zmm19") X(I, 0, "vpclmulqdq $0x11, (%rdi), %zmm18, %zmm19") \
	X(I, 0, "vpclmulqdq $0xee, %zmm1, %zmm2, %zmm3") \
	/* compress/expand: every element type, length, destination and mask mode */ \
	X(I, 0, "vpcompressb %xmm17, %xmm18{%k1}") X(I, 0, "vpcompressb %ymm17, %ymm18{%k1}{z}") \
	X(I, 0, "vpcompressb %zmm17, %zmm18") X(I, 0, "vpcompressb %xmm17, (%rdi){%k2}") \
	X(I, 0, "vpcompressb %zmm17, (%rsi)") \
	X(I, 0, "vpcompressw %xmm17, %xmm18{%k1}{z}") X(I, 0, "vpcompressw %ymm17, %ymm18{%k2}") \
	X(I, 0, "vpcompressw %zmm17, %zmm18{%k1}") X(I, 0, "vpcompressw %ymm17, (%rdi){%k1}") \
	X(I, 0, "vpcompressw %zmm17, (%rsi){%k3}") \
	X(I, 0, "vpcompressd %xmm17, %xmm18{%k1}") X(I, 0, "vpcompressd %ymm17, %ymm18{%k2}{z}") \
	X(I, 0, "vpcompressd %zmm17, (%rdi){%k1}") X(I, 0, "vpcompressd %xmm17, (%rsi)") \
	X(I, 0, "vpcompressq %xmm17, %xmm18{%k1}{z}") X(I, 0, "vpcompressq %zmm17, %zmm18{%k2}") \
	X(I, 0, "vpcompressq %zmm17, (%rsi){%k1}") X(I, 0, "vpcompressq %ymm17, %ymm18") \
	X(I, 0, "vcompressps %xmm17, %xmm18{%k1}") X(I, 0, "vcompressps %ymm17, %ymm18{%k1}{z}") \
	X(I, 0, "vcompressps %zmm17, %zmm18{%k2}") X(I, 0, "vcompressps %zmm17, (%rdi){%k1}") \
	X(I, 0, "vcompressps %xmm17, (%rsi){%k3}") X(I, 0, "vcompressps %ymm17, (%rdi)") \
	X(I, 0, "vcompresspd %xmm17, %xmm18{%k2}{z}") X(I, 0, "vcompresspd %ymm17, %ymm18{%k1}") \
	X(I, 0, "vcompresspd %zmm17, %zmm18{%k1}{z}") X(I, 0, "vcompresspd %ymm17, (%rsi){%k2}") \
	X(I, 0, "vcompresspd %zmm17, (%rdi){%k1}") \
	X(I, 0, "vpexpandb %xmm17, %xmm18{%k1}") X(I, 0, "vpexpandb %zmm17, %zmm18{%k1}{z}") \
	X(I, 0, "vpexpandb (%rdi), %ymm18{%k2}") X(I, 0, "vpexpandb (%rsi), %zmm18{%k1}{z}") \
	X(I, 0, "vpexpandb (%rdi), %xmm18") \
	X(I, 0, "vpexpandw %ymm17, %ymm18{%k2}") X(I, 0, "vpexpandw %zmm17, %zmm18") \
	X(I, 0, "vpexpandw (%rdi), %xmm18{%k1}{z}") X(I, 0, "vpexpandw (%rsi), %zmm18{%k3}") \
	X(I, 0, "vpexpandd %xmm17, %xmm18{%k1}{z}") X(I, 0, "vpexpandd %ymm17, %ymm18{%k2}") \
	X(I, 0, "vpexpandd (%rsi), %xmm18{%k1}") X(I, 0, "vpexpandd (%rdi), %ymm18") \
	X(I, 0, "vpexpandq %xmm17, %xmm18{%k1}") X(I, 0, "vpexpandq %zmm17, %zmm18{%k2}{z}") \
	X(I, 0, "vpexpandq (%rdi), %zmm18{%k1}") \
	X(I, 0, "vexpandps %xmm17, %xmm18{%k1}") X(I, 0, "vexpandps %ymm17, %ymm18{%k1}{z}") \
	X(I, 0, "vexpandps %zmm17, %zmm18{%k2}") X(I, 0, "vexpandps (%rdi), %zmm18{%k1}{z}") \
	X(I, 0, "vexpandps (%rsi), %xmm18{%k2}") X(I, 0, "vexpandps (%rdi), %ymm18") \
	X(I, 0, "vexpandpd %xmm17, %xmm18{%k2}{z}") X(I, 0, "vexpandpd %ymm17, %ymm18{%k1}") \
	X(I, 0, "vexpandpd %zmm17, %zmm18") X(I, 0, "vexpandpd (%rdi), %ymm18{%k1}{z}") \
	X(I, 0, "vexpandpd (%rsi), %zmm18{%k3}") \
	/* EVEX scalar moves: load, store, register, masked and zeroing */ \
	X(S, 0, "vmovss (%rdi), %xmm17{%k1}") X(S, 0, "vmovss (%rsi), %xmm17{%k2}{z}") \
	X(S, 0, "vmovss %xmm17, (%rdi){%k1}") X(S, 0, "vmovss %xmm18, (%rsi)") \
	X(S, 0, "vmovss %xmm17, %xmm18, %xmm19{%k1}") X(S, 0, "vmovss %xmm17, %xmm18, %xmm19{%k2}{z}") \
	X(S, 0, "vmovss %xmm17, %xmm18, %xmm19") \
	X(D, 0, "vmovsd (%rdi), %xmm17{%k1}{z}") X(D, 0, "vmovsd (%rsi), %xmm17{%k2}") \
	X(D, 0, "vmovsd (%rdi), %xmm18") X(D, 0, "vmovsd %xmm17, (%rsi){%k2}") \
	X(D, 0, "vmovsd %xmm18, (%rdi)") X(D, 0, "vmovsd %xmm17, %xmm18, %xmm19{%k1}") \
	X(D, 0, "vmovsd %xmm17, %xmm18, %xmm19{%k3}{z}") X(D, 0, "vmovsd %xmm17, %xmm18, %xmm19") \
	/* GFNI: legacy, VEX and EVEX, every length, masked, broadcast */ \
	X(I, 0, "gf2p8mulb %xmm1, %xmm2") X(I, 0, "gf2p8mulb (%rdi), %xmm2") \
	X(I, 0, "gf2p8affineqb $0x63, %xmm1, %xmm2") X(I, 0, "gf2p8affineqb $0, (%rsi), %xmm2") \
	X(I, 0, "gf2p8affineinvqb $0x63, %xmm1, %xmm2") X(I, 0, "gf2p8affineinvqb $5, (%rdi), %xmm2") \
	X(I, 0, "vgf2p8mulb %xmm1, %xmm2, %xmm3") X(I, 0, "vgf2p8mulb (%rdi), %ymm2, %ymm3") \
	X(I, 0, "vgf2p8affineqb $0xa5, %ymm1, %ymm2, %ymm3") X(I, 0, "vgf2p8affineqb $1, (%rdi), %xmm2, %xmm3") \
	X(I, 0, "vgf2p8affineinvqb $0x63, %ymm1, %ymm2, %ymm3") \
	X(I, 0, "vgf2p8mulb %zmm17, %zmm18, %zmm19") X(I, 0, "vgf2p8mulb (%rdi), %zmm18, %zmm19{%k1}") \
	X(I, 0, "vgf2p8mulb %xmm17, %xmm18, %xmm19{%k2}{z}") X(I, 0, "vgf2p8mulb (%rsi), %ymm18, %ymm19{%k1}{z}") \
	X(I, 0, "vgf2p8affineqb $0x3c, %zmm17, %zmm18, %zmm19") X(I, 0, "vgf2p8affineqb $0, (%rdi){1to8}, %zmm18, %zmm19{%k1}") \
	X(I, 0, "vgf2p8affineqb $7, (%rsi), %ymm18, %ymm19{%k2}{z}") X(I, 0, "vgf2p8affineqb $9, %xmm17, %xmm18, %xmm19{%k1}") \
	X(I, 0, "vgf2p8affineinvqb $0x63, %zmm17, %zmm18, %zmm19{%k1}{z}") X(I, 0, "vgf2p8affineinvqb $0, (%rdi), %zmm18, %zmm19") \
	X(I, 0, "vgf2p8affineinvqb $1, (%rsi){1to2}, %xmm18, %xmm19{%k2}") \
	/* AVX512CD */ \
	X(I, 0, "vpconflictd %zmm17, %zmm18") X(I, 0, "vpconflictd %ymm17, %ymm18{%k1}") \
	X(I, 0, "vpconflictd %xmm17, %xmm18{%k2}{z}") X(I, 0, "vpconflictd (%rdi), %zmm18{%k1}") \
	X(I, 0, "vpconflictd (%rsi){1to8}, %ymm18") X(I, 0, "vpconflictq %zmm17, %zmm18{%k2}{z}") \
	X(I, 0, "vpconflictq %ymm17, %ymm18") X(I, 0, "vpconflictq (%rdi), %xmm18{%k1}") \
	X(I, 0, "vpconflictq (%rsi), %zmm18") \
	/* vfixupimm: every length, masked, zeroing, memory, broadcast, scalar */ \
	X(D, 0, "vfixupimmpd $0, %zmm17, %zmm18, %zmm19") X(D, 0, "vfixupimmpd $0xff, %ymm17, %ymm18, %ymm19{%k1}") \
	X(D, 0, "vfixupimmpd $0x11, (%rdi), %xmm18, %xmm19{%k2}{z}") X(D, 0, "vfixupimmpd $0x22, (%rsi){1to8}, %zmm18, %zmm19{%k1}") \
	X(S, 0, "vfixupimmps $0, %zmm17, %zmm18, %zmm19") X(S, 0, "vfixupimmps $0x5a, %ymm17, %ymm18, %ymm19{%k2}{z}") \
	X(S, 0, "vfixupimmps $0x81, (%rdi), %zmm18, %zmm19{%k1}") X(S, 0, "vfixupimmps $3, (%rsi){1to4}, %xmm18, %xmm19") \
	X(D, 0, "vfixupimmsd $0, %xmm17, %xmm18, %xmm19") X(D, 0, "vfixupimmsd $0x0c, (%rdi), %xmm18, %xmm19{%k1}") \
	X(D, 0, "vfixupimmsd $0xf0, %xmm17, %xmm18, %xmm19{%k2}{z}") X(S, 0, "vfixupimmss $0, %xmm17, %xmm18, %xmm19") \
	X(S, 0, "vfixupimmss $0x13, (%rsi), %xmm18, %xmm19{%k1}{z}") X(S, 0, "vfixupimmss $0xff, %xmm17, %xmm18, %xmm19{%k3}") X(S, 0, "vextractf128 $1, %ymm1, %xmm0") X(I, 0, "vextractf128 $1, %ymm2, %xmm3") \
	X(I, 0, "vextractf128 $1, %ymm2, (%rdi)") X(I, 0, "vextractf32x4 $3, %zmm17, %xmm18{%k1}") \
	X(I, 0, "vinsertf128 $1, %xmm1, %ymm2, %ymm3") X(I, 0, "vinsertf128 $1, (%rdi), %ymm2, %ymm3") \
	X(I, 0, "vperm2f128 $0x21, %ymm1, %ymm2, %ymm3") X(I, 0, "vbroadcastf128 (%rdi), %ymm2") \
	X(I, 0, "vextractf64x4 $1, %zmm17, %ymm18") X(I, 0, "vinsertf64x4 $1, %ymm17, %zmm18, %zmm19")

#define I 0
#define D 1
#define S 2
#define U 1
#define SC 3    /* U, and: small zmm17, no renumbering (scatters) */

#define ASM_ONE(kind, fl, s) \
	".pushsection vt_code,\"aw\"\n1: " s "\n2:\n.popsection\n" \
	".pushsection vt_idx,\"aw\"\n.quad 1b, 2b\n.popsection\n"
__asm__(INSNS(ASM_ONE));

struct tinsn { const char *text; int kind, flags; };
#define T_ONE(kind, fl, s) { s, kind, fl },
static const struct tinsn kinsns[] = { INSNS(T_ONE) };
extern const uint64_t __start_vt_idx[], __stop_vt_idx[];

/* ---------------------------------------------------- native runner */

#include "tests/unit/vec_native.h"

static struct interp_thread *g_th;
static uint64_t g_bv;

static int run_interp(const uint8_t *b, unsigned len, struct vstate *io,
		      uint64_t *bv, uint64_t *dirty)
{
	static struct interp_state st;
	struct interp_result r;

	if (!g_th) {
		g_th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		interp_thread_init(g_th);
	}
	memset(&st, 0, sizeof st);
	memcpy(st.zmm, io->zmm, sizeof st.zmm);
	memcpy(st.k, io->k, sizeof st.k);
	memcpy(st.gpr, io->gpr, sizeof st.gpr);
	st.rflags = io->rflags;
	st.mxcsr = io->mxcsr;
	st.mxcsr_mask = 0xffff;
	st.rip = place(b, len);
	st.seg_valid = 1;
	st.has_fpregs = 1;
	st.xstate_avail = INTERP_XS_ALL;
	st.xstate_bv = g_bv;
	st.xstate_dirty = 0;
	interp_run(&st, g_th, 1, NULL, &r);
	memcpy(io->zmm, st.zmm, sizeof st.zmm);
	memcpy(io->k, st.k, sizeof st.k);
	memcpy(io->gpr, st.gpr, sizeof st.gpr);
	io->rflags = st.rflags;
	io->mxcsr = st.mxcsr;
	*bv = st.xstate_bv;
	*dirty = st.xstate_dirty;
	return r.executed == 1 ? INTERP_OK : r.stop;
}

/* ------------------------------------------------------- operands */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

/* Bytes from a small alphabet, so compares and minima see equal bytes,
 * zeros (string terminators) and high-bit bytes. */
static uint8_t rbyte(int style)
{
	switch (style) {
	case 0: return (uint8_t)rnd();
	case 1: {
		static const uint8_t a[] = { 0, 'a', 'b', 'c', 0x80, 0xff, 0x7f, 1 };
		return a[rnd() % 8];
	}
	default: return rnd() % 16 ? 'a' + rnd() % 3 : 0;
	}
}

static void fill(uint8_t *p, size_t n, int style)
{
	for (size_t i = 0; i < n; i++)
		p[i] = rbyte(style);
}

static const double kdbl[] = {
	0.0, -0.0, 1.0, -1.5, 3.0, 1e300, -1e-300, 4.9e-324, 2.2250738585072014e-308,
	1.0 / 0.0, -1.0 / 0.0, 0.1, 1e16, 9007199254740993.0, -2147483648.0, 2147483648.5,
	9.3e18, -9.3e18, 0.5, 2.5, -4.9e-324, -2.2250738585072009e-308,
};

static void fill_fp(uint8_t *p, size_t n, int kind)
{
	for (size_t i = 0; i + 8 <= n; i += 8) {
		double d;
		switch (rnd() % 5) {
		case 0: d = kdbl[rnd() % (sizeof kdbl / sizeof kdbl[0])]; break;
		case 1: { uint64_t u = rnd(); memcpy(&d, &u, 8); break; }   /* incl. NaNs */
		default: d = ((double)(int64_t)rnd() / 9.2e18) * (double)(rnd() % 1000); break;
		}
		if (kind == S) {
			float f[2] = { (float)d, (float)(d * 0.75) };
			if (rnd() % 8 == 0) {
				uint32_t u = (uint32_t)rnd();
				memcpy(&f[1], &u, 4);
			}
			memcpy(p + i, f, 8);
		} else {
			memcpy(p + i, &d, 8);
		}
	}
}

static uint64_t rmask(void)
{
	switch (rnd() % 6) {
	case 0: return ~0ull;
	case 1: return 0;
	case 2: return (1ull << (rnd() % 64)) - 1;          /* prefix (bzhi) */
	case 3: return ~((1ull << (rnd() % 64)) - 1);       /* suffix */
	default: return rnd();
	}
}

static void random_state(struct vstate *s, int kind)
{
	int style = rnd() % 3;

	memset(s, 0, sizeof *s);
	for (int i = 0; i < 32; i++) {
		if (kind == I)
			fill(s->zmm[i], 64, style);
		else
			fill_fp(s->zmm[i], 64, kind);
	}
	for (int i = 0; i < 8; i++)
		s->k[i] = rmask();
	for (int i = 0; i < 16; i++)
		s->gpr[i] = rnd() % 4 ? rnd() : rnd() % 300;
	/* pointers: anywhere in the data pages, often across into the guard */
	for (int r = 0; r < 3; r++) {
		static const int preg[3] = { 7, 6, 2 };   /* rdi, rsi, rdx */
		uint64_t off = rnd() % 3 ? rnd() % (DATA_SIZE - 64) : DATA_SIZE - 1 - rnd() % 64;
		if (rnd() % 4 == 0)
			off &= ~63ull;                      /* aligned */
		s->gpr[preg[r]] = (uint64_t)g_data + off;
	}
	s->gpr[0] = (uint64_t)g_data + (rnd() % (DATA_SIZE / 8)) * 8 - (rnd() % 8 == 0 ? 0 : 0);
	s->gpr[4] = (uint64_t)g_data + DATA_SIZE / 2;          /* rsp */
	if (rnd() % 2) {                                       /* lengths */
		s->gpr[0] = rnd() % 2 ? rnd() % 20 : -(rnd() % 20);
		s->gpr[2] = rnd() % 2 ? rnd() % 20 : -(rnd() % 20);
	}
	/* small elements in some registers: shift and rotate counts, indices */
	if (kind == I && rnd() % 3 == 0)
		for (int i = 0; i < 32; i++)
			if (i == 1 || i == 4 || i == 17 || rnd() % 4 == 0)
				for (int b = 0; b < 64; b++)
					s->zmm[i][b] = b % 2 ? 0 : rnd() % 70;
	/* components in their initial state (not in g_bv) hold zeros */
	g_bv = INTERP_XS_X87 | INTERP_XS_SSE | (rnd() & (INTERP_XS_YMM | INTERP_XS_ZMM_H |
							  INTERP_XS_HI16 | INTERP_XS_OPMASK));
	if (rnd() % 2)
		g_bv = INTERP_XS_ALL;
	for (int i = 0; i < 32; i++) {
		if (i < 16 && !(g_bv & INTERP_XS_YMM))
			memset(s->zmm[i] + 16, 0, 16);
		if (i < 16 && !(g_bv & INTERP_XS_ZMM_H))
			memset(s->zmm[i] + 32, 0, 32);
		if (i >= 16 && !(g_bv & INTERP_XS_HI16))
			memset(s->zmm[i], 0, 64);
	}
	if (!(g_bv & INTERP_XS_OPMASK))
		memset(s->k, 0, sizeof s->k);
	s->rflags = 0x202 | (rnd() & 0x8d5);
	s->mxcsr = 0x1f80;
	if (kind != I && rnd() % 3 == 0) {
		s->mxcsr |= (rnd() % 4) << 13;                 /* rounding */
		if (rnd() % 4 == 0)
			s->mxcsr |= 0x8040 & rnd();            /* FTZ, DAZ */
		if (rnd() % 6 == 0)
			s->mxcsr &= ~(0x80u << (rnd() % 6));   /* unmask one */
		if (rnd() % 4 == 0)
			s->mxcsr |= rnd() & 0x3f;              /* sticky flags */
	}
}


/* Re-encode the instruction with its explicit vector and opmask register
 * operands renumbered at random (xmm0-15 or, EVEX, 0-31; k0-7), so that
 * every register number and aliasing between operands gets exercised.
 * Returns the new length, or 0 (then the original bytes are used). */
static unsigned rerand(const uint8_t *in, unsigned len, uint8_t *out)
{
	static ZydisDecoder d;
	static int init;
	ZydisDecodedInstruction di;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	ZydisEncoderRequest req;
	ZyanUSize olen = 15;

	if (!init) {
		ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
		init = 1;
	}
	if (ZYAN_FAILED(ZydisDecoderDecodeFull(&d, in, len, &di, ops)))
		return 0;
	if (ZYAN_FAILED(ZydisEncoderDecodedInstructionToEncoderRequest(&di, ops,
								       di.operand_count_visible, &req)))
		return 0;
	for (int i = 0; i < req.operand_count; i++) {
		ZydisEncoderOperand *o = &req.operands[i];
		ZydisRegisterClass c;
		int n;

		if (o->type != ZYDIS_OPERAND_TYPE_REGISTER ||
		    ops[i].visibility != ZYDIS_OPERAND_VISIBILITY_EXPLICIT)
			continue;
		c = ZydisRegisterGetClass(o->reg.value);
		n = di.encoding == ZYDIS_INSTRUCTION_ENCODING_EVEX ? 32 : 16;
		if (c == ZYDIS_REGCLASS_XMM)
			o->reg.value = ZYDIS_REGISTER_XMM0 + rnd() % n;
		else if (c == ZYDIS_REGCLASS_YMM)
			o->reg.value = ZYDIS_REGISTER_YMM0 + rnd() % n;
		else if (c == ZYDIS_REGCLASS_ZMM)
			o->reg.value = ZYDIS_REGISTER_ZMM0 + rnd() % n;
		else if (c == ZYDIS_REGCLASS_MASK && o->reg.value != ZYDIS_REGISTER_K0)
			o->reg.value = ZYDIS_REGISTER_K1 + rnd() % 7;
	}
	if (ZYAN_FAILED(ZydisEncoderEncodeInstruction(&req, out, &olen)))
		return 0;
	return (unsigned)olen;
}

/* ------------------------------------------------------- checking */

static uint64_t comp_of(int reg, int byte)
{
	if (reg >= 16)
		return INTERP_XS_HI16;
	return byte < 16 ? INTERP_XS_SSE : byte < 32 ? INTERP_XS_YMM : INTERP_XS_ZMM_H;
}

static int differ(const char *what, const uint8_t *code, unsigned len,
		  const struct vstate *in, const struct vstate *nat, const struct vstate *itp,
		  const uint8_t *dnat, const uint8_t *ditp, uint64_t bv, uint64_t dirty,
		  int report)
{
	char buf[512];
	int n = 0;

#define BAD(...) do { if (report && n < 6) { snprintf(buf, sizeof buf, __VA_ARGS__); \
		printf("    %s\n", buf); } n++; } while (0)
	for (int r = 0; r < 32; r++)
		for (int b = 0; b < 64; b++) {
			if (nat->zmm[r][b] != itp->zmm[r][b]) {
				BAD("zmm%d byte %d: in %02x native %02x interp %02x", r, b,
				    in->zmm[r][b], nat->zmm[r][b], itp->zmm[r][b]);
				break;
			}
			if (itp->zmm[r][b] != in->zmm[r][b] &&
			    ((bv & dirty & comp_of(r, b)) != comp_of(r, b))) {
				BAD("zmm%d byte %d changed but component %#lx not in bv %#lx / dirty %#lx",
				    r, b, (unsigned long)comp_of(r, b), (unsigned long)bv,
				    (unsigned long)dirty);
				break;
			}
		}
	for (int k = 0; k < 8; k++) {
		if (nat->k[k] != itp->k[k])
			BAD("k%d: in %016lx native %016lx interp %016lx", k, in->k[k], nat->k[k], itp->k[k]);
		else if (itp->k[k] != in->k[k] && !(bv & dirty & INTERP_XS_OPMASK))
			BAD("k%d changed, opmask not marked", k);
	}
	for (int g = 0; g < 16; g++)
		if (nat->gpr[g] != itp->gpr[g])
			BAD("gpr%d: in %016lx native %016lx interp %016lx", g, in->gpr[g], nat->gpr[g], itp->gpr[g]);
	if ((nat->rflags ^ itp->rflags) & INTERP_ARITH_FLAGS)
		BAD("rflags: in %03lx native %03lx interp %03lx", in->rflags & 0xfff,
		    nat->rflags & 0xfff, itp->rflags & 0xfff);
	if (nat->mxcsr != itp->mxcsr)
		BAD("mxcsr: in %04x native %04x interp %04x", in->mxcsr, nat->mxcsr, itp->mxcsr);
	else if (itp->mxcsr != in->mxcsr && !(dirty & INTERP_XS_SSE))
		BAD("mxcsr changed, SSE not dirty");
	for (int i = 0; i < DATA_SIZE; i++)
		if (dnat[i] != ditp[i]) {
			BAD("data+%#x: native %02x interp %02x", i, dnat[i], ditp[i]);
			break;
		}
	if (n && report) {
		char hb[64] = "";
		for (unsigned i = 0; i < len && i < 15; i++)
			sprintf(hb + 3 * i, "%02x ", code[i]);
		printf("    (%s: bytes %s)\n", what, hb);
	}
	return n;
#undef BAD
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 300;
	const char *filter = argc > 3 ? argv[3] : NULL;
	size_t ninsn = (size_t)(__stop_vt_idx - __start_vt_idx) / 2;
	static uint8_t dsave[DATA_SIZE], dnat[DATA_SIZE];
	int nfail = 0, nskip = 0;

	if (argc > 2)
		rnd_state = strtoull(argv[2], NULL, 0) | 1;
	setup();
	if (ninsn != sizeof kinsns / sizeof kinsns[0]) {
		printf("FAIL table: %zu assembled, %zu listed\n", ninsn, sizeof kinsns / sizeof kinsns[0]);
		return 1;
	}
	for (size_t t = 0; t < ninsn; t++) {
		const uint8_t *code0 = (const uint8_t *)__start_vt_idx[2 * t];
		unsigned len0 = (unsigned)(__start_vt_idx[2 * t + 1] - __start_vt_idx[2 * t]);
		const struct tinsn *ti = &kinsns[t];
		long ok = 0, faults = 0, unsup = 0, bad = 0, renum = 0, noinsn = 0;
		const char *first_stop = NULL;

		if (filter && !strstr(ti->text, filter))
			continue;
		for (long it = 0; it < iters; it++) {
			struct vstate in, nat, itp;
			uint64_t bv, dirty;
			int sig, rc;
			uint8_t rb[16];
			const uint8_t *code = code0;
			unsigned len = len0;

			/* half the time, other register numbers */
			if (it % 2 && ti->flags != SC && !getenv("VEC_NO_RENUMBER") &&
			    (len = rerand(code0, len0, rb))) {
				code = rb;
				renum++;
			} else {
				len = len0;
			}

			random_state(&in, ti->kind);
			if (ti->flags == SC) {
				/* indices 0..69 bytes/elements: stores stay in the data pages */
				for (int b = 0; b < 64; b++)
					in.zmm[17][b] = b % 8 ? 0 : rnd() % 70;
				in.gpr[2] = (uint64_t)g_data + rnd() % 2048;
			}
			if (ti->kind == I)
				fill(g_data, DATA_SIZE, rnd() % 3);
			else
				fill_fp(g_data, DATA_SIZE, ti->kind);
			memcpy(dsave, g_data, DATA_SIZE);
			nat = in;
			sig = run_native(code, len, &nat);
			if (sig == SIGILL) {
				noinsn = 1;   /* this CPU lacks it: nothing to compare with */
				memcpy(g_data, dsave, DATA_SIZE);
				break;
			}
			memcpy(dnat, g_data, DATA_SIZE);
			memcpy(g_data, dsave, DATA_SIZE);
			itp = in;
			rc = run_interp(code, len, &itp, &bv, &dirty);
			/* FP with underflow unmasked is left to the hardware on
			 * purpose (see interp/vec_fp.c) */
			if (rc == INTERP_STOP_UNSUPPORTED && ti->kind != I && !(in.mxcsr & 0x800) &&
			    !differ(ti->text, code, len, &in, &in, &itp, dsave, g_data, bv, dirty, 0)) {
				unsup++;
				continue;
			}
			if (sig) {
				faults++;
				if (rc != INTERP_STOP_WOULD_FAULT ||
				    differ(ti->text, code, len, &in, &in, &itp, dsave, g_data, bv, dirty, 0)) {
					if (rc == INTERP_STOP_UNSUPPORTED && ti->flags) {
						unsup++;
						continue;
					}
					if (bad++ == 0)
						printf("FAIL %s: native took signal %d, interp %s (mxcsr in %04x, "
						       "interp out %04x)\n", ti->text, sig, interp_stop_name(rc),
						       in.mxcsr, itp.mxcsr);
				}
				continue;
			}
			if (rc != INTERP_OK) {
				if (rc == INTERP_STOP_UNSUPPORTED && ti->flags) {
					unsup++;
					continue;
				}
				if (bad++ == 0)
					printf("FAIL %s: native ran, interp stopped: %s (k1 %lx k2 %lx "
					       "rdi%%64 %lu rsi%%64 %lu mxcsr %x len %u)\n", ti->text, interp_stop_name(rc),
					       in.k[1], in.k[2], in.gpr[7] % 64, in.gpr[6] % 64, in.mxcsr, len);
				if (bad == 1) {
					printf("    bytes:");
					for (unsigned i = 0; i < len; i++)
						printf(" %02x", code[i]);
					printf("\n");
				}
				first_stop = interp_stop_name(rc);
				continue;
			}
			if (differ(ti->text, code, len, &in, &nat, &itp, dnat, g_data, bv, dirty, 0)) {
				if (bad++ == 0) {
					printf("FAIL %s: state differs (iteration %ld)\n", ti->text, it);
					differ(ti->text, code, len, &in, &nat, &itp, dnat, g_data, bv, dirty, 1);
				}
				continue;
			}
			ok++;
		}
		(void)first_stop;
		if (noinsn && !bad && !ok && !faults) {
			printf("SKIP %s: this CPU lacks it (SIGILL natively)\n", ti->text);
			nskip++;
		} else if (noinsn) {
			printf("FAIL %s: SIGILL natively after %ld runs that were not\n", ti->text, ok + faults);
			nfail++;
		} else if (bad) {
			nfail++;
		} else if (ok + faults == 0) {
			/* every run stopped as unsupported: nothing was checked */
			printf("FAIL %s: nothing compared (%ld unsupported)\n", ti->text, unsup);
			nfail++;
		} else
			printf("PASS %s (%ld same, %ld faulted alike, %ld unsupported; %ld renumbered)\n",
			       ti->text, ok, faults, unsup, renum);
	}
	if (nskip)
		printf("PASS %d instructions this CPU lacks skipped, named above (SKIP)\n", nskip);
	return nfail != 0;
}
