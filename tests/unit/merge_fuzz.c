/*
 * Readers against damaged files: a valid spool and a valid profile are
 * damaged thousands of ways (random byte flips, truncation at every kind of
 * boundary, garbage appended) and read back. The readers must either reject
 * the file with an error and a reason, or accept it with every record
 * in-bounds; they must never crash or read outside the file (run it under
 * valgrind or ASan for the latter: `valgrind build/tests/merge_fuzz 300`).
 * Value hotlists get their own rounds: a spool's VALUES section damaged in
 * its geometry (rejected, with a reason) or in its records (each damaged
 * hotlist skipped and counted, never handed on), and profiles whose
 * hotlists are damaged under a valid checksum.
 *
 *   build/tests/merge_fuzz [iterations] [seed]
 */
#include "merge/profile.h"
#include "merge/spool_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>
#include "tests/unit/xorshift.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;
static uint64_t next(void)
{
	return xorshift64(&rng);
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

static int hot_visit(const struct spool_hotlist *h, void *arg)
{
	int *wrong = arg;
	*wrong += spool_hot_check(h, 1, NULL) != 0;
	return 0;
}

/* Damage the VALUES section of the spool at path in place (it is big:
 * rewriting it whole each round would be slow) and read it back; then
 * restore the bytes. */
static void values_rounds(const char *path, const uint8_t *orig, size_t n, int iters, int *wrong)
{
	const struct spool_header *hd = (const void *)orig;
	uint64_t off = hd->s.section[3].offset, size = hd->s.section[3].size;
	uint64_t *used = malloc(sizeof(uint64_t) * (size / sizeof(struct spool_hotlist)));
	size_t nused = 0;
	int rejected = 0, accepted = 0, with_bad = 0;
	char why[200];
	/* Records in use: every 416 bytes after the head and a table header
	 * is not a record, so find them by their key and claim word. */
	for (uint64_t o = off + 64; o + sizeof(struct spool_hotlist) <= off + size; o += 8) {
		const struct spool_hotlist *h = (const void *)(orig + o);
		if (h->key && h->state == SPOOL_HOT_READY && h->n && h->n <= SPOOL_HOT_N &&
		    spool_hot_check(h, 1, NULL) == 0) {
			used[nused++] = o;
			o += sizeof(*h) - 8;
		}
	}
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, orig, n) != (ssize_t)n || !nused) {
		printf("FAIL values: could not set up (%zu records in use)\n", nused);
		exit(1);
	}
	for (int i = 0; i < iters; i++) {
		uint8_t save[sizeof(struct spool_hotlist)], b[sizeof(save)];
		uint64_t at = next() % 3 == 0 ? off : used[next() % nused];
		size_t len = at == off ? sizeof(struct spool_values_head) : sizeof(save);
		memcpy(save, orig + at, len);
		memcpy(b, save, len);
		for (int k = 1 + (int)(next() % 4); k > 0; k--)
			b[next() % len] ^= (uint8_t)(1 + next() % 255);
		if (pwrite(fd, b, len, (off_t)at) != (ssize_t)len)
			exit(1);
		struct spool r;
		why[0] = 0;
		if (merge_spool_open(&r, path, why, sizeof(why)) < 0) {
			rejected++;
			*wrong += !why[0] || at != off;   /* only the geometry rejects */
		} else {
			uint64_t badn = 0;
			merge_spool_values(&r, hot_visit, wrong, &badn);
			with_bad += badn > 0;
			accepted++;
			merge_spool_close(&r);
		}
		if (pwrite(fd, save, len, (off_t)at) != (ssize_t)len)
			exit(1);
	}
	close(fd);
	free(used);
	printf("values: %zu records in use; %d damaged spools rejected, %d accepted (%d with hotlists skipped)\n",
	       nused, rejected, accepted, with_bad);
	printf("%s damaged values geometry is rejected with a reason, damaged hotlists are skipped and counted (%d, %d)\n",
	       rejected > 0 && with_bad > 0 ? "PASS" : "FAIL", rejected, with_bad);
	if (!rejected || !with_bad)
		(*wrong)++;
}

static int image(const struct spool_image_record *r, void *arg)
{
	return strlen(r->path) >= sizeof(r->path);   /* must be terminated */
}

/* Counts of a spool file, or -1 if it is refused (why says why). */
static long long spool_sum(const char *path, char *why, size_t whylen)
{
	struct spool r;
	uint64_t sum = 0, badn = 0;
	why[0] = 0;
	if (merge_spool_open(&r, path, why, whylen) < 0)
		return -1;
	merge_spool_foreach(&r, visit, &sum, &badn);
	merge_spool_close(&r);
	return (long long)sum;
}

/* The block checks, by hand: one count, one key, one image path changed
 * in the thread slot, the shared table and the image records, each must
 * be refused with a reason naming the block; the same change in a slot
 * its writer was changing when killed (BUSY) must be taken, with the
 * spool's other counts. Returns the number of wrong outcomes. */
