/*
 * Value hotlists: Gibbons and Matias' "concise samples", as DCPI's value
 * sampling used them (Burrows et al., ASPLOS 2000, section 2.2).
 *
 * One hotlist summarizes the stream of values of one kind seen at one
 * instruction: at most MERGE_HOT_N = 16 (value, aux, count) entries and a
 * sampling probability p. Each value offered is counted with probability
 * p; when a 17th distinct value would enter, p is divided by f = 16/15 and
 * every counted instance is kept with probability 1/f = 15/16, until at
 * most 16 values remain. count/p is then an unbiased estimate of how often
 * the value was seen, whatever the stream.
 *
 * p is stored exactly, as the number of reductions r: p = (15/16)^r. Every
 * coin is drawn from 4 random bits (a nibble of all ones, probability
 * 1/16, is "tails"), so the handler needs no floating point and no libm,
 * and two hotlists are brought to the same p exactly: the one with fewer
 * reductions is thinned by the difference. Doubles appear only in the
 * estimates, for reports.
 *
 * A hotlist's key is MERGE_HOT_KEY(kind, where): in a spool, "where" is
 * MERGE_GPC(image generation, pc), as for sample counts; in a profile, it
 * is the ELF vaddr in the image (the absolute pc in unknown.*.prof).
 *
 * Composite values: each entry has a second 64-bit word, aux, so a pair
 * (value, call site) is kept exactly; aux is 0 for plain kinds. Two
 * entries are the same value when both value and aux are equal.
 *
 * The same struct is the record of spools' and profiles' MERGE_SEC_VALUES
 * sections (format.h): 416 bytes, little-endian, no pointers.
 *
 * Every function here is async-signal-safe: no malloc, no locks, no libm,
 * bounded stack (under 1.5 KiB; merge_spool_value, which nests a
 * one-value hotlist and a merge, under 2 KiB). None is thread-safe on one hotlist: the
 * caller owns it (per-thread tables) or has claimed it (spool.c).
 */
#ifndef VPROF_MERGE_HOTLIST_H
#define VPROF_MERGE_HOTLIST_H

#include <stddef.h>
#include <stdint.h>

/* Value kinds: what was captured. ORDER VK: keep merge_hot_kind_name() in
 * step. Numbers are on disk: never reuse one. */
enum merge_value_kind {
	MERGE_VK_NONE = 0,
	MERGE_VK_RESULT = 1,     /* first destination operand's new value */
	MERGE_VK_SRC1 = 2,       /* first source operand's value */
	MERGE_VK_SRC2 = 3,       /* second source operand's value */
	MERGE_VK_ADDR = 4,       /* effective address of the memory operand */
	MERGE_VK_LATENCY = 5,    /* load latency, cycles through merge_hot_latency_bin() */
	MERGE_VK_RETADDR = 6,    /* return address of the current procedure */
	MERGE_VK_TARGET = 7,     /* target of an indirect call or jump */
	MERGE_VK_STRIDE = 8,     /* this address minus the previous one at this pc */
	/* Composite kinds: value as the plain kind above, aux = the call site
	 * (return address of the current procedure, 0 if unknown). */
	MERGE_VK_RESULT_BY_SITE = 9,
	MERGE_VK_SRC1_BY_SITE = 10,
	MERGE_VK_SRC2_BY_SITE = 11,
	/* value = effective address, aux = binned latency (as MERGE_VK_LATENCY) */
	MERGE_VK_ADDR_LATENCY = 12,
	MERGE_VK_MAX = 13,
};

/* Hotlist keys: kind in the top 8 bits, as events are in count keys. */
#define MERGE_HOT_KEY(kind, where) \
	(((uint64_t)(kind) << 56) | ((uint64_t)(where) & 0x00ffffffffffffffull))
#define MERGE_HOT_KEY_KIND(k)  ((unsigned)((k) >> 56))
#define MERGE_HOT_KEY_WHERE(k) ((k) & 0x00ffffffffffffffull)

/* In a profile, code addresses in values (RETADDR, TARGET) and in the aux
 * of the *_BY_SITE kinds are ELF offsets in the hotlist's own image, or,
 * for an address in another image, the absolute address with this bit. */
#define MERGE_HOT_FOREIGN (1ull << 63)
static inline int merge_hot_kind_has_site(unsigned kind)
{
	return kind == MERGE_VK_RESULT_BY_SITE || kind == MERGE_VK_SRC1_BY_SITE ||
	       kind == MERGE_VK_SRC2_BY_SITE;
}

#define MERGE_HOT_N 16           /* entries: the paper's N */
#define MERGE_HOT_RMAX 4096      /* reductions a valid hotlist may have */

struct merge_hot_entry {
	uint64_t value;
	uint64_t aux;            /* second word of composite kinds, else 0 */
	uint64_t count;          /* > 0 for entries [0, n) */
};

struct merge_hotlist {           /* 416 bytes */
	uint64_t key;            /* MERGE_HOT_KEY; 0: unused */
	uint64_t vtot;           /* value samples offered (the report's vtot) */
	uint32_t r;              /* reductions: p = (15/16)^r (thld = p) */
	uint32_t n;              /* entries in use */
	uint32_t state;          /* spool shared area's claim word; 0 elsewhere */
	uint32_t pad;
	struct merge_hot_entry e[MERGE_HOT_N];
};

/* An empty hotlist for key (p = 1). */
void merge_hot_init(struct merge_hotlist *h, uint64_t key);

/* One value sample: vtot++, and with probability p count value, reducing
 * p until at most N values remain. *rng is the caller's xorshift64 state
 * (any value; 0 is replaced). _pair offers a composite (value, aux). */
void merge_hot_offer(struct merge_hotlist *h, uint64_t value, uint64_t *rng);
void merge_hot_offer_pair(struct merge_hotlist *h, uint64_t value, uint64_t aux, uint64_t *rng);

/* Fold b into a (keys should match; a's is kept): the one with the larger
 * p is thinned to the smaller, counts are added, then reduced to N.
 * Commutative and associative in distribution; estimates stay unbiased.
 * a may be empty (n == 0, r == 0): it then becomes a copy of b. */
void merge_hot_merge(struct merge_hotlist *a, const struct merge_hotlist *b, uint64_t *rng);

/* p = (15/16)^r. */
double merge_hot_p(const struct merge_hotlist *h);
/* Unbiased estimate of how often entry i's value was offered: count / p. */
double merge_hot_estimate(const struct merge_hotlist *h, int i);
/* Sort entries by count, largest first (ties: by value, then aux). */
void merge_hot_sort(struct merge_hotlist *h);

/* Structural check of a hotlist read from a file: 0, or -1 with a reason
 * (n <= N, counts > 0, no duplicate values, r <= RMAX, sum of counts at
 * most vtot, kind known, pad and state 0 unless allow_state). */
int merge_hot_check(const struct merge_hotlist *h, int allow_state, const char **why);

/* Latency bins for MERGE_VK_LATENCY: exact below 16 cycles, then four
 * bins per power of two, each named by its lower bound. */
uint64_t merge_hot_latency_bin(uint64_t cycles);

/* Short name of a kind ("result", "src1", ...); "?" if unknown. */
const char *merge_hot_kind_name(unsigned kind);

#endif
