/* interp/vendor.c — which vendor's answers the interpreter gives where the
 * manuals leave a flag or a result undefined, and the start-up check that
 * the host gives the same ones.
 *
 * The models themselves live in the family files (shift.c, muldiv.c,
 * bit.c), each undefined case written once per vendor, read off tables
 * recorded on an AMD Zen 5 and an Intel Xeon (tests/fixtures/x86-flags;
 * tests/unit/interp_vendor_flags replays both through the interpreter).
 * This file owns interp_vmodel[], the model each rule family follows.
 *
 * Choice, per rule family: the model of the vendor CPUID names, if the
 * family's native probes agree with it; otherwise the other model, if
 * they agree with that (a core that behaves like the other vendor's);
 * otherwise INTERP_VENDOR_NONE, and the family's instructions stop as
 * unsupported: a third vendor or an older core is never guessed at. The
 * probes run each instruction of the family natively (assembly stubs
 * below, between a pushfq/popfq pair) and in the interpreter from the same
 * registers and flags, with mixed input flags, so a model that only got
 * the all-set/all-clear rows of the tables right is caught too. They cost
 * about 0.2 ms, once per process (interp_init), most of it populating the
 * decode cache the probes run with.
 *
 * Concurrency: interp_vmodel[] is written by interp_init and
 * interp_vendor_force before any run, then only read.
 */
#include <cpuid.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "interp/interp.h"
#include "interp/internal.h"

uint8_t interp_vmodel[INTERP_VR__COUNT];
static uint8_t g_checked[INTERP_VR__COUNT];   /* the host-checked choice */
static int g_cpuid_vendor = INTERP_VENDOR_NONE;

/* ------------------------------------------------------ native stubs
 * interp_vprobe_NAME(uint64_t io[5]): rax rbx rcx rdx rflags in, the same out.
 * interp_vprobe_NAME_insn is the instruction itself, which the interpreter runs
 * at its own address, so both see the very same bytes. */
#define VPROBE(name, insn)                                                   \
	__asm__(".pushsection .text\n .p2align 4\n"                          \
		".globl interp_vprobe_" #name "\n .hidden interp_vprobe_" #name "\n"       \
		".globl interp_vprobe_" #name "_insn\n .hidden interp_vprobe_" #name "_insn\n" \
		"interp_vprobe_" #name ":\n"                                        \
		"	push %rbx\n"                                         \
		"	mov 0(%rdi), %rax\n	mov 8(%rdi), %rbx\n"          \
		"	mov 16(%rdi), %rcx\n	mov 24(%rdi), %rdx\n"         \
		"	pushq 32(%rdi)\n	popfq\n"                        \
		"interp_vprobe_" #name "_insn:\n	" insn "\n"                  \
		"	pushfq\n	popq 32(%rdi)\n"                        \
		"	mov %rax, 0(%rdi)\n	mov %rbx, 8(%rdi)\n"          \
		"	mov %rcx, 16(%rdi)\n	mov %rdx, 24(%rdi)\n"         \
		"	pop %rbx\n	ret\n .popsection\n");                  \
	void interp_vprobe_##name(uint64_t *io);                                    \
	extern const uint8_t interp_vprobe_##name##_insn[];

