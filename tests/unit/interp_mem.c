/* tests/unit/interp_mem.c — fault-safe memory access, atomicity and
 * observer records.
 *
 * - loads/stores that cross into the guard page stop with would_fault,
 *   leave every register and every byte unchanged (nothing partly written);
 * - the same accesses misaligned and page-crossing inside mapped memory
 *   match the CPU;
 * - divide errors, ud2, int3, syscall stop before the instruction;
 * - LOCKed add/xadd/cmpxchg/xchg/bts interpreted on one thread while
 *   another thread does the same natively lose no update;
 * - the observer sees PC, accesses (address, size, direction) and
 *   non-zero load latencies.
 */
#include <pthread.h>
#include "interp_native.h"

static int nfail;
#define CHECK(what, cond) do { if (cond) printf("PASS %s\n", what); \
	else { printf("FAIL %s\n", what); nfail++; } } while (0)

static struct nctx base_ctx(void)
{
	struct nctx c;
	memset(&c, 0, sizeof c);
	for (int i = 0; i < 16; i++)
		c.gpr[i] = 0x1111111111111111ull * (i + 1);
	c.gpr[INTERP_RSP] = (uint64_t)g_data + 4096;
	c.rflags = 0x202;
	return c;
}

/* Interpreter must stop with `want` and change nothing. */
static void expect_stop(const char *what, const uint8_t *b, unsigned len,
			struct nctx c, int want)
{
	static uint8_t snap[DATA_SIZE];
	struct nctx o = c;
	int rc;

	memcpy(snap, g_data, DATA_SIZE);
	rc = run_interp(b, len, &o);
	o.rip = c.rip;
	if (rc == want && memcmp(&o, &c, sizeof c) == 0 && memcmp(snap, g_data, DATA_SIZE) == 0)
		printf("PASS %s\n", what);
	else {
		printf("FAIL %s: stop %s (want %s), regs %s, memory %s\n", what,
		       interp_stop_name(rc), interp_stop_name(want),
		       memcmp(&o, &c, sizeof c) ? "changed" : "same",
		       memcmp(snap, g_data, DATA_SIZE) ? "changed" : "same");
		nfail++;
	}
}

/* Native and interpreter must agree. */
static void expect_same(const char *what, const uint8_t *b, unsigned len, struct nctx c)
{
	static uint8_t snap[DATA_SIZE], nat_mem[DATA_SIZE];
	struct nctx n = c, i = c;
	int rc;

	memcpy(snap, g_data, DATA_SIZE);
	run_native(b, len, &n);
	memcpy(nat_mem, g_data, DATA_SIZE);
	memcpy(g_data, snap, DATA_SIZE);
	rc = run_interp(b, len, &i);
	if (rc != INTERP_OK) {
		printf("FAIL %s: interp stopped %s\n", what, interp_stop_name(rc));
		nfail++;
		return;
	}
	if (compare(what, b, len, &c, &n, &i) == 1 || memcmp(nat_mem, g_data, DATA_SIZE)) {
		printf("FAIL %s: memory %s\n", what, memcmp(nat_mem, g_data, DATA_SIZE) ? "differs" : "same");
		nfail++;
		return;
	}
	printf("PASS %s\n", what);
}

#define B(...) (const uint8_t[]){ __VA_ARGS__ }, sizeof((const uint8_t[]){ __VA_ARGS__ })

