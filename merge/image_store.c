/*
 * The database's store of images (see image_store.h): after a merge has put
 * its profiles in place, each image they name is kept under its build-id,
 * with its separate debug file when one is found by build-id.
 *
 * Workload: a merge names a few to a few dozen images, almost all kept
 * already; each costs one open and a few preads of the kept file's notes
 * to see it is the right one. A new entry is a hard link (free while the
 * original lives), else a reflink, else a copy (a system library is a few
 * MB, its debug file a few more). Every entry is written to NAME.tmp and
 * renamed, and checked against the build-id after it is written, since
 * the original may change under us: readers see a whole file or none.
 *
 * Runs in the vprof command under the database lock (one writer).
 */
#include "merge/image_store.h"
#include "merge/profile.h"
#include "merge/stacks.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#define NOTE_BYTES 4096    /* build-id notes sit in the first notes of a file */

/* The GNU build-id among the notes in [off, off + size) of fd. */
static int notes_build_id(int fd, uint64_t off, uint64_t size, uint64_t align, uint8_t *out,
			  size_t cap)
{
	uint8_t buf[NOTE_BYTES];
	size_t n = size < sizeof(buf) ? (size_t)size : sizeof(buf), at = 0;
	ssize_t got = pread(fd, buf, n, (off_t)off);
	align = align == 8 ? 8 : 4;
	if (got <= 0)
		return -1;
	n = (size_t)got;
	while (at + sizeof(Elf64_Nhdr) <= n) {
		Elf64_Nhdr h;
		memcpy(&h, buf + at, sizeof(h));
		size_t name = at + sizeof(h);
		size_t desc = name + ((h.n_namesz + align - 1) & ~(align - 1));
		size_t next = desc + ((h.n_descsz + align - 1) & ~(align - 1));
		if (h.n_namesz > n || h.n_descsz > n || next > n)
			return -1;
		if (h.n_type == NT_GNU_BUILD_ID && h.n_namesz == 4 && !memcmp(buf + name, "GNU", 4)) {
			if (h.n_descsz == 0 || h.n_descsz > cap)
				return -1;
			memcpy(out, buf + desc, h.n_descsz);
			return (int)h.n_descsz;
		}
		at = next;
	}
	return -1;
}

/* The NT_GNU_BUILD_ID of the ELF file open on fd: its length, or -1.
 * Read with pread (a few hundred bytes of headers and notes), not libelf;
 * section headers first (a debug file's program headers describe the
 * image, not its own contents), then PT_NOTE. */
