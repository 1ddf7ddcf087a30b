/*
 * vprof's own DWARF CFI unwinder (preload/unwind.c): async-signal-safe,
 * no malloc, no locks, no stdio, no system calls; every stack read is
 * checked against the thread's stack first. See unwind.c.
 */
#ifndef VPROF_PRELOAD_UNWIND_H
#define VPROF_PRELOAD_UNWIND_H

#include <stdint.h>
#include <ucontext.h>

/* DWARF register numbers of x86-64: 0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi,
 * 5 rdi, 6 rbp, 7 rsp, 8-15 r8-r15, 16 the return address (rip). */
#define CFI_NREGS 17
#define CFI_RSP 7
#define CFI_RIP 16

struct preload_cfi_cursor {
	uint64_t reg[CFI_NREGS];   /* reg[CFI_RIP] is the frame's PC */
	uint32_t valid;            /* bit r: reg[r] is known */
	int exact;                 /* the PC was interrupted (not a return address) */
	uintptr_t lo, hi;          /* the stack: reads must lie in [lo, hi) */
};

/* Records the main thread (call once, from a constructor). */
void preload_cfi_init(void);
/* Forgets the cached frame recipes: an object was unloaded (dlclose). */
void preload_cfi_forget(void);
/* The top of the calling thread's stack: __libc_stack_end for the main
 * thread, the thread descriptor (at the top of its stack) for others. */
uintptr_t preload_cfi_stack_top(void);
/* Records the calling thread's stack bottom: the main thread's top less
 * RLIMIT_STACK (at least 128 MiB), another's from pthread_getattr_np.
 * Normal context (it may allocate), on the thread itself, before its
 * first sample. */
void preload_cfi_thread_begin(void);
/* The lowest address of the calling thread's stack: as recorded, else 1
 * GiB below its top. */
uintptr_t preload_cfi_stack_bottom(void);
/* A cursor on the interrupted frame of uc. Returns 0, or -1 when the
 * interrupted RSP is not on the thread's stack, [bottom, top) (a
 * coroutine's, an alternate signal stack): the cursor then has the PC
 * only and steps nowhere. */
int preload_cfi_init_ucontext(struct preload_cfi_cursor *c, const ucontext_t *uc);
/* One frame up. Returns 1 (c is the caller's frame), 0 at the end of the
 * stack (the return address is undefined or 0), -1 when the walk cannot
 * go on (no unwind information, an encoding or opcode not handled, a read
 * off the stack): the caller has c's frames up to here, nothing guessed. */
int preload_cfi_step(struct preload_cfi_cursor *c);
/* The stack of uc: PCs, the interrupted one first, at most max; *more
 * set when it was cut at max. Returns the number of PCs (at least 1).
 * After the first, each is a return address, or an interrupted PC (under
 * a signal trampoline) plus one: a caller looks each up less one. */
unsigned preload_cfi_backtrace(const ucontext_t *uc, uint64_t *pc, unsigned max, int *more);
/* The bounds [begin, end) of the function (its FDE) covering pc: 0, or
 * -1 if no unwind table covers it. Async-signal-safe. */
int preload_cfi_function(uint64_t pc, uint64_t *begin, uint64_t *end);

#endif