static int check_rounds(const char *dir, const uint8_t *orig, size_t n)
{
	const struct spool_header *hd = (const void *)orig;
	const struct spool_static *s = &hd->s;
	char path[300], why[200];
	int wrong = 0;
	uint8_t *b = malloc(n);
	snprintf(path, sizeof(path), "%s/c.spool", dir);
	put(path, orig, n);
	long long want = spool_sum(path, why, sizeof(why));
	/* The first used entry of slot 0 and of the shared table. */
	size_t slot0 = s->section[0].offset, shared = s->section[1].offset, e0 = 0, e1 = 0;
	for (size_t o = slot0 + 64; o < slot0 + s->slot_size && !e0; o += 16)
		if (((const struct spool_entry *)(orig + o))->key)
			e0 = o;
	for (size_t o = shared; o < shared + s->section[1].size && !e1; o += 16)
		if (((const struct spool_entry *)(orig + o))->key)
			e1 = o;
	struct {
		const char *what, *expect;
		size_t at;
		uint64_t xor;
		int busy;
	} c[] = {
		{ "a slot count + 61", "thread slot 0 fails its check", e0 + 8, 0, 0 },
		{ "a slot count's bit 40", "thread slot 0 fails its check", e0 + 8, 1ull << 40, 0 },
		{ "a slot key's low bit", "thread slot 0 fails its check", e0, 1, 0 },
		{ "a shared count + 1", "shared table fails its check", e1 + 8, 0, 0 },
		{ "a shared key's bit 20", "shared table fails its check", e1, 1 << 20, 0 },
		{ "an image path byte", "image record 0 fails its check",
		  s->section[2].offset + offsetof(struct spool_image_record, path) + 3, 0x80, 0 },
		{ "a slot count + 1 in a slot left BUSY (killed mid-update)", NULL, e0 + 8, 0, 1 },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		memcpy(b, orig, n);
		uint64_t w;
		memcpy(&w, b + c[i].at, 8);
		if (c[i].at == e0 + 8 && !c[i].xor)
			w += i == 0 ? 61 : 1;
		else if (c[i].at == e1 + 8 && !c[i].xor)
			w += 1;
		else if (c[i].at % 8 == 0)
			w ^= c[i].xor;
		if (c[i].at % 8 == 0)
			memcpy(b + c[i].at, &w, 8);
		else
			b[c[i].at] ^= (uint8_t)c[i].xor;
		if (c[i].busy) {
			uint32_t busy = SPOOL_SLOT_BUSY;
			memcpy(b + slot0 + offsetof(struct spool_thread_slot, busy), &busy, 4);
		}
		put(path, b, n);
		long long got = spool_sum(path, why, sizeof(why));
		int ok = c[i].expect ? got < 0 && strstr(why, c[i].expect) : got == want + 1;
		printf("%s %s: %s (%s; counts %lld, the original's %lld)\n", ok ? "PASS" : "FAIL",
		       c[i].what, c[i].expect ? "refused" : "taken", why[0] ? why : "no reason", got, want);
		wrong += !ok;
	}
	free(b);
	return wrong;
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
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 4000000, .exe = "fuzz", .cmdline = "fuzz" };
	if (spool_create(&sp, dir, &p) < 0)
		return 1;
	struct spool_thread_slot *sl = spool_claim_slot(&sp, 7);
	for (int i = 0; i < 5000; i++)
		spool_count(&sp, i % 3 ? sl : NULL, SPOOL_KEY(UPCALL_EV_TASK_CLOCK, 0x1000 + next() % 4000));
	uint8_t bid[20] = { 1, 2, 3 };
	spool_image(&sp, SPOOL_IMG_MAP, 0, 0x1000, 0x9000, bid, 20, "/bin/fuzz");
	char spath[600];
	snprintf(spath, sizeof(spath), "%s", sp.path);
	spool_forget(&sp);

	/* A valid spool with values: thread tables and the shared area. */
	p.values = 1;
	if (spool_create(&sp, dir, &p) < 0)
		return 1;
	sl = spool_claim_slot(&sp, 8);
	uint64_t coins = 5;
	for (int i = 0; i < 20000; i++)
		spool_value(&sp, i % 4 ? sl : NULL,
			    SPOOL_HOT_KEY(SPOOL_VK_RESULT + i % 3, 0x1000 + next() % 300 * 4),
			    next() % 20, 0, &coins);
	char vpath[600];
	snprintf(vpath, sizeof(vpath), "%s", sp.path);
	spool_forget(&sp);

	/* A valid profile, with hotlists. */
	struct merge_profile pr;
	merge_profile_init(&pr);
	pr.event = UPCALL_EV_TASK_CLOCK;
	pr.build_id_len = 20;
	snprintf(pr.path, sizeof(pr.path), "/bin/fuzz");
	for (int i = 0; i < 500; i++)
		merge_profile_add(&pr, next() % 100000, 1 + next() % 50);
	for (int i = 0; i < 40; i++) {
		struct spool_hotlist h;
		spool_hot_init(&h, SPOOL_HOT_KEY(SPOOL_VK_ADDR, next() % 100000));
		for (int j = 0; j < 200; j++)
			spool_hot_offer(&h, next() % (1 + (uint64_t)i), &coins);
		merge_profile_hot_add(&pr, &h);
	}
	merge_profile_compact(&pr);
	char ppath[300];
	snprintf(ppath, sizeof(ppath), "%s/p.prof", dir);
	merge_profile_write(ppath, &pr);

	size_t sn, pn;
	uint8_t *sorig = slurp(spath, &sn), *porig = slurp(ppath, &pn);
	uint8_t *buf = malloc(sn + 4096);
	int s_ok = 0, s_bad = 0, p_ok = 0, p_bad = 0, wrong = 0, inflated = 0;
	wrong += check_rounds(dir, sorig, sn);
	long long sum0 = spool_sum(spath, why, sizeof(why));
	snprintf(path, sizeof(path), "%s/x.spool", dir);
	for (int i = 0; i < iters; i++) {
		size_t n = damage(buf, sorig, sn, 4096);
		put(path, buf, n);
		struct spool r;
		if (merge_spool_open(&r, path, why, sizeof(why)) < 0) {
			s_bad++;
			if (!why[0])
				wrong++;
			continue;
		}
		uint64_t sum = 0, badn = 0;
		merge_spool_foreach(&r, visit, &sum, &badn);
		wrong += spool_images(&r, image, NULL) != 0;
		/* A damaged spool that is taken holds the original's counts:
		 * a changed count or key fails its block's check. */
		inflated += (long long)sum != sum0;
		merge_spool_close(&r);
		s_ok++;
	}
	printf("%s no damaged spool taken with counts other than the original's (%d of %d taken)\n",
	       inflated ? "FAIL" : "PASS", inflated, s_ok);
	wrong += inflated;
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
		wrong += r.n != pr.n || memcmp(r.pcs, pr.pcs, pr.n * sizeof(*pr.pcs)) != 0 ||
			 r.nhot != pr.nhot || memcmp(r.hot, pr.hot, pr.nhot * sizeof(*pr.hot)) != 0;
		merge_profile_free(&r);
		p_ok++;
	}
	/* Values: damaged spool sections, and profiles whose hotlists are
	 * wrong under a good checksum (written by a buggy or hostile tool). */
	size_t vn;
	uint8_t *vorig = slurp(vpath, &vn);
	snprintf(path, sizeof(path), "%s/v.spool", dir);
	values_rounds(path, vorig, vn, iters / 3, &wrong);
	int hot_refused = 0;
	for (int i = 0; i < 5; i++) {
		struct merge_profile bad = pr, r;
		bad.hot = malloc(pr.nhot * sizeof(*pr.hot));
		memcpy(bad.hot, pr.hot, pr.nhot * sizeof(*pr.hot));
		struct spool_hotlist *h = &bad.hot[next() % pr.nhot];
		switch (i) {
		case 0: h->n = SPOOL_HOT_N + 1; break;
		case 1: h->key = SPOOL_HOT_KEY(SPOOL_VK_MAX, 0); break;
		case 2: h->vtot = 0; break;
		case 3: h->e[0].count = 0; break;
		default: h->r = SPOOL_HOT_RMAX + 1; break;
		}
		snprintf(path, sizeof(path), "%s/h.prof", dir);
		merge_profile_write(path, &bad);
		why[0] = 0;
		if (merge_profile_read(path, &r, why, sizeof(why)) < 0 && why[0]) {
			printf("  refused: %s\n", why);
			hot_refused++;
		} else if (merge_profile_read(path, &r, why, sizeof(why)) == 0) {
			merge_profile_free(&r);
		}
		free(bad.hot);
	}
	printf("%s profiles with impossible hotlists under a valid checksum are refused with a reason (%d of 5)\n",
	       hot_refused == 5 ? "PASS" : "FAIL", hot_refused);
	wrong += hot_refused != 5;

	/* A stats file from before the value fields: shorter section, read
	 * with the new fields zero. */
	struct merge_profile st, st2;
	merge_profile_init(&st);
	st.flags = MERGE_PROF_STATS;
	st.stats.processes = 7;
	st.stats.value_samples = 9;
	snprintf(path, sizeof(path), "%s/stats.prof", dir);
	merge_profile_write(path, &st);
	size_t stn;
	uint8_t *sb = slurp(path, &stn);
	struct merge_profile_header *sh = (void *)sb;
	sh->section[0].size = MERGE_STATS_V1_SIZE;
	sh->file_size = sizeof(*sh) + MERGE_STATS_V1_SIZE;
	size_t ck = offsetof(struct merge_profile_header, checksum) + 8;
	sh->checksum = XXH64(sb + ck, sh->file_size - ck, 0);
	put(path, sb, sh->file_size);
	int old_ok = merge_profile_read(path, &st2, why, sizeof(why)) == 0 &&
		     st2.stats.processes == 7 && st2.stats.value_samples == 0;
	printf("%s a stats file from before the value fields reads back (processes %llu)\n",
	       old_ok ? "PASS" : "FAIL", (unsigned long long)st2.stats.processes);
	wrong += !old_ok;
	free(sb);

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
