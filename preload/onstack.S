/*
 * preload_call_on_stack(fn, sig, si, uc, stack_top): call
 * fn(sig, si, uc) with the stack pointer at stack_top (16-byte aligned),
 * then return on our own stack. vprof's handler runs on its alternate
 * signal stack; a program's SIGPROF handler that did not ask for one
 * (no SA_ONSTACK) must run on the thread's own stack, below the
 * interrupted frame and its red zone, as the kernel would have run it.
 * Async-signal-safe.
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
	.section .note.GNU-stack,"",@progbits
