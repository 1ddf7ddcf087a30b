/*
 * vprof's own DWARF call-frame-information unwinder, for the SIGPROF
 * handler: the call stack of --stacks (method cfi, the default) and the
 * return address of value sampling's procedure (value_sample.c).
 *
 * From the interrupted context (the handler's ucontext), one frame at a
 * time:
 *
 *   1. the FDE of the PC: glibc's _dl_find_object (lock-free; what libgcc
 *      uses) gives the object's .eh_frame_hdr, whose sorted table is
 *      binary-searched. The first frame and a frame interrupted by a
 *      signal look up their PC itself, the others their return address
 *      - 1 (the call, not what follows it: a noreturn call may end the
 *      function). Encodings handled: the table's datarel|sdata4 (what ld
 *      writes), pointers absptr/udata/sdata 2-4-8, uleb/sleb, pcrel and
 *      datarel; anything else stops the walk.
 *   2. the CIE and FDE (augmentations z, R, P, L, S), and the CFA program
 *      of both run up to the PC: advance_loc*, set_loc, def_cfa*,
 *      offset*, val_offset*, restore*, remember/restore_state (the CFA
 *      rule included, as libgcc), undefined, same_value, register,
 *      GNU_args_size, GNU_negative_offset_extended, expression,
 *      val_expression and def_cfa_expression. Expressions (the PLT's
 *      CFA, gcc's dynamic realignment) run on a small stack machine of
 *      constants, breg, deref, stack and arithmetic operations; any
 *      other operation stops the walk.
 *   3. the caller's registers: CFA = the rule's register + offset (or
 *      the expression), rsp = CFA, each rule applied to the 17 registers
 *      (rax..r15, the return address), unmentioned ones kept (libgcc's
 *      "same value"); the caller's PC is the return-address column. An
 *      undefined return address (_start, start_thread's clone) ends the
 *      stack.
 *
 * A frame whose PC is the kernel's sigreturn trampoline (glibc's
 * __restore_rt: mov $0xf,%rax; syscall, checked by its bytes as libgcc's
 * fallback does, inside the code its FDE covers) continues from the ucontext the kernel saved at its RSP,
 * so a program's own signal handler is unwound through into what it
 * interrupted.
 *
 * Safety: every read of the stack (saved registers, the saved ucontext,
 * expression derefs) is checked first against [interrupted RSP - 128
 * (the red zone), top of the thread's stack); a read outside stops the
 * walk, and an RSP below the thread's stack bottom (preload_cfi_thread_begin)
 * is not walked at all. Unwind tables are read where the loader mapped
 * them (read-only segments of loaded objects, as libgcc does). In the
 * handler: no malloc, no locks, no stdio, no system calls; the state is
 * the caller's cursor (preload_cfi_thread_begin runs outside it).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "preload/unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>

extern void *__libc_stack_end;

static pthread_t g_cfi_main;
static __thread uintptr_t t_cfi_top __attribute__((tls_model("initial-exec")));
/* The lowest address of the thread's stack (preload_cfi_thread_begin), 0 if not
 * known: then 1 GiB below its top. */
static __thread uintptr_t t_cfi_bottom __attribute__((tls_model("initial-exec")));
#define CFI_STACK_MAX (1ul << 30)

void preload_cfi_init(void)
{
	g_cfi_main = pthread_self();
}

uintptr_t preload_cfi_stack_top(void)
{
	if (!t_cfi_top) {
		pthread_t self = pthread_self();
		t_cfi_top = g_cfi_main && pthread_equal(self, g_cfi_main) ? (uintptr_t)__libc_stack_end
									  : (uintptr_t)self;
	}
	return t_cfi_top;
}

void preload_cfi_thread_begin(void)
{
	if (t_cfi_bottom)
		return;   /* a fork child's thread: its parent's stack still */
	uintptr_t top = preload_cfi_stack_top();
	if (g_cfi_main && pthread_equal(pthread_self(), g_cfi_main)) {
		/* The main thread's stack grows down to its limit, and the
		 * kernel maps nothing within max(limit, 128 MiB) of its top
		 * (mmap_base): that much, so that a program that raises its
		 * limit later (gcc's cc1 asks for 64 MiB) is still walked. */
		struct rlimit rl;
		if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
			uint64_t span = rl.rlim_cur > (128ul << 20) ? rl.rlim_cur : 128ul << 20;
			if (span < CFI_STACK_MAX && span < top)
				t_cfi_bottom = top - span;
		}
		return;
	}
	/* Another thread's: glibc reports it above the guard (the program's
	 * own block for a stack it gave pthread_attr_setstack). */
	pthread_attr_t a;
	void *lo;
	size_t size;
	if (pthread_getattr_np(pthread_self(), &a) != 0)
		return;
	if (pthread_attr_getstack(&a, &lo, &size) == 0 && (uintptr_t)lo < top)
		t_cfi_bottom = (uintptr_t)lo;
	pthread_attr_destroy(&a);
}

