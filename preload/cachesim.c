/*
 * The window's cache consumer (window.h): MemSpy's trace sampling. With
 * `vprof run --cachesim` the windows are long (VPROF_CACHESIM_LEN
 * instructions, default 50,000) and every data reference they make goes
 * through a simulated first-level data cache (D1) and last-level cache
 * (LL), set-associative with LRU replacement, of the geometry VPROF_CACHE
 * gives (default this machine's, from sysfs). As in cachegrind, LL is
 * looked up when D1 did not hit, a reference is counted once however many
 * lines it spans, and missed if any of them misses; writes allocate.
 *
 * Unknown references. Between windows the program ran unobserved, so at
 * a window's start the cache's state is unknown: the first touch of a
 * line in a window is an unknown reference (MemSpy's rule), known or not
 * by whether the last level holds the line from this window. Its outcome
 * is guessed from the state the thread's earlier windows left, which the
 * simulation keeps: the line still there is a guessed hit, else a guessed
 * miss. The reports give the known counts, the guess, and the bounds
 * (every unknown reference a hit, or a miss).
 *
 * Each reference's outcome, SPOOL_CACHE_OUTCOME(d1, ll), is counted per
 * PC in a per-window table and reaches the thread's hotlists
 * (SPOOL_VK_CACHE) at the window's end: at most 7 values a PC, so the
 * hotlists never thin and the merged counts are exact.
 *
 * State: one mapping per thread, made at its first cache window (a
 * system call, safe in the handler), of the two levels' tags in MRU-first
 * order per set, each a line number and the window (generation) that last
 * touched it: 8 bytes a line, 4 MiB for a 32 MiB LL (pages touched as
 * sets are); all threads' together at most CS_MAPPED_MAX (a thread past
 * it simulates nothing). Freed at thread exit. AS-safe: no locks, no malloc; the
 * addresses simulated are numbers, never dereferenced.
 */
#include "preload/window.h"
#include "preload/preload.h"
#include "preload/heap.h"
#include "spool/hotlist.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#define GEN_BITS 20
#define LINE_BITS (64 - GEN_BITS)
#define LINE_MASK ((1ull << LINE_BITS) - 1)
#define CS_RECS 1024           /* (pc, outcome) pairs counted a window */

struct cs_level {
	uint32_t sets, ways, shift;
	uint64_t *tag;                 /* sets x ways: gen << LINE_BITS | line; 0 empty */
};

struct cs_rec {
	uint64_t pc;
	uint32_t outcome, n;
};

/* A reference whose D1 outcome waits for the window's end: the lines it
 * touched first in the window, and its other lines' outcomes. */
struct cs_pending {
	uint64_t pc, obj;              /* the instruction, and the object it referenced */
	uint64_t line[2];              /* D1 line numbers first touched */
	uint8_t before[2];             /* the set's lines of this window before each */
	uint8_t nline, d1, ll, cls;    /* cls: the object's SPOOL_OBJ_* */
};

/* References to one data object with one outcome, in the window. */
struct cs_obj {
	uint64_t key;
	uint32_t outcome, n;
	uint32_t cls, pad;
};
#define CS_OBJS 1024
#define CS_PENDING 8192
#define CS_PCS 1024                /* PCs whose window is counted, a window */

struct preload_cachesim {
	size_t map_size;
	uint64_t gen;                  /* this window's, 1 .. 2^GEN_BITS - 1 */
	struct cs_level d1, ll;
	uint32_t npending;
	struct cs_rec rec[CS_RECS];
	uint64_t pcs[CS_PCS];          /* the PCs that referenced memory in this window; 0 free */
	struct cs_obj objs[CS_OBJS];
	uint64_t objkeys[CS_PCS];      /* the objects referenced in this window; 0 free */
	uint8_t objcls[CS_PCS];        /* ... and their classes */
	uint64_t img_lo, img_hi;       /* the image mapping last found, [lo, hi) */
	uint64_t heap_lo, heap_hi, heap_site; /* the heap block last found */
	uint64_t noimg_page;           /* the page last found in no image, + 1 (0 none) */
	struct cs_pending pending[CS_PENDING];
};

