/*
 * The native side of the vector tests (interp_vec_ops.c, interp_vec_libc.c):
 * the full vector/opmask/MXCSR/GPR state record and the runner that executes
 * code natively on the CPU from such a state and saves what it left, so the
 * interpreter's result can be compared with the hardware's. Included by
 * both tests (static functions); not part of the interpreter.
 */
#ifndef VPROF_TESTS_VEC_NATIVE_H
#define VPROF_TESTS_VEC_NATIVE_H

struct vstate {
	uint8_t zmm[32][64];     /* 0 */
	uint64_t k[8];           /* 2048 */
	uint64_t gpr[16];        /* 2112 */
	uint64_t rflags;         /* 2240 */
	uint32_t mxcsr;          /* 2248 */
	uint32_t pad[13];
} __attribute__((aligned(64)));

struct vstate g_vs __attribute__((visibility("hidden")));
uint64_t g_vhost_rsp __attribute__((visibility("hidden")));
uint32_t g_vhost_mxcsr __attribute__((visibility("hidden")));
uint64_t g_vtarget __attribute__((visibility("hidden")));
uint64_t g_vflagstack[64] __attribute__((visibility("hidden"), aligned(16)));

void vnative_enter(void);
void vnative_save(void);

#define ZL(n) "vmovdqu64 g_vs+64*" #n "(%rip), %zmm" #n "\n"
#define ZS(n) "vmovdqu64 %zmm" #n ", g_vs+64*" #n "(%rip)\n"
#define Z8(M, a) M(a##0) M(a##1) M(a##2) M(a##3) M(a##4) M(a##5) M(a##6) M(a##7)
__asm__(
	".text\n"
	".globl vnative_enter\n .hidden vnative_enter\n"
	"vnative_enter:\n"
	"	push %rbx\n push %rbp\n push %r12\n push %r13\n push %r14\n push %r15\n"
	"	mov %rsp, g_vhost_rsp(%rip)\n"
	"	stmxcsr g_vhost_mxcsr(%rip)\n"
	ZL(0) ZL(1) ZL(2) ZL(3) ZL(4) ZL(5) ZL(6) ZL(7) ZL(8) ZL(9)
	ZL(10) ZL(11) ZL(12) ZL(13) ZL(14) ZL(15) ZL(16) ZL(17) ZL(18) ZL(19)
	ZL(20) ZL(21) ZL(22) ZL(23) ZL(24) ZL(25) ZL(26) ZL(27) ZL(28) ZL(29)
	ZL(30) ZL(31)
	"	kmovq g_vs+2048(%rip), %k0\n	kmovq g_vs+2056(%rip), %k1\n"
	"	kmovq g_vs+2064(%rip), %k2\n	kmovq g_vs+2072(%rip), %k3\n"
	"	kmovq g_vs+2080(%rip), %k4\n	kmovq g_vs+2088(%rip), %k5\n"
	"	kmovq g_vs+2096(%rip), %k6\n	kmovq g_vs+2104(%rip), %k7\n"
	"	ldmxcsr g_vs+2248(%rip)\n"
	"	lea g_vflagstack+256(%rip), %rsp\n"
	"	pushq g_vs+2240(%rip)\n	popfq\n"
	"	mov g_vs+2112(%rip), %rax\n	mov g_vs+2120(%rip), %rcx\n"
	"	mov g_vs+2128(%rip), %rdx\n	mov g_vs+2136(%rip), %rbx\n"
	"	mov g_vs+2152(%rip), %rbp\n	mov g_vs+2160(%rip), %rsi\n"
	"	mov g_vs+2168(%rip), %rdi\n	mov g_vs+2176(%rip), %r8\n"
	"	mov g_vs+2184(%rip), %r9\n	mov g_vs+2192(%rip), %r10\n"
	"	mov g_vs+2200(%rip), %r11\n	mov g_vs+2208(%rip), %r12\n"
	"	mov g_vs+2216(%rip), %r13\n	mov g_vs+2224(%rip), %r14\n"
	"	mov g_vs+2232(%rip), %r15\n	mov g_vs+2144(%rip), %rsp\n"
	"	jmp *g_vtarget(%rip)\n"
	".globl vnative_save\n .hidden vnative_save\n"
	"vnative_save:\n"
	"	mov %rax, g_vs+2112(%rip)\n	mov %rcx, g_vs+2120(%rip)\n"
	"	mov %rdx, g_vs+2128(%rip)\n	mov %rbx, g_vs+2136(%rip)\n"
	"	mov %rsp, g_vs+2144(%rip)\n	mov %rbp, g_vs+2152(%rip)\n"
	"	mov %rsi, g_vs+2160(%rip)\n	mov %rdi, g_vs+2168(%rip)\n"
	"	mov %r8, g_vs+2176(%rip)\n	mov %r9, g_vs+2184(%rip)\n"
	"	mov %r10, g_vs+2192(%rip)\n	mov %r11, g_vs+2200(%rip)\n"
	"	mov %r12, g_vs+2208(%rip)\n	mov %r13, g_vs+2216(%rip)\n"
	"	mov %r14, g_vs+2224(%rip)\n	mov %r15, g_vs+2232(%rip)\n"
	"	lea g_vflagstack+256(%rip), %rsp\n"
	"	pushfq\n	pop %rax\n	mov %rax, g_vs+2240(%rip)\n"
	ZS(0) ZS(1) ZS(2) ZS(3) ZS(4) ZS(5) ZS(6) ZS(7) ZS(8) ZS(9)
	ZS(10) ZS(11) ZS(12) ZS(13) ZS(14) ZS(15) ZS(16) ZS(17) ZS(18) ZS(19)
	ZS(20) ZS(21) ZS(22) ZS(23) ZS(24) ZS(25) ZS(26) ZS(27) ZS(28) ZS(29)
	ZS(30) ZS(31)
	"	kmovq %k0, g_vs+2048(%rip)\n	kmovq %k1, g_vs+2056(%rip)\n"
	"	kmovq %k2, g_vs+2064(%rip)\n	kmovq %k3, g_vs+2072(%rip)\n"
	"	kmovq %k4, g_vs+2080(%rip)\n	kmovq %k5, g_vs+2088(%rip)\n"
	"	kmovq %k6, g_vs+2096(%rip)\n	kmovq %k7, g_vs+2104(%rip)\n"
	"	stmxcsr g_vs+2248(%rip)\n"
	"	ldmxcsr g_vhost_mxcsr(%rip)\n"
	"	vzeroupper\n"
	"	mov g_vhost_rsp(%rip), %rsp\n"
	"	cld\n"
	"	pop %r15\n pop %r14\n pop %r13\n pop %r12\n pop %rbp\n pop %rbx\n"
	"	ret\n"
);

