/*
 * The owner record of a spool (spool.h): who writes it, filled by the
 * writer at creation, and the test a merge makes of it, from /proc,
 * before it takes the spool: is the owner gone?
 *
 * The writer keeps no descriptor on its spool, so liveness cannot be a
 * lock held on one: it is the owner's pid and start time (and the boot,
 * and the pid namespace). Spools of an older libvprof, with no owner
 * record, are judged by the flock their owner held.
 *
 * spool_owner_fill uses system calls only (it runs in a fork child);
 * spool_owner_finished runs in the vprof command.
 */
#include "spool/spool.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

/* Read a small /proc file into buf (NUL-terminated). System calls only. */
static ssize_t read_small(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	upcall_fd_close(fd);
	buf[n > 0 ? n : 0] = 0;
	return n;
}

static uint64_t parse_u64(const char *p)
{
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

/* /proc/PID/stat: state (field 3), threads (20), start time (22, clock
 * ticks after boot). The command name (field 2) may hold spaces and
 * parentheses: fields are counted from its last ')'. */
static int parse_stat(const char *buf, char *state, uint64_t *threads, uint64_t *start)
{
	const char *p = NULL;
	for (const char *q = buf; *q; q++)
		if (*q == ')')
			p = q;
	if (!p || p[1] != ' ' || !p[2])
		return -1;
	p += 2;
	*state = *p;
	int field = 3;
	for (; *p && field < 22; p++)
		if (*p == ' ') {
			field++;
			if (field == 20)
				*threads = parse_u64(p + 1);
			else if (field == 22)
				*start = parse_u64(p + 1);
		}
	return field == 22 ? 0 : -1;
}

static void read_boot_id(uint8_t id[16])
{
	char buf[64];
	int n = 0, hi = -1;
	for (int i = 0; i < 16; i++)
		id[i] = 0;
	if (read_small("/proc/sys/kernel/random/boot_id", buf, sizeof(buf)) <= 0)
		return;
	for (const char *p = buf; *p && n < 16; p++) {
		int d = *p >= '0' && *p <= '9' ? *p - '0' : *p >= 'a' && *p <= 'f' ? *p - 'a' + 10 : -1;
		if (d < 0)
			continue;
		if (hi < 0)
			hi = d;
		else {
			id[n++] = (uint8_t)(hi << 4 | d);
			hi = -1;
		}
	}
}

static uint64_t read_pidns(void)
{
	char buf[64];
	ssize_t n = readlink("/proc/self/ns/pid", buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	for (char *p = buf; *p; p++)
		if (*p == '[')
			return parse_u64(p + 1);
	return 0;
}

void spool_owner_fill(struct spool_owner *o, pid_t pid)
{
	char buf[1024], state;
	uint64_t threads = 0, start = 0;
	memcpy(o->magic, SPOOL_OWNER_MAGIC, 8);
	o->pid = (uint64_t)pid;
	if (read_small("/proc/self/stat", buf, sizeof(buf)) <= 0 ||
	    parse_stat(buf, &state, &threads, &start) < 0)
		start = 0;
	o->start_ticks = start;
	o->pidns = read_pidns();
	read_boot_id(o->boot_id);
	o->checksum = XXH64(o, offsetof(struct spool_owner, checksum), 0);
}

static int boot_id_known(const uint8_t id[16])
{
	for (int i = 0; i < 16; i++)
		if (id[i])
			return 1;
	return 0;
}

/* Does process pid map the spool (inode ino, file name base)? 1: yes;
 * 0: its maps were read whole and it does not (it exec'd since); -1:
 * cannot tell. Both the inode and the name are looked for, so that a
 * filesystem that shows other numbers in maps (overlayfs) errs towards
 * "maps it". */
static int maps_spool(uint64_t pid, uint64_t ino, const char *base)
{
	char path[64], line[4096];
	snprintf(path, sizeof(path), "/proc/%llu/maps", (unsigned long long)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	size_t bl = strlen(base);
	int found = 0, whole = 1;
	while (!found && fgets(line, sizeof(line), f)) {
		size_t l = strlen(line);
		if (l && line[l - 1] == '\n')
			line[--l] = 0;
		else if (!feof(f)) {
			whole = 0;       /* a line longer than the buffer: skip it */
			int c;
			while ((c = fgetc(f)) != EOF && c != '\n')
				;
			continue;
		}
		unsigned long long i = 0;
		if (sscanf(line, "%*s %*s %*s %*s %llu", &i) == 1 && i == ino)
			found = 1;
		const char *d = strstr(line, " (deleted)");
		size_t end = d ? (size_t)(d - line) : l;
		if (end > bl && line[end - bl - 1] == '/' && !strncmp(line + end - bl, base, bl))
			found = 1;
	}
	if (ferror(f))
		whole = 0;
	fclose(f);
	return found ? 1 : whole ? 0 : -1;
}

int spool_owner_finished(int fd, const char *spool_path)
{
	struct spool_owner o;
	if (pread(fd, &o, sizeof(o), SPOOL_OWNER_OFF) != (ssize_t)sizeof(o) ||
	    memcmp(o.magic, SPOOL_OWNER_MAGIC, 8) != 0 ||
	    o.checksum != XXH64(&o, offsetof(struct spool_owner, checksum), 0))
		/* An older libvprof's spool: its owner holds a flock while alive. */
		return flock(fd, LOCK_EX | LOCK_NB) == 0;
	uint8_t boot[16];
	read_boot_id(boot);
	if (boot_id_known(boot) && boot_id_known(o.boot_id) && memcmp(boot, o.boot_id, 16) != 0)
		return 1;        /* written before the last reboot */
	/* Rotated out and closed by its running owner (SPOOL_EXITED_CLOSED):
	 * no writer is left in it. Rotated out but maybe still written
	 * (SPOOL_EXITED_ROTATED): judged as a live owner's, by its mapping. */
	uint64_t exited = 0;
	if (pread(fd, &exited, sizeof(exited),
		  (off_t)offsetof(struct spool_header, live.exited)) != sizeof(exited))
		exited = 0;
	if (exited == SPOOL_EXITED_CLOSED)
		return 1;
	uint64_t ns = read_pidns();
	if (ns && o.pidns && ns != o.pidns)
		/* Its pid means nothing here: trust only a normal exit. */
		return exited == SPOOL_EXITED_NORMAL;
	char path[64], buf[1024], state = 0;
	uint64_t threads = 0, start = 0;
	snprintf(path, sizeof(path), "/proc/%llu/stat", (unsigned long long)o.pid);
	if (read_small(path, buf, sizeof(buf)) <= 0 || parse_stat(buf, &state, &threads, &start) < 0)
		return 1;        /* no such process */
	if (o.start_ticks && start != o.start_ticks)
		return 1;        /* another process took the pid */
	/* A zombie whose threads have all exited has unmapped the spool; a
	 * zombie group leader with live threads (pthread_exit from main)
	 * counts itself and them. */
	if (state == 'X' || (state == 'Z' && threads <= 1))
		return 1;
	/* The same process, but it may have exec'd since: exec drops the old
	 * image's mapping (as it closed the flock'd descriptor before), and
	 * the new image writes a spool of its own. */
	struct stat st;
	const char *base = strrchr(spool_path, '/');
	base = base ? base + 1 : spool_path;
	if (fstat(fd, &st) == 0 && maps_spool(o.pid, (uint64_t)st.st_ino, base) == 0)
		return 1;
	return 0;
}
