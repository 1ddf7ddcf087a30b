/*
 * libvprof-heap.so: the allocation interposers of cache simulation's
 * data objects. `vprof run --cachesim` preloads it after libvprof.so.
 * Each function passes the call to the next definition in the link
 * order (the C library's, or an allocator preloaded or linked after
 * vprof), found with dlsym(RTLD_NEXT) at the first call, and reports the
 * block to libvprof.so (vprof_heap_alloc, vprof_heap_free in
 * preload/heap.c, which keeps blocks of 4 KiB and more with their
 * allocation site). The program's allocator, its results and errno are
 * unchanged. Without libvprof.so in the process (a child that dropped
 * it), only the forwarding remains.
 *
 * While dlsym runs (it may allocate), allocations come from a small
 * static arena; its blocks are never freed.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>

#define EXPORT __attribute__((visibility("default")))
#define HEAP_MIN 4096

static void *(*n_malloc)(size_t);
static void *(*n_calloc)(size_t, size_t);
static void *(*n_realloc)(void *, size_t);
static void (*n_free)(void *);
static void *(*n_aligned_alloc)(size_t, size_t);
static int (*n_posix_memalign)(void **, size_t, size_t);
static void *(*n_memalign)(size_t, size_t);
static void *(*n_valloc)(size_t);
static void *(*n_mmap)(void *, size_t, int, int, int, off_t);
static int (*n_munmap)(void *, size_t);
static void (*h_alloc)(void *, size_t, void *, void *);
static void (*h_free)(void *, size_t, void *);
static int g_ready;
static __thread int t_resolving __attribute__((tls_model("initial-exec")));

/* The arena used while resolving: 16-byte aligned, a size word before
 * each block (realloc copies from it). */
static _Alignas(16) unsigned char g_boot[64 << 10];
static size_t g_boot_used;

static int in_boot(const void *p)
{
	return (const unsigned char *)p >= g_boot && (const unsigned char *)p < g_boot + sizeof(g_boot);
}

static void *boot_alloc(size_t n)
{
	size_t need = (n + 16 + 15) & ~(size_t)15;
	size_t at = __atomic_fetch_add(&g_boot_used, need, __ATOMIC_RELAXED);
	if (at + need > sizeof(g_boot))
		return NULL;
	*(size_t *)(g_boot + at) = n;
	return g_boot + at + 16;
}

static void resolve(void)
{
	if (__atomic_load_n(&g_ready, __ATOMIC_ACQUIRE))
		return;
	int e = errno;
	t_resolving = 1;
	n_malloc = dlsym(RTLD_NEXT, "malloc");
	n_calloc = dlsym(RTLD_NEXT, "calloc");
	n_realloc = dlsym(RTLD_NEXT, "realloc");
	n_free = dlsym(RTLD_NEXT, "free");
	n_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	n_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	n_memalign = dlsym(RTLD_NEXT, "memalign");
	n_valloc = dlsym(RTLD_NEXT, "valloc");
	n_mmap = dlsym(RTLD_NEXT, "mmap");
	n_munmap = dlsym(RTLD_NEXT, "munmap");
	h_alloc = dlsym(RTLD_DEFAULT, "vprof_heap_alloc");
	h_free = dlsym(RTLD_DEFAULT, "vprof_heap_free");
	t_resolving = 0;
	errno = e;
	__atomic_store_n(&g_ready, 1, __ATOMIC_RELEASE);
}

__attribute__((constructor)) static void heap_init(void)
{
	resolve();
}

/* libvprof.so's constructor calls this before it samples, whichever
 * library's constructor runs first. */
EXPORT void vprof_heap_ready(void)
{
	resolve();
}

/* Reports a block allocated by the call returning to ra. */
#define NOTE(p, n)                                                                               \
	do {                                                                                     \
		if ((p) && (n) >= HEAP_MIN && h_alloc)                                           \
			h_alloc((p), (n), __builtin_return_address(0), __builtin_dwarf_cfa());   \
	} while (0)

EXPORT void *malloc(size_t n)
{
	if (!g_ready) {
		if (t_resolving)
			return boot_alloc(n);
		resolve();
	}
	void *p = n_malloc(n);
	NOTE(p, n);
	return p;
}

EXPORT void *calloc(size_t k, size_t n)
{
	if (!g_ready) {
		if (t_resolving) {
			size_t t;
			return __builtin_mul_overflow(k, n, &t) ? NULL : boot_alloc(t);   /* static: zero */
		}
		resolve();
	}
	void *p = n_calloc(k, n);
	size_t t;
	if (!__builtin_mul_overflow(k, n, &t))
		NOTE(p, t);
	return p;
}

EXPORT void free(void *p)
{
	if (!p || in_boot(p))
		return;
	if (!g_ready)
		resolve();
	if (h_free)
		h_free(p, 0, __builtin_return_address(0));
	n_free(p);
}

/* realloc's and reallocarray's work, for the call returning to ra from
 * the frame whose CFA is cfa: the old block ends where the new one is
 * made (or where realloc(p, 0) freed it). */
static void *resize(void *old, size_t n, void *ra, void *cfa)
{
	void *p;
	if (in_boot(old)) {
		size_t was = *(const size_t *)((const unsigned char *)old - 16);
		if ((p = n_malloc(n)))
			memcpy(p, old, was < n ? was : n);
	} else {
		p = n_realloc(old, n);
		if (old && h_free && (p || !n))
			h_free(old, 0, ra);
	}
	if (p && n >= HEAP_MIN && h_alloc)
		h_alloc(p, n, ra, cfa);
	return p;
}

EXPORT void *realloc(void *old, size_t n)
{
	if (!g_ready) {
		if (t_resolving)
			return boot_alloc(n);
		resolve();
	}
	return resize(old, n, __builtin_return_address(0), __builtin_dwarf_cfa());
}

EXPORT void *reallocarray(void *old, size_t k, size_t n)
{
	size_t t;
	if (__builtin_mul_overflow(k, n, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	if (!g_ready)
		resolve();
	return resize(old, t, __builtin_return_address(0), __builtin_dwarf_cfa());
}

EXPORT void *aligned_alloc(size_t a, size_t n)
{
	if (!g_ready)
		resolve();
	void *p = n_aligned_alloc(a, n);
	NOTE(p, n);
	return p;
}

EXPORT int posix_memalign(void **out, size_t a, size_t n)
{
	if (!g_ready)
		resolve();
	int rc = n_posix_memalign(out, a, n);
	if (!rc)
		NOTE(*out, n);
	return rc;
}

EXPORT void *memalign(size_t a, size_t n)
{
	if (!g_ready)
		resolve();
	void *p = n_memalign(a, n);
	NOTE(p, n);
	return p;
}

EXPORT void *valloc(size_t n)
{
	if (!g_ready)
		resolve();
	void *p = n_valloc(n);
	NOTE(p, n);
	return p;
}

/* Anonymous mappings the program makes itself are blocks too; any
 * mapping over kept blocks ends them. */
EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (!g_ready)
		resolve();
	void *p = n_mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && h_free && (flags & MAP_FIXED))
		h_free(p, len, __builtin_return_address(0));
	if (p != MAP_FAILED && (flags & MAP_ANONYMOUS))
		NOTE(p, len);
	return p;
}

EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
	__attribute__((alias("mmap")));

EXPORT int munmap(void *addr, size_t len)
{
	if (!g_ready)
		resolve();
	int rc = n_munmap(addr, len);
	if (!rc && h_free && len)
		h_free(addr, len, __builtin_return_address(0));
	return rc;
}
