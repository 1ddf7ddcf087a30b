/* tests/unit/interp_diff.c — randomized differential test: interpreter
 * versus this CPU.
 *
 * Generates instruction instances from a table of encoding forms (random
 * prefixes, REX bits, ModRM register or [base+disp] memory operands,
 * immediates), random and boundary operand values and random flags; runs
 * each natively (interp_native.h) and in the interpreter from the same
 * registers and the same data pages, and compares all 16 GPRs, RIP, the
 * flags and every data byte. Flags Zydis lists as undefined must agree
 * too (the vendor model gives them as this CPU does); they are counted
 * apart, INTERP_DIFF_VERBOSE=1 lists each instance.
 *
 * Native faults (#DE from div, SIGSEGV) are caught with siglongjmp; the
 * interpreter must then stop with would_fault and leave the state alone.
 *
 * Usage: interp_diff [count [seed]]   (env INTERP_DIFF_COUNT / _SEED too)
 * Default: 20000 instances, fixed seed, so the suite is repeatable.
 */
#include <setjmp.h>
#include <signal.h>
#include "interp_native.h"
#include "interp/internal.h"

enum {
	F_W = 1,        /* REX.W may vary */
	F_66 = 2,       /* 66 prefix may vary */
	F_BYTE = 4,     /* byte operation */
	F_MEM = 8,      /* ModRM must be memory */
	F_REG = 16,     /* ModRM must be register */
	F_REL = 32,     /* imm is a branch displacement to TARGET_OFF */
	F_BTMEM = 64,   /* keep the bit-offset register small */
	F_STR = 128,    /* string op: rep prefix may vary, rsi/rdi into data */
	F_VEX = 256,    /* VEX-encoded (BMI) */
	F_RET = 512,    /* stack top := branch target */
	F_TGT = 1024,   /* ModRM register := branch target */
	F_PLUSR = 2048, /* register in the low opcode bits */
	F_W1 = 4096,    /* REX.W always set */
	F_NOMODRM = 8192,
};

struct form {
	const char *name;
	uint8_t pfx;            /* mandatory prefix byte or 0 */
	uint8_t op[3], nop;
	int8_t digit;           /* ModRM reg field fixed (/digit), -1 free */
	char imm;               /* 0, 'b', 'w', 'z' (16/32), 'v' (16/32/64) */
	unsigned flags;
	uint8_t vex_map, vex_pp; /* VEX: map 1/2/3, pp 0..3 */
};

#define M(n, ...) { n, __VA_ARGS__ }
static struct form kforms[512];
static int nforms;

static void addf(const char *name, uint8_t pfx, const uint8_t *op, int nop, int digit,
		 char imm, unsigned flags)
{
	struct form *f = &kforms[nforms++];
	f->name = name;
	f->pfx = pfx;
	memcpy(f->op, op, nop);
	f->nop = nop;
	f->digit = digit;
	f->imm = imm;
	f->flags = flags;
}
#define ADD1(name, o, d, imm, fl) do { uint8_t _o[] = { o }; addf(name, 0, _o, 1, d, imm, fl); } while (0)
#define ADD2(name, o, d, imm, fl) do { uint8_t _o[] = { 0x0f, o }; addf(name, 0, _o, 2, d, imm, fl); } while (0)
#define ADDP(name, p, o1, o2, o3, n, d, imm, fl) do { uint8_t _o[] = { o1, o2, o3 }; addf(name, p, _o, n, d, imm, fl); } while (0)

static void addvex(const char *name, int map, int pp, uint8_t op, int digit, char imm)
{
	uint8_t o[] = { op };
	addf(name, 0, o, 1, digit, imm, F_VEX | F_W);
	kforms[nforms - 1].vex_map = map;
	kforms[nforms - 1].vex_pp = pp;
}