/* X(name, family, cpu feature, AT&T text) */
#define PROBES(X)                                                            \
	X(shl8, SHIFT, 0, "shlb %cl, %al")                                   \
	X(shl16, SHIFT, 0, "shlw %cl, %ax")                                  \
	X(shl32, SHIFT, 0, "shll %cl, %eax")                                 \
	X(shl64, SHIFT, 0, "shlq %cl, %rax")                                 \
	X(shr8, SHIFT, 0, "shrb %cl, %al")                                   \
	X(shr16, SHIFT, 0, "shrw %cl, %ax")                                  \
	X(shr64, SHIFT, 0, "shrq %cl, %rax")                                 \
	X(sar8, SHIFT, 0, "sarb %cl, %al")                                   \
	X(sar32, SHIFT, 0, "sarl %cl, %eax")                                 \
	X(sar64, SHIFT, 0, "sarq %cl, %rax")                                 \
	X(shl1, SHIFT, 0, "shlq $1, %rax")                                   \
	X(rol8, ROTATE, 0, "rolb %cl, %al")                                  \
	X(rol16, ROTATE, 0, "rolw %cl, %ax")                                 \
	X(rol64, ROTATE, 0, "rolq %cl, %rax")                                \
	X(rol64i, ROTATE, 0, "rolq $5, %rax")                                \
	X(ror8i, ROTATE, 0, "rorb $3, %al")                                  \
	X(ror8, ROTATE, 0, "rorb %cl, %al")                                  \
	X(ror32, ROTATE, 0, "rorl %cl, %eax")                                \
	X(ror64, ROTATE, 0, "rorq %cl, %rax")                                \
	X(rcl8, ROTATE, 0, "rclb %cl, %al")                                  \
	X(rcl16, ROTATE, 0, "rclw %cl, %ax")                                 \
	X(rcl64, ROTATE, 0, "rclq %cl, %rax")                                \
	X(rcr8, ROTATE, 0, "rcrb %cl, %al")                                  \
	X(rcr32, ROTATE, 0, "rcrl %cl, %eax")                                \
	X(rcr64, ROTATE, 0, "rcrq %cl, %rax")                                \
	X(shld16, DSHIFT, 0, "shldw %cl, %bx, %ax")                          \
	X(shld32, DSHIFT, 0, "shldl %cl, %ebx, %eax")                        \
	X(shld64, DSHIFT, 0, "shldq %cl, %rbx, %rax")                        \
	X(shrd16, DSHIFT, 0, "shrdw %cl, %bx, %ax")                          \
	X(shrd32, DSHIFT, 0, "shrdl %cl, %ebx, %eax")                        \
	X(shrd64, DSHIFT, 0, "shrdq %cl, %rbx, %rax")                        \
	X(mul8, MUL, 0, "mulb %bl")                                          \
	X(mul16, MUL, 0, "mulw %bx")                                         \
	X(mul64, MUL, 0, "mulq %rbx")                                        \
	X(imul8, MUL, 0, "imulb %bl")                                        \
	X(imul32, MUL, 0, "imull %ebx")                                      \
	X(imul2_16, MUL, 0, "imulw %bx, %ax")                                \
	X(imul2_64, MUL, 0, "imulq %rbx, %rax")                              \
	X(imul3_32, MUL, 0, "imull $-3, %ebx, %eax")                         \
	X(div8, DIV, 0, "divb %bl")                                          \
	X(div64, DIV, 0, "divq %rbx")                                        \
	X(idiv16, DIV, 0, "idivw %bx")                                       \
	X(idiv32, DIV, 0, "idivl %ebx")                                      \
	X(andn32, BMI, F_BMI1, "andnl %ecx, %ebx, %eax")                     \
	X(andn64, BMI, F_BMI1, "andnq %rcx, %rbx, %rax")                     \
	X(bextr32, BMI, F_BMI1, "bextrl %ecx, %ebx, %eax")                   \
	X(bextr64, BMI, F_BMI1, "bextrq %rcx, %rbx, %rax")                   \
	X(blsr32, BMI, F_BMI1, "blsrl %ebx, %eax")                           \
	X(blsr64, BMI, F_BMI1, "blsrq %rbx, %rax")                           \
	X(blsi64, BMI, F_BMI1, "blsiq %rbx, %rax")                           \
	X(blsmsk32, BMI, F_BMI1, "blsmskl %ebx, %eax")                       \
	X(bzhi32, BMI, F_BMI2, "bzhil %ecx, %ebx, %eax")                     \
	X(bzhi64, BMI, F_BMI2, "bzhiq %rcx, %rbx, %rax")                     \
	X(lzcnt16, CNT, F_LZCNT, "lzcntw %bx, %ax")                          \
	X(lzcnt64, CNT, F_LZCNT, "lzcntq %rbx, %rax")                        \
	X(tzcnt32, CNT, F_BMI1, "tzcntl %ebx, %eax")                         \
	X(tzcnt64, CNT, F_BMI1, "tzcntq %rbx, %rax")                         \
	X(bsf16, BSX, 0, "bsfw %bx, %ax")                                    \
	X(bsf64, BSX, 0, "bsfq %rbx, %rax")                                  \
	X(bsr32, BSX, 0, "bsrl %ebx, %eax")                                  \
	X(bsr64, BSX, 0, "bsrq %rbx, %rax")

#define DEF_STUB(name, fam, feat, text) VPROBE(name, text)
PROBES(DEF_STUB)

enum { F_BMI1 = 1, F_BMI2 = 2, F_LZCNT = 4 };

static const struct vprobe {
	void (*fn)(uint64_t *io);
	const uint8_t *insn;
	uint8_t family, feature;
} kprobes[] = {
#define ROW(name, fam, feat, text) { interp_vprobe_##name, interp_vprobe_##name##_insn, INTERP_VR_##fam, feat },
	PROBES(ROW)
#undef ROW
};

