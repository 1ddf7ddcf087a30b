/* tests/unit/interp_fastdec.c — the decoder's fast path (interp/fastdec.c)
 * gives byte-identical decode-cache entries to the Zydis path
 * (interp_decode_zydis) wherever it accepts an instruction:
 *  1. every REX (or none) x one- and two-byte opcode x ModRM x SIB (all
 *     256 where there is one), the displacement and immediate bytes
 *     random; each accepted encoding also cut one byte short (the fast
 *     path must then refuse it);
 *  2. random 15-byte strings, plain and starting with a REX and a listed
 *     opcode.
 * And it does accept what it is for: the forms a compiler's hot loops are
 * made of (each named below must be taken by the fast path). Templates
 * are built the first time their form is met, so the first encoding of
 * each form is compared too. */
#include <stdio.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"
#include "tests/unit/check.h"
#include "tests/unit/xorshift.h"

static uint64_t g_rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	return xorshift64(&g_rng);
}

static long g_tried, g_fast, g_bad, g_short_bad;

static void hex(const uint8_t *b, unsigned n, char *out)
{
	for (unsigned i = 0; i < n; i++)
		sprintf(out + 3 * i, "%02x ", b[i]);
}

/* Compare the two paths on b[0..n); returns 1 if the fast path took it. */
static int one(const uint8_t *b, unsigned n)
{
	struct interp_insn f, z;
	ZydisDecodedInstruction d;
	ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];
	uint64_t pc = 0x7f0000401000ull + (rnd() & 0xffff);

	g_tried++;
	memset(&f, 0, sizeof f);
	memset(&z, 0, sizeof z);
	if (interp_fastdec(&f, pc, b, n) < 0)
		return 0;
	g_fast++;
	if (interp_decode_zydis(&z, pc, b, n, &d, ops) < 0 || memcmp(&f, &z, sizeof f) != 0) {
		if (g_bad++ < 10) {
			char h[64] = "";
			size_t off = 0;
			while (off < sizeof f && ((uint8_t *)&f)[off] == ((uint8_t *)&z)[off])
				off++;
			hex(b, f.len, h);
			printf("  differs: %s(%s, len %u): first differing byte at offset %zu of struct interp_insn"
			       " (attributes %#llx, Zydis %#llx)\n",
			       h, ZydisMnemonicGetString((ZydisMnemonic)z.mnemonic), f.len, off,
			       (unsigned long long)f.attrib, (unsigned long long)z.attrib);
		}
		return 1;
	}
	/* One byte short: the fast path must not read past n. */
	if (interp_fastdec(&f, pc, b, f.len - 1u) == 0 && g_short_bad++ < 5) {
		char h[64] = "";
		hex(b, z.len, h);
		printf("  took %s cut to %u bytes\n", h, z.len - 1u);
	}
	return 1;
}

static void fill(uint8_t *b, unsigned from)
{
	for (unsigned i = from; i < 16; i++)
		b[i] = (uint8_t)rnd();
}

static int takes(const char *name, const uint8_t *b, unsigned n)
{
	struct interp_insn e;
	memset(&e, 0, sizeof e);
	int ok = interp_fastdec(&e, 0x401000, b, n) == 0 && e.len == n;
	if (!ok)
		printf("  the fast path does not take %s\n", name);
	return ok;
}

int main(void)
{
	interp_init();

	/* 1. exhaustive over prefix x opcode x ModRM x SIB */
	for (int pre = -1; pre < 16; pre++)
		for (unsigned map = 0; map < 2; map++)
			for (unsigned op = 0; op < 256; op++) {
				uint8_t b[16];
				unsigned at = 0;
				if (pre >= 0)
					b[at++] = (uint8_t)(0x40 | pre);
				if (map)
					b[at++] = 0x0f;
				b[at++] = (uint8_t)op;
				fill(b, at);
				if (!one(b, 15))
					continue;     /* not a listed opcode (or no form) */
				for (unsigned m = 0; m < 256; m++) {
					b[at] = (uint8_t)m;
					int sib = (m >> 6) != 3 && (m & 7) == 4;
					for (unsigned s = 0; s < (sib ? 256u : 1u); s++) {
						fill(b, at + 1);
						if (sib)
							b[at + 1] = (uint8_t)s;
						one(b, 15);
					}
				}
			}
	long ex_tried = g_tried, ex_fast = g_fast;
	printf("exhaustive: %ld encodings, %ld taken by the fast path; %u templates built, %zu bytes\n",
	       ex_tried, ex_fast, interp_fastdec_forms(), interp_fastdec_bytes());
	CHECK(interp_fastdec_forms() > 300, "templates were built as forms were met");

	/* 2. random strings */
	static const uint8_t common[] = { 0x89, 0x8b, 0x8d, 0x01, 0x29, 0x31, 0x39, 0x83, 0x85, 0xff,
					  0xc1, 0xf7, 0xe8, 0x74, 0xc7, 0x0f };
	for (int i = 0; i < 3000000; i++) {
		uint8_t b[16];
		fill(b, 0);
		if (i & 1) {
			b[0] = (uint8_t)(0x40 | (rnd() & 15));
			b[1] = common[rnd() % sizeof common];
		}
		one(b, 1 + (unsigned)(rnd() % 15));
	}
	printf("random: %ld strings, %ld taken\n", g_tried - ex_tried, g_fast - ex_fast);

	CHECK(ex_fast >= 1000000, "the exhaustive pass took at least a million encodings");
	CHECK(g_bad == 0, "every taken encoding equals Zydis's decode");
	CHECK(g_short_bad == 0, "no encoding cut one byte short was taken");

	/* 3. what it is for */
	static const struct { const char *name; uint8_t b[15]; unsigned n; } k[] = {
		{ "mov (%rbx),%rax", { 0x48, 0x8b, 0x03 }, 3 },
		{ "add $3,%rax", { 0x48, 0x83, 0xc0, 0x03 }, 4 },
		{ "mov %rax,8(%rbx)", { 0x48, 0x89, 0x43, 0x08 }, 4 },
		{ "lea (%rax,%rcx,2),%rdx", { 0x48, 0x8d, 0x14, 0x48 }, 4 },
		{ "xor %rdx,%rsi", { 0x48, 0x31, 0xd6 }, 3 },
		{ "cmp $5,%rdx", { 0x48, 0x83, 0xfa, 0x05 }, 4 },
		{ "jb .+4", { 0x72, 0x02 }, 2 },
		{ "call .+5", { 0xe8, 0, 0, 0, 0 }, 5 },
		{ "ret", { 0xc3 }, 1 },
		{ "push %r12", { 0x41, 0x54 }, 2 },
		{ "mov 0x10(%rip),%eax", { 0x8b, 0x05, 0x10, 0, 0, 0 }, 6 },
		{ "movzbl (%rdi,%rcx,1),%eax", { 0x0f, 0xb6, 0x04, 0x0f }, 4 },
		{ "call *0x8(%rax)", { 0xff, 0x50, 0x08 }, 3 },
		{ "jne .+0x100 (rel32)", { 0x0f, 0x85, 0, 1, 0, 0 }, 6 },
		{ "movabs $imm64,%rax", { 0x48, 0xb8, 1, 2, 3, 4, 5, 6, 7, 8 }, 10 },
		{ "sete %sil", { 0x40, 0x0f, 0x94, 0xc6 }, 4 },
	};
	int all = 1;
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
		all &= takes(k[i].name, k[i].b, k[i].n);
	CHECK(all, "the fast path takes the common forms");
	return g_fail;
}
