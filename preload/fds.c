/*
 * vprof's file descriptors. Normally there are none: a spool needs only
 * its MAP_SHARED mapping (its header names the owner, which is how a merge
 * tells a live one, see spool/spool.h), and a perf event lives on while
 * its ring (or, in signal mode, its header page) is mapped, its overflow
 * signals still coming after the descriptor is closed. So a program that
 * lists /proc/self/fd, or closes what it does not know, sees and breaks
 * nothing of vprof's.
 *
 * One case keeps a descriptor: a perf event that cannot be mapped at all
 * (the user's locked-memory allowance for perf, perf_event_mlock_kb and
 * RLIMIT_MEMLOCK, spent by earlier threads' rings). Closing it would stop
 * that thread's sampling, and our own later close() would hit whatever
 * file of the program took the number. Such a descriptor lives high
 * (upcall's move_to_tag) and is marked here; the interposed close() skips
 * it (reporting success, as if closed), and closefrom()/close_range()
 * close around it. Not covered: a program that dup2()s onto one of our
 * numbers, or closes through raw syscalls.
 *
 * preload_fd_is_ours also answers for the numbers our closed events had
 * (upcall_is_tag): their signals carry that number in si_fd.
 *
 * The bitmap is read in normal context by any thread; marks change with
 * atomics. Async-signal-safe.
 */
#include "preload/preload.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <sys/syscall.h>
#include <unistd.h>

#define MAX_FD 65536
static uint64_t g_ours[MAX_FD / 64];
static int g_lowest = INT_MAX;   /* lowest fd ever marked: fast path */

void preload_fd_own(int fd)
{
	if (fd < 0 || fd >= MAX_FD)
		return;
	__atomic_fetch_or(&g_ours[fd / 64], 1ull << (fd % 64), __ATOMIC_RELAXED);
	int lo = __atomic_load_n(&g_lowest, __ATOMIC_RELAXED);
	while (fd < lo && !__atomic_compare_exchange_n(&g_lowest, &lo, fd, 0, __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED))
		;
}

void preload_fd_disown(int fd)
{
	if (fd < 0 || fd >= MAX_FD)
		return;
	__atomic_fetch_and(&g_ours[fd / 64], ~(1ull << (fd % 64)), __ATOMIC_RELAXED);
}

static int ours(unsigned fd)
{
	return fd < MAX_FD && (int)fd >= g_lowest &&
	       (__atomic_load_n(&g_ours[fd / 64], __ATOMIC_RELAXED) >> (fd % 64) & 1);
}

int preload_fd_is_ours(int fd)
{
	return fd >= 0 && (ours((unsigned)fd) || upcall_is_tag(fd));
}

/* A fork child: every descriptor of ours belongs to the parent (its
 * threads' perf events). Close them all, raw. */
void preload_fd_close_all_ours(void)
{
	for (int w = 0; w < MAX_FD / 64; w++) {
		uint64_t bits = __atomic_exchange_n(&g_ours[w], 0, __ATOMIC_RELAXED);
		while (bits) {
			int b = __builtin_ctzll(bits);
			bits &= bits - 1;
			syscall(SYS_close, w * 64 + b);
		}
	}
}

__attribute__((visibility("default")))
int close(int fd)
{
	if (fd >= 0 && ours((unsigned)fd))
		return 0;
	return (int)syscall(SYS_close, fd);
}

/* Close [first, last] except ours, with the kernel's close_range. */
static int close_except(unsigned first, unsigned last, unsigned flags)
{
	unsigned lo = first;
	for (unsigned fd = first; fd <= last && fd < MAX_FD; fd++) {
		if (fd < (unsigned)g_lowest && g_lowest != INT_MAX) {
			fd = (unsigned)g_lowest - 1;    /* skip the unmarked stretch */
			continue;
		}
		if (!ours(fd))
			continue;
		if (fd > lo && syscall(SYS_close_range, lo, fd - 1, flags) < 0)
			return -1;
		lo = fd + 1;
	}
	if (lo <= last && lo >= first)
		return (int)syscall(SYS_close_range, lo, last, flags);
	return 0;
}

__attribute__((visibility("default")))
int close_range(unsigned first, unsigned last, int flags)
{
	if (first > last) {
		errno = EINVAL;
		return -1;
	}
	return close_except(first, last, (unsigned)flags);
}

__attribute__((visibility("default")))
void closefrom(int lowfd)
{
	if (lowfd < 0)
		lowfd = 0;
	if (close_except((unsigned)lowfd, ~0u, 0) == 0)
		return;
	/* No close_range (old kernel): the slow way, as glibc would. */
	for (int fd = lowfd; fd < MAX_FD; fd++)
		if (!ours((unsigned)fd))
			syscall(SYS_close, fd);
}
