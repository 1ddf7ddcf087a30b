/*
 * Heap blocks by allocation site, for cachesim.c's data objects. With
 * `vprof run --cachesim`, vprof run preloads libvprof-heap.so beside
 * libvprof.so (heap/alloc_hooks.c): its malloc, calloc, realloc,
 * reallocarray, aligned_alloc, posix_memalign, memalign, valloc, free,
 * mmap and munmap pass every call to the next definition (the C
 * library's, or an allocator's loaded after vprof) and report blocks of
 * at least HEAP_MIN bytes here (vprof_heap_alloc, vprof_heap_free).
 * Smaller blocks are not kept: a reference to one stays in its mapping's
 * 2 MiB region. Calls from libvprof.so itself (its own mappings, made in
 * the handler too) return at once.
 *
 * The site. The allocating call's return address; where the function
 * that made the call is a wrapper (its code shorter than HEAP_WRAPPER
 * bytes, as xmalloc or a library's default allocator callback are), its
 * own call site, up to HEAP_UP frames, found by the CFI unwinder from the
 * interposer's frame; so too where it is a function VPROF_ALLOC_FN names
 * (`vprof run --alloc-fn`: by its dynamic symbol, dladdr). Whether a
 * return address's function is a wrapper is kept in a small cache
 * (g_wrap), so most allocations unwind nothing.
 *
 * The table: live blocks sorted by start, in chunks of HEAP_CH, the
 * chunks listed in order of their first block, all in one mapping made
 * at start-up; a change moves at most a chunk's blocks, or the list's
 * entries when a chunk splits or empties (HEAP_NCH chunks: past them a
 * new block is not kept). Writers (the
 * allocating threads) take a lock (waiters yield the CPU; a thread that
 * holds it already, in a signal handler, keeps nothing) and bump a sequence number around
 * each change, odd while it lasts; the sample handler reads without a
 * lock (preload_heap_find): it gives up when the number is odd (the
 * handler interrupted a change on its own thread) or changed while it
 * read. The mapping is never freed and every index read is bounded, so a
 * torn read is never a fault. fork holds the lock (pthread_atfork).
 */
#include "preload/preload.h"
#include "preload/heap.h"
#include "preload/unwind.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>

#define HEAP_MIN 4096
#define HEAP_WRAPPER 96
#define HEAP_UP 3
#define HEAP_CH 64                       /* blocks a chunk */
#define HEAP_NCH 2048                    /* chunks: at most 131072 blocks, at least 65536 */

struct heap_block {
	uint64_t lo, hi, site;
};

struct heap_chunk {
	uint32_t n;                      /* blocks in use, sorted by lo */
	struct heap_block b[HEAP_CH];
};

/* The table: chunks of blocks, and the chunks in order of their first
 * block (top_lo, top_id); a change moves at most a chunk's blocks, or
 * the top's entries when a chunk splits or empties. */
struct heap_table {
	uint32_t ntop, nfree;
	uint64_t top_lo[HEAP_NCH];
	uint32_t top_id[HEAP_NCH];
	uint32_t free_id[HEAP_NCH];      /* chunks not in use */
	struct heap_chunk ch[HEAP_NCH];
};

static struct heap_table *g_heap;
static uint64_t g_heap_seq;              /* odd while a writer changes the table */
static void *g_heap_owner;               /* the lock's holder: its t_me, or NULL */
static int g_heap_on;
/* VPROF_ALLOC_FN's names, each ended by a NUL, the list by an empty one. */
static char g_alloc_fn[1026];
static uint64_t g_self_lo, g_self_hi;    /* libvprof.so's own mapping */
static __thread char t_me PRELOAD_TLS;   /* the thread's identity, by address */

/* Takes the lock; 0 when this thread holds it already (a signal handler
 * allocating while the code it interrupted was changing the table: that
 * block is not kept, and nothing waits on itself). A waiter spins a
 * little, then yields the CPU (sched_yield, a call vprof makes anyway:
 * sandbox.c), so that a holder that lost its CPU gets it back. */
