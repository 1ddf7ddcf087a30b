/*
 * The merge's crash-safe journal: stage, commit, apply.
 *
 * A merge writes every new file into DB/merge.stage/ with a MANIFEST
 * naming its epoch and the spools it consumed (name and inode), then
 * commits with one rename of the directory to DB/merge.commit/. Only then
 * are the files renamed into the epoch and the spools unlinked; each of
 * those steps can be redone, so a merge that finds merge.commit/ (its
 * predecessor was killed) finishes it first, and one that finds
 * merge.stage/ deletes it: killed at any point, a merge counts every spool
 * exactly once. This holds against the death of the process, not a power
 * cut (nothing is fsync'd; a torn profile then fails its checksum).
 * VPROF_TEST_MERGE_DIE=K (tests only) SIGKILLs the merge at its K-th step;
 * VPROF_TEST_MERGE_DELAY_US=N sleeps N us at each step.
 *
 * The spools a merge takes are the finished ones (spool_owner_finished:
 * the owner record's pid and start time name no running process, or one
 * that no longer maps the spool because it exec'd; spools of an older
 * libvprof, with no owner record, when their owner's flock is gone), each
 * attributed to profiles by attribute.c.
 *
 * Runs in the vprof command under the database lock; not async-signal-
 * safe, not thread-safe (one merge per process).
 */
#include "merge/db_private.h"
#include "merge/image_store.h"
#include "merge/spool_read.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static long g_die_at = -1, g_steps, g_delay_us;

/* A point where a killed merge must still count everything once. */
void merge_journal_step(void)
{
	g_steps++;
	if (g_delay_us > 0)
		usleep((useconds_t)g_delay_us);
	if (g_die_at > 0 && g_steps >= g_die_at)
		raise(SIGKILL);
}

void merge_journal_rmdir(const char *dir)
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
		merge_journal_rmdir(cdir);         /* killed after its last step */
		return 0;
	}
	if (!fgets(line, sizeof(line), f) || sscanf(line, "epoch %d", &epoch) != 1 || epoch < 1) {
		fclose(f);
		fprintf(errf, "vprof: %s: bad manifest; merge left as it is\n", mp);
		return -EIO;
	}
	merge_db_epoch_dir(db, epoch, dir, sizeof(dir));
	int err = spool_mkdir_p(dir, 0700);
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
			merge_journal_step();
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
		merge_journal_step();
	}
	fclose(f);
	if (err < 0)
		return err;
	unlink(mp);
	merge_journal_step();
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
		merge_journal_rmdir(p);
	return 0;
}

/* Stage DIR/processes.tsv plus this merge's lines. */
static int stage_proclog(const char *dir, const char *stage, const struct merge_proclog *pl)
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
		for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++)
			sub_clamped(&st->by_event[ev], aside->by_event[ev]);
		sub_clamped(&st->kernel_samples, aside->kernel_samples);
		sub_clamped(&st->startup_samples, aside->startup_samples);
		st->aside_files += aside->aside_files;
		st->aside_samples += aside->aside_samples;
	}
	snprintf(path, sizeof(path), "%s/%s", stage, name);
	if ((err = merge_profile_write(path, p)) < 0)
		return err;
	merge_journal_step();
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
	merge_journal_step();
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
	merge_journal_step();
	return 0;
}

/* What every merge into the current epoch starts with: the test knobs
 * read, the database locked, an interrupted commit finished, the current
 * epoch's directory made; *epoch, dir, stage and commit (600 bytes each)
 * set. Returns
 * 0 locked, or negative errno unlocked. */
/* The end of a merge: stage the process log (if any) and the manifest,
 * commit the stage by its rename (from there a kill is finished by the
 * next merge), apply it, and keep the images its profiles name. Returns
 * <0 with *committed 0 when nothing was committed (the stage is the
 * caller's to remove), else journal_apply's answer. */
static int stage_commit(struct merge_db *db, const char *dir, const char *stage, const char *commit,
			int epoch, const struct merge_proclog *pl, char (*names)[700], const ino_t *inos,
			size_t nf, const struct merge_profile *p, size_t n, const struct merge_stacks *stacks,
			FILE *errf, int *committed)
{
	int err;
	*committed = 0;
	if (pl->n && (err = stage_proclog(dir, stage, pl)) < 0)
		return err;
	if ((err = stage_manifest(stage, epoch, names, inos, nf)) < 0)
		return err;
	if (rename(stage, commit) < 0)
		return -errno;
	*committed = 1;
	merge_journal_step();
	err = journal_apply(db, commit, errf);
	if (err >= 0)
		merge_images_keep(db->root, p, n, stacks, errf);
	return err;
}

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
		err = spool_mkdir_p(dir, 0700);
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

/* Merge spools c[0..n) into epoch `epoch` (its directory exists), under
 * the lock: read them all, stage every file the epoch gets (profiles,
 * stacks, stats with what profiles set aside held taken out, the runs'
 * ledgers, processes.tsv), commit in one rename, apply. */
static int merge_epoch(struct merge_db *db, int epoch, struct cand *c, size_t n, uint64_t run_id,
		       struct merge_result *res, FILE *errf)
{
	char dir[600], stage[600], commit[600];
	struct merge_accum acc = { 0 };
	struct merge_proclog pl = { 0 };
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
		err = merge_attribute(c[i].path, &acc, &one, &pl, why, sizeof(why), errf);
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
	for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++)
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
		merge_db_ledger_name(runs[i].id, name, sizeof(name));
		merge_profile_init(&sp);
		sp.flags = MERGE_PROF_STATS;
		sp.stats = runs[i].st;
		err = fold_profile(dir, stage, &sp, name, NULL, res, errf);
		merge_profile_free(&sp);
	}
	if (err < 0)
		goto rollback;
	int committed;
	err = stage_commit(db, dir, stage, commit, epoch, &pl, names, inos, nf, acc.p, acc.n, acc.stacks,
			   errf, &committed);
	if (!committed)
		goto rollback;
	res->spools += (int)nf;
	res->epochs++;
	goto out;
rollback:
	merge_journal_rmdir(stage);
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
	for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++)
		merge_stacks_free(&acc.stacks[ev]);
	return err;
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
		struct spool_run run;
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
		if (!spool_owner_finished(fd, c[n].path)) {
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
			if (merge_db_epoch_exists(edir))
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
	for (unsigned ev = 1; stacks && ev < UPCALL_EV_MAX; ev++)
		if ((stacks[ev].n || stacks[ev].dropped) &&
		    (err = fold_stacks(dir, stage, &stacks[ev], ev, NULL, res, errf)) < 0)
			goto rollback;
	struct merge_proclog pl = { .buf = (char *)proclines, .n = len, .cap = len };
	int committed;
	err = stage_commit(db, dir, stage, commit, epoch, &pl, NULL, NULL, 0, p, n, stacks, errf, &committed);
	if (!committed)
		goto rollback;
	goto out;
rollback:
	merge_journal_rmdir(stage);
out:
	merge_db_unlock(db);
	return err;
}