enum { CUR, OLD, ABSENT };

/* Look the line up in its set, move it (or, absent, put it in place of
 * the least recently used) to the front, stamped with this window.
 * *ahead: the lines of this window in front of it (the set's distinct
 * lines touched since, or, for a first touch, before it in the window). */
static int touch(struct cs_level *l, uint64_t line, uint64_t gen, unsigned *ahead)
{
	uint64_t *set = l->tag + (size_t)(line % l->sets) * l->ways;
	uint64_t key = line & LINE_MASK;
	uint32_t i = 0;
	int found = ABSENT;
	*ahead = 0;
	for (; i < l->ways; i++) {
		if (set[i] && (set[i] & LINE_MASK) == key) {
			found = set[i] >> LINE_BITS == gen ? CUR : OLD;
			break;
		}
		*ahead += set[i] >> LINE_BITS == gen;
	}
	if (i == l->ways)
		i = l->ways - 1;
	memmove(set + 1, set, i * sizeof(*set));
	set[0] = gen << LINE_BITS | key;
	return found;
}

/* Where the line stands in its set from this window: the lines in front
 * of it (touched since it was), or the ways when it is gone. */
static unsigned depth(const struct cs_level *l, uint64_t line, uint64_t gen)
{
	const uint64_t *set = l->tag + (size_t)(line % l->sets) * l->ways;
	uint64_t want = gen << LINE_BITS | (line & LINE_MASK);
	for (uint32_t i = 0; i < l->ways; i++)
		if (set[i] == want)
			return i;
	return l->ways;
}

static void level_init(struct cs_level *l, const struct spool_cache_level *g, uint64_t **mem)
{
	l->ways = g->ways;
	l->sets = g->size / (g->ways * g->line);
	l->shift = (uint32_t)__builtin_ctz(g->line);
	l->tag = *mem;
	*mem += (size_t)l->sets * l->ways;
}

/* The simulations of all threads map at most this much: a thread past
 * it simulates nothing (its windows still run for the other consumers). */
#define CS_MAPPED_MAX (512ull << 20)
static uint64_t g_cs_mapped;

static struct preload_cachesim *state(void)
{
	const struct spool_cache_geom *g = &g_vprof.cfg.cache;
	size_t lines = (size_t)g->d1.size / g->d1.line + (size_t)g->ll.size / g->ll.line;
	size_t head = (sizeof(struct preload_cachesim) + 63) & ~(size_t)63;
	size_t total = (head + lines * sizeof(uint64_t) + 4095) & ~(size_t)4095;
	if (__atomic_add_fetch(&g_cs_mapped, total, __ATOMIC_RELAXED) > CS_MAPPED_MAX) {
		__atomic_sub_fetch(&g_cs_mapped, total, __ATOMIC_RELAXED);
		return NULL;
	}
	int e = errno;
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = e;
	if (m == MAP_FAILED) {
		__atomic_sub_fetch(&g_cs_mapped, total, __ATOMIC_RELAXED);
		return NULL;
	}
	struct preload_cachesim *cs = m;
	cs->map_size = total;
	uint64_t *mem = (uint64_t *)((char *)m + head);
	level_init(&cs->d1, &g->d1, &mem);
	level_init(&cs->ll, &g->ll, &mem);
	return cs;
}

void preload_cachesim_begin(struct preload_window *w)
{
	if (!w->cachesim)
		return;
	if (!w->cs && !(w->cs = state()))
		return;
	struct preload_cachesim *cs = w->cs;
	if (++cs->gen >> GEN_BITS) {
		/* Generations wrapped (a million windows): start from empty. */
		memset(cs->d1.tag, 0, (size_t)cs->d1.sets * cs->d1.ways * sizeof(uint64_t));
		memset(cs->ll.tag, 0, (size_t)cs->ll.sets * cs->ll.ways * sizeof(uint64_t));
		cs->gen = 1;
	}
	cs->noimg_page = 0;   /* a window's own: mappings and blocks change between windows */
	cs->heap_lo = cs->heap_hi = 0;
	struct spool *sp = g_thread.sp;
	if (sp && sp->hdr && !sp->hdr->live.cache_geom[0]) {
		const struct spool_cache_geom *g = &g_vprof.cfg.cache;
		uint64_t *cg = sp->hdr->live.cache_geom;
		cg[1] = g->d1.ways, cg[2] = g->d1.line, cg[3] = g->ll.size, cg[4] = g->ll.ways, cg[5] = g->ll.line;
		__atomic_store_n(&cg[0], (uint64_t)g->d1.size, __ATOMIC_RELEASE);
	}
}

