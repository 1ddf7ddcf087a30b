/*
 * Customization modules (VPROF_MODULE, include/vprof-module.h): the
 * value-sampling paper's section 2.4 in the sample handler.
 *
 * Start-up (preload_module_load, from preload_values_init, normal
 * context): VPROF_MODULE is a path, or a bare name looked up in the
 * modules/ folder beside libvprof.so (build/modules/ in the build tree,
 * lib/vprof/modules/ installed). dlopen'd RTLD_NOW | RTLD_LOCAL; the
 * symbol vprof_module's api_version is read before anything else of the
 * module is used; then its init runs. Any failure is one message, the
 * variable is removed from the environment (children run with the
 * default capture and stay quiet) and value sampling goes on with the
 * default capture.
 *
 * In the handler: observe() in value_sample.c hands each interpreted record to
 * preload_module_observe, which keeps those of the classes the module
 * asked for as vprof_tuples in the thread's buffer; after the run,
 * preload_module_run calls the module's sequence() with them. The buffer
 * (min(interp_len, 256) tuples) and the module's scratch are one mmap per
 * thread, made at its first sequence; a run longer than the buffer
 * reaches the module as several sequences.
 *
 * Faults: the call runs under sigsetjmp; faults.c's SIGSEGV/SIGBUS
 * handler, for a fault that is not an interpreter probe's, asks
 * preload_module_fault first: a fault while this thread is inside the
 * module (its code or anything it called) siglongjmps back, the module
 * is disabled for the whole process (default capture from then on), and
 * one line is written with write(2). The SIGSEGV handler runs with
 * SA_NODEFER and an empty sa_mask, so the mask at the jump is the one at
 * sigsetjmp: no mask to restore (sigsetjmp(.., 0), no system call).
 */
#include "preload/preload.h"
#include "interp/interp.h"
#include "spool/hotlist.h"
#include "vprof-module.h"

#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MODULE_MAX_TUPLES 256

struct module_thread {
	sigjmp_buf jb;
	volatile int in_module;
	uint32_t n, cap;
	uint64_t rng;
	uint64_t site;                 /* the run's return address (VPROF_CAP_SITE) */
	uint32_t pos;                  /* instructions observed in this run */
	size_t map_size;
	void *scratch;
	struct vprof_tuple t[];
};

static const struct vprof_module *g_mod;     /* NULL: no module */
static int g_mod_off;                        /* disabled after a fault */
static int g_said_fault;
static unsigned g_capture;
static uintptr_t g_mod_base;
static char g_mod_name[64];
static __thread struct module_thread *g_mt PRELOAD_TLS;

int preload_module_on(void)
{
	return g_mod && !__atomic_load_n(&g_mod_off, __ATOMIC_RELAXED);
}

unsigned preload_module_capture(void)
{
	return preload_module_on() ? g_capture : 0;
}

/* ---- start-up ---- */

static void host_say(const struct vprof_module_host *h, const char *msg)
{
	preload_say("module %s: %s", g_mod_name, msg);
	setenv("VPROF_MODULE_QUIET", "1", 1);   /* children: host->quiet */
}

/* A bare name: modules/NAME.so beside libvprof.so. */
static void resolve(const char *spec, char *out, size_t cap)
{
	Dl_info di;
	snprintf(out, cap, "%s", spec);
	if (strchr(spec, '/') || !dladdr((void *)resolve, &di) || !di.dli_fname)
		return;
	const char *slash = strrchr(di.dli_fname, '/');
	int dirlen = slash ? (int)(slash - di.dli_fname) : 1;
	snprintf(out, cap, "%.*s/modules/%s%s", dirlen, slash ? di.dli_fname : ".", spec,
		 strstr(spec, ".so") ? "" : ".so");
}

