/*
 * Interposers for the events vprof must see: thread creation (arm the new
 * thread) and image loading (record the image).
 *
 * dlopen must stay a sibling call: glibc finds the caller's RUNPATH from
 * the return address, so our wrapper scans first and then jumps to the real
 * dlopen with the caller's return address intact; the new image is recorded
 * at the next scan (next dlopen/dlclose, thread creation, or exit).
 *
 * Normal context only; the recursion flag keeps samples out of our code.
 */
#include "preload/preload.h"
#include "preload/sandbox.h"
#include "preload/unwind.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>

typedef int pthread_create_fn(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
typedef void *dlopen_fn(const char *, int);
typedef int dlclose_fn(void *);

static pthread_create_fn *g_real_create;
static dlopen_fn *g_real_dlopen;
static dlclose_fn *g_real_dlclose;

struct start {
	void *(*fn)(void *);
	void *arg;
	int prog_blocked;        /* a thread inherits its creator's mask */
	uint64_t sandbox;        /* ... and its seccomp filters (sandbox.c) */
	int used;                /* a record of g_starts: claimed */
};

/* Records for threads being made, not malloc'd: a program inside a
 * seccomp sandbox may not have made the calls malloc's first use makes
 * (getrandom) and may not make them now. malloc only when all are taken
 * by threads not started yet. */
#define STARTS 64
static struct start g_starts[STARTS];

static struct start *start_get(void)
{
	for (int i = 0; i < STARTS; i++) {
		int z = 0;
		if (__atomic_compare_exchange_n(&g_starts[i].used, &z, 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return &g_starts[i];
	}
	struct start *s = malloc(sizeof(*s));
	if (s)
		s->used = 0;
	return s;
}

static void start_put(struct start *s)
{
	if (s >= g_starts && s < g_starts + STARTS)
		__atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
	else
		free(s);
}

static void *trampoline(void *p)
{
	struct start s = *(struct start *)p;
	start_put(p);
	g_thread.prog_blocked = s.prog_blocked;
	preload_signals_note_kmask();   /* the mask it started with */
	preload_sandbox_thread_begin(s.sandbox);   /* arms it, unless sandboxed */
	return s.fn(s.arg);
}

__attribute__((visibility("default")))
int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	if (!g_real_create)
		g_real_create = (pthread_create_fn *)dlsym(RTLD_NEXT, "pthread_create");
	if (!g_vprof.active)
		return g_real_create(th, attr, fn, arg);
	uint64_t sandbox = preload_sandbox_state();
	g_thread.busy++;
	if (!preload_sandbox_stopped())
		preload_images_scan();
	struct start *s = start_get();
	g_thread.busy--;
	if (!s)
		return g_real_create(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->prog_blocked = g_thread.prog_blocked;
	s->sandbox = sandbox;
	int rc = g_real_create(th, attr, trampoline, s);
	if (rc)
		start_put(s);
	return rc;
}

__attribute__((visibility("default")))
void *dlopen(const char *file, int flags)
{
	if (!g_real_dlopen)
		g_real_dlopen = (dlopen_fn *)dlsym(RTLD_NEXT, "dlopen");
	if (g_vprof.active && !preload_sandbox_stopped()) {
		g_thread.busy++;
		preload_images_scan();
		g_thread.busy--;
	}
	return g_real_dlopen(file, flags);   /* sibling call: see above */
}

__attribute__((visibility("default")))
int dlclose(void *h)
{
	if (!g_real_dlclose)
		g_real_dlclose = (dlclose_fn *)dlsym(RTLD_NEXT, "dlclose");
	if (!g_vprof.active || preload_sandbox_stopped())
		return g_real_dlclose(h);
	g_thread.busy++;
	preload_images_scan();   /* record it if it came after the last scan */
	g_thread.busy--;
	int rc = g_real_dlclose(h);
	preload_cfi_forget();   /* the unwinder's cached frames may name its code */
	g_thread.busy++;
	preload_images_scan();   /* and its unload */
	g_thread.busy--;
	return rc;
}
