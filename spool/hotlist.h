/*
 * Value hotlists: Gibbons and Matias' "counting samples" (SIGMOD 1998),
 * the hot-list summary DCPI's value sampling used (Burrows et al., ASPLOS
 * 2000, section 2.2), with N = 16 entries and f = N/(N-1) = 16/15.
 *
 * One hotlist summarizes the stream of values of one kind seen at one
 * instruction: at most SPOOL_HOT_N (value, aux, count) entries and a
 * threshold tau = (16/15)^r (p = 1/tau, the report's thld). A value
 * already in the list is counted every time it is seen; a new value
 * enters with probability p. When a 17th value enters, tau is raised to
 * f*tau, and every entry is put through Gibbons-Matias' coin process (a
 * coin with heads probability 15/16; on tails the count drops by one and
 * coins with heads probability 1/tau' follow, each tails dropping one
 * more, until heads or zero), which leaves the list distributed as if
 * tau' had been the threshold from the start; repeated until at most 16
 * values remain. count + tau - 1 is then an unbiased estimate of how
 * often a listed value was seen (0 for the others), whatever the stream.
 *
 * Unlike "concise samples" (count each instance with probability p,
 * count/p), a value that is in the list is counted exactly from then on,
 * so the heavy values that reports are about are known to within the
 * few instances missed before they entered. The coin process is drawn in
 * two parts (hotlist.c, raise_entry): whether the entry leaves, with the
 * process's probability, and, if it stays, the process's mean count
 * given that it stays, rounded at random; an entry with count >= 2 tau'
 * (which the process drops in under e^-2/16 of raises) simply stays at
 * the mean. Same means, so the same unbiased estimates; but a value seen
 * in 45% of 2000 samples next to 1100 distinct others is estimated to
 * 0.3 points of standard deviation instead of GM's 7
 * (tests/unit/hotlist_model.c checks the bar: within 3 points in
 * 99% of trials, also when the stream is merged from 4 parts).
 *
 * r is stored exactly; coins are drawn from 4-bit nibbles of a xorshift
 * state (a nibble of all ones, probability 1/16, is "tails") and
 * uniform doubles from its top 53 bits; (1 - q)^c by squaring (no libm
 * in the library). Merging is at the larger tau of the two (see
 * spool_hot_merge).
 *
 * A hotlist's key is SPOOL_HOT_KEY(kind, where): in a spool, "where" is
 * SPOOL_GPC(image generation, pc), as for sample counts; in a profile, it
 * is the ELF vaddr in the image (the absolute pc in unknown.*.prof).
 *
 * Composite values: each entry has a second 64-bit word, aux, so a pair
 * (value, call site) is kept exactly; aux is 0 for plain kinds. Two
 * entries are the same value when both value and aux are equal.
 *
 * The same struct is the record of spools' and profiles' SPOOL_SEC_VALUES
 * sections (format.h): 416 bytes, little-endian, no pointers. Its
 * `method` word is SPOOL_HOT_COUNTING once anything was counted; a
 * non-empty hotlist with 0 there was written by a vprof that kept concise
 * samples, whose counts mean something else: readers refuse it with a
 * message (spool_hot_check).
 *
 * Every function here is async-signal-safe: no malloc, no locks, no libm,
 * bounded stack (under 1.5 KiB; spool_value, which nests a
 * one-value hotlist and a merge, under 2 KiB). None is thread-safe on one
 * hotlist: the caller owns it (per-thread tables) or has claimed it
 * (spool/writer.c).
 */
#ifndef VPROF_MERGE_HOTLIST_H
#define VPROF_MERGE_HOTLIST_H

#include <stddef.h>
#include <stdint.h>

/* Value kinds: what was captured. ORDER VK: keep spool_hot_kind_name() in
 * step. Numbers are on disk: never reuse one. */