static void build_forms(void)
{
	static const char *alu[8] = { "add", "or", "adc", "sbb", "and", "sub", "xor", "cmp" };
	static const char *sh[8] = { "rol", "ror", "rcl", "rcr", "shl", "shr", "sal", "sar" };

	for (int g = 0; g < 8; g++) {
		ADD1(alu[g], g * 8 + 0, -1, 0, F_BYTE);
		ADD1(alu[g], g * 8 + 1, -1, 0, F_W | F_66);
		ADD1(alu[g], g * 8 + 2, -1, 0, F_BYTE);
		ADD1(alu[g], g * 8 + 3, -1, 0, F_W | F_66);
		ADD1(alu[g], g * 8 + 4, -1, 'b', F_BYTE | F_NOMODRM);
		ADD1(alu[g], g * 8 + 5, -1, 'z', F_W | F_66 | F_NOMODRM);
		ADD1(alu[g], 0x80, g, 'b', F_BYTE);
		ADD1(alu[g], 0x81, g, 'z', F_W | F_66);
		ADD1(alu[g], 0x83, g, 'b', F_W | F_66);
	}
	ADD1("test", 0x84, -1, 0, F_BYTE);
	ADD1("test", 0x85, -1, 0, F_W | F_66);
	ADD1("test", 0xa8, -1, 'b', F_BYTE | F_NOMODRM);
	ADD1("test", 0xa9, -1, 'z', F_W | F_66 | F_NOMODRM);
	ADD1("xchg", 0x86, -1, 0, F_BYTE);
	ADD1("xchg", 0x87, -1, 0, F_W | F_66);
	ADD1("xchg", 0x90, -1, 0, F_W | F_66 | F_PLUSR);
	ADD1("mov", 0x88, -1, 0, F_BYTE);
	ADD1("mov", 0x89, -1, 0, F_W | F_66);
	ADD1("mov", 0x8a, -1, 0, F_BYTE);
	ADD1("mov", 0x8b, -1, 0, F_W | F_66);
	ADD1("lea", 0x8d, -1, 0, F_W | F_66 | F_MEM);
	ADD1("mov", 0xc6, 0, 'b', F_BYTE);
	ADD1("mov", 0xc7, 0, 'z', F_W | F_66);
	ADD1("mov", 0xb0, -1, 'b', F_BYTE | F_PLUSR);
	ADD1("mov", 0xb8, -1, 'v', F_W | F_66 | F_PLUSR);
	ADD1("test", 0xf6, 0, 'b', F_BYTE);
	ADD1("test", 0xf7, 0, 'z', F_W | F_66);
	ADD1("not", 0xf6, 2, 0, F_BYTE); ADD1("not", 0xf7, 2, 0, F_W | F_66);
	ADD1("neg", 0xf6, 3, 0, F_BYTE); ADD1("neg", 0xf7, 3, 0, F_W | F_66);
	ADD1("mul", 0xf6, 4, 0, F_BYTE); ADD1("mul", 0xf7, 4, 0, F_W | F_66);
	ADD1("imul", 0xf6, 5, 0, F_BYTE); ADD1("imul", 0xf7, 5, 0, F_W | F_66);
	ADD1("div", 0xf6, 6, 0, F_BYTE); ADD1("div", 0xf7, 6, 0, F_W | F_66);
	ADD1("idiv", 0xf6, 7, 0, F_BYTE); ADD1("idiv", 0xf7, 7, 0, F_W | F_66);
	ADD1("inc", 0xfe, 0, 0, F_BYTE); ADD1("inc", 0xff, 0, 0, F_W | F_66);
	ADD1("dec", 0xfe, 1, 0, F_BYTE); ADD1("dec", 0xff, 1, 0, F_W | F_66);
	ADD2("movzx", 0xb6, -1, 0, F_W | F_66);
	ADD2("movzx", 0xb7, -1, 0, F_W);
	ADD2("movsx", 0xbe, -1, 0, F_W | F_66);
	ADD2("movsx", 0xbf, -1, 0, F_W);
	ADD1("movsxd", 0x63, -1, 0, F_W1);
	for (int cc = 0; cc < 16; cc++) {
		ADD2("cmovcc", 0x40 + cc, -1, 0, F_W | F_66);
		ADD2("setcc", 0x90 + cc, 0, 0, F_BYTE);
		ADD1("jcc8", 0x70 + cc, -1, 'b', F_REL | F_NOMODRM);
		ADD2("jcc32", 0x80 + cc, -1, 'z', F_REL | F_NOMODRM);
	}
	for (int d = 0; d < 8; d++) {
		if (d == 6)
			continue;
		ADD1(sh[d], 0xc0, d, 'b', F_BYTE); ADD1(sh[d], 0xc1, d, 'b', F_W | F_66);
		ADD1(sh[d], 0xd0, d, 0, F_BYTE); ADD1(sh[d], 0xd1, d, 0, F_W | F_66);
		ADD1(sh[d], 0xd2, d, 0, F_BYTE); ADD1(sh[d], 0xd3, d, 0, F_W | F_66);
	}
	ADD2("shld", 0xa4, -1, 'b', F_W | F_66); ADD2("shld", 0xa5, -1, 0, F_W | F_66);
	ADD2("shrd", 0xac, -1, 'b', F_W | F_66); ADD2("shrd", 0xad, -1, 0, F_W | F_66);
	ADD2("imul", 0xaf, -1, 0, F_W | F_66);
	ADD1("imul", 0x69, -1, 'z', F_W | F_66);
	ADD1("imul", 0x6b, -1, 'b', F_W | F_66);
	ADD2("bt", 0xa3, -1, 0, F_W | F_66 | F_BTMEM);
	ADD2("bts", 0xab, -1, 0, F_W | F_66 | F_BTMEM);
	ADD2("btr", 0xb3, -1, 0, F_W | F_66 | F_BTMEM);
	ADD2("btc", 0xbb, -1, 0, F_W | F_66 | F_BTMEM);
	for (int d = 4; d < 8; d++)
		ADD2("bt_imm", 0xba, d, 'b', F_W | F_66);
	ADD2("bsf", 0xbc, -1, 0, F_W | F_66);
	ADD2("bsr", 0xbd, -1, 0, F_W | F_66);
	ADDP("tzcnt", 0xf3, 0x0f, 0xbc, 0, 2, -1, 0, F_W);
	ADDP("lzcnt", 0xf3, 0x0f, 0xbd, 0, 2, -1, 0, F_W);
	ADDP("popcnt", 0xf3, 0x0f, 0xb8, 0, 2, -1, 0, F_W);
	ADD2("xadd", 0xc0, -1, 0, F_BYTE); ADD2("xadd", 0xc1, -1, 0, F_W | F_66);
	ADD2("cmpxchg", 0xb0, -1, 0, F_BYTE); ADD2("cmpxchg", 0xb1, -1, 0, F_W | F_66);
	ADD2("bswap", 0xc8, -1, 0, F_W | F_PLUSR);
	ADD1("cbw", 0x98, -1, 0, F_W | F_66 | F_NOMODRM);
	ADD1("cwd", 0x99, -1, 0, F_W | F_66 | F_NOMODRM);
	ADD1("sahf", 0x9e, -1, 0, F_NOMODRM); ADD1("lahf", 0x9f, -1, 0, F_NOMODRM);
	ADD1("cmc", 0xf5, -1, 0, F_NOMODRM); ADD1("clc", 0xf8, -1, 0, F_NOMODRM);
	ADD1("stc", 0xf9, -1, 0, F_NOMODRM);
	ADDP("movbe", 0, 0x0f, 0x38, 0xf0, 3, -1, 0, F_W | F_66 | F_MEM);
	ADDP("movbe", 0, 0x0f, 0x38, 0xf1, 3, -1, 0, F_W | F_66 | F_MEM);
	ADDP("adcx", 0x66, 0x0f, 0x38, 0xf6, 3, -1, 0, F_W);
	ADDP("adox", 0xf3, 0x0f, 0x38, 0xf6, 3, -1, 0, F_W);
	ADD1("push", 0x50, -1, 0, F_PLUSR | F_NOMODRM);
	ADD1("pop", 0x58, -1, 0, F_PLUSR | F_NOMODRM);
	ADD1("push", 0xff, 6, 0, 0);
	ADD1("pop", 0x8f, 0, 0, F_MEM);
	ADD1("push", 0x6a, -1, 'b', F_NOMODRM);
	ADD1("push", 0x68, -1, 'z', F_NOMODRM);
	ADD1("pushf", 0x9c, -1, 0, F_NOMODRM);
	ADD1("leave", 0xc9, -1, 0, F_NOMODRM);
	ADD1("ret", 0xc3, -1, 0, F_NOMODRM | F_RET);
	ADD1("ret_imm", 0xc2, -1, 'w', F_NOMODRM | F_RET);
	ADD1("call", 0xe8, -1, 'z', F_REL | F_NOMODRM);
	ADD1("jmp", 0xe9, -1, 'z', F_REL | F_NOMODRM);
	ADD1("jmp8", 0xeb, -1, 'b', F_REL | F_NOMODRM);
	ADD1("call_ind", 0xff, 2, 0, F_REG | F_TGT);
	ADD1("jmp_ind", 0xff, 4, 0, F_REG | F_TGT);
	ADD1("jrcxz", 0xe3, -1, 'b', F_REL | F_NOMODRM);
	ADD1("loop", 0xe2, -1, 'b', F_REL | F_NOMODRM);
	ADD1("loope", 0xe1, -1, 'b', F_REL | F_NOMODRM);
	ADD1("loopne", 0xe0, -1, 'b', F_REL | F_NOMODRM);
	ADD1("movs", 0xa4, -1, 0, F_STR | F_NOMODRM); ADD1("movs", 0xa5, -1, 0, F_STR | F_W | F_66 | F_NOMODRM);
	ADD1("stos", 0xaa, -1, 0, F_STR | F_NOMODRM); ADD1("stos", 0xab, -1, 0, F_STR | F_W | F_66 | F_NOMODRM);
	ADD1("lods", 0xac, -1, 0, F_STR | F_NOMODRM); ADD1("lods", 0xad, -1, 0, F_STR | F_W | F_66 | F_NOMODRM);
	ADD1("cmps", 0xa6, -1, 0, F_STR | F_NOMODRM); ADD1("cmps", 0xa7, -1, 0, F_STR | F_W | F_66 | F_NOMODRM);
	ADD1("scas", 0xae, -1, 0, F_STR | F_NOMODRM); ADD1("scas", 0xaf, -1, 0, F_STR | F_W | F_66 | F_NOMODRM);
	addvex("andn", 2, 0, 0xf2, -1, 0);
	addvex("bextr", 2, 0, 0xf7, -1, 0);
	addvex("blsr", 2, 0, 0xf3, 1, 0);
	addvex("blsmsk", 2, 0, 0xf3, 2, 0);
	addvex("blsi", 2, 0, 0xf3, 3, 0);
	addvex("bzhi", 2, 0, 0xf5, -1, 0);
	addvex("pdep", 2, 3, 0xf5, -1, 0);
	addvex("pext", 2, 2, 0xf5, -1, 0);
	addvex("mulx", 2, 3, 0xf6, -1, 0);
	addvex("rorx", 3, 3, 0xf0, -1, 'b');
	addvex("sarx", 2, 2, 0xf7, -1, 0);
	addvex("shlx", 2, 1, 0xf7, -1, 0);
	addvex("shrx", 2, 3, 0xf7, -1, 0);
}

