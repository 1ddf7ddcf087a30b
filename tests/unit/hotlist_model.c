/*
 * Reference-model test of value hotlists (spool/hotlist.c), SQLite style:
 * every stream goes into hotlists and into an exact counter beside them.
 *
 *  - invariants after every offer and merge (NZ <= 16, counts > 0 and at
 *    most vtot, p in (0, 1]);
 *  - exactness while a stream has at most 16 distinct values (p stays 1);
 *  - skewed streams (Zipf, 90% one value, uniform): the heavy values are
 *    found and their estimates are within 4.5 standard errors of the truth;
 *  - accuracy (value sampling's bar): a 90% value from one of two call sites,
 *    the other site's values uniform over 1000, 2000 samples: its share
 *    among its site's samples within 3 points of the truth in >= 99% of
 *    trials;
 *  - unbiasedness: many independent trials of split-stream-merge, the mean
 *    estimate within 4 standard errors of the true count;
 *  - merge order: (a+b)+c, a+(b+c) and (c+a)+b agree in distribution.
 *
 * Seeds are fixed: the run is deterministic.
 *
 *   build/tests/hotlist_model [trials]
 */
#include "spool/hotlist.h"
#include "tests/unit/check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/unit/xorshift.h"

static uint64_t g_rng = 0x853c49e6748fea9bull;
static double uniform(uint64_t *s)
{
	return (double)(xorshift64(s) >> 11) / 9007199254740992.0;
}

/* ---- streams ---- */

#define MAXV 20000
enum { ZIPF, NINETY, UNIFORM, FEW };
static const char *const kStreamName[] = { "zipf", "90%-one", "uniform", "16-values" };
static double g_zipf_cdf[MAXV];

static void zipf_init(int nvals, double s)
{
	double sum = 0;
	for (int i = 0; i < nvals; i++)
		g_zipf_cdf[i] = (sum += 1.0 / pow(i + 1, s));
	for (int i = 0; i < nvals; i++)
		g_zipf_cdf[i] /= sum;
}

/* Value index 0..MAXV-1 of one draw; value = 0x1000 + 8 * index. */
static int draw(int kind, uint64_t *s)
{
	switch (kind) {
	case ZIPF: {
		double u = uniform(s);
		int lo = 0, hi = 999;
		while (lo < hi) {
			int mid = (lo + hi) / 2;
			if (g_zipf_cdf[mid] < u)
				lo = mid + 1;
			else
				hi = mid;
		}
		return lo;
	}
	case NINETY:
		return xorshift64(s) % 10 ? 0 : 1 + (int)(xorshift64(s) % (MAXV - 1));
	case UNIFORM:
		return (int)(xorshift64(s) % 200);
	default:
		return (int)(xorshift64(s) % 16);
	}
}
#define VAL(i) (0x1000 + 8 * (uint64_t)(i))

static int find_value(const struct spool_hotlist *h, uint64_t v)
{
	for (uint32_t i = 0; i < h->n; i++)
		if (h->e[i].value == v)
			return (int)i;
	return -1;
}

static double estimate_of(const struct spool_hotlist *h, uint64_t v)
{
	int i = find_value(h, v);
	return i < 0 ? 0 : spool_hot_estimate(h, i);
}

static int valid(const struct spool_hotlist *h)
{
	double p = spool_hot_p(h);
	return spool_hot_check(h, 0, NULL) == 0 && p > 0 && p <= 1;
}

/* ---- one stream against the model ---- */

