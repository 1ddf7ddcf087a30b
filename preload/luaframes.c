/*
 * Interpreted frames of Lua 5.4.4 (Debian's lua5.4 and programs that link
 * that Lua): the Lua functions and lines a thread is running, read at
 * each sample for pyframes.c's common part (mixing, counting).
 *
 * What is read, and how it is known: the process exports lua_ident, and
 * it must be "$LuaVersion: Lua 5.4.4" (another Lua gets one message and
 * native frames only). The layout (offsets below) is Lua 5.4.4's, checked
 * against its headers by tests/luaframes.sh.
 *
 * Which lua_State: Lua keeps no pointer to the running one, and Debian's
 * lua5.4 has no symbols to find luaV_execute by. So each sample looks at
 * the interrupted registers for a lua_State (tt LUA_VTHREAD, its stack
 * bounds ordered, its global state's main thread a thread of the same
 * global state): luaV_execute and the API keep L in a register, and this
 * finds the coroutine that runs, not only the main thread. When no
 * register holds one (a C helper), the thread's last global state's main
 * thread is used.
 *
 * The walk: L->ci, then CallInfo.previous; C functions' entries are
 * passed over (the native stack has them); a Lua function's frame is its
 * closure's Proto and the instruction savedpc points after. The innermost
 * frame's savedpc is stale while luaV_execute runs (pc lives in a
 * register): a register pointing into the Proto's code is taken as the
 * live pc. CIST_FRESH marks the first frame of each C-level call of
 * luaV_execute, which pyframes.c's mixing uses.
 *
 * luaV_execute's bounds are learned: the function (its unwind table's
 * FDE) holding the interrupted PC whenever a register held the live pc,
 * taken once one function has LUA_EVAL_VOTES such samples (a C helper
 * called from luaV_execute may keep pc in a callee-saved register too,
 * but gets fewer).
 *
 * Lines: Proto.lineinfo (a signed byte per instruction, the delta from
 * the one before) and abslineinfo (absolute lines every MAXIWTHABS
 * instructions or so), as luaG_getfuncline reads them; cached per thread
 * (pyframes.c's cache: a process runs one interpreter).
 * A function is named "SOURCE:LINEDEFINED" ("SOURCE:main" for a chunk),
 * SOURCE without Lua's '@' or '=' ("[string]" for code loaded from a
 * string).
 *
 * Handler rules: as pyframes.c; every read is a fault-safe probe.
 */
#include "preload/preload.h"
#include "preload/unwind.h"
#include "interp/interp.h"

#include <dlfcn.h>
#include <string.h>

/* Lua 5.4.4 (tests/luaframes.sh checks them against its headers). */
#define LS_TT             8      /* lua_State.tt */
#define LS_TOP            16
#define LS_L_G            24
#define LS_CI             32
#define LS_STACK_LAST     40
#define LS_STACK          48
#define GS_MAINTHREAD     264    /* global_State.mainthread */
#define CI_FUNC           0      /* CallInfo.func */
#define CI_PREVIOUS       16
#define CI_SAVEDPC        32     /* .u.l.savedpc */
#define CI_CALLSTATUS     62
#define CIST_C            2
#define CIST_FRESH        4
#define TV_TT             8      /* TValue.tt_ */
#define VLCL_CTB          70     /* ctb(LUA_VLCL): a Lua closure */
#define LUA_VTHREAD       8
#define LCL_P             24     /* LClosure.p */
#define PR_SIZECODE       24     /* Proto.sizecode */
#define PR_SIZELINEINFO   28
#define PR_SIZEABSLINEINFO 40
#define PR_LINEDEFINED    44
#define PR_CODE           64
#define PR_LINEINFO       88
#define PR_ABSLINEINFO    96
#define PR_SOURCE         112
#define TS_SHRLEN         11     /* TString.shrlen */
#define TS_LNGLEN         16     /* .u.lnglen */
#define TS_CONTENTS       24
#define LUA_VSHRSTR       4
#define LUA_VLNGSTR       20
#define MAXIWTHABS        128
#define ABS_LINE          4      /* AbsLineInfo.line */

