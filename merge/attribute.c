/*
 * Attribution of a spool to profiles: each counted PC, value hotlist and
 * call stack goes to the profile of the image that was loaded there when
 * the sample was taken (by the spool's image records and generations),
 * as an ELF offset, so that processes with other load addresses merge;
 * PCs no image covers go to the process's perf map ([jit:EXE]) or to
 * unknown.EVENT.prof; the process's kernel and start-up CPU become rows
 * of their own. One line per process goes to processes.tsv.
 *
 * Workload: hundreds of spools per merge, each a few thousand entries,
 * against a few dozen image records. Not async-signal-safe; one thread.
 */
#include "merge/db_private.h"
#include "merge/jit.h"
#include "merge/code.h"
#include "merge/spool_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct images {
	struct spool_image_record *r;
	size_t n, cap;
};

static int image_cb(const struct spool_image_record *r, void *arg)
{
	struct images *im = arg;
	if (r->kind != SPOOL_IMG_MAP || r->hi <= r->lo)
		return 0;
	if (im->n == im->cap) {
		size_t cap = im->cap ? im->cap * 2 : 64;
		void *np = realloc(im->r, cap * sizeof(*im->r));
		if (!np)
			return -ENOMEM;
		im->r = np;
		im->cap = cap;
	}
	im->r[im->n++] = *r;
	return 0;
}

static struct merge_profile *accum_get(struct merge_accum *a, unsigned event, uint32_t flags,
				       const struct spool_image_record *r)
{
	for (size_t i = 0; i < a->n; i++) {
		struct merge_profile *p = &a->p[i];
		if (p->event != event || p->flags != flags)
			continue;
		if (!r)
			return p;
		if (r->build_id_len ? (p->build_id_len == r->build_id_len &&
				       !memcmp(p->build_id, r->build_id, r->build_id_len))
				    : (!p->build_id_len && !strcmp(p->path, r->path)))
			return p;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? a->cap * 2 : 32;
		void *np = realloc(a->p, cap * sizeof(*a->p));
		if (!np)
			return NULL;
		a->p = np;
		a->cap = cap;
	}
	struct merge_profile *p = &a->p[a->n++];
	merge_profile_init(p);
	p->event = event;
	p->flags = flags;
	if (r) {
		p->build_id_len = r->build_id_len;
		memcpy(p->build_id, r->build_id, r->build_id_len);
		snprintf(p->path, sizeof(p->path), "%s", r->path);
	}
	return p;
}

struct spool_ctx {
	struct images *im;
	struct merge_accum *acc;
	unsigned event;                  /* the spool's, for its hotlists */
	uint64_t merged, unknown, jit;
	int err;
	const struct spool *sp;          /* its interpreted code (merge/code.h) */
	/* The process's /tmp/perf-PID.map, if it left one: names for PCs no
	 * image covers, kept in the [jit:EXE] profile (merge/jit.h). */
	const struct merge_perfmap *perfmap;
	struct spool_image_record jit_image;
};

/* The profile a sample at gpc = SPOOL_GPC(gen, pc) belongs to, and its
 * offset there: the latest load covering pc recorded in the sample's
 * generation or before (an image dlclose'd and replaced at the same
 * address keeps the samples taken while it was there); unknown.*.prof
 * with the absolute pc if none. NULL (and c->err) when out of memory. */
static const struct spool_image_record *image_at(const struct spool_ctx *c, unsigned gen,
						 uint64_t pc)
{
	const struct spool_image_record *hit = NULL;
	for (size_t i = 0; i < c->im->n; i++)
		if (pc >= c->im->r[i].lo && pc < c->im->r[i].hi && c->im->r[i].gen <= gen)
			hit = &c->im->r[i];
	return hit;
}