static int lock(void)
{
	void *none = NULL;
	if (__atomic_load_n(&g_heap_owner, __ATOMIC_RELAXED) == &t_me)
		return 0;
	for (unsigned spins = 0;
	     !__atomic_compare_exchange_n(&g_heap_owner, &none, &t_me, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
	     none = NULL) {
		if (++spins < 64)
			__builtin_ia32_pause();
		else
			sched_yield();
	}
	return 1;
}

static void unlock(void)
{
	__atomic_store_n(&g_heap_owner, NULL, __ATOMIC_RELEASE);
}

/* fork: the lock is held across it, so the child's table is whole;
 * unless the forking thread holds it already (fork is async-signal-safe:
 * a handler may call it inside a change), which then takes nothing. */
static int g_fork_took;

static void fork_prepare(void)
{
	int took = lock();
	g_fork_took = took;
}

static void fork_parent(void)
{
	if (g_fork_took)
		unlock();
}

static void fork_child(void)
{
	g_heap_owner = NULL;
}

/* libvprof.so's own mappings (its handler's, its spools') are not the
 * program's data: the interposers see them too (they precede the C
 * library in the link order), and they return at once. */
static int from_self(const void *ra)
{
	uint64_t a = (uint64_t)(uintptr_t)ra;
	return a >= g_self_lo && a < g_self_hi;
}

void preload_heap_init(void)
{
	if (!g_vprof.cfg.cachesim || g_heap)
		return;
	int e = errno;
	struct heap_table *m = mmap(NULL, sizeof(struct heap_table), PROT_READ | PROT_WRITE,
				    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	errno = e;
	if (m == MAP_FAILED)
		return;
	for (uint32_t i = 0; i < HEAP_NCH; i++)
		m->free_id[i] = HEAP_NCH - 1 - i;
	m->nfree = HEAP_NCH;
	g_heap = m;
	const char *names = getenv("VPROF_ALLOC_FN");
	if (names) {
		size_t n = strlen(names) < sizeof(g_alloc_fn) - 2 ? strlen(names) : sizeof(g_alloc_fn) - 2;
		memcpy(g_alloc_fn, names, n);
		for (size_t i = 0; i < n; i++)
			if (g_alloc_fn[i] == ',')
				g_alloc_fn[i] = 0;
	}
	struct dl_find_object fo;
	if (_dl_find_object((void *)(uintptr_t)preload_heap_init, &fo) == 0) {
		g_self_lo = (uint64_t)(uintptr_t)fo.dlfo_map_start;
		g_self_hi = (uint64_t)(uintptr_t)fo.dlfo_map_end;
	}
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* The interposers find their next definitions now, in the
	 * constructor: never first in a signal handler (dlsym is not
	 * async-signal-safe). */
	void (*ready)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, "vprof_heap_ready");
	if (ready)
		ready();
	__atomic_store_n(&g_heap_on, 1, __ATOMIC_RELEASE);
}

/* The first index in lo[0..n) (a stride of `stride` words) above a. */
static uint32_t upper(const uint64_t *lo, size_t stride, uint32_t n, uint64_t a)
{
	uint32_t l = 0, h = n;
	while (l < h) {
		uint32_t mid = l + (h - l) / 2;
		if (__atomic_load_n(&lo[(size_t)mid * stride], __ATOMIC_RELAXED) <= a)
			l = mid + 1;
		else
			h = mid;
	}
	return l;
}

/* The top entry whose chunk would hold a block starting at a: the last
 * chunk starting at or below a, else the first; -1 when there is none. */
static int top_of(const struct heap_table *t, uint32_t ntop, uint64_t a)
{
	if (!ntop)
		return -1;
	uint32_t i = upper(t->top_lo, 1, ntop, a);
	return i ? (int)i - 1 : 0;
}

/* The block with the greatest start at or below a: its chunk (*c, top
 * entry *k) and index; -1 when none. */
static int last_at(struct heap_table *t, uint64_t a, int *k, struct heap_chunk **c)
{
	*k = top_of(t, t->ntop, a);
	if (*k < 0)
		return -1;
	*c = &t->ch[t->top_id[*k]];
	uint32_t i = upper(&(*c)->b[0].lo, 3, (*c)->n, a);
	return i ? (int)i - 1 : -1;
}

static void remove_at(struct heap_table *t, int k, struct heap_chunk *c, uint32_t i)
{
	memmove(c->b + i, c->b + i + 1, (c->n - i - 1) * sizeof(c->b[0]));
	if (--c->n) {
		t->top_lo[k] = c->b[0].lo;
		return;
	}
	t->free_id[t->nfree++] = t->top_id[k];
	memmove(t->top_lo + k, t->top_lo + k + 1, (t->ntop - k - 1) * sizeof(t->top_lo[0]));
	memmove(t->top_id + k, t->top_id + k + 1, (t->ntop - k - 1) * sizeof(t->top_id[0]));
	t->ntop--;
}

/* Drops the blocks starting in [lo, hi). */
static void drop_range(struct heap_table *t, uint64_t lo, uint64_t hi)
{
	for (;;) {
		int k;
		struct heap_chunk *c;
		int i = last_at(t, hi - 1, &k, &c);
		if (i < 0 || c->b[i].lo < lo)
			return;
		remove_at(t, k, c, (uint32_t)i);
	}
}

static void add(struct heap_table *t, uint64_t lo, uint64_t hi, uint64_t site)
{
	/* Blocks freed where the interposers do not see it (the C
	 * library's own realloc inside getline, a raw munmap) leave stale
	 * entries: those the new block overlaps go. */
	int k;
	struct heap_chunk *c;
	int i = last_at(t, lo, &k, &c);
	if (i >= 0 && c->b[i].hi > lo)
		remove_at(t, k, c, (uint32_t)i);
	drop_range(t, lo, hi);
	if ((k = top_of(t, t->ntop, lo)) < 0) {
		if (!t->nfree)
			return;
		t->top_id[0] = t->free_id[--t->nfree];
		t->ch[t->top_id[0]].n = 0;
		t->top_lo[0] = lo;
		t->ntop = 1;
		k = 0;
	}
	c = &t->ch[t->top_id[k]];
	if (c->n == HEAP_CH) {
		/* Split: the upper half to a new chunk after this one. */
		if (!t->nfree)
			return;
		uint32_t id = t->free_id[--t->nfree];
		struct heap_chunk *d = &t->ch[id];
		d->n = HEAP_CH / 2;
		memcpy(d->b, c->b + HEAP_CH / 2, (HEAP_CH / 2) * sizeof(c->b[0]));
		c->n = HEAP_CH / 2;
		memmove(t->top_lo + k + 2, t->top_lo + k + 1, (t->ntop - k - 1) * sizeof(t->top_lo[0]));
		memmove(t->top_id + k + 2, t->top_id + k + 1, (t->ntop - k - 1) * sizeof(t->top_id[0]));
		t->top_lo[k + 1] = d->b[0].lo;
		t->top_id[k + 1] = id;
		t->ntop++;
		if (lo >= d->b[0].lo)
			c = d, k++;
	}
	uint32_t j = upper(&c->b[0].lo, 3, c->n, lo);
	memmove(c->b + j + 1, c->b + j, (c->n - j) * sizeof(c->b[0]));
	c->b[j] = (struct heap_block){ lo, hi, site };
	c->n++;
	t->top_lo[k] = c->b[0].lo;
}

/* Is the function that returns to ra a wrapper? Cached by ra: an entry
 * is ra << 1 | answer, one word, so a racing store is whole or absent. */
#define HEAP_WRAP_CACHE 512
static uint64_t g_wrap[HEAP_WRAP_CACHE];

static int wrapper(uint64_t ra)
{
	uint64_t *e = &g_wrap[(ra * 0x9e3779b97f4a7c15ull) >> 55];
	uint64_t v = __atomic_load_n(e, __ATOMIC_RELAXED);
	if (v >> 1 == ra)
		return (int)(v & 1);
	uint64_t b, end;
	int w = preload_cfi_function(ra - 1, &b, &end) == 0 && end - b < HEAP_WRAPPER;
	if (!w && g_alloc_fn[0]) {
		/* A function the user named (--alloc-fn): by its dynamic symbol. */
		Dl_info di;
		if (dladdr((void *)(uintptr_t)(ra - 1), &di) && di.dli_sname && di.dli_saddr)
			for (const char *p = g_alloc_fn; *p && !w; p += strlen(p) + 1)
				w = !strcmp(p, di.dli_sname);
	}
	__atomic_store_n(e, ra << 1 | (uint64_t)w, __ATOMIC_RELAXED);
	return w;
}

/* The allocation site: the return address, or, from a wrapper, its
 * caller's call site (see the head of the file). */
static uint64_t site_of(uint64_t ra, uint64_t cfa)
{
	struct preload_cfi_cursor c;
	memset(&c, 0, sizeof(c));
	c.reg[CFI_RIP] = ra;
	c.reg[CFI_RSP] = cfa;
	c.valid = 1u << CFI_RIP | 1u << CFI_RSP;
	c.lo = cfa;
	c.hi = preload_cfi_stack_top();
	if (c.hi <= c.lo)
		c.hi = cfa + (1u << 20);
	uint64_t site = ra;
	for (int up = 0; up < HEAP_UP; up++) {
		if (!wrapper(site))
			break;
		if (preload_cfi_step(&c) != 1 || !c.reg[CFI_RIP])
			break;
		site = c.reg[CFI_RIP];
	}
	return site;
}

__attribute__((visibility("default"))) void vprof_heap_alloc(void *p, size_t size, void *ra, void *cfa)
{
	if (!p || size < HEAP_MIN || !__atomic_load_n(&g_heap_on, __ATOMIC_ACQUIRE) || from_self(ra))
		return;
	int e = errno;
	uint64_t site = site_of((uint64_t)(uintptr_t)ra, (uint64_t)(uintptr_t)cfa);
	errno = e;
	uint64_t lo = (uint64_t)(uintptr_t)p;
	if (!lock())
		return;
	__atomic_add_fetch(&g_heap_seq, 1, __ATOMIC_ACQ_REL);
	add(g_heap, lo, lo + size, site);
	__atomic_add_fetch(&g_heap_seq, 1, __ATOMIC_RELEASE);
	unlock();
}

/* A block freed (len 0: the block starting at p), or a range unmapped
 * (len > 0: the blocks starting in it). */
__attribute__((visibility("default"))) void vprof_heap_free(void *p, size_t len, void *ra)
{
	uint64_t a = (uint64_t)(uintptr_t)p;
	if (!a || !__atomic_load_n(&g_heap_on, __ATOMIC_ACQUIRE) || !__atomic_load_n(&g_heap->ntop, __ATOMIC_RELAXED) ||
	    from_self(ra))
		return;
	if (!len) {
		/* Most frees are of blocks not kept: looked up without the lock. */
		uint64_t lo, hi, site;
		int found = preload_heap_find(a, &lo, &hi, &site);
		if (!found || (found > 0 && lo != a))
			return;
	}
	if (!lock())
		return;
	int k;
	struct heap_chunk *c;
	int i = last_at(g_heap, a, &k, &c);
	if (len || (i >= 0 && c->b[i].lo == a)) {
		__atomic_add_fetch(&g_heap_seq, 1, __ATOMIC_ACQ_REL);
		if (len)
			drop_range(g_heap, a, a + len);
		else
			remove_at(g_heap, k, c, (uint32_t)i);
		__atomic_add_fetch(&g_heap_seq, 1, __ATOMIC_RELEASE);
	}
	unlock();
}

int preload_heap_find(uint64_t addr, uint64_t *lo, uint64_t *hi, uint64_t *site)
{
	const struct heap_table *t = g_heap;
	if (!t)
		return 0;
	for (int tries = 0; tries < 2; tries++) {
		uint64_t s = __atomic_load_n(&g_heap_seq, __ATOMIC_ACQUIRE);
		if (s & 1)
			return -1;
		uint32_t ntop = __atomic_load_n(&t->ntop, __ATOMIC_RELAXED);
		struct heap_block b = { 0, 0, 0 };
		int k = top_of(t, ntop < HEAP_NCH ? ntop : HEAP_NCH, addr);
		if (k >= 0) {
			const struct heap_chunk *c = &t->ch[__atomic_load_n(&t->top_id[k], __ATOMIC_RELAXED) % HEAP_NCH];
			uint32_t n = __atomic_load_n(&c->n, __ATOMIC_RELAXED);
			uint32_t i = upper(&c->b[0].lo, 3, n < HEAP_CH ? n : HEAP_CH, addr);
			if (i) {
				b.lo = __atomic_load_n(&c->b[i - 1].lo, __ATOMIC_RELAXED);
				b.hi = __atomic_load_n(&c->b[i - 1].hi, __ATOMIC_RELAXED);
				b.site = __atomic_load_n(&c->b[i - 1].site, __ATOMIC_RELAXED);
			}
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&g_heap_seq, __ATOMIC_RELAXED) != s)
			continue;
		if (!b.hi || addr < b.lo || addr >= b.hi)
			return 0;
		*lo = b.lo, *hi = b.hi, *site = b.site;
		return 1;
	}
	return -1;
}
