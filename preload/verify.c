/*
 * Co-simulation (VPROF_VERIFY=1): the interpreter checked against the
 * hardware on the program's own instructions.
 *
 * At a sample the handler converts the interrupted context to interpreter
 * state and runs up to VPROF_INTERP_LEN instructions in a shadow
 * (interp/shadow.c: loads read real memory, stores are logged, not
 * written), keeping the state after each instruction. It then sets the
 * trap flag in the context and returns: the hardware executes the same
 * instructions one at a time, and after each the SIGTRAP handler here
 * compares RIP, the general registers, the arithmetic flags and DF, MXCSR,
 * the vector and opmask registers (after the xstate rules: a component
 * whose xstate_bv bit is clear is in its initial state) and the bytes the
 * instruction stored, with what the shadow computed. The first instruction
 * that differs is recorded and ends the comparison, as does the end of the
 * run; TF is then cleared.
 *
 * Things the hardware does that the shadow does not, and how they are
 * kept out of the comparison:
 * - pushf stores RFLAGS with TF set (and RF clear): masked in its store.
 * - REP string instructions trap after every iteration when single-
 *   stepped, while the interpreter does up to 256 per step: traps taken
 *   with RIP still on the instruction and RCX not yet where the shadow
 *   left it are passed over.
 * - syscalls end interpreted runs, so none is ever stepped; the
 *   instruction a run stopped on is not stepped either (the native step
 *   ends the comparison before it).
 * - rdtsc, rdtscp, rdrand, rdseed, rdpid, cpuid, xgetbv give the hardware
 *   freedom (time, randomness, which CPU, XINUSE): a run is cut after one
 *   and it is not compared.
 * - signals arriving while stepping: every blockable signal other than the
 *   synchronous ones is blocked in the stepped context (the program's mask
 *   comes back when the run ends), so no handler of the program runs in
 *   between; a fault the hardware takes where the shadow did not is
 *   recorded, stepping ends, and the fault goes to the program.
 * - RF and TF are not compared (only CF PF AF ZF SF OF DF are).
 * - the step's trap is known by the kernel's si_code TRAP_TRACE (the debug
 *   status register's single-step bit). Under KVM on an Intel Xeon host
 *   that bit is now and then missing and the same trap arrives as
 *   TRAP_BRKPT; handed to the program, it killed it. While stepping,
 *   nothing else raises a kernel TRAP_BRKPT (the stepped instructions are
 *   the shadow's, and the interpreter stops before int3 and int1), so a
 *   TRAP_BRKPT with TF set in the trapped context is taken as the step's
 *   and counted (traps_unflagged).
 *
 * Fault-safe probes: the interpreter's probe routines fault on purpose;
 * SIGSEGV and SIGBUS come here first (interp_fault_fixup), and every other
 * SIGSEGV/SIGBUS/SIGTRAP goes to the program's disposition exactly as if
 * vprof were not there (its handler with its mask and flags, or the
 * default action, or ignored). The program's sigaction calls for these
 * three signals are kept here by the interposer in handler.c.
 *
 * Results: a MAP_SHARED file per process (verify_format.h),
 * DB/verify/TAG.PID.vfy.
 *
 * Environment (besides VPROF_VERIFY and VPROF_INTERP_LEN, capped at
 * VERIFY_MAX_LEN): VPROF_VERIFY_TAG names the files of one launch
 * (`vprof verify` sets it); VPROF_VERIFY_STEP=0 runs the shadow only, for
 * coverage, without stepping; VPROF_VERIFY_INJECT=1, 2 or 3 (tests only)
 * makes the shadow's result wrong (flags, a vector register, stored
 * bytes: see observe()), so that a test can see the comparison catch it;
 * VPROF_VERIFY_INJECT=4 (tests only) takes every 7th step trap as if the
 * kernel had reported it as TRAP_BRKPT.
 *
 * Concurrency: per-thread buffers reached through initial-exec TLS;
 * counters in the shared file are atomics. Everything called from the
 * handlers is async-signal-safe: no malloc, stdio or locks.
 */
#include "preload/preload.h"
#include "preload/verify_format.h"
#include "interp/interp.h"
#include "interp/shadow.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define TF_BIT 0x100ull
#define RF_BIT 0x10000ull
#define CMP_FLAGS (INTERP_ARITH_FLAGS | INTERP_DF)
#define MAX_REP_TRAPS 4096           /* per step (REP_BUDGET caps a run), then compare */

