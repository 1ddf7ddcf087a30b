/* interp/optab.c — the instruction table's index, and interp_init.
 *
 * The table is the families' rows (struct interp_op, internal.h): one row
 * per mnemonic with its handler and its spec, each family file listing
 * its rows in one X-macro list. This file gathers them into one array,
 * interp_optab[], and indexes them by mnemonic, once, at interp_init; the
 * decoder looks a row up once per decoded instruction and keeps it in the
 * decode cache (in->row, a 16-bit index, and in->fn), so the run loop
 * calls in->fn directly and a handler reads its spec from
 * interp_row(in).
 *
 * Families, in table order (a mnemonic must have one row per form: a
 * second is counted by interp_optab_dups and fails interp_optab's test):
 *   mov      mov/movzx/movsx/lea/cmov/set/xchg/bswap/cbw..   ~35% of insns
 *   alu      add/sub/cmp/test/and/or/xor/inc/dec/neg/not/adc/
 *            sbb/cmpxchg/xadd                                ~30%
 *   ctrl     jcc/jmp/call/ret/push/pop/leave/loop            ~25%
 *   shift    shl/shr/sar/rol/ror/rcl/rcr/shld/shrd/sarx..     ~3%
 *   muldiv   imul/mul/div/idiv, mulx                          ~2%
 *   bit      bt/bts/btr/btc, bsf/bsr/popcnt/lzcnt/tzcnt, BMI1/BMI2 ~2%
 *   string   movs/stos/lods/cmps/scas (+REP)                 <1% (but long)
 *   misc     nop/endbr/cpuid/rdtsc/xgetbv/fences/syscall
 *   crc32_movnti  crc32, movnti (general registers, SSE families)
 *   x87      x87 control and status words
 *   opmask   AVX-512 k-register instructions, vzeroupper/vzeroall
 *   vec_int  integer and move vector instructions, every encoding
 *   vec_fp   floating-point vector and scalar instructions, AES, SHA, CLMUL
 * (percentages: rough dynamic mix of compiled C on x86-64.)
 *
 * MOVSD and CMPSD have two rows: the string op (form MAP0, taken for the
 * legacy one-byte map) and the SSE2 op (form ANY, taken elsewhere).
 *
 * Concurrency: written once by interp_init (before any handler runs),
 * read-only afterwards.
 */
#include <errno.h>
#include "interp/interp.h"
#include "interp/internal.h"

/* The families are referenced here directly, so linking libinterp.a
 * pulls every one in (no weak symbols, no --whole-archive). */
static const struct interp_op *const kfamilies[] = {
	interp_ops_mov, interp_ops_alu, interp_ops_ctrl, interp_ops_shift,
	interp_ops_muldiv, interp_ops_bit, interp_ops_string, interp_ops_misc,
	interp_ops_crc32_movnti, interp_ops_x87, interp_ops_opmask,
	interp_ops_vec_int, interp_ops_vec_fp,
};

struct interp_op interp_optab[INTERP_OPTAB_MAX];

/* By mnemonic: the row for any encoding, and the row that the legacy
 * one-byte map takes first (indices into interp_optab, 0 none). */
static uint16_t g_any[ZYDIS_MNEMONIC_MAX_VALUE + 1];
static uint16_t g_map0[ZYDIS_MNEMONIC_MAX_VALUE + 1];
static int g_ready, g_rows, g_dups;

int interp_optab_init(void)
{
	int n = 1;     /* row 0: no row (fn NULL) */

	for (size_t f = 0; f < sizeof kfamilies / sizeof kfamilies[0]; f++) {
		for (const struct interp_op *r = kfamilies[f]; r->fn; r++) {
			uint16_t *slot;

			g_rows++;
			if (r->mnemonic == 0 || r->mnemonic > ZYDIS_MNEMONIC_MAX_VALUE ||
			    n >= INTERP_OPTAB_MAX) {
				g_dups++;
				continue;
			}
			slot = r->form == INTERP_FORM_MAP0 ? &g_map0[r->mnemonic] : &g_any[r->mnemonic];
			if (*slot) {
				g_dups++;   /* the first row wins */
				continue;
			}
			interp_optab[n] = *r;
			*slot = (uint16_t)n++;
		}
	}
	return 0;
}

unsigned interp_optab_lookup(const struct interp_insn *in)
{
	unsigned a, m0;

	if (in->mnemonic > ZYDIS_MNEMONIC_MAX_VALUE)
		return 0;
	a = g_any[in->mnemonic];
	m0 = g_map0[in->mnemonic];
	if (in->opcode_map == ZYDIS_OPCODE_MAP_DEFAULT &&
	    in->encoding == ZYDIS_INSTRUCTION_ENCODING_LEGACY)
		return m0 ? m0 : a;
	return a ? a : m0;
}

int interp_optab_rows(void) { return g_rows; }
int interp_optab_dups(void) { return g_dups; }

const struct interp_op *interp_optab_row(int i)
{
	for (size_t f = 0; f < sizeof kfamilies / sizeof kfamilies[0]; f++)
		for (const struct interp_op *r = kfamilies[f]; r->fn; r++)
			if (i-- == 0)
				return r;
	return NULL;
}

int interp_init(void)
{
	if (g_ready)
		return 0;
	if (interp_decode_init())
		return -EINVAL;
	interp_xsave_init();
	interp_optab_init();
	interp_fastdec_init();
	interp_vendor_init();
	g_ready = 1;
	return 0;
}

/* No constructor: whatever interprets calls interp_init first (it is
 * idempotent). A profiled process pays for the set-up (CPUID, the vendor
 * self-check's native probes, the fast path's templates) only when a mode
 * interprets (preload/value_sample.c, preload/verify.c). */