uintptr_t preload_cfi_stack_bottom(void)
{
	if (t_cfi_bottom)
		return t_cfi_bottom;
	uintptr_t top = preload_cfi_stack_top();
	return top > CFI_STACK_MAX ? top - CFI_STACK_MAX : 0;
}

/* ucontext gregs index of each DWARF register. */
static const unsigned char greg_of[CFI_NREGS] = {
	REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
	REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP,
};

static void from_gregs(struct preload_cfi_cursor *c, const greg_t *g)
{
	for (int r = 0; r < CFI_NREGS; r++)
		c->reg[r] = (uint64_t)g[greg_of[r]];
	c->valid = (1u << CFI_NREGS) - 1;
	c->exact = 1;
}

int preload_cfi_init_ucontext(struct preload_cfi_cursor *c, const ucontext_t *uc)
{
	from_gregs(c, uc->uc_mcontext.gregs);
	uintptr_t sp = (uintptr_t)c->reg[CFI_RSP], top = preload_cfi_stack_top();
	uintptr_t bottom = preload_cfi_stack_bottom();
	/* From the red zone up: an epilogue's rules still name the slots of
	 * registers it has popped (rbx at CFA-24 with rsp at CFA-16). */
	c->lo = sp - 128 < bottom ? bottom : sp - 128;
	c->hi = top;
	/* An RSP below the thread's stack is on one the program made (a
	 * coroutine's, a fiber's): between it and the top lie other
	 * mappings and gaps, and a rule that reads there faulted in our
	 * handler (tests/coro_stack.sh: the program killed by SIGSEGV). */
	if (sp >= top || sp < bottom || sp < 128) {
		c->lo = c->hi = 0;   /* no reads at all */
		return -1;
	}
	return 0;
}

static int stack_read(const struct preload_cfi_cursor *c, uint64_t addr, uint64_t *v)
{
	if (addr < c->lo || addr > c->hi || c->hi - addr < 8)
		return -1;
	*v = *(const uint64_t *)(uintptr_t)addr;
	return 0;
}

/* ---- reading the tables ---- */

struct rd {
	const uint8_t *p, *end;
	int bad;
};

static uint64_t rd_u(struct rd *r, unsigned n)
{
	uint64_t v = 0;
	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, n);   /* little-endian; inlined, no call */
	r->p += n;
	return v;
}

static uint64_t rd_uleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	for (;;) {
		if (r->bad || r->p >= r->end || shift > 63) {
			r->bad = 1;
			return 0;
		}
		uint8_t b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80))
			return v;
	}
}

static int64_t rd_sleb(struct rd *r)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		if (r->bad || r->p >= r->end || shift > 63) {
			r->bad = 1;
			return 0;
		}
		b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	return (int64_t)v;
}

enum {
	PE_absptr = 0x00, PE_uleb128 = 0x01, PE_udata2 = 0x02, PE_udata4 = 0x03, PE_udata8 = 0x04,
	PE_sleb128 = 0x09, PE_sdata2 = 0x0a, PE_sdata4 = 0x0b, PE_sdata8 = 0x0c,
	PE_pcrel = 0x10, PE_datarel = 0x30, PE_indirect = 0x80, PE_omit = 0xff,
};

/* An encoded pointer; datarel is relative to base (the .eh_frame_hdr),
 * 0 where none applies. Indirect pointers are read (skipped) but not
 * dereferenced: only the personality routine uses them, which we skip. */
static uint64_t rd_enc(struct rd *r, uint8_t enc, uint64_t datarel)
{
	const uint8_t *at = r->p;
	uint64_t v;
	if (enc == PE_omit) {
		r->bad = 1;
		return 0;
	}
	switch (enc & 0x0f) {
	case PE_absptr: v = rd_u(r, 8); break;
	case PE_uleb128: v = rd_uleb(r); break;
	case PE_udata2: v = rd_u(r, 2); break;
	case PE_udata4: v = rd_u(r, 4); break;
	case PE_udata8: v = rd_u(r, 8); break;
	case PE_sleb128: v = (uint64_t)rd_sleb(r); break;
	case PE_sdata2: v = (uint64_t)(int64_t)(int16_t)rd_u(r, 2); break;
	case PE_sdata4: v = (uint64_t)(int64_t)(int32_t)rd_u(r, 4); break;
	case PE_sdata8: v = rd_u(r, 8); break;
	default: r->bad = 1; return 0;
	}
	switch (enc & 0x70) {
	case 0: break;
	case PE_pcrel: v += (uint64_t)(uintptr_t)at; break;
	case PE_datarel:
		if (!datarel)
			r->bad = 1;
		v += datarel;
		break;
	default: r->bad = 1; return 0;   /* textrel, funcrel, aligned: not on x86-64 Linux */
	}
	return v;
}

/* ---- the FDE of a PC ---- */

struct fde {
	uint64_t begin, range;
	const uint8_t *cie_insns, *cie_end, *insns, *end;
	uint64_t caf;          /* code alignment factor */
	int64_t daf;           /* data alignment factor */
	unsigned ra_reg;
	uint8_t fde_enc;
	int signal;            /* CIE augmentation S */
	int z;                 /* CIE augmentation z: FDEs have augmentation data */
};

