/*
 * libvprof.so internals shared by the files of preload/.
 *
 * g_vprof is written by the constructor (single-threaded) and the fork-child
 * handler, and only read elsewhere; per-thread state lives in initial-exec
 * TLS so that the signal handler reaches it without __tls_get_addr.
 */
#ifndef VPROF_PRELOAD_H
#define VPROF_PRELOAD_H

#include <signal.h>
#include <ucontext.h>
#include <stdint.h>
#include "spool/spool.h"
#include "spool/cachegeom.h"
#include "upcall/upcall.h"

#define PRELOAD_TLS __attribute__((tls_model("initial-exec")))
#define PRELOAD_ALTSTACK (64 * 1024)
/* The handler stack the handler's deep work (unwinding, interpreting)
 * must have below it: 2.5 times the deepest measured, 9.6 KiB with
 * --values --stacks (docs/reliability.md). */
#define PRELOAD_HANDLER_ROOM (24 * 1024)

struct preload_config {
	char db[400];
	int event;               /* forced upcall_event, 0 = auto */
	uint64_t period, freq;
	int values, interp_len, interp_reach, interp_every, skew_skip, stacks, verify;
	int operands;            /* VPROF_VALUES asked: windows record operands and arguments */
	int branches;            /* VPROF_BRANCHES: windows record branches (implies values) */
	int cachesim;            /* VPROF_CACHESIM: windows simulate caches (implies values) */
	int cachesim_len;        /* VPROF_CACHESIM_LEN: instructions a long window runs */
	int hazards;             /* VPROF_HAZARDS: windows find memory-order hazards (implies values) */
	struct spool_cache_geom cache; /* VPROF_CACHE, else this machine's */
	char module[400];        /* VPROF_MODULE: path or shipped name, "" none */
	int bench_empty;         /* VPROF_BENCH_EMPTY: handler does nothing (cost floor) */
	uint64_t bench_alt;      /* VPROF_BENCH_ALT=N: N samples handled, N empty, in turn */
	int ring;                /* VPROF_RING (default on): perf PCs via the ring */
	uint64_t epoch_secs;     /* VPROF_EPOCH_SECS: rotate the spool every S s (0: never) */
	int stack_depth;         /* VPROF_STACK_DEPTH (default 32, with stacks) */
	int python;              /* VPROF_PYTHON (default on): Python frames in stacks */
	int lua;                 /* VPROF_LUA (default on): Lua frames in stacks */
	int opcodes;             /* VPROF_OPCODES: the innermost opcode as a frame */
	int stack_method;        /* VPROF_STACK_METHOD: SPOOL_STACK_M_CFI, _UNWIND, _FP or _CURSOR */
	int max_cost;            /* VPROF_MAX_COST: % of a thread's CPU, 0 off (selflimit.c) */
	uint64_t test_handler_work; /* VPROF_TEST_HANDLER_WORK: us per sample (tests only) */
	uint64_t test_vlog_chunks;  /* VPROF_TEST_VLOG_CHUNKS: value log chunks a
				     * spool may claim; UINT64_MAX unset: all
				     * (tests only) */
};

struct preload_global {
	int active;              /* sampling in this process */
	int backend;             /* upcall_event chosen */
	pid_t pid;               /* the process the spool belongs to */
	uint64_t period;
	struct preload_config cfg;
	char spool_dir[450];
};