enum spool_value_kind {
	SPOOL_VK_NONE = 0,
	SPOOL_VK_RESULT = 1,     /* first destination operand's new value */
	SPOOL_VK_SRC1 = 2,       /* first source operand's value */
	SPOOL_VK_SRC2 = 3,       /* second source operand's value */
	SPOOL_VK_ADDR = 4,       /* effective address of the memory operand */
	SPOOL_VK_LATENCY = 5,    /* load latency, cycles through spool_hot_latency_bin() */
	SPOOL_VK_RETADDR = 6,    /* return address of the current procedure */
	SPOOL_VK_TARGET = 7,     /* target of an indirect call or jump */
	SPOOL_VK_STRIDE = 8,     /* this address minus the previous one at this pc */
	/* Composite kinds: value as the plain kind above, aux = the call site
	 * (return address of the current procedure, 0 if unknown). */
	SPOOL_VK_RESULT_BY_SITE = 9,
	SPOOL_VK_SRC1_BY_SITE = 10,
	SPOOL_VK_SRC2_BY_SITE = 11,
	/* value = effective address, aux = binned latency (as SPOOL_VK_LATENCY) */
	SPOOL_VK_ADDR_LATENCY = 12,
	/* Procedure arguments at a call the interpreted window went through:
	 * the key's "where" is the call instruction's PC (the caller's
	 * image), value the register as the callee's first instruction
	 * received it (after PLT stubs and other jumps; an xmm register's low
	 * 64 bits), aux the callee's entry (a code address: see
	 * SPOOL_HOT_XREF). Recorded only for the argument registers the
	 * callee read before writing them within the window. One kind per
	 * register, in the SysV order of each class: 13..18 rdi rsi rdx rcx
	 * r8 r9, 19..26 xmm0..xmm7. */
	SPOOL_VK_ARG_FIRST = 13,
	SPOOL_VK_ARG_XMM0 = 19,
	SPOOL_VK_ARG_LAST = 26,
	/* a conditional branch's outcome: value 1 taken, 0 fell through */
	SPOOL_VK_BRANCH = 27,
	/* an instruction range run straight through: keyed at its first
	 * instruction (a taken branch's target), value its last (the next
	 * taken branch), as LBR-based tools count ranges */
	SPOOL_VK_RANGE = 28,     /* aux 0; aux SPOOL_RANGE_WINDOWS: see below */
	/* a call or an unconditional jump (direct or indirect): value its target */
	SPOOL_VK_TAKEN = 29,
	/* a memory reference's outcome in the simulated caches (vprof run
	 * --cachesim, preload/cachesim.c): value SPOOL_CACHE_OUTCOME(d1, ll) */
	SPOOL_VK_CACHE = 30,
	/* a memory-order hazard (vprof run --hazards, preload/hazards.c): key
	 * the load, value the store's PC, aux SPOOL_HAZARD_AUX(kind,
	 * distance); value the load's own PC with aux 0 counts the load's
	 * executions in the windows that found a hazard there */
	SPOOL_VK_HAZARD = 31,
	SPOOL_VK_BUILTIN_MAX = 32,   /* vprof's own kinds are 1..31 */
	/* 32..63: reserved for customization modules
	 * (include/vprof-module.h, VPROF_KIND_MODULE): 8 slots in each of 4
	 * report formats, kind = 32 + format * 8 + slot, format 0 hex,
	 * 1 signed, 2 unsigned, 3 IEEE double; named "modS.FORMAT". */
	SPOOL_VK_MODULE_FIRST = 32,
	SPOOL_VK_MODULE_LAST = 63,
	/* a data object's references in the simulated caches (vprof run
	 * --cachesim): key the object (aux SPOOL_OBJ_*: a stack frame at a
	 * code address of its function, an image's data page, the heap
	 * blocks of an allocation site at its return address, another
	 * mapping's 2 MiB region), value SPOOL_CACHE_OUTCOME(d1, ll) */
	SPOOL_VK_OBJECT = 64,
	SPOOL_VK_MAX = 65,           /* every valid kind is below */
};
#define SPOOL_VK_MODULE_FORMAT(kind) (((kind) - SPOOL_VK_MODULE_FIRST) >> 3)
static inline int spool_hot_kind_valid(unsigned kind)
{
	return (kind > SPOOL_VK_NONE && kind < SPOOL_VK_BUILTIN_MAX) ||
	       (kind >= SPOOL_VK_MODULE_FIRST && kind <= SPOOL_VK_MODULE_LAST) || kind == SPOOL_VK_OBJECT;
}

/* Hotlist keys: kind in the top 8 bits, as events are in count keys. */
#define SPOOL_HOT_KEY(kind, where) \
	(((uint64_t)(kind) << 56) | ((uint64_t)(where) & 0x00ffffffffffffffull))
#define SPOOL_HOT_KEY_KIND(k)  ((unsigned)((k) >> 56))
#define SPOOL_HOT_KEY_WHERE(k) ((k) & 0x00ffffffffffffffull)

/* In a profile, code addresses in values (RETADDR, TARGET, RANGE, TAKEN) and in the aux
 * of the *_BY_SITE kinds are ELF offsets in the hotlist's own image, or,
 * for an address in another image, the absolute address with this bit. */
