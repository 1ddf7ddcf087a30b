/*
 * Interpreted frames: the Python functions and lines a CPython 3.11
 * thread is running, read at each sample from inside the process, beside
 * the native stack (VPROF_PYTHON, on by default with call stacks).
 *
 * What is read, and how it is known: a CPython 3.11 interpreter exports
 * _PyRuntime, Py_Version, PyCode_Type and _PyEval_EvalFrameDefault. The
 * version must be 3.11 (Py_Version); the layout (offsets below) is the one
 * of every 3.11 release build, checked against the interpreter's own
 * headers by tests/pyframes.sh. Another version gets one message and
 * native frames only: no offset is ever guessed. The walk, per sample:
 *
 *   _PyRuntime.gilstate.tstate_current, if it is this thread's (its
 *   thread_id is pthread_self()), else the interpreter's list of thread
 *   states, searched for it (at most PY_THREADS_MAX);
 *   tstate->cframe->current_frame, then _PyInterpreterFrame.previous;
 *   each frame's f_code (its type must be PyCode_Type, else the walk
 *   stops) and prev_instr, the instruction it last started (3.11 stores
 *   it at every instruction); frames not yet started (prev_instr before
 *   _co_firsttraceable, not a generator's) are passed over, as CPython's
 *   own tracebacks do; is_entry marks the first frame of each call of
 *   _PyEval_EvalFrameDefault from C.
 *
 * Every read is a fault-safe probe (interp_mem_load): a frame being
 * pushed at the interrupted instruction, or freed memory, fails a probe
 * or a check and ends the walk; it never faults the program.
 *
 * A frame is (function, line). The line comes from the code object's
 * location table (co_linetable, PEP 626/657 format: entries of a start
 * byte 1CCCCLLL, L+1 code units, code C giving the line delta), computed
 * here and cached per thread by (code, instruction). The function is an
 * entry of the spool's interpreted-code table (format.h), named (qualified
 * name, file, first line) the first time it is seen, since the process
 * may be gone at merge time; frames are SPOOL_CODE_FRAME(entry, line).
 *
 * Mixed stacks (preload_py_mix): each native frame in
 * _PyEval_EvalFrameDefault is replaced by the Python frames it runs, up
 * to and including the next entry frame; native frames elsewhere (C
 * extensions, the allocator, the collector) stay where they are. The
 * sampled PC itself is replaced by the innermost Python frame when it
 * lies in _PyEval_EvalFrameDefault (preload_py_leaf).
 *
 * Handler rules: no malloc, no locks; the per-thread state is TLS
 * (initial-exec); the walk happens once per signal (preload_py_walk),
 * before the PC is counted, and its result is used by the count and by
 * the stack of the same signal.
 */
#include "preload/preload.h"
#include "interp/interp.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <xxhash.h>

/* CPython 3.11 (release builds; tests/pyframes.sh checks them). */
#define RT_INTERP_HEAD    40     /* _PyRuntimeState.interpreters.head */
#define RT_TSTATE_CURRENT 576    /* _PyRuntimeState.gilstate.tstate_current */
#define IS_THREADS_HEAD   16     /* PyInterpreterState.threads.head */
#define IS_RUNTIME        40     /* PyInterpreterState.runtime */
#define TS_NEXT           8      /* PyThreadState.next */
#define TS_INTERP         16     /* PyThreadState.interp */
#define TS_CFRAME         56     /* PyThreadState.cframe */
#define TS_THREAD_ID      152    /* PyThreadState.thread_id */
#define CF_CURRENT_FRAME  8      /* _PyCFrame.current_frame */
#define FR_CODE           32     /* _PyInterpreterFrame.f_code */
#define FR_PREVIOUS       48     /* .previous */
#define FR_PREV_INSTR     56     /* .prev_instr */
#define FR_IS_ENTRY       68     /* .is_entry (bool) */
#define FR_OWNER          69     /* .owner (char) */
#define FR_READ           72     /* bytes of a frame read */
#define OB_TYPE           8      /* PyObject.ob_type */
#define CO_FIRSTLINENO    72     /* PyCodeObject.co_firstlineno */
#define CO_FILENAME       112
#define CO_NAME           120
#define CO_QUALNAME       128
#define CO_LINETABLE      136
#define CO_FIRSTTRACEABLE 168    /* ._co_firsttraceable (int) */
#define CO_CODE_ADAPTIVE  184    /* .co_code_adaptive: the code units */
#define STR_LENGTH        16     /* PyASCIIObject.length */
#define STR_STATE         32     /* .state (bit field) */
#define STR_ASCII_DATA    48     /* sizeof(PyASCIIObject) */
#define STR_UTF8_LENGTH   48     /* PyCompactUnicodeObject.utf8_length */
#define STR_UTF8          56     /* .utf8 */
#define STR_COMPACT_DATA  72     /* sizeof(PyCompactUnicodeObject) */
#define BYTES_SIZE        16     /* PyVarObject.ob_size */
#define BYTES_DATA        32     /* PyBytesObject.ob_sval */
#define OWNED_BY_GENERATOR 1

