/* tests/unit/interp_x87.c — the x87 control and status instructions
 * (interp/x87.c) against this CPU.
 *
 * Each instruction runs many times from a random x87 environment (FCW,
 * FSW with flags, condition codes, TOP, ES/B, consistent with the masks
 * or not; tag word, FIP/FDP/FOP), loaded with fldenv: natively (then
 * fxsave, AX and the 2-byte memory operand are saved), and in the
 * interpreter from the fxsave image of the same environment. Compared:
 * the FXSAVE image's x87 part (bytes 0..23 and 32..159), RAX, the memory
 * word, and that the interpreter marks INTERP_XS_X87 dirty exactly when
 * it changes the image. Memory operands sometimes point into a PROT_NONE
 * page: the hardware faults, the interpreter must stop with would_fault
 * and change nothing. A pending unmasked exception makes fwait and fldcw
 * take #MF (SIGFPE) natively: the interpreter must stop with would_fault.
 * The interpreter may stop as "unsupported" only where x87.c says it
 * does (an inconsistent status word, fldcw unmasking a pending flag,
 * fnclex clearing ES with error pointers set), with nothing changed;
 * this test counts those and requires them to be a minority.
 *
 * Also: interp_to_ucontext writes the changed image back to a frame.
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

/* Each: rdi = memory operand, rax = AX in/out. */
#define INSNS(X) \
	X("fnstcw (%rdi)") X("fnstsw (%rdi)") X("fnstsw %ax") X("fldcw (%rdi)") \
	X("fninit") X("fnclex") X("fwait") X("fnstcw 6(%rdi)") X("fldcw -2(%rdi)")

/* native: fldenv env; insn; fxsave out. Arguments in g_n. */
struct nat {
	uint8_t env[28];
	uint8_t pad[4];
	uint64_t rdi, rax;
	uint8_t fx[512] __attribute__((aligned(16)));
	uint8_t host[512] __attribute__((aligned(16)));
} __attribute__((aligned(16)));
static struct nat g_n;

#define FN_ONE(s) \
	"0: fxsave g_n+560(%rip)\n\tfldenv g_n(%rip)\n\tmov g_n+32(%rip), %rdi\n\tmov g_n+40(%rip), %rax\n" \
	".pushsection x87_idx,\"aw\"\n.quad 0b, 1f, 2f\n.popsection\n" \
	"1: " s "\n2:\n\tmov %rax, g_n+40(%rip)\n\tfxsave g_n+48(%rip)\n\tfxrstor g_n+560(%rip)\n\tret\n"
#define FN_DEF(s) ".p2align 4\n" FN_ONE(s)
__asm__(".text\n.globl x87_fns\n.hidden x87_fns\nx87_fns:\n" INSNS(FN_DEF));
extern const uint64_t __start_x87_idx[], __stop_x87_idx[];
static const char *const knames[] = {
#define NAME(s) s,
	INSNS(NAME)
};

/* image of env without running anything */
__asm__(".text\n.p2align 4\nx87_image:\n"
	"fxsave g_n+560(%rip)\n\tfldenv g_n(%rip)\n\tfxsave g_n+48(%rip)\n\tfxrstor g_n+560(%rip)\n\tret\n");
void x87_image(void);

static sigjmp_buf g_jb;
static volatile int g_in, g_sig;
static uint8_t *g_page;

static void on_sig(int sig, siginfo_t *si, void *ctx)
{
	(void)si;
	if (interp_fault_fixup(ctx))
		return;
	if (g_in) {
		g_sig = sig;
		g_in = 0;
		siglongjmp(g_jb, 1);
	}
	signal(sig, SIG_DFL);
}

