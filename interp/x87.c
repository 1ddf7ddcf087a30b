/* interp/x87.c — the x87 control and status instructions: fnstcw, fldcw,
 * fnstsw (memory and AX), fninit, fnclex, fwait/wait.
 *
 * What is modelled: the x87 environment words as the FXSAVE image holds
 * them (st->x87 bytes 0..23: FCW, FSW, abridged FTW, FOP, FIP, FDP),
 * loaded from the frame's XSAVE area with the vector registers (a frame
 * whose x87 component is in its initial state reads as FCW 0x037f, all
 * else zero). These instructions change only those words; the data
 * registers ST0-7 are never touched, and x87 arithmetic and loads/stores
 * still stop the run (no family handles them).
 *
 * Exactness:
 * - fldcw: which FCW bits the CPU keeps (reserved bits read back as fixed
 *   values) is taken from the CPU itself: the value is loaded into the
 *   host's own x87 unit between fnstenv and fldenv (its environment is
 *   saved, all exceptions masked, and restored), and read back with
 *   fnstcw. A waiting instruction (fldcw, fwait) with an unmasked
 *   exception pending takes #MF: the run stops (would_fault) and the
 *   program takes it natively. A new FCW that unmasks an exception whose
 *   flag is set stops the run (unsupported): the status word's ES/B
 *   bits then follow rules the interpreter does not model.
 * - fninit: FCW 0x037f, FSW 0, FTW all empty, FOP/FIP/FDP 0 (checked
 *   against this CPU's fxsave by tests/unit/interp_x87.c).
 * - fnclex: clears the exception flags, SF, ES and B (FSW & 0x7f00);
 *   it stops (unsupported) when that clears ES with FOP/FIP/FDP set: the
 *   image a CPU saves then differs by vendor (AMD shows them zero).
 * Control instructions do not update FOP/FIP/FDP.
 *
 * Registered in the vector table (optab.c), so the run loads a lazily
 * converted state before one runs. Concurrency: thread state only; the
 * host x87 environment is saved and restored within one asm block.
 */
#include <string.h>
#include "interp/interp.h"
#include "interp/internal.h"

static int x87_ready(struct interp_exec *x)
{
	if (!x->st->has_fpregs || !(x->st->xstate_avail & INTERP_XS_X87))
		return INTERP_STOP_BADSTATE;
	return INTERP_OK;
}

static uint16_t get16(const struct interp_state *st, unsigned off)
{
	return (uint16_t)(st->x87[off] | st->x87[off + 1] << 8);
}

static void put16(struct interp_state *st, unsigned off, uint16_t v)
{
	st->x87[off] = (uint8_t)v;
	st->x87[off + 1] = (uint8_t)(v >> 8);
}

static void x87_touch(struct interp_exec *x)
{
	x->st->xstate_bv |= INTERP_XS_X87;
	x->st->xstate_dirty |= INTERP_XS_X87;
}

/* Is an unmasked exception pending (a waiting instruction takes #MF)?
 * 1 yes, 0 no, -1 the status word is inconsistent (ES without an
 * unmasked flag, or the reverse: only fldenv/frstor can make that). */
static int x87_pending(const struct interp_state *st)
{
	uint16_t fcw = get16(st, 0), fsw = get16(st, 2);
	int unmasked = (fsw & ~fcw & 0x3f) != 0, es = (fsw & 0x80) != 0;

	return unmasked == es ? unmasked : -1;
}

static int x87_wait_check(const struct interp_state *st)
{
	switch (x87_pending(st)) {
	case 0: return INTERP_OK;
	case 1: return INTERP_STOP_WOULD_FAULT;
	default: return INTERP_STOP_UNSUPPORTED;
	}
}

/* The FCW this CPU holds after fldcw v. */
static uint16_t host_fcw(uint16_t v)
{
	uint8_t env[28] __attribute__((aligned(4)));
	uint16_t r;

	__asm__ volatile("fnstenv %1\n\t"      /* saves, then masks all */
			 "fnclex\n\t"
			 "fldcw %2\n\t"
			 "fnstcw %0\n\t"
			 "fldenv %1\n\t"
			 : "=m"(r), "+m"(env) : "m"(v) : "memory");
	return r;
}

static int h_fnstcw(struct interp_exec *x)
{
	int rc;

	if ((rc = x87_ready(x)))
		return rc;
	return interp_write_u64(x, 0, get16(x->st, 0));
}

static int h_fnstsw(struct interp_exec *x)
{
	int rc;

	if ((rc = x87_ready(x)))
		return rc;
	if (x->in->op[0].size != 2)
		return INTERP_STOP_UNSUPPORTED;
	return interp_write_u64(x, 0, get16(x->st, 2));
}

static int h_fldcw(struct interp_exec *x)
{
	uint64_t v;
	uint16_t fcw;
	int rc;

	if ((rc = x87_ready(x)) || (rc = x87_wait_check(x->st)))
		return rc;
	if ((rc = interp_read_u64(x, 0, &v)))
		return rc;
	fcw = host_fcw((uint16_t)v);
	if (get16(x->st, 2) & ~fcw & 0x3f)
		return INTERP_STOP_UNSUPPORTED;
	put16(x->st, 0, fcw);
	x87_touch(x);
	return INTERP_OK;
}

static int h_fninit(struct interp_exec *x)
{
	int rc;

	if ((rc = x87_ready(x)))
		return rc;
	memset(x->st->x87, 0, 24);
	put16(x->st, 0, 0x037f);
	x87_touch(x);
	return INTERP_OK;
}

static int h_fnclex(struct interp_exec *x)
{
	static const uint8_t zero[16];
	int rc;

	if ((rc = x87_ready(x)))
		return rc;
	/* With ES clear, this CPU's FXSAVE/XSAVE image shows FOP/FIP/FDP as
	 * zero (measured: AMD Zen 5), Intel's keeps them: which the frame
	 * would hold after ES goes 1 -> 0 is the vendor's, so stop then. */
	if ((get16(x->st, 2) & 0x80) && (memcmp(x->st->x87 + 6, zero, 2) ||
					 memcmp(x->st->x87 + 8, zero, 16)))
		return INTERP_STOP_UNSUPPORTED;
	put16(x->st, 2, get16(x->st, 2) & 0x7f00);
	x87_touch(x);
	return INTERP_OK;
}

static int h_fwait(struct interp_exec *x)
{
	int rc;

	if ((rc = x87_ready(x)))
		return rc;
	return x87_wait_check(x->st);
}

/* The rows: mnemonic, handler, arithmetic flags read, written, left
 * undefined, and the vendor rule the undefined ones follow. */
#define X87_OPS(X) \
	X(FNSTCW, h_fnstcw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(FNSTSW, h_fnstsw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(FLDCW, h_fldcw, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(FNINIT, h_fninit, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(FNCLEX, h_fnclex, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE) \
	X(FWAIT, h_fwait, IFL_NONE, IFL_NONE, IFL_NONE, INTERP_VR_NONE)

const struct interp_op interp_ops_x87[] = { X87_OPS(INTERP_GPV_ROW) INTERP_OPS_END };