/* One line of a reference: its outcome at both levels. A first touch in
 * the window is unknown at both; its D1 guess is left to the window's end
 * (*first set), its LL guess is the earlier windows' state. */
static void line_outcome(struct preload_cachesim *cs, uint64_t addr, unsigned *d1, unsigned *ll, int *first,
			 unsigned *before)
{
	unsigned ahead;
	*first = 0;
	int a = touch(&cs->d1, addr >> cs->d1.shift, cs->gen, before);
	if (a == CUR) {
		*d1 = SPOOL_CACHE_HIT, *ll = SPOOL_CACHE_NONE;
		return;
	}
	int b = touch(&cs->ll, addr >> cs->ll.shift, cs->gen, &ahead);
	if (b == CUR) {
		*d1 = SPOOL_CACHE_MISS, *ll = SPOOL_CACHE_HIT;
		return;
	}
	*first = 1;
	*d1 = a == OLD ? SPOOL_CACHE_UHIT : SPOOL_CACHE_UMISS;
	*ll = b == OLD ? SPOOL_CACHE_UHIT : SPOOL_CACHE_UMISS;
}

/* Worse of two outcomes for a reference spanning lines. */
static unsigned worse(unsigned a, unsigned b)
{
	static const unsigned char rank[] = { [SPOOL_CACHE_HIT] = 0, [SPOOL_CACHE_UHIT] = 1, [SPOOL_CACHE_MISS] = 2,
					      [SPOOL_CACHE_UMISS] = 3, [SPOOL_CACHE_NONE] = 0 };
	return rank[b] > rank[a] ? b : a;
}

static void count(struct preload_window *w, uint64_t pc, uint32_t outcome)
{
	struct preload_cachesim *cs = w->cs;
	uint64_t h = (pc ^ outcome * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		struct cs_rec *e = &cs->rec[((h >> 54) + p) & (CS_RECS - 1)];
		if (e->n && e->pc == pc && e->outcome == outcome) {
			e->n++;
			return;
		}
		if (!e->n) {
			*e = (struct cs_rec){ pc, outcome, 1 };
			return;
		}
	}
	preload_window_put(w, SPOOL_VK_CACHE, pc, outcome, 0);
}

static void count_obj(struct preload_window *w, uint64_t key, unsigned cls, uint32_t outcome)
{
	struct preload_cachesim *cs = w->cs;
	/* A page's or a region's window, counted once at the end (as a
	 * PC's; the key's low bits hold the class). A stack frame's is not:
	 * its key is a code address, and a frame's lines are its own. */
	uint64_t hk = (key ^ cls) * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; cls != SPOOL_OBJ_STACK && p < 8; p++) {
		unsigned i = ((hk >> 54) + p) & (CS_PCS - 1);
		if (cs->objkeys[i] == key && cs->objcls[i] == cls)
			break;
		if (!cs->objkeys[i]) {
			cs->objkeys[i] = key;
			cs->objcls[i] = (uint8_t)cls;
			break;
		}
	}
	uint64_t h = (key ^ outcome * 0x9e3779b97f4a7c15ull ^ cls) * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		struct cs_obj *e = &cs->objs[((h >> 54) + p) & (CS_OBJS - 1)];
		if (e->n && e->key == key && e->outcome == outcome && e->cls == cls) {
			e->n++;
			return;
		}
		if (!e->n) {
			*e = (struct cs_obj){ key, outcome, 1, cls, 0 };
			return;
		}
	}
	preload_window_put(w, SPOOL_VK_OBJECT, key, outcome, cls);
}