#define LUA_EVAL_VOTES    3
#define LUA_CANDIDATES    4

static struct {
	int on;
	uint64_t eval_lo, eval_hi;       /* luaV_execute, once learned */
	struct { uint64_t lo, hi; uint32_t votes; } cand[LUA_CANDIDATES];
} g_lua;

static __thread uint64_t t_lua_g PRELOAD_TLS;    /* the last global state seen */

static int ld(void *dst, uint64_t src, size_t n)
{
	return src ? interp_mem_load(dst, src, n) : -1;
}

static int ld64(uint64_t src, uint64_t *v)
{
	return ld(v, src, 8);
}

int preload_lua_init(void)
{
	const char *id = dlsym(RTLD_DEFAULT, "lua_ident");
	static const char want[] = "$LuaVersion: Lua 5.4.4";
	if (!id)
		return 0;
	if (strncmp(id, want, sizeof(want) - 1) != 0) {
		const char *v = strstr(id, "Lua ");
		int n = 0;
		while (v && v[4 + n] && v[4 + n] != ' ' && n < 12)
			n++;
		preload_say("%.*s: vprof knows the frames of Lua 5.4.4 only; native frames only",
			    v ? n + 4 : 3, v ? v : "Lua");
		return 0;
	}
	g_lua.on = 1;
	return 1;
}

int preload_lua_on(void)
{
	return g_lua.on;
}

int preload_lua_in_eval(uint64_t pc)
{
	return pc >= g_lua.eval_lo && pc < g_lua.eval_hi;
}

/* Is v a lua_State? Its global state in *g. */
static int is_state(uint64_t v, uint64_t *g)
{
	uint8_t s[56];
	uint64_t top, lg, ci, last, stack, mt, mtg;
	if (!v || (v & 7) || v >= (1ull << 47) || ld(s, v, sizeof(s)) < 0 || s[LS_TT] != LUA_VTHREAD)
		return 0;
	memcpy(&top, s + LS_TOP, 8);
	memcpy(&lg, s + LS_L_G, 8);
	memcpy(&ci, s + LS_CI, 8);
	memcpy(&last, s + LS_STACK_LAST, 8);
	memcpy(&stack, s + LS_STACK, 8);
	if (!lg || !ci || !stack || stack > top || last < stack || last - stack > (1ull << 32) ||
	    top > last + 64 * 16)
		return 0;
	if (ld64(lg + GS_MAINTHREAD, &mt) < 0 || !mt || (mt != v && (ld64(mt + LS_L_G, &mtg) < 0 || mtg != lg)))
		return 0;
	*g = lg;
	return 1;
}

static uint64_t this_state(const ucontext_t *uc)
{
	uint64_t g;
	static const int regs[] = { REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15, REG_RDI,
				    REG_RSI, REG_RDX, REG_RCX, REG_R8, REG_R9, REG_RAX, REG_R10,
				    REG_R11 };
	for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		uint64_t v = (uint64_t)uc->uc_mcontext.gregs[regs[i]];
		if (is_state(v, &g)) {
			t_lua_g = g;
			return v;
		}
	}
	uint64_t mt = 0;
	if (t_lua_g && ld64(t_lua_g + GS_MAINTHREAD, &mt) == 0 && is_state(mt, &g))
		return mt;
	return 0;
}

/* A TString's text into out. */
static void copy_tstring(uint64_t s, char *out, size_t cap)
{
	uint8_t h[TS_CONTENTS];
	uint64_t len;
	out[0] = 0;
	if (ld(h, s, sizeof(h)) < 0)
		return;
	if (h[LS_TT] == LUA_VSHRSTR)
		len = h[TS_SHRLEN];
	else if (h[LS_TT] == LUA_VLNGSTR)
		memcpy(&len, h + TS_LNGLEN, 8);
	else
		return;
	size_t n = len < cap - 1 ? len : cap - 1;
	if (ld(out, s + TS_CONTENTS, n) < 0)
		n = 0;
	out[n] = 0;
}