static struct merge_profile *locate(struct spool_ctx *c, unsigned ev, uint64_t gpc,
				    uint64_t *offset, int *known)
{
	uint64_t pc = SPOOL_GPC_PC(gpc);
	const struct spool_image_record *hit = image_at(c, SPOOL_GPC_GEN(gpc), pc);
	*offset = hit ? pc - hit->bias : pc;
	*known = hit != NULL;
	struct merge_profile *p = accum_get(c->acc, ev, hit ? 0 : MERGE_PROF_UNKNOWN, hit);
	if (!p)
		c->err = -ENOMEM;
	return p;
}

/* A PC no image covers, named by the perf map: the [jit:EXE] profile,
 * at the key of the name (which the profile learns). NULL if unnamed. */
static struct merge_profile *locate_jit(struct spool_ctx *c, unsigned ev, uint64_t pc,
					uint64_t *offset)
{
	const char *name = c->perfmap ? merge_perfmap_lookup(c->perfmap, pc) : NULL;
	if (!name)
		return NULL;
	struct merge_profile *p = accum_get(c->acc, ev, MERGE_PROF_JIT, &c->jit_image);
	size_t len = strlen(name);
	if (!p || merge_jit_add(p, name, len) < 0) {
		c->err = -ENOMEM;
		return NULL;
	}
	*offset = merge_jit_key(name, len);
	return p;
}

/* A frame of interpreted code: its file's [python:FILE] profile, at the
 * function's key and line (merge/code.h). NULL if the spool does not
 * name it (then locate() finds no image for it: unknown). */
static struct merge_profile *locate_code(struct spool_ctx *c, unsigned ev, uint64_t pc,
					 uint64_t *offset)
{
	const struct spool_code_entry *e = merge_code_entry(c->sp, pc);
	struct spool_image_record r;
	if (!e)
		return NULL;
	memset(&r, 0, sizeof(r));
	merge_code_path(e, r.path, sizeof(r.path));
	struct merge_profile *p = accum_get(c->acc, ev, MERGE_PROF_CODE, &r);
	if (!p) {
		c->err = -ENOMEM;
		return NULL;
	}
	*offset = merge_code_offset(e->name, SPOOL_CODE_LINE(pc));
	return p;
}

/* Every function the spool names, under its file's profile: stacks name
 * their frames from there, those that were never a sampled leaf too. */
static int code_name_cb(const struct spool_code_entry *e, void *arg)
{
	struct spool_ctx *c = arg;
	struct spool_image_record r;
	memset(&r, 0, sizeof(r));
	merge_code_path(e, r.path, sizeof(r.path));
	struct merge_profile *p = accum_get(c->acc, c->event, MERGE_PROF_CODE, &r);
	if (!p || merge_jit_add(p, e->name, strlen(e->name)) < 0)
		return c->err = -ENOMEM;
	return 0;
}

static int entry_cb(uint64_t key, uint64_t count, void *arg)
{
	struct spool_ctx *c = arg;
	uint64_t off, gpc = SPOOL_KEY_PC(key);
	unsigned ev = SPOOL_KEY_EV(key);
	int known = 1;
	struct merge_profile *p = NULL;
	if (SPOOL_CODE_IS(SPOOL_GPC_PC(gpc))) {
		if (!(p = locate_code(c, ev, SPOOL_GPC_PC(gpc), &off)) && c->err)
			return c->err;
	} else if (c->perfmap && !image_at(c, SPOOL_GPC_GEN(gpc), SPOOL_GPC_PC(gpc))) {
		if ((p = locate_jit(c, ev, SPOOL_GPC_PC(gpc), &off)))
			c->jit += count;
		else if (c->err)
			return c->err;
	}
	if (!p)
		p = locate(c, ev, gpc, &off, &known);
	if (!p || merge_profile_add(p, off, count) < 0)
		return c->err = -ENOMEM;
	c->merged += count;
	if (!known)
		c->unknown += count;
	return 0;
}

