/*
 * The handler's stack switches. Async-signal-safe.
 *
 * preload_call_on_stack(fn, sig, si, uc, stack_top): call
 * fn(sig, si, uc) with the stack pointer at stack_top (16-byte aligned),
 * then return on our own stack. vprof's handler runs on its alternate
 * signal stack; a program's SIGPROF handler that did not ask for one
 * (no SA_ONSTACK) must run on the thread's own stack, below the
 * interrupted frame and its red zone, as the kernel would have run it.
 */
	.text
	.globl	preload_call_on_stack
	.hidden	preload_call_on_stack
	.type	preload_call_on_stack, @function
preload_call_on_stack:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	movq	%rdi, %rax
	movl	%esi, %edi
	movq	%rdx, %rsi
	movq	%rcx, %rdx
	movq	%r8, %rsp
	call	*%rax
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	preload_call_on_stack, .-preload_call_on_stack

/*
 * preload_sigprof_entry(sig, si, uc): the SIGPROF handler the kernel
 * calls. vprof's work (preload_dispatch) runs on the thread's handler
 * stack (thread.c), never below the stack the kernel delivered on: that
 * may be a program's 8 KiB alternate stack, a coroutine's, or a thread's
 * last kilobytes, and all the kernel's frame leaves there is the room
 * unprofiled code would have had. Already on the handler stack (the
 * kernel delivered there, or a signal nested in a program's handler that
 * runs on it), it stays and goes on below. A thread without one (armed
 * from outside, or its mapping failed) runs it where it is.
 *
 * When preload_dispatch returns non-zero the program's own disposition
 * is due (its SIGPROF, not one of our samples): preload_dispatch_forward
 * is entered from here with the kernel's frame as its caller's, on the
 * stack the kernel chose, so the program's handler runs where it would
 * have without vprof and its unwinder sees an ordinary signal frame.
 *
 * The registers are free: the kernel's frame holds the interrupted ones,
 * and the return (to the signal trampoline) restores them all.
 */
	/* Its own section, as gcc's -ffunction-sections would give it: the
	 * link places it with the handler's other code (hot-path.txt). */
	.section .text.preload_sigprof_entry,"ax",@progbits
	.globl	preload_sigprof_entry
	.hidden	preload_sigprof_entry
	.type	preload_sigprof_entry, @function
preload_sigprof_entry:
	.cfi_startproc
	movq	%rsp, %rbx
	.cfi_def_cfa_register %rbx
	movl	%edi, %r12d
	movq	%rsi, %r13
	movq	%rdx, %r14
	movq	preload_hstack_lo@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rcx
	testq	%rcx, %rcx
	jz	1f			/* no handler stack */
	cmpq	%rcx, %rsp
	jb	2f
	movq	preload_hstack_end@gottpoff(%rip), %rax
	cmpq	%fs:(%rax), %rsp
	jb	1f			/* on it already */
2:	movq	preload_hstack_top@gottpoff(%rip), %rax
	movq	%fs:(%rax), %rsp
1:	andq	$-16, %rsp
	call	preload_dispatch
	movq	%rbx, %rsp
	.cfi_def_cfa_register %rsp
	testl	%eax, %eax
	jnz	3f
	ret
3:	movl	%r12d, %edi
	movq	%r13, %rsi
	movq	%r14, %rdx
	jmp	preload_dispatch_forward
	.cfi_endproc
	.size	preload_sigprof_entry, .-preload_sigprof_entry

	.section .note.GNU-stack,"",@progbits