static long proto_entry(struct spool *sp, uint64_t src, int32_t linedefined, uint64_t key)
{
	struct spool_code_entry *e;
	long idx = spool_code_get(sp, key, &e);
	if (idx < 0 || !e)
		return idx;
	char raw[SPOOL_CODE_FILE_MAX];
	copy_tstring(src, raw, sizeof(raw));
	const char *file = raw[0] == '@' || raw[0] == '=' ? raw + 1 : "[string]";
	size_t n = strlen(file);
	if (n >= sizeof(e->file))
		n = sizeof(e->file) - 1;
	memcpy(e->file, file, n);
	e->file[n] = 0;
	/* The name: FILE's last component, a colon, the line it begins. */
	const char *base = strrchr(e->file, '/');
	base = base ? base + 1 : e->file;
	char *o = e->name, *end = e->name + sizeof(e->name) - 12;
	while (*base && o < end)
		*o++ = *base++;
	*o++ = ':';
	if (linedefined <= 0) {
		memcpy(o, "main", 5);
	} else {
		char d[12];
		int k = 0;
		for (uint32_t v = (uint32_t)linedefined; v; v /= 10)
			d[k++] = (char)('0' + v % 10);
		while (k)
			*o++ = d[--k];
		*o = 0;
	}
	e->lang = SPOOL_LANG_LUA;
	e->firstline = linedefined > 0 ? (uint32_t)linedefined : 0;
	spool_code_publish(sp, e);
	return idx;
}

/* luaG_getfuncline, through probes. 0 if unknown. */
static uint32_t line_of(const uint8_t *p, int32_t pc)
{
	int32_t sizeabs, sizeli, linedefined;
	uint64_t li, abs;
	memcpy(&sizeabs, p + PR_SIZEABSLINEINFO, 4);
	memcpy(&sizeli, p + PR_SIZELINEINFO, 4);
	memcpy(&linedefined, p + PR_LINEDEFINED, 4);
	memcpy(&li, p + PR_LINEINFO, 8);
	memcpy(&abs, p + PR_ABSLINEINFO, 8);
	if (!li || pc < 0 || pc >= sizeli)
		return linedefined > 0 ? (uint32_t)linedefined : 0;
	int32_t basepc = -1, line = linedefined, first[2];
	if (sizeabs > 0 && ld(first, abs, 8) == 0 && pc >= first[0]) {
		int32_t i = pc / MAXIWTHABS - 1, e[2];
		if (i < 0)
			i = 0;
		if (i >= sizeabs)
			i = sizeabs - 1;
		while (i > 0 && (ld(e, abs + 8ull * (uint32_t)i, 8) < 0 || e[0] > pc))
			i--;
		for (int guard = 0; i + 1 < sizeabs && guard < 4096; guard++) {
			if (ld(e, abs + 8ull * (uint32_t)(i + 1), 8) < 0 || pc < e[0])
				break;
			i++;
		}
		if (ld(e, abs + 8ull * (uint32_t)i, 8) < 0)
			return 0;
		basepc = e[0];
		line = e[1];
	}
	int8_t d[256];
	while (basepc < pc) {
		int32_t n = pc - basepc < (int32_t)sizeof(d) ? pc - basepc : (int32_t)sizeof(d);
		if (ld(d, li + (uint64_t)(basepc + 1), (size_t)n) < 0)
			return 0;
		for (int32_t k = 0; k < n; k++)
			line += d[k];
		basepc += n;
	}
	return line > 0 ? (uint32_t)line : 0;
}

/* A vote for the function holding pc as luaV_execute. */
static void vote(uint64_t pc)
{
	uint64_t lo, hi;
	if (g_lua.eval_hi || preload_cfi_function(pc, &lo, &hi) < 0)
		return;
	for (int i = 0; i < LUA_CANDIDATES; i++) {
		if (g_lua.cand[i].lo == lo) {
			if (++g_lua.cand[i].votes >= LUA_EVAL_VOTES) {
				g_lua.eval_lo = lo;
				__atomic_store_n(&g_lua.eval_hi, hi, __ATOMIC_RELEASE);
			}
			return;
		}
	}
	for (int i = 0; i < LUA_CANDIDATES; i++)
		if (!g_lua.cand[i].votes) {
			g_lua.cand[i].lo = lo;
			g_lua.cand[i].hi = hi;
			g_lua.cand[i].votes = 1;
			return;
		}
}

