/* tests/unit/interp_native.h — run one instruction natively and in the
 * interpreter from the same register state, for the interp_* tests.
 *
 * The instruction is copied into an RWX page at a fixed offset and entered
 * by an assembly trampoline that loads all 16 GPRs and RFLAGS from g_nctx.
 * Falling through lands on an absolute jump to native_saveA; a branch
 * target at page offset 0x800 lands on native_saveB. Both store every GPR
 * and RFLAGS back with RIP-relative moves (no flags touched) and return.
 * The interpreter then runs the same bytes at the same address, so
 * RIP-relative operands and pushed return addresses agree.
 *
 * Data: g_data is DATA_PAGES read-write pages followed by a PROT_NONE guard
 * page, for page-crossing and fault tests. Include in one file only.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"
#include "tests/unit/xorshift.h"

#define DATA_PAGES 2
#define DATA_SIZE (DATA_PAGES * 4096)

struct nctx {
	uint64_t gpr[16];
	uint64_t rflags;
	uint64_t rip;
};

struct nctx g_nctx __attribute__((visibility("hidden")));
uint64_t g_host_rsp __attribute__((visibility("hidden")));
uint64_t g_target __attribute__((visibility("hidden")));
uint8_t g_which __attribute__((visibility("hidden")));
uint64_t g_flagstack[64] __attribute__((visibility("hidden"), aligned(16)));

static uint8_t *g_code;     /* RWX page */
static uint8_t *g_data;     /* DATA_PAGES + guard */

#define INSN_OFF 0x400
#define TARGET_OFF 0x800

void native_enter(void);
void native_saveA(void);
void native_saveB(void);

__asm__(
	".text\n"
	".globl native_enter\n .hidden native_enter\n"
	"native_enter:\n"
	"	push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"	mov %rsp, g_host_rsp(%rip)\n"
	"	lea g_flagstack+256(%rip), %rsp\n"
	"	pushq g_nctx+128(%rip)\n"
	"	popfq\n"
	"	mov g_nctx+0(%rip), %rax\n	mov g_nctx+8(%rip), %rcx\n"
	"	mov g_nctx+16(%rip), %rdx\n	mov g_nctx+24(%rip), %rbx\n"
	"	mov g_nctx+40(%rip), %rbp\n	mov g_nctx+48(%rip), %rsi\n"
	"	mov g_nctx+56(%rip), %rdi\n	mov g_nctx+64(%rip), %r8\n"
	"	mov g_nctx+72(%rip), %r9\n	mov g_nctx+80(%rip), %r10\n"
	"	mov g_nctx+88(%rip), %r11\n	mov g_nctx+96(%rip), %r12\n"
	"	mov g_nctx+104(%rip), %r13\n	mov g_nctx+112(%rip), %r14\n"
	"	mov g_nctx+120(%rip), %r15\n	mov g_nctx+32(%rip), %rsp\n"
	"	jmp *g_target(%rip)\n"
	".globl native_saveA\n .hidden native_saveA\n"
	"native_saveA:\n"
	"	movb $1, g_which(%rip)\n	jmp 1f\n"
	".globl native_saveB\n .hidden native_saveB\n"
	"native_saveB:\n"
	"	movb $2, g_which(%rip)\n"
	"1:	mov %rax, g_nctx+0(%rip)\n	mov %rcx, g_nctx+8(%rip)\n"
	"	mov %rdx, g_nctx+16(%rip)\n	mov %rbx, g_nctx+24(%rip)\n"
	"	mov %rsp, g_nctx+32(%rip)\n	mov %rbp, g_nctx+40(%rip)\n"
	"	mov %rsi, g_nctx+48(%rip)\n	mov %rdi, g_nctx+56(%rip)\n"
	"	mov %r8, g_nctx+64(%rip)\n	mov %r9, g_nctx+72(%rip)\n"
	"	mov %r10, g_nctx+80(%rip)\n	mov %r11, g_nctx+88(%rip)\n"
	"	mov %r12, g_nctx+96(%rip)\n	mov %r13, g_nctx+104(%rip)\n"
	"	mov %r14, g_nctx+112(%rip)\n	mov %r15, g_nctx+120(%rip)\n"
	"	lea g_flagstack+256(%rip), %rsp\n"
	"	pushfq\n	pop %rax\n	mov %rax, g_nctx+128(%rip)\n"
	"	mov g_host_rsp(%rip), %rsp\n"
	"	cld\n"
	"	pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"	ret\n"
);

static void put_absjmp(uint8_t *p, void *to)
{
	uint64_t a = (uint64_t)to;
	p[0] = 0xff; p[1] = 0x25; p[2] = p[3] = p[4] = p[5] = 0;
	memcpy(p + 6, &a, 8);
}

static void native_setup(void)
{
	g_code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	g_data = mmap(NULL, DATA_SIZE + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_code == MAP_FAILED || g_data == MAP_FAILED) {
		printf("FAIL mmap\n");
		exit(1);
	}
	mprotect(g_data + DATA_SIZE, 4096, PROT_NONE);
	{
		/* native faults happen with RSP in the data pages: handle
		 * signals elsewhere */
		static char altstack[65536];
		stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
		sigaltstack(&ss, NULL);
	}
	put_absjmp(g_code + TARGET_OFF, (void *)native_saveB);
	interp_init();
	fault_handler_install();
}

