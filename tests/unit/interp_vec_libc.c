/* tests/unit/interp_vec_libc.c — glibc's string, memory and math functions, as
 * this CPU's ifuncs select them (here the EVEX/AVX-512 variants), run whole
 * in the interpreter and natively from the same state.
 *
 * A call to the function (call *%r11) is run natively by a trampoline that
 * loads and saves all 32 zmm, k0-k7, MXCSR, GPRs and RFLAGS, and in the
 * interpreter from the same state until the return lands back after the
 * call. Arguments point into two data pages followed by a PROT_NONE guard
 * page, with strings ending near the guard page so that the functions'
 * page-cross paths and masked loads run. Compared: every register bit,
 * flags, and the data pages. Also printed: how many instructions were
 * interpreted and, when a run stopped early, on which mnemonic.
 *
 * Also libm (here its FMA variants), with special and random doubles:
 * results, MXCSR flags and all registers must match.
 *
 * Usage: interp_vec_libc [runs-per-function [seed [filter]]]
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>
#include <math.h>
#include <sys/mman.h>
#include <ucontext.h>
#include "interp/interp.h"

#include "tests/unit/vec_native.h"
#include "tests/unit/xorshift.h"


static struct interp_thread *g_th;
static uint64_t g_ret;
static long g_count[ZYDIS_MNEMONIC_MAX_VALUE + 1];

static int obs_insn(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	(void)arg;
	g_count[r->insn->mnemonic]++;
	return st->rip == g_ret;
}

/* Interpret from io until the call returns. Returns the stop reason
 * (INTERP_STOP_OBSERVER when it returned) and the instructions run. */
static int run_interp(const uint8_t *b, unsigned len, struct vstate *io, long *n,
		      uint16_t *stop_mn)
{
	static struct interp_state st;
	struct interp_observer obs = { obs_insn, NULL, 0 };
	struct interp_result r;

	if (!g_th) {
		g_th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		interp_thread_init(g_th);
	}
	memset(&st, 0, sizeof st);
	memcpy(st.zmm, io->zmm, sizeof st.zmm);
	memcpy(st.k, io->k, sizeof st.k);
	memcpy(st.gpr, io->gpr, sizeof st.gpr);
	st.rflags = io->rflags;
	st.mxcsr = io->mxcsr;
	st.mxcsr_mask = 0xffff;
	st.rip = place(b, len);
	g_ret = st.rip + len;
	st.seg_valid = 0;
	st.has_fpregs = 1;
	st.xstate_avail = INTERP_XS_ALL;
	st.xstate_bv = INTERP_XS_ALL;
	interp_run(&st, g_th, 1000000, &obs, &r);
	memcpy(io->zmm, st.zmm, sizeof st.zmm);
	memcpy(io->k, st.k, sizeof st.k);
	memcpy(io->gpr, st.gpr, sizeof st.gpr);
	io->rflags = st.rflags;
	io->mxcsr = st.mxcsr;
	*n = r.executed;
	*stop_mn = r.stop_mnemonic;
	return r.stop;
}

static uint64_t rnd_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
	return xorshift64(&rnd_state);
}

/* A position for an object of n bytes: anywhere, or ending right at the
 * guard page, or at a page end minus a little. */
static uint64_t where(size_t n)
{
	size_t off;

	if (n >= DATA_SIZE)
		n = DATA_SIZE - 1;
	switch (rnd() % 4) {
	case 0: off = DATA_SIZE - n; break;
	case 1: off = 4096 - rnd() % 64; if (off + n > DATA_SIZE) off = DATA_SIZE - n; break;
	default: off = rnd() % (DATA_SIZE - n + 1); break;
	}
	return (uint64_t)g_data + off;
}

static size_t rlen(void)
{
	switch (rnd() % 4) {
	case 0: return rnd() % 16;
	case 1: return rnd() % 80;
	case 2: return rnd() % 300;
	default: return rnd() % 3000;
	}
}

