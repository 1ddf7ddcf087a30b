/* preload/verify_format.h — the co-simulation result file (version 1).
 *
 * One file per process, DB/verify/TAG.PID[.N].vfy, mode 0600, written by
 * libvprof.so through a MAP_SHARED mapping (so a process killed with
 * SIGKILL loses nothing it had counted) and read by `vprof verify` and
 * `vprof coverage`. Counters are updated with relaxed atomics by any
 * thread, from signal handlers; readers sum files and tolerate a torn
 * read of a live file (the numbers are counts, not invariants).
 *
 * Little-endian, fixed layout, no pointers. A reader checks magic,
 * version, hdr_size and rec_size before trusting anything else.
 */
#ifndef VPROF_VERIFY_FORMAT_H
#define VPROF_VERIFY_FORMAT_H

#include <stdint.h>

#define VERIFY_MAGIC     0x31594656u      /* "VFY1" */
#define VERIFY_VERSION   1u
#define VERIFY_NSTOP     8                /* = INTERP_STOP__COUNT */
#define VERIFY_NMNEM     2048             /* > ZYDIS_MNEMONIC_MAX_VALUE */
#define VERIFY_NRECORDS  64               /* mismatch records kept */
#define VERIFY_MAX_LEN   256              /* longest run compared */

/* What a mismatch record is about. */
enum preload_verify_kind {
	VERIFY_K_GPR = 1,      /* what = register name; 8 bytes */
	VERIFY_K_RIP,
	VERIFY_K_FLAGS,        /* arithmetic flags and DF only */
	VERIFY_K_MEM,          /* addr = first byte; size bytes */
	VERIFY_K_VEC,          /* what = xmm/ymm/zmm N part; up to 64 bytes */
	VERIFY_K_KMASK,
	VERIFY_K_MXCSR,
	VERIFY_K_FAULT,        /* the hardware faulted where the interpreter
				* had not stopped (expected/actual empty) */
	VERIFY_K_X87,          /* what = fcw/fsw/ftw: the x87 control, status
				* and abridged tag words of the FXSAVE image */
};

/* Memory the run had loaded changed while the hardware was stepped, in
 * pages the thread itself can write: another thread, or a store of this
 * thread the interpreter did not make. Reported, so judge it. */
#define VERIFY_F_LOADS_CHANGED 1u
/* A memory difference at an atomic (LOCK, XCHG) instruction: its target
 * is shared by design, and another thread may have written it between
 * the instruction and the comparison (the trap takes ~15 us). */
#define VERIFY_F_ATOMIC 2u

struct preload_verify_record {
	uint64_t pc;           /* the instruction */
	uint64_t addr;         /* VERIFY_K_MEM: address */
	uint32_t tid;
	uint32_t index;        /* its position in the run (0 = sampled PC) */
	uint16_t mnemonic;     /* ZydisMnemonic */
	uint8_t  len;          /* instruction length */
	uint8_t  kind;         /* enum preload_verify_kind */
	uint32_t size;         /* bytes valid in expected/actual */
	uint8_t  bytes[16];    /* instruction bytes */
	char     what[16];     /* register or component name */
	uint8_t  expected[64]; /* the interpreter's (shadow) value */
	uint8_t  actual[64];   /* the hardware's value */
	uint32_t flags;        /* VERIFY_F_* */
	uint32_t pad;
	uint64_t file_off;     /* pc as an offset in the mapped file */
	char     image[112];   /* that file (from /proc/self/maps), or "" */
};

struct preload_verify_file {
	uint32_t magic, version, hdr_size, rec_size;
	int32_t  pid;
	uint32_t interp_len;   /* instructions per run asked */
	uint32_t step;         /* 1: native single-step comparison on;
				* 0: coverage only (shadow runs) */
	uint32_t inject;       /* VPROF_VERIFY_INJECT (test only) */
	char     exe[256];

	/* Every counter below is updated atomically. */
	uint64_t samples;      /* samples offered to co-simulation */
	uint64_t skipped;      /* not run: no per-thread buffer, program's
				* TF set, SIGTRAP blocked, still stepping */
	uint64_t runs;         /* shadow runs */
	uint64_t interpreted;  /* instructions the interpreter committed */
	uint64_t unhandled;    /* runs that stopped on an instruction the
				* interpreter cannot do (unsupported,
				* decode, badstate) */
	uint64_t first_handled;   /* runs whose first instruction ran */
	uint64_t first_unhandled; /* runs stopped on the sampled insn itself */
	uint64_t stop[VERIFY_NSTOP];   /* runs by interpreter stop reason */
	uint64_t cut_nondet;   /* runs cut after an instruction whose result
				* the hardware need not repeat (rdtsc, cpuid,
				* rdrand, xgetbv...) or that may change TF
				* (popf, iret): it is not compared */
	uint64_t cut_overflow; /* runs cut: shadow store log full */
	uint64_t runs_stepped; /* runs single-stepped natively */
	uint64_t traps;        /* SIGTRAPs taken while stepping */
	uint64_t compared;     /* instructions compared with the hardware */
	uint64_t mismatches;   /* instructions with at least one difference */
	uint64_t items;        /* differing registers/bytes reported */
	uint64_t native_faults;/* hardware faulted where the shadow did not */
	uint64_t nrecords;     /* records claimed (may exceed VERIFY_NRECORDS) */
	uint64_t cut_rep;      /* runs cut before a REP string instruction
				* once 256 iterations had been run (each
				* iteration is one trap when stepped; 4096
				* in coverage-only runs, to bound their cost) */
	uint64_t lost;         /* stepping found abandoned (no trap came) */
	uint64_t raced;        /* differences explained by memory that changed
				* under the run where this thread cannot have
				* changed it: before stepping began (another
				* thread), or in a page it cannot write (the
				* kernel's vDSO clock data): not counted as
				* mismatches; the run ends there */
	uint64_t cooldown;     /* samples not run because the thread had not
				* yet run natively for half a sampling period
				* since its last run (or stepping) ended (the
				* trap storm's or a long shadow run's own CPU
				* time would otherwise trigger the next sample
				* at once, and runs would pile up on whatever
				* code runs first, or starve the program) */
	uint64_t cut_self;     /* runs cut on entering libvprof.so's own code
				* (its state differs between the shadow run
				* and the stepping: not the program's) */
	uint64_t traps_unflagged; /* stepping traps the kernel reported as
				* TRAP_BRKPT, not TRAP_TRACE (the debug status
				* lost its single-step bit: seen under KVM on an
				* Intel Xeon host), taken as the step's own */
	uint64_t reserved[2];

	/* Runs by (stop reason, mnemonic the interpreter stopped on). */
	uint32_t stop_mnem[VERIFY_NSTOP][VERIFY_NMNEM];
	struct preload_verify_record rec[VERIFY_NRECORDS];
};

#endif