/* One instruction of the current run, as the shadow left it. */
struct step {
	uint64_t pc;
	uint32_t sh_lo, sh_hi;        /* its entries in the shadow log */
	uint32_t ld_lo, ld_hi;        /* its loads in the shadow's load log */
	uint16_t mnemonic;
	uint8_t len, rep, atomic;
	uint8_t bytes[16];
};

struct verify_thread {
	int stepping;                 /* native stepping in progress */
	int n, i;                     /* steps to compare, next one */
	uint32_t rep_traps;
	uint32_t rep_budget;
	uint32_t tid;
	uint32_t inject_traps;        /* step traps seen (VPROF_VERIFY_INJECT=4) */
	sigset_t saved_mask;          /* the program's mask at the sample */
	int cut;                      /* why the observer stopped the run */
	uint64_t rcx0;                /* RCX at the start of the run */
	uint64_t end_ns;              /* thread CPU time when stepping ended */
	int pre_raced;                /* loaded memory changed before stepping */
	int inputs_changed;           /* ...or before step i, by someone else */
	uint32_t rec_flags;           /* VERIFY_F_* for records being made */
	struct interp_thread *ith;
	size_t map_size;
	struct interp_shadow sh;
	struct interp_state start, act;
	struct step steps[VERIFY_MAX_LEN];
	struct interp_state exp[VERIFY_MAX_LEN];
};

enum { CUT_NONE, CUT_NONDET, CUT_OVERFLOW, CUT_REP, CUT_SELF };
#define REP_BUDGET 256             /* iterations stepped per run (each one
				    * is a trap: 256 cost ~4 ms here) */
#define REP_BUDGET_SHADOW 4096     /* per coverage-only run (~0.5 ms) */

/* This library's own text, from the linker. */
extern char __ehdr_start[] __attribute__((visibility("hidden")));
extern char __etext[] __attribute__((visibility("hidden")));

static __thread struct verify_thread *g_vt PRELOAD_TLS;
static pthread_key_t g_vkey;
static struct preload_verify_file *g_vf;
static int g_len, g_step = 1, g_inject;
static uint64_t g_cool_ns;           /* native CPU time between stepped runs */

static uint64_t thread_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#define ADD(field, v) __atomic_fetch_add(&g_vf->field, (v), __ATOMIC_RELAXED)

/* ------------------------------------------------------------ the file */