#define SPOOL_HOT_FOREIGN (1ull << 63)
/* A code address in another image, as profiles store it where that image
 * is known: both top bits, a 30-bit identity of the image (bits 32..61,
 * merge_profile_xref_id: from its build-id, or its path without one) and
 * the ELF vaddr in it (bits 0..31). Reports resolve the identity against
 * the images of the database; merge writes a profile (possibly without
 * samples) for every image it names this way. An absolute address never
 * has bit 62 set, so SPOOL_HOT_FOREIGN alone still means absolute. */
#define SPOOL_HOT_XREF (3ull << 62)
#define SPOOL_HOT_XREF_MAKE(id, vaddr) \
	(SPOOL_HOT_XREF | ((uint64_t)((id) & 0x3fffffffu) << 32) | ((uint64_t)(vaddr) & 0xffffffffull))
#define SPOOL_HOT_XREF_ID(v)    ((uint32_t)(((v) >> 32) & 0x3fffffffu))
#define SPOOL_HOT_XREF_VADDR(v) ((v) & 0xffffffffull)
static inline int spool_hot_is_xref(uint64_t v)
{
	return (v & SPOOL_HOT_XREF) == SPOOL_HOT_XREF;
}

static inline int spool_hot_kind_has_site(unsigned kind)
{
	return kind == SPOOL_VK_RESULT_BY_SITE || kind == SPOOL_VK_SRC1_BY_SITE ||
	       kind == SPOOL_VK_SRC2_BY_SITE;
}
static inline int spool_hot_kind_is_arg(unsigned kind)
{
	return kind >= SPOOL_VK_ARG_FIRST && kind <= SPOOL_VK_ARG_LAST;
}
/* Kinds whose aux is a code address (a call site, or a callee). */
static inline int spool_hot_kind_code_aux(unsigned kind)
{
	return spool_hot_kind_has_site(kind) || spool_hot_kind_is_arg(kind);
}
/* The kinds `vprof run --branches` records (not operand values). */
static inline int spool_hot_kind_is_branch_record(unsigned kind)
{
	return kind == SPOOL_VK_BRANCH || kind == SPOOL_VK_RANGE || kind == SPOOL_VK_TAKEN;
}
/* Kinds that count what happened (branch records, cache outcomes), not
 * values the program computed. */
static inline int spool_hot_kind_is_record(unsigned kind)
{
	return spool_hot_kind_is_branch_record(kind) || kind == SPOOL_VK_CACHE || kind == SPOOL_VK_HAZARD ||
	       kind == SPOOL_VK_OBJECT;
}
/* A CACHE value: the first-level data cache's outcome and the last
 * level's. Known outcomes are those of lines the window touched before;
 * a line's first touch in a window is unknown (MemSpy's rule: the cache's
 * state at the window's start is not known), guessed from the state the
 * thread's earlier windows left. The last level is looked up only when
 * the first did not hit (as cachegrind does). */
enum {
	SPOOL_CACHE_HIT = 0,         /* known hit */
	SPOOL_CACHE_MISS = 1,        /* known miss */
	SPOOL_CACHE_UHIT = 2,        /* unknown, guessed a hit */
	SPOOL_CACHE_UMISS = 3,       /* unknown, guessed a miss */
	SPOOL_CACHE_NONE = 4,        /* last level only: not looked up */
};
#define SPOOL_CACHE_OUTCOME(d1, ll) ((uint64_t)(d1) * 8 + (uint64_t)(ll))
#define SPOOL_CACHE_D1(v) ((unsigned)((v) / 8) & 7)
#define SPOOL_CACHE_LL(v) ((unsigned)(v) & 7)
/* Not an outcome: counted once for each window in which the PC made a
 * reference (how many windows its counts come from). */
#define SPOOL_CACHE_WINDOW 63
/* An OBJECT hotlist's class (aux). */
enum { SPOOL_OBJ_STACK = 1, SPOOL_OBJ_IMAGE = 2, SPOOL_OBJ_OTHER = 3,
       SPOOL_OBJ_HEAP = 4 };         /* a heap block: key its allocation site */
#define SPOOL_OBJ_OTHER_REGION (2ull << 20)
/* A HAZARD pair: the kind, and the instructions from the store to the
 * load (at most 255). */
enum { SPOOL_HAZARD_FORWARD = 1,   /* store forwarding fails: the load needs
				    * bytes of an in-flight store it does not
				    * lie within */
       SPOOL_HAZARD_ALIAS4K = 2 }; /* 4K aliasing: the load matches an
				    * in-flight store in address bits 11:0,
				    * not in its page */