struct preload_thread {
	struct upcall_thread up;
	struct spool_thread_slot *slot;
	int busy;                /* inside vprof's own code: do not sample */
	int armed;
	void *altstack;          /* the handler stack (thread.c), PRELOAD_ALTSTACK bytes */
	int prog_blocked;        /* the program's view: SIGPROF blocked here */
	int prog_pending;        /* its own SIGPROF arrived while so blocked */
	/* The kernel's mask (SIGPROF aside) as the program's last libc mask
	 * call, or the thread's start, left it while it blocked SIGPROF:
	 * a mask that later lacks some of it was changed by a raw system
	 * call we do not see (Go's runtime sets each thread's mask so, in
	 * threads cgo started with every signal blocked through libc), and
	 * the program's SIGPROF is unblocked then. Valid: prog_kvalid. */
	uint64_t prog_kmask;
	int prog_kvalid;
	siginfo_t prog_info;     /* ... and its siginfo */
	int prog_signalfd;       /* reads SIGPROF through a signalfd: really block */
	uint32_t tid;            /* set by preload_thread_begin; 0: no slot wanted */
	uint64_t slot_seq;       /* rotation number of the spool t->slot lies in */
	struct spool *sp;  /* the spool this thread entered (rotate.c), NULL outside */
	/* A program's handler that preload_forward runs on the thread's
	 * stack from our frames on the alternate stack (handler.c): */
	void *fwd_top;           /* its stack top; NULL when none is running */
	void (*fwd_fn)(int, siginfo_t *, void *);
	stack_t fwd_ss;          /* the alternate stack, disabled meanwhile */
	uint64_t fwd_mask;       /* the mask the program's handler runs with (the kernel's 64 bits) */
	uintptr_t fwd_hstack_top; /* preload_hstack_top before: ours lie under it meanwhile */
	/* Where the last value sample left the thread's value records
	 * (spool_vlog_hints): prefetched at the next one's start. */
	const void *vlog_hint[3];
};

extern struct preload_global g_vprof;

/* Is every sample a signal in its thread, not a PC in a ring? Value
 * windows and co-simulation interpret at the sample; call stacks, and
 * VPROF_RING=0, turn the ring off (cfg.ring). */
static inline int preload_signal_per_sample(void)
{
	return !g_vprof.cfg.ring || g_vprof.cfg.values || g_vprof.cfg.verify;
}
extern __thread struct preload_thread g_thread PRELOAD_TLS;
/* The thread's handler stack (thread.c): [lo, end), 0 when it has none;
 * the handler's entry (onstack.S) moves to top, which is end except
 * while frames of ours lie on it under a program's handler (handler.c). */
extern __thread uintptr_t preload_hstack_lo PRELOAD_TLS;
extern __thread uintptr_t preload_hstack_end PRELOAD_TLS;
extern __thread uintptr_t preload_hstack_top PRELOAD_TLS;

/* rotate.c: the process's spool, and its rotation (VPROF_EPOCH_SECS).
 * Every writer brackets its use of the spool with _enter/_exit, which set
 * g_thread.sp and move the thread's slot into the entered spool; a spool
 * rotated out is unmapped only once no writer is left in it. _enter
 * returns NULL when there is no spool. All async-signal-safe, lock-free
 * (the rotation itself is taken by one thread with a try-lock). _tick, on
 * the sample path outside _enter, rotates when the interval has passed
 * and closes a rotated-out spool whose writers have left. _first installs
 * the spool made by the constructor or a fork child (normal context,
 * single-threaded as far as the spool goes); _fork_child forgets the
 * parent's; _exit_process stops rotation and marks the spool exited. */
struct spool *preload_spool_enter(struct spool **prev);
void preload_spool_exit(struct spool *sp, struct spool *prev);
int preload_spool_ready(void);
void preload_spool_tick(void);
int preload_spool_first(const struct spool_params *p);
void preload_spool_fork_child(struct spool *parent_copy);
void preload_spool_exit_process(uint64_t cpu_ns);

/* config.c: parse VPROF_*; on a bad value writes the reason (naming the
 * variable and the accepted values) to why and returns -EINVAL. */
int preload_config_parse(struct preload_config *c, char *why, size_t whylen);
/* The defaults of a process whose interpreter's frames vprof reads: call
 * stacks, which its frames are part of, unless VPROF_STACKS says, and 64
 * frames unless VPROF_STACK_DEPTH says (every interpreted call is one). */
void preload_config_interpreted(struct preload_config *c);

/* main.c: count one signalled sample (its PC, from the ucontext). Signal-safe. */
void preload_sample(int sig, siginfo_t *si, void *uc);
/* ... counted `times` times over (a thinned itimer, selflimit.c); returns
 * the periods the sample stood for (times, and a CPU timer's overruns). */
uint32_t preload_sample_weighted(siginfo_t *si, void *uc, uint32_t times);

/* main.c: the process leaves by _exit, _Exit or exit_group: its rings
 * drained and its spool marked exited, once. Signal-safe. */
void preload_leave_now(void);

