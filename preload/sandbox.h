/*
 * seccomp sandboxes (sandbox.c): what a sandbox the program entered lets
 * vprof do on a thread. A thread whose sandbox forbids any call that
 * sampling makes stops sampling before the sandbox is in force, and from
 * then on vprof makes on it only the calls the sandbox allows.
 *
 * Everything here is async-signal-safe.
 */
#ifndef VPROF_PRELOAD_SANDBOX_H
#define VPROF_PRELOAD_SANDBOX_H

#include <stdint.h>

/* The calls the exit path asks about (the others are sandbox.c's). */
enum { PRELOAD_SB_GETPID, PRELOAD_SB_CLOCK_PROCESS, PRELOAD_SB_GETRUSAGE };

/* May this thread make the call (no sandbox forbids it)? */
int preload_sandbox_allows(int call);
/* Has this thread stopped sampling at a sandbox (or at a refused call)? */
int preload_sandbox_stopped(void);
/* A call of vprof's that worked before failed with err (EPERM, ENOSYS,
 * EACCES): a sandbox vprof did not see being entered (a raw system call
 * installed it) refuses it. The thread stops sampling, makes no further
 * call of vprof's, and the spool counts it (once per thread). */
void preload_sandbox_refused(int err);
/* The process leaves from a stopped thread: its spool is marked exited
 * with only the calls the sandbox allows. */
void preload_sandbox_leave(void);
/* A thread inherits its creator's sandbox: the creator's state
 * (preload_sandbox_state), handed to the new thread's
 * preload_sandbox_thread_begin (or _inherit) first thing. */
uint64_t preload_sandbox_state(void);
void preload_sandbox_inherit(uint64_t state);

/* Count a thread that was not armed: made inside a sandbox. */
void preload_sandbox_unarmed(void);
/* A new thread, first thing (the pthread_create trampoline), with its
 * creator's preload_sandbox_state: armed (preload_thread_begin) unless a
 * sandbox it inherits, or one binding every thread, forbids it. */
void preload_sandbox_thread_begin(uint64_t inherited);
/* A fork child of a stopped thread inherits its sandbox: it is not
 * profiled, and drops of the parent's mappings and descriptors what the
 * sandbox lets it. Returns 1 if so (the caller leaves it unprofiled). */
int preload_sandbox_fork_child(void);

/* Constructor, before choosing a backend: a seccomp filter already in
 * force (the process was exec'd inside one) is probed in a child. -1,
 * with why, if it forbids what sampling needs; *no_perf if it forbids
 * perf_event_open (the perf backends are left out). Normal context. */
int preload_sandbox_start(int *no_perf, char *why, size_t whylen);
/* ... and once the backend is chosen: -1, with why, if the filter
 * forbids a call of that backend's. */
int preload_sandbox_check_mode(char *why, size_t whylen);

/* A system call without libc (and without our syscall() interposer):
 * returns the kernel's result, -errno on failure. */
long preload_raw_syscall(long nr, long a1, long a2, long a3, long a4, long a5, long a6);

#endif
