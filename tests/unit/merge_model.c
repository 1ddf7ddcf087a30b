/*
 * Reference-model test of the spool and the merge (SQLite's bitvec style):
 * the same random stream of samples goes into real spools and into a naive
 * exact counter; after merging, the database must hold exactly the model's
 * counts. Covers the 4-way per-thread tables with their evictions, the
 * shared table (threads without a slot), the shared table overflowing
 * (drops counted, never silent), and several merges running at once
 * (separate processes) losing no update. Value hotlists go the same way:
 * written with the handler's API into thread tables that evict to the
 * shared value area, translated to image offsets, merged across spools and
 * across merges; keys with at most 16 distinct values must come out exact.
 * And the spool's room: a new one backs only what it writes, and
 * spool_reserve_all backs all of it.
 *
 *   build/tests/merge_model [seed]
 */
#include "merge/profile.h"
#include "merge/spool_read.h"
#include "tests/unit/check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tests/unit/xorshift.h"

static uint64_t g_overflow_dropped;

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
	return xorshift64(&rng);
}

/* Fill one spool with nsamples samples over ndistinct PCs (skewed: a few
 * hot PCs and a long tail), from nthreads slots plus the shared table. */
static uint64_t fill_spool(const char *dir, int nsamples, int ndistinct, int nthreads,
			   uint64_t *dropped)
{
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 4000000, .exe = "model", .cmdline = "model" };
	int rc = spool_create(&sp, dir, &p);
	if (rc < 0) {
		printf("FAIL spool_create: %s\n", strerror(-rc));
		exit(1);
	}
	struct spool_thread_slot *slot[8] = { 0 };
	for (int t = 0; t < nthreads; t++)
		slot[t] = spool_claim_slot(&sp, 1000 + (uint32_t)t);
	for (int i = 0; i < nsamples; i++) {
		uint64_t r = next();
		uint64_t pc = 0x400000 + ((r & 3) ? (r >> 8) % 16 : (r >> 8) % (uint64_t)ndistinct) * 4;
		uint64_t key = SPOOL_KEY(UPCALL_EV_TASK_CLOCK, pc);
		int t = (int)((r >> 40) % (uint64_t)(nthreads + 1));    /* nthreads: no slot */
		sp.hdr->live.samples++;
		spool_count(&sp, t < nthreads ? slot[t] : NULL, key);
		model_add(key, 1);
	}
	/* One thread exits early: its slot is folded into the shared table. */
	if (nthreads > 1)
		spool_release_slot(&sp, slot[1]);
	sp.hdr->live.exited = 1;
	*dropped += sp.hdr->live.dropped_full;
	spool_forget(&sp);   /* releases the lock: the spool is finished */
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
		uint64_t want = model_get(SPOOL_KEY(p->event, p->pcs[i].offset));
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

/* ---- values ---- */

#define VPCS 1200                /* x 2 kinds: 2400 keys, > 128 per thread */
#define VBIAS 0x3ff000ull
static uint64_t v_cnt[VPCS * 2][12], v_tot[VPCS * 2], g_value_evictions;

/* Key i: pc 0x400000 + 4 (i / 2), kind RESULT (even i, at most 12
 * values: exact) or ADDR (odd i: 70% one value, a tail of 1000). */
static uint64_t vkey(int i)
{
	return SPOOL_HOT_KEY(i % 2 ? SPOOL_VK_ADDR : SPOOL_VK_RESULT, 0x400000 + 4 * (uint64_t)(i / 2));
}

static uint64_t g_logged, g_missed;

/* One process's spool of nvalues value samples. log_chunks: how many
 * chunks of the value record log it may use (-1 all, 0 none: every
 * value to the thread tables, whose evictions this then exercises). */