/* Inputs {rax, rbx, rcx, rdx, rflags}: counts below, at and above the
 * width (and bextr/bzhi controls), signs and parities mixed, and input
 * flags mixed so "unchanged" and "set" cannot pass for each other. */
static const uint64_t kinputs[][5] = {
	{ 0x8000000000000081ull, 0xffull, 1, 0x1111, 0x202 | INTERP_CF },
	{ 0x4000000040004041ull, 0xf0e1d2c3b4a59687ull, 3, 0x1111, 0x202 | INTERP_OF | INTERP_AF },
	{ 0xc0000000c000c0c1ull, 0x5555aaaa3333ccccull, 17, 0x1111,
	  0x202 | INTERP_ZF | INTERP_SF | INTERP_PF },
	{ 0x123456789abcdef0ull, 0x8000000000000000ull, 0x3f1f, 0x1111,
	  0x202 | INTERP_CF | INTERP_OF },
	{ 0xffull, 2, 0x0402, 0x1111, 0x202 | INTERP_AF | INTERP_SF },
	{ 0, 0, 9, 0x1111, 0x202 | INTERP_ARITH_FLAGS },
	{ 0x7fff, 0x8001, 16, 0x1111, 0x202 | INTERP_ZF },
};
/* Divisions: rdx:rax / rbx must not fault at any width. */
static const uint64_t kdiv_inputs[][5] = {
	{ 0x1234, 0x7f, 0, 0, 0x202 | INTERP_CF | INTERP_OF },
	{ 0x80, 3, 0, 0, 0x202 | INTERP_ZF | INTERP_PF | INTERP_AF | INTERP_SF },
	{ 0xff, 0x10, 0, 0, 0x202 },
	{ 0x7001, 0x7ff1, 0, 0, 0x202 | INTERP_ARITH_FLAGS },
};

/* CPUID traps to the hypervisor: ask once. */
static unsigned cpu_features(void)
{
	static int known;
	static unsigned f;
	unsigned a, b, c, d;

	if (known)
		return f;
	known = 1;

	if (__get_cpuid_max(0, NULL) >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		if (b & (1u << 3))
			f |= F_BMI1;
		if (b & (1u << 8))
			f |= F_BMI2;
	}
	if (__get_cpuid_max(0x80000000, NULL) >= 0x80000001) {
		__cpuid(0x80000001, a, b, c, d);
		if (c & (1u << 5))
			f |= F_LZCNT;
	}
	return f;
}

/* One probe, natively and in the interpreter: 1 if they differ. */
static int probe_one(const struct vprobe *p, const uint64_t *in, struct interp_thread *th)
{
	uint64_t io[5];
	struct interp_state *st;
	struct interp_result r;
	static struct interp_state s;   /* 2.5 KB: not on the caller's stack */

	memcpy(io, in, sizeof io);
	p->fn(io);
	st = &s;
	memset(st, 0, sizeof *st);
	st->gpr[INTERP_RAX] = in[0];
	st->gpr[INTERP_RBX] = in[1];
	st->gpr[INTERP_RCX] = in[2];
	st->gpr[INTERP_RDX] = in[3];
	st->rflags = in[4];
	st->rip = (uint64_t)p->insn;
	st->mxcsr = 0x1f80;
	st->seg_valid = 1;
	if (interp_run(st, th, 1, NULL, &r) != 1)
		return 1;
	return st->gpr[INTERP_RAX] != io[0] || st->gpr[INTERP_RBX] != io[1] ||
	       st->gpr[INTERP_RCX] != io[2] || st->gpr[INTERP_RDX] != io[3] ||
	       ((st->rflags ^ io[4]) & INTERP_ARITH_FLAGS);
}

/* Probes of family that differ with `vendor`'s model, or -ENOMEM. */
static int probe_family(int family, int vendor, struct interp_thread *th)
{
	unsigned feat = cpu_features();
	uint8_t saved = interp_vmodel[family];
	int bad = 0;

	interp_vmodel[family] = (uint8_t)vendor;
	for (size_t i = 0; i < sizeof kprobes / sizeof kprobes[0]; i++) {
		const struct vprobe *p = &kprobes[i];
		if (p->family != family || (p->feature & ~feat))
			continue;
		if (family == INTERP_VR_DIV)
			for (size_t k = 0; k < sizeof kdiv_inputs / sizeof kdiv_inputs[0]; k++)
				bad += probe_one(p, kdiv_inputs[k], th);
		else
			for (size_t k = 0; k < sizeof kinputs / sizeof kinputs[0]; k++)
				bad += probe_one(p, kinputs[k], th);
	}
	interp_vmodel[family] = saved;
	return bad;
}