static void fill_str(uint8_t *p, size_t n, int alpha)
{
	for (size_t i = 0; i < n; i++)
		p[i] = alpha ? 'a' + rnd() % alpha : 1 + rnd() % 255;
}

enum { A_S, A_SC, A_SS, A_SSN, A_MC, A_MCN, A_MMN, A_DS, A_DSN, A_WS, A_WSS, A_D, A_F };

struct fn {
	const char *name;
	void *addr;
	int args;
};

#define FN(f, a) { #f, (void *)f, a }

/* Set up the arguments of one call in s (rdi, rsi, rdx). */
static void args(const struct fn *f, struct vstate *s)
{
	size_t n = rlen(), m = rlen();
	int alpha = rnd() % 2 ? 3 : 0;
	uint64_t a, b;

	memset(g_data, 'x', DATA_SIZE);
	switch (f->args) {
	case A_S:          /* string */
	case A_SC:         /* string, char */
		a = where(n + 1);
		fill_str((uint8_t *)a, n, alpha);
		((uint8_t *)a)[n] = 0;
		s->gpr[7] = a;
		s->gpr[6] = rnd() % 4 ? 'a' + rnd() % 4 : rnd() % 4 ? 0 : rnd() & 0xff;
		s->gpr[2] = rnd() % 2 ? n + 1 : rnd() % (n + 2);
		if (f->args == A_SC && !strcmp(f->name, "rawmemchr"))
			((uint8_t *)a)[n] = (uint8_t)s->gpr[6];   /* it must be there */
		break;
	case A_SS:         /* two strings, often sharing a prefix */
	case A_SSN: {
		size_t common = rnd() % 2 ? n : rnd() % (n + 1);
		a = where(n + 1);
		fill_str((uint8_t *)a, n, alpha);
		((uint8_t *)a)[n] = 0;
		b = where(m + 1 > common + 1 ? m + 1 : common + 1);
		if ((b < a && b + m + 1 > a) || (a < b && a + n + 1 > b))
			b = a;   /* overlapping: compare with itself */
		else {
			size_t bl = m > common ? m : common;
			fill_str((uint8_t *)b, bl, alpha);
			memcpy((void *)b, (void *)a, common < n ? common : n);
			((uint8_t *)b)[bl] = 0;
		}
		s->gpr[7] = a;
		s->gpr[6] = b;
		s->gpr[2] = rnd() % 3 ? rnd() % (n + 40) : ~0ull >> 1;
		break;
	}
	case A_MC:         /* memory, char, length */
	case A_MCN:
		a = where(n);
		fill_str((uint8_t *)a, n, alpha ? alpha : 255);
		s->gpr[7] = a;
		s->gpr[6] = rnd() % 4 ? 'a' + rnd() % 4 : rnd() & 0xff;
		s->gpr[2] = n;
		break;
	case A_MMN:        /* two buffers, length (memcmp) */
		a = where(n);
		b = where(n);
		fill_str((uint8_t *)a, n, alpha ? alpha : 255);
		if (!((b < a && b + n > a) || (a < b && a + n > b))) {
			memcpy((void *)b, (void *)a, n);
			if (n && rnd() % 2)
				((uint8_t *)b)[rnd() % n] ^= 1 << (rnd() % 8);
		}
		s->gpr[7] = a;
		s->gpr[6] = b;
		s->gpr[2] = n;
		break;
	case A_DS:         /* dst, src string (strcpy) */
	case A_DSN:        /* dst, src, n (memcpy/memmove) */
		b = where(n + 1);
		fill_str((uint8_t *)b, n, alpha);
		((uint8_t *)b)[n] = 0;
		a = f->args == A_DSN && rnd() % 3 == 0 ? b + (int64_t)(rnd() % 64) - 32 : where(n + 1);
		if (a < (uint64_t)g_data || a + n + 1 > (uint64_t)g_data + DATA_SIZE)
			a = where(n + 1);
		if (f->args == A_DS && ((a <= b && a + n + 1 > b) || (b <= a && b + n + 1 > a)))
			a = b;     /* strcpy onto itself is harmless enough */
		if (!strcmp(f->name, "strncat")) {
			/* dst: a string of its own with room after it */
			size_t dl = n / 2;
			a = where(2 * n + 2);
			if ((a <= b && a + 2 * n + 2 > b) || (b <= a && b + n + 1 > a)) {
				b = a + 2 * n + 2 <= (uint64_t)g_data + DATA_SIZE / 2 ?
				    (uint64_t)g_data + DATA_SIZE / 2 : (uint64_t)g_data;
				fill_str((uint8_t *)b, n, alpha);
				((uint8_t *)b)[n] = 0;
				if ((a <= b && a + 2 * n + 2 > b) || (b <= a && b + n + 1 > a))
					a = b;      /* tiny strings: cat onto itself, n = 0 */
			}
			if (a != b) {
				fill_str((uint8_t *)a, dl, alpha);
				((uint8_t *)a)[dl] = 0;
			} else {
				n = 0;
			}
		}
		s->gpr[7] = a;
		s->gpr[6] = b;
		s->gpr[2] = n;
		break;
	case A_D:          /* doubles in xmm0, xmm1; an int in edi */
	case A_F: {        /* floats */
		static const double sp[] = { 0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-310, -1e-310,
					     1e308, -1e308, 710.0, -745.5, 1e-20, 3.141592653589793,
					     1.0 / 0.0, -1.0 / 0.0, 0.0 / 0.0, 1e22, 88.7, -103.9 };
		for (int r = 0; r < 2; r++) {
			double d;
			switch (rnd() % 4) {
			case 0: d = sp[rnd() % (sizeof sp / sizeof sp[0])]; break;
			case 1: d = ((double)(int64_t)rnd() / 9.2e18) * 10; break;
			case 2: d = ((double)(int64_t)rnd() / 9.2e18) * 1000; break;
			default: d = ldexp((double)(rnd() % 1000000) / 1e6, (int)(rnd() % 200) - 100); break;
			}
			memset(s->zmm[r], 0, 16);
			if (f->args == A_F) {
				float fl = (float)d;
				memcpy(s->zmm[r], &fl, 4);
			} else {
				memcpy(s->zmm[r], &d, 8);
			}
		}
		s->gpr[7] = rnd() % 40;
		if (rnd() % 4 == 0)     /* other rounding, FTZ, DAZ, sticky flags */
			s->mxcsr = 0x1f80 | (uint32_t)(rnd() % 4) << 13 | (uint32_t)(rnd() & 0x803f);
		if (!strcmp(f->name, "frexp") || !strcmp(f->name, "modf"))
			s->gpr[7] = (uint64_t)g_data + 8 * (rnd() % (DATA_SIZE / 8));
		break;
	}
	case A_WSS: {      /* two wide strings sharing a prefix, length */
		size_t i, k;
		n %= DATA_SIZE / 8 - 2;
		a = where(4 * n + 4) & ~3ull;
		b = where(4 * n + 4) & ~3ull;
		if ((a <= b && a + 4 * n + 4 > b) || (b <= a && b + 4 * n + 4 > a))
			b = a;
		k = rnd() % (n + 1);
		for (i = 0; i < n; i++) {
			uint32_t c = 1 + rnd() % (rnd() % 2 ? 3 : 70000);
			((uint32_t *)a)[i] = c;
			if (b != a)
				((uint32_t *)b)[i] = i < k ? c : 1 + rnd() % 3;
		}
		((uint32_t *)a)[n] = 0;
		((uint32_t *)b)[n] = 0;
		s->gpr[7] = a;
		s->gpr[6] = b;
		s->gpr[2] = rnd() % 2 ? n + 1 : rnd() % (n + 2);
		break;
	}
	case A_WS:         /* wide string */
		n %= DATA_SIZE / 4 - 2;
		a = where(4 * n + 4) & ~3ull;
		for (size_t i = 0; i < n; i++)
			((uint32_t *)a)[i] = 1 + rnd() % 70000;
		((uint32_t *)a)[n] = 0;
		s->gpr[7] = a;
		s->gpr[6] = 1 + rnd() % 4;
		s->gpr[2] = n;
		break;
	}
}

