/*
 * The profile database: its layout, lock, epochs and runs' ledgers, and
 * the loading of an epoch's profiles.
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
 *   DB/images/.build-id/     the images merges met, by build-id (image_store.h)
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
 * The merge itself is journal.c (crash-safe commit) and attribute.c (a
 * spool's samples to profiles); the directories a writer needs are made
 * by spool/dir.c.
 *
 * Not async-signal-safe; not thread-safe (one merge per process).
 */
#include "merge/db_private.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

int merge_db_open(struct merge_db *db, const char *root, int create, char *why, size_t whylen)
{
	char p[600];
	struct stat st;
	int err;

	memset(db, 0, sizeof(*db));
	db->lockfd = -1;
	_Static_assert(SPOOL_DB_ROOT_MAX <= sizeof(db->root) - 64, "room for the database's paths");
	if (strlen(root) >= SPOOL_DB_ROOT_MAX) {
		snprintf(why, whylen, "path too long");
		return -ENAMETOOLONG;
	}
	snprintf(db->root, sizeof(db->root), "%s", root);
	if (create) {
		if ((err = spool_db_create(root, why, whylen)) < 0)
			return err;
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
	if ((err = spool_mkdir_p(p, 0700)) == 0)
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

/* Does epoch directory `dir` exist? */
int merge_db_epoch_exists(const char *dir)
{
	struct stat st;
	return stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
}

void merge_db_ledger_name(uint64_t run_id, char *out, size_t cap)
{
	snprintf(out, cap, "run-%016llx.stats", (unsigned long long)run_id);
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
	if ((err = spool_mkdir_p(dir, 0700)) < 0)
		goto out;
	/* The ledger, empty: the claim. */
	struct merge_profile p;
	merge_profile_init(&p);
	p.flags = MERGE_PROF_STATS;
	merge_db_ledger_name(run_id, name, sizeof(name));
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
	merge_db_ledger_name(run_id, name, sizeof(name));
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
				merge_journal_rmdir(to);
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
	merge_journal_step();
	merge_journal_rmdir(to);
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