static int open_file(void)
{
	const char *tag = getenv("VPROF_VERIFY_TAG");
	char dir[460], path[600];
	int fd = -1;

	snprintf(dir, sizeof dir, "%s/verify", g_vprof.cfg.db);
	if (mkdir(dir, 0700) < 0 && errno != EEXIST)
		return -errno;
	for (int k = 0; k < 100 && fd < 0; k++) {
		if (k)
			snprintf(path, sizeof path, "%s/%s.%d.%d.vfy", dir, tag && *tag ? tag : "run",
				 (int)getpid(), k);
		else
			snprintf(path, sizeof path, "%s/%s.%d.vfy", dir, tag && *tag ? tag : "run",
				 (int)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	if (ftruncate(fd, sizeof(struct preload_verify_file)) < 0) {
		int e = -errno;
		close(fd);
		return e;
	}
	void *m = mmap(NULL, sizeof(struct preload_verify_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return -errno;
	struct preload_verify_file *f = m;
	f->hdr_size = (uint32_t)offsetof(struct preload_verify_file, stop_mnem);
	f->rec_size = sizeof(struct preload_verify_record);
	f->pid = (int32_t)getpid();
	f->interp_len = (uint32_t)g_len;
	f->step = (uint32_t)g_step;
	f->inject = (uint32_t)g_inject;
	ssize_t n = readlink("/proc/self/exe", f->exe, sizeof f->exe - 1);
	f->exe[n > 0 ? n : 0] = 0;
	f->version = VERIFY_VERSION;
	__atomic_store_n(&f->magic, VERIFY_MAGIC, __ATOMIC_RELEASE);
	g_vf = f;
	return 0;
}

static void on_fork_child(void)
{
	/* The parent's counts are the parent's: start a file of our own. */
	struct preload_verify_file *old = g_vf;
	g_vf = NULL;
	if (open_file() < 0) {
		g_vf = old;            /* better shared counts than a crash */
		return;
	}
	munmap(old, sizeof *old);
}

/* ------------------------------------------------------ shadow run */

static int nondeterministic(unsigned m)
{
	switch (m) {
	case ZYDIS_MNEMONIC_RDTSC: case ZYDIS_MNEMONIC_RDTSCP: case ZYDIS_MNEMONIC_RDRAND:
	case ZYDIS_MNEMONIC_RDSEED: case ZYDIS_MNEMONIC_RDPID: case ZYDIS_MNEMONIC_CPUID:
	case ZYDIS_MNEMONIC_XGETBV: case ZYDIS_MNEMONIC_RDPKRU:
	/* may clear TF, and with it the trap we wait for */
	case ZYDIS_MNEMONIC_POPF: case ZYDIS_MNEMONIC_POPFD: case ZYDIS_MNEMONIC_POPFQ:
	case ZYDIS_MNEMONIC_IRET: case ZYDIS_MNEMONIC_IRETD: case ZYDIS_MNEMONIC_IRETQ:
		return 1;
	}
	return 0;
}

static int observe(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	struct verify_thread *v = arg;
	const struct interp_insn *in = r->insn;
	struct step *s = &v->steps[v->n];

	if (v->sh.overflow) {
		v->cut = CUT_OVERFLOW;
		return 1;
	}
	if (nondeterministic(in->mnemonic)) {
		v->cut = CUT_NONDET;
		return 1;
	}
	if (in->pc >= (uint64_t)__ehdr_start && in->pc < (uint64_t)__etext) {
		/* Our own code reads our state (v->stepping...), which the
		 * stepping changes: not the program's, not compared. */
		v->cut = CUT_SELF;
		return 1;
	}
	s->rep = (in->attrib & (ZYDIS_ATTRIB_HAS_REP | ZYDIS_ATTRIB_HAS_REPE |
				ZYDIS_ATTRIB_HAS_REPNE)) != 0;
	if (s->rep) {
		/* Stepped, each iteration is a trap: keep runs affordable. */
		uint64_t before = v->n ? v->exp[v->n - 1].gpr[INTERP_RCX] : v->rcx0;
		uint64_t it = before - st->gpr[INTERP_RCX];
		if (in->addrsize == 4)
			it = (uint32_t)it;
		if (it > (g_step ? REP_BUDGET : REP_BUDGET_SHADOW) - v->rep_budget) {
			v->cut = CUT_REP;
			return 1;
		}
		v->rep_budget += (uint32_t)it;
	}
	s->atomic = (in->attrib & ZYDIS_ATTRIB_HAS_LOCK) ||
		    (in->mnemonic == ZYDIS_MNEMONIC_XCHG &&
		     (in->op[0].type == INTERP_OP_MEM || in->op[1].type == INTERP_OP_MEM));
	s->pc = in->pc;
	s->len = in->len;
	s->mnemonic = in->mnemonic;
	memcpy(s->bytes, in->bytes, in->len);
	s->sh_lo = v->sh.floor;
	s->sh_hi = v->sh.n;
	s->ld_lo = v->n ? v->steps[v->n - 1].ld_hi : 0;
	s->ld_hi = v->sh.ld_full ? UINT32_MAX : v->sh.nld;
	memcpy(&v->exp[v->n], st, sizeof *st);
	/* Test only: a wrong result the comparison must catch. 1: ZF of
	 * every CMP; 2: bit 0 of the first vector register an instruction
	 * writes; 3: the first byte every MOV stores. */
	if (g_inject == 1 && in->mnemonic == ZYDIS_MNEMONIC_CMP)
		v->exp[v->n].rflags ^= INTERP_ZF;
	if (g_inject == 2)
		for (int k = 0; k < in->nops; k++)
			if (in->op[k].type == INTERP_OP_REG && in->op[k].rkind == INTERP_RK_VEC &&
			    (in->op[k].action & ZYDIS_OPERAND_ACTION_MASK_WRITE)) {
				v->exp[v->n].zmm[in->op[k].idx].b[0] ^= 1;
				break;
			}
	if (g_inject == 3 && in->mnemonic == ZYDIS_MNEMONIC_MOV && s->sh_hi > s->sh_lo)
		v->sh.data[v->sh.e[s->sh_lo].off] ^= 1;
	v->n++;
	interp_shadow_mark(&v->sh);
	return 0;
}

static int unhandled_stop(int stop)
{
	return stop == INTERP_STOP_UNSUPPORTED || stop == INTERP_STOP_DECODE ||
	       stop == INTERP_STOP_BADSTATE;
}

static void set_step_mask(ucontext_t *uc, const sigset_t *orig)
{
	static const int sync_sigs[] = { SIGSEGV, SIGBUS, SIGTRAP, SIGILL, SIGFPE, SIGSYS };
	sigset_t m;
	sigfillset(&m);
	for (size_t k = 0; k < sizeof sync_sigs / sizeof sync_sigs[0]; k++)
		if (!sigismember(orig, sync_sigs[k]))
			sigdelset(&m, sync_sigs[k]);
	uc->uc_sigmask = m;
}

void preload_verify_sample(int sig, siginfo_t *si, void *ucv)
{
	struct verify_thread *v = g_vt;
	ucontext_t *uc = ucv;
	struct interp_result res;
	struct interp_observer obs = { .insn = observe, .arg = NULL, .flags = 0 };

	if (!g_vf)
		return;
	ADD(samples, 1);
	if (v && v->stepping && !(uc->uc_mcontext.gregs[REG_EFL] & TF_BIT) &&
	    !sigismember(&uc->uc_sigmask, SIGPROF)) {
		/* Our step mask is gone and TF with it: the trap never came. */
		v->stepping = 0;
		ADD(lost, 1);
	}
	if (!v || v->stepping || (uc->uc_mcontext.gregs[REG_EFL] & TF_BIT) ||
	    sigismember(&uc->uc_sigmask, SIGTRAP)) {
		ADD(skipped, 1);
		return;
	}
	if (v->end_ns && thread_ns() - v->end_ns < g_cool_ns) {
		ADD(cooldown, 1);
		return;
	}
	if (interp_from_ucontext(&v->start, uc) < 0) {
		ADD(skipped, 1);
		return;
	}
	preload_faults_unblock(uc);
	obs.arg = v;
	v->n = 0;
	v->rep_budget = 0;
	v->rcx0 = v->start.gpr[INTERP_RCX];
	v->cut = CUT_NONE;
	interp_shadow_begin(&v->sh);
	interp_run(&v->start, v->ith, g_len, &obs, &res);
	interp_shadow_end();

	ADD(runs, 1);
	ADD(interpreted, (uint64_t)res.executed);
	if (res.stop >= 0 && res.stop < VERIFY_NSTOP) {
		ADD(stop[res.stop], 1);
		if (res.stop != INTERP_STOP_LIMIT && res.stop != INTERP_STOP_OBSERVER &&
		    res.stop_mnemonic < VERIFY_NMNEM)
			ADD(stop_mnem[res.stop][res.stop_mnemonic], 1);
	}
	if (unhandled_stop(res.stop))
		ADD(unhandled, 1);
	if (res.executed > 0)
		ADD(first_handled, 1);
	else if (unhandled_stop(res.stop))
		ADD(first_unhandled, 1);
	if (v->cut == CUT_NONDET)
		ADD(cut_nondet, 1);
	else if (v->cut == CUT_OVERFLOW)
		ADD(cut_overflow, 1);
	else if (v->cut == CUT_REP)
		ADD(cut_rep, 1);
	else if (v->cut == CUT_SELF)
		ADD(cut_self, 1);

	if (!g_step || v->n == 0) {
		/* A long run (a big REP MOVS in the shadow) can cost more CPU
		 * than a sampling period: let the program run before the next. */
		v->end_ns = thread_ns();
		return;
	}
	/* Hand the same instructions to the hardware, one at a time. Memory
	 * the run read that has changed already was changed by someone else. */
	v->pre_raced = interp_shadow_raced(&v->sh, v->sh.nld, 0, 0) == 1;
	v->inputs_changed = 0;
	ADD(runs_stepped, 1);
	v->i = 0;
	v->rep_traps = 0;
	v->saved_mask = uc->uc_sigmask;
	set_step_mask(uc, &v->saved_mask);
	v->stepping = 1;
	uc->uc_mcontext.gregs[REG_EFL] |= TF_BIT;
	(void)sig;
	(void)si;
}

/* ----------------------------------------------------- comparison */

static const char *const kgpr[16] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

static void put_what(char *dst, const char *a, int num, const char *b)
{
	/* AS-safe "a<num>b" */
	size_t o = 0;
	for (; *a && o < 15; a++)
		dst[o++] = *a;
	if (num >= 0) {
		if (num >= 10 && o < 15)
			dst[o++] = (char)('0' + num / 10);
		if (o < 15)
			dst[o++] = (char)('0' + num % 10);
	}
	for (; b && *b && o < 15; b++)
		dst[o++] = *b;
	dst[o] = 0;
}

/* Which file is pc mapped from, and at what offset? Read from
 * /proc/self/maps with plain system calls (AS-safe); only done for a
 * mismatch record, so its cost does not matter. */
static uint64_t hexnum(const char **p)
{
	uint64_t v = 0;
	for (;; (*p)++) {
		char c = **p;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (d < 0)
			return v;
		v = v * 16 + (uint64_t)d;
	}
}

static void locate(uint64_t pc, char *image, size_t cap, uint64_t *off)
{
	char buf[4096], line[512];
	size_t ll = 0;
	ssize_t n;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	image[0] = 0;
	*off = 0;
	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof buf)) > 0) {
		for (ssize_t i = 0; i < n; i++) {
			if (buf[i] != '\n') {
				if (ll < sizeof line - 1)
					line[ll++] = buf[i];
				continue;
			}
			line[ll] = 0;
			ll = 0;
			const char *p = line;
			uint64_t lo = hexnum(&p);
			if (*p++ != '-')
				continue;
			uint64_t hi = hexnum(&p);
			if (pc < lo || pc >= hi)
				continue;
			while (*p == ' ')
				p++;
			while (*p && *p != ' ')       /* perms */
				p++;
			while (*p == ' ')
				p++;
			uint64_t foff = hexnum(&p);
			for (int f = 0; f < 2; f++) {  /* dev, inode */
				while (*p == ' ')
					p++;
				while (*p && *p != ' ')
					p++;
			}
			while (*p == ' ')
				p++;
			size_t k = 0;
			for (; p[k] && k < cap - 1; k++)
				image[k] = p[k];
			image[k] = 0;
			*off = pc - lo + foff;
			close(fd);
			return;
		}
	}
	close(fd);
}

struct cmp {
	struct verify_thread *v;
	const struct step *s;
	int items;
	int dry;                      /* count only, record nothing */
};

static void report(struct cmp *c, int kind, const char *what, int num, const char *what2,
		   uint64_t addr, const void *exp, const void *act, unsigned size)
{
	c->items++;
	if (c->dry || c->items > 4)     /* keep records for many instructions */
		return;
	uint64_t k = __atomic_fetch_add(&g_vf->nrecords, 1, __ATOMIC_RELAXED);
	if (k >= VERIFY_NRECORDS)
		return;
	struct preload_verify_record *r = &g_vf->rec[k];
	r->pc = c->s->pc;
	r->addr = addr;
	r->tid = c->v->tid;
	r->index = (uint32_t)c->v->i;
	r->mnemonic = c->s->mnemonic;
	r->len = c->s->len;
	r->kind = (uint8_t)kind;
	r->flags = c->v->rec_flags | (kind == VERIFY_K_MEM && c->s->atomic ? VERIFY_F_ATOMIC : 0);
	if (size > 64)
		size = 64;
	r->size = size;
	memcpy(r->bytes, c->s->bytes, c->s->len);
	put_what(r->what, what, num, what2);
	locate(r->pc, r->image, sizeof r->image, &r->file_off);
	if (size) {
		memcpy(r->expected, exp, size);
		memcpy(r->actual, act, size);
	}
}

static void cmp_bytes(struct cmp *c, int kind, const char *what, int num, const char *what2,
		      const uint8_t *e, const uint8_t *a, unsigned size)
{
	if (memcmp(e, a, size))
		report(c, kind, what, num, what2, 0, e, a, size);
}

static void compare_mem(struct cmp *c)
{
	const struct interp_shadow *sh = &c->v->sh;
	int pushf = c->s->mnemonic == ZYDIS_MNEMONIC_PUSHF || c->s->mnemonic == ZYDIS_MNEMONIC_PUSHFQ ||
		    c->s->mnemonic == ZYDIS_MNEMONIC_PUSHFD;

	for (uint32_t k = c->s->sh_lo; k < c->s->sh_hi; k++) {
		const struct interp_shadow_entry *e = &sh->e[k];
		for (uint32_t o = 0; o < e->size; o += 64) {
			uint8_t real[64], want[64];
			unsigned n = e->size - o < 64 ? e->size - o : 64;
			memcpy(want, sh->data + e->off + o, n);
			if (interp_mem_load(real, e->addr + o, n)) {
				report(c, VERIFY_K_MEM, "unreadable", -1, NULL, e->addr + o, want, want, 0);
				continue;
			}
			/* bytes a later store of the same instruction overwrote
			 * (a scatter's overlapping elements) are compared there */
			for (uint32_t k2 = k + 1; k2 < c->s->sh_hi; k2++) {
				const struct interp_shadow_entry *l = &sh->e[k2];
				for (unsigned i = 0; i < n; i++)
					if (e->addr + o + i - l->addr < l->size)
						want[i] = real[i];
			}
			if (pushf && o == 0 && n >= 3) {
				/* pushf stores the trap flag we set, and RF as 0 */
				real[1] &= (uint8_t)~(TF_BIT >> 8);
				want[1] &= (uint8_t)~(TF_BIT >> 8);
				real[2] &= (uint8_t)~(RF_BIT >> 16);
				want[2] &= (uint8_t)~(RF_BIT >> 16);
			}
			if (memcmp(real, want, n))
				report(c, VERIFY_K_MEM, "mem", -1, NULL, e->addr + o, want, real, n);
		}
	}
}

/* The hardware's pushf stored the trap flag we set: take it out of the
 * program's memory, where it would otherwise stay (and a later popf would
 * turn single-stepping on for the program). */
static void unset_pushed_tf(const struct verify_thread *v, const struct step *s)
{
	if (s->mnemonic != ZYDIS_MNEMONIC_PUSHF && s->mnemonic != ZYDIS_MNEMONIC_PUSHFQ &&
	    s->mnemonic != ZYDIS_MNEMONIC_PUSHFD)
		return;
	uint64_t sp = (uint64_t)v->act.gpr[INTERP_RSP];
	uint8_t b;
	if (interp_mem_load(&b, sp + 1, 1) == 0 && (b & (TF_BIT >> 8))) {
		b &= (uint8_t)~(TF_BIT >> 8);
		interp_mem_store(sp + 1, &b, 1);
	}
}

static int compare_pass(struct verify_thread *v, const struct step *s, int dry)
{
	const struct interp_state *e = &v->exp[v->i], *a = &v->act;
	struct cmp c = { .v = v, .s = s, .items = 0, .dry = dry };

	if (e->rip != a->rip)
		report(&c, VERIFY_K_RIP, "rip", -1, NULL, 0, &e->rip, &a->rip, 8);
	for (int r = 0; r < 16; r++)
		if (e->gpr[r] != a->gpr[r])
			report(&c, VERIFY_K_GPR, kgpr[r], -1, NULL, 0, &e->gpr[r], &a->gpr[r], 8);
	if ((e->rflags ^ a->rflags) & CMP_FLAGS) {
		uint64_t x = e->rflags & CMP_FLAGS, y = a->rflags & CMP_FLAGS;
		report(&c, VERIFY_K_FLAGS, "rflags", -1, NULL, 0, &x, &y, 8);
	}
	compare_mem(&c);
	uint64_t av = e->xstate_avail & a->xstate_avail;
	if (e->has_fpregs && a->has_fpregs) {
		if ((av & INTERP_XS_SSE) && e->mxcsr != a->mxcsr)
			report(&c, VERIFY_K_MXCSR, "mxcsr", -1, NULL, 0, &e->mxcsr, &a->mxcsr, 4);
		/* x87 control words (interp/x87.c); the registers are never
		 * written by the interpreter (x87 arithmetic stops a run) */
		if (av & INTERP_XS_X87) {
			static const char *const kw[3] = { "fcw", "fsw", "ftw" };
			for (int w = 0; w < 3; w++)
				cmp_bytes(&c, VERIFY_K_X87, kw[w], -1, NULL, e->x87 + 2 * w,
					  a->x87 + 2 * w, w == 2 ? 1 : 2);
		}
		for (int r = 0; r < 16; r++) {
			if (av & INTERP_XS_SSE)
				cmp_bytes(&c, VERIFY_K_VEC, "xmm", r, NULL, e->zmm[r].b, a->zmm[r].b, 16);
			if (av & INTERP_XS_YMM)
				cmp_bytes(&c, VERIFY_K_VEC, "ymm", r, ".hi", e->zmm[r].b + 16,
					  a->zmm[r].b + 16, 16);
			if (av & INTERP_XS_ZMM_H)
				cmp_bytes(&c, VERIFY_K_VEC, "zmm", r, ".hi", e->zmm[r].b + 32,
					  a->zmm[r].b + 32, 32);
		}
		if (av & INTERP_XS_HI16)
			for (int r = 16; r < 32; r++)
				cmp_bytes(&c, VERIFY_K_VEC, "zmm", r, NULL, e->zmm[r].b, a->zmm[r].b, 64);
		if (av & INTERP_XS_OPMASK)
			for (int r = 0; r < 8; r++)
				if (e->k[r] != a->k[r])
					report(&c, VERIFY_K_KMASK, "k", r, NULL, 0, &e->k[r], &a->k[r], 8);
	}
	return c.items;
}

/* Returns non-zero if the run must end here. */
static int compare(struct verify_thread *v, const struct step *s)
{
	if (!compare_pass(v, s, 1))
		return 0;
	/* Memory the shadow read that changed under the run where this
	 * thread cannot have changed it (before stepping began; before this
	 * instruction was stepped; pages it cannot write): the hardware saw
	 * other inputs, the difference says nothing. A change in writable memory during stepping may be this
	 * thread's own store that the interpreter missed: reported. */
	if (v->pre_raced || v->inputs_changed ||
	    interp_shadow_raced(&v->sh, s->ld_hi, s->sh_hi, 1) == 1) {
		ADD(raced, 1);
		return 1;
	}
	v->rec_flags = interp_shadow_raced(&v->sh, s->ld_hi, s->sh_hi, 0) == 1
			       ? VERIFY_F_LOADS_CHANGED : 0;
	int items = compare_pass(v, s, 0);
	ADD(mismatches, 1);
	ADD(items, (uint64_t)items);
	return items;
}

static void end_stepping(struct verify_thread *v, ucontext_t *uc)
{
	uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)TF_BIT;
	uc->uc_sigmask = v->saved_mask;
	v->stepping = 0;
	v->end_ns = thread_ns();
}