static sigjmp_buf g_jb;
static volatile int g_native_sig;

static void on_sig(int sig, siginfo_t *si, void *ctx)
{
	if (interp_fault_fixup(ctx))
		return;
	g_native_sig = sig;
	siglongjmp(g_jb, 1);
}

/* Run natively; returns the signal it took, or 0. */
static __attribute__((noinline)) int native_try(const uint8_t *b, unsigned len, struct nctx *io)
{
	g_native_sig = 0;
	if (sigsetjmp(g_jb, 1) == 0)
		run_native(b, len, io);
	return g_native_sig;
}

/* Generate one instance into b; set up io. Returns length. */
static unsigned gen(const struct form *f, uint8_t *b, struct nctx *io, unsigned *fflags)
{
	unsigned n = 0, w = 0, p66 = 0, rexr = rnd() & 1, rexb = rnd() & 1, rexx = 0;
	unsigned reg = rnd() & 7, rm = rnd() & 7, mem, mod;
	int base = -1;
	uint64_t dbase = (uint64_t)g_data;

	for (int i = 0; i < 16; i++)
		io->gpr[i] = edge_value();
	io->rflags = 0x202 | (rnd() & (INTERP_ARITH_FLAGS));
	/* the stack lives in the data pages */
	io->gpr[INTERP_RSP] = dbase + 4096 + (rnd() % 64) * 8;
	*fflags = f->flags;
	if (f->flags & F_W1)
		w = 1;
	else if (f->flags & F_W)
		w = rnd() & 1;
	if ((f->flags & F_66) && !w && (rnd() % 4) == 0)
		p66 = 1;
	mem = f->flags & F_MEM ? 1 : f->flags & F_REG ? 0 : (rnd() & 1);
	if (f->flags & F_NOMODRM)
		mem = 0;
	if (mem && rm == 4)
		rm = 3;                 /* no SIB */
	mod = mem ? 1 + (rnd() % 2) : 3;
	if (mem && mod == 0 && rm == 5)
		mod = 1;

	if (f->flags & F_VEX) {
		unsigned vvvv = f->imm ? 0 : rnd() & 15;   /* rorx: vvvv must be 1111 */
		b[n++] = 0xc4;
		b[n++] = ((!rexr) << 7) | (1 << 6) | ((!rexb) << 5) | f->vex_map;
		b[n++] = (w << 7) | ((~vvvv & 15) << 3) | f->vex_pp;
		b[n++] = f->op[0];
	} else {
		if (f->flags & F_STR) {
			int r = rnd() % 3;
			if (r == 1)
				b[n++] = 0xf3;
			else if (r == 2)
				b[n++] = (f->op[0] == 0xa6 || f->op[0] == 0xa7 ||
					  f->op[0] == 0xae || f->op[0] == 0xaf) ? 0xf2 : 0xf3;
			io->gpr[INTERP_RCX] = rnd() % 24;
			io->gpr[INTERP_RSI] = dbase + 1024 + (rnd() % 2048);
			io->gpr[INTERP_RDI] = dbase + 4096 + (rnd() % 2048);
			if (rnd() & 1)
				io->rflags |= INTERP_DF;
			if (rnd() % 3 == 0)   /* make compares end early sometimes */
				memcpy(g_data + (io->gpr[INTERP_RDI] - dbase),
				       g_data + (io->gpr[INTERP_RSI] - dbase), 64);
		}
		if (p66)
			b[n++] = 0x66;
		if (f->pfx)
			b[n++] = f->pfx;
		if (w || rexr || rexb || (rnd() & 1))
			b[n++] = 0x40 | (w << 3) | (rexr << 2) | (rexx << 1) | rexb;
		memcpy(b + n, f->op, f->nop);
		n += f->nop;
		if (f->flags & F_PLUSR)
			b[n - 1] += rm;
	}
	if (!(f->flags & (F_NOMODRM | F_PLUSR))) {
		unsigned r = f->digit >= 0 ? (unsigned)f->digit : reg;
		b[n++] = (mod << 6) | (r << 3) | rm;
		if (mem) {
			base = rm + (rexb ? 8 : 0);
			int disp = (int)(rnd() % 128) - 64;
			io->gpr[base] = dbase + 1024 + (rnd() % 6144);
			if (mod == 1)
				b[n++] = (uint8_t)disp;
			else {
				int32_t d32 = disp;
				memcpy(b + n, &d32, 4);
				n += 4;
			}
			if (f->flags & F_BTMEM) {
				int ri = reg + (rexr ? 8 : 0);
				if (ri != base)
					io->gpr[ri] = (int64_t)(int16_t)(rnd() % 2048 - 1024) ;
			}
		}
		if (f->flags & F_TGT)
			io->gpr[rm + (rexb ? 8 : 0)] = (uint64_t)(g_code + TARGET_OFF);
	}
	if (f->imm) {
		unsigned isz = f->imm == 'b' ? 1 : f->imm == 'w' ? 2 :
			       f->imm == 'v' && w ? 8 : p66 ? 2 : 4;
		uint64_t v = edge_value();
		if (f->flags & F_REL) {
			if (p66)
				return 0;
			int64_t rel = TARGET_OFF - (INSN_OFF + n + isz);
			if (isz == 1 && (rnd() & 1))
				rel = 0;     /* fall-through target */
			v = (uint64_t)rel;
			if (isz == 1 && rel > 127)
				return 0;
		}
		if (f->imm == 'w' && (f->flags & F_RET))
			v &= 0x38;
		memcpy(b + n, &v, isz);
		n += isz;
	}
	if (f->flags & F_RET) {
		uint64_t t = (uint64_t)(g_code + TARGET_OFF);
		memcpy(g_data + (io->gpr[INTERP_RSP] - dbase), &t, 8);
	}
	if (b[0] == 0xc9 || (n && f->op[0] == 0xc9))
		io->gpr[INTERP_RBP] = dbase + 2048 + (rnd() % 256) * 8;
	return n;
}

