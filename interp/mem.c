/* interp/mem.c — fault-safe access to the program's memory.
 *
 * Owns the only code that touches program memory on the interpreter's
 * behalf: a few leaf assembly routines placed between two labels. They use
 * no stack, so when one of them faults, interp_fault_fixup (called by the
 * SIGSEGV/SIGBUS handler) can move RIP to a recovery stub that returns
 * -EFAULT straight to the routine's caller.
 *
 * Workload: one call per interpreted load or store (1..64 bytes), so the
 * common sizes take a single mov, not rep movsb (whose start-up costs more
 * than the whole instruction should). The ld/st routines of 1/2/4/8 bytes
 * are the run loop's fast path (internal.h): a load returns value and
 * status in rax:rdx, and a store is a single mov, which needs no write
 * probe when it is the instruction's only store.
 *
 * Concurrency: every routine may run on any thread at any time, including
 * in signal handlers; the fixup only looks at the faulting RIP.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include "interp/interp.h"
#include "interp/shadow.h"

/* Symbols from the assembly below. */
extern char interp_probe_begin[], interp_probe_end[];
extern char interp_probe_fault[], interp_probe_fault16[];
extern char interp_cas16_begin[], interp_cas16_end[];

__asm__(
	".text\n"
	".p2align 4\n"
	".globl interp_probe_begin\n .hidden interp_probe_begin\n"
	"interp_probe_begin:\n"

	/* struct interp_ld ld{1,2,4,8}(uint64_t addr): value in rax, 0 in
	 * rdx; on a fault the recovery stub returns with rdx = -EFAULT */
	".globl interp_mem_ld1_raw\n .hidden interp_mem_ld1_raw\n"
	"interp_mem_ld1_raw:\n"
	"	mov $-14, %rdx\n	movzbl (%rdi), %eax\n	xor %edx, %edx\n	ret\n"
	".globl interp_mem_ld2_raw\n .hidden interp_mem_ld2_raw\n"
	"interp_mem_ld2_raw:\n"
	"	mov $-14, %rdx\n	movzwl (%rdi), %eax\n	xor %edx, %edx\n	ret\n"
	".globl interp_mem_ld4_raw\n .hidden interp_mem_ld4_raw\n"
	"interp_mem_ld4_raw:\n"
	"	mov $-14, %rdx\n	mov (%rdi), %eax\n	xor %edx, %edx\n	ret\n"
	".globl interp_mem_ld8_raw\n .hidden interp_mem_ld8_raw\n"
	"interp_mem_ld8_raw:\n"
	"	mov $-14, %rdx\n	mov (%rdi), %rax\n	xor %edx, %edx\n	ret\n"
	/* int st{1,2,4,8}(uint64_t addr, uint64_t v): one mov, which writes
	 * nothing if it faults (so it needs no write probe) */
	".globl interp_mem_st1_raw\n .hidden interp_mem_st1_raw\n"
	"interp_mem_st1_raw:\n"
	"	mov %sil, (%rdi)\n	xor %eax, %eax\n	ret\n"
	".globl interp_mem_st2_raw\n .hidden interp_mem_st2_raw\n"
	"interp_mem_st2_raw:\n"
	"	mov %si, (%rdi)\n	xor %eax, %eax\n	ret\n"
	".globl interp_mem_st4_raw\n .hidden interp_mem_st4_raw\n"
	"interp_mem_st4_raw:\n"
	"	mov %esi, (%rdi)\n	xor %eax, %eax\n	ret\n"
	".globl interp_mem_st8_raw\n .hidden interp_mem_st8_raw\n"
	"interp_mem_st8_raw:\n"
	"	mov %rsi, (%rdi)\n	xor %eax, %eax\n	ret\n"

	/* int copy(void *dst, const void *src, size_t n): both directions */
	".globl interp_mem_copy_raw\n .hidden interp_mem_copy_raw\n"
	".type interp_mem_copy_raw,@function\n"
	"interp_mem_copy_raw:\n"
	"	cmp $8, %rdx\n	je 8f\n"
	"	cmp $4, %rdx\n	je 4f\n"
	"	cmp $1, %rdx\n	je 1f\n"
	"	cmp $2, %rdx\n	je 2f\n"
	"	cmp $16, %rdx\n	je 16f\n"
	"	mov %rdx, %rcx\n	rep movsb\n	xor %eax, %eax\n	ret\n"
	"8:	mov (%rsi), %rax\n	mov %rax, (%rdi)\n	xor %eax, %eax\n	ret\n"
	"4:	mov (%rsi), %eax\n	mov %eax, (%rdi)\n	xor %eax, %eax\n	ret\n"
	"1:	movzbl (%rsi), %eax\n	mov %al, (%rdi)\n	xor %eax, %eax\n	ret\n"
	"2:	movzwl (%rsi), %eax\n	mov %ax, (%rdi)\n	xor %eax, %eax\n	ret\n"
	"16:	mov (%rsi), %rax\n	mov 8(%rsi), %rcx\n"
	"	mov %rax, (%rdi)\n	mov %rcx, 8(%rdi)\n	xor %eax, %eax\n	ret\n"

	/* int wprobe(uint64_t addr, size_t n), n >= 1: lock or $0 on the
	 * first byte and on each later page start up to the last byte */
	".globl interp_mem_wprobe_raw\n .hidden interp_mem_wprobe_raw\n"
	"interp_mem_wprobe_raw:\n"
	"	lea -1(%rdi,%rsi), %rsi\n"
	"	lock orb $0, (%rdi)\n"
	"	and $-4096, %rdi\n"
	"1:	add $4096, %rdi\n"
	"	cmp %rsi, %rdi\n"
	"	ja 2f\n"
	"	lock orb $0, (%rdi)\n"
	"	jmp 1b\n"
	"2:	xor %eax, %eax\n	ret\n"

	/* int cas(uint64_t addr, void *expect, const void *desired, unsigned size)
	 * size 1/2/4/8 */
	".globl interp_mem_cas_raw\n .hidden interp_mem_cas_raw\n"
	"interp_mem_cas_raw:\n"
	"	cmp $8, %ecx\n	je 8f\n"
	"	cmp $4, %ecx\n	je 4f\n"
	"	cmp $2, %ecx\n	je 2f\n"
	"	movzbl (%rsi), %eax\n	movzbl (%rdx), %r8d\n"
	"	lock cmpxchg %r8b, (%rdi)\n	jne 1f\n	mov $1, %eax\n	ret\n"
	"1:	mov %al, (%rsi)\n	xor %eax, %eax\n	ret\n"
	"2:	movzwl (%rsi), %eax\n	movzwl (%rdx), %r8d\n"
	"	lock cmpxchg %r8w, (%rdi)\n	jne 1f\n	mov $1, %eax\n	ret\n"
	"1:	mov %ax, (%rsi)\n	xor %eax, %eax\n	ret\n"
	"4:	mov (%rsi), %eax\n	mov (%rdx), %r8d\n"
	"	lock cmpxchg %r8d, (%rdi)\n	jne 1f\n	mov $1, %eax\n	ret\n"
	"1:	mov %eax, (%rsi)\n	xor %eax, %eax\n	ret\n"
	"8:	mov (%rsi), %rax\n	mov (%rdx), %r8\n"
	"	lock cmpxchg %r8, (%rdi)\n	jne 1f\n	mov $1, %eax\n	ret\n"
	"1:	mov %rax, (%rsi)\n	xor %eax, %eax\n	ret\n"

	/* 16-byte CAS needs rbx: kept in r9, restored by its own recovery */
	".globl interp_cas16_begin\n .hidden interp_cas16_begin\n"
	".globl interp_mem_cas16_raw\n .hidden interp_mem_cas16_raw\n"
	"interp_cas16_begin:\n"
	"interp_mem_cas16_raw:\n"
	"	mov %rbx, %r9\n"
	"	mov %rdx, %r8\n"
	"	mov (%rsi), %rax\n	mov 8(%rsi), %rdx\n"
	"	mov (%r8), %rbx\n	mov 8(%r8), %rcx\n"
	"	lock cmpxchg16b (%rdi)\n"
	"	mov %r9, %rbx\n"
	"	jne 1f\n	mov $1, %eax\n	ret\n"
	"1:	mov %rax, (%rsi)\n	mov %rdx, 8(%rsi)\n	xor %eax, %eax\n	ret\n"
	".globl interp_cas16_end\n .hidden interp_cas16_end\n"
	"interp_cas16_end:\n"

	".globl interp_probe_fault16\n .hidden interp_probe_fault16\n"
	"interp_probe_fault16:\n"
	"	mov %r9, %rbx\n"
	".globl interp_probe_fault\n .hidden interp_probe_fault\n"
	"interp_probe_fault:\n"
	"	mov $-14, %eax\n"	/* -EFAULT */
	"	ret\n"
	".globl interp_probe_end\n .hidden interp_probe_end\n"
	"interp_probe_end:\n"
);

