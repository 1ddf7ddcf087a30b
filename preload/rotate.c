/*
 * The process's spool and its rotation (continuous mode, VPROF_EPOCH_SECS).
 *
 * Without rotation a process writes one spool for life; a server profiled
 * for days then keeps its samples out of the database until it exits. With
 * VPROF_EPOCH_SECS=S, every S seconds the process closes its spool (it
 * becomes finished: `vprof merge --follow` takes it) and goes on in a new
 * one, as DCPI's driver handed its full hash tables to the daemon.
 *
 * Writers. Every piece of code that writes the spool (the handler's PC
 * count and value hotlists, ring drains, image records, thread slot claim
 * and release) brackets the write with preload_spool_enter/_exit. enter
 * takes the current spool with a hazard protocol: load the current holder,
 * increment its in-flight count, check it is still current (else undo and
 * retry). A rotation stores the new holder as current first, so once a
 * retired holder's count is 0 no writer is in it and none can enter it:
 * it is then closed (marked, unmapped). Nothing waits: a retired spool
 * whose writer was interrupted (a thread stopped in the handler) stays
 * mapped until a later tick finds it empty, and no new rotation starts
 * meanwhile, so at most two spools are mapped at any time.
 *
 * Each sample is counted by exactly one writer into exactly one spool,
 * with the live `samples` counter of that spool: across a switch nothing
 * is lost or counted twice. A thread's slot belongs to one spool (its
 * rotation number, t->slot_seq): enter claims a slot in the new spool at
 * the thread's first write there; the old slot stays in the old spool,
 * whose merge reads every slot.
 *
 * Where the switch happens. preload_spool_tick runs on the sample path
 * (after a sample is counted or a ring drained, outside enter): a load and
 * a coarse clock read when rotation is on. At the deadline, the one thread
 * that takes the try-lock creates the next spool (spool_create: only
 * system calls, no allocation, as in a fork child), copies the image
 * records still in force, and swaps the current pointer; the others go on
 * counting. A process that takes no samples does not rotate: its open
 * spool holds what it sampled since the last rotation (a server gone idle
 * hands it over at its next sample or at exit).
 *
 * Spool marks (live.exited): 2 once rotated out (writers may remain), 3
 * once closed and unmapped (finished whoever owns it); 1 as before on a
 * normal exit of the process, in its last spool. A merge counts a process
 * once, at its last spool.
 *
 * Async-signal-safe throughout: atomics, system calls, no locks taken
 * blocking, no allocation.
 */
#include "preload/preload.h"

#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { H_FREE, H_CURRENT, H_RETIRED };

struct holder {
	struct spool sp;
	uint64_t seq;            /* rotation number, from 1, never reused */
	unsigned inflight;       /* writers inside */
	int state;
	uint64_t images_copied;  /* records already copied to the next spool */
};

#define HOLDERS 3
static struct holder g_h[HOLDERS];
static struct holder *g_cur;     /* atomic */
static struct holder *g_retired; /* atomic; written under g_lock */
static int g_lock;
static uint64_t g_seq;
static int g_rot_on;             /* rotation armed */
static uint64_t g_deadline;      /* CLOCK_MONOTONIC_COARSE ns */
static struct spool_params g_params;
static char g_exe[256], g_cmd[256];
/* upcall counts ring fallbacks (in a thread's handler) here, not in the
 * spool, which a rotation may unmap under it: enter moves them into the
 * spool entered. */
static uint64_t g_fallbacks;
/* User and system CPU already written into rotated-out spools: each spool
 * carries its own interval's (merge's [kernel] estimate is per spool). */
static uint64_t g_user_done, g_sys_done;

