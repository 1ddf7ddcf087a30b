/*
 * The database's directories, as a writer needs them: DB/spool/ for its
 * spool, DB/epochs/ and DB/lock beside it, made if missing (0700: value
 * profiles can hold secrets). The rest of the database (epochs, the
 * merge) is merge/db.c's, in the vprof command.
 *
 * Runs in libvprof.so's constructor and in the vprof command
 * (merge_db_open with create); not async-signal-safe.
 */
#include "spool/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

int spool_mkdir_p(const char *path, mode_t mode)
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

int spool_db_create(const char *root, char *why, size_t whylen)
{
	char p[600];
	int err, fd;

	if (strlen(root) >= SPOOL_DB_ROOT_MAX) {
		snprintf(why, whylen, "path too long");
		return -ENAMETOOLONG;
	}
	snprintf(p, sizeof(p), "%s/spool", root);
	if ((err = spool_mkdir_p(p, 0700)) < 0)
		goto fail;
	snprintf(p, sizeof(p), "%s/epochs", root);
	if ((err = spool_mkdir_p(p, 0700)) < 0)
		goto fail;
	snprintf(p, sizeof(p), "%s/lock", root);
	if ((fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) < 0) {
		err = -errno;
		goto fail;
	}
	upcall_fd_close(fd);
	return 0;
fail:
	snprintf(why, whylen, "%s", strerror(-err));
	return err;
}