/* Is addr in an image the spool records (its data or code)? The last
 * image found, and the last page found in none, are kept. */
static int in_image(struct preload_cachesim *cs, uint64_t addr)
{
	if (addr >= cs->img_lo && addr < cs->img_hi)
		return 1;
	if ((addr >> 12) + 1 == cs->noimg_page)   /* the heap's sweeps: one scan a page */
		return 0;
	struct spool *sp = g_thread.sp;
	if (!sp || !sp->hdr || !sp->images)
		return 0;
	uint64_t n = __atomic_load_n(&sp->hdr->live.image_seq, __ATOMIC_ACQUIRE);
	if (n > sp->hdr->s.image_records)
		n = sp->hdr->s.image_records;
	for (uint64_t i = 0; i < n; i++) {
		const struct spool_image_record *r = &sp->images[i];
		if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) == 1 && r->kind == SPOOL_IMG_MAP && addr >= r->lo &&
		    addr < r->hi) {
			cs->img_lo = r->lo;
			cs->img_hi = r->hi;
			return 1;
		}
	}
	cs->noimg_page = (addr >> 12) + 1;
	return 0;
}

/* The data object a reference hits: a stack frame (named by a code
 * address of its function: the callee's entry for frames the window
 * entered, the sampled PC for the sampled frame, the return address for
 * its callers), an image's page (a global, named by its symbol in the
 * report), a heap block preload/heap.c keeps (named by its allocation
 * site), or another mapping's 2 MiB region (small heap blocks, anonymous
 * memory). */
static uint64_t object_of(struct preload_window *w, const struct interp_state *st, uint64_t addr, unsigned *cls)
{
	if (preload_window_is_stack(w, addr)) {
		*cls = SPOOL_OBJ_STACK;
		if (w->depth < 0)
			return st->rip;
		for (int d = w->depth < WINDOW_SITES ? w->depth : WINDOW_SITES - 1; d > 0; d--)
			if (addr < w->frame_top[d])
				return w->frame_entry[d];
		if (!w->start_cfa || addr < w->start_cfa || !w->start_site)
			return w->start_pc;
		return w->start_site;
	}
	if (in_image(w->cs, addr)) {
		*cls = SPOOL_OBJ_IMAGE;
		return addr & ~4095ull;
	}
	struct preload_cachesim *cs = w->cs;
	if ((addr >= cs->heap_lo && addr < cs->heap_hi) ||
	    preload_heap_find(addr, &cs->heap_lo, &cs->heap_hi, &cs->heap_site) > 0) {
		*cls = SPOOL_OBJ_HEAP;
		return cs->heap_site;
	}
	*cls = SPOOL_OBJ_OTHER;
	return addr & ~(SPOOL_OBJ_OTHER_REGION - 1);
}

/* The PC's window, counted once (SPOOL_CACHE_WINDOW) at the window's end;
 * a PC that finds no room is not (its window count falls short). */
static void window_of(struct preload_cachesim *cs, uint64_t pc)
{
	uint64_t h = pc * 0xff51afd7ed558ccdull;
	for (unsigned p = 0; p < 8; p++) {
		uint64_t *e = &cs->pcs[((h >> 54) + p) & (CS_PCS - 1)];
		if (*e == pc)
			return;
		if (!*e) {
			*e = pc;
			return;
		}
	}
}

