/*
 * The profile database and the merge that feeds it.
 *
 *   DB/spool/PID.N.spool     live or finished spools (0600)
 *   DB/epochs/CURRENT        the epoch merges go to, as decimal text
 *   DB/epochs/N/ID.EVENT.prof  per-image profiles (ID: build-id in hex),
 *                            unknown.EVENT.prof, stats.prof
 *   DB/epochs/N/processes.tsv  one line per merged process: pid, ppid, exe,
 *                            samples seen, samples merged, dropped, exited,
 *                            CPU ns, backend, command line, then (added
 *                            at the end) user CPU ns, system CPU ns (empty
 *                            when the spool recorded no split)
 *   DB/lock                  flock'd exclusively for the whole of a merge
 *   DB/images/.build-id/     the images merges met, by build-id (images.h)
 *   DB/merge.stage/          a merge being written (rolled back if found)
 *   DB/merge.commit/         a committed merge being applied (finished if
 *                            found): new profiles, processes.tsv, MANIFEST
 *
 * Workload: `vprof run` merges once at the end; `make -j` under `vprof run`
 * leaves hundreds of small spools; several `vprof merge` may run at once.
 * The database lock serializes merges; each profile is rewritten whole
 * (read, add, write temporary, rename), so a reader sees the old or the new
 * file, never half of one.
 *
 * Crash safety. A merge writes every new file into DB/merge.stage/ with a
 * MANIFEST naming its epoch and the spools it consumed (name and inode),
 * then commits with one rename of the directory to DB/merge.commit/. Only
 * then are the files renamed into the epoch and the spools unlinked; each
 * of those steps can be redone, so a merge that finds merge.commit/ (its
 * predecessor was killed) finishes it first, and one that finds
 * merge.stage/ deletes it: killed at any point, a merge counts every spool
 * exactly once. This holds against the death of the process, not a power
 * cut (nothing is fsync'd; a torn profile then fails its checksum).
 * VPROF_TEST_MERGE_DIE=K (tests only) SIGKILLs the merge at its K-th step;
 * VPROF_TEST_MERGE_DELAY_US=N sleeps N us at each step.
 *
 * A spool is finished when its owner is gone (merge_spool_finished: the
 * owner record's pid and start time name no running process, or one that
 * no longer maps the spool because it exec'd; spools of an
 * older libvprof, with no owner record, when their owner's flock is gone).
 * The owner holds no descriptor on it.
 *
 * Not async-signal-safe; not thread-safe (one merge per process).
 */
#include "merge/profile.h"
#include "merge/images.h"
#include "merge/jit.h"
#include "merge/spool.h"
#include "merge/stacks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[512];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, mode) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

int merge_db_open(struct merge_db *db, const char *root, int create, char *why, size_t whylen)
{
	char p[600];
	struct stat st;
	int err;

	memset(db, 0, sizeof(*db));
	db->lockfd = -1;
	if (strlen(root) >= sizeof(db->root) - 64) {
		snprintf(why, whylen, "path too long");
		return -ENAMETOOLONG;
	}
	snprintf(db->root, sizeof(db->root), "%s", root);
	if (create) {
		snprintf(p, sizeof(p), "%s/spool", root);
		if ((err = mkdir_p(p, 0700)) < 0)
			goto fail;
		snprintf(p, sizeof(p), "%s/epochs", root);
		if ((err = mkdir_p(p, 0700)) < 0)
			goto fail;
	} else if (stat(root, &st) < 0 || !S_ISDIR(st.st_mode)) {
		err = stat(root, &st) < 0 ? -errno : -ENOTDIR;
		if (err == -ENOENT) {
			snprintf(why, whylen, "no such directory (vprof run --db %s -- CMD makes "
				 "a database there)", root);
			return err;
		}
		goto fail;
	} else {
		/* Nothing is written into a directory that is not a database
		 * (epochs/, or spool/ before the first merge): no lock file. */
		struct stat sp;
		char q[600];
		snprintf(p, sizeof(p), "%s/epochs", root);
		snprintf(q, sizeof(q), "%s/spool", root);
		if ((stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) && (stat(q, &sp) < 0 || !S_ISDIR(sp.st_mode))) {
			snprintf(why, whylen, "not a vprof database (it has no epochs/ or spool/ "
				 "directory; vprof run --db %s -- CMD makes one)", root);
			return -ENOENT;
		}
	}
	snprintf(p, sizeof(p), "%s/lock", root);
	db->lockfd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (db->lockfd < 0 && (errno == EACCES || errno == EROFS) && !create)
		db->lockfd = open(p, O_RDONLY | O_CLOEXEC);   /* reading a read-only db */
	if (db->lockfd < 0) {
		err = -errno;
		goto fail;
	}
	return 0;
fail:
	snprintf(why, whylen, "%s", strerror(-err));
	return err;
}

void merge_db_close(struct merge_db *db)
{
	if (db->lockfd >= 0)
		close(db->lockfd);
	db->lockfd = -1;
}