int preload_module_load(const char *spec, char *why, size_t whylen)
{
	char path[512];

	resolve(spec, path, sizeof(path));
	if (access(path, R_OK) != 0) {
		int e = errno;
		if (!strchr(spec, '/'))
			snprintf(why, whylen, "no module named %s (%s: %s; give a path, or one of "
				 "values, latency, indirect, stride)", spec, path, strerror(e));
		else
			snprintf(why, whylen, "%s: %s", path, strerror(e));
		return -ENOENT;
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *d = dlerror();
		snprintf(why, whylen, "%s is not a loadable shared library (%s)", path, d ? d : "?");
		return -ENOEXEC;
	}
	const struct vprof_module *m = (const struct vprof_module *)dlsym(h, "vprof_module");
	if (!m) {
		snprintf(why, whylen, "%s is not a vprof module (it defines no `vprof_module` symbol; "
			 "see include/vprof-module.h)", path);
		dlclose(h);
		return -ENOEXEC;
	}
	if (m->api_version != VPROF_MODULE_API_VERSION) {
		snprintf(why, whylen, "%s was built for module API version %u, this vprof has version %d "
			 "(rebuild it against this vprof's vprof-module.h)", path, m->api_version,
			 VPROF_MODULE_API_VERSION);
		dlclose(h);
		return -EPROTO;
	}
	unsigned classes = VPROF_CAP_LOADS | VPROF_CAP_STORES | VPROF_CAP_INDIRECT | VPROF_CAP_ALL;
	unsigned known = classes | VPROF_CAP_RESULTS | VPROF_CAP_SOURCES | VPROF_CAP_ADDRESSES |
			 VPROF_CAP_LATENCY | VPROF_CAP_SITE;
	const char *bad = !m->sequence ? "it has no sequence callback"
			  : !(m->capture & classes) ? "its capture names no instruction class"
			  : (m->capture & ~known) ? "its capture has unknown flags"
			  : m->scratch_size > VPROF_SCRATCH_MAX ? "it asks for more than 64 KiB of scratch"
			  : NULL;
	if (bad) {
		snprintf(why, whylen, "%s breaks the module API: %s", path, bad);
		dlclose(h);
		return -EPROTO;
	}
	Dl_info di;
	if (dladdr((const void *)m, &di) && di.dli_fbase)
		g_mod_base = (uintptr_t)di.dli_fbase;
	snprintf(g_mod_name, sizeof(g_mod_name), "%s", m->name && *m->name ? m->name : spec);
	if (m->init) {
		struct vprof_module_host host = {
			.api_version = VPROF_MODULE_API_VERSION, .db = g_vprof.cfg.db, .path = path,
			.quiet = getenv("VPROF_MODULE_QUIET") != NULL, .say = host_say,
		};
		char mwhy[300] = "";
		if (m->init(&host, mwhy, sizeof(mwhy)) != 0) {
			snprintf(why, whylen, "module %s refused to start: %s", g_mod_name,
				 *mwhy ? mwhy : "no reason given");
			dlclose(h);
			return -ECANCELED;
		}
	}
	g_capture = m->capture;
	g_mod = m;
	return 0;
}

/* ---- the handler ---- */

static struct module_thread *thread_buf(void)
{
	struct module_thread *mt = g_mt;
	if (mt)
		return mt;
	uint32_t cap = g_vprof.cfg.interp_len < MODULE_MAX_TUPLES ? (uint32_t)g_vprof.cfg.interp_len
								  : MODULE_MAX_TUPLES;
	if (cap < 1)
		cap = 1;
	size_t head = sizeof(*mt) + cap * sizeof(struct vprof_tuple);
	head = (head + 63) & ~(size_t)63;
	size_t total = (head + g_mod->scratch_size + 4095) & ~(size_t)4095;
	void *m = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	mt = m;
	mt->cap = cap;
	mt->map_size = total;
	mt->scratch = (char *)m + head;
	mt->rng = (uint64_t)(uintptr_t)m ^ 0x2545f4914f6cdd1dull;
	g_mt = mt;
	return mt;
}

static void emit(const struct vprof_sequence *s, unsigned kind, uint64_t pc, uint64_t value, uint64_t aux)
{
	struct module_thread *mt = s->host;
	if (!spool_hot_kind_valid(kind))
		return;
	struct spool *sp = g_thread.sp;   /* entered by preload_values_sample */
	if (sp)
		spool_value(sp, g_thread.slot, SPOOL_HOT_KEY(kind, SPOOL_GPC(sp->gen, pc)), value,
			    aux, &mt->rng);
}