/* Parses the CIE at p into f. 0 or -1. */
static int parse_cie(const uint8_t *p, const uint8_t *lim, struct fde *f)
{
	struct rd r = { p, lim, 0 };
	uint64_t len = rd_u(&r, 4);
	if (r.bad || len == 0xffffffffu || len > (uint64_t)(lim - r.p))
		return -1;   /* 64-bit DWARF is not written to .eh_frame by gcc/ld */
	r.end = r.p + len;
	if (rd_u(&r, 4) != 0)
		return -1;   /* not a CIE */
	unsigned ver = (unsigned)rd_u(&r, 1);
	if (ver != 1 && ver != 3)
		return -1;
	const char *aug = (const char *)r.p;
	while (r.p < r.end && *r.p)
		r.p++;
	if (r.p >= r.end)
		return -1;
	r.p++;
	f->caf = rd_uleb(&r);
	f->daf = rd_sleb(&r);
	f->ra_reg = ver == 1 ? (unsigned)rd_u(&r, 1) : (unsigned)rd_uleb(&r);
	f->fde_enc = PE_absptr;
	f->signal = 0;
	f->z = aug[0] == 'z';
	if (f->z) {
		uint64_t alen = rd_uleb(&r);
		if (r.bad || alen > (uint64_t)(r.end - r.p))
			return -1;
		const uint8_t *aend = r.p + alen;
		for (const char *a = aug + 1; *a; a++) {
			switch (*a) {
			case 'R': f->fde_enc = (uint8_t)rd_u(&r, 1); break;
			case 'L': rd_u(&r, 1); break;
			case 'P': {
				uint8_t penc = (uint8_t)rd_u(&r, 1);
				rd_enc(&r, penc & 0x7f, 0);   /* skipped, not followed */
				break;
			}
			case 'S': f->signal = 1; break;
			default: return -1;   /* not known: never guess */
			}
		}
		if (r.bad || r.p > aend)
			return -1;
		r.p = aend;
	} else if (aug[0]) {
		return -1;    /* "eh" and other old forms */
	}
	if (r.bad || f->ra_reg >= CFI_NREGS)
		return -1;
	f->cie_insns = r.p;
	f->cie_end = r.end;
	return 0;
}

static int find_fde(uint64_t pc, const uint8_t *hdr, const void *map_end, struct fde *f);

int preload_cfi_function(uint64_t pc, uint64_t *begin, uint64_t *end)
{
	struct dl_find_object fo;
	struct fde f;
	if (_dl_find_object((void *)(uintptr_t)pc, &fo) != 0 ||
	    find_fde(pc, fo.dlfo_eh_frame, fo.dlfo_map_end, &f) < 0)
		return -1;
	*begin = f.begin;
	*end = f.begin + f.range;
	return 0;
}

/* The FDE covering pc in the object whose .eh_frame_hdr is hdr. */
static int find_fde(uint64_t pc, const uint8_t *hdr, const void *map_end, struct fde *f)
{
	const uint8_t *lim = map_end;
	if (!hdr || hdr + 4 > lim || hdr[0] != 1)
		return -1;
	uint8_t ptr_enc = hdr[1], cnt_enc = hdr[2], tab_enc = hdr[3];
	struct rd r = { hdr + 4, lim, 0 };
	uint64_t base = (uint64_t)(uintptr_t)hdr;
	rd_enc(&r, ptr_enc, base);   /* eh_frame_ptr: not needed */
	uint64_t count = rd_enc(&r, cnt_enc, base);
	if (r.bad || tab_enc != (PE_datarel | PE_sdata4) || !count)
		return -1;
	const int32_t *tab = (const int32_t *)r.p;
	if (count > (uint64_t)(lim - r.p) / 8)
		return -1;
	/* The last entry whose initial location is <= pc. */
	int64_t rel = (int64_t)(pc - base);
	uint64_t lo = 0, hi = count;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (tab[2 * mid] <= rel)
			lo = mid;
		else
			hi = mid;
	}
	if (tab[2 * lo] > rel)
		return -1;
	const uint8_t *fp = hdr + tab[2 * lo + 1];
	struct rd d = { fp, lim, 0 };
	uint64_t len = rd_u(&d, 4);
	if (d.bad || len == 0xffffffffu || len == 0 || len > (uint64_t)(lim - d.p))
		return -1;
	d.end = d.p + len;
	const uint8_t *idp = d.p;
	uint32_t cie_off = (uint32_t)rd_u(&d, 4);
	if (d.bad || cie_off == 0 || (uint64_t)cie_off > (uint64_t)(uintptr_t)idp)
		return -1;
	if (parse_cie(idp - cie_off, lim, f) < 0)
		return -1;
	f->begin = rd_enc(&d, f->fde_enc, 0);
	f->range = rd_enc(&d, f->fde_enc & 0x0f, 0);
	if (d.bad || pc < f->begin || pc - f->begin >= f->range)
		return -1;
	if (f->z) {   /* the FDE's augmentation data (the LSDA): skipped */
		uint64_t alen = rd_uleb(&d);
		if (d.bad || alen > (uint64_t)(d.end - d.p))
			return -1;
		d.p += alen;
	}
	f->insns = d.p;
	f->end = d.end;
	return 0;
}

