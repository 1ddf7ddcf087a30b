/* tests/unit/interp_ucontext.c — state <-> signal ucontext, XSAVE area
 * included, and interpreting the interrupted thread from its handler.
 *
 * The program sets vector/opmask registers, then sends itself SIGUSR1 with
 * an inline syscall (so no library code disturbs the registers). The
 * handler converts the ucontext, checks what it read, edits registers —
 * among them the upper half of ymm1 after VZEROUPPER put that component in
 * its initial state, which only survives sigreturn if its xstate_bv bit is
 * set — and writes the state back. After return the program stores its
 * registers and we compare. Second part: the handler interprets the next
 * instructions of the interrupted code and the program must end with the
 * same result as a run without the signal.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"

static int nfail;
#define CHECK(what, cond) do { if (cond) printf("PASS %s\n", what); \
	else { printf("FAIL %s\n", what); nfail++; } } while (0)

static struct interp_state g_st;
static struct interp_thread *g_th;
static volatile int g_mode, g_read_ok, g_ran;
static struct interp_result g_res;

static void handler(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	if (interp_from_ucontext(&g_st, uc))
		return;
	if (g_mode == 0) {
		/* zmm17 = 0x17 bytes, k1 = 0xdeadbeef, ymm1 upper: init */
		int ok = 1;
		for (int i = 0; i < 64; i++)
			ok &= g_st.zmm[17].b[i] == 0x17;
		ok &= g_st.k[1] == 0xdeadbeefull;
		for (int i = 16; i < 64; i++)
			ok &= g_st.zmm[1].b[i] == 0;
		ok &= g_st.gpr[INTERP_R12] == 0x1212;
		g_read_ok = ok;
		memset(g_st.zmm[1].b + 16, 0xa5, 16);     /* ymm1 upper */
		memset(g_st.zmm[17].b + 32, 0x71, 32);
		g_st.k[2] = 0x12345678;
		g_st.gpr[INTERP_R12] = 0x4242;
		g_st.xstate_bv |= INTERP_XS_YMM | INTERP_XS_HI16 | INTERP_XS_OPMASK;
		g_st.xstate_dirty |= INTERP_XS_YMM | INTERP_XS_HI16 | INTERP_XS_OPMASK;
		interp_to_ucontext(&g_st, uc);
	} else {
		g_ran = interp_run(&g_st, g_th, 45, NULL, &g_res);
		interp_to_ucontext(&g_st, uc);
	}
	(void)sig; (void)si;
}

__attribute__((target("avx512f,avx512bw"), noinline)) static void part_xsave(void)
{
	uint8_t ymm1[32], zmm17[64];
	uint64_t k2, r12;
	static const uint8_t p17[64] = { [0 ... 63] = 0x17 };
	long pid = getpid(), tid = syscall(SYS_gettid);

	__asm__ volatile(
		"vmovdqu64 (%[p17]), %%zmm17\n"
		"mov $0xdeadbeef, %%eax\n kmovq %%rax, %%k1\n"
		"kxorq %%k2, %%k2, %%k2\n"
		"vpxor %%xmm1, %%xmm1, %%xmm1\n"
		"vzeroupper\n"
		"mov $0x1212, %%r12\n"
		"mov %[nr], %%eax\n mov %[pid], %%rdi\n mov %[tid], %%rsi\n mov %[sig], %%edx\n"
		"syscall\n"
		"vmovdqu %%ymm1, (%[y1])\n"
		"vmovdqu64 %%zmm17, (%[z17])\n"
		"kmovq %%k2, (%[k2])\n"
		"mov %%r12, (%[r12])\n"
		:
		: [p17] "r"(p17), [nr] "i"(SYS_tgkill), [pid] "r"(pid), [tid] "r"(tid),
		  [sig] "i"(SIGUSR1), [y1] "r"(ymm1), [z17] "r"(zmm17), [k2] "r"(&k2), [r12] "r"(&r12)
		: "rax", "rdi", "rsi", "rdx", "rcx", "r11", "r12", "xmm1", "xmm17", "k1", "k2", "memory");
	CHECK("ucontext: read zmm17, k1, ymm1 (init), r12", g_read_ok);
	int ok = 1;
	for (int i = 0; i < 16; i++)
		ok &= ymm1[i] == 0 && ymm1[16 + i] == 0xa5;
	CHECK("ucontext: ymm1 upper written back although it was in init state", ok);
	ok = 1;
	for (int i = 0; i < 64; i++)
		ok &= zmm17[i] == (i < 32 ? 0x17 : 0x71);
	CHECK("ucontext: zmm17 upper written back", ok);
	CHECK("ucontext: k2 written back", k2 == 0x12345678);
	CHECK("ucontext: r12 written back", r12 == 0x4242);
}

/* The code after the syscall: a small computation with loads, stores,
 * a loop and a call; rbx points at a buffer. */
static uint64_t run_seq(int with_signal, uint64_t *buf)
{
	long pid = getpid(), tid = syscall(SYS_gettid);
	uint64_t out;

	__asm__ volatile(
		"mov %[nr], %%eax\n mov %[pid], %%rdi\n mov %[tid], %%rsi\n mov %[sig], %%edx\n"
		"test %[ws], %[ws]\n jz 1f\n"
		"syscall\n"
		"1: mov $7, %%r8d\n"
		"xor %%r9d, %%r9d\n"
		"2: add %%r8, %%r9\n"
		"mov %%r9, (%[buf],%%r8,8)\n"
		"imul $3, %%r9, %%r10\n"
		"xor %%r10, %%r9\n"
		"dec %%r8\n"
		"jnz 2b\n"
		"call 3f\n"
		"jmp 4f\n"
		"3: lea 0x11(%%r9), %%r9\n ret\n"
		"4: mov %%r9, %[out]\n"
		: [out] "=m"(out)
		: [nr] "i"(SYS_tgkill), [pid] "r"(pid), [tid] "r"(tid), [sig] "i"(SIGUSR1),
		  [ws] "r"((long)with_signal), [buf] "r"(buf)
		: "rax", "rdi", "rsi", "rdx", "rcx", "r8", "r9", "r10", "r11", "memory", "cc");
	return out;
}

int main(void)
{
	struct sigaction sa;
	static char altstack[1 << 16];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	uint64_t b1[16] = { 0 }, b2[16] = { 0 }, r1, r2;

	interp_init();
	fault_handler_install();
	sigaltstack(&ss, NULL);
	g_th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	interp_thread_init(g_th);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);

	if (!__builtin_cpu_supports("avx512f")) {
		printf("SKIP ucontext xsave part: no AVX-512 on this CPU (not a pass)\n");
	} else {
		g_mode = 0;
		part_xsave();
	}
	g_mode = 1;
	r1 = run_seq(0, b1);
	r2 = run_seq(1, b2);
	printf("    interpreted %d instructions in the handler, stop %s\n", g_ran,
	       interp_stop_name(g_res.stop));
	CHECK("ucontext: interpreting the interrupted code gives the native result",
	      r1 == r2 && memcmp(b1, b2, sizeof b1) == 0 && g_ran == 45);
	printf("    struct interp_thread is %zu bytes, struct interp_state %zu\n",
	       interp_thread_size(), sizeof(struct interp_state));
	return nfail != 0;
}