#define PY_THREADS_MAX    256
#define PY_LINETABLE_MAX  (64 << 10)

static struct {
	int on;
	uintptr_t runtime, code_type;
	uintptr_t eval_lo, eval_hi;      /* _PyEval_EvalFrameDefault */
	int checked;                     /* the runtime's interpreter pointed back at it */
} g_py;

struct py_walk {
	unsigned n;              /* frames, innermost first */
	int valid;               /* walked in this signal */
	uint64_t frame[SPOOL_STACK_MAX];
	uint8_t entry[SPOOL_STACK_MAX];
};

/* Small: static TLS is every thread's memory, Python's or not. */
static __thread struct preload_line_slot t_lines[PRELOAD_LINE_SLOTS] PRELOAD_TLS;
static __thread struct py_walk t_walk PRELOAD_TLS;

struct preload_line_slot *preload_line_slot(uint64_t code, int32_t instr)
{
	return &t_lines[((code >> 4) ^ (uint64_t)(uint32_t)instr * 0x9e37u) & (PRELOAD_LINE_SLOTS - 1)];
}

static int ld(void *dst, uint64_t src, size_t n)
{
	return interp_mem_load(dst, src, n);
}

static int ld64(uint64_t src, uint64_t *v)
{
	return src ? ld(v, src, 8) : -1;
}

int preload_py_init(void)
{
	const unsigned long *ver = dlsym(RTLD_DEFAULT, "Py_Version");
	void *rt = dlsym(RTLD_DEFAULT, "_PyRuntime");
	void *ct = dlsym(RTLD_DEFAULT, "PyCode_Type");
	void *ev = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
	if (!rt || !ct || !ev)
		return 0;                /* not CPython (or before 3.11's exports) */
	if (!ver || (*ver >> 16) != 0x030b) {
		if (ver)
			preload_say("Python %lu.%lu: vprof knows the frames of Python 3.11 only; "
				    "native frames only", *ver >> 24, (*ver >> 16) & 0xff);
		else
			preload_say("a Python before 3.11: vprof knows the frames of Python 3.11 "
				    "only; native frames only");
		return 0;
	}
	Dl_info di;
	const ElfW(Sym) *sym = NULL;
	if (!dladdr1(ev, &di, (void **)&sym, RTLD_DL_SYMENT) || !sym || !sym->st_size)
		return 0;
	g_py.runtime = (uintptr_t)rt;
	g_py.code_type = (uintptr_t)ct;
	g_py.eval_lo = (uintptr_t)ev;
	g_py.eval_hi = (uintptr_t)ev + sym->st_size;
	g_py.on = 1;
	return 1;
}

int preload_py_start(void)
{
	return preload_faults_init(NULL, NULL);
}

int preload_py_on(void)
{
	return g_py.on || preload_lua_on();
}

/* The thread state of the calling thread, or 0. */
static uint64_t this_tstate(void)
{
	uint64_t self = (uint64_t)pthread_self(), ts = 0, tid = 0, interp = 0;
	if (ld64(g_py.runtime + RT_TSTATE_CURRENT, &ts) == 0 && ts &&
	    ld64(ts + TS_THREAD_ID, &tid) == 0 && tid == self)
		return ts;
	if (ld64(g_py.runtime + RT_INTERP_HEAD, &interp) < 0 || !interp)
		return 0;
	if (!g_py.checked) {
		uint64_t back = 0;
		if (ld64(interp + IS_RUNTIME, &back) < 0 || back != g_py.runtime) {
			g_py.on = 0;     /* not the layout we know: stop reading */
			return 0;
		}
		g_py.checked = 1;
	}
	if (ld64(interp + IS_THREADS_HEAD, &ts) < 0)
		return 0;
	for (int i = 0; ts && i < PY_THREADS_MAX; i++) {
		if (ld64(ts + TS_THREAD_ID, &tid) < 0)
			return 0;
		if (tid == self)
			return ts;
		if (ld64(ts + TS_NEXT, &ts) < 0)
			return 0;
	}
	return 0;
}