/* main.c: drain the thread's perf ring into the spool. Signal-safe. */
void preload_drain(void);
void preload_on_mmap(void *arg, uint64_t addr, uint64_t len, uint64_t pgoff,
		     const uint8_t *build_id, uint32_t build_id_len, const char *path);

/* thread.c */
void preload_thread_begin(void);   /* arm the calling thread; not signal-safe */
void preload_thread_end(void);     /* disarm and release its slot */
void preload_thread_arm_others(void);  /* threads that started before us */
/* The calling thread reads SIGPROF through a signalfd (masks.c): stop
 * sampling it for good, keeping what it has (see thread.c). Normal
 * context, SIGPROF blocked. */
void preload_thread_unsample(void);

/* images.c: record images not yet recorded (and unloads). Not signal-safe. */
void preload_images_scan(void);
void preload_images_inherit(const struct spool *parent);  /* fork child */

/* handler.c: the SIGPROF handler and the program's disposition. */
int preload_signals_install(void);
int preload_real_sigaction(int sig, const struct sigaction *a, struct sigaction *old);
/* Apply the program's disposition *p of sig to this delivery as the kernel
 * would have: ignored, default action, or its handler called with its mask
 * and flags (SA_RESETHAND updates *p), on the stack it asked for; masks
 * change through the raw system call. refaults: a fault from the kernel,
 * which re-executes and takes a default action at the same instruction
 * (so it is not raised); view_blocked: the thread's view of sig being
 * blocked (SIGPROF's), or NULL. AS-safe. */
void preload_forward(int sig, struct sigaction *p, siginfo_t *si, void *uc, int refaults,
		     int *view_blocked);
/* At a handler's entry: 1 if it runs off the alternate stack because a
 * program handler that preload_forward started on the thread's stack is
 * running (nothing may interpret then); gives the alternate stack back
 * when that handler has been left by a longjmp. AS-safe. */
int preload_altstack_check(ucontext_t *uc);
/* masks.c: a thread starting with SIGPROF really blocked (inherited mask) gets it
 * unblocked, the block kept as the program's view. Normal context. */
void preload_signals_thread_begin(void);
void preload_signals_note_kmask(void);

/* verify.c (co-simulation), linked when present: with
 * VPROF_VERIFY on, preload_verify_init runs once in the constructor (normal
 * context; negative errno if unavailable) and preload_verify_sample runs in
 * the handler after each PC sample is counted (async-signal-safe). */
int preload_verify_init(void) __attribute__((weak));
void preload_verify_sample(int sig, siginfo_t *si, void *uc) __attribute__((weak));
void preload_verify_thread_begin(void) __attribute__((weak));

/* faults.c: SIGSEGV/SIGBUS (and SIGTRAP if on_trap) held while vprof
 * interprets. preload_faults_init (normal context, once) saves the
 * program's dispositions and installs ours: a fault in an interpreter
 * probe is fixed up; any other goes to hook (if any), then to the
 * program's disposition. preload_faults_forward applies that disposition
 * (AS-safe). preload_faults_sigaction is the sigaction interposer's route
 * for these signals (the real call for a signal not held). */
