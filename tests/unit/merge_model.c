/*
 * Reference-model test of the spool and the merge (SQLite's bitvec style):
 * the same random stream of samples goes into real spools and into a naive
 * exact counter; after merging, the database must hold exactly the model's
 * counts. Covers the 4-way per-thread tables with their evictions, the
 * shared table (threads without a slot), the shared table overflowing
 * (drops counted, never silent), and several merges running at once
 * (separate processes) losing no update.
 *
 *   build/tests/merge_model [seed]
 */
#include "merge/profile.h"
#include "merge/spool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int g_fail;
static uint64_t g_overflow_dropped;
#define CHECK(cond, ...)                                   \
	do {                                               \
		if (cond) {                                \
			printf("PASS ");                   \
		} else {                                   \
			printf("FAIL ");                   \
			g_fail = 1;                        \
		}                                          \
		printf(__VA_ARGS__);                       \
		printf("\n");                              \
	} while (0)

/* The model: key -> exact count, open addressing, big enough. */
#define MODEL_SIZE (1u << 20)
static uint64_t *m_key, *m_cnt;

static void model_add(uint64_t key, uint64_t n)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (MODEL_SIZE - 1);
	while (m_key[h] && m_key[h] != key)
		h = (h + 1) & (MODEL_SIZE - 1);
	m_key[h] = key;
	m_cnt[h] += n;
}