/* A code address in a value (a return address, a branch target, a call
 * site, a callee): as an ELF offset when it lies in the same image as the
 * hotlist's PC (same file), so that reports can name it and processes
 * with other load addresses merge; in another image, as that image's
 * identity and the offset there (SPOOL_HOT_XREF), and that image gets a
 * profile in this merge, so reports find its path and build-id; outside
 * every image (or beyond 4 GiB into one), absolute, marked
 * SPOOL_HOT_FOREIGN. */
static uint64_t code_value(struct spool_ctx *c, unsigned gen, uint64_t addr,
			   const struct spool_image_record *own)
{
	const struct spool_image_record *r = addr ? image_at(c, gen, addr) : NULL;
	if (!r)
		return addr ? addr | SPOOL_HOT_FOREIGN : 0;
	uint64_t off = addr - r->bias;
	if (own && (r == own || !strcmp(r->path, own->path)))
		return off;
	if (off > 0xffffffffull || !accum_get(c->acc, c->event, 0, r))
		return addr | SPOOL_HOT_FOREIGN;
	return SPOOL_HOT_XREF_MAKE(merge_profile_xref_id(r->build_id, r->build_id_len, r->path), off);
}

/* A spool hotlist goes to its image's profile, keyed by ELF offset. */
static int hot_cb(const struct spool_hotlist *h, void *arg)
{
	struct spool_ctx *c = arg;
	struct spool_hotlist t = *h;
	uint64_t off, gpc = SPOOL_HOT_KEY_WHERE(h->key);
	int known;
	unsigned kind = SPOOL_HOT_KEY_KIND(h->key), gen = SPOOL_GPC_GEN(gpc);
	const struct spool_image_record *own = image_at(c, gen, SPOOL_GPC_PC(gpc));
	/* Converted first: code_value may add profiles, which moves them. */
	for (uint32_t i = 0; i < t.n; i++) {
		if (spool_hot_kind_code_value(kind))
			t.e[i].value = code_value(c, gen, t.e[i].value, own);
		if (spool_hot_kind_code_aux(kind))
			t.e[i].aux = code_value(c, gen, t.e[i].aux, own);
	}
	struct merge_profile *p = locate(c, c->event, gpc, &off, &known);
	t.key = SPOOL_HOT_KEY(kind, off);
	if (!p || merge_profile_hot_add(p, &t) < 0)
		return c->err = -ENOMEM;
	return 0;
}

static void proclog_add(struct merge_proclog *pl, const struct spool *sp, uint64_t merged)
{
	const struct spool_static *s = &sp->hdr->s;
	const struct spool_live *l = &sp->hdr->live;
	char line[900], exe[257], cmd[257], split[80] = "\t";
	if (l->exited && l->cpu_split == 1)
		snprintf(split, sizeof(split), "%llu\t%llu", (unsigned long long)l->cpu_user_ns,
			 (unsigned long long)l->cpu_sys_ns);
	/* The CPU before sampling began, empty if not recorded. */
	size_t sl = strlen(split);
	snprintf(split + sl, sizeof(split) - sl, "\t");
	if (l->armed_valid == 1)
		snprintf(split + sl + 1, sizeof(split) - sl - 1, "%llu\t%llu",
			 (unsigned long long)l->armed_cpu_ns, (unsigned long long)l->armed_sys_ns);
	else
		snprintf(split + sl + 1, sizeof(split) - sl - 1, "\t");
	snprintf(exe, sizeof(exe), "%s", s->exe);
	snprintf(cmd, sizeof(cmd), "%s", s->cmdline);
	for (char *c = cmd; *c; c++)
		if (*c == '\t' || *c == '\n')
			*c = ' ';
	int n = snprintf(line, sizeof(line), "%llu\t%llu\t%s\t%llu\t%llu\t%llu\t%llu\t%llu\t%s\t%s\t%s\n",
			 (unsigned long long)s->pid, (unsigned long long)s->ppid, exe,
			 (unsigned long long)l->samples, (unsigned long long)merged,
			 (unsigned long long)l->dropped, (unsigned long long)l->exited,
			 (unsigned long long)l->cpu_ns, upcall_event_name(s->backend), cmd, split);
	if (n <= 0)
		return;
	if ((size_t)n >= sizeof(line))
		n = sizeof(line) - 1;
	if (pl->n + (size_t)n + 1 > pl->cap) {
		size_t cap = (pl->cap + (size_t)n + 1) * 2;
		char *nb = realloc(pl->buf, cap);
		if (!nb)
			return;
		pl->buf = nb;
		pl->cap = cap;
	}
	memcpy(pl->buf + pl->n, line, (size_t)n);
	pl->n += (size_t)n;
}