static void fill_values(const char *dir, int nvalues, int log_chunks)
{
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 4000000, .exe = "model", .cmdline = "model",
					.values = 1 };
	uint8_t bid[20] = { 0xab, 0xcd };
	if (spool_create(&sp, dir, &p) < 0) {
		printf("FAIL spool_create with values\n");
		exit(1);
	}
	if (log_chunks >= 0)
		sp.vlog_limit = (uint32_t)log_chunks;
	spool_image(&sp, SPOOL_IMG_MAP, VBIAS, 0x400000, 0x500000, bid, 20, "/bin/model");
	struct spool_thread_slot *slot[2] = { spool_claim_slot(&sp, 1), spool_claim_slot(&sp, 2) };
	uint64_t coins[3] = { 1, 2, 3 };
	for (int n = 0; n < nvalues; n++) {
		uint64_t r = next();
		int i = (int)(r % (VPCS * 2)), t = (int)((r >> 32) % 3), vi = (int)((r >> 40) % 12);
		uint64_t v = i % 2 ? ((r >> 48) % 10 < 7 ? 0x7000 : 0x8000 + (next() % 1000) * 8)
				   : 0x1000 + (uint64_t)vi;
		if (i % 2 == 0)
			v_cnt[i][vi]++;
		v_tot[i]++;
		spool_value(&sp, t < 2 ? slot[t] : NULL, vkey(i), v, 0, &coins[t]);
	}
	g_value_evictions += sp.hdr->live.value_evictions;
	const struct spool_vlog_head *lh = (const struct spool_vlog_head *)sp.vlog;
	for (uint64_t k = 0; k < lh->next && k < SPOOL_VLOG_CHUNKS; k++)
		g_logged += spool_vlog_chunk_at(&sp, (uint32_t)k)->count;
	for (uint32_t i = 0; i < SPOOL_SLOTS; i++)
		g_missed += spool_value_table_at(&sp, i)->vlog_missed;
	spool_interp(&sp, 8, 1);
	spool_interp(&sp, 3, 2);
	sp.hdr->live.exited = 1;
	spool_forget(&sp);
}

struct vcheck {
	uint64_t hot, vtot, bad, exact_keys, tail_found, tail_keys;
	struct merge_stats stats;
};

static int check_values(const struct merge_profile *p, void *arg)
{
	struct vcheck *c = arg;
	if (p->flags & MERGE_PROF_STATS) {
		merge_stats_add(&c->stats, &p->stats);
		return 0;
	}
	for (size_t j = 0; j < p->nhot; j++) {
		const struct spool_hotlist *h = &p->hot[j];
		uint64_t off = SPOOL_HOT_KEY_WHERE(h->key);
		int i = (int)((off + VBIAS - 0x400000) / 4) * 2 + (SPOOL_HOT_KEY_KIND(h->key) == SPOOL_VK_ADDR);
		c->hot++;
		if (p->build_id[0] != 0xab || off < 0x1000 || i < 0 || i >= VPCS * 2 || h->vtot != v_tot[i] ||
		    spool_hot_check(h, 0, NULL) < 0 || (j && h[-1].key >= h->key)) {
			if (c->bad++ < 5)
				printf("  hotlist %#llx: vtot %llu, model %llu\n", (unsigned long long)h->key,
				       (unsigned long long)h->vtot,
				       (unsigned long long)(i >= 0 && i < VPCS * 2 ? v_tot[i] : 0));
			continue;
		}
		c->vtot += h->vtot;
		if (i % 2 == 0) {
			int exact = h->r == 0;
			for (uint32_t e = 0; e < h->n; e++)
				exact &= h->e[e].count == v_cnt[i][h->e[e].value - 0x1000];
			c->exact_keys += exact;
		} else {
			c->tail_keys++;
			c->tail_found += h->n && h->e[0].value == 0x7000;   /* sorted: the top first */
		}
	}
	return 0;
}

