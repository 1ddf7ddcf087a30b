/* tests/unit/interp_shadow.c — the interpreter's store-buffer mode
 * (interp/shadow.c): a run in a shadow writes nothing, its later loads see
 * its own earlier stores (plain, locked and string stores), and it ends
 * in the same registers as the same run on real memory, whose memory then
 * holds exactly the bytes the shadow logged. */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "interp/interp.h"
#include "tests/unit/fault_handler.h"
#include "interp/shadow.h"

static int nfail;
#define CHECK(c, ...) do { if (c) printf("PASS " __VA_ARGS__); else { nfail++; printf("FAIL " __VA_ARGS__); } printf("\n"); } while (0)

static const uint8_t kcode[] = {
	0x48, 0x89, 0x07,                   /* mov [rdi], rax */
	0x48, 0x8b, 0x1f,                   /* mov rbx, [rdi] */
	0x48, 0x83, 0x07, 0x05,             /* add qword [rdi], 5 */
	0xf0, 0x48, 0x0f, 0xc1, 0x0f,       /* lock xadd [rdi], rcx */
	0x48, 0x8b, 0x17,                   /* mov rdx, [rdi] */
	0x52,                               /* push rdx */
	0x41, 0x58,                         /* pop r8 */
	0x48, 0x8d, 0x7f, 0x10,             /* lea rdi, [rdi+16] */
	0xb9, 0x20, 0x00, 0x00, 0x00,       /* mov ecx, 32 */
	0xb0, 0xab,                         /* mov al, 0xab */
	0xf3, 0xaa,                         /* rep stosb */
	0x4c, 0x8b, 0x4f, 0xf0,             /* mov r9, [rdi-16] */
	0x0f, 0x94, 0x47, 0x08,             /* sete [rdi+8] */
	0x9c,                               /* pushfq */
	0xe8, 0x00, 0x00, 0x00, 0x00,       /* call next */
	0x41, 0x5a,                         /* pop r10 */
	0x66, 0x89, 0x47, 0x0a,             /* mov [rdi+10], ax */
	0x90,                               /* nop */
};

static struct interp_thread g_th __attribute__((aligned(64)));
static struct interp_shadow g_sh;

static void setup(struct interp_state *st, uint8_t *code, uint8_t *data, uint8_t *stack)
{
	memset(st, 0, sizeof *st);
	st->rip = (uint64_t)code;
	st->rflags = 0x202;
	st->gpr[INTERP_RAX] = 0x1122334455667788ull;
	st->gpr[INTERP_RCX] = 0x100;
	st->gpr[INTERP_RDI] = (uint64_t)data;
	st->gpr[INTERP_RSP] = (uint64_t)stack + 4096 - 64;
	st->mxcsr = 0x1f80;
	st->xstate_avail = INTERP_XS_X87 | INTERP_XS_SSE;
}

int main(void)
{
	uint8_t *code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *data = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *stack = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t before[4096], sbefore[4096];
	struct interp_state a, b;
	struct interp_result ra, rb;
	int ninsn = 18;

	interp_init();
	fault_handler_install();
	memcpy(code, kcode, sizeof kcode);
	memset(data, 0x5a, 4096);
	memset(stack, 0x33, 4096);
	memcpy(before, data, 4096);
	memcpy(sbefore, stack, 4096);

	setup(&a, code, data, stack);
	interp_thread_init(&g_th);
	interp_shadow_begin(&g_sh);
	interp_run(&a, &g_th, ninsn, NULL, &ra);
	interp_shadow_end();
	CHECK(ra.executed == ninsn, "shadow run executed %d of %d (stop %s)", ra.executed, ninsn,
	      interp_stop_name(ra.stop));
	CHECK(!memcmp(before, data, 4096) && !memcmp(sbefore, stack, 4096),
	      "shadow run wrote no memory");
	CHECK(a.gpr[INTERP_RBX] == 0x1122334455667788ull, "load sees the shadow's store");
	CHECK(a.gpr[INTERP_RDX] == 0x112233445566778dull + 0x100, "locked xadd through the shadow");
	CHECK(a.gpr[INTERP_R8] == a.gpr[INTERP_RDX], "push/pop through the shadow");
	CHECK(a.gpr[INTERP_R9] == 0xababababababababull, "rep stosb through the shadow");
	CHECK(a.gpr[INTERP_R10] == (uint64_t)code + sizeof kcode - 7, "call pushed its return address");
	CHECK(g_sh.overflow == 0 && g_sh.n >= 9, "log has %u entries", g_sh.n);
	CHECK(interp_shadow_raced(&g_sh, g_sh.nld, g_sh.n, 0) == 0, "no race without other writers");
	data[100] ^= 1;   /* neither loaded nor stored by the run */
	CHECK(interp_shadow_raced(&g_sh, g_sh.nld, g_sh.n, 0) == 0, "unrelated byte changed: no race");
	data[100] ^= 1;
	/* A byte the run loaded and did not store itself: the first load of
	 * the code bytes is a load; change a code byte after the run. */
	code[sizeof kcode - 1] = 0xcc;
	CHECK(interp_shadow_raced(&g_sh, g_sh.nld, g_sh.n, 0) == 1, "changed loaded byte is a race");
	code[sizeof kcode - 1] = 0x90;
	/* ro_only: a writable page's change may be the thread's own store. */
	code[sizeof kcode - 1] = 0xcc;
	CHECK(interp_shadow_raced(&g_sh, g_sh.nld, g_sh.n, 1) == 0, "writable page: not excused");
	code[sizeof kcode - 1] = 0x90;

	/* The same run on real memory. */
	setup(&b, code, data, stack);
	interp_thread_init(&g_th);
	interp_run(&b, &g_th, ninsn, NULL, &rb);
	CHECK(rb.executed == ninsn, "real run executed %d", rb.executed);
	CHECK(!memcmp(a.gpr, b.gpr, sizeof a.gpr) && a.rip == b.rip && a.rflags == b.rflags,
	      "shadow and real runs end in the same registers");
	/* Replay the log on copies of the pages as they were: they must then
	 * equal the pages the real run wrote. */
	int inside = 1;
	for (uint32_t i = 0; i < g_sh.n; i++) {
		uint64_t a0 = g_sh.e[i].addr;
		uint8_t *dst = a0 - (uint64_t)data < 4096 ? before + (a0 - (uint64_t)data)
			     : a0 - (uint64_t)stack < 4096 ? sbefore + (a0 - (uint64_t)stack) : NULL;
		if (!dst) {
			inside = 0;
			continue;
		}
		memcpy(dst, g_sh.data + g_sh.e[i].off, g_sh.e[i].size);
	}
	CHECK(inside && !memcmp(before, data, 4096) && !memcmp(sbefore, stack, 4096),
	      "real memory holds the bytes the shadow logged");
	return nfail != 0;
}
