/*
 * Value hotlists: Gibbons and Matias' concise samples (see hotlist.h).
 *
 * Workload: the handler offers a few values per interpreted instruction,
 * a few hundred a second per thread; almost every offer either finds its
 * value among the 16 entries or is not counted at all (p small), so the
 * common path is one Bernoulli draw and a scan of 16 entries. Reductions
 * and merges thin every counted instance with 4-bit coins, 16 coins per
 * xorshift step: their cost is about sum(counts)/16 steps per reduction.
 *
 * Entries [0, n) are kept packed (count > 0) and in no particular order;
 * merge_hot_sort orders them for reports.
 *
 * Concurrency: none here; the caller owns the hotlist it changes.
 */
#include "merge/hotlist.h"

#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s ? *s : 0x9e3779b97f4a7c15ull;
	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	*s = x;
	return x;
}

/* Bit 4k of the result is set where nibble k of x is all ones: the
 * probability-1/16 "tails" of a 15/16 coin. */
static inline uint64_t tails(uint64_t x)
{
	return x & (x >> 1) & (x >> 2) & (x >> 3) & 0x1111111111111111ull;
}

/* Binomial(c, 15/16): how many of c instances survive one reduction. */
static uint64_t thin_once(uint64_t c, uint64_t *rng)
{
	uint64_t dropped = 0, left = c;
	for (; left >= 16; left -= 16)
		dropped += (uint64_t)__builtin_popcountll(tails(rng_next(rng)));
	if (left)
		dropped += (uint64_t)__builtin_popcountll(tails(rng_next(rng)) &
							  ((1ull << (4 * left)) - 1));
	return c - dropped;
}

/* True with probability (15/16)^r: r coins, all heads. Stops at the first
 * tails, so it costs about min(r, 16) coins. */
static int keep_with_p(uint32_t r, uint64_t *rng)
{
	while (r) {
		uint64_t t = tails(rng_next(rng));
		uint32_t k = r < 16 ? r : 16;
		if (k < 16)
			t &= (1ull << (4 * k)) - 1;
		if (t)
			return 0;
		r -= k;
	}
	return 1;
}

/* Thin every entry d times and pack the survivors. */
static uint32_t thin_entries(struct merge_hot_entry *e, uint32_t n, uint32_t d, uint64_t *rng)
{
	uint32_t o = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t c = e[i].count;
		for (uint32_t k = 0; k < d && c; k++)
			c = thin_once(c, rng);
		if (c) {
			e[o] = e[i];
			e[o++].count = c;
		}
	}
	return o;
}

void merge_hot_init(struct merge_hotlist *h, uint64_t key)
{
	memset(h, 0, sizeof(*h));
	h->key = key;
}

/* Reduce (p /= f, thin by one) until at most N entries remain; e has
 * room for n > N entries (a merge's union). */
static uint32_t reduce(struct merge_hot_entry *e, uint32_t n, uint32_t *r, uint64_t *rng)
{
	while (n > MERGE_HOT_N) {
		n = thin_entries(e, n, 1, rng);
		(*r)++;
	}
	return n;
}

static int find(const struct merge_hot_entry *e, uint32_t n, uint64_t value, uint64_t aux)
{
	for (uint32_t i = 0; i < n; i++)
		if (e[i].value == value && e[i].aux == aux)
			return (int)i;
	return -1;
}

void merge_hot_offer_pair(struct merge_hotlist *h, uint64_t value, uint64_t aux, uint64_t *rng)
{
	struct merge_hot_entry e[MERGE_HOT_N + 1];
	h->vtot++;
	if (!keep_with_p(h->r, rng))
		return;
	int i = find(h->e, h->n, value, aux);
	if (i >= 0) {
		h->e[i].count++;
		return;
	}
	if (h->n < MERGE_HOT_N) {
		h->e[h->n++] = (struct merge_hot_entry){ value, aux, 1 };
		return;
	}
	/* A 17th value: reduce over all 17, as the paper does. */
	memcpy(e, h->e, sizeof(h->e));
	e[MERGE_HOT_N] = (struct merge_hot_entry){ value, aux, 1 };
	uint32_t n = reduce(e, MERGE_HOT_N + 1, &h->r, rng);
	memcpy(h->e, e, n * sizeof(*e));
	memset(h->e + n, 0, (MERGE_HOT_N - n) * sizeof(*e));
	h->n = n;
}

void merge_hot_offer(struct merge_hotlist *h, uint64_t value, uint64_t *rng)
{
	merge_hot_offer_pair(h, value, 0, rng);
}