/* A synthetic image record "[KIND:EXE]" (EXE: the executable's base name). */
static void synth_image(struct spool_image_record *r, const char *kind,
			const struct spool_static *s)
{
	char exe[sizeof(s->exe) + 1];
	snprintf(exe, sizeof(exe), "%s", s->exe);
	const char *base = strrchr(exe, '/');
	memset(r, 0, sizeof(*r));
	r->kind = SPOOL_IMG_MAP;
	snprintf(r->path, sizeof(r->path), "[%s:%s]", kind, base ? base + 1 : exe[0] ? exe : "?");
}

/* Is the spool's owner in our pid namespace (or cannot we tell)? Its
 * pid names its perf map only then. */
static int same_pidns(const struct spool *sp)
{
	const struct spool_owner *o =
		(const void *)((const uint8_t *)sp->hdr + SPOOL_OWNER_OFF);
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	if (memcmp(o->magic, SPOOL_OWNER_MAGIC, 8) != 0 || !o->pidns || n <= 0)
		return 1;
	buf[n] = 0;
	const char *b = strchr(buf, '[');
	return !b || strtoull(b + 1, NULL, 10) == o->pidns;
}

/* The process's perf map (JIT symbols), read now: it may be gone by the
 * time anyone reports. 0 when there is none worth using. */
static int perfmap_open(struct merge_perfmap *m, const struct spool *sp, FILE *errf)
{
	const struct spool_static *s = &sp->hdr->s;
	char path[64];
	if (!same_pidns(sp))
		return 0;
	snprintf(path, sizeof(path), "/tmp/perf-%llu.map", (unsigned long long)s->pid);
	/* A map older than the process is an earlier process's (pid reuse). */
	int err = merge_perfmap_load(m, path, (int64_t)(s->start_ns / 1000000000ull) - 2, 0);
	if (err == -EPERM)
		fprintf(errf, "vprof: perf map %s: not a regular file of yours; ignored\n", path);
	else if (err < 0 && err != -ENOENT && err != -ESTALE)
		fprintf(errf, "vprof: perf map %s: %s; ignored\n", path, strerror(-err));
	if (err < 0)
		return 0;
	merge_perfmap_warn(m, path, errf);
	return 1;
}

/* System CPU in sample-equivalents, for events that never sample the
 * kernel (perf events, which are user-only without privileges): at the
 * rate the process's user CPU was sampled (its samples per user ns), or,
 * with no user samples, at the asked period, which also caps the rate of
 * task-clock (its event is in ns). The CPU timers' signals land
 * on return to user mode, so their samples already hold the kernel time
 * (at the system-call sites): nothing is added for them. */
