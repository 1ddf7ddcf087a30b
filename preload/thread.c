/*
 * Per-thread set-up and tear-down: alternate signal stack (the interpreter
 * will push below the interrupted stack pointer, so the handler must run
 * elsewhere), a slot in the spool, and the thread's trigger.
 *
 * Runs on the thread concerned, in normal context (constructor, the
 * pthread_create trampoline, the fork child handler, the key destructor at
 * thread exit). Not signal-safe.
 */
#include "preload/preload.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_key_t g_exit_key;
static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;

static void on_thread_exit(void *unused)
{
	preload_thread_end();
}

static void make_key(void)
{
	pthread_key_create(&g_exit_key, on_thread_exit);
}

void preload_thread_begin(void)
{
	struct preload_thread *t = &g_thread;
	if (!g_vprof.active || t->armed)
		return;
	t->busy = 1;
	pthread_once(&g_key_once, make_key);
	pthread_setspecific(g_exit_key, (void *)1);   /* non-NULL: run the destructor */

	if (!t->altstack) {
		stack_t cur;
		/* Leave a stack the program set up alone. */
		if (sigaltstack(NULL, &cur) == 0 && (cur.ss_flags & SS_DISABLE)) {
			void *m = mmap(NULL, PRELOAD_ALTSTACK, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
			if (m != MAP_FAILED) {
				stack_t ss = { .ss_sp = m, .ss_size = PRELOAD_ALTSTACK, .ss_flags = 0 };
				if (sigaltstack(&ss, NULL) == 0)
					t->altstack = m;
				else
					munmap(m, PRELOAD_ALTSTACK);
			}
		}
	}
	pid_t tid = (pid_t)syscall(SYS_gettid);
	t->slot = merge_spool_claim_slot(&g_vprof.spool, (uint32_t)tid);
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)tid << 32) ^ (uint64_t)(uintptr_t)t;
	if (g_vprof.cfg.verify && preload_verify_thread_begin)
		preload_verify_thread_begin();
	if (upcall_thread_start(&t->up, g_vprof.backend, g_vprof.period, seed) == 0) {
		preload_fd_own(t->up.fd);
		t->armed = 1;
		__atomic_fetch_add(&g_vprof.spool.hdr->live.threads, 1, __ATOMIC_RELAXED);
	}
	t->busy = 0;
}

void preload_thread_end(void)
{
	struct preload_thread *t = &g_thread;
	sigset_t block, old;
	if (!g_vprof.active)
		return;
	/* With the trigger stopped and SIGPROF blocked, no handler can be
	 * counting into the slot while it is folded away. */
	sigemptyset(&block);
	sigaddset(&block, UPCALL_SIGNAL);
	pthread_sigmask(SIG_BLOCK, &block, &old);
	t->busy = 1;
	if (t->armed) {
		preload_fd_disown(t->up.fd);
		upcall_thread_stop(&t->up);
	}
	t->armed = 0;
	merge_spool_release_slot(&g_vprof.spool, t->slot);
	t->slot = NULL;
	t->busy = 0;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	/* The alternate stack stays: the thread is ending, and unmapping it
	 * under a handler that might still run would be worse than the leak
	 * of one 64 KiB mapping per thread, which the kernel reclaims... only
	 * at exit. So unmap it after disabling it. */
	if (t->altstack) {
		stack_t ss = { .ss_flags = SS_DISABLE };
		if (sigaltstack(&ss, NULL) == 0)
			munmap(t->altstack, PRELOAD_ALTSTACK);
		t->altstack = NULL;
	}
}