/* ------------------------------------------------ faults and traps */

/* A fault that is not an interpreter probe's (faults.c calls this before
 * handing it to the program): one the hardware took while stepping. */
static void on_fault(int sig, siginfo_t *si, ucontext_t *uc)
{
	struct verify_thread *v = g_vt;

	if (v && v->stepping && g_vf &&
	    (uint64_t)uc->uc_mcontext.gregs[REG_RIP] == v->steps[v->i].pc &&
	    (v->pre_raced || v->inputs_changed ||
	     interp_shadow_raced(&v->sh, v->steps[v->i].ld_hi, v->steps[v->i].sh_hi, 1) == 1)) {
		ADD(raced, 1);     /* memory changed (unmapped?) under the run */
	} else if (v && v->stepping && g_vf &&
		   (uint64_t)uc->uc_mcontext.gregs[REG_RIP] == v->steps[v->i].pc) {
		/* The hardware faulted on an instruction the shadow ran. */
		struct cmp c = { .v = v, .s = &v->steps[v->i], .items = 0 };
		v->rec_flags = interp_shadow_raced(&v->sh, v->steps[v->i].ld_hi,
						   v->steps[v->i].sh_hi, 0) == 1 ? VERIFY_F_LOADS_CHANGED : 0;
		report(&c, VERIFY_K_FAULT, sig == SIGSEGV ? "SIGSEGV" : "SIGBUS", -1, NULL,
		       (uint64_t)si->si_addr, NULL, NULL, 0);
		ADD(native_faults, 1);
		ADD(mismatches, 1);
		ADD(items, 1);
	}
	if (v && v->stepping)
		end_stepping(v, uc);
}

