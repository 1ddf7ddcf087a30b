/*
 * Value hotlists: Gibbons and Matias' counting samples (see hotlist.h).
 *
 * Workload: the handler offers a few values per interpreted instruction,
 * a few hundred a second per thread; almost every offer either finds its
 * value among the 16 entries (count++) or does not enter (one Bernoulli
 * draw). A raise costs a power by squaring (log2 of the count) and a
 * coin or two per entry, whatever tau is. Merging raises the smaller-tau
 * list by the difference in r, one pass per raise.
 *
 * Entries [0, n) are kept packed (count > 0) and in no particular order;
 * spool_hot_sort orders them for reports.
 *
 * Concurrency: none here; the caller owns the hotlist it changes.
 */
#include "spool/hotlist.h"
#include "upcall/xorshift.h"

#include <string.h>

/* Uniform in (0, 1]. */
static double uniform01(uint64_t *rng)
{
	return (double)((upcall_xorshift64(rng) >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Bit 4k of the result is set where nibble k of x is all ones: the
 * probability-1/16 "tails" of a 15/16 coin. */
static inline uint64_t tails(uint64_t x)
{
	return x & (x >> 1) & (x >> 2) & (x >> 3) & 0x1111111111111111ull;
}

/* True with probability (15/16)^r: r coins, all heads. Stops at the first
 * tails, so it costs about min(r, 16) coins. */
static int keep_with_p(uint32_t r, uint64_t *rng)
{
	while (r) {
		uint64_t t = tails(upcall_xorshift64(rng));
		uint32_t k = r < 16 ? r : 16;
		if (k < 16)
			t &= (1ull << (4 * k)) - 1;
		if (t)
			return 0;
		r -= k;
	}
	return 1;
}

/* x^k by squaring. */
static double pow_u(double x, uint64_t k)
{
	double y = 1.0;
	for (; k; k >>= 1, x *= x)
		if (k & 1)
			y *= x;
	return y;
}

/* tau = (16/15)^r. */
static double tau_of(uint32_t r)
{
	return pow_u(16.0 / 15.0, r);
}

/* n + a random 0 or 1 with the fraction of x as its probability: x on
 * average. */
static uint64_t round_random(double x, uint64_t *rng)
{
	uint64_t n = (uint64_t)x;
	return n + (uniform01(rng) <= x - (double)n);
}

/* c q at least this: the coin process reaches 0 in under (1/16) e^-2 of
 * raises; such an entry just takes the mean. Below 2, unbiasedness
 * suffers measurably (tests/unit/hotlist_model: z = 12 at 1); above, so
 * does a heavy value's share when parts of a stream are merged (a part
 * where it has a few tau of count is dropped in 1.9% of 4-way merges at
 * 4, 0.5% at 2). */
#define HEAVY 2

/* One entry of count c through one raise of the threshold, from
 * (16/15)^(r-1) to tau' = (16/15)^r: its new count, 0 if it leaves. It is
 * Gibbons-Matias' coin process (see hotlist.h) in the two things that
 * matter, drawn apart: the entry leaves with the process's probability,
 * (1/16) (1 - q)^(c-1) with q = 1/tau'; if it stays it takes the
 * process's mean count given that it stays, rounded at random, rather
 * than a draw of it. The mean count, c - (1/16) (1 - (1 - q)^c) / q, is
 * the process's, and so the estimates' unbiasedness; the variance of a
 * heavy value's count is that of the rounding alone. (For c = 1 this is
 * the process itself.) A heavy entry (c q >= HEAVY) stays. */
static uint64_t raise_entry(uint64_t c, uint32_t r, uint64_t *rng)
{
	if (c == 1)     /* leaves on the first coin's tails, else stays at 1 */
		return (tails(upcall_xorshift64(rng)) & 1) ? 0 : 1;
	double q = 1.0 / tau_of(r), q1 = 1.0 - q;
	double stay_tail = pow_u(q1, c - 1);              /* (1 - q)^(c-1) */
	double mean = (double)c - (1.0 - stay_tail * q1) / q / 16;
	/* Heavy: it stays, with the mean plus what the estimate's
	 * compensation, tau' - 1, would have been worth in the rare raise
	 * that drops it; then E[count + tau - 1] is kept exactly. */
	double kept = mean + (1.0 / q - 1) * stay_tail / 16;
	if ((double)c * q < HEAVY) {
		if ((tails(upcall_xorshift64(rng)) & 1) && uniform01(rng) <= stay_tail)
			return 0;                                   /* the process reached 0 */
		kept = mean / (1.0 - stay_tail / 16);
	}
	uint64_t k = round_random(kept, rng);
	return k ? k : 1;
}

/* Raise e[0, n) from r0 to r1 >= r0, entry by entry (they are
 * independent), packing the survivors; returns their number. A count of
 * 1 stays 1 through every raise it survives,
 * so its d raises are one draw with probability (15/16)^d; a merge of a
 * thread's small list into a shared one of large tau (mostly singletons)
 * costs a draw per entry, not a pass per raise. */
static uint32_t raise_to(struct spool_hot_entry *e, uint32_t n, uint32_t r0, uint32_t r1, uint64_t *rng)
{
	uint32_t o = 0;
	for (uint32_t i = 0; i < n; i++) {
		uint64_t c = e[i].count;
		uint32_t r = r0;
		while (c > 1 && r < r1)
			c = raise_entry(c, ++r, rng);
		if (c == 1 && r < r1 && !keep_with_p(r1 - r, rng))
			c = 0;
		if (c) {
			e[o] = e[i];
			e[o++].count = c;
		}
	}
	return o;
}

/* Raise until at most N entries remain; e has room for n > N entries (a
 * merge's union). */
static uint32_t reduce(struct spool_hot_entry *e, uint32_t n, uint32_t *r, uint64_t *rng)
{
	for (; n > SPOOL_HOT_N; ++*r)
		n = raise_to(e, n, *r, *r + 1, rng);
	return n;
}

void spool_hot_init(struct spool_hotlist *h, uint64_t key)
{
	memset(h, 0, sizeof(*h));
	h->key = key;
}

static int find(const struct spool_hot_entry *e, uint32_t n, uint64_t value, uint64_t aux)
{
	for (uint32_t i = 0; i < n; i++)
		if (e[i].value == value && e[i].aux == aux)
			return (int)i;
	return -1;
}

void spool_hot_offer_pair(struct spool_hotlist *h, uint64_t value, uint64_t aux, uint64_t *rng)
{
	struct spool_hot_entry e[SPOOL_HOT_N + 1];
	h->vtot++;
	h->method = SPOOL_HOT_COUNTING;
	int i = find(h->e, h->n, value, aux);
	if (i >= 0) {
		h->e[i].count++;
		return;
	}
	if (!keep_with_p(h->r, rng))
		return;
	if (h->n < SPOOL_HOT_N) {
		h->e[h->n++] = (struct spool_hot_entry){ value, aux, 1 };
		return;
	}
	/* A 17th value: raise over all 17, as the algorithm does. */
	memcpy(e, h->e, sizeof(h->e));
	e[SPOOL_HOT_N] = (struct spool_hot_entry){ value, aux, 1 };
	uint32_t n = reduce(e, SPOOL_HOT_N + 1, &h->r, rng);
	memcpy(h->e, e, n * sizeof(*e));
	memset(h->e + n, 0, (SPOOL_HOT_N - n) * sizeof(*e));
	h->n = n;
}

void spool_hot_offer(struct spool_hotlist *h, uint64_t value, uint64_t *rng)
{
	spool_hot_offer_pair(h, value, 0, rng);
}

void spool_hot_merge(struct spool_hotlist *a, const struct spool_hotlist *b, uint64_t *rng)
{
	struct spool_hot_entry e[2 * SPOOL_HOT_N];
	/* hi: the list with the larger tau (a on a tie); lo: the other. */
	const struct spool_hotlist *hi = b->r > a->r ? b : a, *lo = hi == a ? b : a;
	uint32_t nh = hi->n <= SPOOL_HOT_N ? hi->n : SPOOL_HOT_N;
	uint32_t nl = lo->n <= SPOOL_HOT_N ? lo->n : SPOOL_HOT_N;
	uint32_t r = hi->r, n = nh;
	uint64_t vtot = a->vtot + b->vtot;
	double lo_miss = tau_of(lo->r) - 1;

	memcpy(e, hi->e, nh * sizeof(*e));
	for (uint32_t j = 0; j < nl; j++) {
		int i = find(e, nh, lo->e[j].value, lo->e[j].aux);
		if (i >= 0) {
			/* Listed in hi, the value is counted there from now on,
			 * as one list over both streams would have counted it
			 * through lo's: add lo's unbiased estimate, count +
			 * tau_lo - 1 (exact when lo never raised). */
			e[i].count += lo->e[j].count + round_random(lo_miss, rng);
		} else {
			/* New to hi: it enters as at hi's threshold, lo's entry
			 * raised to it. */
			e[n] = lo->e[j];
			n += raise_to(&e[n], 1, lo->r, r, rng);
		}
	}
	n = reduce(e, n, &r, rng);
	for (uint32_t i = 0; i < n; i++)
		if (e[i].count > vtot)
			e[i].count = vtot;
	uint64_t key = a->key ? a->key : b->key;
	uint32_t method = a->method | b->method ? SPOOL_HOT_COUNTING : 0;
	memcpy(a->e, e, n * sizeof(*e));
	memset(a->e + n, 0, (SPOOL_HOT_N - n) * sizeof(*e));
	a->n = n;
	a->r = r;
	a->vtot = vtot;
	a->method = method;
	a->key = key;
}

double spool_hot_p(const struct spool_hotlist *h)
{
	return 1.0 / tau_of(h->r);
}

double spool_hot_estimate(const struct spool_hotlist *h, int i)
{
	if (i < 0 || (uint32_t)i >= h->n)
		return 0;
	double est = (double)h->e[i].count + tau_of(h->r) - 1;
	return est < (double)h->vtot ? est : (double)h->vtot;
}

static int before(const struct spool_hot_entry *x, const struct spool_hot_entry *y)
{
	if (x->count != y->count)
		return x->count > y->count;
	if (x->value != y->value)
		return x->value < y->value;
	return x->aux < y->aux;
}

void spool_hot_sort(struct spool_hotlist *h)
{
	/* Insertion sort: 16 entries, and no qsort in a signal handler. */
	for (uint32_t i = 1; i < h->n && i < SPOOL_HOT_N; i++) {
		struct spool_hot_entry t = h->e[i];
		uint32_t j = i;
		for (; j > 0 && before(&t, &h->e[j - 1]); j--)
			h->e[j] = h->e[j - 1];
		h->e[j] = t;
	}
}

int spool_hot_check(const struct spool_hotlist *h, int allow_state, const char **why)
{
	const char *w = NULL;
	unsigned kind = SPOOL_HOT_KEY_KIND(h->key);
	if (!spool_hot_kind_valid(kind))
		w = "unknown value kind";
	else if (h->n > SPOOL_HOT_N)
		w = "more than 16 entries";
	else if (h->r > SPOOL_HOT_RMAX)
		w = "implausible reduction count";
	else if (h->state && !allow_state)
		w = "reserved fields not zero";
	else if (h->n && h->method != SPOOL_HOT_COUNTING)
		w = h->method ? "unknown hotlist method"
			      : "written by an earlier vprof (concise samples, counts of another meaning): "
				"remove the database and profile again";
	for (uint32_t i = 0; !w && i < h->n; i++) {
		if (!h->e[i].count)
			w = "zero count in use";
		else if (find(h->e, i, h->e[i].value, h->e[i].aux) >= 0)
			w = "duplicate value";
		else if (h->e[i].count > h->vtot)
			w = "a count exceeds the values offered";
	}
	for (uint32_t i = h->n; !w && i < SPOOL_HOT_N; i++)
		if (h->e[i].count)
			w = "count beyond the entries in use";
	if (why)
		*why = w;
	return w ? -1 : 0;
}

uint64_t spool_hot_latency_bin(uint64_t cycles)
{
	if (cycles < 16)
		return cycles;
	int top = 63 - __builtin_clzll(cycles);
	uint64_t quarter = 1ull << (top - 2);
	return cycles & ~(quarter - 1);
}

static const char *const kKindNames[SPOOL_VK_MAX] = {   /* ORDER VK */
	[SPOOL_VK_NONE] = "none",
	[SPOOL_VK_RESULT] = "result",
	[SPOOL_VK_SRC1] = "src1",
	[SPOOL_VK_SRC2] = "src2",
	[SPOOL_VK_ADDR] = "addr",
	[SPOOL_VK_LATENCY] = "latency",
	[SPOOL_VK_RETADDR] = "retaddr",
	[SPOOL_VK_TARGET] = "target",
	[SPOOL_VK_STRIDE] = "stride",
	[SPOOL_VK_RESULT_BY_SITE] = "result@site",
	[SPOOL_VK_SRC1_BY_SITE] = "src1@site",
	[SPOOL_VK_SRC2_BY_SITE] = "src2@site",
	[SPOOL_VK_ADDR_LATENCY] = "addr+latency",
	[13] = "arg.rdi", [14] = "arg.rsi", [15] = "arg.rdx", [16] = "arg.rcx", [17] = "arg.r8",
	[18] = "arg.r9", [19] = "arg.xmm0", [20] = "arg.xmm1", [21] = "arg.xmm2", [22] = "arg.xmm3",
	[23] = "arg.xmm4", [24] = "arg.xmm5", [25] = "arg.xmm6", [26] = "arg.xmm7",
	[SPOOL_VK_BRANCH] = "branch", [SPOOL_VK_RANGE] = "range", [SPOOL_VK_TAKEN] = "taken",
	[SPOOL_VK_CACHE] = "cache", [SPOOL_VK_HAZARD] = "hazard", [SPOOL_VK_OBJECT] = "object",
#define MOD_KINDS(f, F) [32 + F * 8] = "mod0." f, [33 + F * 8] = "mod1." f, [34 + F * 8] = "mod2." f, \
	[35 + F * 8] = "mod3." f, [36 + F * 8] = "mod4." f, [37 + F * 8] = "mod5." f, \
	[38 + F * 8] = "mod6." f, [39 + F * 8] = "mod7." f
	MOD_KINDS("hex", 0), MOD_KINDS("signed", 1), MOD_KINDS("unsigned", 2), MOD_KINDS("double", 3),
};

const char *spool_hot_kind_name(unsigned kind)
{
	return kind < SPOOL_VK_MAX && kKindNames[kind] ? kKindNames[kind] : "?";
}