/* Does the interpreter carry vendor's model for family? Every family
 * has both models. */
static int has_model(int family, int vendor)
{
	(void)family;
	return vendor >= 0 && vendor < INTERP_VENDOR__COUNT;
}

static struct interp_thread *probe_thread(void)
{
	/* Fresh anonymous pages are zero: an empty cache. The probes' cache
	 * slots fall on most of its pages; populating them in one call costs
	 * a tenth of taking a fault on each (measured in this VM). */
	struct interp_thread *th = mmap(NULL, sizeof *th, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

	return th == MAP_FAILED ? NULL : th;
}

int interp_vendor_probe(int family, int vendor)
{
	struct interp_thread *th;
	int bad;

	if (family < 0 || family >= INTERP_VR__COUNT || !has_model(family, vendor))
		return -EINVAL;
	if (!(th = probe_thread()))
		return -ENOMEM;
	bad = probe_family(family, vendor, th);
	munmap(th, sizeof *th);
	return bad;
}

static int cpuid_vendor(void)
{
	unsigned a, b, c, d;

	__cpuid(0, a, b, c, d);
	if (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163)       /* AuthenticAMD */
		return INTERP_VENDOR_AMD;
	if (b == 0x756e6547 && d == 0x49656e69 && c == 0x6c65746e)       /* GenuineIntel */
		return INTERP_VENDOR_INTEL;
	return INTERP_VENDOR_NONE;
}

/* Per family: CPUID's vendor first, then the others, the first model
 * the probes cannot tell from the host. */
static void check_host(void)
{
	struct interp_thread *th = probe_thread();

	for (int f = 0; f < INTERP_VR__COUNT; f++) {
		g_checked[f] = INTERP_VENDOR_NONE;
		if (!th)
			continue;   /* no memory to check with: stop, don't guess */
		for (int k = -1; k < INTERP_VENDOR__COUNT; k++) {
			int v = k < 0 ? g_cpuid_vendor : k;
			if ((k >= 0 && v == g_cpuid_vendor) || !has_model(f, v))
				continue;
			if (probe_family(f, v, th) == 0) {
				g_checked[f] = (uint8_t)v;
				break;
			}
		}
	}
	if (th)
		munmap(th, sizeof *th);
}

int interp_vendor_force(int vendor)
{
	if (vendor >= INTERP_VENDOR__COUNT)
		return -EINVAL;
	for (int f = 0; f < INTERP_VR__COUNT; f++)
		interp_vmodel[f] = vendor < 0 ? g_checked[f] : (uint8_t)vendor;
	return 0;
}

int interp_vendor_init(void)
{
	const char *e = getenv("VPROF_INTERP_VENDOR");

	g_cpuid_vendor = cpuid_vendor();
	/* the probes run under a model; start from the CPUID vendor's */
	for (int f = 0; f < INTERP_VR__COUNT; f++)
		interp_vmodel[f] = g_cpuid_vendor == INTERP_VENDOR_NONE ? INTERP_VENDOR_AMD :
				   (uint8_t)g_cpuid_vendor;
	check_host();
	if (e && !strcmp(e, "amd"))
		return interp_vendor_force(INTERP_VENDOR_AMD);
	if (e && !strcmp(e, "intel"))
		return interp_vendor_force(INTERP_VENDOR_INTEL);
	return interp_vendor_force(-1);
}

int interp_vendor_rule(int family)
{
	if (family < 0 || family >= INTERP_VR__COUNT)
		return INTERP_VENDOR_NONE;
	return interp_vmodel[family];
}

int interp_vendor_cpuid(void)
{
	return g_cpuid_vendor;
}

const char *interp_vendor_name(int vendor)
{
	switch (vendor) {
	case INTERP_VENDOR_AMD: return "amd";
	case INTERP_VENDOR_INTEL: return "intel";
	default: return "none";
	}
}

const char *interp_vrule_name(int family)
{
	static const char *const k[INTERP_VR__COUNT] = {
		"shift", "rotate", "shld/shrd", "mul", "div", "bmi", "lzcnt/tzcnt", "bsf/bsr",
	};
	return family >= 0 && family < INTERP_VR__COUNT ? k[family] : "?";
}
