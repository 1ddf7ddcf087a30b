/*
 * vprof calibrate: this machine's load-latency levels, measured the way
 * the interpreter times a load (interp/run.c: rdtscp; load; rdtscp), so
 * the thresholds compare directly with the binned latencies that value
 * sampling records.
 *
 * For working sets from 4 KiB to --max-size (default 256 MiB), doubling,
 * one pointer per 64-byte line is chained in a random cyclic permutation
 * (Sattolo's algorithm: one cycle through every line, so neither the
 * prefetcher nor a short cycle helps), walked once to warm it, then
 * --loads single loads are timed. A size's typical latency is the mean of
 * its fastest 90% (interrupts and migrations land in the slowest tail);
 * the TSC may tick coarsely (10 ns steps on some VMs), which the mean
 * smooths and a median would not.
 *
 * Levels: a size starts a new level where its typical latency is 30%
 * above the level's first size and 10% and 2 ticks above the size before;
 * a group of one size
 * between two others (a working set half in one level, half in the next)
 * is folded into its nearer neighbour. Each level's threshold is the
 * geometric mean of its typical latency and the next level's.
 */
#include "reports/values.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const char kHelp[] =
	"usage: vprof calibrate [--db DIR] [--max-size BYTES] [--loads N] [--json]\n"
	"  Measure load latency over working sets from 4 KiB to --max-size\n"
	"  (default 256M; K, M, G suffixes) with a random pointer chase, timed as\n"
	"  the interpreter times loads (rdtscp; load; rdtscp, in TSC ticks), find\n"
	"  the distinguishable levels and write their thresholds to DB/calibration,\n"
	"  which vprof latency and vprof list use to label latency bins.\n"
	"  --loads N     timed loads per working set (default 20000)\n"
	"  --json        one JSON object per level: level, typical, upto,\n"
	"                from_bytes, to_bytes, overhead\n";

struct copts {
	uint64_t max_size;
	long loads;
};

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct copts *c = ctx;
	char *end;
	if (ch == 'm') {
		double v = strtod(arg, &end);
		uint64_t mul = !strcmp(end, "K") || !strcmp(end, "k") ? 1ull << 10
			: !strcmp(end, "M") || !strcmp(end, "m") ? 1ull << 20
			: !strcmp(end, "G") || !strcmp(end, "g") ? 1ull << 30 : !*end ? 1 : 0;
		c->max_size = (uint64_t)(v * (double)mul);
		if (mul && c->max_size >= 8192 && c->max_size <= (16ull << 30))
			return 0;
		return report_usage("calibrate", "--max-size takes a size from 8K to 16G");
	}
	c->loads = strtol(arg, &end, 10);
	if (*end || c->loads < 100 || c->loads > 10000000)
		return report_usage("calibrate", "--loads takes a count from 100 to 10000000");
	return 0;
}

static inline uint64_t rdtscp(void)
{
	unsigned lo, hi, aux;
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux) :: "memory");
	return ((uint64_t)hi << 32) | lo;
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static int u64cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* Mean of the fastest 90% of t[n] (sorted in place). */
static double typical(uint64_t *t, size_t n)
{
	qsort(t, n, sizeof(*t), u64cmp);
	size_t k = n - n / 10;
	double s = 0;
	for (size_t i = 0; i < k; i++)
		s += (double)t[i];
	return s / (double)k;
}

