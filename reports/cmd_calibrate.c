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
 *
 * Those are the levels of a quiet loop. A value sample times its loads in
 * the signal handler, which has just displaced part of L1 and the TLB, so
 * it sees each level slower and spread wider, and neighbouring levels can
 * overlap. So each level is then measured as samples see it: a chase over
 * a working set in the middle of the level runs under `vprof run --values
 * --interp-every 1` (this binary, `calibrate --chase`), and its latency
 * hotlist is the level's distribution of binned latencies. Two neighbours
 * are kept apart only if a threshold between bins puts at least 93% of
 * each one's samples on its own side; else the worse one goes (a middle
 * level is dropped, an edge one merges into its neighbour), except that
 * cache and memory stay two levels down to 75% (sample_levels).
 * The thresholds written are those, so a level's name on a latency bin
 * means what a sample can tell (--plain skips this step).
 */
#include "reports/builtin.h"
#include "reports/value_model.h"
#include "upcall/xorshift.h"

#include "spool/hotlist.h"

#include <fcntl.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <ftw.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char kHelp[] =
	"usage: vprof calibrate [--db DIR] [--max-size BYTES] [--loads N] [--plain]\n"
	"                       [--sample-ms MS] [--json]\n"
	"  Measure load latency over working sets from 4 KiB to --max-size\n"
	"  (default 256M; K, M, G suffixes) with a random pointer chase, timed as\n"
	"  the interpreter times loads (rdtscp; load; rdtscp, in TSC ticks), find\n"
	"  the distinguishable levels and write their thresholds to DB/calibration,\n"
	"  which vprof latency and vprof list use to label latency bins.\n"
	"  Then each level is measured as value samples see it (a chase in the\n"
	"  level's middle under vprof run --values, timed in the handler) and\n"
	"  a level is kept when 93% of its samples fall within its thresholds;\n"
	"  cache and memory stay two levels while each keeps 75% (the shares\n"
	"  are shown).\n"
	"  --loads N     timed loads per working set (default 20000)\n"
	"  --plain       skip the sampled step: the levels of a quiet loop\n"
	"  --sample-ms MS  CPU time of each sampled chase (default 1500)\n"
	"  --json        one JSON object per level: level, typical, upto,\n"
	"                from_bytes, to_bytes, overhead, sampled_bytes (the\n"
	"                chase measured; absent for merged levels), sampled\n"
	"                (its value samples), within (their share on its side\n"
	"                of the thresholds)\n"
	"  (--chase BYTES is internal: the chase the sampled step runs)\n";

struct copts {
	uint64_t max_size;
	long loads;
	int plain;
	long sample_ms;
	uint64_t chase;          /* internal: be the sampled chase */
};

/* "64M" and the like: bytes, or 0 if malformed. */
static uint64_t parse_size(const char *arg)
{
	char *end;
	double v = strtod(arg, &end);
	uint64_t mul = !strcmp(end, "K") || !strcmp(end, "k") ? 1ull << 10
		: !strcmp(end, "M") || !strcmp(end, "m") ? 1ull << 20
		: !strcmp(end, "G") || !strcmp(end, "g") ? 1ull << 30 : !*end ? 1 : 0;
	return v > 0 ? (uint64_t)(v * (double)mul) : 0;
}

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct copts *c = ctx;
	char *end;
	if (ch == 'm' || ch == 'c') {
		uint64_t v = parse_size(arg);
		if (v >= 8192 && v <= (16ull << 30)) {
			*(ch == 'm' ? &c->max_size : &c->chase) = v;
			return 0;
		}
		return report_usage("calibrate", ch == 'm' ? "--max-size takes a size from 8K to 16G"
							   : "--chase takes a size from 8K to 16G");
	}
	if (ch == 'p') {
		c->plain = 1;
		return 0;
	}
	long v = strtol(arg, &end, 10);
	if (ch == 's') {
		if (*end || v < 100 || v > 600000)
			return report_usage("calibrate", "--sample-ms takes milliseconds from 100 to 600000");
		c->sample_ms = v;
		return 0;
	}
	c->loads = v;
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

/* Chain one pointer per line of mem[0, bytes) in one random cycle and
 * walk it once (warm). Returns the start. */