int interp_mem_copy_raw(void *dst, const void *src, size_t n);
int interp_mem_wprobe_raw(uint64_t addr, size_t n);
int interp_mem_cas_raw(uint64_t addr, void *expect, const void *desired, unsigned size);
int interp_mem_cas16_raw(uint64_t addr, void *expect, const void *desired);

/* Co-simulation (shadow.c): while the thread has a shadow, loads see its
 * buffered stores and stores/CAS go to it instead of memory. */
#define SHADOW(call) \
	do { \
		struct interp_shadow *sh_ = interp_shadow_cur; \
		if (__builtin_expect(sh_ != NULL, 0)) \
			return call; \
	} while (0)

int interp_mem_load(void *dst, uint64_t src, size_t n)
{
	if (n == 0)
		return 0;
	SHADOW(interp_shadow_load(sh_, dst, src, n));
	return interp_mem_copy_raw(dst, (const void *)src, n);
}

int interp_mem_store(uint64_t dst, const void *src, size_t n)
{
	if (n == 0)
		return 0;
	SHADOW(interp_shadow_store(sh_, dst, src, n));
	return interp_mem_copy_raw((void *)dst, src, n);
}

int interp_mem_wprobe(uint64_t addr, size_t n)
{
	if (n == 0)
		return 0;
	return interp_mem_wprobe_raw(addr, n);
}

int interp_mem_cas(uint64_t addr, void *expect, const void *desired, unsigned size)
{
	SHADOW(interp_shadow_cas(sh_, addr, expect, desired, size));
	if (size == 16)
		return interp_mem_cas16_raw(addr, expect, desired);
	return interp_mem_cas_raw(addr, expect, desired, size);
}

int interp_fault_fixup(ucontext_t *uc)
{
	greg_t *g = uc->uc_mcontext.gregs;
	char *pc = (char *)g[REG_RIP];

	if (pc < interp_probe_begin || pc >= interp_probe_end)
		return 0;
	if (pc >= interp_cas16_begin && pc < interp_cas16_end)
		g[REG_RIP] = (greg_t)interp_probe_fault16;
	else
		g[REG_RIP] = (greg_t)interp_probe_fault;
	return 1;
}