int main(int argc, char **argv)
{
	long count = 20000;
	uint64_t seed = 0x5eed;
	static uint8_t snap[DATA_SIZE], natmem[DATA_SIZE];
	long fails = 0, notes = 0, faults = 0, unsup = 0, ran = 0, spec_checked = 0;
	int unsup_form[512] = {0}, fail_form[512] = {0};
	uint64_t und_form[512] = {0};
	struct sigaction sa;

	if (getenv("INTERP_DIFF_COUNT"))
		count = atol(getenv("INTERP_DIFF_COUNT"));
	if (getenv("INTERP_DIFF_SEED"))
		seed = strtoull(getenv("INTERP_DIFF_SEED"), NULL, 0);
	if (argc > 1)
		count = atol(argv[1]);
	if (argc > 2)
		seed = strtoull(argv[2], NULL, 0);
	rnd_state ^= seed * 0x9e3779b97f4a7c15ull;
	native_setup();
	build_forms();
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sig;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
	sigaction(SIGFPE, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);

	for (long it = 0; it < count; it++) {
		int fi = rnd() % nforms;
		const struct form *f = &kforms[fi];
		uint8_t b[32];
		struct nctx in, nat, itp;
		unsigned fl, len;
		char what[80];
		int rc;

		for (int i = 0; i < DATA_SIZE / 8; i++)
			((uint64_t *)g_data)[i] = edge_value();
		len = gen(f, b, &in, &fl);
		if (len == 0)
			continue;
		memcpy(snap, g_data, DATA_SIZE);
		nat = in;
		native_try(b, len, &nat);
		memcpy(natmem, g_data, DATA_SIZE);
		memcpy(g_data, snap, DATA_SIZE);
		itp = in;
		rc = run_interp(b, len, &itp);
		snprintf(what, sizeof what, "%s #%ld", f->name, it);
		if (rc == INTERP_STOP_UNSUPPORTED || rc == INTERP_STOP_DECODE) {
			unsup++;
			unsup_form[fi]++;
			continue;
		}
		ran++;
		if (g_native_sig) {
			faults++;
			itp.rip = in.rip;
			if (rc != INTERP_STOP_WOULD_FAULT || memcmp(&itp.gpr, &in.gpr, sizeof in.gpr) ||
			    memcmp(g_data, snap, DATA_SIZE)) {
				char hb[100] = "";
				hexbytes(hb, b, len);
				printf("FAIL %s: native took signal %d, interp stop %s (state %s)\n  bytes %s\n",
				       what, g_native_sig, interp_stop_name(rc),
				       memcmp(&itp.gpr, &in.gpr, sizeof in.gpr) ? "changed" : "same", hb);
				fails++;
				fail_form[fi]++;
			}
			continue;
		}
		if (rc != INTERP_OK) {
			char hb[100] = "";
			hexbytes(hb, b, len);
			printf("FAIL %s: interp stopped: %s, bytes %s\n", what, interp_stop_name(rc), hb);
			fails++;
			fail_form[fi]++;
			continue;
		}
		int c = compare(what, b, len, &in, &nat, &itp);
		/* The instruction table's spec: the flags the CPU changed are
		 * among those the row says it writes or leaves undefined. */
		const struct interp_op *row = interp_optab_decode(b, len);
		uint64_t chg = (nat.rflags ^ in.rflags) & (INTERP_ARITH_FLAGS | INTERP_DF);
		if (!row || (chg & ~(uint64_t)(row->fl_written | row->fl_undef))) {
			char hb[100] = "";
			hexbytes(hb, b, len);
			printf("FAIL %s: the CPU changed flags %03lx the table's row does not name "
			       "(written %03x, undefined %03x), bytes %s\n", what,
			       (unsigned long)chg, row ? row->fl_written : 0, row ? row->fl_undef : 0, hb);
			c = 1;
		}
		spec_checked++;
		if (c == 1) {
			fails++;
			fail_form[fi]++;
		} else if (c == 2) {
			notes++;
			und_form[fi] |= (nat.rflags ^ itp.rflags) & INTERP_ARITH_FLAGS;
			if (getenv("INTERP_DIFF_VERBOSE")) {
				char hb[100] = "";
				hexbytes(hb, b, len);
				printf("NOTE undefined flags %s: in %03lx native %03lx interp %03lx, bytes %s\n",
				       what, in.rflags & 0xfff, nat.rflags & 0xfff, itp.rflags & 0xfff, hb);
			}
		}
		if (memcmp(g_data, natmem, DATA_SIZE)) {
			for (int i = 0; i < DATA_SIZE; i++)
				if (g_data[i] != natmem[i]) {
					char hb[100] = "";
					hexbytes(hb, b, len);
					printf("FAIL %s: memory differs at data+%#x: native %02x interp %02x (bytes %s)\n",
					       what, i, natmem[i], g_data[i], hb);
					break;
				}
			fails++;
			fail_form[fi]++;
		}
		if (fails > 50)
			break;
	}
	for (int i = 0; i < nforms; i++)
		if (unsup_form[i])
			printf("NOTE unsupported: %s (%02x %02x %02x) x%d\n", kforms[i].name,
			       kforms[i].op[0], kforms[i].op[1], kforms[i].op[2], unsup_form[i]);
	for (int i = 0; i < nforms; i++)
		if (und_form[i])
			printf("FAIL undefined flags differ: %s (%02x %02x %02x) flags %03lx\n", kforms[i].name,
			       kforms[i].op[0], kforms[i].op[1], kforms[i].op[2], und_form[i]);
	fails += notes;
	printf("%s flags spec: %ld instructions' changed flags checked against their table rows\n",
	       spec_checked ? "PASS" : "FAIL", spec_checked);
	if (!spec_checked)
		fails++;
	printf("%s differential: %ld compared (%ld native faults), %ld failed, %ld unsupported, "
	       "%ld of them only in undefined flags (seed %#lx)\n",
	       fails || !ran ? "FAIL" : "PASS", ran, faults, fails, unsup, notes, seed);
	return fails != 0 || !ran;
}