static uint64_t kernel_equiv(const struct spool_static *s, const struct spool_live *l,
			     uint64_t merged)
{
	if (s->event != UPCALL_EV_TASK_CLOCK && s->event != UPCALL_EV_CYCLES &&
	    s->event != UPCALL_EV_INSTRUCTIONS)
		return 0;
	/* task-clock's period is ns of CPU: its rate is the asked one. The
	 * samples per user ns would be less by the user CPU before sampling
	 * began (the dynamic loader, the constructors: a [start-up] row,
	 * below), which for 30 ms processes was 13% of their user time. */
	if (s->event == UPCALL_EV_TASK_CLOCK && s->period)
		return (uint64_t)((double)l->cpu_sys_ns / (double)s->period + 0.5);
	double rate = merged && l->cpu_user_ns ? (double)merged / (double)l->cpu_user_ns : 0;
	/* getrusage splits the CPU by tick counts: for a short process the
	 * user part can be far too small, and the rate it gives far too
	 * high. A clock is never sampled above its asked rate on average. */
	if (s->event == UPCALL_EV_TASK_CLOCK && s->period && (!rate || rate > 1.0 / (double)s->period))
		rate = 1.0 / (double)s->period;
	return (uint64_t)(rate * (double)l->cpu_sys_ns + 0.5);
}

/* The CPU a process used before its trigger was armed (exec, the dynamic
 * loader, constructors up to ours: live.armed_cpu_ns), which no sample
 * sees, in sample-equivalents at the asked rate of a clock (ns periods;
 * for PMU counters the rate of its samples per user ns): the [start-up]
 * row. For the perf events, its user part only (as getrusage
 * split it then): the [kernel] row holds all the system CPU. An exec'd
 * process's clock carries the CPU of the image before exec, as cpu_ns
 * and the [kernel] row do. */
static uint64_t startup_equiv(const struct spool_static *s, const struct spool_live *l,
			      uint64_t merged)
{
	if (l->armed_valid != 1 || !s->period)
		return 0;
	uint64_t pre = l->armed_cpu_ns;
	/* Timers sample the kernel's part too (at the system calls): the
	 * whole pre-arm CPU; perf events: the system part is in [kernel]. */
	if (s->event == UPCALL_EV_TASK_CLOCK || s->event == UPCALL_EV_CYCLES ||
	    s->event == UPCALL_EV_INSTRUCTIONS)
		pre = pre > l->armed_sys_ns ? pre - l->armed_sys_ns : 0;
	if (s->event == UPCALL_EV_CYCLES || s->event == UPCALL_EV_INSTRUCTIONS) {
		double rate = merged && l->cpu_user_ns ? (double)merged / (double)l->cpu_user_ns : 0;
		return (uint64_t)(rate * (double)pre + 0.5);
	}
	return (uint64_t)((double)pre / (double)s->period + 0.5);
}