/* ---- the CFA program ---- */

enum { RULE_SAME = 0, RULE_UNDEF, RULE_OFF, RULE_VALOFF, RULE_REG, RULE_EXPR, RULE_VALEXPR };
enum { CFA_REG = 0, CFA_EXPR };

struct rule {
	uint8_t how, reg;
	int64_t off;               /* offset, or expression length */
	const uint8_t *expr;
};

struct regstate {
	struct rule r[CFI_NREGS];
	uint8_t cfa_how, cfa_reg;
	int64_t cfa_off;
	const uint8_t *cfa_expr;
	uint64_t cfa_elen;
};

#define CFI_REMEMBER 8

/* Runs insns [p, end) while the row's location is <= target; init is the
 * CIE's state (for restore), NULL while running the CIE. */
static int run_cfa(struct regstate *s, const struct regstate *init, const uint8_t *p,
		   const uint8_t *end, const struct fde *f, uint64_t loc, uint64_t target)
{
	struct regstate saved[CFI_REMEMBER];
	int nsaved = 0;
	struct rd r = { p, end, 0 };
	while (r.p < r.end && loc <= target) {
		uint8_t op = *r.p++;
		uint64_t reg, v;
		int64_t sv;
		switch (op & 0xc0) {
		case 0x40:
			loc += (op & 0x3f) * f->caf;
			continue;
		case 0x80:
			reg = op & 0x3f;
			v = rd_uleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_OFF, 0, (int64_t)v * f->daf, NULL };
			continue;
		case 0xc0:
			reg = op & 0x3f;
			if (!init)
				return -1;
			if (reg < CFI_NREGS)
				s->r[reg] = init->r[reg];
			continue;
		}
		switch (op) {
		case 0x00: break;                                             /* nop */
		case 0x01: loc = rd_enc(&r, f->fde_enc, 0); break;            /* set_loc */
		case 0x02: loc += rd_u(&r, 1) * f->caf; break;                /* advance_loc1 */
		case 0x03: loc += rd_u(&r, 2) * f->caf; break;
		case 0x04: loc += rd_u(&r, 4) * f->caf; break;
		case 0x05:                                                    /* offset_extended */
			reg = rd_uleb(&r);
			v = rd_uleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_OFF, 0, (int64_t)v * f->daf, NULL };
			break;
		case 0x06:                                                    /* restore_extended */
			reg = rd_uleb(&r);
			if (!init)
				return -1;
			if (reg < CFI_NREGS)
				s->r[reg] = init->r[reg];
			break;
		case 0x07:                                                    /* undefined */
		case 0x08:                                                    /* same_value */
			reg = rd_uleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ op == 0x07 ? RULE_UNDEF : RULE_SAME, 0, 0, NULL };
			break;
		case 0x09:                                                    /* register */
			reg = rd_uleb(&r);
			v = rd_uleb(&r);
			if (reg < CFI_NREGS) {
				if (v >= CFI_NREGS)
					return -1;
				s->r[reg] = (struct rule){ RULE_REG, (uint8_t)v, 0, NULL };
			}
			break;
		case 0x0a:                                                    /* remember_state */
			if (nsaved == CFI_REMEMBER)
				return -1;
			saved[nsaved++] = *s;
			break;
		case 0x0b:                                                    /* restore_state */
			if (!nsaved)
				return -1;
			*s = saved[--nsaved];
			break;
		case 0x0c:                                                    /* def_cfa */
			s->cfa_reg = (uint8_t)(reg = rd_uleb(&r));
			s->cfa_off = (int64_t)rd_uleb(&r);
			s->cfa_how = CFA_REG;
			if (reg >= CFI_NREGS)
				return -1;
			break;
		case 0x0d:                                                    /* def_cfa_register */
			s->cfa_reg = (uint8_t)(reg = rd_uleb(&r));
			s->cfa_how = CFA_REG;
			if (reg >= CFI_NREGS)
				return -1;
			break;
		case 0x0e: s->cfa_off = (int64_t)rd_uleb(&r); break;          /* def_cfa_offset */
		case 0x0f:                                                    /* def_cfa_expression */
			v = rd_uleb(&r);
			if (r.bad || v > (uint64_t)(r.end - r.p))
				return -1;
			s->cfa_how = CFA_EXPR;
			s->cfa_expr = r.p;
			s->cfa_elen = v;
			r.p += v;
			break;
		case 0x10:                                                    /* expression */
		case 0x16:                                                    /* val_expression */
			reg = rd_uleb(&r);
			v = rd_uleb(&r);
			if (r.bad || v > (uint64_t)(r.end - r.p))
				return -1;
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ op == 0x10 ? RULE_EXPR : RULE_VALEXPR, 0, (int64_t)v, r.p };
			r.p += v;
			break;
		case 0x11:                                                    /* offset_extended_sf */
			reg = rd_uleb(&r);
			sv = rd_sleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_OFF, 0, sv * f->daf, NULL };
			break;
		case 0x12:                                                    /* def_cfa_sf */
			s->cfa_reg = (uint8_t)(reg = rd_uleb(&r));
			s->cfa_off = rd_sleb(&r) * f->daf;
			s->cfa_how = CFA_REG;
			if (reg >= CFI_NREGS)
				return -1;
			break;
		case 0x13: s->cfa_off = rd_sleb(&r) * f->daf; break;          /* def_cfa_offset_sf */
		case 0x14:                                                    /* val_offset */
			reg = rd_uleb(&r);
			v = rd_uleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_VALOFF, 0, (int64_t)v * f->daf, NULL };
			break;
		case 0x15:                                                    /* val_offset_sf */
			reg = rd_uleb(&r);
			sv = rd_sleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_VALOFF, 0, sv * f->daf, NULL };
			break;
		case 0x2e: rd_uleb(&r); break;                                /* GNU_args_size */
		case 0x2f:                                                    /* GNU_negative_offset_extended */
			reg = rd_uleb(&r);
			v = rd_uleb(&r);
			if (reg < CFI_NREGS)
				s->r[reg] = (struct rule){ RULE_OFF, 0, -(int64_t)v * f->daf, NULL };
			break;
		default:
			return -1;
		}
		if (r.bad)
			return -1;
	}
	return r.bad ? -1 : 0;
}

