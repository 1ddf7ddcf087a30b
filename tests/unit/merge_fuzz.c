/*
 * Readers against damaged files: a valid spool and a valid profile are
 * damaged thousands of ways (random byte flips, truncation at every kind of
 * boundary, garbage appended) and read back. The readers must either reject
 * the file with an error and a reason, or accept it with every record
 * in-bounds; they must never crash or read outside the file (run it under
 * valgrind or ASan for the latter: `valgrind build/tests/merge_fuzz 300`).
 *
 *   build/tests/merge_fuzz [iterations] [seed]
 */
#include "merge/profile.h"
#include "merge/spool.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint8_t *slurp(const char *path, size_t *n)
{
	struct stat st;
	int fd = open(path, O_RDONLY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	uint8_t *b = malloc((size_t)st.st_size);
	if (read(fd, b, (size_t)st.st_size) != st.st_size) {
		free(b);
		b = NULL;
	}
	close(fd);
	*n = (size_t)st.st_size;
	return b;
}

static void put(const char *path, const uint8_t *b, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, b, n) != (ssize_t)n) {
		perror(path);
		exit(1);
	}
	close(fd);
}

/* Damage a copy of orig: flips, truncation, or appended garbage. */
static size_t damage(uint8_t *b, const uint8_t *orig, size_t n, size_t hot)
{
	memcpy(b, orig, n);
	switch (next() % 4) {
	case 0:     /* flips anywhere */
		for (int i = 1 + (int)(next() % 8); i > 0; i--)
			b[next() % n] ^= (uint8_t)(1 + next() % 255);
		return n;
	case 1:     /* flips in the header, where lengths and offsets live */
		for (int i = 1 + (int)(next() % 4); i > 0; i--)
			b[next() % hot] ^= (uint8_t)(1 + next() % 255);
		return n;
	case 2:     /* truncation */
		return next() % n;
	default:    /* garbage appended */
		return n;
	}
}

static int visit(uint64_t key, uint64_t count, void *arg)
{
	uint64_t *sum = arg;
	*sum += count;
	return 0;
}

static int image(const struct merge_image_record *r, void *arg)
{
	return strlen(r->path) >= sizeof(r->path);   /* must be terminated */
}

int main(int argc, char **argv)
{
	int iters = argc > 1 ? atoi(argv[1]) : 3000;
	if (argc > 2)
		rng = strtoull(argv[2], NULL, 0) | 1;
	char dir[] = "/tmp/vprof-fuzz.XXXXXX", path[256], why[200];
	if (!mkdtemp(dir))
		return 1;

	/* A valid spool with counts in slots and the shared table, images. */
	struct merge_spool sp;
	struct merge_spool_params p = { .event = MERGE_EV_TASK_CLOCK, .backend = MERGE_EV_TASK_CLOCK,
					.period = 4000000, .exe = "fuzz", .cmdline = "fuzz" };
	if (merge_spool_create(&sp, dir, &p) < 0)
		return 1;
	struct merge_thread_slot *sl = merge_spool_claim_slot(&sp, 7);
	for (int i = 0; i < 5000; i++)
		merge_spool_count(&sp, i % 3 ? sl : NULL, MERGE_KEY(MERGE_EV_TASK_CLOCK, 0x1000 + next() % 4000));
	uint8_t bid[20] = { 1, 2, 3 };
	merge_spool_image(&sp, MERGE_IMG_MAP, 0, 0x1000, 0x9000, bid, 20, "/bin/fuzz");
	char spath[600];
	snprintf(spath, sizeof(spath), "%s", sp.path);
	merge_spool_forget(&sp);

	/* A valid profile. */
	struct merge_profile pr;
	merge_profile_init(&pr);
	pr.event = MERGE_EV_TASK_CLOCK;
	pr.build_id_len = 20;
	snprintf(pr.path, sizeof(pr.path), "/bin/fuzz");
	for (int i = 0; i < 500; i++)
		merge_profile_add(&pr, next() % 100000, 1 + next() % 50);
	merge_profile_compact(&pr);
	char ppath[300];
	snprintf(ppath, sizeof(ppath), "%s/p.prof", dir);
	merge_profile_write(ppath, &pr);

	size_t sn, pn;
	uint8_t *sorig = slurp(spath, &sn), *porig = slurp(ppath, &pn);
	uint8_t *buf = malloc(sn + 4096);
	int s_ok = 0, s_bad = 0, p_ok = 0, p_bad = 0, wrong = 0;
	snprintf(path, sizeof(path), "%s/x.spool", dir);
	for (int i = 0; i < iters; i++) {
		size_t n = damage(buf, sorig, sn, 4096);
		put(path, buf, n);
		struct merge_spool r;
		if (merge_spool_open(&r, path, why, sizeof(why)) < 0) {
			s_bad++;
			if (!why[0])
				wrong++;
			continue;
		}
		uint64_t sum = 0, badn = 0;
		merge_spool_foreach(&r, visit, &sum, &badn);
		wrong += merge_spool_images(&r, image, NULL) != 0;
		merge_spool_close(&r);
		s_ok++;
	}
	snprintf(path, sizeof(path), "%s/x.prof", dir);
	for (int i = 0; i < iters; i++) {
		size_t n = damage(buf, porig, pn, sizeof(struct merge_profile_header));
		if (n == pn && next() % 4 == 0) {     /* append garbage */
			for (int j = 0; j < 64; j++)
				buf[n++] = (uint8_t)next();
		}
		put(path, buf, n);
		struct merge_profile r;
		why[0] = 0;
		int rc = merge_profile_read(path, &r, why, sizeof(why));
		if (rc < 0) {
			p_bad++;
			wrong += !why[0];
			continue;
		}
		/* Accepted: it must be the original (the checksum covers all). */
		wrong += r.n != pr.n || memcmp(r.pcs, pr.pcs, pr.n * sizeof(*pr.pcs)) != 0;
		merge_profile_free(&r);
		p_ok++;
	}
	printf("spools: %d accepted, %d rejected; profiles: %d accepted, %d rejected\n", s_ok, s_bad,
	       p_ok, p_bad);
	printf("%s %d damaged spools and %d damaged profiles read without a crash\n",
	       wrong ? "FAIL" : "PASS", iters, iters);
	printf("%s every rejection has a reason and every accepted profile is the original (%d wrong)\n",
	       wrong ? "FAIL" : "PASS", wrong);
	printf("%s damage in the header was rejected at least once (%d spools, %d profiles)\n",
	       s_bad > 0 && p_bad > 0 ? "PASS" : "FAIL", s_bad, p_bad);
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd)) {
	}
	return wrong != 0 || !s_bad || !p_bad;
}