/* Run f natively; g_sig: the signal it took, or 0. */
static __attribute__((noinline)) void run_native(void (*f)(void))
{
	g_sig = 0;
	if (sigsetjmp(g_jb, 1) == 0) {
		g_in = 1;
		f();
		g_in = 0;
	}
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

/* The function that runs instruction t natively. */
static void (*fn_of(unsigned t))(void)
{
	return (void (*)(void))__start_x87_idx[3 * t];
}

static void random_env(uint8_t *env)
{
	uint32_t fcw, fsw, ftw;

	memset(env, 0, 28);
	fcw = (uint32_t)rnd() & 0x1f3f;
	switch (rnd() % 4) {
	case 0: fcw |= 0x3f; break;             /* all masked */
	case 1: fcw = 0x037f; break;
	default: break;
	}
	fsw = (uint32_t)rnd() & 0x7f7f;         /* flags, SF, C0-C3, TOP */
	if (rnd() % 2)
		fsw &= ~0x3fu;
	if (fsw & ~fcw & 0x3f)                  /* ES and B as the CPU sets them */
		fsw |= 0x8080;
	if (rnd() % 16 == 0)
		fsw ^= 0x8080;                  /* inconsistent */
	ftw = rnd() % 3 ? 0xffff : (uint32_t)rnd() & 0xffff;
	memcpy(env, &fcw, 4);
	memcpy(env + 4, &fsw, 4);
	memcpy(env + 8, &ftw, 4);
	for (int i = 12; i < 28; i++)
		env[i] = (uint8_t)rnd();
	env[18] &= 0x07;                        /* FOP is 11 bits */
	env[19] = 0;
}

int main(int argc, char **argv)
{
	long iters = argc > 1 ? atol(argv[1]) : 2000;
	unsigned n = (unsigned)(__stop_x87_idx - __start_x87_idx) / 3;
	struct interp_thread *th;
	struct sigaction sa;
	static char altstack[65536];
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof altstack };
	int nfail = 0;

	if (n != sizeof knames / sizeof knames[0]) {
		printf("FAIL table: %u assembled\n", n);
		return 1;
	}
	g_page = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	mprotect(g_page + 4096, 4096, PROT_NONE);
	th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		  -1, 0);
	interp_init();
	interp_thread_init(th);
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);

	for (unsigned t = 0; t < n; t++) {
		long same = 0, faults = 0, unsup = 0, bad = 0;

		for (long it = 0; it < iters; it++) {
			static struct interp_state st;
			struct interp_result r;
			uint8_t env[28], img[512], nfx[512];
			uint64_t rdi, rax = rnd(), nrax;
			uint16_t mem0 = (uint16_t)rnd(), nmem, imem;
			int near = rnd() % 8 == 0;
			unsigned off = near ? 4094 + (unsigned)(rnd() % 2) * 2 : 64 + (unsigned)(rnd() % 64) * 2;
			int sig;

			random_env(env);
			rdi = (uint64_t)g_page + off;
			if (t == n - 1)                 /* fldcw -2(%rdi) */
				rdi += 2;
			/* the image of the environment, for the interpreter */
			memcpy(g_n.env, env, 28);
			memset(g_n.fx, 0, 512);
			x87_image();
			memcpy(img, g_n.fx, 512);
			/* native */
			if (off < 4094) {
				uint16_t v = mem0;
				/* fldcw loads: sometimes a plain masked word */
				if (rnd() % 2)
					v = (uint16_t)((rnd() & 0xff3f) | 0x3f);
				mem0 = v;
				memcpy(g_page + off, &v, 2);
				memcpy(g_page + off + 6, &v, 2);
			}
			memcpy(g_n.env, env, 28);
			g_n.rdi = rdi;
			g_n.rax = rax;
			memset(g_n.fx, 0, 512);
			run_native(fn_of(t));
			memcpy(nfx, g_n.fx, 512);
			nrax = g_n.rax;
			nmem = 0;
			if (off < 4094)
				memcpy(&nmem, g_page + off + (strstr(knames[t], "6(") ? 6 : 0), 2);
			/* restore memory */
			if (off < 4094) {
				memcpy(g_page + off, &mem0, 2);
				memcpy(g_page + off + 6, &mem0, 2);
			}
			sig = g_sig;

			/* interpreter */
			memset(&st, 0, sizeof st);
			memcpy(st.x87, img, 160);
			st.gpr[INTERP_RDI] = rdi;
			st.gpr[INTERP_RAX] = rax;
			st.rflags = 0x202;
			st.mxcsr = 0x1f80;
			st.mxcsr_mask = 0xffff;
			st.rip = __start_x87_idx[3 * t + 1];
			st.seg_valid = 1;
			st.has_fpregs = 1;
			st.xstate_avail = INTERP_XS_ALL;
			st.xstate_bv = INTERP_XS_X87 | INTERP_XS_SSE;
			interp_run(&st, th, 1, NULL, &r);
			imem = 0;
			if (off < 4094)
				memcpy(&imem, g_page + off + (strstr(knames[t], "6(") ? 6 : 0), 2);
			if (off < 4094) {
				memcpy(g_page + off, &mem0, 2);
				memcpy(g_page + off + 6, &mem0, 2);
			}

			if (r.executed != 1) {
				int unchanged = !memcmp(st.x87, img, 160) && st.gpr[INTERP_RAX] == rax &&
						!(st.xstate_dirty & INTERP_XS_X87);
				if (sig && r.stop == INTERP_STOP_WOULD_FAULT && unchanged) {
					faults++;
					continue;
				}
				if (r.stop == INTERP_STOP_UNSUPPORTED && unchanged) {
					unsup++;
					continue;
				}
				if (bad++ == 0)
					printf("FAIL %s: native signal %d, interp %s (fcw %04x fsw %04x)\n",
					       knames[t], sig, interp_stop_name(r.stop),
					       img[0] | img[1] << 8, img[2] | img[3] << 8);
				continue;
			}
			if (sig) {
				if (bad++ == 0)
					printf("FAIL %s: native took signal %d, interp ran (fcw %04x fsw %04x)\n",
					       knames[t], sig, img[0] | img[1] << 8, img[2] | img[3] << 8);
				continue;
			}
			/* FIP/FCS/FDP/FDS (bytes 8-23): control instructions leave
			 * them (fninit clears them). Natively they can change under
			 * the test when the thread is switched out: on AMD the
			 * kernel loads a dummy x87 operand to clear stale pointers
			 * (X86_BUG_FXSAVE_LEAK), seen once in 2000 under load. */
			int ptrs = strstr(knames[t], "fninit") != NULL;
			if (memcmp(st.x87, nfx, 8) || (ptrs && memcmp(st.x87 + 8, nfx + 8, 16)) ||
			    memcmp(st.x87 + 32, nfx + 32, 128) ||
			    st.gpr[INTERP_RAX] != nrax || imem != nmem ||
			    (memcmp(img, nfx, ptrs ? 24 : 8) && !(st.xstate_dirty & INTERP_XS_X87))) {
				if (bad++ == 0) {
					printf("FAIL %s: differs (rax %lx/%lx mem %04x/%04x dirty %d)\n",
					       knames[t], (unsigned long)nrax,
					       (unsigned long)st.gpr[INTERP_RAX], nmem, imem,
					       !!(st.xstate_dirty & INTERP_XS_X87));
					printf("    in:     ");
					for (int i = 0; i < 24; i++)
						printf("%02x", img[i]);
					printf("\n    native: ");
					for (int i = 0; i < 24; i++)
						printf("%02x", nfx[i]);
					printf("\n    interp: ");
					for (int i = 0; i < 24; i++)
						printf("%02x", st.x87[i]);
					printf("\n");
				}
				continue;
			}
			same++;
		}
		if (bad || same == 0 || unsup * 4 > iters) {
			if (!bad)
				printf("FAIL %s: %ld same, %ld unsupported\n", knames[t], same, unsup);
			nfail++;
		} else {
			printf("PASS %s (%ld same, %ld faulted alike, %ld unsupported)\n", knames[t],
			       same, faults, unsup);
		}
	}

	/* write-back: fninit's words reach a frame through interp_to_ucontext */
	{
		static uint8_t area[4096] __attribute__((aligned(64)));
		static struct interp_state st;
		ucontext_t uc;
		struct interp_result r0;
		uint16_t fcw;

		memset(&uc, 0, sizeof uc);
		memset(area, 0xab, sizeof area);
		uc.uc_mcontext.fpregs = (fpregset_t)area;
		memset(&st, 0, sizeof st);
		memset(st.x87, 0x55, sizeof st.x87);
		st.has_fpregs = 1;
		st.mxcsr = 0x1f80;
		st.xstate_avail = INTERP_XS_X87 | INTERP_XS_SSE;
		st.xstate_bv = INTERP_XS_X87 | INTERP_XS_SSE;
		st.rip = __start_x87_idx[3 * 4 + 1];  /* fninit */
		interp_run(&st, th, 1, NULL, &r0);
		interp_to_ucontext(&st, &uc);
		memcpy(&fcw, area, 2);
		if (fcw == 0x037f && area[2] == 0 && area[4] == 0 && area[32] == 0x55 &&
		    area[24] == 0x80 && area[25] == 0x1f)
			printf("PASS fninit written back to the frame (FCW 037f, MXCSR kept)\n");
		else {
			printf("FAIL fninit write-back: fcw %04x fsw %02x ftw %02x st0 %02x mxcsr %02x%02x\n",
			       fcw, area[2], area[4], area[32], area[25], area[24]);
			nfail++;
		}
	}
	return nfail != 0;
}