static void stream_case(int kind, int len)
{
	static uint64_t truth[MAXV];
	struct spool_hotlist h;
	uint64_t s = g_rng + (uint64_t)kind, coins = 0x1234567 + (uint64_t)kind;
	int broken = 0;
	memset(truth, 0, sizeof(truth));
	spool_hot_init(&h, SPOOL_HOT_KEY(SPOOL_VK_RESULT, 0x401000));
	for (int i = 0; i < len; i++) {
		int v = draw(kind, &s);
		truth[v]++;
		spool_hot_offer(&h, VAL(v), &coins);
		broken += !valid(&h);
	}
	CHECK(!broken && h.vtot == (uint64_t)len, "%s: invariants hold after each of %d offers (r=%u, p=%.3g, n=%u)",
	      kStreamName[kind], len, h.r, spool_hot_p(&h), h.n);
	if (kind == FEW) {
		int exact = h.r == 0;
		for (int v = 0; v < 16; v++)
			exact &= estimate_of(&h, VAL(v)) == (double)truth[v];
		CHECK(exact, "%s: at most 16 values are counted exactly (p = 1)", kStreamName[kind]);
		return;
	}
	/* Values the sample should hold (expected count t * p >= 8: never
	 * entering has probability (1 - p)^t < e^-8) must be there, their
	 * estimates count + tau - 1 within 4.5 standard errors; the error is
	 * the instances missed before a value entered, sd at most
	 * sqrt(tau min(t, tau)). */
	double p = spool_hot_p(&h), tau = 1 / p, worst = 0, var_all = 0;
	int missing = 0, heavy = 0;
	for (int v = 0; v < MAXV; v++) {
		double est = estimate_of(&h, VAL(v)), t = (double)truth[v];
		var_all += tau * (t < tau ? t : tau);
		if (t * p < 8)
			continue;
		heavy++;
		missing += est == 0;
		double z = fabs(est - t) / sqrt(tau * (t < tau ? t : tau) + 1e-9);
		if (z > worst)
			worst = z;
	}
	/* Every value's estimate is unbiased (0 for the unlisted), so the
	 * listed ones' add up to the stream's length. */
	double all = 0;
	for (uint32_t i = 0; i < h.n; i++)
		all += spool_hot_estimate(&h, (int)i);
	double zall = fabs(all - len) / sqrt(var_all + 1e-9);
	CHECK(zall < 4.5, "%s: the estimates add up to the stream's length within 4.5 sd (%.0f of %d, %.2f sd)",
	      kStreamName[kind], all, len, zall);
	spool_hot_sort(&h);
	CHECK(!missing && (kind == UNIFORM || heavy > 0),
	      "%s: the %d values with an expected count >= 8 are all in the hotlist", kStreamName[kind], heavy);
	uint64_t top = truth[(h.e[0].value - 0x1000) / 8];
	CHECK(worst < 4.5, "%s: their estimates are within 4.5 sd of the truth (worst %.2f sd; top value share %.3f, estimated %.3f)",
	      kStreamName[kind], worst, (double)top / len, spool_hot_estimate(&h, 0) / len);
}

/* ---- unbiasedness of split-stream-merge ---- */

#define TRACK 4
struct moments {
	double sum[TRACK], sq[TRACK];
	double r_sum, n_sum;
};

static void add_moments(struct moments *m, const struct spool_hotlist *h, const uint64_t *vals)
{
	for (int k = 0; k < TRACK; k++) {
		double e = estimate_of(h, vals[k]);
		m->sum[k] += e;
		m->sq[k] += e * e;
	}
	m->r_sum += h->r;
	m->n_sum += h->n;
}

static double mean(const struct moments *m, int k, int t)
{
	return m->sum[k] / t;
}

static double var(const struct moments *m, int k, int t)
{
	double mu = mean(m, k, t);
	return m->sq[k] / t - mu * mu;
}

/* One fixed Zipf stream of len values over 300; each trial splits it at
 * random into parts, summarizes each part with its own coins and merges
 * in a random order. */
static void unbiased_case(int trials, int len, int parts)
{
	static int stream[4000];
	static uint64_t truth[MAXV];
	uint64_t s = 0xfeedbeef, coins = 0xc0ffee ^ (uint64_t)parts;
	memset(truth, 0, sizeof(truth));
	for (int i = 0; i < len; i++)
		truth[stream[i] = draw(ZIPF, &s) % 300]++;
	/* Track the top value, two middling ones and a rare one. */
	const int idx[TRACK] = { 0, 3, 20, 150 };
	uint64_t vals[TRACK];
	for (int k = 0; k < TRACK; k++)
		vals[k] = VAL(idx[k]);
	struct moments m = { 0 };
	int broken = 0;
	for (int t = 0; t < trials; t++) {
		struct spool_hotlist part[8], acc;
		for (int j = 0; j < parts; j++)
			spool_hot_init(&part[j], SPOOL_HOT_KEY(SPOOL_VK_SRC1, 0x400010));
		for (int i = 0; i < len; i++)
			spool_hot_offer(&part[xorshift64(&coins) % (uint64_t)parts], VAL(stream[i]), &coins);
		spool_hot_init(&acc, 0);
		int first = (int)(xorshift64(&coins) % (uint64_t)parts);
		for (int j = 0; j < parts; j++) {
			spool_hot_merge(&acc, &part[(first + j) % parts], &coins);
			broken += !valid(&acc);
		}
		broken += acc.vtot != (uint64_t)len;
		add_moments(&m, &acc, vals);
	}
	int ok = !broken;
	double worst = 0;
	for (int k = 0; k < TRACK; k++) {
		double se = sqrt(var(&m, k, trials) / trials) + 1e-9;
		double z = fabs(mean(&m, k, trials) - (double)truth[idx[k]]) / se;
		if (z > worst)
			worst = z;
		printf("  %d parts, value #%d: truth %llu, mean estimate %.1f (se %.1f, z %.2f)\n", parts,
		       idx[k], (unsigned long long)truth[idx[k]], mean(&m, k, trials), se, z);
	}
	CHECK(ok, "unbiased, %d parts: invariants hold through %d merges", parts, trials * parts);
	CHECK(worst < 4, "unbiased, %d parts: %d trials, mean estimates within 4 se of the truth (worst z %.2f, mean r %.1f)",
	      parts, trials, worst, m.r_sum / trials);
}