static void fault_tests(void)
{
	uint64_t end = (uint64_t)g_data + DATA_SIZE;   /* guard page starts here */
	struct nctx c = base_ctx();

	c.gpr[INTERP_RBX] = end - 4;
	expect_stop("load 8 bytes crossing into guard page", B(0x48, 0x8b, 0x03), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("store 8 bytes crossing into guard page: nothing written",
		    B(0x48, 0x89, 0x0b), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("add [mem],reg crossing into guard page", B(0x48, 0x01, 0x0b), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("lock add crossing into guard page", B(0xf0, 0x48, 0x01, 0x0b), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("xchg crossing into guard page", B(0x48, 0x87, 0x0b), c, INTERP_STOP_WOULD_FAULT);
	c.gpr[INTERP_RSP] = end + 8;
	expect_stop("push onto unmapped stack", B(0x53), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("call onto unmapped stack", B(0xe8, 0, 0, 0, 0), c, INTERP_STOP_WOULD_FAULT);
	c = base_ctx();
	c.gpr[INTERP_RDI] = end - 8;
	c.gpr[INTERP_RCX] = 4;
	/* rep stosq: the first iteration fits, so one step does one
	 * iteration and ends on the instruction; the next stops cleanly */
	{
		struct nctx o = c;
		int ex;
		int rc = run_interp_n(B(0xf3, 0x48, 0xab), &o, 2, &ex);
		CHECK("rep stosq into guard page: one iteration then would_fault",
		      rc == INTERP_STOP_WOULD_FAULT && ex == 1 && o.gpr[INTERP_RCX] == 3 &&
		      o.gpr[INTERP_RDI] == end && o.rip == (uint64_t)g_code + INSN_OFF);
	}
	c = base_ctx();
	c.gpr[INTERP_RCX] = 0;
	expect_stop("div by zero", B(0x48, 0xf7, 0xf1), c, INTERP_STOP_WOULD_FAULT);
	c.gpr[INTERP_RCX] = 1;
	c.gpr[INTERP_RDX] = 5;
	expect_stop("div quotient overflow", B(0x48, 0xf7, 0xf1), c, INTERP_STOP_WOULD_FAULT);
	c.gpr[INTERP_RCX] = ~0ull;
	c.gpr[INTERP_RDX] = ~0ull;
	c.gpr[INTERP_RAX] = 1ull << 63;
	expect_stop("idiv INT64_MIN / -1", B(0x48, 0xf7, 0xf9), c, INTERP_STOP_WOULD_FAULT);
	c = base_ctx();
	expect_stop("ud2", B(0x0f, 0x0b), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("int3", B(0xcc), c, INTERP_STOP_WOULD_FAULT);
	expect_stop("syscall", B(0x0f, 0x05), c, INTERP_STOP_SYSCALL);
	expect_stop("x87 fld1 stops cleanly", B(0xd9, 0xe8), c, INTERP_STOP_UNSUPPORTED);
	c.gpr[INTERP_RDI] = (uint64_t)g_data + 8;
	expect_stop("cmpxchg16b misaligned (#GP)", B(0xf0, 0x48, 0x0f, 0xc7, 0x0f), c, INTERP_STOP_WOULD_FAULT);

	/* misaligned and page-crossing accesses inside mapped memory */
	c = base_ctx();
	for (int off = -7; off <= 0; off++) {
		char what[80];
		c.gpr[INTERP_RBX] = (uint64_t)g_data + 4096 + off;
		snprintf(what, sizeof what, "page-crossing load at page-%d", -off);
		expect_same(what, B(0x48, 0x8b, 0x03), c);
		snprintf(what, sizeof what, "page-crossing store at page-%d", -off);
		expect_same(what, B(0x48, 0x89, 0x0b), c);
		snprintf(what, sizeof what, "page-crossing lock xadd at page-%d", -off);
		expect_same(what, B(0xf0, 0x48, 0x0f, 0xc1, 0x0b), c);
	}
	c.gpr[INTERP_RDI] = (uint64_t)g_data + 16;
	expect_same("cmpxchg16b aligned", B(0xf0, 0x48, 0x0f, 0xc7, 0x0f), c);
}

/* ---- two threads, one interpreted, one native, on the same words ---- */

static uint64_t *g_word;
enum { kiters = 200000 };

static void *native_thread(void *arg)
{
	for (int i = 0; i < kiters; i++)
		__atomic_fetch_add(g_word, 1, __ATOMIC_SEQ_CST);
	return arg;
}

static void locked_test(const char *what, const uint8_t *b, unsigned len, int per_iter_native)
{
	struct interp_thread *th = mmap(NULL, interp_thread_size(), PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct interp_state st;
	struct interp_result r;
	pthread_t t;
	uint64_t pc = place(b, len);

	interp_thread_init(th);
	*g_word = 0;
	pthread_create(&t, NULL, native_thread, NULL);
	for (int i = 0; i < kiters; i++) {
		memset(&st, 0, sizeof st);
		st.rip = pc;
		st.rflags = 0x202;
		st.gpr[INTERP_RDI] = (uint64_t)g_word;
		st.gpr[INTERP_RAX] = 1;
		st.gpr[INTERP_RCX] = 1;
		/* cmpxchg loop in the interpreter: reload expected each time */
		if (b[2] == 0xb1 || (len > 2 && b[3] == 0xb1)) {
			do {
				st.rip = pc;
				st.gpr[INTERP_RAX] = __atomic_load_n(g_word, __ATOMIC_SEQ_CST);
				st.gpr[INTERP_RCX] = st.gpr[INTERP_RAX] + 1;
				interp_run(&st, th, 1, NULL, &r);
			} while (!(st.rflags & INTERP_ZF) && r.executed == 1);
		} else {
			interp_run(&st, th, 1, NULL, &r);
		}
		if (r.executed != 1) {
			printf("FAIL %s: stop %s\n", what, interp_stop_name(r.stop));
			nfail++;
			pthread_join(t, NULL);
			return;
		}
	}
	pthread_join(t, NULL);
	if (*g_word == 2ull * kiters)
		printf("PASS %s (%lu)\n", what, *g_word);
	else {
		printf("FAIL %s: %lu, want %lu\n", what, *g_word, (uint64_t)2 * kiters);
		nfail++;
	}
	(void)per_iter_native;
	munmap(th, interp_thread_size());
}

/* ---- observer ---- */

struct obs_log {
	int n;
	uint64_t pc[8];
	uint32_t naccess[8];
	struct interp_access acc[8];
	uint64_t src0[8];
};

static int obs_fn(void *arg, const struct interp_state *st, const struct interp_record *r)
{
	struct obs_log *l = arg;
	if (l->n < 8) {
		l->pc[l->n] = r->insn->pc;
		l->naccess[l->n] = r->naccess;
		if (r->naccess)
			l->acc[l->n] = r->acc[0];
		l->src0[l->n] = r->src[1];
		l->n++;
	}
	return 0;
}

static void observer_test(void)
{
	/* mov rax,[rbx]; add rax,1; mov [rbx+8],rax; nop */
	const uint8_t code[] = { 0x48, 0x8b, 0x03, 0x48, 0x83, 0xc0, 0x01, 0x48, 0x89, 0x43, 0x08, 0x90 };
	struct interp_state st;
	struct interp_result r;
	struct obs_log log = { 0 };
	struct interp_observer obs = { obs_fn, &log, INTERP_OBS_LATENCY };
	uint64_t pc = place(code, sizeof code);

	memset(&st, 0, sizeof st);
	st.rip = pc;
	st.rflags = 0x202;
	st.gpr[INTERP_RBX] = (uint64_t)g_data + 64;
	((uint64_t *)g_data)[8] = 41;
	interp_run(&st, g_th, 4, &obs, &r);
	CHECK("observer: 4 instructions reported", r.executed == 4 && log.n == 4);
	CHECK("observer: PCs", log.pc[0] == pc && log.pc[1] == pc + 3 && log.pc[2] == pc + 7);
	CHECK("observer: load address/size/latency",
	      log.naccess[0] == 1 && log.acc[0].addr == (uint64_t)g_data + 64 &&
	      log.acc[0].size == 8 && !log.acc[0].write && log.acc[0].latency > 0);
	CHECK("observer: loaded value as source", log.src0[0] == 41);
	CHECK("observer: store address", log.naccess[2] == 1 && log.acc[2].write &&
	      log.acc[2].addr == (uint64_t)g_data + 72);
	CHECK("observer: result stored", ((uint64_t *)g_data)[9] == 42 && st.gpr[INTERP_RAX] == 42);
}

int main(void)
{
	native_setup();
	{
		struct nctx c = base_ctx();
		run_interp(B(0x90), &c);      /* allocates g_th */
	}
	fault_tests();
	g_word = (uint64_t *)(g_data + 256);
	locked_test("lock add [rdi],rax: interpreted vs native thread", B(0xf0, 0x48, 0x01, 0x07), 1);
	locked_test("lock xadd [rdi],rax", B(0xf0, 0x48, 0x0f, 0xc1, 0x07), 1);
	locked_test("lock inc qword [rdi]", B(0xf0, 0x48, 0xff, 0x07), 1);
	locked_test("lock cmpxchg [rdi],rcx loop", B(0xf0, 0x48, 0x0f, 0xb1, 0x0f), 1);
	observer_test();
	return nfail != 0;
}