static struct holder *holder_of(struct spool *sp)
{
	return (struct holder *)((char *)sp - offsetof(struct holder, sp));
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

struct spool *preload_spool_enter(struct spool **prev)
{
	struct preload_thread *t = &g_thread;
	struct holder *h;
	*prev = t->sp;
	for (;;) {
		h = __atomic_load_n(&g_cur, __ATOMIC_SEQ_CST);
		if (!h)
			return NULL;
		__atomic_fetch_add(&h->inflight, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&g_cur, __ATOMIC_SEQ_CST) == h)
			break;
		__atomic_fetch_sub(&h->inflight, 1, __ATOMIC_SEQ_CST);
	}
	if (__atomic_load_n(&g_fallbacks, __ATOMIC_RELAXED)) {
		uint64_t n = __atomic_exchange_n(&g_fallbacks, 0, __ATOMIC_ACQ_REL);
		__atomic_fetch_add(&h->sp.hdr->live.ring_fallbacks, n, __ATOMIC_RELAXED);
	}
	if (t->slot_seq != h->seq) {
		/* First write of this thread in this spool: its slot here. */
		t->slot = t->tid ? spool_claim_slot(&h->sp, t->tid) : NULL;
		t->slot_seq = h->seq;
	}
	t->sp = &h->sp;
	return &h->sp;
}

void preload_spool_exit(struct spool *sp, struct spool *prev)
{
	g_thread.sp = prev;
	if (sp)
		__atomic_fetch_sub(&holder_of(sp)->inflight, 1, __ATOMIC_SEQ_CST);
}

int preload_spool_ready(void)
{
	return __atomic_load_n(&g_cur, __ATOMIC_ACQUIRE) != NULL;
}

/* Copy from's image records from index start on into to, MAP records
 * only, and only those in force: a record followed in from by another of
 * the same range (a rescan's duplicate, an unload, a later load) is left
 * out, so that days of dlopen/dlclose do not fill the next spools'
 * records. Returns the index copied up to. */
static uint64_t copy_images(struct spool *from, struct spool *to, uint64_t start)
{
	uint64_t n = __atomic_load_n(&from->hdr->live.image_seq, __ATOMIC_ACQUIRE);
	if (n > from->hdr->s.image_records)
		n = from->hdr->s.image_records;
	for (uint64_t i = start; i < n; i++) {
		const struct spool_image_record *r = &from->images[i];
		if (__atomic_load_n(&r->valid, __ATOMIC_ACQUIRE) != 1 || r->kind != SPOOL_IMG_MAP)
			continue;
		int superseded = 0;
		for (uint64_t j = i + 1; j < n && !superseded; j++) {
			const struct spool_image_record *q = &from->images[j];
			superseded = __atomic_load_n(&q->valid, __ATOMIC_ACQUIRE) == 1 &&
				     q->lo == r->lo && q->hi == r->hi;
		}
		if (superseded)
			continue;
		uint32_t bl = r->build_id_len > SPOOL_BUILD_ID_MAX ? SPOOL_BUILD_ID_MAX : r->build_id_len;
		spool_image_gen(to, (int)r->kind, r->bias, r->lo, r->hi, r->build_id, bl, r->path,
				r->gen);
	}
	/* Samples in `to` must not carry a generation older than its records. */
	uint32_t g = __atomic_load_n(&from->gen, __ATOMIC_ACQUIRE);
	uint32_t have = __atomic_load_n(&to->gen, __ATOMIC_ACQUIRE);
	while (g > have && !__atomic_compare_exchange_n(&to->gen, &have, g, 0, __ATOMIC_ACQ_REL,
							 __ATOMIC_ACQUIRE))
		;
	return n;
}

/* The user and system CPU of the process since the last call, into live
 * (getrusage splits the total by the kernel's tick counts; the perf events
 * see user mode only and reports show the system part as [kernel]). The
 * raw system call: AS-safe. */
