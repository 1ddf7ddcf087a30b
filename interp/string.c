/* interp/string.c — MOVS STOS LODS CMPS SCAS, with REP/REPE/REPNE.
 *
 * Workload: rare as instruction counts, but one REP MOVSB can move
 * megabytes (glibc uses it above a size threshold). A repeated string
 * instruction may be interrupted between iterations with RCX/RSI/RDI
 * updated and RIP still on the instruction — the CPU does exactly that on
 * interrupts — so each call of a handler does at most kchunk iterations,
 * commits them one by one, and leaves next_rip on the instruction if work
 * remains. An iteration that would fault after others succeeded ends the
 * step there (OK, RIP on the instruction); the next step then stops with
 * would_fault before changing anything, and the program faults natively
 * with the registers exactly as the CPU would have them.
 *
 * Concurrency: plain (non-atomic) accesses, as the real instructions.
 */
#include "interp/interp.h"
#include "interp/internal.h"

enum { kchunk = 256 };       /* iterations per step: bounds handler time */
enum { K_MOVS, K_STOS, K_LODS, K_CMPS, K_SCAS };

static int string_op(struct interp_exec *x, int kind)
{
	const struct interp_insn *in = IN;
	unsigned size = in->opsize;
	int rep = (in->attrib & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				 ZYDIS_ATTRIB_HAS_REPNE)) != 0;
	int repne = (in->attrib & ZYDIS_ATTRIB_HAS_REPNE) != 0;
	int64_t step = x->rflags & INTERP_DF ? -(int64_t)size : (int64_t)size;
	uint64_t *rsi = &ST->gpr[INTERP_RSI], *rdi = &ST->gpr[INTERP_RDI];
	uint64_t *rcx = &ST->gpr[INTERP_RCX];
	int n = 0, rc = INTERP_OK;

	if (in->addrsize != 8 || (in->attrib & ZYDIS_ATTRIB_HAS_SEGMENT))
		return INTERP_STOP_UNSUPPORTED;
	if (kind != K_CMPS && kind != K_SCAS)
		repne = 0;
	for (;;) {
		uint64_t a = 0, b = 0, f;

		if (rep && *rcx == 0)
			break;
		if (n == kchunk) {
			x->next_rip = in->pc;     /* resume on the next step */
			return INTERP_OK;
		}
		switch (kind) {
		case K_MOVS:
			rc = interp_load(x, *rsi, &a, size);
			if (!rc)
				rc = interp_store(x, *rdi, &a, size);
			break;
		case K_STOS:
			a = ST->gpr[INTERP_RAX];
			rc = interp_store(x, *rdi, &a, size);
			break;
		case K_LODS:
			rc = interp_load(x, *rsi, &a, size);
			break;
		case K_CMPS:
			rc = interp_load(x, *rsi, &a, size);
			if (!rc)
				rc = interp_load(x, *rdi, &b, size);
			break;
		default:
			a = ST->gpr[INTERP_RAX] & interp_mask(size);
			rc = interp_load(x, *rdi, &b, size);
			break;
		}
		if (rc) {
			if (n == 0)
				return rc;
			x->sb.n = x->sb.used = 0;
			x->next_rip = in->pc;
			return INTERP_OK;
		}
		/* the iteration is complete: make it architectural */
		interp_commit_stores(x);
		if (kind == K_LODS)
			interp_gpr_set(x, INTERP_RAX, size, a);
		if (kind == K_MOVS || kind == K_LODS || kind == K_CMPS)
			*rsi += step;
		if (kind != K_LODS)
			*rdi += step;
		n++;
		if (kind == K_CMPS || kind == K_SCAS) {
			f = x->rflags;
			interp_flags(x, INTERP_FL_SUB, a, b, 0, a - b, size);
			(void)f;
		}
		if (!rep)
			break;
		(*rcx)--;
		if (kind == K_CMPS || kind == K_SCAS) {
			int zf = (x->rflags & INTERP_ZF) != 0;
			if (repne ? zf : !zf)
				break;
		}
	}
	return INTERP_OK;
}

static int h_movs(struct interp_exec *x) { return string_op(x, K_MOVS); }
static int h_stos(struct interp_exec *x) { return string_op(x, K_STOS); }
static int h_lods(struct interp_exec *x) { return string_op(x, K_LODS); }
static int h_cmps(struct interp_exec *x) { return string_op(x, K_CMPS); }
static int h_scas(struct interp_exec *x) { return string_op(x, K_SCAS); }

/* The rows: mnemonic, handler, form (MOVSD and CMPSD name SSE2 ops
 * outside the one-byte map), arithmetic flags read, written, undefined. */
#define STRING_OPS(X) \
	X(MOVSB, h_movs, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(MOVSW, h_movs, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(MOVSD, h_movs, INTERP_FORM_MAP0, IFL_D, IFL_NONE, IFL_NONE) \
	X(MOVSQ, h_movs, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(STOSB, h_stos, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(STOSW, h_stos, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(STOSD, h_stos, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(STOSQ, h_stos, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(LODSB, h_lods, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(LODSW, h_lods, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(LODSD, h_lods, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(LODSQ, h_lods, INTERP_FORM_ANY, IFL_D, IFL_NONE, IFL_NONE) \
	X(CMPSB, h_cmps, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(CMPSW, h_cmps, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(CMPSD, h_cmps, INTERP_FORM_MAP0, IFL_D, IFL_ALL, IFL_NONE) \
	X(CMPSQ, h_cmps, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(SCASB, h_scas, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(SCASW, h_scas, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(SCASD, h_scas, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE) \
	X(SCASQ, h_scas, INTERP_FORM_ANY, IFL_D, IFL_ALL, IFL_NONE)

#define STRING_ROW(m, h, form, rd, wr, ud) \
	INTERP_ROW(m, h, form, 0, rd, wr, ud, INTERP_VR_NONE, { .g = { 0, 0 } })
const struct interp_op interp_ops_string[] = { STRING_OPS(STRING_ROW) INTERP_OPS_END };
