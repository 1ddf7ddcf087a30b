/*
 * vprof merge --from SRC...: fold other databases' profiles into this
 * one, so that a fleet's profiles combine (each machine profiles into its
 * own database; one gathers them). Per-image profiles are keyed by
 * build-id, so the same binary on every machine folds into one profile;
 * counts add exactly and value hotlists merge as across spools, so folding
 * is associative and commutative (tests/merge_from.sh).
 *
 * Call stacks (stacks.EVENT.stk) fold the same way.
 *
 * Everything is read and checked before anything is written: a source
 * that is not a database, an epoch it does not have, a profile that fails
 * its checksum, or the destination itself given as a source, is one
 * message and exit 1 with the destination unchanged. The write is one
 * crash-safe merge (merge_db_fold: staged, committed by a rename). Sources
 * are only read.
 */
#include "reports/merge_cmd.h"
#include "merge/profile.h"
#include "merge/stacks.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct fold {
	struct merge_profile *p;
	char (*name)[256];
	size_t n, cap;
	char *proc;              /* processes.tsv lines */
	size_t plen, pcap;
	struct merge_stacks stacks[UPCALL_EV_MAX];   /* stacks.EVENT.stk, by event */
};

static int fold_add(struct fold *f, struct merge_profile *p)
{
	char name[256];
	merge_profile_name(p, name, sizeof(name));
	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->name[i], name)) {
			int rc = merge_profile_merge(&f->p[i], p);
			merge_profile_free(p);
			return rc;
		}
	if (f->n == f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 32;
		void *np = realloc(f->p, cap * sizeof(*f->p)), *nn = np ? realloc(f->name, cap * sizeof(*f->name)) : NULL;
		if (np)
			f->p = np;
		if (!nn) {
			merge_profile_free(p);
			return -ENOMEM;
		}
		f->name = nn;
		f->cap = cap;
	}
	f->p[f->n] = *p;
	snprintf(f->name[f->n], sizeof(f->name[0]), "%s", name);
	f->n++;
	return 0;
}

static int add_proclog(struct fold *f, const char *path)
{
	FILE *in = fopen(path, "re");
	if (!in)
		return errno == ENOENT ? 0 : -errno;
	char buf[65536];
	size_t k;
	while ((k = fread(buf, 1, sizeof(buf), in)) > 0) {
		if (f->plen + k > f->pcap) {
			size_t cap = (f->plen + k) * 2;
			char *nb = realloc(f->proc, cap);
			if (!nb) {
				fclose(in);
				return -ENOMEM;
			}
			f->proc = nb;
			f->pcap = cap;
		}
		memcpy(f->proc + f->plen, buf, k);
		f->plen += k;
	}
	int bad = ferror(in);
	fclose(in);
	return bad ? -EIO : 0;
}

/* Read every profile of one epoch directory of src. */
static int read_epoch(struct fold *f, const char *src, const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		fprintf(stderr, "vprof merge: --from %s: %s: %s; nothing folded\n", src, dir,
			strerror(errno));
		return -1;
	}
	int rc = 0;
	for (struct dirent *de; rc == 0 && (de = readdir(d));) {
		char path[1200], why[200];
		size_t l = strlen(de->d_name);
		struct merge_profile p;
		if (l < 5 || strcmp(de->d_name + l - 5, ".prof") != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		int err = merge_profile_read(path, &p, why, sizeof(why));
		if (err < 0) {
			fprintf(stderr, "vprof merge: --from %s: profile %s: %s; nothing folded\n", src,
				path, why);
			rc = -1;
		} else if ((err = fold_add(f, &p)) < 0) {
			fprintf(stderr, "vprof merge: --from %s: %s\n", src, strerror(-err));
			rc = -1;
		}
	}
	closedir(d);
	for (unsigned ev = 1; rc == 0 && ev < UPCALL_EV_MAX; ev++) {
		char name[64], path[1200], why[200];
		struct merge_stacks st;
		merge_stacks_name(ev, name, sizeof(name));
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (access(path, F_OK) != 0)
			continue;
		merge_stacks_init(&st);
		int err = merge_stacks_read(path, &st, why, sizeof(why));
		if (err < 0) {
			fprintf(stderr, "vprof merge: --from %s: stacks %s: %s; nothing folded\n", src,
				path, why);
			rc = -1;
		} else if ((err = merge_stacks_merge(&f->stacks[ev], &st)) < 0) {
			fprintf(stderr, "vprof merge: --from %s: %s\n", src, strerror(-err));
			rc = -1;
		}
		merge_stacks_free(&st);
	}
	if (rc == 0) {
		char path[1200];
		snprintf(path, sizeof(path), "%s/processes.tsv", dir);
		int err = add_proclog(f, path);
		if (err < 0) {
			fprintf(stderr, "vprof merge: --from %s: %s: %s; nothing folded\n", src, path,
				strerror(-err));
			rc = -1;
		}
	}
	return rc;
}