static void *my_memset(void *d, int c, size_t n) { return memset(d, c, n); }

int main(int argc, char **argv)
{
	long runs = argc > 1 ? atol(argv[1]) : 300;
	const char *filter = argc > 3 ? argv[3] : NULL;
	static const uint8_t call_r11[] = { 0x41, 0xff, 0xd3 };
	static uint8_t stack[65536] __attribute__((aligned(64)));
	static uint8_t dsave[DATA_SIZE], dnat[DATA_SIZE];
	static const struct fn fns[] = {
		FN(strlen, A_S), FN(strnlen, A_SC), FN(strchr, A_SC), FN(strrchr, A_SC),
		FN(rawmemchr, A_SC), FN(strchrnul, A_SC), FN(memchr, A_MC), FN(memrchr, A_MC),
		FN(strcmp, A_SS), FN(strncmp, A_SSN), FN(memcmp, A_MMN), FN(bcmp, A_MMN),
		FN(strcasecmp, A_SS), FN(strncasecmp, A_SSN),
		FN(strcpy, A_DS), FN(stpcpy, A_DS), FN(strncpy, A_DSN),
		FN(memcpy, A_DSN), FN(memmove, A_DSN), FN(mempcpy, A_DSN),
		{ "memset", (void *)my_memset, A_MCN }, FN(memset, A_MCN),
		FN(wcslen, A_WS), FN(wcschr, A_WS), FN(wmemset, A_WS), FN(wcsnlen, A_WS),
		FN(wcsrchr, A_WS), FN(wmemchr, A_WS), FN(wcscmp, A_WSS), FN(wcsncmp, A_WSS),
		FN(wmemcmp, A_WSS), FN(stpncpy, A_DSN), FN(strncat, A_DSN),
		FN(strspn, A_SS), FN(strcspn, A_SS), FN(strpbrk, A_SS), FN(strstr, A_SS),
		FN(exp, A_D), FN(log, A_D), FN(pow, A_D), FN(sin, A_D), FN(cos, A_D),
		FN(tan, A_D), FN(atan, A_D), FN(atan2, A_D), FN(exp2, A_D), FN(log2, A_D),
		FN(log10, A_D), FN(cbrt, A_D), FN(floor, A_D), FN(ceil, A_D), FN(trunc, A_D),
		FN(round, A_D), FN(rint, A_D), FN(nearbyint, A_D), FN(sqrt, A_D), FN(hypot, A_D),
		FN(fmod, A_D), FN(tanh, A_D), FN(erf, A_D), FN(asin, A_D), FN(expm1, A_D),
		FN(log1p, A_D), FN(ldexp, A_D), FN(frexp, A_D), FN(modf, A_D),
		FN(expf, A_F), FN(logf, A_F), FN(powf, A_F), FN(sinf, A_F), FN(cosf, A_F),
		FN(floorf, A_F), FN(sqrtf, A_F), FN(atan2f, A_F), FN(exp2f, A_F), FN(log2f, A_F),
	};
	int nfail = 0;

	if (argc > 2)
		rnd_state = strtoull(argv[2], NULL, 0) | 1;
	setup();
	for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
		const struct fn *f = &fns[k];
		long ok = 0, insns = 0, bad = 0, stopped = 0, nsig = 0;
		uint16_t stop_mn = 0;
		const char *stop_why = "";

		if (filter && strcmp(filter, f->name))
			continue;
		memset(g_count, 0, sizeof g_count);
		for (long it = 0; it < runs; it++) {
			struct vstate in, nat, itp;
			long n;
			uint16_t mn;
			int sig, rc;

			memset(&in, 0, sizeof in);
			for (int r = 0; r < 32; r++)
				for (int b = 0; b < 64; b++)
					in.zmm[r][b] = (uint8_t)rnd();
			for (int r = 0; r < 8; r++)
				in.k[r] = rnd();
			for (int r = 0; r < 16; r++)
				in.gpr[r] = rnd();
			in.gpr[4] = (uint64_t)(stack + sizeof stack / 2);
			in.gpr[11] = (uint64_t)f->addr;
			in.rflags = 0x202;
			in.mxcsr = 0x1f80;
			args(f, &in);
			memcpy(dsave, g_data, DATA_SIZE);
			nat = in;
			sig = run_native(call_r11, sizeof call_r11, &nat);
			memcpy(dnat, g_data, DATA_SIZE);
			memcpy(g_data, dsave, DATA_SIZE);
			if (sig) {
				if (!nsig++)
					printf("NOTE %s: native took signal %d (bad arguments?)\n", f->name, sig);
				continue;
			}
			itp = in;
			rc = run_interp(call_r11, sizeof call_r11, &itp, &n, &mn);
			insns += n;
			if (rc != INTERP_STOP_OBSERVER) {
				if (!stopped++) {
					stop_mn = mn;
					stop_why = interp_stop_name(rc);
				}
				continue;
			}
			{
				int d = 0;
				for (int r = 0; r < 32; r++)
					if (memcmp(nat.zmm[r], itp.zmm[r], 64)) {
						if (!bad)
							printf("    zmm%d differs\n", r);
						d = 1;
					}
				for (int r = 0; r < 8; r++)
					if (nat.k[r] != itp.k[r]) {
						if (!bad)
							printf("    k%d: native %lx interp %lx\n", r, nat.k[r], itp.k[r]);
						d = 1;
					}
				for (int r = 0; r < 16; r++)
					if (nat.gpr[r] != itp.gpr[r]) {
						if (!bad)
							printf("    gpr%d: native %lx interp %lx\n", r, nat.gpr[r], itp.gpr[r]);
						d = 1;
					}
				if ((nat.rflags ^ itp.rflags) & INTERP_ARITH_FLAGS) {
					if (!bad)
						printf("    rflags: native %lx interp %lx\n", nat.rflags, itp.rflags);
					d = 1;
				}
				if (nat.mxcsr != itp.mxcsr || memcmp(dnat, g_data, DATA_SIZE)) {
					if (!bad)
						printf("    mxcsr or data differ\n");
					d = 1;
				}
				if (d) {
					if (!bad++)
						printf("FAIL %s: state differs after the call (rdi %lx rsi %lx rdx %lx)\n",
						       f->name, in.gpr[7] - (uint64_t)g_data,
						       in.gpr[6] - (uint64_t)g_data, in.gpr[2]);
					continue;
				}
			}
			ok++;
		}
		if (bad || stopped) {
			nfail++;
			if (stopped)
				printf("FAIL %s: %ld of %ld runs stopped early (first: %s at %s)\n", f->name,
				       stopped, runs, stop_why, ZydisMnemonicGetString(stop_mn));
		} else if (ok == 0 || insns == 0) {
			/* every run took a signal natively: nothing was compared */
			nfail++;
			printf("FAIL %s: nothing compared (%ld runs, %ld native signals)\n", f->name,
			       runs, nsig);
		} else {
			printf("PASS %s: %ld calls, %ld instructions interpreted, all state equal\n",
			       f->name, ok, insns);
		}
		if (getenv("VEC_LIBC_HIST")) {
			for (int m = 0; m <= ZYDIS_MNEMONIC_MAX_VALUE; m++)
				if (g_count[m])
					printf("    %8ld %s\n", g_count[m], ZydisMnemonicGetString(m));
		}
	}
	return nfail != 0;
}