static void *chain(void *mem, size_t bytes)
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
		size_t j = upcall_xorshift64(&s) % i, x = perm[i];
		perm[i] = perm[j];
		perm[j] = x;
	}
	for (size_t i = 0; i < n; i++)
		*(void **)(base + perm[i] * 64) = base + perm[(i + 1) % n] * 64;
	free(perm);
	void *volatile *p = (void *volatile *)base;
	for (size_t i = 0; i < n; i++)              /* warm: every line once */
		p = (void *volatile *)*p;
	return (void *)p;
}

/* Typical latency of single dependent loads over a working set. */
static double measure(void *mem, size_t bytes, long loads, uint64_t *t)
{
	void *volatile *p = chain(mem, bytes);
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

/* Names by position and working sets: the last level is DRAM when it
 * starts at 8 MiB or more, the one before it the LLC; three levels start
 * with L1/L2 (the TSC cannot split them); else L1, L2, ... */
static void name_levels(struct report_value_level *lv, int g)
{
	for (int i = 0; i < g; i++) {
		int dram = i == g - 1 && g > 1 && lv[i].from_bytes >= (8u << 20);
		if (dram)
			snprintf(lv[i].name, sizeof(lv[i].name), "DRAM");
		else if (g >= 3 && i == g - 2 && lv[g - 1].from_bytes >= (8u << 20))
			snprintf(lv[i].name, sizeof(lv[i].name), "LLC");
		else if (g == 3 && i == 0)
			snprintf(lv[i].name, sizeof(lv[i].name), "L1/L2");
		else if (g == 2 && i == 0 && lv[1].from_bytes >= (8u << 20))
			snprintf(lv[i].name, sizeof(lv[i].name), "cache");
		else
			snprintf(lv[i].name, sizeof(lv[i].name), "L%d", i + 1);
	}
}

/* Group sizes into levels (see the top). Returns the number of levels. */
static int find_levels(const uint64_t *size, const double *lat, int n, struct report_value_level *lv)
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
	}
	name_levels(lv, g);
	return g;
}

/* ---- the sampled step ---- */

/* The chase the sampled step profiles: its one load is the hot load. */
__attribute__((noinline)) static void *calib_chase(void *p, long steps)
{
	while (steps--)
		p = *(void *volatile *)p;
	return p;
}

static double cpu_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* calibrate --chase BYTES: chase for ms of CPU time. */
static int chase_child(uint64_t bytes, long ms)
{
	void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		fprintf(stderr, "vprof calibrate: cannot allocate %llu bytes\n", (unsigned long long)bytes);
		return 1;
	}
	void *p = chain(mem, bytes);
	double t0 = cpu_ms();
	while (cpu_ms() - t0 < (double)ms)
		p = calib_chase(p, 20000);
	return p == NULL;
}

/* A level's binned latencies as value samples saw them. */
#define DIST_BINS (SPOOL_HOT_N * 4)
struct dist {
	uint64_t bin[DIST_BINS];
	double est[DIST_BINS];
	int n;
	double vtot;
	uint64_t bytes;         /* the chase's working set; 0 for a sum of chases */
};

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)flag, (void)f;
	remove(path);
	return 0;
}

/* Run `vprof run --values` on a chase over bytes (this binary, --chase),
 * and read its hottest latency hotlist into d. 0, or -1 with why. */
static int sampled(uint64_t bytes, long ms, struct dist *d, char *why, size_t cap)
{
	char dir[] = "/tmp/vprof-calibrate-XXXXXX", self[4096], sz[32], msb[32];
	ssize_t k = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (k <= 0 || !mkdtemp(dir)) {
		snprintf(why, cap, "no temporary database: %s", strerror(errno));
		return -1;
	}
	self[k] = 0;
	snprintf(sz, sizeof(sz), "%llu", (unsigned long long)bytes);
	snprintf(msb, sizeof(msb), "%ld", ms);
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);
		dup2(null, 1);
		dup2(null, 2);
		unsetenv("VPROF_MODULE");      /* the default capture times loads */
		char *av[] = { "vprof", "run", "--db", dir, "--values", "--interp-every", "1",
			       "--interp-len", "16", "--freq", "1000", "--", self, "calibrate",
			       "--chase", sz, "--sample-ms", msb, NULL };
		execv(self, av);
		_exit(127);
	}
	int st = 0, rc = -1;
	if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
		snprintf(why, cap, "the sampled chase over %s bytes failed", sz);
	} else {
		struct report_value_model vm;
		struct report_opts o = { .db = dir };
		const struct report_value_hot *best = NULL;
		if (report_value_model_load(&vm, &o, "calibrate") == 0) {
			for (size_t i = 0; i < vm.nhot; i++)
				if (vm.hot[i].kind == SPOOL_VK_LATENCY &&
				    (!best || vm.hot[i].h.vtot > best->h.vtot))
					best = &vm.hot[i];
			if (best && best->h.vtot >= 100) {
				d->n = 0;
				d->bytes = bytes;
				d->vtot = (double)best->h.vtot;
				for (uint32_t j = 0; j < best->h.n && d->n < DIST_BINS; j++) {
					d->bin[d->n] = best->h.e[j].value;
					d->est[d->n++] = spool_hot_estimate(&best->h, (int)j);
				}
				rc = 0;
			} else {
				snprintf(why, cap, "the sampled chase over %s bytes timed %llu loads (< 100)", sz,
					 best ? (unsigned long long)best->h.vtot : 0ull);
			}
			report_value_model_free(&vm);
		} else {
			snprintf(why, cap, "the sampled chase over %s bytes left no profile", sz);
		}
	}
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return rc;
}