int merge_db_lock(struct merge_db *db)
{
	while (flock(db->lockfd, LOCK_EX) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

void merge_db_unlock(struct merge_db *db)
{
	flock(db->lockfd, LOCK_UN);
}

int merge_db_epoch(struct merge_db *db)
{
	char p[600], buf[32] = "";
	snprintf(p, sizeof(p), "%s/epochs/CURRENT", db->root);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	int e = n > 0 ? atoi(buf) : 0;
	return e >= 1 ? e : 1;
}

void merge_db_epoch_dir(struct merge_db *db, int epoch, char *out, size_t cap)
{
	snprintf(out, cap, "%s/epochs/%d", db->root, epoch);
}

static int write_current(struct merge_db *db, int e);

int merge_db_epoch_new(struct merge_db *db)
{
	char p[600];
	int err;
	if ((err = merge_db_lock(db)) < 0)
		return err;
	int e = merge_db_epoch(db) + 1;
	merge_db_epoch_dir(db, e, p, sizeof(p));
	if ((err = mkdir_p(p, 0700)) == 0)
		err = write_current(db, e);
	merge_db_unlock(db);
	return err < 0 ? err : e;
}

static int by_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

int merge_db_epochs(struct merge_db *db, int *out, int cap)
{
	char p[600];
	int n = 0;
	snprintf(p, sizeof(p), "%s/epochs", db->root);
	DIR *d = opendir(p);
	if (!d)
		return 0;
	for (struct dirent *de; (de = readdir(d)) && n < cap;) {
		char *end;
		long e = strtol(de->d_name, &end, 10);
		if (*end == 0 && e >= 1 && end != de->d_name)
			out[n++] = (int)e;
	}
	closedir(d);
	qsort(out, (size_t)n, sizeof(int), by_int);
	return n;
}

/* ---- merge ---- */

struct images {
	struct merge_image_record *r;
	size_t n, cap;
};

struct accum {                  /* profiles of this merge, by image+event */
	struct merge_profile *p;
	size_t n, cap;
	struct merge_stacks stacks[MERGE_EV_MAX];   /* call stacks, by event */
};

static int image_cb(const struct merge_image_record *r, void *arg)
{
	struct images *im = arg;
	if (r->kind != MERGE_IMG_MAP || r->hi <= r->lo)
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

static struct merge_profile *accum_get(struct accum *a, unsigned event, uint32_t flags,
				       const struct merge_image_record *r)
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
	struct accum *acc;
	unsigned event;                  /* the spool's, for its hotlists */
	uint64_t merged, unknown, jit;
	int err;
	/* The process's /tmp/perf-PID.map, if it left one: names for PCs no
	 * image covers, kept in the [jit:EXE] profile (merge/jit.h). */
	const struct merge_perfmap *perfmap;
	struct merge_image_record jit_image;
};

/* The profile a sample at gpc = MERGE_GPC(gen, pc) belongs to, and its
 * offset there: the latest load covering pc recorded in the sample's
 * generation or before (an image dlclose'd and replaced at the same
 * address keeps the samples taken while it was there); unknown.*.prof
 * with the absolute pc if none. NULL (and c->err) when out of memory. */
static const struct merge_image_record *image_at(const struct spool_ctx *c, unsigned gen,
						 uint64_t pc)
{
	const struct merge_image_record *hit = NULL;
	for (size_t i = 0; i < c->im->n; i++)
		if (pc >= c->im->r[i].lo && pc < c->im->r[i].hi && c->im->r[i].gen <= gen)
			hit = &c->im->r[i];
	return hit;
}

static struct merge_profile *locate(struct spool_ctx *c, unsigned ev, uint64_t gpc,
				    uint64_t *offset, int *known)
{
	uint64_t pc = MERGE_GPC_PC(gpc);
	const struct merge_image_record *hit = image_at(c, MERGE_GPC_GEN(gpc), pc);
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

static int entry_cb(uint64_t key, uint64_t count, void *arg)
{
	struct spool_ctx *c = arg;
	uint64_t off, gpc = MERGE_KEY_PC(key);
	unsigned ev = MERGE_KEY_EV(key);
	int known = 1;
	struct merge_profile *p = NULL;
	if (c->perfmap && !image_at(c, MERGE_GPC_GEN(gpc), MERGE_GPC_PC(gpc))) {
		if ((p = locate_jit(c, ev, MERGE_GPC_PC(gpc), &off)))
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
 * identity and the offset there (MERGE_HOT_XREF), and that image gets a
 * profile in this merge, so reports find its path and build-id; outside
 * every image (or beyond 4 GiB into one), absolute, marked
 * MERGE_HOT_FOREIGN. */
static uint64_t code_value(struct spool_ctx *c, unsigned gen, uint64_t addr,
			   const struct merge_image_record *own)
{
	const struct merge_image_record *r = addr ? image_at(c, gen, addr) : NULL;
	if (!r)
		return addr ? addr | MERGE_HOT_FOREIGN : 0;
	uint64_t off = addr - r->bias;
	if (own && (r == own || !strcmp(r->path, own->path)))
		return off;
	if (off > 0xffffffffull || !accum_get(c->acc, c->event, 0, r))
		return addr | MERGE_HOT_FOREIGN;
	return MERGE_HOT_XREF_MAKE(merge_profile_xref_id(r->build_id, r->build_id_len, r->path), off);
}

/* A spool hotlist goes to its image's profile, keyed by ELF offset. */
static int hot_cb(const struct merge_hotlist *h, void *arg)
{
	struct spool_ctx *c = arg;
	struct merge_hotlist t = *h;
	uint64_t off, gpc = MERGE_HOT_KEY_WHERE(h->key);
	int known;
	unsigned kind = MERGE_HOT_KEY_KIND(h->key), gen = MERGE_GPC_GEN(gpc);
	const struct merge_image_record *own = image_at(c, gen, MERGE_GPC_PC(gpc));
	/* Converted first: code_value may add profiles, which moves them. */
	for (uint32_t i = 0; i < t.n; i++) {
		if (merge_hot_kind_code_value(kind))
			t.e[i].value = code_value(c, gen, t.e[i].value, own);
		if (merge_hot_kind_code_aux(kind))
			t.e[i].aux = code_value(c, gen, t.e[i].aux, own);
	}
	struct merge_profile *p = locate(c, c->event, gpc, &off, &known);
	t.key = MERGE_HOT_KEY(kind, off);
	if (!p || merge_profile_hot_add(p, &t) < 0)
		return c->err = -ENOMEM;
	return 0;
}

/* One line per merged process, appended to DB/epochs/N/processes.tsv. */
struct proclog {
	char *buf;
	size_t n, cap;
};

static void proclog_add(struct proclog *pl, const struct merge_spool *sp, uint64_t merged)
{
	const struct merge_spool_static *s = &sp->hdr->s;
	const struct merge_spool_live *l = &sp->hdr->live;
	char line[900], exe[257], cmd[257], split[80] = "\t";
	if (l->exited && l->cpu_split == 1)
		snprintf(split, sizeof(split), "%llu\t%llu", (unsigned long long)l->cpu_user_ns,
			 (unsigned long long)l->cpu_sys_ns);
	/* The CPU before sampling began (issue 8), empty if not recorded. */
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
			 (unsigned long long)l->cpu_ns, merge_event_name(s->backend), cmd, split);
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
static void synth_image(struct merge_image_record *r, const char *kind,
			const struct merge_spool_static *s)
{
	char exe[sizeof(s->exe) + 1];
	snprintf(exe, sizeof(exe), "%s", s->exe);
	const char *base = strrchr(exe, '/');
	memset(r, 0, sizeof(*r));
	r->kind = MERGE_IMG_MAP;
	snprintf(r->path, sizeof(r->path), "[%s:%s]", kind, base ? base + 1 : exe[0] ? exe : "?");
}

/* Is the spool's owner in our pid namespace (or cannot we tell)? Its
 * pid names its perf map only then. */
static int same_pidns(const struct merge_spool *sp)
{
	const struct merge_spool_owner *o =
		(const void *)((const uint8_t *)sp->hdr + MERGE_SPOOL_OWNER_OFF);
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	if (memcmp(o->magic, MERGE_SPOOL_OWNER_MAGIC, 8) != 0 || !o->pidns || n <= 0)
		return 1;
	buf[n] = 0;
	const char *b = strchr(buf, '[');
	return !b || strtoull(b + 1, NULL, 10) == o->pidns;
}

/* The process's perf map (JIT symbols), read now: it may be gone by the
 * time anyone reports. 0 when there is none worth using. */
static int perfmap_open(struct merge_perfmap *m, const struct merge_spool *sp, FILE *errf)
{
	const struct merge_spool_static *s = &sp->hdr->s;
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
static uint64_t kernel_equiv(const struct merge_spool_static *s, const struct merge_spool_live *l,
			     uint64_t merged)
{
	if (s->event != MERGE_EV_TASK_CLOCK && s->event != MERGE_EV_CYCLES &&
	    s->event != MERGE_EV_INSTRUCTIONS)
		return 0;
	/* task-clock's period is ns of CPU: its rate is the asked one. The
	 * samples per user ns would be less by the user CPU before sampling
	 * began (the dynamic loader, the constructors: a [start-up] row,
	 * below), which for 30 ms processes was 13% of their user time. */
	if (s->event == MERGE_EV_TASK_CLOCK && s->period)
		return (uint64_t)((double)l->cpu_sys_ns / (double)s->period + 0.5);
	double rate = merged && l->cpu_user_ns ? (double)merged / (double)l->cpu_user_ns : 0;
	/* getrusage splits the CPU by tick counts: for a short process the
	 * user part can be far too small, and the rate it gives far too
	 * high. A clock is never sampled above its asked rate on average. */
	if (s->event == MERGE_EV_TASK_CLOCK && s->period && (!rate || rate > 1.0 / (double)s->period))
		rate = 1.0 / (double)s->period;
	return (uint64_t)(rate * (double)l->cpu_sys_ns + 0.5);
}

/* The CPU a process used before its trigger was armed (exec, the dynamic
 * loader, constructors up to ours: live.armed_cpu_ns), which no sample
 * sees, in sample-equivalents at the asked rate of a clock (ns periods;
 * for PMU counters the rate of its samples per user ns): the [start-up]
 * row (issue 8). For the perf events, its user part only (as getrusage
 * split it then): the [kernel] row holds all the system CPU. An exec'd
 * process's clock carries the CPU of the image before exec, as cpu_ns
 * and the [kernel] row do. */
static uint64_t startup_equiv(const struct merge_spool_static *s, const struct merge_spool_live *l,
			      uint64_t merged)
{
	if (l->armed_valid != 1 || !s->period)
		return 0;
	uint64_t pre = l->armed_cpu_ns;
	/* Timers sample the kernel's part too (at the system calls): the
	 * whole pre-arm CPU; perf events: the system part is in [kernel]. */
	if (s->event == MERGE_EV_TASK_CLOCK || s->event == MERGE_EV_CYCLES ||
	    s->event == MERGE_EV_INSTRUCTIONS)
		pre = pre > l->armed_sys_ns ? pre - l->armed_sys_ns : 0;
	if (s->event == MERGE_EV_CYCLES || s->event == MERGE_EV_INSTRUCTIONS) {
		double rate = merged && l->cpu_user_ns ? (double)merged / (double)l->cpu_user_ns : 0;
		return (uint64_t)(rate * (double)pre + 0.5);
	}
	return (uint64_t)((double)pre / (double)s->period + 0.5);
}

static int merge_one(const char *path, struct accum *acc, struct merge_stats *st,
		     struct proclog *pl, char *why, size_t whylen, FILE *errf)
{
	struct merge_spool sp;
	struct images im = { 0 };
	struct merge_perfmap pm;
	merge_perfmap_init(&pm);
	int err = merge_spool_open(&sp, path, why, whylen);
	if (err < 0)
		return err;
	if ((err = merge_spool_images(&sp, image_cb, &im)) < 0)
		goto out;
	const struct merge_spool_live *l = &sp.hdr->live;
	const struct merge_spool_static *s = &sp.hdr->s;
	struct spool_ctx c = { .im = &im, .acc = acc, .event = s->event };
	uint64_t badn = 0, badv = 0;
	if (perfmap_open(&pm, &sp, errf)) {
		c.perfmap = &pm;
		synth_image(&c.jit_image, "jit", s);
	}
	merge_spool_foreach(&sp, entry_cb, &c, &badn);
	if ((err = c.err) < 0)
		goto out;
	merge_spool_values(&sp, hot_cb, &c, &badv);
	if ((err = c.err) < 0)
		goto out;
	uint64_t bads = 0;
	if (s->event < MERGE_EV_MAX &&
	    (err = merge_stacks_from_spool(&acc->stacks[s->event], &sp, im.r, im.n, &bads)) < 0)
		goto out;
	/* A process rotating its spool (VPROF_EPOCH_SECS) leaves several: it
	 * is counted once, at its last (exited 0 or 1). */
	int last = l->exited != MERGE_EXITED_ROTATED && l->exited != MERGE_EXITED_CLOSED;
	st->processes += last;
	st->samples += l->samples;
	st->merged += c.merged;
	st->dropped += l->dropped + badn;
	st->unknown += c.unknown;
	st->killed += l->exited == MERGE_EXITED_NO;
	st->cpu_ns += l->exited == MERGE_EXITED_NORMAL ? l->cpu_ns : 0;
	if (s->event < MERGE_EV_MAX)
		st->by_event[s->event] += c.merged;
	if (s->backend < MERGE_EV_MAX)
		st->by_backend[s->backend] += last;
	st->period_ns_sum += last ? s->period : 0;
	st->value_samples += merge_spool_value_samples(&sp);
	st->values_dropped += l->values_dropped;
	st->values_bad += badv;
	st->interp_runs += l->interp_runs;
	st->interp_insns += l->interp_insns;
	for (int i = 0; i < MERGE_INTERP_STOPS; i++)
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
	if (l->exited && l->cpu_split == 1) {
		uint64_t k = kernel_equiv(s, l, c.merged);
		st->cpu_user_ns += l->cpu_user_ns;
		st->cpu_sys_ns += l->cpu_sys_ns;
		st->split_processes += last;   /* a rotated spool has its interval's split */
		if (k) {
			struct merge_image_record kr;
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
		struct merge_image_record sr;
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

/* ---- crash safety: stage, commit, apply ---- */

static long g_die_at = -1, g_steps, g_delay_us;

/* A point where a killed merge must still count everything once. */
static void merge_step(void)
{
	g_steps++;
	if (g_delay_us > 0)
		usleep((useconds_t)g_delay_us);
	if (g_die_at > 0 && g_steps >= g_die_at)
		raise(SIGKILL);
}

static void rm_flat_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (d) {
		for (struct dirent *de; (de = readdir(d));)
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
}

static int is_spool_name(const char *n)
{
	size_t l = strlen(n);
	return n[0] != '.' && l > 6 && strcmp(n + l - 6, ".spool") == 0;
}

/* Finish a committed merge: move its files into the epoch, unlink its
 * spools (only the very files it read: same inode), drop the directory.
 * Every step may already have been done by a killed predecessor. */
static int journal_apply(struct merge_db *db, const char *cdir, FILE *errf)
{
	char mp[700], dir[600], line[800];
	int epoch = 0;
	snprintf(mp, sizeof(mp), "%s/MANIFEST", cdir);
	FILE *f = fopen(mp, "re");
	if (!f) {
		if (errno != ENOENT)
			return -errno;
		rm_flat_dir(cdir);         /* killed after its last step */
		return 0;
	}
	if (!fgets(line, sizeof(line), f) || sscanf(line, "epoch %d", &epoch) != 1 || epoch < 1) {
		fclose(f);
		fprintf(errf, "vprof: %s: bad manifest; merge left as it is\n", mp);
		return -EIO;
	}
	merge_db_epoch_dir(db, epoch, dir, sizeof(dir));
	int err = mkdir_p(dir, 0700);
	DIR *d = err < 0 ? NULL : opendir(cdir);
	if (!d) {
		fclose(f);
		return err < 0 ? err : -errno;
	}
	/* Renaming while reading the directory may hide entries from
	 * readdir: go round again until a pass moves nothing. */
	for (int moved = 1; moved && err == 0;) {
		moved = 0;
		rewinddir(d);
		for (struct dirent *de; (de = readdir(d));) {
			char from[900], to[900];
			if (de->d_name[0] == '.' || !strcmp(de->d_name, "MANIFEST"))
				continue;
			snprintf(from, sizeof(from), "%s/%s", cdir, de->d_name);
			snprintf(to, sizeof(to), "%s/%s", dir, de->d_name);
			if (rename(from, to) < 0) {
				if (errno == ENOENT)
					continue;
				err = -errno;
				break;
			}
			moved = 1;
			merge_step();
		}
	}
	closedir(d);
	while (err == 0 && fgets(line, sizeof(line), f)) {
		char name[600], path[1200];
		unsigned long long ino;
		struct stat st;
		if (sscanf(line, "spool %599s %llu", name, &ino) != 2 || strchr(name, '/') ||
		    !is_spool_name(name))
			continue;
		snprintf(path, sizeof(path), "%s/spool/%s", db->root, name);
		if (lstat(path, &st) == 0 && st.st_ino == ino)
			unlink(path);
		merge_step();
	}
	fclose(f);
	if (err < 0)
		return err;
	unlink(mp);
	merge_step();
	rmdir(cdir);
	return 0;
}

/* Under the lock: finish a committed merge, roll back an uncommitted one. */
static int journal_recover(struct merge_db *db, FILE *errf)
{
	char p[600];
	struct stat st;
	snprintf(p, sizeof(p), "%s/merge.commit", db->root);
	if (lstat(p, &st) == 0) {
		int err = journal_apply(db, p, errf);
		if (err < 0)
			return err;
	}
	snprintf(p, sizeof(p), "%s/merge.stage", db->root);
	if (lstat(p, &st) == 0)
		rm_flat_dir(p);
	return 0;
}

/* Stage DIR/processes.tsv plus this merge's lines. */
static int stage_proclog(const char *dir, const char *stage, const struct proclog *pl)
{
	char from[700], to[700], buf[65536];
	snprintf(from, sizeof(from), "%s/processes.tsv", dir);
	snprintf(to, sizeof(to), "%s/processes.tsv", stage);
	int out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (out < 0)
		return -errno;
	int err = 0, in = open(from, O_RDONLY | O_CLOEXEC);
	for (ssize_t n; in >= 0 && (n = read(in, buf, sizeof(buf))) != 0;) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out, buf, (size_t)n) != n) {
			err = -EIO;
			break;
		}
	}
	if (in >= 0)
		close(in);
	if (!err && write(out, pl->buf, pl->n) != (ssize_t)pl->n)
		err = -EIO;
	if (close(out) < 0 && !err)
		err = -errno;
	return err;
}

/* What a profile set aside held, as its header says (a corrupt file's
 * best word; nothing if even its header is unreadable), into *aside: the
 * stats folded last take it out of their totals. */
static void aside_add(const char *path, struct merge_stats *aside)
{
	struct merge_profile_header h;
	aside->aside_files++;
	if (merge_profile_peek(path, &h) < 0 || (h.flags & (MERGE_PROF_STATS | MERGE_PROF_STACKS)))
		return;
	aside->aside_samples += h.total;
	if (!(h.flags & MERGE_PROF_KERNEL)) {
		aside->merged += h.total;
		aside->by_event[h.event] += h.total;
	} else if (!strncmp(h.path, "[start-up:", 10)) {
		aside->startup_samples += h.total;
	} else {
		aside->kernel_samples += h.total;
	}
}

static void sub_clamped(uint64_t *a, uint64_t b)
{
	*a = *a > b ? *a - b : 0;
}

/* Read one profile of the epoch directory (name: its own, or the given
 * one), add, write it to the stage. A corrupt one is moved aside, what it
 * held added to *aside. A stats file then has *aside taken out. */
static int fold_profile(const char *dir, const char *stage, struct merge_profile *p,
			const char *fname, struct merge_stats *aside, struct merge_result *res,
			FILE *errf)
{
	char name[256], path[900], why[128];
	struct merge_profile old;
	if (fname)
		snprintf(name, sizeof(name), "%s", fname);
	else
		merge_profile_name(p, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int err = merge_profile_read(path, &old, why, sizeof(why));
	if (err == 0) {
		if (merge_profile_merge(p, &old) < 0) {
			merge_profile_free(&old);
			return -ENOMEM;
		}
		merge_profile_free(&old);
	} else if (err != -ENOENT) {
		char aside_path[960];
		snprintf(aside_path, sizeof(aside_path), "%s.corrupt", path);
		fprintf(errf, "vprof: profile %s: %s; moved aside to %s, starting it afresh\n",
			path, why, aside_path);
		if (aside && !fname)
			aside_add(path, aside);
		rename(path, aside_path);
		res->profiles_corrupt++;
	}
	/* Out of the epoch's totals, unless they are starting afresh (the
	 * stats file itself was corrupt): then they never held it. */
	if ((p->flags & MERGE_PROF_STATS) && aside && !fname && err == 0) {
		struct merge_stats *st = &p->stats;
		sub_clamped(&st->merged, aside->merged);
		for (unsigned ev = 0; ev < MERGE_EV_MAX; ev++)
			sub_clamped(&st->by_event[ev], aside->by_event[ev]);
		sub_clamped(&st->kernel_samples, aside->kernel_samples);
		sub_clamped(&st->startup_samples, aside->startup_samples);
		st->aside_files += aside->aside_files;
		st->aside_samples += aside->aside_samples;
	}
	snprintf(path, sizeof(path), "%s/%s", stage, name);
	if ((err = merge_profile_write(path, p)) < 0)
		return err;
	merge_step();
	res->profiles_written++;
	return 0;
}

/* The epoch's stacks file of event ev plus this merge's stacks, staged
 * (merge/stacks.c); a corrupt one is moved aside like a profile. */
static int fold_stacks(const char *dir, const char *stage, struct merge_stacks *s, unsigned ev,
		       struct merge_stats *aside, struct merge_result *res, FILE *errf)
{
	char name[128], path[900], why[160];
	struct merge_stacks old;
	merge_stacks_compact(s);
	merge_stacks_name(ev, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	int err = merge_stacks_read(path, &old, why, sizeof(why));
	if (err == 0) {
		err = merge_stacks_merge(s, &old);
		merge_stacks_free(&old);
		if (err < 0)
			return err;
	} else if (err != -ENOENT) {
		char aside_path[960];
		snprintf(aside_path, sizeof(aside_path), "%s.corrupt", path);
		fprintf(errf, "vprof: stacks %s: %s; moved aside to %s, starting it afresh\n", path,
			why, aside_path);
		rename(path, aside_path);
		res->profiles_corrupt++;
		if (aside)
			aside->aside_files++;
	}
	snprintf(path, sizeof(path), "%s/%s", stage, name);
	if ((err = merge_stacks_write(path, s, ev)) < 0)
		return err;
	merge_step();
	res->profiles_written++;
	return 0;
}

/* Write the stage's MANIFEST: the epoch, then the spools consumed. */
static int stage_manifest(const char *stage, int epoch, char (*names)[700],
			  const ino_t *inos, size_t nf)
{
	char mp[700];
	snprintf(mp, sizeof(mp), "%s/MANIFEST", stage);
	FILE *f = fopen(mp, "wxe");
	if (!f)
		return -errno;
	fprintf(f, "epoch %d\n", epoch);
	for (size_t i = 0; i < nf; i++) {
		const char *base = strrchr(names[i], '/');
		fprintf(f, "spool %s %llu\n", base ? base + 1 : names[i],
			(unsigned long long)inos[i]);
	}
	int bad = ferror(f);
	if (fclose(f) != 0 || bad)
		return -EIO;
	merge_step();
	return 0;
}

/* What every merge into the current epoch starts with: the test knobs
 * read, the database locked, an interrupted commit finished, the current
 * epoch's directory made; *epoch, dir, stage and commit (600 bytes each)
 * set. Returns
 * 0 locked, or negative errno unlocked. */
static int merge_begin(struct merge_db *db, FILE *errf, int *epoch, char *dir, char *stage,
		       char *commit)
{
	const char *knob;
	int err;
	g_steps = 0;
	g_die_at = (knob = getenv("VPROF_TEST_MERGE_DIE")) ? atol(knob) : -1;
	g_delay_us = (knob = getenv("VPROF_TEST_MERGE_DELAY_US")) ? atol(knob) : 0;
	if ((err = merge_db_lock(db)) < 0)
		return err;
	if ((err = journal_recover(db, errf)) == 0) {
		*epoch = merge_db_epoch(db);
		merge_db_epoch_dir(db, *epoch, dir, 600);
		err = mkdir_p(dir, 0700);
	}
	if (err < 0) {
		merge_db_unlock(db);
		return err;
	}
	snprintf(stage, 600, "%s/merge.stage", db->root);
	snprintf(commit, 600, "%s/merge.commit", db->root);
	return 0;
}

/* A finished spool a merge takes, and the epoch it goes to. */
struct cand {
	char path[700];
	ino_t ino;
	int epoch;
	uint64_t run;            /* its run's id (0: none) */
};

static int by_epoch(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;
	return x->epoch - y->epoch;
}

/* Per-run shares of one epoch's merge, for the runs' ledgers. */
struct runacc {
	uint64_t id;
	struct merge_stats st;
};

static int run_add(struct runacc **r, size_t *n, uint64_t id, const struct merge_stats *st)
{
	if (!id)
		return 0;
	for (size_t i = 0; i < *n; i++)
		if ((*r)[i].id == id) {
			merge_stats_add(&(*r)[i].st, st);
			return 0;
		}
	void *nr = realloc(*r, (*n + 1) * sizeof(**r));
	if (!nr)
		return -ENOMEM;
	*r = nr;
	(*r)[*n].id = id;
	(*r)[*n].st = *st;
	(*n)++;
	return 0;
}

static void ledger_name(uint64_t run_id, char *out, size_t cap)
{
	snprintf(out, cap, "run-%016llx.stats", (unsigned long long)run_id);
}

/* Merge spools c[0..n) into epoch `epoch` (its directory exists), under
 * the lock: read them all, stage every file the epoch gets (profiles,
 * stacks, stats with what profiles set aside held taken out, the runs'
 * ledgers, processes.tsv), commit in one rename, apply. */
static int merge_epoch(struct merge_db *db, int epoch, struct cand *c, size_t n, uint64_t run_id,
		       struct merge_result *res, FILE *errf)
{
	char dir[600], stage[600], commit[600];
	struct accum acc = { 0 };
	struct proclog pl = { 0 };
	struct merge_stats est, aside;
	struct runacc *runs = NULL;
	size_t nruns = 0, nf = 0;
	ino_t *inos = calloc(n ? n : 1, sizeof(*inos));
	char (*names)[700] = calloc(n ? n : 1, sizeof(*names));
	int err = 0;

	memset(&est, 0, sizeof(est));
	memset(&aside, 0, sizeof(aside));
	merge_db_epoch_dir(db, epoch, dir, sizeof(dir));
	snprintf(stage, sizeof(stage), "%s/merge.stage", db->root);
	snprintf(commit, sizeof(commit), "%s/merge.commit", db->root);
	if (!inos || !names) {
		err = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		char why[160];
		struct merge_stats one;
		memset(&one, 0, sizeof(one));
		err = merge_one(c[i].path, &acc, &one, &pl, why, sizeof(why), errf);
		if (err == -ENOMEM)
			goto out;
		if (err == -EMFILE || err == -ENFILE || err == -EAGAIN || err == -EINTR) {
			/* Not the spool's fault: left for the next merge. */
			fprintf(errf, "vprof: spool %s: %s; skipped, left for the next merge\n",
				c[i].path, why);
			res->spools_busy++;
			err = 0;
			continue;
		}
		if (err < 0) {
			char aside_path[720];
			snprintf(aside_path, sizeof(aside_path), "%s.corrupt", c[i].path);
			fprintf(errf, "vprof: spool %s: %s; skipped, kept as %s\n", c[i].path, why,
				aside_path);
			rename(c[i].path, aside_path);
			one.corrupt = 1;
		} else {
			inos[nf] = c[i].ino;
			snprintf(names[nf], sizeof(names[nf]), "%s", c[i].path);
			nf++;
		}
		merge_stats_add(&est, &one);
		if (run_id && c[i].run == run_id)
			merge_stats_add(&res->run, &one);
		if ((err = run_add(&runs, &nruns, c[i].run, &one)) < 0)
			goto out;
	}
	err = 0;
	if (!nf && !est.corrupt)
		goto out;

	/* Stage everything this merge writes, then commit it in one rename. */
	if (mkdir(stage, 0700) < 0) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < acc.n; i++) {
		merge_profile_compact(&acc.p[i]);
		if ((err = fold_profile(dir, stage, &acc.p[i], NULL, &aside, res, errf)) < 0)
			goto rollback;
	}
	for (unsigned ev = 0; ev < MERGE_EV_MAX; ev++)
		if ((acc.stacks[ev].n || acc.stacks[ev].dropped) &&
		    (err = fold_stacks(dir, stage, &acc.stacks[ev], ev, &aside, res, errf)) < 0)
			goto rollback;
	struct merge_profile sp;
	merge_profile_init(&sp);
	sp.flags = MERGE_PROF_STATS;
	sp.stats = est;
	err = fold_profile(dir, stage, &sp, NULL, &aside, res, errf);
	merge_profile_free(&sp);
	for (size_t i = 0; i < nruns && err == 0; i++) {
		char name[64];
		ledger_name(runs[i].id, name, sizeof(name));
		merge_profile_init(&sp);
		sp.flags = MERGE_PROF_STATS;
		sp.stats = runs[i].st;
		err = fold_profile(dir, stage, &sp, name, NULL, res, errf);
		merge_profile_free(&sp);
	}
	if (err < 0)
		goto rollback;
	if (pl.n && (err = stage_proclog(dir, stage, &pl)) < 0)
		goto rollback;
	if ((err = stage_manifest(stage, epoch, names, inos, nf)) < 0)
		goto rollback;
	if (rename(stage, commit) < 0) {
		err = -errno;
		goto rollback;
	}
	merge_step();
	/* Committed: from here a kill is finished by the next merge. */
	err = journal_apply(db, commit, errf);
	if (err >= 0)
		merge_images_keep(db->root, acc.p, acc.n, acc.stacks, errf);
	res->spools += (int)nf;
	res->epochs++;
	goto out;
rollback:
	rm_flat_dir(stage);
out:
	/* What was read, merged or not: a failed merge (a full disk) says
	 * what its spools, kept for the next one, hold. */
	merge_stats_add(&res->stats, &est);
	free(inos);
	free(names);
	free(runs);
	free(pl.buf);
	for (size_t i = 0; i < acc.n; i++)
		merge_profile_free(&acc.p[i]);
	free(acc.p);
	for (unsigned ev = 0; ev < MERGE_EV_MAX; ev++)
		merge_stacks_free(&acc.stacks[ev]);
	return err;
}

/* Does epoch directory `dir` exist? */
static int epoch_exists(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

int merge_db_merge(struct merge_db *db, struct merge_result *res, FILE *errf)
{
	return merge_db_merge_run(db, 0, res, errf);
}

int merge_db_merge_run(struct merge_db *db, uint64_t run_id, struct merge_result *res, FILE *errf)
{
	char dir[600], sdir[600], stage[600], commit[600];
	struct cand *c = NULL;
	size_t n = 0, cap = 0;
	int err, epoch;

	memset(res, 0, sizeof(*res));
	if ((err = merge_begin(db, errf, &epoch, dir, stage, commit)) < 0)
		return err;
	snprintf(sdir, sizeof(sdir), "%s/spool", db->root);
	DIR *d = opendir(sdir);
	if (!d) {
		err = -errno;
		goto out;
	}
	for (struct dirent *de; (de = readdir(d));) {
		struct stat st;
		struct merge_spool_run run;
		if (!is_spool_name(de->d_name))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			void *nc = realloc(c, cap * sizeof(*c));
			if (!nc) {
				err = -ENOMEM;
				closedir(d);
				goto out;
			}
			c = nc;
		}
		snprintf(c[n].path, sizeof(c[n].path), "%s/%s", sdir, de->d_name);
		int fd = open(c[n].path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (!merge_spool_finished(fd, c[n].path)) {
			res->spools_busy++;       /* owner alive */
			close(fd);
			continue;
		}
		/* No descriptor is held past this point: the database lock
		 * keeps other merges out, the manifest names spools by path and
		 * inode, and a merge of thousands of spools (a test suite's)
		 * must not run out of descriptors. */
		int gone = fstat(fd, &st) < 0 || st.st_nlink == 0;
		int has_run = merge_spool_run_read(fd, &run) == 0;
		close(fd);
		if (gone)
			continue;
		c[n].ino = st.st_ino;
		c[n].run = has_run ? run.id : 0;
		c[n].epoch = epoch;
		/* The epoch its run chose, unless that has been dropped since. */
		if (has_run && run.epoch >= 1 && run.epoch <= INT32_MAX) {
			char edir[600];
			merge_db_epoch_dir(db, (int)run.epoch, edir, sizeof(edir));
			if (epoch_exists(edir))
				c[n].epoch = (int)run.epoch;
		}
		n++;
	}
	closedir(d);
	err = 0;
	qsort(c, n, sizeof(*c), by_epoch);
	for (size_t i = 0, j; i < n && err == 0; i = j) {
		for (j = i + 1; j < n && c[j].epoch == c[i].epoch; j++)
			;
		err = merge_epoch(db, c[i].epoch, c + i, j - i, run_id, res, errf);
	}
out:
	free(c);
	merge_db_unlock(db);
	return err;
}

/* Is the epoch directory free for a new run: missing, or empty? */
static int epoch_unused(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT;
	int empty = 1;
	for (struct dirent *de; empty && (de = readdir(d));)
		empty = !strcmp(de->d_name, ".") || !strcmp(de->d_name, "..");
	closedir(d);
	return empty;
}

/* DB/epochs/CURRENT := e, by a temporary file and a rename. */
static int write_current(struct merge_db *db, int e)
{
	char p[600], t[640], buf[32];
	snprintf(p, sizeof(p), "%s/epochs/CURRENT", db->root);
	snprintf(t, sizeof(t), "%s.tmp", p);
	int fd = open(t, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int n = snprintf(buf, sizeof(buf), "%d\n", e);
	int err = write(fd, buf, (size_t)n) == n ? 0 : errno ? -errno : -ENOSPC;
	if (close(fd) < 0 && !err)
		err = -errno;
	if (!err && rename(t, p) < 0)
		err = -errno;
	if (err)
		unlink(t);
	return err;
}

int merge_db_run_begin(struct merge_db *db, uint64_t run_id, int add, int *fresh)
{
	char dir[600], name[64], path[700];
	int err;
	if ((err = merge_db_lock(db)) < 0)
		return err;
	int e = merge_db_epoch(db);
	merge_db_epoch_dir(db, e, dir, sizeof(dir));
	*fresh = epoch_unused(dir);
	if (!add && !*fresh) {
		e++;
		merge_db_epoch_dir(db, e, dir, sizeof(dir));
		*fresh = 1;
	}
	if ((err = mkdir_p(dir, 0700)) < 0)
		goto out;
	/* The ledger, empty: the claim. */
	struct merge_profile p;
	merge_profile_init(&p);
	p.flags = MERGE_PROF_STATS;
	ledger_name(run_id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if ((err = merge_profile_write(path, &p)) < 0)
		goto out;
	if (e != merge_db_epoch(db) && (err = write_current(db, e)) < 0) {
		unlink(path);
		goto out;
	}
	err = e;
out:
	merge_db_unlock(db);
	return err;
}

int merge_db_run_end(struct merge_db *db, int e, uint64_t run_id, struct merge_stats *st)
{
	char dir[600], name[64], path[700], why[160];
	struct merge_profile p;
	int err;
	memset(st, 0, sizeof(*st));
	if ((err = merge_db_lock(db)) < 0)
		return err;
	merge_db_epoch_dir(db, e, dir, sizeof(dir));
	ledger_name(run_id, name, sizeof(name));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	err = merge_profile_read(path, &p, why, sizeof(why));
	if (err == 0) {
		*st = p.stats;
		merge_profile_free(&p);
	}
	if (err == 0 || err != -ENOENT)
		unlink(path);
	merge_db_unlock(db);
	return err == -ENOENT ? 0 : err;
}

int merge_db_fold(struct merge_db *db, struct merge_profile *p, size_t n, const char *proclines,
		  size_t len, struct merge_stacks *stacks, struct merge_result *res, FILE *errf)
{
	char dir[600], stage[600], commit[600];
	int err, epoch;

	memset(res, 0, sizeof(*res));
	if ((err = merge_begin(db, errf, &epoch, dir, stage, commit)) < 0)
		return err;
	if (mkdir(stage, 0700) < 0) {
		err = -errno;
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		merge_profile_compact(&p[i]);
		if (p[i].flags & MERGE_PROF_STATS)
			res->stats = p[i].stats;
		if ((err = fold_profile(dir, stage, &p[i], NULL, NULL, res, errf)) < 0)
			goto rollback;
	}
	for (unsigned ev = 1; stacks && ev < MERGE_EV_MAX; ev++)
		if ((stacks[ev].n || stacks[ev].dropped) &&
		    (err = fold_stacks(dir, stage, &stacks[ev], ev, NULL, res, errf)) < 0)
			goto rollback;
	struct proclog pl = { .buf = (char *)proclines, .n = len, .cap = len };
	if (len && (err = stage_proclog(dir, stage, &pl)) < 0)
		goto rollback;
	if ((err = stage_manifest(stage, epoch, NULL, NULL, 0)) < 0)
		goto rollback;
	if (rename(stage, commit) < 0) {
		err = -errno;
		goto rollback;
	}
	merge_step();
	err = journal_apply(db, commit, errf);
	if (err >= 0)
		merge_images_keep(db->root, p, n, stacks, errf);
	goto out;
rollback:
	rm_flat_dir(stage);
out:
	merge_db_unlock(db);
	return err;
}

int merge_db_epoch_drop(struct merge_db *db, int e)
{
	char p[600], to[900], ep[600];
	struct stat st;
	int err;
	if ((err = merge_db_lock(db)) < 0)
		return err;
	snprintf(p, sizeof(p), "%s/epochs", db->root);
	DIR *d = opendir(p);
	if (d) {       /* a drop killed half-way */
		for (struct dirent *de; (de = readdir(d));)
			if (!strncmp(de->d_name, ".drop.", 6)) {
				snprintf(to, sizeof(to), "%s/%s", p, de->d_name);
				rm_flat_dir(to);
			}
		closedir(d);
	}
	snprintf(p, sizeof(p), "%s/merge.commit", db->root);
	if (e == merge_db_epoch(db) || lstat(p, &st) == 0) {
		err = -EBUSY;
		goto out;
	}
	merge_db_epoch_dir(db, e, ep, sizeof(ep));
	snprintf(to, sizeof(to), "%s/epochs/.drop.%d", db->root, e);
	if (rename(ep, to) < 0) {
		err = -errno;
		goto out;
	}
	merge_step();
	rm_flat_dir(to);
	err = 0;
out:
	merge_db_unlock(db);
	return err;
}

int merge_db_load(struct merge_db *db, int epoch, merge_profile_fn *fn, void *arg, FILE *errf)
{
	return merge_db_load_ex(db, epoch, fn, NULL, arg, errf);
}

int merge_db_aside(struct merge_db *db, int epoch, merge_path_fn *fn, void *arg)
{
	char dir[600];
	if (epoch < 0)
		snprintf(dir, sizeof(dir), "%s/spool", db->root);
	else
		merge_db_epoch_dir(db, epoch ? epoch : merge_db_epoch(db), dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	for (struct dirent *de; (de = readdir(d));) {
		char path[900];
		size_t l = strlen(de->d_name);
		if (l < 8 || strcmp(de->d_name + l - 8, ".corrupt") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		fn(path, "set aside", arg);
	}
	closedir(d);
	return 0;
}

int merge_db_load_ex(struct merge_db *db, int epoch, merge_profile_fn *fn, merge_path_fn *skipped,
		     void *arg, FILE *errf)
{
	char dir[600];
	int err = 0;
	merge_db_epoch_dir(db, epoch ? epoch : merge_db_epoch(db), dir, sizeof(dir));
	DIR *d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	for (struct dirent *de; (de = readdir(d));) {
		char path[900], why[160];
		size_t l = strlen(de->d_name);
		struct merge_profile p;
		if (l < 5 || strcmp(de->d_name + l - 5, ".prof") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int rc = merge_profile_read(path, &p, why, sizeof(why));
		if (rc < 0) {
			fprintf(errf, "vprof: %s: %s; skipped\n", path, why);
			if (skipped)
				skipped(path, why, arg);
			continue;
		}
		rc = fn(&p, arg);
		merge_profile_free(&p);
		if (rc) {
			err = rc;
			break;
		}
	}
	closedir(d);
	return err;
}