typedef void preload_fault_hook(int sig, siginfo_t *si, ucontext_t *uc);
int preload_faults_init(preload_fault_hook *hook, void (*on_trap)(int, siginfo_t *, void *));
void preload_faults_forward(int sig, siginfo_t *si, ucontext_t *uc);
int preload_faults_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Before a handler interprets (AS-safe): unblock SIGSEGV and SIGBUS if
 * the interrupted thread blocked them, for the rest of the handler (the
 * kernel restores the thread's mask from uc at sigreturn). A fault with
 * its signal blocked kills the process, and probes fault on purpose. */
void preload_faults_unblock(const ucontext_t *uc);

/* value_sample.c (VPROF_VALUES): preload_values_init once in the constructor
 * (normal context; negative errno if unavailable); preload_values_sample
 * in the handler after a PC sample of weight periods is counted: every
 * interp_every-th period of the thread interprets and records value
 * hotlists, advancing
 * uc (AS-safe); preload_values_thread_end frees the thread's state (with
 * the trigger stopped and SIGPROF blocked). */
int preload_values_init(void);
void preload_values_sample(ucontext_t *uc, uint32_t weight);
void preload_values_thread_end(void);

/* module.c (VPROF_MODULE, include/vprof-module.h). preload_module_load
 * in preload_values_init (normal context): 0, or negative errno with the
 * reason in why. The rest is AS-safe, for value_sample.c's observer and the
 * fault handler: _on says a module decides what is captured (loaded, not
 * disabled by a fault); _capture is its VPROF_CAP_* flags (0 without);
 * _observe keeps one interpreted record as a tuple if its class is asked
 * for (site: the run's return address); _run hands the run's tuples to
 * the module (under sigsetjmp); _fault, from faults.c, siglongjmps out of
 * a module that faulted and disables it; _thread_end frees the thread's
 * buffer. */
struct interp_state;
struct interp_record;
int preload_module_load(const char *spec, char *why, size_t whylen);
int preload_module_on(void);
unsigned preload_module_capture(void);
void preload_module_observe(const struct interp_state *st, const struct interp_record *r, uint64_t site);
void preload_module_run(int executed);
void preload_module_fault(int sig, siginfo_t *si, ucontext_t *uc);
void preload_module_thread_end(void);

/* stack_sample.c (VPROF_STACKS): preload_stacks_init once in the constructor
 * (normal context: warms the unwinder, so the handler never allocates);
 * preload_stacks_sample in the handler after a PC sample is counted:
 * unwinds from uc (unwind 0: the PC alone, for want of stack) and counts
 * the stack in the spool (AS-safe). */
int preload_stacks_init(void);
void preload_stacks_sample(siginfo_t *si, void *uc, int unwind);

/* pyframes.c (VPROF_PYTHON, with stacks): preload_py_init once in the
 * constructor (1: this process runs a CPython vprof knows; says so once
 * for a Python it does not know), preload_py_start once stacks are set
 * up (the fault handler its probes need); in the
 * handler, preload_py_walk before the PC is counted, preload_py_leaf
 * for the counted PC, preload_py_mix for the stack, preload_py_done at
 * the end of the signal. */
int preload_py_init(void);
int preload_py_start(void);
int preload_py_on(void);
void preload_py_walk(void *uc);
void preload_py_done(void);
uint64_t preload_py_leaf(uint64_t pc);
unsigned preload_py_mix(uint64_t *pc, unsigned n, unsigned max, int *more);
/* luaframes.c (VPROF_LUA): Lua 5.4.4's frames for pyframes.c, which
 * calls preload_lua_walk when the process runs that Lua. */
int preload_lua_init(void);
int preload_lua_on(void);
int preload_lua_in_eval(uint64_t pc);
unsigned preload_lua_walk(const ucontext_t *uc, struct spool *sp, uint64_t *frame, uint8_t *entry,
			  unsigned max, int *op);
/* pyframes.c: the thread's cache of interpreted frames, by (code, instr):
 * the slot such a pair maps to (direct-mapped, PRELOAD_LINE_SLOTS). A hit
 * is a slot whose code, key, instr and spool header are the caller's. */
#define PRELOAD_LINE_SLOTS 64
struct preload_line_slot {
	uint64_t code;           /* code object or Proto address; 0: empty */
	uint64_t key;            /* its spool entry's key */
	const void *hdr;         /* the spool (its header) the index is of */
	int32_t instr;
	uint32_t line;
	uint32_t idx;
	uint32_t pad;
};
struct preload_line_slot *preload_line_slot(uint64_t code, int32_t instr);
/* opnames.c: the interpreters' opcode names (VPROF_OPCODES). */
extern const char *const preload_py311_opnames[256];
extern const char *const preload_lua544_opnames[];
extern const unsigned preload_lua544_nops;

/* fds.c: descriptors the program must not close (see fds.c). Signal-safe. */
void preload_fd_own(int fd);
void preload_fd_disown(int fd);
int preload_fd_is_ours(int fd);
void preload_fd_close_all_ours(void);   /* fork child */

/* handler.c: is this SIGPROF one of our samples? Signal-safe. */
int preload_signal_is_ours(const siginfo_t *si);

/* One message on stderr, prefixed "vprof: ". Not signal-safe. */
void preload_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