/* ---- merge order ---- */

static void order_case(int trials)
{
	uint64_t coins = 0x5eed;
	struct moments m[3] = { 0 };
	const uint64_t vals[TRACK] = { VAL(0), VAL(1), VAL(5), VAL(40) };
	int broken = 0, identity = 1;
	for (int t = 0; t < trials; t++) {
		struct spool_hotlist in[3], x, y, tmp;
		/* Three different streams: a Zipf, a 90%-one, a uniform. */
		uint64_t s = 0xabc + (uint64_t)t;
		for (int j = 0; j < 3; j++) {
			spool_hot_init(&in[j], SPOOL_HOT_KEY(SPOOL_VK_ADDR, 0x400020));
			for (int i = 0; i < 600; i++)
				spool_hot_offer(&in[j], VAL(draw(j == 0 ? ZIPF : j == 1 ? NINETY : UNIFORM, &s) % 60), &coins);
		}
		/* (a+b)+c */
		x = in[0];
		spool_hot_merge(&x, &in[1], &coins);
		spool_hot_merge(&x, &in[2], &coins);
		add_moments(&m[0], &x, vals);
		/* a+(b+c) */
		y = in[1];
		spool_hot_merge(&y, &in[2], &coins);
		x = in[0];
		spool_hot_merge(&x, &y, &coins);
		add_moments(&m[1], &x, vals);
		/* (c+a)+b */
		x = in[2];
		spool_hot_merge(&x, &in[0], &coins);
		spool_hot_merge(&x, &in[1], &coins);
		add_moments(&m[2], &x, vals);
		broken += !valid(&x);
		/* The empty hotlist is an identity, both ways. */
		spool_hot_init(&tmp, 0);
		spool_hot_merge(&tmp, &in[0], &coins);
		identity &= !memcmp(&tmp, &in[0], sizeof(tmp));
		x = in[0];
		spool_hot_init(&tmp, 0);
		spool_hot_merge(&x, &tmp, &coins);
		identity &= !memcmp(&x, &in[0], sizeof(x));
	}
	double worst = 0;
	for (int a = 0; a < 3; a++) {
		int b = (a + 1) % 3;
		for (int k = 0; k < TRACK; k++) {
			double se = sqrt(var(&m[a], k, trials) / trials + var(&m[b], k, trials) / trials) + 1e-9;
			double z = fabs(mean(&m[a], k, trials) - mean(&m[b], k, trials)) / se;
			if (z > worst)
				worst = z;
		}
	}
	CHECK(!broken && identity, "order: invariants hold and the empty hotlist is an identity");
	CHECK(worst < 4, "order: (a+b)+c, a+(b+c), (c+a)+b agree in mean over %d trials (worst z %.2f; mean r %.2f %.2f %.2f)",
	      trials, worst, m[0].r_sum / trials, m[1].r_sum / trials, m[2].r_sum / trials);
}

/* ---- the accuracy bar ---- */

/* scale(x, k) called from two sites (tests/fixtures/values_inv.c): site A
 * passes 3 in 90% of calls, else uniform in 0..999; site B uniform in
 * 0..999. The (value, site) hotlist's estimate of (3, A), divided by the
 * site's samples (exact from the RETADDR hotlist: two values), must be
 * within 3 points of the true share in at least 99% of trials with 2000
 * samples, also when the stream is split over 4 threads and merged, and
 * when a thread's list is folded into a shared one every `chunk` samples
 * (spool/writer.c's evictions: many small lists into one of large tau). */