/* Place the instruction; returns its address. */
static uint64_t place(const uint8_t *bytes, unsigned len)
{
	memset(g_code + INSN_OFF, 0xcc, 0x300);
	memcpy(g_code + INSN_OFF, bytes, len);
	put_absjmp(g_code + INSN_OFF + len, (void *)native_saveA);
	return (uint64_t)(g_code + INSN_OFF);
}

/* Run natively: io in -> io out (rip = where it landed). */
static void run_native(const uint8_t *bytes, unsigned len, struct nctx *io)
{
	uint64_t pc = place(bytes, len);

	g_nctx = *io;
	g_target = pc;
	g_which = 0;
	native_enter();
	*io = g_nctx;
	io->rip = g_which == 2 ? (uint64_t)(g_code + TARGET_OFF) : pc + len;
}

static struct interp_thread *g_th;

/* Run n instructions in the interpreter. Returns the stop reason. */
static int run_interp_n(const uint8_t *bytes, unsigned len, struct nctx *io, int n,
			int *executed)
{
	struct interp_state st;
	struct interp_result r;
	uint64_t pc = place(bytes, len);

	if (!g_th) {
		g_th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		interp_thread_init(g_th);
	}
	memset(&st, 0, sizeof st);
	memcpy(st.gpr, io->gpr, sizeof st.gpr);
	st.rflags = io->rflags;
	st.rip = pc;
	st.mxcsr = 0x1f80;
	st.seg_valid = 1;
	interp_run(&st, g_th, n, NULL, &r);
	memcpy(io->gpr, st.gpr, sizeof st.gpr);
	io->rflags = st.rflags;
	io->rip = st.rip;
	if (executed)
		*executed = r.executed;
	return r.executed == n ? INTERP_OK : r.stop;
}

static __attribute__((unused)) int run_interp(const uint8_t *bytes, unsigned len, struct nctx *io)
{
	return run_interp_n(bytes, len, io, 1, NULL);
}

static const char *kgpr_name[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

/* Flags Zydis says this instruction leaves undefined. */
static uint64_t undefined_flags(const uint8_t *bytes, unsigned len)
{
	ZydisDecoder d;
	ZydisDecodedInstruction in;

	ZydisDecoderInit(&d, ZYDIS_MACHINE_MODE_LONG_64, ZYDIS_STACK_WIDTH_64);
	if (ZYAN_FAILED(ZydisDecoderDecodeInstruction(&d, NULL, bytes, len, &in)))
		return 0;
	return in.cpu_flags ? in.cpu_flags->undefined : 0;
}

static void hexbytes(char *out, const uint8_t *b, unsigned len)
{
	for (unsigned i = 0; i < len; i++)
		sprintf(out + 3 * i, "%02x ", b[i]);
}

static uint64_t rnd_state = 88172645463325252ull;
static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

/* Interesting operand values: boundaries of every width. */
static __attribute__((unused)) uint64_t edge_value(void)
{
	static const uint64_t k[] = {
		0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0x8000, 0xffff,
		0x7fffffff, 0x80000000, 0xffffffff, 0x100000000ull,
		0x7fffffffffffffffull, 0x8000000000000000ull, ~0ull, ~0ull - 1,
		63, 64, 31, 32, 15, 16, 7, 8, 0x0f0f0f0f0f0f0f0full,
	};
	switch (rnd() % 4) {
	case 0: return k[rnd() % (sizeof k / sizeof k[0])];
	case 1: return rnd() & 0xff;
	case 2: return rnd() & 0xffffffff;
	default: return rnd();
	}
}

/* Compare a native and an interpreted result; prints FAIL with details.
 * Differences only in flags Zydis calls undefined are returned as 2. */
static __attribute__((unused)) int compare(const char *what, const uint8_t *bytes, unsigned len,
		   const struct nctx *in, const struct nctx *nat, const struct nctx *itp)
{
	uint64_t und = undefined_flags(bytes, len);
	uint64_t fm = INTERP_ARITH_FLAGS | INTERP_DF;
	char hb[64] = "";
	int bad = 0;

	for (int i = 0; i < 16; i++)
		if (nat->gpr[i] != itp->gpr[i])
			bad = 1;
	if (nat->rip != itp->rip)
		bad = 1;
	if ((nat->rflags & fm & ~und) != (itp->rflags & fm & ~und))
		bad = 1;
	if (!bad) {
		if ((nat->rflags & fm) != (itp->rflags & fm))
			return 2;
		return 0;
	}
	hexbytes(hb, bytes, len);
	printf("FAIL %s: bytes %s\n", what, hb);
	for (int i = 0; i < 16; i++)
		if (nat->gpr[i] != itp->gpr[i] || in->gpr[i] != nat->gpr[i])
			printf("    %-4s in %016lx native %016lx interp %016lx%s\n", kgpr_name[i],
			       in->gpr[i], nat->gpr[i], itp->gpr[i],
			       nat->gpr[i] != itp->gpr[i] ? "  <--" : "");
	printf("    rflags in %04lx native %04lx interp %04lx (undefined %04lx)\n",
	       in->rflags & 0xfff, nat->rflags & 0xfff, itp->rflags & 0xfff, und);
	printf("    rip native %lx interp %lx\n", nat->rip, itp->rip);
	return 1;
}
