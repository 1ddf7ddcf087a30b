/* interp/dispatch.c — the mnemonic-indexed dispatch table and interp_init.
 *
 * Owns the one table from ZydisMnemonic to handler. Each family file
 * exports an array of {mnemonic, handler} ending with {0, NULL}; this file
 * gathers them at start-up into kgp[] and kvec[] (below), so a lookup is
 * a load or two and the decode cache stores the result with the
 * instruction.
 *
 * Families, in the order they are gathered (a later table overrides an
 * earlier one for the same mnemonic, which should not happen):
 *   vector families                              sse, sse2, sse4, evex, x87
 *   mov     mov/movzx/movsx/lea/cmov/set/xchg/bswap/cbw..   ~35% of insns
 *   alu     add/sub/cmp/test/and/or/xor/inc/dec/neg/not/adc/
 *           sbb/cmpxchg/xadd                                ~30%
 *   ctrl    jcc/jmp/call/ret/push/pop/leave/loop            ~25%
 *   shift   shl/shr/sar/rol/ror/rcl/rcr/shld/shrd/sarx..     ~3%
 *   muldiv  imul/mul/div/idiv, mulx                          ~2%
 *   bit     bt,bts,btr,btc, bsf/bsr/popcnt/lzcnt/tzcnt/BMI1/BMI2         ~2%
 *   string  movs/stos/lods/cmps/scas (+REP)                  <1% (but long)
 *   misc    nop/endbr/cpuid/rdtsc/xgetbv/cpuid/fences/syscall
 * (percentages: rough dynamic mix of compiled C on x86-64.)
 *
 * Concurrency: written once by interp_init (before any handler runs),
 * read-only afterwards.
 */
#include <errno.h>
#include "interp/interp.h"
#include "interp/internal.h"

/* Two tables because a few mnemonics name both a general-purpose and a
 * vector instruction (MOVSD and CMPSD are string ops in the one-byte map
 * and SSE2 ops in 0F): legacy one-byte-map instructions look in kgp
 * first, everything else in kvec first. */
static interp_handler *kgp[ZYDIS_MNEMONIC_MAX_VALUE + 1];
static interp_handler *kvec[ZYDIS_MNEMONIC_MAX_VALUE + 1];
static int g_ready;

static void add_family(interp_handler **t, const struct interp_family *f)
{
	for (; f->mnemonic; f++)
		if (f->mnemonic <= ZYDIS_MNEMONIC_MAX_VALUE)
			t[f->mnemonic] = f->fn;
}

int interp_dispatch_init(void)
{
	add_family(kvec, interp_family_sse);
	add_family(kvec, interp_family_sse2);
	add_family(kvec, interp_family_sse4);
	add_family(kvec, interp_family_evex);
	add_family(kvec, interp_family_x87);
	add_family(kgp, interp_family_mov);
	add_family(kgp, interp_family_alu);
	add_family(kgp, interp_family_ctrl);
	add_family(kgp, interp_family_shift);
	add_family(kgp, interp_family_muldiv);
	add_family(kgp, interp_family_bit);
	add_family(kgp, interp_family_string);
	add_family(kgp, interp_family_misc);
	return 0;
}

interp_handler *interp_dispatch_lookup(const struct interp_insn *in)
{
	interp_handler *a, *b;

	if (in->mnemonic > ZYDIS_MNEMONIC_MAX_VALUE)
		return NULL;
	a = kgp[in->mnemonic];
	b = kvec[in->mnemonic];
	if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	    in->encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return a ? a : b;
	return b ? b : a;
}

/* Was fn found in the general-purpose table for in's mnemonic? */
int interp_dispatch_is_gp(const struct interp_insn *in, interp_handler *fn)
{
	return fn && in->mnemonic <= ZYDIS_MNEMONIC_MAX_VALUE && kgp[in->mnemonic] == fn;
}

int interp_init(void)
{
	if (g_ready)
		return 0;
	if (interp_decode_init())
		return -EINVAL;
	interp_xsave_init();
	interp_dispatch_init();
	interp_vendor_init();
	g_ready = 1;
	return 0;
}

/* Tools and tests get interp_init from a constructor. libvprof.so defines
 * interp_init_at_load = 0 (strong beats this weak 1): a profiled process
 * pays for the set-up (CPUID, the vendor self-check's native probes)
 * only when it will interpret (VPROF_VALUES, VPROF_VERIFY). */
__attribute__((weak)) const int interp_init_at_load = 1;

__attribute__((constructor)) static void interp_ctor(void)
{
	if (interp_init_at_load)
		interp_init();
}