static void cpu_split(struct spool_live *live)
{
	struct rusage ru;
	if (syscall(SYS_getrusage, RUSAGE_SELF, &ru) != 0)
		return;
	uint64_t u = (uint64_t)ru.ru_utime.tv_sec * 1000000000ull + (uint64_t)ru.ru_utime.tv_usec * 1000ull;
	uint64_t s = (uint64_t)ru.ru_stime.tv_sec * 1000000000ull + (uint64_t)ru.ru_stime.tv_usec * 1000ull;
	live->cpu_user_ns = u > g_user_done ? u - g_user_done : 0;
	live->cpu_sys_ns = s > g_sys_done ? s - g_sys_done : 0;
	if (u > g_user_done)
		g_user_done = u;
	if (s > g_sys_done)
		g_sys_done = s;
	__atomic_store_n(&live->cpu_split, 1, __ATOMIC_RELEASE);
}

/* Under g_lock, with r's writers gone: hand r over for merging. */
static void close_retired(struct holder *r)
{
	struct holder *c = __atomic_load_n(&g_cur, __ATOMIC_SEQ_CST);
	/* Images recorded in r by writers that entered it before the swap. */
	if (c && c != r)
		copy_images(&r->sp, &c->sp, r->images_copied);
	__atomic_store_n(&r->sp.hdr->live.exited, 3, __ATOMIC_RELEASE);
	spool_forget(&r->sp);
	r->state = H_FREE;
	__atomic_store_n(&g_retired, NULL, __ATOMIC_SEQ_CST);
}

static void rotate(uint64_t now)
{
	struct holder *c = __atomic_load_n(&g_cur, __ATOMIC_SEQ_CST), *n = NULL;
	uint64_t period = g_vprof.cfg.epoch_secs * 1000000000ull;
	while (g_deadline <= now)
		g_deadline += period;
	if (!c)
		return;
	for (int i = 0; i < HOLDERS && !n; i++)
		if (g_h[i].state == H_FREE && &g_h[i] != c)
			n = &g_h[i];
	if (!n)
		return;
	/* A failure (disk full, spool directory gone) keeps the current spool:
	 * it holds its samples until the next try, one period later. */
	if (spool_create(&n->sp, g_vprof.spool_dir, &g_params) < 0)
		return;
	n->sp.gen = c->sp.gen;
	c->images_copied = copy_images(&c->sp, &n->sp, 0);
	n->seq = ++g_seq;
	n->state = H_CURRENT;
	cpu_split(&c->sp.hdr->live);
	__atomic_store_n(&c->sp.hdr->live.exited, 2, __ATOMIC_RELEASE);
	c->state = H_RETIRED;
	__atomic_store_n(&g_retired, c, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g_cur, n, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&c->inflight, __ATOMIC_SEQ_CST) == 0)
		close_retired(c);
}