#define DATA_SIZE 8192
static uint8_t *g_code, *g_data;
static sigjmp_buf g_jb;
static volatile int g_in_native, g_native_sig;

static void on_fault(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	if (interp_fault_fixup(ctx))
		return;
	if (g_in_native) {
		g_native_sig = sig;
		g_in_native = 0;
		siglongjmp(g_jb, 1);
	}
	signal(sig, SIG_DFL);
}

static void setup(void)
{
	static char altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	struct sigaction sa;

	g_code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	g_data = mmap(NULL, DATA_SIZE + 4096, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g_code == MAP_FAILED || g_data == MAP_FAILED) {
		printf("FAIL mmap\n");
		exit(1);
	}
	mprotect(g_data + DATA_SIZE, 4096, PROT_NONE);
	sigaltstack(&ss, NULL);
	interp_init();
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_fault;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);
	/* An instruction this CPU lacks (a VEX-encoded VNNI on a core without
	 * AVX-VNNI): the native run returns SIGILL, and the caller skips it. */
	sigaction(SIGILL, &sa, NULL);
}

static uint64_t place(const uint8_t *b, unsigned len)
{
	uint8_t *p = g_code + 0x400;
	uint64_t a = (uint64_t)vnative_save;

	memset(p, 0xcc, 0x100);
	memcpy(p, b, len);
	p[len] = 0xff; p[len + 1] = 0x25;
	memset(p + len + 2, 0, 4);
	memcpy(p + len + 6, &a, 8);
	return (uint64_t)p;
}

/* Returns 0, or the signal the instruction took. */
static int run_native(const uint8_t *b, unsigned len, struct vstate *io)
{
	uint32_t host;

	__asm__ volatile("stmxcsr %0" : "=m"(host));
	g_vs = *io;
	g_vtarget = place(b, len);
	g_native_sig = 0;
	if (sigsetjmp(g_jb, 1) == 0) {
		g_in_native = 1;
		vnative_enter();
		g_in_native = 0;
	}
	__asm__ volatile("ldmxcsr %0" : : "m"(host));
	if (!g_native_sig)
		*io = g_vs;
	return g_native_sig;
}

#endif