/* Typical latency of single dependent loads over a working set. */
static double measure(void *mem, size_t bytes, long loads, uint64_t *t)
{
	size_t n = bytes / 64;
	char *base = mem;
	uint64_t s = 0x2545f4914f6cdd1dull ^ bytes;
	size_t *perm = malloc(n * sizeof(*perm));
	if (!perm) {
		perror("vprof calibrate");
		exit(1);
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = i;
	for (size_t i = n - 1; i > 0; i--) {        /* Sattolo: one cycle */
		size_t j = xorshift(&s) % i, x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(base + perm[i] * 64) = base + perm[(i + 1) % n] * 64;
	free(perm);
	void *volatile *p = (void *volatile *)base;
	for (size_t i = 0; i < n; i++)              /* warm: every line once */
		p = (void *volatile *)*p;
	for (long i = 0; i < loads; i++) {
		uint64_t t0 = rdtscp();
		p = (void *volatile *)*p;
		t[i] = rdtscp() - t0;
	}
	return typical(t, (size_t)loads);
}

static double overhead(long loads, uint64_t *t)
{
	for (long i = 0; i < loads; i++) {
		uint64_t t0 = rdtscp();
		t[i] = rdtscp() - t0;
	}
	return typical(t, (size_t)loads);
}

#define NSIZES 40

/* sqrt(a b) by Newton's method: the vprof command does not link libm. */
static double geomean(double a, double b)
{
	double x = (a + b) / 2, p = a * b;
	for (int i = 0; i < 40 && x > 0; i++)
		x = (x + p / x) / 2;
	return x;
}

/* Group sizes into levels (see the top). Returns the number of levels. */
static int find_levels(const uint64_t *size, const double *lat, int n, struct value_level *lv)
{
	int first[NSIZES], last[NSIZES], g = 0;
	for (int i = 0; i < n; i++) {
		if (g && (lat[i] < lat[first[g - 1]] * 1.3 || lat[i] < lat[i - 1] * 1.1 || lat[i] - lat[i - 1] < 2)) {
			last[g - 1] = i;
			continue;
		}
		first[g] = last[g] = i;
		g++;
	}
	/* A lone size between two groups is a mixture: fold it in; so is a
	 * lone largest size less than 1.5x slower than the one before. */
	for (int i = 1; i < g; i++) {
		if (first[i] != last[i])
			continue;
		double down = lat[first[i]] / lat[last[i - 1]];
		double up = i < g - 1 ? lat[first[i + 1]] / lat[first[i]] : 1.5;
		if (i == g - 1 && down >= up)
			continue;
		if (down < up)
			last[i - 1] = last[i];
		else
			first[i + 1] = first[i];
		memmove(first + i, first + i + 1, (size_t)(g - i - 1) * sizeof(int));
		memmove(last + i, last + i + 1, (size_t)(g - i - 1) * sizeof(int));
		g--;
		i--;
	}
	if (g > VALUE_LEVELS_MAX)
		g = VALUE_LEVELS_MAX;
	double typ[NSIZES];
	for (int i = 0; i < g; i++) {
		double s = 0;
		for (int j = first[i]; j <= last[i]; j++)
			s += lat[j];
		typ[i] = s / (last[i] - first[i] + 1);
		memset(&lv[i], 0, sizeof(lv[i]));
		lv[i].typical = (uint64_t)(typ[i] + 0.5);
		lv[i].from_bytes = size[first[i]];
		lv[i].to_bytes = size[last[i]];
	}
	for (int i = 0; i < g; i++) {
		lv[i].upto = i == g - 1 ? UINT64_MAX : (uint64_t)geomean(typ[i], typ[i + 1]);
		if (i && lv[i].upto <= lv[i - 1].upto)
			lv[i].upto = lv[i - 1].upto + 1;
		int dram = i == g - 1 && g > 1 && lv[i].from_bytes >= (8u << 20);
		if (dram)
			snprintf(lv[i].name, sizeof(lv[i].name), "DRAM");
		else if (g >= 3 && i == g - 2 && lv[g - 1].from_bytes >= (8u << 20))
			snprintf(lv[i].name, sizeof(lv[i].name), "LLC");
		else if (g == 3 && i == 0)
			snprintf(lv[i].name, sizeof(lv[i].name), "L1/L2");
		else
			snprintf(lv[i].name, sizeof(lv[i].name), "L%d", i + 1);
	}
	return g;
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "max-size", required_argument, 0, 'm' },
		{ "loads", required_argument, 0, 'l' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"calibrate", kHelp, REPORT_OPT_DB | REPORT_OPT_JSON, extra, "", on_extra,
	};
	struct copts c = { .max_size = 256ull << 20, .loads = 20000 };
	struct report_opts o = { 0 };
	int rc = report_opts_parse(&cmd, argc, argv, &o, &c);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("calibrate", "takes no operands");

	uint64_t *t = malloc((size_t)c.loads * sizeof(*t)), sizes[NSIZES];
	void *mem = mmap(NULL, c.max_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (!t || mem == MAP_FAILED) {
		fprintf(stderr, "vprof calibrate: cannot allocate %llu bytes\n", (unsigned long long)c.max_size);
		return 1;
	}
	double lat[NSIZES], ovh = overhead(c.loads, t);
	int n = 0;
	if (!o.json)
		printf("vprof calibrate: rdtscp; load; rdtscp in TSC ticks (rdtscp alone: %.1f)\n%12s %8s\n",
		       ovh, "working set", "ticks");
	for (uint64_t sz = 4096; sz <= c.max_size && n < NSIZES; sz *= 2) {
		sizes[n] = sz;
		lat[n] = measure(mem, sz, c.loads, t);
		if (!o.json) {
			printf("%10llu K %8.1f\n", (unsigned long long)(sz >> 10), lat[n]);
			fflush(stdout);
		}
		n++;
	}
	munmap(mem, c.max_size);
	free(t);

	struct value_level lv[VALUE_LEVELS_MAX];
	int g = find_levels(sizes, lat, n, lv);
	if ((rc = value_calib_write(o.db, lv, g, (uint64_t)(ovh + 0.5))) < 0) {
		fprintf(stderr, "vprof calibrate: cannot write %s/calibration: %s\n", o.db, strerror(-rc));
		return 1;
	}
	if (!o.json)
		printf("%d levels, written to %s/calibration:\n%-8s %8s %12s  %s\n", g, o.db, "level", "typical",
		       "upto", "working sets");
	for (int i = 0; i < g; i++) {
		char upto[32];
		if (lv[i].upto == UINT64_MAX)
			snprintf(upto, sizeof(upto), "-");
		else
			snprintf(upto, sizeof(upto), "%llu", (unsigned long long)lv[i].upto);
		if (o.json)
			printf("{\"level\":\"%s\",\"typical\":%llu,\"upto\":%s,\"from_bytes\":%llu,\"to_bytes\":%llu,"
			       "\"overhead\":%.1f}\n", lv[i].name, (unsigned long long)lv[i].typical,
			       lv[i].upto == UINT64_MAX ? "null" : upto, (unsigned long long)lv[i].from_bytes,
			       (unsigned long long)lv[i].to_bytes, ovh);
		else
			printf("%-8s %8llu %12s  %lluK-%lluK\n", lv[i].name, (unsigned long long)lv[i].typical, upto,
			       (unsigned long long)(lv[i].from_bytes >> 10), (unsigned long long)(lv[i].to_bytes >> 10));
	}
	return report_finish_stdout(0);
}