static uint64_t varint(const uint8_t *t, uint32_t n, uint32_t *at)
{
	uint64_t v = 0;
	unsigned shift = 0;
	while (*at < n && shift < 63) {
		uint8_t b = t[(*at)++];
		v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			break;
	}
	return v;
}

static int64_t svarint(const uint8_t *t, uint32_t n, uint32_t *at)
{
	uint64_t v = varint(t, n, at);
	return v & 1 ? -(int64_t)(v >> 1) : (int64_t)(v >> 1);
}

/* The line of code unit `instr` of a code object whose location table is
 * the bytes object at table (PEP 657 format), starting at firstline. The
 * table is read in chunks onto the handler stack. 0 if unknown. */
static uint32_t line_of(uint64_t table, int32_t firstline, int32_t instr)
{
	uint64_t size = 0;
	uint8_t buf[512];
	if (ld64(table + BYTES_SIZE, &size) < 0 || size > PY_LINETABLE_MAX)
		return 0;
	int64_t line = firstline, unit = 0;
	uint32_t at = 0, have = 0;
	uint64_t base = 0;               /* table offset of buf[0] */
	if (instr < 0)
		return firstline > 0 ? (uint32_t)firstline : 0;
	while (base + at < size) {
		/* Keep at least 32 bytes (one entry's most) ahead in buf. */
		if (have - at < 32 && base + have < size) {
			uint32_t keep = have - at;
			memmove(buf, buf + at, keep);
			base += at;
			at = 0;
			uint64_t more = size - base - keep;
			if (more > sizeof(buf) - keep)
				more = sizeof(buf) - keep;
			if (ld(buf + keep, table + BYTES_DATA + base + keep, more) < 0)
				return 0;
			have = keep + (uint32_t)more;
		}
		uint8_t b = buf[at++];
		if (!(b & 0x80))
			return 0;            /* not an entry's start: not the format we know */
		int code = (b >> 3) & 15, len = (b & 7) + 1;
		int64_t delta = 0;
		if (code == 15) {
			delta = 0;
		} else if (code == 14) {
			delta = svarint(buf, have, &at);
			varint(buf, have, &at);
			varint(buf, have, &at);
			varint(buf, have, &at);
		} else if (code == 13) {
			delta = svarint(buf, have, &at);
		} else if (code >= 10) {
			delta = code - 10;
			at += 2;
		} else {
			at += 1;
		}
		line += delta;
		if (instr < unit + len)
			return code == 15 || line <= 0 ? 0 : (uint32_t)line;
		unit += len;
	}
	return 0;
}

/* A str object's text, as UTF-8, into out (cap bytes, NUL-terminated). */
static void copy_str(uint64_t s, char *out, size_t cap)
{
	uint8_t hdr[STR_COMPACT_DATA];
	uint64_t len, p;
	out[0] = 0;
	if (!s || ld(hdr, s, sizeof(hdr)) < 0)
		return;
	uint32_t state;
	memcpy(&len, hdr + STR_LENGTH, 8);
	memcpy(&state, hdr + STR_STATE, 4);
	int kind = (state >> 2) & 7, compact = (state >> 5) & 1, ascii = (state >> 6) & 1;
	if (!compact)
		return;
	if (ascii) {
		size_t n = len < cap - 1 ? len : cap - 1;
		if (ld(out, s + STR_ASCII_DATA, n) < 0)
			n = 0;
		out[n] = 0;
		return;
	}
	memcpy(&p, hdr + STR_UTF8, 8);
	memcpy(&len, hdr + STR_UTF8_LENGTH, 8);
	if (p) {
		size_t n = len < cap - 1 ? len : cap - 1;
		if (ld(out, p, n) < 0)
			n = 0;
		out[n] = 0;
		return;
	}
	/* Latin-1 text without a UTF-8 copy: two bytes per character above
	 * 0x7f. Wider kinds: '?' per character. */
	size_t o = 0;
	memcpy(&len, hdr + STR_LENGTH, 8);
	for (uint64_t i = 0; i < len && o + 3 < cap; i++) {
		uint8_t c = '?';
		if (kind == 1 && ld(&c, s + STR_COMPACT_DATA + i, 1) < 0)
			break;
		if (kind == 1 && c >= 0x80) {
			out[o++] = (char)(0xc0 | c >> 6);
			out[o++] = (char)(0x80 | (c & 63));
		} else {
			out[o++] = (char)c;
		}
	}
	out[o] = 0;
}