static int read_source(struct fold *f, const char *src, const char *epoch, const struct stat *dst)
{
	char p[1100];
	struct stat st, root;
	if (stat(src, &root) < 0) {
		fprintf(stderr, "vprof merge: --from %s: %s\n", src, strerror(errno));
		return -1;
	}
	snprintf(p, sizeof(p), "%s/epochs", src);
	if (!S_ISDIR(root.st_mode) || stat(p, &st) < 0 || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "vprof merge: --from %s: not a vprof database (no epochs/ directory); "
			"nothing folded\n", src);
		return -1;
	}
	if (root.st_dev == dst->st_dev && root.st_ino == dst->st_ino) {
		fprintf(stderr, "vprof merge: --from %s: that is the destination database itself "
			"(its counts would double); nothing folded\n", src);
		return -1;
	}
	struct merge_db db;
	char why[300];
	if (merge_db_open(&db, src, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof merge: --from %s: %s; nothing folded\n", src, why);
		return -1;
	}
	int ep[4096], n = merge_db_epochs(&db, ep, 4096), rc = 0;
	if (!epoch || strcmp(epoch, "all")) {
		char *end;
		long want = epoch ? strtol(epoch, &end, 10) : merge_db_epoch(&db);
		int found = 0;
		for (int i = 0; i < n; i++)
			found |= ep[i] == want;
		if (epoch && (*end || want < 1)) {
			fprintf(stderr, "vprof merge: --epoch %s: expected a number or all\n", epoch);
			rc = -1;
		} else if (!found && epoch) {
			fprintf(stderr, "vprof merge: --from %s: no epoch %ld; nothing folded\n", src, want);
			rc = -1;
		} else if (found) {
			merge_db_epoch_dir(&db, (int)want, p, sizeof(p));
			rc = read_epoch(f, src, p);
		}
		/* A database whose current epoch holds nothing yet folds nothing. */
	} else {
		for (int i = 0; i < n && rc == 0; i++) {
			merge_db_epoch_dir(&db, ep[i], p, sizeof(p));
			rc = read_epoch(f, src, p);
		}
	}
	merge_db_close(&db);
	return rc;
}

int report_merge_from(const char *dbpath, char **src, int nsrc, const char *epoch, int json)
{
	struct fold f = { 0 };
	for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++)
		merge_stacks_init(&f.stacks[ev]);
	struct merge_db db;
	struct merge_result r;
	struct stat dst;
	char why[300];
	int rc = 1;
	if (merge_db_open(&db, dbpath, 1, why, sizeof(why)) < 0 || stat(dbpath, &dst) < 0) {
		fprintf(stderr, "vprof merge: database %s: %s\n", dbpath, why);
		return 1;
	}
	for (int i = 0; i < nsrc; i++)
		if (read_source(&f, src[i], epoch, &dst) < 0)
			goto out;
	int err = merge_db_fold(&db, f.p, f.n, f.proc, f.plen, f.stacks, &r, stderr);
	if (err < 0) {
		fprintf(stderr, "vprof merge: %s: %s (destination unchanged)\n", dbpath, strerror(-err));
		goto out;
	}
	int e = merge_db_epoch(&db);
	if (json)
		printf("{\"db\":\"%s\",\"epoch\":%d,\"sources\":%d,\"profiles\":%zu,\"processes\":%llu,"
		       "\"samples\":%llu}\n",
		       dbpath, e, nsrc, f.n, (unsigned long long)r.stats.processes,
		       (unsigned long long)r.stats.merged);
	else
		printf("folded %zu profile%s (%llu samples from %llu process%s) of %d database%s into "
		       "%s epoch %d\n",
		       f.n, f.n == 1 ? "" : "s", (unsigned long long)r.stats.merged,
		       (unsigned long long)r.stats.processes, r.stats.processes == 1 ? "" : "es", nsrc,
		       nsrc == 1 ? "" : "s", dbpath, e);
	rc = 0;
out:
	for (size_t i = 0; i < f.n; i++)
		merge_profile_free(&f.p[i]);
	free(f.p);
	free(f.name);
	free(f.proc);
	for (unsigned ev = 0; ev < UPCALL_EV_MAX; ev++)
		merge_stacks_free(&f.stacks[ev]);
	merge_db_close(&db);
	return rc;
}