static void accuracy_case(int trials, int parts, int chunk)
{
	uint64_t s = 0x1dea + (uint64_t)parts + 977 * (uint64_t)chunk;
	uint64_t coins = 0xacc ^ (uint64_t)parts ^ ((uint64_t)chunk << 8);
	int within = 0, broken = 0;
	double worst = 0, sum = 0;
	for (int t = 0; t < trials; t++) {
		struct spool_hotlist part[4], acc;
		uint64_t na = 0, n3 = 0;
		spool_hot_init(&acc, 0);
		for (int j = 0; j < parts; j++)
			spool_hot_init(&part[j], SPOOL_HOT_KEY(SPOOL_VK_SRC2_BY_SITE, 0x401000));
		for (int i = 0; i < 2000; i++) {
			int a = xorshift64(&s) & 1, j = (int)(xorshift64(&s) % (uint64_t)parts);
			uint64_t k = a && xorshift64(&s) % 10 ? 3 : xorshift64(&s) % 1000;
			na += a;
			n3 += a && k == 3;
			spool_hot_offer_pair(&part[j], k, a ? 0x401a00 : 0x401b00, &coins);
			if (chunk && (i + 1) % chunk == 0) {        /* a spool eviction */
				spool_hot_merge(&acc, &part[j], &coins);
				spool_hot_init(&part[j], SPOOL_HOT_KEY(SPOOL_VK_SRC2_BY_SITE, 0x401000));
			}
		}
		for (int j = 0; j < parts; j++)
			spool_hot_merge(&acc, &part[j], &coins);
		broken += !valid(&acc) || acc.vtot != 2000;
		double est = 0;
		for (uint32_t i = 0; i < acc.n; i++)
			if (acc.e[i].value == 3 && acc.e[i].aux == 0x401a00)
				est = spool_hot_estimate(&acc, (int)i);
		double err = fabs(100 * (est - (double)n3) / (double)na);
		within += err <= 3;
		sum += err;
		if (err > worst)
			worst = err;
	}
	CHECK(!broken && within * 100 >= trials * 99,
	      "accuracy, %d part%s%s%.0d: a 90%% value from one of two sites, 2000 samples: within 3 points in %d of %d "
	      "trials (mean error %.2f, worst %.2f points)", parts, parts > 1 ? "s" : "",
	      chunk ? ", folded every " : "", chunk, within, trials, sum / trials, worst);
}

static void misc_case(void)
{
	int ok = 1;
	for (uint64_t c = 0; c < 100000; c += 7) {
		uint64_t b = spool_hot_latency_bin(c);
		ok &= b <= c && (c < 16 ? b == c : c - b < c / 4 + 1) && spool_hot_latency_bin(b) == b;
	}
	CHECK(ok, "latency bins: exact below 16, then within a quarter, idempotent");
	struct spool_hotlist h;
	uint64_t coins = 9;
	spool_hot_init(&h, SPOOL_HOT_KEY(SPOOL_VK_RESULT_BY_SITE, 0x400100));
	for (int i = 0; i < 300; i++)
		spool_hot_offer_pair(&h, 42, 0x400000 + (uint64_t)(i % 3), &coins);
	CHECK(h.n == 3 && h.r == 0 && h.e[0].count == 100,
	      "pairs: (value, call site) entries kept apart exactly (%u entries)", h.n);
	const char *why = NULL;
	h.e[1].value = h.e[0].value;
	h.e[1].aux = h.e[0].aux;
	CHECK(spool_hot_check(&h, 0, &why) < 0 && why, "check: a duplicate value is refused (%s)",
	      why ? why : "-");
	h.e[1].value++;
	h.method = 0;
	why = NULL;
	CHECK(spool_hot_check(&h, 0, &why) < 0 && why && strstr(why, "concise"),
	      "check: a hotlist of an earlier vprof (concise samples) is refused (%s)", why ? why : "-");
	h.method = SPOOL_HOT_COUNTING;
	CHECK(spool_hot_check(&h, 0, NULL) == 0, "check: the same hotlist as counting samples is accepted");
}

int main(int argc, char **argv)
{
	int trials = argc > 1 ? atoi(argv[1]) : 3000;
	zipf_init(1000, 1.5);
	stream_case(FEW, 20000);
	stream_case(ZIPF, 200000);
	stream_case(NINETY, 200000);
	stream_case(UNIFORM, 200000);
	unbiased_case(trials, 3000, 1);
	unbiased_case(trials, 3000, 2);
	unbiased_case(trials, 3000, 5);
	order_case(trials);
	accuracy_case(trials > 1000 ? 1000 : trials, 1, 0);
	accuracy_case(trials > 1000 ? 1000 : trials, 4, 0);
	accuracy_case(trials > 1000 ? 1000 : trials, 1, 5);
	accuracy_case(trials > 1000 ? 1000 : trials, 1, 50);
	misc_case();
	return g_fail;
}