/* The spool entry of a code object (its qualified name, file and first
 * line), named if new; -1 if none. */
static long code_entry(struct spool *sp, uint64_t key, uint64_t qual, uint64_t file, int32_t first)
{
	struct spool_code_entry *e;
	long idx = spool_code_get(sp, key, &e);
	if (idx < 0 || !e)
		return idx;
	e->lang = SPOOL_LANG_PYTHON;
	e->firstline = first > 0 ? (uint32_t)first : 0;
	copy_str(qual, e->name, sizeof(e->name));
	copy_str(file, e->file, sizeof(e->file));
	if (!e->name[0])
		memcpy(e->name, "<unknown>", 10);
	spool_code_publish(sp, e);
	return idx;
}

/* One frame's (function, line) as SPOOL_CODE_FRAME, or 0. */
static uint64_t frame_of(struct spool *sp, uint64_t code, uint64_t prev_instr, int owner)
{
	uint8_t co[CO_CODE_ADAPTIVE];
	uint64_t type;
	if (ld(co, code, sizeof(co)) < 0)
		return 0;
	memcpy(&type, co + OB_TYPE, 8);
	if (type != g_py.code_type)
		return 0;
	int32_t first, traceable;
	uint64_t table, qual, file;
	memcpy(&first, co + CO_FIRSTLINENO, 4);
	memcpy(&traceable, co + CO_FIRSTTRACEABLE, 4);
	memcpy(&table, co + CO_LINETABLE, 8);
	memcpy(&qual, co + CO_QUALNAME, 8);
	memcpy(&file, co + CO_FILENAME, 8);
	uint64_t start = code + CO_CODE_ADAPTIVE;
	int64_t instr = prev_instr >= start ? (int64_t)(prev_instr - start) / 2 : -1;
	if (owner != OWNED_BY_GENERATOR && instr < traceable)
		return 1;                /* not started: passed over */
	if (instr > (1 << 24))
		return 0;
	/* The code's identity: its address and the fields that name it, so
	 * that a code object freed and another made at its address is not
	 * taken for it. */
	uint64_t key = code ^ (qual * 0x9e3779b97f4a7c15ull) ^ (file << 17) ^
		       ((uint64_t)(uint32_t)first << 40) ^ table;
	struct preload_line_slot *c = preload_line_slot(code, (int32_t)instr);
	if (c->code == code && c->key == key && c->instr == (int32_t)instr && c->hdr == sp->hdr)
		return SPOOL_CODE_FRAME(c->idx, c->line);
	long idx = code_entry(sp, key, qual, file, first);
	if (idx < 0)
		return 0;
	uint32_t line = line_of(table, first, (int32_t)instr);
	*c = (struct preload_line_slot){ code, key, sp->hdr, (int32_t)instr, line, (uint32_t)idx, 0 };
	return SPOOL_CODE_FRAME(idx, line);
}

/* The opcode frame of (lang, op) at line, or 0: an entry named by the
 * interpreter's opcode name, in the pseudo-file "<opcodes>". */
static uint64_t op_frame(struct spool *sp, int lang, int op, uint32_t line)
{
	struct spool_code_entry *e;
	uint64_t key = 0x6f70636f64650000ull ^ (uint64_t)lang << 12 ^ (uint64_t)(op & 0xfff);
	long idx = spool_code_get(sp, key, &e);
	if (idx < 0)
		return 0;
	if (e) {
		const char *name = NULL;
		if (lang == SPOOL_LANG_PYTHON)
			name = preload_py311_opnames[op & 255];
		else if ((unsigned)op < preload_lua544_nops)
			name = preload_lua544_opnames[op];
		char *o = e->name;
		if (lang == SPOOL_LANG_LUA) {
			memcpy(o, "OP_", 3);
			o += 3;
		}
		if (name) {
			size_t n = strlen(name);
			memcpy(o, name, n + 1);
		} else {
			memcpy(o, "OPCODE_", 7);
			o[7] = (char)('0' + (op / 100) % 10);
			o[8] = (char)('0' + (op / 10) % 10);
			o[9] = (char)('0' + op % 10);
			o[10] = 0;
		}
		memcpy(e->file, "<opcodes>", 10);
		e->lang = (uint8_t)lang;
		e->firstline = 0;
		spool_code_publish(sp, e);
	}
	return SPOOL_CODE_FRAME(idx, line);
}