static int is_cond(unsigned mn)
{
	switch (mn) {
	case ZYDIS_MNEMONIC_JB: case ZYDIS_MNEMONIC_JBE: case ZYDIS_MNEMONIC_JCXZ:
	case ZYDIS_MNEMONIC_JECXZ: case ZYDIS_MNEMONIC_JRCXZ: case ZYDIS_MNEMONIC_JL:
	case ZYDIS_MNEMONIC_JLE: case ZYDIS_MNEMONIC_JNB: case ZYDIS_MNEMONIC_JNBE:
	case ZYDIS_MNEMONIC_JNL: case ZYDIS_MNEMONIC_JNLE: case ZYDIS_MNEMONIC_JNO:
	case ZYDIS_MNEMONIC_JNP: case ZYDIS_MNEMONIC_JNS: case ZYDIS_MNEMONIC_JNZ:
	case ZYDIS_MNEMONIC_JO: case ZYDIS_MNEMONIC_JP: case ZYDIS_MNEMONIC_JS:
	case ZYDIS_MNEMONIC_JZ: case ZYDIS_MNEMONIC_LOOP: case ZYDIS_MNEMONIC_LOOPE:
	case ZYDIS_MNEMONIC_LOOPNE:
		return 1;
	}
	return 0;
}

static void run_module(struct module_thread *mt, uint32_t executed);