/* A DWARF expression on the frame's registers: constants, breg, deref
 * (checked against the stack), stack and arithmetic operations. What the
 * PLT's CFA and gcc's realigned frames use; any other operation: -1. */
static int eval(const struct preload_cfi_cursor *c, const uint8_t *p, uint64_t len, int push, uint64_t init,
		uint64_t *out)
{
	uint64_t st[16];
	int n = 0;
	struct rd r = { p, p + len, 0 };
	if (push)
		st[n++] = init;
	while (r.p < r.end) {
		uint8_t op = *r.p++;
		uint64_t a, b;
		if (n >= 15)
			return -1;
		if (op >= 0x30 && op <= 0x4f) {            /* lit0..lit31 */
			st[n++] = op - 0x30u;
		} else if (op >= 0x70 && op <= 0x8f) {     /* breg0..breg31 */
			unsigned reg = op - 0x70u;
			int64_t off = rd_sleb(&r);
			if (reg >= CFI_NREGS || !(c->valid >> reg & 1))
				return -1;
			st[n++] = c->reg[reg] + (uint64_t)off;
		} else {
			switch (op) {
			case 0x08: st[n++] = rd_u(&r, 1); break;                          /* const1u */
			case 0x09: st[n++] = (uint64_t)(int64_t)(int8_t)rd_u(&r, 1); break;
			case 0x0a: st[n++] = rd_u(&r, 2); break;
			case 0x0b: st[n++] = (uint64_t)(int64_t)(int16_t)rd_u(&r, 2); break;
			case 0x0c: st[n++] = rd_u(&r, 4); break;
			case 0x0d: st[n++] = (uint64_t)(int64_t)(int32_t)rd_u(&r, 4); break;
			case 0x0e: case 0x0f: st[n++] = rd_u(&r, 8); break;
			case 0x10: st[n++] = rd_uleb(&r); break;                          /* constu */
			case 0x11: st[n++] = (uint64_t)rd_sleb(&r); break;                /* consts */
			case 0x12: if (n < 1) return -1; st[n] = st[n - 1]; n++; break;   /* dup */
			case 0x13: if (n < 1) return -1; n--; break;                      /* drop */
			case 0x14: if (n < 2) return -1; st[n] = st[n - 2]; n++; break;   /* over */
			case 0x16:                                                        /* swap */
				if (n < 2)
					return -1;
				a = st[n - 1]; st[n - 1] = st[n - 2]; st[n - 2] = a;
				break;
			case 0x06:                                                        /* deref */
				if (n < 1 || stack_read(c, st[n - 1], &st[n - 1]) < 0)
					return -1;
				break;
			case 0x23: if (n < 1) return -1; st[n - 1] += rd_uleb(&r); break;  /* plus_uconst */
			case 0x1f: if (n < 1) return -1; st[n - 1] = -st[n - 1]; break;    /* neg */
			case 0x20: if (n < 1) return -1; st[n - 1] = ~st[n - 1]; break;    /* not */
			case 0x92: {                                                       /* bregx */
				uint64_t reg = rd_uleb(&r);
				int64_t off = rd_sleb(&r);
				if (reg >= CFI_NREGS || !(c->valid >> reg & 1))
					return -1;
				st[n++] = c->reg[reg] + (uint64_t)off;
				break;
			}
			case 0x1a: case 0x1c: case 0x1e: case 0x21: case 0x22: case 0x24:
			case 0x25: case 0x26: case 0x27: case 0x29: case 0x2a: case 0x2b:
			case 0x2c: case 0x2d: case 0x2e:
				if (n < 2)
					return -1;
				b = st[--n];
				a = st[n - 1];
				switch (op) {
				case 0x1a: a &= b; break;
				case 0x1c: a -= b; break;
				case 0x1e: a *= b; break;
				case 0x21: a |= b; break;
				case 0x22: a += b; break;
				case 0x24: a = b < 64 ? a << b : 0; break;
				case 0x25: a = b < 64 ? a >> b : 0; break;
				case 0x26: a = b < 64 ? (uint64_t)((int64_t)a >> b) : (uint64_t)((int64_t)a >> 63); break;
				case 0x27: a ^= b; break;
				case 0x29: a = a == b; break;
				case 0x2a: a = (int64_t)a >= (int64_t)b; break;
				case 0x2b: a = (int64_t)a > (int64_t)b; break;
				case 0x2c: a = (int64_t)a <= (int64_t)b; break;
				case 0x2d: a = (int64_t)a < (int64_t)b; break;
				case 0x2e: a = a != b; break;
				}
				st[n - 1] = a;
				break;
			default:
				return -1;
			}
		}
		if (r.bad)
			return -1;
	}
	if (n < 1)
		return -1;
	*out = st[n - 1];
	return 0;
}

