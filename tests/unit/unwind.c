/*
 * preload/unwind.c (the cfi unwinder) against libgcc's _Unwind_Backtrace,
 * at signal time inside Debian's library code: a 20 kHz CLOCK_MONOTONIC
 * timer signals two threads (SA_ONSTACK, as vprof's handler) while they
 * run, for 1.5 s of their CPU each, qsort with a callback, memcpy,
 * strtod, snprintf, libm (exp, log, pow, sin, cbrt), libstdc++'s
 * __cxa_demangle and a SIGUSR1 handler of the program's own doing the
 * same (so the unwind goes through the kernel's signal frame twice).
 * At every signal the handler unwinds the ucontext with preload_cfi_backtrace
 * and libgcc from the handler through the signal frame, and the two
 * lists of PCs from the interrupted one on must be equal: any difference
 * fails (the first ones are printed with their symbols); so does a walk
 * that differs with the frame-recipe cache off (retired now and then, as
 * by dlclose). Also checked:
 * enough signals landed in libc, in libm, in the program's handler (the
 * walk through __restore_rt), and stacks are deep; a stack read off the
 * thread's stack is refused; preload/value_sample.c's one step gives the caller.
 */
#include "preload/unwind.c"
#include "tests/unit/check.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <unwind.h>

#define MAXF 64
#define KEEP 6

struct bt {
	uint64_t ip[MAXF + 16];
	int n;
};

static _Unwind_Reason_Code collect(struct _Unwind_Context *ctx, void *arg)
{
	struct bt *b = arg;
	/* An interrupted PC (libgcc's ip_before_insn) plus one, as
	 * preload_cfi_backtrace stores it past the leaf. */
	int before = 0;
	uint64_t ip = _Unwind_GetIPInfo(ctx, &before);
	if (!ip)
		return _URC_END_OF_STACK;
	b->ip[b->n++] = ip + (before != 0);
	return b->n == MAXF + 16 ? _URC_END_OF_STACK : _URC_NO_REASON;
}

static struct {
	uintptr_t lo, hi;
} g_libc, g_libm, g_cxx;
/* libstdc++'s demangler: C linkage, recursive descent, real C++ code. */
static char *(*g_demangle)(const char *, char *, size_t *, int *);
static volatile long n_two, n_cache_diff, n_total, n_match, n_diff, n_lost, n_libc, n_libm, n_cxx, n_usr, n_deep, n_step_ok;
static volatile sig_atomic_t in_usr;
static __thread int t_in_usr;
static struct {
	uint64_t a[MAXF], b[MAXF];
	int na, nb;
} g_bad[KEEP];

static int in(uint64_t pc, uintptr_t lo, uintptr_t hi) { return pc >= lo && pc < hi; }