#define SPOOL_HAZARD_AUX(kind, dist) ((uint64_t)(kind) | (uint64_t)((dist) < 255 ? (dist) : 255) << 8)
#define SPOOL_HAZARD_KIND(aux) ((unsigned)(aux) & 0xff)
#define SPOOL_HAZARD_DIST(aux) ((unsigned)((aux) >> 8) & 0xff)
/* A RANGE hotlist counts each range's runs as the entry (end, aux 0),
 * and once more, as (end, SPOOL_RANGE_WINDOWS), each window that ran it:
 * how many windows the count comes from, for its error bar. */
#define SPOOL_RANGE_WINDOWS 1
/* Kinds whose value is a code address. */
static inline int spool_hot_kind_code_value(unsigned kind)
{
	return kind == SPOOL_VK_RETADDR || kind == SPOOL_VK_TARGET || kind == SPOOL_VK_RANGE ||
	       kind == SPOOL_VK_TAKEN || kind == SPOOL_VK_HAZARD;
}

/* aux of the plain operand kinds (RESULT, SRC1, SRC2, ADDR): the value
 * was an address inside the sampled thread's own stack when captured (it
 * names a frame, not data). 0 otherwise. */
#define SPOOL_HOT_AUX_STACK 1ull

#define SPOOL_HOT_N 16           /* entries: the paper's N */
#define SPOOL_HOT_RMAX 4096      /* raises a valid hotlist may have */
#define SPOOL_HOT_COUNTING 1     /* method: Gibbons-Matias counting samples */

struct spool_hot_entry {
	uint64_t value;
	uint64_t aux;            /* second word of composite kinds, else 0 */
	uint64_t count;          /* > 0 for entries [0, n) */
};

struct spool_hotlist {           /* 416 bytes */
	uint64_t key;            /* SPOOL_HOT_KEY; 0: unused */
	uint64_t vtot;           /* value samples offered (the report's vtot) */
	uint32_t r;              /* raises: tau = (16/15)^r, p = 1/tau (thld) */
	uint32_t n;              /* entries in use */
	uint32_t state;          /* spool shared area's claim word; 0 elsewhere */
	uint32_t method;         /* SPOOL_HOT_COUNTING, or 0 while empty */
	struct spool_hot_entry e[SPOOL_HOT_N];
};

/* An empty hotlist for key (p = 1). */
void spool_hot_init(struct spool_hotlist *h, uint64_t key);

/* One value sample: vtot++; count value if it is listed, else list it
 * with probability p, raising tau until at most N values remain. *rng is
 * the caller's xorshift64 state (any value; 0 is replaced). _pair offers
 * a composite (value, aux). */
void spool_hot_offer(struct spool_hotlist *h, uint64_t value, uint64_t *rng);
void spool_hot_offer_pair(struct spool_hotlist *h, uint64_t value, uint64_t aux, uint64_t *rng);

/* Fold b into a (keys should match; a's is kept), at the larger tau of
 * the two ("hi"; the other is "lo"): a value listed in both gets lo's
 * estimate, count + tau_lo - 1, added to hi's count (one list over both
 * streams would have counted lo's instances, the value being listed); a
 * value only in lo enters through the coin process raised from tau_lo to
 * tau; then raises until at most N remain. Commutative and associative
 * in distribution; estimates stay unbiased, and a heavy value keeps its
 * accuracy however many small lists are folded into a large one (as
 * spool/writer.c's evictions do). a may be empty (n == 0, r == 0): it then
 * becomes a copy of b. */
void spool_hot_merge(struct spool_hotlist *a, const struct spool_hotlist *b, uint64_t *rng);

/* p = 1/tau = (15/16)^r: the probability a new value enters (thld). */
double spool_hot_p(const struct spool_hotlist *h);
/* Unbiased estimate of how often entry i's value was offered:
 * count + tau - 1, at most vtot. */
double spool_hot_estimate(const struct spool_hotlist *h, int i);
/* Sort entries by count, largest first (ties: by value, then aux). */
void spool_hot_sort(struct spool_hotlist *h);

/* Structural check of a hotlist read from a file: 0, or -1 with a reason
 * (n <= N, counts > 0 and each at most vtot, no duplicate values,
 * r <= RMAX, kind known, method SPOOL_HOT_COUNTING unless empty, state 0
 * unless allow_state). */
int spool_hot_check(const struct spool_hotlist *h, int allow_state, const char **why);

/* Latency bins for SPOOL_VK_LATENCY: exact below 16 cycles, then four
 * bins per power of two, each named by its lower bound. */
uint64_t spool_hot_latency_bin(uint64_t cycles);

/* Short name of a kind ("result", "src1", ...); "?" if unknown. */
const char *spool_hot_kind_name(unsigned kind);

#endif