/* glibc's __restore_rt: mov $0xf,%rax; syscall (rt_sigreturn). */
static const uint8_t sigreturn_code[9] = { 0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05 };

/* ---- a cache of frame recipes ----
 *
 * Most frames' rules are "CFA = register + offset; rbx, rbp, r12-r15 and
 * the return address saved at CFA + small offsets or unchanged": 12
 * bytes, kept in a global direct-mapped table keyed by the PC looked up
 * (with the frame's exactness), so a hit skips _dl_find_object, the
 * binary search and the CFA program (bench/stacks.sh: the walk was ~5x
 * slower without it). Shared by all threads without a lock: each entry
 * is a seqlock (a writer takes it by CAS from an even to an odd count,
 * writes, releases it even; a reader copies and rechecks the count, and
 * a torn or busy entry is a miss). A handler that interrupts a writer of
 * its own thread sees the entry busy and misses; it never waits. The
 * generation, bumped at every dlclose (preload_cfi_forget, from interpose.c),
 * retires every entry at once: an unloaded object's PCs may come back
 * with other code. Frames with other rules (expressions, a caller-saved
 * register saved, a signal trampoline's registers) take the slow path
 * every time, except the trampoline, cached as such. */
enum { REC_RULES = 1, REC_SIGRETURN = 2 };
#define OFF_SAME 127
#define OFF_UNDEF (-128)
#define CFI_CACHE 1024     /* entries, 32 bytes each */

struct crec {
	uint8_t kind, cfa_reg, signal;
	int8_t off[7];         /* rbx, rbp, r12, r13, r14, r15, ra: (saved at CFA + 8 off) or SAME/UNDEF */
	int32_t cfa_off;
};
static const unsigned char rec_reg[7] = { 3, 6, 12, 13, 14, 15, CFI_RIP };

static struct {
	uint64_t w[4];         /* seq << 32 | generation, key, payload[2] */
} g_cache[CFI_CACHE] __attribute__((aligned(64)));
static uint32_t g_cfi_gen;
static __thread int g_cfi_nocache __attribute__((tls_model("initial-exec")));   /* tests: the slow path */

void preload_cfi_forget(void)
{
	__atomic_add_fetch(&g_cfi_gen, 1, __ATOMIC_RELEASE);
}

static unsigned slot_of(uint64_t key)
{
	return (unsigned)((key * 0x9e3779b97f4a7c15ull) >> 54) & (CFI_CACHE - 1);
}

static int cache_get(uint64_t key, struct crec *r)
{
	if (g_cfi_nocache)
		return 0;
	unsigned i = slot_of(key);
	uint64_t w0 = __atomic_load_n(&g_cache[i].w[0], __ATOMIC_ACQUIRE);
	uint32_t gen = __atomic_load_n(&g_cfi_gen, __ATOMIC_ACQUIRE);
	if ((w0 >> 32 & 1) || (uint32_t)w0 != gen || (w0 >> 32) == 0)
		return 0;
	uint64_t k = __atomic_load_n(&g_cache[i].w[1], __ATOMIC_RELAXED);
	uint64_t p[2] = { __atomic_load_n(&g_cache[i].w[2], __ATOMIC_RELAXED),
			  __atomic_load_n(&g_cache[i].w[3], __ATOMIC_RELAXED) };
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	if (__atomic_load_n(&g_cache[i].w[0], __ATOMIC_RELAXED) != w0 || k != key)
		return 0;
	_Static_assert(sizeof(struct crec) <= sizeof(p), "crec fits two words");
	memcpy(r, p, sizeof(*r));
	return 1;
}