/* Add b into a (a level merged with its neighbour). */
static void dist_add(struct dist *a, const struct dist *b)
{
	for (int j = 0; j < b->n; j++) {
		int i = 0;
		while (i < a->n && a->bin[i] != b->bin[j])
			i++;
		if (i == a->n) {
			if (a->n == DIST_BINS)
				continue;       /* dropped: counts as outside */
			a->bin[a->n] = b->bin[j];
			a->est[a->n++] = 0;
		}
		a->est[i] += b->est[j];
	}
	a->vtot += b->vtot;
	a->bytes = 0;
}

/* Share of d's samples in bins [lo, hi). */
static double within(const struct dist *d, uint64_t lo, uint64_t hi)
{
	double s = 0;
	for (int i = 0; i < d->n; i++)
		if (d->bin[i] >= lo && d->bin[i] < hi)
			s += d->est[i];
	return d->vtot > 0 ? s / d->vtot : 0;
}

/* The threshold t between two neighbours: lo's share below t and hi's
 * share at or above t change only at a bin, and the lesser of the two
 * rises, peaks and falls as t grows. t is the middle (geometric) of the
 * cuts within half a point of that peak, not its first cut: two levels
 * apart leave a gap of empty bins, and a cut at the gap's lower edge put
 * 99.75% of a cache chase's samples below it in calibrate and 88% in a
 * fresh chase on a loaded machine (CI). Returns the lesser share at t. */
static double split(const struct dist *lo, const struct dist *hi, uint64_t *t)
{
	const double TOL = 0.005;
	const int n = lo->n + hi->n;
	uint64_t c[2 * DIST_BINS], a = UINT64_MAX, b = 0;
	double m[2 * DIST_BINS], best = -1;
	for (int k = 0; k < n; k++) {
		c[k] = k < lo->n ? lo->bin[k] + 1 : hi->bin[k - lo->n];
		double x = within(lo, 0, c[k]), y = within(hi, c[k], UINT64_MAX);
		m[k] = x < y ? x : y;
		best = m[k] > best ? m[k] : best;
	}
	for (int k = 0; k < n; k++)
		if (m[k] >= best - TOL) {
			a = c[k] < a ? c[k] : a;
			b = c[k] > b ? c[k] : b;
		}
	*t = a == UINT64_MAX ? 1 : (uint64_t)(geomean((double)a, (double)b) + 0.5);
	double x = within(lo, 0, *t), y = within(hi, *t, UINT64_MAX);
	return x < y ? x : y;
}

/* The median bin of d. */
static uint64_t median(const struct dist *d)
{
	uint64_t lo = UINT64_MAX;
	for (int i = 0; i < d->n; i++)
		if (within(d, 0, d->bin[i] + 1) >= 0.5 * within(d, 0, UINT64_MAX) && d->bin[i] < lo)
			lo = d->bin[i];
	return lo == UINT64_MAX ? 0 : lo;
}

/* Merge level i+1 into level i (neither can be told apart). */
static void merge_level(struct report_value_level *lv, struct dist *d, int *g, int i)
{
	dist_add(&d[i], &d[i + 1]);
	lv[i].to_bytes = lv[i + 1].to_bytes;
	memmove(&lv[i + 1], &lv[i + 2], (size_t)(*g - i - 2) * sizeof(lv[0]));
	memmove(&d[i + 1], &d[i + 2], (size_t)(*g - i - 2) * sizeof(d[0]));
	(*g)--;
}