static int build_id_of(int fd, uint8_t *out, size_t cap)
{
	Elf64_Ehdr eh;
	int len = -1;
	if (pread(fd, &eh, sizeof(eh), 0) != (ssize_t)sizeof(eh) || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return -1;
	for (unsigned i = 0; i < eh.e_shnum && i < 256 && len < 0 && eh.e_shentsize == sizeof(Elf64_Shdr); i++) {
		Elf64_Shdr sh;
		if (pread(fd, &sh, sizeof(sh), (off_t)(eh.e_shoff + i * sizeof(sh))) != (ssize_t)sizeof(sh))
			break;
		if (sh.sh_type == SHT_NOTE)
			len = notes_build_id(fd, sh.sh_offset, sh.sh_size, sh.sh_addralign, out, cap);
	}
	for (unsigned i = 0; i < eh.e_phnum && i < 64 && len < 0 && eh.e_phentsize == sizeof(Elf64_Phdr); i++) {
		Elf64_Phdr ph;
		if (pread(fd, &ph, sizeof(ph), (off_t)(eh.e_phoff + i * sizeof(ph))) != (ssize_t)sizeof(ph))
			break;
		if (ph.p_type == PT_NOTE)
			len = notes_build_id(fd, ph.p_offset, ph.p_filesz, ph.p_align, out, cap);
	}
	return len;
}

/* Does the regular file open on fd have build-id id? */
static int fd_has_id(int fd, const uint8_t *id, uint32_t len)
{
	uint8_t got[64];
	struct stat st;
	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	       build_id_of(fd, got, sizeof(got)) == (int)len && !memcmp(got, id, len);
}

static int path_has_id(const char *path, const uint8_t *id, uint32_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return 0;
	int ok = fd_has_id(fd, id, len);
	close(fd);
	return ok;
}

static int copy_fd(int in, int out)
{
	char buf[65536];
	off_t off = 0;
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	for (;;) {
		ssize_t n = pread(in, buf, sizeof(buf), off);
		if (n == 0)
			return 0;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		for (ssize_t w = 0; w < n;) {
			ssize_t k = write(out, buf + w, (size_t)(n - w));
			if (k < 0 && errno != EINTR)
				return -errno;
			w += k > 0 ? k : 0;
		}
		off += n;
	}
}

/* Keep src as dst when src has build-id id: 0 (kept, already kept, or
 * nothing to keep: src gone or already another build), or negative
 * errno when writing the store failed. */
static int keep_file(const char *src, const char *dst, const uint8_t *id, uint32_t len)
{
	char tmp[700];
	int in, out, err = 0;
	if (path_has_id(dst, id, len))
		return 0;
	if ((in = open(src, O_RDONLY | O_CLOEXEC | O_NONBLOCK)) < 0)
		return 0;
	if (!fd_has_id(in, id, len)) {
		close(in);
		return 0;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", dst);
	unlink(tmp);       /* left by a killed merge */
	if (link(src, tmp) == 0 && path_has_id(tmp, id, len))
		goto done;
	unlink(tmp);
	if ((out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600)) < 0) {
		err = -errno;
		goto out;
	}
	err = copy_fd(in, out);
	if (close(out) < 0 && !err)
		err = -errno;
	if (err < 0 || !path_has_id(tmp, id, len)) {
		unlink(tmp);
		goto out;
	}
done:
	if (rename(tmp, dst) < 0) {
		err = -errno;
		unlink(tmp);
	}
out:
	close(in);
	return err;
}

/* The debug file of build-id hex under one root, kept beside the image. */
static int keep_debug(const char *root, size_t rootlen, const char *hex, const char *dst,
		      const uint8_t *id, uint32_t len)
{
	char src[700];
	if (snprintf(src, sizeof(src), "%.*s/.build-id/%.2s/%s.debug", (int)rootlen, root, hex, hex + 2) >=
	    (int)sizeof(src) || access(src, R_OK) != 0)
		return 1;      /* not under this root */
	int err = keep_file(src, dst, id, len);
	return err < 0 ? err : 0;
}

static int keep_image(const char *root, const char *path, const uint8_t *id, uint32_t len)
{
	char hex[2 * SPOOL_BUILD_ID_MAX + 1], dir[600], dst[700];
	int err;
	if (!len || len > SPOOL_BUILD_ID_MAX || path[0] != '/')
		return 0;
	for (uint32_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", id[i]);
	const char *parts[] = { "/" MERGE_IMAGES_DIR, "/.build-id", NULL };
	snprintf(dir, sizeof(dir), "%s", root);
	for (int i = 0; i < 3; i++) {
		size_t l = strlen(dir);
		if (parts[i])
			snprintf(dir + l, sizeof(dir) - l, "%s", parts[i]);
		else
			snprintf(dir + l, sizeof(dir) - l, "/%.2s", hex);
		if (mkdir(dir, 0700) < 0 && errno != EEXIST)
			return -errno;
	}
	snprintf(dst, sizeof(dst), "%s/%s", dir, hex + 2);
	if ((err = keep_file(path, dst, id, len)) < 0)
		return err;
	/* Its debug file: $VPROF_DEBUG_DIRS roots, then /usr/lib/debug, as
	 * the symbolizer looks (reports/sym_debug.c). */
	strcat(dst, ".debug");
	for (const char *dirs = getenv("VPROF_DEBUG_DIRS"); dirs && *dirs;) {
		size_t l = strcspn(dirs, ":");
		if (l && (err = keep_debug(dirs, l, hex, dst, id, len)) <= 0)
			return err;
		dirs += l + (dirs[l] == ':');
	}
	err = keep_debug("/usr/lib/debug", 14, hex, dst, id, len);
	return err < 0 ? err : 0;
}

void merge_images_keep(const char *root, const struct merge_profile *p, size_t n,
		       const struct merge_stacks *stacks, FILE *errf)
{
	int err = 0;
	for (size_t i = 0; i < n && !err; i++)
		if (!(p[i].flags & (MERGE_PROF_UNKNOWN | MERGE_PROF_STATS | MERGE_PROF_JIT | MERGE_PROF_KERNEL |
				    MERGE_PROF_CODE)))
			err = keep_image(root, p[i].path, p[i].build_id, p[i].build_id_len);
	for (unsigned ev = 0; stacks && ev < UPCALL_EV_MAX && !err; ev++)
		for (size_t i = 0; i < stacks[ev].nimg && !err; i++)
			err = keep_image(root, stacks[ev].img[i].path, stacks[ev].img[i].build_id,
					 stacks[ev].img[i].build_id_len);
	if (err)
		fprintf(errf, "vprof: keeping images in %s/" MERGE_IMAGES_DIR ": %s; a program "
			"rebuilt after this run will show unnamed in its profile\n", root, strerror(-err));
}