static void cache_put(uint64_t key, const struct crec *r)
{
	if (g_cfi_nocache)
		return;
	unsigned i = slot_of(key);
	uint64_t p[2] = { 0, 0 };
	memcpy(p, r, sizeof(*r));
	uint32_t gen = __atomic_load_n(&g_cfi_gen, __ATOMIC_ACQUIRE);
	uint64_t w0 = __atomic_load_n(&g_cache[i].w[0], __ATOMIC_RELAXED);
	if (w0 >> 32 & 1)
		return;   /* being written (by another thread, or the code this interrupted) */
	uint64_t busy = ((w0 >> 32) + 1) << 32 | (uint32_t)w0;
	if (!__atomic_compare_exchange_n(&g_cache[i].w[0], &w0, busy, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return;
	__atomic_store_n(&g_cache[i].w[1], key, __ATOMIC_RELAXED);
	__atomic_store_n(&g_cache[i].w[2], p[0], __ATOMIC_RELAXED);
	__atomic_store_n(&g_cache[i].w[3], p[1], __ATOMIC_RELAXED);
	__atomic_store_n(&g_cache[i].w[0], ((busy >> 32) + 1) << 32 | gen, __ATOMIC_RELEASE);
}

static int sigreturn_frame(struct preload_cfi_cursor *c);

/* The caller's frame by a recipe. */
static int apply(struct preload_cfi_cursor *c, const struct crec *r)
{
	if (r->kind == REC_SIGRETURN)
		return sigreturn_frame(c);
	if (!(c->valid >> r->cfa_reg & 1))
		return -1;
	uint64_t cfa = c->reg[r->cfa_reg] + (uint64_t)(int64_t)r->cfa_off;
	uint64_t v[7];
	for (int k = 0; k < 7; k++)
		if (r->off[k] != OFF_SAME && r->off[k] != OFF_UNDEF &&
		    stack_read(c, cfa + (uint64_t)(8 * (int64_t)r->off[k]), &v[k]) < 0)
			return -1;
	if (r->off[6] == OFF_UNDEF)
		return 0;   /* the outermost frame */
	for (int k = 0; k < 7; k++) {
		if (r->off[k] == OFF_SAME)
			continue;
		if (r->off[k] == OFF_UNDEF) {
			c->valid &= ~(1u << rec_reg[k]);
		} else {
			c->reg[rec_reg[k]] = v[k];
			c->valid |= 1u << rec_reg[k];
		}
	}
	c->reg[CFI_RSP] = cfa;
	c->valid |= 1u << CFI_RSP;
	if (!(c->valid >> CFI_RIP & 1) || !c->reg[CFI_RIP])
		return 0;
	c->exact = r->signal;
	return 1;
}

/* The recipe of a state, if it has one: 0, or -1. */
static int make_rec(const struct regstate *s, const struct fde *f, struct crec *r)
{
	if (s->cfa_how != CFA_REG || f->ra_reg != CFI_RIP || s->cfa_off != (int32_t)s->cfa_off)
		return -1;
	memset(r, 0, sizeof(*r));
	r->kind = REC_RULES;
	r->cfa_reg = s->cfa_reg;
	r->cfa_off = (int32_t)s->cfa_off;
	r->signal = (uint8_t)f->signal;
	for (int reg = 0, k; reg < CFI_NREGS; reg++) {
		for (k = 0; k < 7 && rec_reg[k] != reg; k++)
			;
		const struct rule *ru = &s->r[reg];
		if (k == 7) {
			if (ru->how != RULE_SAME && reg != CFI_RSP)
				return -1;
			if (reg == CFI_RSP && ru->how != RULE_SAME)
				return -1;
			continue;
		}
		if (ru->how == RULE_SAME)
			r->off[k] = OFF_SAME;
		else if (ru->how == RULE_UNDEF)
			r->off[k] = OFF_UNDEF;
		else if (ru->how == RULE_OFF && !(ru->off & 7) && ru->off / 8 > OFF_UNDEF && ru->off / 8 < OFF_SAME)
			r->off[k] = (int8_t)(ru->off / 8);
		else
			return -1;
	}
	return 0;
}

static int sigreturn_frame(struct preload_cfi_cursor *c)
{
	uint64_t uc = c->reg[CFI_RSP];
	greg_t g[NGREG] = { 0 };
	uint64_t at = uc + offsetof(ucontext_t, uc_mcontext.gregs);
	if (!(c->valid >> CFI_RSP & 1))
		return -1;
	for (int i = 0; i < NGREG; i++)
		if (stack_read(c, at + 8 * (uint64_t)i, (uint64_t *)&g[i]) < 0)
			return -1;
	from_gregs(c, g);
	return c->reg[CFI_RIP] ? 1 : 0;
}

int preload_cfi_step(struct preload_cfi_cursor *c)
{
	uint64_t pc = c->reg[CFI_RIP];
	struct dl_find_object fo;
	if (!pc || !(c->valid >> CFI_RIP & 1))
		return 0;
	if (c->hi <= c->lo)
		return -1;
	uint64_t look = c->exact ? pc : pc - 1;
	uint64_t key = pc << 1 | (uint64_t)(c->exact & 1);
	struct crec rec;
	if (cache_get(key, &rec))
		return apply(c, &rec);
	if (_dl_find_object((void *)(uintptr_t)look, &fo) != 0)
		return -1;
	struct fde f;
	if (find_fde(look, fo.dlfo_eh_frame, fo.dlfo_map_end, &f) < 0)
		return -1;
	/* The signal trampoline: the interrupted context is the ucontext the
	 * kernel saved at rsp (struct rt_sigframe, after its return address).
	 * Its bytes are read only inside the code its FDE covers (glibc's
	 * starts at the nop before __restore_rt, so pc - 1 finds it): an
	 * object's map range has unmapped gaps between its segments. */
	if (pc >= f.begin && pc - f.begin <= f.range && f.range - (pc - f.begin) >= sizeof(sigreturn_code) &&
	    !memcmp((const void *)(uintptr_t)pc, sigreturn_code, sizeof(sigreturn_code))) {
		rec = (struct crec){ .kind = REC_SIGRETURN };
		cache_put(key, &rec);
		return sigreturn_frame(c);
	}
	struct regstate init, s;
	memset(&init, 0, sizeof(init));
	if (run_cfa(&init, NULL, f.cie_insns, f.cie_end, &f, f.begin, UINT64_MAX) < 0)
		return -1;
	s = init;
	if (run_cfa(&s, &init, f.insns, f.end, &f, f.begin, look) < 0)
		return -1;
	if (make_rec(&s, &f, &rec) == 0) {
		cache_put(key, &rec);
		return apply(c, &rec);
	}
	uint64_t cfa;
	if (s.cfa_how == CFA_REG) {
		if (!(c->valid >> s.cfa_reg & 1))
			return -1;
		cfa = c->reg[s.cfa_reg] + (uint64_t)s.cfa_off;
	} else if (eval(c, s.cfa_expr, s.cfa_elen, 0, 0, &cfa) < 0) {
		return -1;
	}
	struct preload_cfi_cursor n = *c;
	n.reg[CFI_RSP] = cfa;
	n.valid |= 1u << CFI_RSP;
	for (int r = 0; r < CFI_NREGS; r++) {
		const struct rule *ru = &s.r[r];
		uint64_t v;
		switch (ru->how) {
		case RULE_SAME:
			continue;
		case RULE_UNDEF:
			n.valid &= ~(1u << r);
			continue;
		case RULE_OFF:
			if (stack_read(c, cfa + (uint64_t)ru->off, &v) < 0)
				return -1;
			break;
		case RULE_VALOFF:
			v = cfa + (uint64_t)ru->off;
			break;
		case RULE_REG:
			if (!(c->valid >> ru->reg & 1)) {
				n.valid &= ~(1u << r);
				continue;
			}
			v = c->reg[ru->reg];
			break;
		case RULE_EXPR:
			if (eval(c, ru->expr, (uint64_t)ru->off, 1, cfa, &v) < 0 || stack_read(c, v, &v) < 0)
				return -1;
			break;
		case RULE_VALEXPR:
			if (eval(c, ru->expr, (uint64_t)ru->off, 1, cfa, &v) < 0)
				return -1;
			break;
		default:
			return -1;
		}
		n.reg[r] = v;
		n.valid |= 1u << r;
	}
	if (f.ra_reg != CFI_RIP) {
		if (!(n.valid >> f.ra_reg & 1))
			return 0;
		n.reg[CFI_RIP] = n.reg[f.ra_reg];
		n.valid |= 1u << CFI_RIP;
	}
	if (!(n.valid >> CFI_RIP & 1) || !n.reg[CFI_RIP])
		return 0;   /* the outermost frame */
	n.exact = f.signal;   /* an S frame (a signal trampoline) restores an interrupted PC */
	*c = n;
	return 1;
}

unsigned preload_cfi_backtrace(const ucontext_t *uc, uint64_t *pc, unsigned max, int *more)
{
	struct preload_cfi_cursor c;
	unsigned n = 0;
	*more = 0;
	if (!max)
		return 0;
	int ok = preload_cfi_init_ucontext(&c, uc) == 0;
	pc[n++] = c.reg[CFI_RIP];
	while (ok && preload_cfi_step(&c) > 0) {
		if (n == max) {
			*more = 1;
			break;
		}
		/* Past the leaf a stack holds return addresses, which reports
		 * look up less one (the call); the PC a signal interrupted
		 * (the frame under a signal trampoline) is stored plus one so
		 * that the same rule finds it, as libgcc's _Unwind_GetIPInfo
		 * marks it: else a program's handler interrupting the first
		 * byte of a function named the one before. */
		pc[n++] = c.reg[CFI_RIP] + (uint64_t)(c.exact != 0);
	}
	return n;
}