static int try_lock(void)
{
	int zero = 0;
	return __atomic_compare_exchange_n(&g_lock, &zero, 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

static void unlock(void)
{
	__atomic_store_n(&g_lock, 0, __ATOMIC_RELEASE);
}

void preload_spool_tick(void)
{
	if (!__atomic_load_n(&g_rot_on, __ATOMIC_RELAXED))
		return;
	struct holder *r = __atomic_load_n(&g_retired, __ATOMIC_ACQUIRE);
	uint64_t now = mono_ns();
	int due = now >= __atomic_load_n(&g_deadline, __ATOMIC_RELAXED);
	if (r ? __atomic_load_n(&r->inflight, __ATOMIC_SEQ_CST) != 0 : !due)
		return;
	int saved = errno;
	if (try_lock()) {
		r = __atomic_load_n(&g_retired, __ATOMIC_SEQ_CST);
		if (r && __atomic_load_n(&r->inflight, __ATOMIC_SEQ_CST) == 0)
			close_retired(r);
		if (!__atomic_load_n(&g_retired, __ATOMIC_SEQ_CST) && now >= g_deadline &&
		    __atomic_load_n(&g_rot_on, __ATOMIC_RELAXED))
			rotate(now);
		unlock();
	}
	errno = saved;
}

static void copy_cstr(char *dst, size_t cap, const char *src)
{
	size_t i = 0;
	for (; src && src[i] && i + 1 < cap; i++)
		dst[i] = src[i];
	dst[i] = 0;
}

int preload_spool_first(const struct spool_params *p)
{
	struct holder *h = NULL;
	for (int i = 0; i < HOLDERS && !h; i++)
		if (g_h[i].state == H_FREE)
			h = &g_h[i];
	if (!h)
		return -EBUSY;
	g_params = *p;
	copy_cstr(g_exe, sizeof(g_exe), p->exe);
	copy_cstr(g_cmd, sizeof(g_cmd), p->cmdline);
	g_params.exe = g_exe;
	g_params.cmdline = g_cmd;
	int rc = spool_create(&h->sp, g_vprof.spool_dir, &g_params);
	if (rc < 0)
		return rc;
	h->seq = ++g_seq;
	h->state = H_CURRENT;
	h->images_copied = 0;
	upcall_ring_fallbacks = &g_fallbacks;
	g_deadline = mono_ns() + g_vprof.cfg.epoch_secs * 1000000000ull;
	__atomic_store_n(&g_cur, h, __ATOMIC_SEQ_CST);
	__atomic_store_n(&g_rot_on, g_vprof.cfg.epoch_secs > 0, __ATOMIC_RELEASE);
	return 0;
}

void preload_spool_fork_child(struct spool *parent)
{
	/* One thread now, ours, in normal context: no writer is inside. The
	 * parent's current spool is handed back (the child copies its image
	 * records, then forgets it); any other is unmapped here. */
	struct holder *c = __atomic_load_n(&g_cur, __ATOMIC_SEQ_CST);
	memset(parent, 0, sizeof(*parent));
	parent->fd = -1;
	if (c)
		*parent = c->sp;
	for (int i = 0; i < HOLDERS; i++) {
		/* Retired, or half made by a rotation on a thread that the
		 * fork did not copy. */
		if (&g_h[i] != c && g_h[i].sp.hdr)
			spool_forget(&g_h[i].sp);
		memset(&g_h[i], 0, sizeof(g_h[i]));
		g_h[i].sp.fd = -1;
	}
	g_cur = NULL;
	g_retired = NULL;
	g_lock = 0;
	g_rot_on = 0;
	g_fallbacks = 0;         /* the parent's */
	g_user_done = g_sys_done = 0;   /* the child's rusage starts at 0 */
	g_thread.sp = NULL;
	g_thread.slot = NULL;
	g_thread.slot_seq = 0;
}

void preload_spool_exit_process(uint64_t cpu_ns)
{
	/* No rotation from now on: this spool is the process's last. A
	 * rotation in progress on another thread is let finish (it takes
	 * microseconds; a thread stopped inside one is not waited for). */
	__atomic_store_n(&g_rot_on, 0, __ATOMIC_RELEASE);
	int locked = 0;
	for (int i = 0; i < 1000 && !(locked = try_lock()); i++)
		sched_yield();
	struct holder *r = __atomic_load_n(&g_retired, __ATOMIC_SEQ_CST);
	if (locked && r && __atomic_load_n(&r->inflight, __ATOMIC_SEQ_CST) == 0)
		close_retired(r);
	struct holder *c = __atomic_load_n(&g_cur, __ATOMIC_SEQ_CST);
	if (c) {
		struct spool_live *live = &c->sp.hdr->live;
		uint64_t n = __atomic_exchange_n(&g_fallbacks, 0, __ATOMIC_ACQ_REL);
		__atomic_fetch_add(&live->ring_fallbacks, n, __ATOMIC_RELAXED);
		live->cpu_ns = cpu_ns;
		cpu_split(live);
		__atomic_store_n(&live->exited, 1, __ATOMIC_RELEASE);
	}
	if (locked)
		unlock();
	/* The mapping stays until the process is gone: other threads may
	 * still be sampled into it. */
}