void preload_module_observe(const struct interp_state *st, const struct interp_record *r,
			    uint64_t site)
{
	struct module_thread *mt = g_mt ? g_mt : thread_buf();
	const struct interp_insn *in = r->insn;
	unsigned cap = g_capture, cls = 0;
	uint32_t na = r->naccess < INTERP_MAX_ACCESS ? r->naccess : INTERP_MAX_ACCESS;

	if (!mt)
		return;
	mt->site = site;
	uint32_t index = mt->pos++;
	for (uint32_t i = 0; i < na; i++)
		cls |= r->acc[i].write ? VPROF_INSN_STORE : VPROF_INSN_LOAD;
	switch (in->mnemonic) {
	case ZYDIS_MNEMONIC_CALL: cls |= VPROF_INSN_CALL; break;
	case ZYDIS_MNEMONIC_JMP: cls |= VPROF_INSN_JUMP; break;
	case ZYDIS_MNEMONIC_RET: cls |= VPROF_INSN_RET; break;
	default: if (is_cond(in->mnemonic)) cls |= VPROF_INSN_COND;
	}
	if ((cls & (VPROF_INSN_CALL | VPROF_INSN_JUMP)) && in->nvis && in->op[0].type != INTERP_OP_IMM)
		cls |= VPROF_INSN_INDIRECT;
	if (!(cap & VPROF_CAP_ALL) && !((cap & VPROF_CAP_LOADS) && (cls & VPROF_INSN_LOAD)) &&
	    !((cap & VPROF_CAP_STORES) && (cls & VPROF_INSN_STORE)) &&
	    !((cap & VPROF_CAP_INDIRECT) && (cls & VPROF_INSN_INDIRECT)))
		return;
	if (mt->n == mt->cap)
		run_module(mt, mt->n);   /* full: a long run arrives in parts */
	if (!preload_module_on())
		return;
	struct vprof_tuple *t = &mt->t[mt->n++];
	memset(t, 0, sizeof(*t));
	t->pc = in->pc;
	t->next = st->rip;
	t->cls = cls;
	t->index = index;
	t->length = in->len;
	int mem_read = 0, reg_read = 0, regs_written = 0;
	uint64_t reg_result = 0;
	if (cap & (VPROF_CAP_RESULTS | VPROF_CAP_SOURCES))
		for (int i = 0; i < in->nvis; i++) {
			const struct interp_operand *op = &in->op[i];
			if (op->type != INTERP_OP_REG && op->type != INTERP_OP_MEM)
				continue;
			if (op->type == INTERP_OP_REG && (op->rkind == INTERP_RK_FLAGS ||
							  op->rkind == INTERP_RK_RIP || op->rkind == INTERP_RK_OTHER))
				continue;
			if (op->type == INTERP_OP_MEM && !t->memsize) {
				t->memsize = op->size;
				mem_read = (op->action & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
				if ((cap & VPROF_CAP_SOURCES) && (r->src_mask >> i & 1))
					t->memory = r->src[i], t->memory_known = 1;
				else if ((cap & VPROF_CAP_RESULTS) && (r->dst_mask >> i & 1))
					t->memory = r->dst[i], t->memory_known = 1;
			}
			if (op->type == INTERP_OP_REG) {
				reg_read |= (op->action & ZYDIS_OPERAND_ACTION_MASK_READ) != 0;
				if (r->dst_mask >> i & 1)
					regs_written++, reg_result = r->dst[i];
			}
			if ((cap & VPROF_CAP_SOURCES) && (r->src_mask >> i & 1) && t->nsource < VPROF_MAX_OPS)
				t->source[t->nsource++] = r->src[i];
			if ((cap & VPROF_CAP_RESULTS) && (r->dst_mask >> i & 1) && t->nresult < VPROF_MAX_OPS)
				t->result[t->nresult++] = r->dst[i];
		}
	/* A plain load recorded only through its result (movsd xmm, m64). */
	if (!t->memory_known && mem_read && !reg_read && regs_written == 1 &&
	    (cap & VPROF_CAP_SOURCES) && (cap & VPROF_CAP_RESULTS)) {
		t->memory = reg_result;
		t->memory_known = 1;
	}
	if (cap & (VPROF_CAP_ADDRESSES | VPROF_CAP_LATENCY))
		for (uint32_t i = 0; i < na && t->naccess < VPROF_MAX_ACCESS; i++) {
			struct vprof_access *a = &t->access[t->naccess++];
			if (cap & VPROF_CAP_ADDRESSES) {
				a->addr = r->acc[i].addr;
				a->size = r->acc[i].size;
			}
			a->write = r->acc[i].write;
			if (cap & VPROF_CAP_LATENCY)
				a->latency = r->acc[i].latency;
		}
}

/* Hex without stdio: the handler may not call snprintf. */
static char *put_hex(char *p, uint64_t v)
{
	char tmp[17];
	int n = 0;
	do {
		tmp[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	*p++ = '0';
	*p++ = 'x';
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_str(char *p, const char *s, const char *end)
{
	while (*s && p < end)
		*p++ = *s++;
	return p;
}

static volatile uint64_t g_fault_pc, g_fault_addr;
static volatile int g_fault_sig;

static void say_fault(void)
{
	char buf[400], *p = buf, *end = buf + sizeof(buf) - 120;
	if (__atomic_exchange_n(&g_said_fault, 1, __ATOMIC_RELAXED))
		return;
	p = put_str(p, "vprof: module ", end);
	p = put_str(p, g_mod_name, end);
	p = put_str(p, g_fault_sig == SIGBUS ? ": SIGBUS" : ": SIGSEGV", end);
	p = put_str(p, " in its sequence callback at ", end);
	p = put_hex(p, g_fault_pc);
	if (g_mod_base && g_fault_pc >= g_mod_base) {
		p = put_str(p, " (module+", end);
		p = put_hex(p, g_fault_pc - g_mod_base);
		p = put_str(p, ")", end);
	}
	p = put_str(p, ", address ", end);
	p = put_hex(p, g_fault_addr);
	p = put_str(p, "; module disabled for the rest of this process, default value capture "
		       "goes on; the program is not affected\n", buf + sizeof(buf) - 1);
	ssize_t w = write(2, buf, (size_t)(p - buf));
	(void)w;
}

static void run_module(struct module_thread *mt, uint32_t executed)
{
	struct vprof_sequence s = {
		.tuple = mt->t, .n = mt->n, .executed = executed, .retaddr = mt->site,
		.scratch = g_mod->scratch_size ? mt->scratch : NULL, .emit = emit, .host = mt,
	};
	mt->n = 0;
	if (!s.n || !preload_module_on())
		return;
	if (sigsetjmp(mt->jb, 0)) {
		mt->in_module = 0;
		__atomic_store_n(&g_mod_off, 1, __ATOMIC_RELAXED);
		say_fault();
		return;
	}
	mt->in_module = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	g_mod->sequence(&s);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	mt->in_module = 0;
}

void preload_module_run(int executed)
{
	struct module_thread *mt = g_mt;
	if (!mt)
		return;
	run_module(mt, executed > 0 ? (uint32_t)executed : 0);
	mt->pos = 0;
}

void preload_module_fault(int sig, siginfo_t *si, ucontext_t *uc)
{
	struct module_thread *mt = g_mt;
	if (!mt || !mt->in_module)
		return;
	g_fault_sig = sig;
	g_fault_pc = (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
	g_fault_addr = (uint64_t)(uintptr_t)si->si_addr;
	siglongjmp(mt->jb, sig);
}

void preload_module_thread_end(void)
{
	struct module_thread *mt = g_mt;
	if (!mt)
		return;
	g_mt = NULL;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	munmap(mt, mt->map_size);
}