void merge_hot_merge(struct merge_hotlist *a, const struct merge_hotlist *b, uint64_t *rng)
{
	struct merge_hot_entry e[2 * MERGE_HOT_N], be[MERGE_HOT_N];
	uint32_t na = a->n <= MERGE_HOT_N ? a->n : MERGE_HOT_N;
	uint32_t nb = b->n <= MERGE_HOT_N ? b->n : MERGE_HOT_N;
	uint32_t r = a->r > b->r ? a->r : b->r;

	/* Both to the smaller p: thin the one with fewer reductions. */
	memcpy(e, a->e, na * sizeof(*e));
	memcpy(be, b->e, nb * sizeof(*be));
	na = thin_entries(e, na, r - a->r, rng);
	nb = thin_entries(be, nb, r - b->r, rng);
	uint32_t n = na;
	for (uint32_t j = 0; j < nb; j++) {
		int i = find(e, na, be[j].value, be[j].aux);
		if (i >= 0)
			e[i].count += be[j].count;
		else
			e[n++] = be[j];
	}
	n = reduce(e, n, &r, rng);
	memcpy(a->e, e, n * sizeof(*e));
	memset(a->e + n, 0, (MERGE_HOT_N - n) * sizeof(*e));
	a->n = n;
	a->r = r;
	a->vtot += b->vtot;
	if (!a->key)
		a->key = b->key;
}

double merge_hot_p(const struct merge_hotlist *h)
{
	/* (15/16)^r by squaring: no libm in the library. */
	double p = 1.0, x = 15.0 / 16.0;
	for (uint32_t r = h->r; r; r >>= 1, x *= x)
		if (r & 1)
			p *= x;
	return p;
}

double merge_hot_estimate(const struct merge_hotlist *h, int i)
{
	if (i < 0 || (uint32_t)i >= h->n)
		return 0;
	return (double)h->e[i].count / merge_hot_p(h);
}

static int before(const struct merge_hot_entry *x, const struct merge_hot_entry *y)
{
	if (x->count != y->count)
		return x->count > y->count;
	if (x->value != y->value)
		return x->value < y->value;
	return x->aux < y->aux;
}

void merge_hot_sort(struct merge_hotlist *h)
{
	/* Insertion sort: 16 entries, and no qsort in a signal handler. */
	for (uint32_t i = 1; i < h->n && i < MERGE_HOT_N; i++) {
		struct merge_hot_entry t = h->e[i];
		uint32_t j = i;
		for (; j > 0 && before(&t, &h->e[j - 1]); j--)
			h->e[j] = h->e[j - 1];
		h->e[j] = t;
	}
}

int merge_hot_check(const struct merge_hotlist *h, int allow_state, const char **why)
{
	uint64_t sum = 0;
	const char *w = NULL;
	unsigned kind = MERGE_HOT_KEY_KIND(h->key);
	if (kind == MERGE_VK_NONE || kind >= MERGE_VK_MAX)
		w = "unknown value kind";
	else if (h->n > MERGE_HOT_N)
		w = "more than 16 entries";
	else if (h->r > MERGE_HOT_RMAX)
		w = "implausible reduction count";
	else if (h->pad || (h->state && !allow_state))
		w = "reserved fields not zero";
	for (uint32_t i = 0; !w && i < h->n; i++) {
		if (!h->e[i].count)
			w = "zero count in use";
		else if (find(h->e, i, h->e[i].value, h->e[i].aux) >= 0)
			w = "duplicate value";
		else if ((sum += h->e[i].count) > h->vtot || sum < h->e[i].count)
			w = "counts exceed the values offered";
	}
	for (uint32_t i = h->n; !w && i < MERGE_HOT_N; i++)
		if (h->e[i].count)
			w = "count beyond the entries in use";
	if (why)
		*why = w;
	return w ? -1 : 0;
}

uint64_t merge_hot_latency_bin(uint64_t cycles)
{
	if (cycles < 16)
		return cycles;
	int top = 63 - __builtin_clzll(cycles);
	uint64_t quarter = 1ull << (top - 2);
	return cycles & ~(quarter - 1);
}

static const char *const kKindNames[MERGE_VK_MAX] = {   /* ORDER VK */
	[MERGE_VK_NONE] = "none",
	[MERGE_VK_RESULT] = "result",
	[MERGE_VK_SRC1] = "src1",
	[MERGE_VK_SRC2] = "src2",
	[MERGE_VK_ADDR] = "addr",
	[MERGE_VK_LATENCY] = "latency",
	[MERGE_VK_RETADDR] = "retaddr",
	[MERGE_VK_TARGET] = "target",
	[MERGE_VK_STRIDE] = "stride",
	[MERGE_VK_RESULT_BY_SITE] = "result@site",
	[MERGE_VK_SRC1_BY_SITE] = "src1@site",
	[MERGE_VK_SRC2_BY_SITE] = "src2@site",
	[MERGE_VK_ADDR_LATENCY] = "addr+latency",
};

const char *merge_hot_kind_name(unsigned kind)
{
	return kind < MERGE_VK_MAX ? kKindNames[kind] : "?";
}