/* The sampled step (see the top): measure each quiet-loop level in its
 * middle as samples see it, drop or merge levels until each keeps KEEP of
 * its samples inside its bounds, and set thresholds and typical latencies from the samples. Returns the
 * new number of levels, or -1 after a message (lv unchanged). */
static int sample_levels(struct report_value_level *lv, int g, uint64_t max_size, long ms, double *in, double *nsamp,
			 uint64_t *sbytes, uint64_t (*gaps)[2], int *ngaps)
{
	struct dist d[VALUE_LEVELS_MAX];
	uint64_t cut[VALUE_LEVELS_MAX];
	char why[300];
	for (int i = 0; i < g; i++) {
		int a = 63 - __builtin_clzll(lv[i].from_bytes), b = 63 - __builtin_clzll(lv[i].to_bytes);
		uint64_t mid = 1ull << ((a + b) / 2);
		if (mid > max_size)
			mid = max_size;
		if (sampled(mid, ms, &d[i], why, sizeof(why)) < 0) {
			fprintf(stderr, "vprof calibrate: %s; the levels are the quiet loop's\n", why);
			return -1;
		}
	}
	/* A level is kept when it holds KEEP of its own samples between the
	 * thresholds that best split it from its neighbours. The worst one
	 * under KEEP goes: a middle level (a working set between two caches,
	 * e.g. 4-16 MiB here, whose loads hit either) is dropped, its sizes
	 * belonging to no level; a first or last one merges into its
	 * neighbour. Merging a middle level instead widened its neighbour
	 * until, on a loaded machine, every level merged into one. KEEP is
	 * above the 90% asked of a fresh run, which varies by a few points
	 * (a level kept at 90.8% gave 85% in a fresh chase). */
	const double KEEP = 0.93, FLOOR = 0.75;
	while (g > 1) {
		double wmin = KEEP;
		int worst = -1;
		for (int i = 0; i + 1 < g; i++)
			split(&d[i], &d[i + 1], &cut[i]);
		for (int i = 0; i < g; i++) {
			uint64_t lo = i ? cut[i - 1] : 0, hi = i + 1 < g ? cut[i] : UINT64_MAX;
			in[i] = within(&d[i], lo, hi);
			/* With more than cache and memory left, a level whose
			 * upper threshold is within a bin of its median is not
			 * kept however many samples it holds today: the next
			 * run's share turns on that one bin boundary (CI kept
			 * L1/L2 at 93.3% with its threshold at its median, 56,
			 * and a fresh chase then put 83% in it). */
			double share = in[i];
			uint64_t med = median(&d[i]);
			if (g > 2 && i + 1 < g && hi < med + med / 4)
				share = 0;
			if (share < wmin) {
				wmin = share;
				worst = i;
			}
		}
		if (worst < 0)
			break;
		/* Cache and memory are two levels on every machine: when only
		 * they are left, keep them apart if a threshold still puts
		 * FLOOR of each one's samples on its side (the shares are
		 * printed); one level would make every latency bin nameless. */
		if (g == 2 && in[0] >= FLOOR && in[1] >= FLOOR)
			break;
		if (worst > 0 && worst + 1 < g) {
			if (*ngaps < VALUE_LEVELS_MAX) {
				gaps[*ngaps][0] = lv[worst].from_bytes;
				gaps[(*ngaps)++][1] = lv[worst].to_bytes;
			}
			memmove(&lv[worst], &lv[worst + 1], (size_t)(g - worst - 1) * sizeof(lv[0]));
			memmove(&d[worst], &d[worst + 1], (size_t)(g - worst - 1) * sizeof(d[0]));
			g--;
		} else {
			merge_level(lv, d, &g, worst ? worst - 1 : 0);
		}
	}
	for (int i = 0; i + 1 < g; i++)
		split(&d[i], &d[i + 1], &cut[i]);
	for (int i = 0; i < g; i++) {
		uint64_t lo = i ? cut[i - 1] : 0, hi = i + 1 < g ? cut[i] : UINT64_MAX;
		lv[i].upto = hi == UINT64_MAX ? UINT64_MAX : hi - 1;
		lv[i].typical = median(&d[i]);
		in[i] = within(&d[i], lo, hi);
		nsamp[i] = d[i].vtot;
		sbytes[i] = d[i].bytes;
	}
	name_levels(lv, g);
	return g;
}