static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	struct verify_thread *v = g_vt;
	int saved = errno;

	int code = si->si_code;
	if (g_inject == 4 && v && v->stepping && code == TRAP_TRACE && ++v->inject_traps % 7 == 0)
		code = TRAP_BRKPT;
	int step = code == TRAP_TRACE || (code == TRAP_BRKPT && (uc->uc_mcontext.gregs[REG_EFL] & TF_BIT));
	if (!v || !v->stepping || !step || !g_vf) {
		preload_faults_forward(sig, si, uc);
		goto out;
	}
	ADD(traps, 1);
	if (code != TRAP_TRACE)
		ADD(traps_unflagged, 1);
	const struct step *s = &v->steps[v->i];
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	if (s->rep && rip == s->pc && ++v->rep_traps < MAX_REP_TRAPS &&
	    ((uint64_t)uc->uc_mcontext.gregs[REG_RCX] != v->exp[v->i].gpr[INTERP_RCX] ||
	     v->exp[v->i].rip != s->pc))
		goto out;               /* one more iteration of a REP string op */
	v->rep_traps = 0;
	interp_from_ucontext(&v->act, uc);
	unset_pushed_tf(v, s);
	ADD(compared, 1);
	int bad = compare(v, s);
	v->i++;
	if (bad || v->i >= v->n) {
		end_stepping(v, uc);
	} else {
		/* What the next instruction will read, checked just before
		 * the hardware reads it: another thread may have written it
		 * since the shadow did (a lock word, a shared counter). */
		const struct step *nx = &v->steps[v->i];
		v->inputs_changed = nx->ld_hi != UINT32_MAX &&
				    interp_shadow_inputs_changed(&v->sh, nx->ld_lo, nx->ld_hi, nx->sh_lo);
		uc->uc_mcontext.gregs[REG_EFL] |= (greg_t)TF_BIT;
	}