static uint64_t model_get(uint64_t key)
{
	uint32_t h = (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> 40) & (MODEL_SIZE - 1);
	while (m_key[h] && m_key[h] != key)
		h = (h + 1) & (MODEL_SIZE - 1);
	return m_key[h] == key ? m_cnt[h] : 0;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Fill one spool with nsamples samples over ndistinct PCs (skewed: a few
 * hot PCs and a long tail), from nthreads slots plus the shared table. */
static uint64_t fill_spool(const char *dir, int nsamples, int ndistinct, int nthreads,
			   uint64_t *dropped)
{
	struct merge_spool sp;
	struct merge_spool_params p = { .event = MERGE_EV_TASK_CLOCK, .backend = MERGE_EV_TASK_CLOCK,
					.period = 4000000, .exe = "model", .cmdline = "model" };
	int rc = merge_spool_create(&sp, dir, &p);
	if (rc < 0) {
		printf("FAIL merge_spool_create: %s\n", strerror(-rc));
		exit(1);
	}
	struct merge_thread_slot *slot[8] = { 0 };
	for (int t = 0; t < nthreads; t++)
		slot[t] = merge_spool_claim_slot(&sp, 1000 + (uint32_t)t);
	for (int i = 0; i < nsamples; i++) {
		uint64_t r = next();
		uint64_t pc = 0x400000 + ((r & 3) ? (r >> 8) % 16 : (r >> 8) % (uint64_t)ndistinct) * 4;
		uint64_t key = MERGE_KEY(MERGE_EV_TASK_CLOCK, pc);
		int t = (int)((r >> 40) % (uint64_t)(nthreads + 1));    /* nthreads: no slot */
		sp.hdr->live.samples++;
		merge_spool_count(&sp, t < nthreads ? slot[t] : NULL, key);
		model_add(key, 1);
	}
	/* One thread exits early: its slot is folded into the shared table. */
	if (nthreads > 1)
		merge_spool_release_slot(&sp, slot[1]);
	sp.hdr->live.exited = 1;
	*dropped += sp.hdr->live.dropped_full;
	merge_spool_forget(&sp);   /* releases the lock: the spool is finished */
	return (uint64_t)nsamples;
}

struct check {
	int lossy;               /* drops expected: merged <= model per PC */
	uint64_t total, mismatches, seen;
	struct merge_stats stats;
};

static int check_profile(const struct merge_profile *p, void *arg)
{
	struct check *c = arg;
	if (p->flags & MERGE_PROF_STATS) {
		merge_stats_add(&c->stats, &p->stats);
		return 0;
	}
	for (size_t i = 0; i < p->n; i++) {
		uint64_t want = model_get(MERGE_KEY(p->event, p->pcs[i].offset));
		int bad = c->lossy ? p->pcs[i].count > want : p->pcs[i].count != want;
		if (bad && c->mismatches++ < 5)
			printf("  pc %#llx: merged %llu, model %llu\n",
			       (unsigned long long)p->pcs[i].offset, (unsigned long long)p->pcs[i].count,
			       (unsigned long long)want);
		c->total += p->pcs[i].count;
		c->seen++;
	}
	return 0;
}

static void run_case(const char *name, int nspools, int nsamples, int ndistinct, int nthreads,
		     int nmergers)
{
	char dir[] = "/tmp/vprof-model.XXXXXX", why[200];
	struct merge_db db;
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		exit(1);
	}
	memset(m_key, 0, MODEL_SIZE * sizeof(*m_key));
	memset(m_cnt, 0, MODEL_SIZE * sizeof(*m_cnt));
	merge_db_open(&db, dir, 1, why, sizeof(why));
	char sdir[300];
	snprintf(sdir, sizeof(sdir), "%s/spool", dir);
	uint64_t total = 0, dropped = 0;
	for (int s = 0; s < nspools; s++)
		total += fill_spool(sdir, nsamples, ndistinct, nthreads, &dropped);

	/* Several merges at once, each its own process, as `make -j` would
	 * have them. */
	for (int i = 0; i < nmergers; i++) {
		if (fork() == 0) {
			struct merge_db d;
			struct merge_result r;
			merge_db_open(&d, dir, 0, why, sizeof(why));
			_exit(merge_db_merge(&d, &r, stderr) < 0);
		}
	}
	int ok = 1, st;
	while (wait(&st) > 0)
		ok &= WIFEXITED(st) && WEXITSTATUS(st) == 0;
	CHECK(ok, "%s: %d concurrent merges succeeded", name, nmergers);

	struct check c = { .lossy = dropped > 0 };
	merge_db_load(&db, 0, check_profile, &c, stdout);
	CHECK(c.mismatches == 0, "%s: every PC's count %s the model's (%llu PCs, %llu differ)",
	      name, c.lossy ? "is at most" : "equals", (unsigned long long)c.seen,
	      (unsigned long long)c.mismatches);
	CHECK(c.total + dropped == total,
	      "%s: merged %llu + dropped %llu == %llu samples (no double count, no silent loss)", name,
	      (unsigned long long)c.total, (unsigned long long)dropped, (unsigned long long)total);
	CHECK(c.stats.processes == (uint64_t)nspools, "%s: stats count %llu processes of %d", name,
	      (unsigned long long)c.stats.processes, nspools);
	CHECK(c.stats.dropped == dropped && c.stats.samples == total,
	      "%s: stats agree (samples %llu, dropped %llu)", name,
	      (unsigned long long)c.stats.samples, (unsigned long long)c.stats.dropped);
	g_overflow_dropped = dropped;
	merge_db_close(&db);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("(could not remove %s)\n", dir);
}

int main(int argc, char **argv)
{
	if (argc > 1)
		rng = strtoull(argv[1], NULL, 0) | 1;
	m_key = calloc(MODEL_SIZE, sizeof(*m_key));
	m_cnt = calloc(MODEL_SIZE, sizeof(*m_cnt));
	/* Few PCs: everything stays in the per-thread tables. */
	run_case("hot", 3, 20000, 50, 2, 1);
	/* Many PCs: constant eviction into the shared table. */
	run_case("evicting", 4, 60000, 9000, 3, 1);
	/* 40 spools merged by 4 processes at once. */
	run_case("concurrent", 40, 3000, 500, 2, 4);
	/* More distinct PCs than the shared table holds: drops are counted. */
	run_case("overflow", 1, 400000, 200000, 1, 1);
	CHECK(g_overflow_dropped > 0, "overflow: the shared table did overflow (%llu dropped)",
	      (unsigned long long)g_overflow_dropped);
	return g_fail;
}
