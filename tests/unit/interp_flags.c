/* tests/unit/interp_flags.c — flag edge cases, one table row per case:
 * {name, instruction bytes, rax, rcx, rflags in}. The expected registers
 * and flags are not written here: each row runs natively on this CPU and
 * in the interpreter, and all GPRs, RIP and the flags must agree: the
 * undefined ones too, which the vendor model (interp/vendor.c) gives as
 * this CPU does.
 *
 * Covers carry/overflow boundaries of add/adc/sub/sbb/neg/inc/dec/cmp at
 * every width, shifts and rotates by 0, 1, width-1, width and more,
 * shld/shrd, mul/imul overflow, bsf/bsr/tzcnt/lzcnt of 0, bt at the
 * top bit, and the accumulator widenings.
 */
#include "interp_native.h"

#define F0 0x202ull                 /* IF + reserved bit */
#define FC (0x202ull | 1)           /* CF in */
#define FALL (0x202ull | 0x8d5)     /* every arithmetic flag in */

/* X(name, bytes..., rax, rcx, flags) */
#define CASES(X) \
	X("add al,cl 7f+1 OF", ((const uint8_t[]){0x00, 0xc8}), 0x7f, 1, F0) \
	X("add al,cl ff+1 CF ZF AF", ((const uint8_t[]){0x00, 0xc8}), 0xff, 1, F0) \
	X("add ax,cx 7fff+1", ((const uint8_t[]){0x66, 0x01, 0xc8}), 0x7fff, 1, F0) \
	X("add eax,ecx ffffffff+1", ((const uint8_t[]){0x01, 0xc8}), 0xffffffff, 1, F0) \
	X("add rax,rcx max+1", ((const uint8_t[]){0x48, 0x01, 0xc8}), 0x7fffffffffffffffull, 1, F0) \
	X("add rax,rcx ~0+~0", ((const uint8_t[]){0x48, 0x01, 0xc8}), ~0ull, ~0ull, F0) \
	X("adc al,cl ff+0+CF", ((const uint8_t[]){0x10, 0xc8}), 0xff, 0, FC) \
	X("adc rax,rcx ~0+~0+CF", ((const uint8_t[]){0x48, 0x11, 0xc8}), ~0ull, ~0ull, FC) \
	X("adc eax,ecx 7fffffff+0+CF", ((const uint8_t[]){0x11, 0xc8}), 0x7fffffff, 0, FC) \
	X("sub al,cl 0-1", ((const uint8_t[]){0x28, 0xc8}), 0, 1, F0) \
	X("sub al,cl 80-1 OF", ((const uint8_t[]){0x28, 0xc8}), 0x80, 1, F0) \
	X("sub rax,rcx min-1", ((const uint8_t[]){0x48, 0x29, 0xc8}), 0x8000000000000000ull, 1, F0) \
	X("sbb al,cl 0-ff-CF", ((const uint8_t[]){0x18, 0xc8}), 0, 0xff, FC) \
	X("sbb rax,rcx x-x-CF", ((const uint8_t[]){0x48, 0x19, 0xc8}), 5, 5, FC) \
	X("sbb eax,ecx 0-ffffffff-CF", ((const uint8_t[]){0x19, 0xc8}), 0, 0xffffffff, FC) \
	X("cmp eax,ecx equal", ((const uint8_t[]){0x39, 0xc8}), 0x1234, 0x1234, F0) \
	X("neg al 80", ((const uint8_t[]){0xf6, 0xd8}), 0x80, 0, F0) \
	X("neg rax 0", ((const uint8_t[]){0x48, 0xf7, 0xd8}), 0, 0, FALL) \
	X("inc al 7f keeps CF", ((const uint8_t[]){0xfe, 0xc0}), 0x7f, 0, FC) \
	X("inc rax ~0", ((const uint8_t[]){0x48, 0xff, 0xc0}), ~0ull, 0, F0) \
	X("dec eax 80000000", ((const uint8_t[]){0xff, 0xc8}), 0x80000000, 0, FC) \
	X("dec ax 0 AF", ((const uint8_t[]){0x66, 0xff, 0xc8}), 0, 0, F0) \
	X("and rax,rcx clears CF OF", ((const uint8_t[]){0x48, 0x21, 0xc8}), ~0ull, 0x8000000000000000ull, FALL) \
	X("xor eax,eax zero-extends", ((const uint8_t[]){0x31, 0xc0}), ~0ull, 0, FALL) \
	X("test cl,cl parity", ((const uint8_t[]){0x84, 0xc9}), 0, 0x03, F0) \
	X("shl eax,cl by 0 keeps flags", ((const uint8_t[]){0xd3, 0xe0}), ~0ull, 0, FALL) \
	X("shl eax,cl by 32 = by 0", ((const uint8_t[]){0xd3, 0xe0}), 0x80000001, 32, FALL) \
	X("shl al,cl by 8", ((const uint8_t[]){0xd2, 0xe0}), 0x81, 8, F0) \
	X("shl al,cl by 9", ((const uint8_t[]){0xd2, 0xe0}), 0x81, 9, F0) \
	X("shl al,cl by 31", ((const uint8_t[]){0xd2, 0xe0}), 0xff, 31, F0) \
	X("shl ax,cl by 16", ((const uint8_t[]){0x66, 0xd3, 0xe0}), 0x8001, 16, F0) \
	X("shl ax,cl by 17", ((const uint8_t[]){0x66, 0xd3, 0xe0}), 0x8001, 17, F0) \
	X("shl rax,cl by 63", ((const uint8_t[]){0x48, 0xd3, 0xe0}), 3, 63, F0) \
	X("shl rax,cl by 64 = by 0", ((const uint8_t[]){0x48, 0xd3, 0xe0}), 3, 64, FALL) \
	X("shl rax,1 OF", ((const uint8_t[]){0x48, 0xd1, 0xe0}), 0x4000000000000000ull, 0, F0) \
	X("shr eax,1 OF=msb", ((const uint8_t[]){0xd1, 0xe8}), 0x80000000, 0, F0) \
	X("shr al,cl by 8", ((const uint8_t[]){0xd2, 0xe8}), 0x80, 8, F0) \
	X("sar al,cl by 9", ((const uint8_t[]){0xd2, 0xf8}), 0x80, 9, F0) \
	X("sar rax,cl by 63", ((const uint8_t[]){0x48, 0xd3, 0xf8}), 0x8000000000000000ull, 63, F0) \
	X("rol al,cl by 8", ((const uint8_t[]){0xd2, 0xc0}), 0x81, 8, F0) \
	X("rol al,cl by 0", ((const uint8_t[]){0xd2, 0xc0}), 0x81, 0, FALL) \
	X("ror eax,cl by 31", ((const uint8_t[]){0xd3, 0xc8}), 1, 31, F0) \
	X("rcl al,cl by 9 (full cycle)", ((const uint8_t[]){0xd2, 0xd0}), 0x55, 9, FC) \
	X("rcr ax,cl by 17", ((const uint8_t[]){0x66, 0xd3, 0xd8}), 0x8001, 17, FC) \
	X("rcr rax,1", ((const uint8_t[]){0x48, 0xd1, 0xd8}), 1, 0, FC) \
	X("shld eax,edx,cl by 0", ((const uint8_t[]){0x0f, 0xa5, 0xd0}), 0x12345678, 0, FALL) \
	X("shld rax,rdx,cl by 1", ((const uint8_t[]){0x48, 0x0f, 0xa5, 0xd0}), 0x4000000000000000ull, 1, F0) \
	X("shrd eax,edx,cl by 31", ((const uint8_t[]){0x0f, 0xad, 0xd0}), 0x80000001, 31, F0) \
	X("mul rcx overflow", ((const uint8_t[]){0x48, 0xf7, 0xe1}), ~0ull, 2, F0) \
	X("mul cl no overflow", ((const uint8_t[]){0xf6, 0xe1}), 0x10, 0x0f, FALL) \
	X("imul rax,rcx min*-1", ((const uint8_t[]){0x48, 0x0f, 0xaf, 0xc1}), 0x8000000000000000ull, ~0ull, F0) \
	X("imul ecx (one operand) fits", ((const uint8_t[]){0xf7, 0xe9}), 0xffffffff, 0xffffffff, FALL) \
	X("imul ax,cx,-1 overflow", ((const uint8_t[]){0x66, 0x6b, 0xc1, 0xff}), 0, 0x8000, F0) \
	X("div cl", ((const uint8_t[]){0xf6, 0xf1}), 0x1ff, 0x10, F0) \
	X("idiv rcx -7/2", ((const uint8_t[]){0x48, 0x99, 0x48, 0xf7, 0xf9}), (uint64_t)-7, 2, F0) \
	X("bsf eax,ecx of 0 keeps dest", ((const uint8_t[]){0x0f, 0xbc, 0xc1}), 0xffffffffffffffffull, 0, F0) \
	X("bsr rax,rcx top bit", ((const uint8_t[]){0x48, 0x0f, 0xbd, 0xc1}), 0, 0x8000000000000000ull, F0) \
	X("tzcnt eax,ecx of 0", ((const uint8_t[]){0xf3, 0x0f, 0xbc, 0xc1}), 5, 0, F0) \
	X("lzcnt ax,cx of 1", ((const uint8_t[]){0x66, 0xf3, 0x0f, 0xbd, 0xc1}), 5, 1, F0) \
	X("popcnt rax,rcx of ~0", ((const uint8_t[]){0xf3, 0x48, 0x0f, 0xb8, 0xc1}), 0, ~0ull, FALL) \
	X("bt eax,31", ((const uint8_t[]){0x0f, 0xba, 0xe0, 0x1f}), 0x80000000, 0, F0) \
	X("btc rax,rcx (rcx=64+3)", ((const uint8_t[]){0x48, 0x0f, 0xbb, 0xc8}), 8, 67, F0) \
	X("cdqe negative", ((const uint8_t[]){0x48, 0x98}), 0x80000000, 0, F0) \
	X("cqo negative", ((const uint8_t[]){0x48, 0x99}), 0x8000000000000000ull, 0, F0) \
	X("cmovz r32 false zero-extends", ((const uint8_t[]){0x0f, 0x44, 0xc1}), ~0ull, 1, F0) \
	X("setnle", ((const uint8_t[]){0x0f, 0x9f, 0xc0}), ~0ull, 0, 0x202 | 0x880) \
	X("sahf/lahf", ((const uint8_t[]){0x9f}), 0, 0, FALL) \
	X("xadd eax,eax", ((const uint8_t[]){0x0f, 0xc1, 0xc0}), 0x80000000, 0, F0) \
	X("cmpxchg ecx,ecx equal", ((const uint8_t[]){0x0f, 0xb1, 0xc9}), 7, 7, F0) \
	X("bswap eax", ((const uint8_t[]){0x0f, 0xc8}), 0x1122334455667788ull, 0, F0) \
	X("shld ax,dx,cl by 20 (result undefined)", ((const uint8_t[]){0x66, 0x0f, 0xa5, 0xd0}), 0x8421, 20, F0) \
	X("shrd ax,dx,cl by 31 (result undefined)", ((const uint8_t[]){0x66, 0x0f, 0xad, 0xd0}), 0x8421, 31, FC) \
	X("rcl al,cl by 18 (0 mod 9), OF in", ((const uint8_t[]){0xd2, 0xd0}), 0x81, 18, 0x202 | 0x800) \
	X("imul eax,ecx SF/ZF/PF undefined", ((const uint8_t[]){0x0f, 0xaf, 0xc1}), 0x10000, 0x10000, F0) \
	X("bextr eax,ecx,eax AF undefined", ((const uint8_t[]){0xc4, 0xe2, 0x78, 0xf7, 0xc1}), 0x0404, 0xf0f0, F0) \
	X("bzhi eax,ecx,eax PF undefined", ((const uint8_t[]){0xc4, 0xe2, 0x78, 0xf5, 0xc1}), 5, 0xff, FALL) \
	X("lzcnt eax,ecx OF undefined", ((const uint8_t[]){0xf3, 0x0f, 0xbd, 0xc1}), 0, 0x10, FALL) \