/* The innermost frame's opcode as a frame inside it (VPROF_OPCODES). */
static void opcode_frame(struct spool *sp, struct py_walk *w, int lang, int op)
{
	if (!w->n || w->n >= SPOOL_STACK_MAX)
		return;
	uint64_t f = op_frame(sp, lang, op, SPOOL_CODE_LINE(w->frame[0]));
	if (!f)
		return;
	memmove(w->frame + 1, w->frame, w->n * sizeof(w->frame[0]));
	memmove(w->entry + 1, w->entry, w->n);
	w->frame[0] = f;
	w->entry[0] = 0;
	w->n++;
}

void preload_py_walk(void *ucv)
{
	struct py_walk *w = &t_walk;
	w->n = 0;
	w->valid = 0;
	if ((!g_py.on && !preload_lua_on()) || g_thread.busy)
		return;
	struct spool *prev, *sp = preload_spool_enter(&prev);
	if (!sp)
		return;
	if (!sp->codes)
		goto out;
	g_thread.busy = 1;
	preload_faults_unblock(ucv);
	int op = -1;
	if (!g_py.on) {
		w->n = preload_lua_walk(ucv, sp, w->frame, w->entry, SPOOL_STACK_MAX, &op);
		w->valid = 1;
		if (op >= 0 && g_vprof.cfg.opcodes)
			opcode_frame(sp, w, SPOOL_LANG_LUA, op);
		goto done;
	}
	uint64_t ts = this_tstate(), cf = 0, fr = 0;
	if (!ts || ld64(ts + TS_CFRAME, &cf) < 0 || ld64(cf + CF_CURRENT_FRAME, &fr) < 0)
		goto done;
	for (int guard = 0; fr && w->n < SPOOL_STACK_MAX && guard < 4 * SPOOL_STACK_MAX; guard++) {
		uint8_t f[FR_READ];
		uint64_t code, prev_fr, pi;
		if (ld(f, fr, sizeof(f)) < 0)
			break;
		memcpy(&code, f + FR_CODE, 8);
		memcpy(&prev_fr, f + FR_PREVIOUS, 8);
		memcpy(&pi, f + FR_PREV_INSTR, 8);
		uint64_t x = frame_of(sp, code, pi, (int8_t)f[FR_OWNER]);
		if (!x)
			break;
		if (x != 1) {
			if (!w->n && g_vprof.cfg.opcodes) {
				/* The instruction it runs: a code unit's low byte. */
				uint8_t unit[2];
				if (ld(unit, pi, 2) == 0)
					op = unit[0];
			}
			w->frame[w->n] = x;
			w->entry[w->n] = f[FR_IS_ENTRY] != 0;
			w->n++;
		} else if (f[FR_IS_ENTRY] && w->n) {
			w->entry[w->n - 1] = 1;   /* the call from C began there */
		}
		if (prev_fr == fr)
			break;
		fr = prev_fr;
	}
	w->valid = 1;
	if (op >= 0)
		opcode_frame(sp, w, SPOOL_LANG_PYTHON, op);
done:
	g_thread.busy = 0;
out:
	preload_spool_exit(sp, prev);
}

void preload_py_done(void)
{
	t_walk.valid = 0;
}

static int in_eval(uint64_t pc)
{
	return g_py.on ? pc >= g_py.eval_lo && pc < g_py.eval_hi : preload_lua_in_eval(pc);
}

uint64_t preload_py_leaf(uint64_t pc)
{
	const struct py_walk *w = &t_walk;
	return w->valid && w->n && in_eval(pc) ? w->frame[0] : pc;
}

unsigned preload_py_mix(uint64_t *pc, unsigned n, unsigned max, int *more)
{
	const struct py_walk *w = &t_walk;
	uint64_t out[SPOOL_STACK_MAX];
	unsigned o = 0, j = 0;
	if (!w->valid || !w->n)
		return n;
	for (unsigned i = 0; i < n && o < max; i++) {
		/* A return address is looked up at its call's last byte. */
		if (j < w->n && in_eval(i ? pc[i] - 1 : pc[i])) {
			do {
				if (o == max) {
					*more = 1;
					break;
				}
				out[o++] = w->frame[j];
			} while (!w->entry[j++] && j < w->n);
			continue;
		}
		out[o++] = pc[i];
		if (o == max && i + 1 < n)
			*more = 1;
	}
	memcpy(pc, out, o * sizeof(*pc));
	return o;
}