static void values_case(void)
{
	char dir[] = "/tmp/vprof-model.XXXXXX", why[200], sdir[300];
	struct merge_db db;
	struct merge_result res;
	uint64_t total = 0;
	if (!mkdtemp(dir) || merge_db_open(&db, dir, 1, why, sizeof(why)) < 0)
		exit(1);
	snprintf(sdir, sizeof(sdir), "%s/spool", dir);
	/* Two processes merged at once, then a third in a later merge: one
	 * whose values all go to the value record log, one whose log fills
	 * after 3 chunks, one with none (thread tables only). */
	fill_values(sdir, 150000, -1);
	fill_values(sdir, 150000, 3);
	int rc = merge_db_merge(&db, &res, stdout);
	fill_values(sdir, 100000, 0);
	rc |= merge_db_merge(&db, &res, stdout);
	total = 400000;
	CHECK(rc == 0 && g_value_evictions > 0,
	      "values: three spools with values merged in two merges (%llu thread-table evictions)",
	      (unsigned long long)g_value_evictions);
	/* The log's records: all of the first spool's values with a slot
	 * (2 of 3 threads), and 3 chunks of the second's. */
	uint64_t per = SPOOL_VLOG_PER_CHUNK;
	CHECK(g_logged > 90000 + 2 * per && g_logged < 110000 + 3 * per && g_missed > 80000,
	      "values: %llu in the value record log, %llu to the thread tables when it was full",
	      (unsigned long long)g_logged, (unsigned long long)g_missed);

	struct vcheck c = { 0 };
	merge_db_load(&db, 0, check_values, &c, stdout);
	CHECK(c.bad == 0 && c.hot == VPCS * 2,
	      "values: %llu hotlists, one per key, at image offsets, sorted, vtot as the model (%llu wrong)",
	      (unsigned long long)c.hot, (unsigned long long)c.bad);
	CHECK(c.vtot == total && c.stats.value_samples == total && c.stats.values_dropped == 0 &&
	      c.stats.values_bad == 0,
	      "values: %llu value samples in hotlists of %llu offered (stats: %llu, dropped %llu, bad %llu)",
	      (unsigned long long)c.vtot, (unsigned long long)total,
	      (unsigned long long)c.stats.value_samples, (unsigned long long)c.stats.values_dropped,
	      (unsigned long long)c.stats.values_bad);
	CHECK(c.exact_keys == VPCS, "values: %llu of %d keys with 12 values counted exactly through evictions and merges",
	      (unsigned long long)c.exact_keys, VPCS);
	CHECK(c.tail_found * 100 >= c.tail_keys * 95,
	      "values: the 70%% value tops %llu of %llu skewed hotlists", (unsigned long long)c.tail_found,
	      (unsigned long long)c.tail_keys);
	CHECK(c.stats.interp_runs == 6 && c.stats.interp_insns == 33 && c.stats.interp_stops[1] == 3 &&
	      c.stats.interp_stops[2] == 3,
	      "values: interpretation runs and stops by reason reach the stats (%llu runs, %llu insns)",
	      (unsigned long long)c.stats.interp_runs, (unsigned long long)c.stats.interp_insns);
	merge_db_close(&db);
	char cmd[400];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0)
		printf("(could not remove %s)\n", dir);
}

/* Room: a new spool backs only what it writes; spool_reserve_all
 * backs the whole file, after which no count makes a system call (the
 * bitmap says every page is backed). */
static void room_case(void)
{
	char dir[] = "/tmp/vprof-room.XXXXXX";
	struct spool sp;
	struct spool_params p = { .event = UPCALL_EV_TASK_CLOCK, .backend = UPCALL_EV_TASK_CLOCK,
					.period = 4000000, .exe = "room", .cmdline = "room" };
	struct stat st;
	if (!mkdtemp(dir) || spool_create(&sp, dir, &p) < 0 || stat(sp.path, &st) < 0) {
		CHECK(0, "room: could not make a spool");
		return;
	}
	uint64_t before = (uint64_t)st.st_blocks * 512;
	CHECK(before < sp.size / 4, "room: a new spool backs %llu KiB of its %zu KiB",
	      (unsigned long long)before / 1024, sp.size / 1024);
	CHECK(spool_reserve_all(&sp) == 0 && sp.room_all && !sp.nospace,
	      "room: spool_reserve_all succeeds");
	stat(sp.path, &st);
	CHECK((uint64_t)st.st_blocks * 512 >= sp.size,
	      "room: after it, the whole file is backed (%llu KiB)",
	      (unsigned long long)st.st_blocks / 2);
	unlink(sp.path);
	spool_forget(&sp);
	rmdir(dir);
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
	values_case();
	room_case();
	return g_fail;
}