void preload_cachesim_insn(struct preload_window *w, const struct interp_state *st, const struct interp_record *r)
{
	struct preload_cachesim *cs = w->cs;
	if (!cs)
		return;
	uint32_t n = r->naccess < INTERP_MAX_ACCESS ? r->naccess : INTERP_MAX_ACCESS;
	if (n)
		window_of(cs, r->insn->pc);
	for (uint32_t i = 0; i < n; i++) {
		const struct interp_access *a = &r->acc[i];
		uint64_t first = a->addr >> cs->d1.shift, last = (a->addr + (a->size ? a->size : 1) - 1) >> cs->d1.shift;
		unsigned d1 = SPOOL_CACHE_HIT, dguess = SPOOL_CACHE_HIT, ll = SPOOL_CACHE_NONE, cls;
		uint64_t obj = object_of(w, st, a->addr, &cls);
		struct cs_pending p = { .pc = r->insn->pc, .obj = obj, .cls = (uint8_t)cls };
		int spill = 0;
		for (uint64_t line = first; line <= last && line <= first + 8; line++) {
			unsigned x, y, before;
			int f;
			line_outcome(cs, line << cs->d1.shift, &x, &y, &f, &before);
			if (f && p.nline < 2) {
				p.before[p.nline] = (uint8_t)(before < 255 ? before : 255);
				p.line[p.nline++] = line;
			}
			else if (f)
				spill = 1;
			if (f)
				dguess = worse(dguess, x);
			else
				d1 = worse(d1, x);
			ll = ll == SPOOL_CACHE_NONE ? y : worse(ll, y);
		}
		if (p.nline && !spill && cs->npending < CS_PENDING) {
			p.d1 = (uint8_t)d1, p.ll = (uint8_t)ll;
			cs->pending[cs->npending++] = p;
			continue;
		}
		uint32_t outcome = (uint32_t)SPOOL_CACHE_OUTCOME(worse(d1, dguess), ll);
		count(w, r->insn->pc, outcome);
		count_obj(w, obj, cls, outcome);
	}
}

void preload_cachesim_end(struct preload_window *w)
{
	struct preload_cachesim *cs = w->cs;
	if (!cs)
		return;
	/* The first touches' D1 guess: the window as if it had run just
	 * before itself (the code the sample landed in was running there). A
	 * line is a hit when the set's lines touched after its last touch in
	 * the window, with those touched before its first, are fewer than the
	 * ways: LRU's reuse distance round the window's end. */
	for (uint32_t i = 0; i < cs->npending; i++) {
		const struct cs_pending *p = &cs->pending[i];
		unsigned g = SPOOL_CACHE_UHIT;
		for (unsigned k = 0; k < p->nline; k++)
			if (depth(&cs->d1, p->line[k], cs->gen) + p->before[k] >= cs->d1.ways)
				g = SPOOL_CACHE_UMISS;
		uint32_t outcome = (uint32_t)SPOOL_CACHE_OUTCOME(worse(p->d1, g), p->ll);
		count(w, p->pc, outcome);
		count_obj(w, p->obj, p->cls, outcome);
	}
	cs->npending = 0;
	for (unsigned i = 0; i < CS_OBJS; i++) {
		struct cs_obj *e = &cs->objs[i];
		if (e->n) {
			preload_window_put_n(w, SPOOL_VK_OBJECT, e->key, e->outcome, e->cls, e->n);
			e->n = 0;
		}
	}
	for (unsigned i = 0; i < CS_PCS; i++)
		if (cs->objkeys[i]) {
			preload_window_put(w, SPOOL_VK_OBJECT, cs->objkeys[i], SPOOL_CACHE_WINDOW, cs->objcls[i]);
			cs->objkeys[i] = 0;
		}
	for (unsigned i = 0; i < CS_RECS; i++) {
		struct cs_rec *e = &cs->rec[i];
		if (e->n) {
			preload_window_put_n(w, SPOOL_VK_CACHE, e->pc, e->outcome, 0, e->n);
			e->n = 0;
		}
	}
	for (unsigned i = 0; i < CS_PCS; i++)
		if (cs->pcs[i]) {
			preload_window_put(w, SPOOL_VK_CACHE, cs->pcs[i], SPOOL_CACHE_WINDOW, 0);
			cs->pcs[i] = 0;
		}
}

void preload_cachesim_free(struct preload_window *w)
{
	struct preload_cachesim *cs = w->cs;
	w->cs = NULL;
	if (cs) {
		__atomic_sub_fetch(&g_cs_mapped, cs->map_size, __ATOMIC_RELAXED);
		munmap(cs, cs->map_size);
	}
}