static void on_prof(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	uint64_t a[MAXF];
	int more;
	unsigned na = preload_cfi_backtrace(uc, a, MAXF, &more);
	/* The same walk without the recipe cache: every frame the slow way. */
	uint64_t a2[MAXF];
	g_cfi_nocache = 1;
	unsigned na2 = preload_cfi_backtrace(uc, a2, MAXF, &more);
	g_cfi_nocache = 0;
	if (na2 != na || memcmp(a, a2, na * 8))
		__atomic_add_fetch(&n_cache_diff, 1, __ATOMIC_RELAXED);
	struct bt b = { .n = 0 };
	_Unwind_Backtrace(collect, &b);
	uint64_t rip = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	int i;
	__atomic_add_fetch(&n_total, 1, __ATOMIC_RELAXED);
	/* SIGPROF's PC: libgcc marks it interrupted; preload_cfi_backtrace's leaf
	 * is the PC itself. */
	for (i = 0; i < b.n && i < 8 && b.ip[i] != rip + 1; i++)
		;
	if (i >= b.n || i >= 8) {
		__atomic_add_fetch(&n_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	int nb = b.n - i;
	if (nb > MAXF)
		nb = MAXF;
	int same = (int)na == nb;
	for (int k = 0; same && k < nb; k++)
		same = a[k] + (k == 0) == b.ip[i + k];
	if (!same) {
		long d = __atomic_fetch_add(&n_diff, 1, __ATOMIC_RELAXED);
		if (d < KEEP) {
			memcpy(g_bad[d].a, a, na * 8);
			memcpy(g_bad[d].b, b.ip + i, (size_t)nb * 8);
			g_bad[d].na = (int)na;
			g_bad[d].nb = nb;
		}
		return;
	}
	__atomic_add_fetch(&n_match, 1, __ATOMIC_RELAXED);
	if (in(rip, g_libc.lo, g_libc.hi))
		__atomic_add_fetch(&n_libc, 1, __ATOMIC_RELAXED);
	if (in(rip, g_libm.lo, g_libm.hi))
		__atomic_add_fetch(&n_libm, 1, __ATOMIC_RELAXED);
	if (in(rip, g_cxx.lo, g_cxx.hi))
		__atomic_add_fetch(&n_cxx, 1, __ATOMIC_RELAXED);
	if (t_in_usr && na >= 6)
		__atomic_add_fetch(&n_usr, 1, __ATOMIC_RELAXED);
	if (na >= 6)
		__atomic_add_fetch(&n_deep, 1, __ATOMIC_RELAXED);
	/* preload/value_sample.c's use: one step from the ucontext is the caller's frame. */
	struct preload_cfi_cursor c;
	if (na >= 2)
		__atomic_add_fetch(&n_two, 1, __ATOMIC_RELAXED);
	if (na >= 2 && preload_cfi_init_ucontext(&c, uc) == 0 && preload_cfi_step(&c) == 1 &&
	    c.reg[CFI_RIP] + (uint64_t)(c.exact != 0) == a[1])
		__atomic_add_fetch(&n_step_ok, 1, __ATOMIC_RELAXED);
}

static volatile double sink;
static int cmp(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

static void __attribute__((noinline)) libc_work(unsigned *seed)
{
	static __thread int v[3000];
	static __thread char src[1 << 18], dst[1 << 18];
	char buf[128];
	for (int i = 0; i < 3000; i++)
		v[i] = (int)rand_r(seed);
	qsort(v, 3000, sizeof(int), cmp);
	for (int i = 0; i < 20; i++)
		memcpy(dst, src + (i & 7), sizeof(src) - 8);
	for (int i = 0; i < 300; i++) {
		snprintf(buf, sizeof(buf), "%.17g %d %s", v[i] / 7.0, v[i], "x");
		sink += strtod(buf, NULL);
	}
	for (int i = 0; g_demangle && i < 40; i++) {
		int st;
		char *d = g_demangle("_ZNSt3mapINSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEESt6vectorIiSaIiEE"
				     "St4lessIS5_ESaISt4pairIKS5_S8_EEE6insertERKSD_", NULL, NULL, &st);
		sink += d ? d[3] : 0;
		free(d);
	}
}

static void __attribute__((noinline)) libm_work(void)
{
	double s = 0;
	for (int i = 1; i < 20000; i++)
		s += exp(i * 1e-4) + log(i) + pow(i, 0.3) + sin(i) + cbrt(i);
	sink += s;
}

static void on_usr(int sig)
{
	unsigned seed = 7;
	t_in_usr = 1;
	in_usr = 1;
	libc_work(&seed);
	libm_work();
	t_in_usr = 0;
}

/* The thread's CPU time: each thread runs for secs of its own CPU, so
 * that the counts checked below do not shrink when the machine is busy
 * (a load average of 30 on 2 CPUs leaves a thread about a fifteenth of
 * one, and 1.5 s of wall clock ~1000 signals where 2000 are wanted). The
 * timer stays on the wall clock: a CPU-time timer fires at most once per
 * tick. */
static double cpu_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *worker(void *arg)
{
	double secs = *(double *)arg;
	unsigned seed = (unsigned)(uintptr_t)&seed;
	stack_t ss = { .ss_sp = malloc(1 << 16), .ss_size = 1 << 16 };
	sigaltstack(&ss, NULL);
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD_ID, .sigev_signo = SIGPROF };
	ev._sigev_un._tid = (pid_t)syscall(SYS_gettid);
	timer_t t;
	if (timer_create(CLOCK_MONOTONIC, &ev, &t) < 0)
		return NULL;
	struct itimerspec it = { { 0, 50000 }, { 0, 50000 } };
	timer_settime(t, 0, &it, NULL);
	double end = cpu_now() + secs;
	for (int k = 0; cpu_now() < end; k++) {
		libc_work(&seed);
		libm_work();
		if (k % 3 == 0)
			raise(SIGUSR1);
		if (k % 5 == 0)
			preload_cfi_forget();   /* as a dlclose does: every cached recipe retired */
	}
	timer_delete(t);
	return NULL;
}

static void range_of(void *sym, uintptr_t *lo, uintptr_t *hi)
{
	struct dl_find_object fo;
	if (_dl_find_object(sym, &fo) == 0) {
		*lo = (uintptr_t)fo.dlfo_map_start;
		*hi = (uintptr_t)fo.dlfo_map_end;
	}
}

static void print_pc(const char *tag, uint64_t pc)
{
	Dl_info di;
	if (dladdr((void *)(uintptr_t)pc, &di) && di.dli_fname)
		printf("    %s %#lx %s+%#lx (%s)\n", tag, (unsigned long)pc, di.dli_sname ? di.dli_sname : "?",
		       (unsigned long)(pc - (uintptr_t)(di.dli_sname ? di.dli_saddr : di.dli_fbase)), di.dli_fname);
	else
		printf("    %s %#lx\n", tag, (unsigned long)pc);
}

/* A stack read outside [lo, hi) is refused, not made. */
static void bounds_check(void)
{
	uint64_t words[4] = { 1, 2, 3, 4 }, v = 0;
	struct preload_cfi_cursor c = { .lo = (uintptr_t)&words[1], .hi = (uintptr_t)&words[3] };
	int ok = stack_read(&c, (uintptr_t)&words[1], &v) == 0 && v == 2 &&
		 stack_read(&c, (uintptr_t)&words[2], &v) == 0 && v == 3 &&
		 stack_read(&c, (uintptr_t)&words[0], &v) < 0 && stack_read(&c, (uintptr_t)&words[3], &v) < 0 &&
		 stack_read(&c, (uintptr_t)&words[2] + 4, &v) < 0;
	CHECK(ok, "stack reads inside [lo, hi) are made, outside (below, at hi, straddling) refused");
}

/* The PLT's CFA is an expression (rsp + 8, + 8 more from byte 11 of an
 * entry, after its push): found in this program's own .eh_frame_hdr, a
 * frame at an entry's first byte and at its byte 11 steps to the return
 * address on a stack of our making. */
static void plt_check(void)
{
	struct dl_find_object fo;
	if (_dl_find_object((void *)plt_check, &fo) != 0) {
		CHECK(0, "_dl_find_object finds this program");
		return;
	}
	const uint8_t *hdr = fo.dlfo_eh_frame;
	if (hdr[1] != (PE_pcrel | PE_sdata4) || hdr[2] != PE_udata4) {
		CHECK(0, "this program's .eh_frame_hdr has ld's encodings (%#x %#x)", hdr[1], hdr[2]);
		return;
	}
	uint64_t count = *(const uint32_t *)(hdr + 8);
	const int32_t *tab = (const int32_t *)(hdr + 12);
	uint64_t plt = 0;
	for (uint64_t i = 0; i < count && !plt; i++) {
		struct fde f;
		uint64_t at = (uint64_t)(uintptr_t)hdr + tab[2 * i];
		if (find_fde(at, hdr, fo.dlfo_map_end, &f) < 0 || f.range < 48)
			continue;
		struct regstate init, st;
		memset(&init, 0, sizeof(init));
		if (run_cfa(&init, NULL, f.cie_insns, f.cie_end, &f, f.begin, UINT64_MAX) < 0)
			continue;
		st = init;
		if (run_cfa(&st, &init, f.insns, f.end, &f, f.begin, f.begin + 32) == 0 && st.cfa_how == CFA_EXPR)
			plt = f.begin + 32;
	}
	if (hdr[3] != (PE_datarel | PE_sdata4) || !plt) {
		CHECK(0, "this program's .plt has an FDE with a CFA expression");
		return;
	}
	uint64_t stk[4] = { 0x1111, 0x2222, 0, 0 };
	struct preload_cfi_cursor c = { .lo = (uintptr_t)stk, .hi = (uintptr_t)(stk + 4), .exact = 1 };
	c.valid = 1u << CFI_RSP | 1u << CFI_RIP;
	c.reg[CFI_RSP] = (uintptr_t)stk;
	c.reg[CFI_RIP] = plt;
	int r1 = preload_cfi_step(&c);
	int ok1 = r1 == 1 && c.reg[CFI_RIP] == 0x1111 && c.reg[CFI_RSP] == (uintptr_t)(stk + 1);
	c.valid = 1u << CFI_RSP | 1u << CFI_RIP;
	c.exact = 1;
	c.reg[CFI_RSP] = (uintptr_t)stk;
	c.reg[CFI_RIP] = plt + 11;
	int r2 = preload_cfi_step(&c);
	int ok2 = r2 == 1 && c.reg[CFI_RIP] == 0x2222 && c.reg[CFI_RSP] == (uintptr_t)(stk + 2);
	CHECK(ok1 && ok2, "a PLT entry (CFA expression): byte 0 returns to stack[0], byte 11 to stack[1] (%d %d)",
	      r1, r2);
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.5;
	preload_cfi_init();
	range_of((void *)qsort, &g_libc.lo, &g_libc.hi);
	range_of((void *)cbrt, &g_libm.lo, &g_libm.hi);
	void *cxx = dlopen("libstdc++.so.6", RTLD_NOW | RTLD_LOCAL);
	if (cxx && (*(void **)&g_demangle = dlsym(cxx, "__cxa_demangle")))
		range_of((void *)g_demangle, &g_cxx.lo, &g_cxx.hi);
	bounds_check();
	plt_check();
	struct sigaction sa = { .sa_sigaction = on_prof, .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	struct sigaction su = { .sa_handler = on_usr, .sa_flags = SA_RESTART };
	sigemptyset(&su.sa_mask);
	sigaction(SIGUSR1, &su, NULL);
	/* Warm libgcc (its first use may allocate) outside a handler. */
	struct bt b = { .n = 0 };
	_Unwind_Backtrace(collect, &b);
	pthread_t th;
	pthread_create(&th, NULL, worker, &secs);
	worker(&secs);
	pthread_join(th, NULL);
	CHECK(n_diff == 0, "cfi and libgcc give the same frames at every signal (%ld of %ld differ)", n_diff,
	      n_total);
	for (int d = 0; d < KEEP && d < n_diff; d++) {
		printf("  difference %d: cfi %d frames, libgcc %d\n", d, g_bad[d].na, g_bad[d].nb);
		for (int k = 0; k < g_bad[d].na || k < g_bad[d].nb; k++) {
			if (k < g_bad[d].na)
				print_pc("cfi   ", g_bad[d].a[k]);
			if (k < g_bad[d].nb)
				print_pc("libgcc", g_bad[d].b[k]);
		}
	}
	CHECK(n_cache_diff == 0, "with and without the recipe cache, the same frames (%ld differ)", n_cache_diff);
	CHECK(n_lost == 0, "libgcc found the interrupted PC through the signal frame every time (%ld lost)", n_lost);
	CHECK(n_total >= 2000, "enough signals (%ld)", n_total);
	CHECK(n_libc >= 200, "interrupted in libc %ld times, stacks equal", n_libc);
	CHECK(n_libm >= 100, "interrupted in libm %ld times, stacks equal", n_libm);
	CHECK(n_cxx >= 100, "interrupted in libstdc++ (__cxa_demangle) %ld times, stacks equal", n_cxx);
	CHECK(n_usr >= 50, "interrupted in the program's SIGUSR1 handler %ld times, equal through __restore_rt",
	      n_usr);
	CHECK(n_deep * 2 >= n_match && n_match > 0, "stacks of 6 frames or more: %ld of %ld", n_deep, n_match);
	CHECK(n_step_ok == n_two && n_two > 0, "one preload_cfi_step from the ucontext gives frame 2 (preload/value_sample.c's return address): %ld of %ld",
	      n_step_ok, n_two);
	return g_fail;
}