out:
	errno = saved;
}

/* --------------------------------------------------------- set-up */

/* A thread's buffers go with it; but if the exiting code is itself being
 * stepped (a sample landed in it), they stay: the traps still need them. */
static void on_thread_exit(void *p)
{
	struct verify_thread *v = p;
	if (g_vt != v || v->stepping)
		return;
	g_vt = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);   /* a handler now sees NULL */
	munmap(v, v->map_size);
}

int preload_verify_init(void)
{
	const char *s;
	int rc;

	if ((rc = interp_init()) < 0)
		return rc;
	g_len = g_vprof.cfg.interp_len;
	/* Half a mean period; the period is ns for the clocks, events for
	 * counters (taken as 3 per ns). */
	g_cool_ns = g_vprof.backend == UPCALL_EV_CYCLES || g_vprof.backend == UPCALL_EV_INSTRUCTIONS
			    ? g_vprof.period / 6 : g_vprof.period / 2;
	if (g_len > VERIFY_MAX_LEN)
		g_len = VERIFY_MAX_LEN;
	s = getenv("VPROF_VERIFY_STEP");
	if (s && !strcmp(s, "0"))
		g_step = 0;
	s = getenv("VPROF_VERIFY_INJECT");
	g_inject = s && s[0] >= '1' && s[0] <= '4' && !s[1] ? s[0] - '0' : 0;
	if ((rc = open_file()) < 0)
		return rc;

	if ((rc = preload_faults_init(on_fault, on_trap)) < 0)
		return rc;
	pthread_atfork(NULL, NULL, on_fork_child);
	pthread_key_create(&g_vkey, on_thread_exit);
	return 0;
}

void preload_verify_thread_begin(void)
{
	if (g_vt) {            /* fork child: the parent's buffers carry over */
		g_vt->tid = (uint32_t)syscall(SYS_gettid);
		return;
	}
	size_t sz = (sizeof(struct verify_thread) + 4095) & ~(size_t)4095;
	size_t isz = (interp_thread_size() + 4095) & ~(size_t)4095;
	void *m = mmap(NULL, sz + isz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return;            /* this thread is sampled but not verified */
	struct verify_thread *v = m;
	v->ith = (struct interp_thread *)((char *)m + sz);
	v->map_size = sz + isz;
	interp_thread_init(v->ith);
	v->tid = (uint32_t)syscall(SYS_gettid);
	g_vt = v;
	pthread_setspecific(g_vkey, v);
}