int merge_attribute(const char *path, struct merge_accum *acc, struct merge_stats *st,
		    struct merge_proclog *pl, char *why, size_t whylen, FILE *errf)
{
	struct spool sp;
	struct images im = { 0 };
	struct merge_perfmap pm;
	merge_perfmap_init(&pm);
	int err = merge_spool_open(&sp, path, why, whylen);
	if (err < 0)
		return err;
	if ((err = spool_images(&sp, image_cb, &im)) < 0)
		goto out;
	const struct spool_live *l = &sp.hdr->live;
	const struct spool_static *s = &sp.hdr->s;
	struct spool_ctx c = { .im = &im, .acc = acc, .event = s->event, .sp = &sp };
	uint64_t badn = 0, badv = 0;
	if (perfmap_open(&pm, &sp, errf)) {
		c.perfmap = &pm;
		synth_image(&c.jit_image, "jit", s);
	}
	merge_spool_foreach(&sp, entry_cb, &c, &badn);
	if ((err = c.err) < 0)
		goto out;
	if (s->event < UPCALL_EV_MAX)
		merge_code_foreach(&sp, code_name_cb, &c);
	if ((err = c.err) < 0)
		goto out;
	merge_spool_values(&sp, hot_cb, &c, &badv);
	if ((err = c.err) < 0)
		goto out;
	uint64_t bads = 0;
	if (s->event < UPCALL_EV_MAX &&
	    (err = merge_stacks_from_spool(&acc->stacks[s->event], &sp, im.r, im.n, &bads)) < 0)
		goto out;
	/* A process rotating its spool (VPROF_EPOCH_SECS) leaves several: it
	 * is counted once, at its last (exited 0 or 1). */
	int last = l->exited != SPOOL_EXITED_ROTATED && l->exited != SPOOL_EXITED_CLOSED;
	st->processes += last;
	st->samples += l->samples;
	st->merged += c.merged;
	st->dropped += l->dropped + badn;
	st->unknown += c.unknown;
	st->killed += l->exited == SPOOL_EXITED_NO;
	st->cpu_ns += l->exited == SPOOL_EXITED_NORMAL ? l->cpu_ns : 0;
	if (s->event < UPCALL_EV_MAX)
		st->by_event[s->event] += c.merged;
	if (s->backend < UPCALL_EV_MAX)
		st->by_backend[s->backend] += last;
	st->period_ns_sum += last ? s->period : 0;
	st->value_samples += merge_spool_value_samples(&sp);
	st->values_dropped += l->values_dropped;
	st->values_bad += badv;
	uint64_t logged, missed;
	merge_spool_vlog_counts(&sp, &logged, &missed);
	st->values_logged += logged;
	st->values_log_missed += missed;
	st->interp_runs += l->interp_runs;
	st->interp_insns += l->interp_insns;
	for (int i = 0; i < SPOOL_INTERP_STOPS; i++)
		st->interp_stops[i] += l->interp_stops[i];
	st->jit_samples += c.jit;
	st->ring_fallbacks += l->ring_fallbacks;
	st->cost_ns += l->cost_ns;
	st->limit_threads += l->limit_threads;
	st->limit_lowerings += l->limit_lowerings;
	st->limit_cpu_ns += l->limit_cpu_ns;
	st->limit_samples += l->limit_samples;
	st->limit_interp_threads += l->limit_interp_threads;
	st->nospace_dropped += l->nospace_dropped;
	st->nospace_spools += l->nospace_errno == ENOSPC;
	st->room_failed_spools += l->nospace_errno && l->nospace_errno != ENOSPC;
	st->sandbox_stopped += l->sandbox_stopped;
	st->sandbox_refused += l->sandbox_refused;
	st->sandbox_unarmed += l->sandbox_unarmed;
	st->kernel_cost_ns += l->kernel_cost_ns;
	st->kernel_cost_samples += l->kernel_cost_samples;
	if (l->cache_geom[0]) {
		st->cache_procs++;
		for (int i = 0; i < 6; i++)
			st->cache_geom_sum[i] += l->cache_geom[i];
	}
	for (int i = 0; i < SPOOL_RUN_BINS; i++)
		st->run_bins[i] += l->run_bins[i];
	if (l->exited && l->cpu_split == 1) {
		uint64_t k = kernel_equiv(s, l, c.merged);
		st->cpu_user_ns += l->cpu_user_ns;
		st->cpu_sys_ns += l->cpu_sys_ns;
		st->split_processes += last;   /* a rotated spool has its interval's split */
		if (k) {
			struct spool_image_record kr;
			synth_image(&kr, "kernel", s);
			struct merge_profile *kp = accum_get(acc, s->event, MERGE_PROF_KERNEL, &kr);
			if (!kp || merge_profile_add(kp, 0, k) < 0) {
				err = -ENOMEM;
				goto out;
			}
			st->kernel_samples += k;
		}
	}
	uint64_t su = l->exited ? startup_equiv(s, l, c.merged) : 0;
	if (su) {
		struct spool_image_record sr;
		synth_image(&sr, "start-up", s);
		struct merge_profile *sp2 = accum_get(acc, s->event, MERGE_PROF_KERNEL, &sr);
		if (!sp2 || merge_profile_add(sp2, 0, su) < 0) {
			err = -ENOMEM;
			goto out;
		}
		st->startup_samples += su;
		st->startup_cpu_ns += l->armed_cpu_ns;
	}
	proclog_add(pl, &sp, c.merged);
out:
	free(im.r);
	merge_perfmap_free(&pm);
	merge_spool_close(&sp);
	return err;
}