unsigned preload_lua_walk(const ucontext_t *uc, struct spool *sp, uint64_t *frame, uint8_t *entry,
			  unsigned max, int *op)
{
	uint64_t L = this_state(uc), ci;
	unsigned n = 0;
	int innermost = 1;
	if (!L || ld64(L + LS_CI, &ci) < 0)
		return 0;
	for (int guard = 0; ci && n < max && guard < 4 * (int)max; guard++) {
		uint8_t c[64];
		if (ld(c, ci, sizeof(c)) < 0)
			break;
		uint16_t status;
		uint64_t func, prev, savedpc;
		memcpy(&status, c + CI_CALLSTATUS, 2);
		memcpy(&func, c + CI_FUNC, 8);
		memcpy(&prev, c + CI_PREVIOUS, 8);
		memcpy(&savedpc, c + CI_SAVEDPC, 8);
		if (!prev)
			break;                /* base_ci: the C host */
		if (status & CIST_C) {
			innermost = 0;
			ci = prev;
			continue;
		}
		uint8_t tv[16], p[120];
		uint64_t cl, proto, code;
		if (ld(tv, func, sizeof(tv)) < 0 || tv[TV_TT] != VLCL_CTB)
			break;
		memcpy(&cl, tv, 8);
		if (ld64(cl + LCL_P, &proto) < 0 || ld(p, proto, sizeof(p)) < 0)
			break;
		int32_t sizecode, linedefined;
		uint64_t src;
		memcpy(&sizecode, p + PR_SIZECODE, 4);
		memcpy(&linedefined, p + PR_LINEDEFINED, 4);
		memcpy(&code, p + PR_CODE, 8);
		memcpy(&src, p + PR_SOURCE, 8);
		if (sizecode <= 0 || !code)
			break;
		uint64_t cend = code + 4ull * (uint32_t)sizecode;
		if (innermost) {
			/* The live pc, where luaV_execute keeps it. */
			static const int regs[] = { REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14,
						    REG_R15 };
			for (unsigned i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
				uint64_t v = (uint64_t)uc->uc_mcontext.gregs[regs[i]];
				if (v > code && v <= cend && !((v - code) & 3)) {
					savedpc = v;
					vote((uint64_t)uc->uc_mcontext.gregs[REG_RIP]);
					break;
				}
			}
			innermost = 0;
		}
		int32_t pc = savedpc > code && savedpc <= cend ? (int32_t)((savedpc - code) / 4) - 1 : 0;
		uint64_t key = proto ^ (src * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)(uint32_t)linedefined << 40) ^ 0x4c7541;
		struct preload_line_slot *s = preload_line_slot(proto, pc);
		uint32_t idx, line;
		if (s->code == proto && s->key == key && s->instr == pc && s->hdr == sp->hdr) {
			idx = s->idx;
			line = s->line;
		} else {
			long k = proto_entry(sp, src, linedefined, key);
			if (k < 0)
				break;
			idx = (uint32_t)k;
			line = line_of(p, pc);
			*s = (struct preload_line_slot){ proto, key, sp->hdr, pc, line, idx, 0 };
		}
		frame[n] = SPOOL_CODE_FRAME(idx, line);
		entry[n] = (status & CIST_FRESH) != 0;
		if (!n && op) {
			/* The instruction it runs: the opcode is its low 7 bits. */
			uint32_t ins;
			if (pc >= 0 && pc < sizecode && ld(&ins, code + 4ull * (uint32_t)pc, 4) == 0)
				*op = (int)(ins & 0x7f);
		}
		n++;
		ci = prev;
	}
	return n;
}