int main(void)
{
	int nfail = 0, npass = 0;

	native_setup();
#define RUN(name, bytes, rax, rcx, fl) do {                                   \
		struct nctx in, nat, itp;                                    \
		memset(&in, 0, sizeof in);                                   \
		for (int i = 0; i < 16; i++)                                 \
			in.gpr[i] = 0x0101010101010101ull * (i + 1);         \
		in.gpr[INTERP_RSP] = (uint64_t)g_data + 4096;                \
		in.gpr[INTERP_RAX] = rax;                                    \
		in.gpr[INTERP_RCX] = rcx;                                    \
		in.rflags = fl;                                              \
		nat = itp = in;                                              \
		run_native(bytes, sizeof bytes, &nat);                       \
		int rc = run_interp_n(bytes, sizeof bytes, &itp,             \
			   sizeof bytes == 5 && (bytes)[0] == 0x48 && (bytes)[1] == 0x99 ? 2 : 1, NULL); \
		if (rc != INTERP_OK) {                                       \
			printf("FAIL %s: interp stopped: %s\n", name, interp_stop_name(rc)); \
			nfail++;                                             \
			break;                                               \
		}                                                            \
		int c = compare(name, bytes, sizeof bytes, &in, &nat, &itp); \
		if (c == 2)   /* the vendor model must give the host's */     \
			printf("FAIL %s: undefined flags differ: native %03lx interp %03lx\n", \
			       name, nat.rflags & 0x8d5, itp.rflags & 0x8d5);  \
		if (c)                                                       \
			nfail++;                                             \
		else {                                                       \
			npass++;                                             \
			printf("PASS %s\n", name);                          \
		}                                                            \
	} while (0);
	CASES(RUN)
	printf("%d cases passed, %d failed\n", npass, nfail);
	return nfail != 0;
}