int cmd_calibrate(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "max-size", required_argument, 0, 'm' },
		{ "loads", required_argument, 0, 'l' },
		{ "plain", no_argument, 0, 'p' },
		{ "sample-ms", required_argument, 0, 's' },
		{ "chase", required_argument, 0, 'c' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		"calibrate", kHelp, REPORT_OPT_DB | REPORT_OPT_JSON, extra, "", on_extra,
	};
	struct copts c = { .max_size = 256ull << 20, .loads = 20000, .sample_ms = 1500 };
	struct report_opts o = { 0 };
	int rc = report_opts_parse(&cmd, argc, argv, &o, &c);
	if (rc >= 0)
		return rc;
	if (o.next < argc)
		return report_usage("calibrate", "takes no operands");
	if (c.chase)
		return chase_child(c.chase, c.sample_ms);

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

	struct report_value_level lv[VALUE_LEVELS_MAX];
	int g = find_levels(sizes, lat, n, lv);
	double in[VALUE_LEVELS_MAX], nsamp[VALUE_LEVELS_MAX];
	uint64_t sbytes[VALUE_LEVELS_MAX], gaps[VALUE_LEVELS_MAX][2];
	int ngaps = 0;
	int sampled_ok = 0;
	if (!c.plain && g > 1) {
		int g2 = sample_levels(lv, g, c.max_size, c.sample_ms, in, nsamp, sbytes, gaps, &ngaps);
		if (g2 > 0) {
			g = g2;
			sampled_ok = 1;
		}
	}
	if ((rc = report_value_calib_write(o.db, lv, g, (uint64_t)(ovh + 0.5))) < 0) {
		fprintf(stderr, "vprof calibrate: cannot write %s/calibration: %s\n", o.db, strerror(-rc));
		return 1;
	}
	if (!o.json)
		printf("%d levels%s, written to %s/calibration:\n%-8s %8s %12s  %-22s%s\n", g,
		       sampled_ok ? " (as value samples see them)" : "", o.db, "level", "typical", "upto",
		       "working sets", sampled_ok ? " sampled  within" : "");
	for (int i = 0; i < g; i++) {
		char upto[32], ws[64];
		if (lv[i].upto == UINT64_MAX)
			snprintf(upto, sizeof(upto), "-");
		else
			snprintf(upto, sizeof(upto), "%llu", (unsigned long long)lv[i].upto);
		if (o.json) {
			printf("{\"level\":\"%s\",\"typical\":%llu,\"upto\":%s,\"from_bytes\":%llu,\"to_bytes\":%llu,"
			       "\"overhead\":%.1f", lv[i].name, (unsigned long long)lv[i].typical,
			       lv[i].upto == UINT64_MAX ? "null" : upto, (unsigned long long)lv[i].from_bytes,
			       (unsigned long long)lv[i].to_bytes, ovh);
			if (sampled_ok && sbytes[i])
				printf(",\"sampled_bytes\":%llu", (unsigned long long)sbytes[i]);
			if (sampled_ok)
				printf(",\"sampled\":%.0f,\"within\":%.4f", nsamp[i], in[i]);
			printf("}\n");
			continue;
		}
		snprintf(ws, sizeof(ws), "%lluK-%lluK", (unsigned long long)(lv[i].from_bytes >> 10),
			 (unsigned long long)(lv[i].to_bytes >> 10));
		printf("%-8s %8llu %12s  %-22s", lv[i].name, (unsigned long long)lv[i].typical, upto, ws);
		if (sampled_ok)
			printf(" %7.0f %6.1f%%", nsamp[i], 100 * in[i]);
		printf("\n");
	}
	for (int i = 0; sampled_ok && i < g && !o.json; i++)
		if (in[i] < 0.93)
			printf("%s: only %.1f%% of its sampled loads fall within its thresholds (the levels overlap "
			       "as samples see them; a busy machine spreads them)\n", lv[i].name, 100 * in[i]);
	for (int i = 0; i < ngaps && !o.json; i++)
		printf("%lluK-%lluK: between levels (its loads land in both), in none\n",
		       (unsigned long long)(gaps[i][0] >> 10), (unsigned long long)(gaps[i][1] >> 10));
	return report_finish_stdout(0);
}
