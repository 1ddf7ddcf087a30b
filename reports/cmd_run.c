/*
 * vprof run [options] -- CMD [ARGS]: profile CMD and every process it
 * starts (they inherit LD_PRELOAD and VPROF_*), wait for it, merge the
 * spools, print a summary on stderr, and exit as CMD did (same status, or
 * killed by the same signal).
 *
 * Options are checked before anything runs: a bad one is one message and
 * exit 2. If the database cannot be used (no permission, a full disk), CMD
 * still runs, unprofiled, after one message: profiling must never cost the
 * user their command.
 *
 * A run's processes carry its id (VPROF_RUN, the spools' run record), so
 * that the summary counts them alone, whoever merges them, and the epoch
 * the run chose (merge_db_run_begin): a new one when the current epoch
 * holds data, unless --add.
 */
#include "reports/builtin.h"
#include "spool/cachegeom.h"
#include "reports/report.h"
#include "merge/profile.h"
#include "upcall/upcall.h"

#include <errno.h>
#include <fcntl.h>
#include <elf.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char kHelp[] =
	"usage: vprof run [--db DIR] [--add] [--event E] [--freq HZ | --period N]\n"
	"                 [--values [--interp-len N] [--interp-reach R] [--interp-every K]\n"
	"                 [--skew-skip S]] [--branches] [--cachesim [--cache SPEC] [--cachesim-len N]\n"
	"                 [--alloc-fn NAME]...]\n"
	"                 [--hazards]\n"
	"                 [--module M] [--stacks [--stack-depth N]]\n"
	"                 [--no-stacks] [--no-python] [--no-lua] [--opcodes]\n"
	"                 [--epoch-secs S] [--max-cost PCT] [--no-merge] -- CMD [ARGS]\n"
	"  --db DIR          the database (default $VPROF_DB, else ./vprof.db)\n"
	"  --add             add this run to the database's current epoch; without it a\n"
	"                    run that finds data there starts a new epoch, which then\n"
	"                    holds this run's processes only (reports read it)\n"
	"  --event E         auto (default), cycles, instructions, task-clock, cpu-timer, itimer\n"
	"  --freq HZ         mean samples per CPU-second, 1 to 20000 (default 250;\n"
	"                    lowered where that would cost more than --max-cost)\n"
	"  --period N        mean period: ns of CPU time for clocks, events for counters\n"
	"                    (at least 50000)\n"
	"  --values          value sampling: interpret after some samples, keep value hotlists\n"
	"                    (VPROF_VALUES=on); value profiles can hold data such as secrets\n"
	"  --interp-len N    instructions whose operands a value sample records, 1 to 4096\n"
	"                    (default 4): the N before its window came back around to where\n"
	"                    it started (a loop: where the sample's time went), else the\n"
	"                    window's first N; with --module, the window's exact length\n"
	"  --interp-reach R  how much further a window may run to close its loop or enter\n"
	"                    a call and record its arguments, 0 to 4096 (default 64)\n"
	"  --interp-every K  interpret at every K-th sample of a thread (default 1)\n"
	"  --skew-skip S     first run a random 0..S instructions unobserved, S at most 64\n"
	"                    (default 0)\n"
	"  --branches        branch records (VPROF_BRANCHES=on): windows record which way\n"
	"                    each conditional branch went, taken branches and straight-\n"
	"                    line ranges, for vprof branches and vprof export --format\n"
	"                    autofdo-text; alone, windows of 4096 instructions (reach\n"
	"                    4092) at every 16th sample record only these\n"
	"  --cachesim        cache simulation (VPROF_CACHESIM=on): windows of --cachesim-len\n"
	"                    instructions at every 4th sample on average (at random) run\n"
	"                    each data reference through\n"
	"                    a simulated D1 and last-level cache, per instruction, for\n"
	"                    vprof memory (docs/cache-simulation.md)\n"
	"  --cache SPEC      the simulated caches (implies --cachesim), as\n"
	"                    D1=32K:8:64,LL=32M:16:64 (size:ways:line; either part alone);\n"
	"                    default this machine's, from sysfs\n"
	"  --cachesim-len N  instructions a long window (--cachesim, --hazards) runs, 1000\n"
	"                    to 1000000 (default 50000; implies --cachesim without --hazards)\n"
	"  --alloc-fn NAME   (implies --cachesim; repeatable) a function that allocates for\n"
	"                    its callers, as xmalloc: heap blocks it allocates are named\n"
	"                    by its caller's line (functions under 96 bytes are so\n"
	"                    already); an exported symbol (the dynamic symbol table)\n"
	"  --hazards         memory-order hazards (VPROF_HAZARDS=on): windows as --cachesim's\n"
	"                    check each load against the stores still in flight: store\n"
	"                    forwarding that fails, 4K aliasing, for vprof hazards\n"
	"  --module M        customization module (implies --values): a path to a .so\n"
	"                    built against vprof-module.h, or a shipped one by name:\n"
	"                    values, latency, indirect, stride (docs/modules.md)\n"
	"  --stacks          record the call stack at each sample (VPROF_STACKS=on):\n"
	"                    inclusive time, --callers/--callees, folded and pprof stacks;\n"
	"                    a signal per sample (no ring), unwound by vprof's own\n"
	"                    .eh_frame unwinder (VPROF_STACK_METHOD=cfi; fp: frame\n"
	"                    pointers, needs -fno-omit-frame-pointer; unwind, cursor:\n"
	"                    libunwind)\n"
	"  --stack-depth N   frames kept per stack, 1 to 64 (default 32, 64 for Python and\n"
	"                    Lua; implies --stacks)\n"
	"  --no-stacks       no call stacks, not even for Python (VPROF_STACKS=off)\n"
	"  Python 3.11 processes get --stacks by default, their Python functions and\n"
	"  lines read at each sample and mixed with the native frames: they replace\n"
	"  the evaluator's frames in every report, as procedures of image\n"
	"  [python:FILE]; other Python versions are named and profiled natively.\n"
	"  Lua 5.4.4 the same: functions named FILE:LINE they begin at, image [lua:FILE]\n"
	"  --no-python       native frames only, the evaluator's (VPROF_PYTHON=off)\n"
	"  --no-lua          the same for Lua (VPROF_LUA=off)\n"
	"  --opcodes         the opcode each Python or Lua function runs at the sample,\n"
	"                    as a frame inside it (image [python:<opcodes>]): an\n"
	"                    opcode mix per function (--callees F), operand types in\n"
	"                    3.11's specialized names (BINARY_OP_ADD_INT)\n"
	"  --epoch-secs S    continuous mode: every S seconds each process hands its spool\n"
	"                    over and starts a new one (VPROF_EPOCH_SECS), and vprof run\n"
	"                    merges finished spools while CMD runs: spools stay bounded\n"
	"  --max-cost PCT    bound vprof's own cost (handler, drains and the kernel's work\n"
	"                    on each sample) to PCT% of each thread's CPU by lowering\n"
	"                    that thread's rate, 0 to 100 (default 25; 0 off)\n"
	"  --no-merge        leave the spools for a later `vprof merge`\n"
	"  A bad option or value is one message and exit status 2; CMD does not run.\n";

/* The kernel's cost of a sample, which the bound on vprof's cost counts
 * (preload/selflimit.c), measured before CMD starts so that CMD does not
 * pay the ~40 ms: libvprof.so measures it in a child made for it (this
 * program again, with VPROF_CALIBRATE_FD: the library's constructor
 * writes the figure there and ends the process) and CMD gets it in
 * VPROF_TRIGGER_COST. Only at rates where it can matter (a period given
 * in counter events is taken as ns here: the library measures for itself
 * where that guessed wrong). LD_PRELOAD and VPROF_* are set already. */
static void measure_trigger_cost(void)
{
	const char *f = getenv("VPROF_FREQ"), *p = getenv("VPROF_PERIOD"), *m = getenv("VPROF_MAX_COST");
	unsigned long long freq = f && *f ? strtoull(f, NULL, 10) : 250;
	uint64_t period_ns = p && *p ? strtoull(p, NULL, 10) : freq ? 1000000000ull / freq : 0;
	if (getenv("VPROF_TRIGGER_COST") || !upcall_trigger_cost_matters(period_ns, m && *m ? atoi(m) : 25))
		return;
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid_t pid = fork();
	if (pid == 0) {
		char n[16];
		int null = open("/dev/null", O_WRONLY);
		if (null >= 0) {
			dup2(null, 1);
			dup2(null, 2);
		}
		snprintf(n, sizeof(n), "%d", fds[1]);
		fcntl(fds[1], F_SETFD, 0);     /* kept across exec */
		setenv("VPROF_CALIBRATE_FD", n, 1);
		execl("/proc/self/exe", "vprof", "help", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	char buf[64];
	ssize_t got, len = 0;
	while (pid > 0 && len < (ssize_t)sizeof(buf) - 1 &&
	       (got = read(fds[0], buf + len, sizeof(buf) - 1 - (size_t)len)) > 0)
		len += got;
	close(fds[0]);
	if (pid > 0)
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
	buf[len] = 0;
	if (len > 0)
		setenv("VPROF_TRIGGER_COST", buf, 1);
}

/* With cache simulation, libvprof-heap.so (the allocation interposers
 * that name heap blocks by their allocation site) beside libvprof.so;
 * "" otherwise, with VPROF_HEAP=off (bench/heap_sites.sh measures the
 * interposers so), or when it is missing (heap references then stay in
 * their mapping's region, said here). */
static void heap_lib(const char *lib, char *out, size_t cap)
{
	const char *c = getenv("VPROF_CACHESIM"), *h = getenv("VPROF_HEAP");
	*out = 0;
	if (!c || (strcmp(c, "on") && strcmp(c, "1") && strcmp(c, "yes")))
		return;
	if (h && (!strcmp(h, "off") || !strcmp(h, "0") || !strcmp(h, "no")))
		return;
	const char *slash = strrchr(lib, '/');
	int dir = slash ? (int)(slash - lib) : 0;
	snprintf(out, cap, "%.*s%slibvprof-heap.so", dir, lib, slash ? "/" : "");
	if (access(out, R_OK) != 0) {
		fprintf(stderr, "vprof: %s is missing: heap blocks are not named by allocation site\n", out);
		*out = 0;
	}
}

/* libvprof.so beside the vprof binary (build tree), or in ../lib/vprof
 * (installed); $VPROF_LIB overrides. */
static int find_lib(char *out, size_t cap)
{
	const char *e = getenv("VPROF_LIB");
	char self[PATH_MAX - 64];
	if (e && *e) {
		snprintf(out, cap, "%s", e);
		return access(out, R_OK) == 0 ? 0 : -ENOENT;
	}
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return -ENOENT;
	self[n] = 0;
	char *slash = strrchr(self, '/');
	*slash = 0;
	snprintf(out, cap, "%s/libvprof.so", self);
	if (access(out, R_OK) == 0)
		return 0;
	snprintf(out, cap, "%s/../lib/vprof/libvprof.so", self);
	return access(out, R_OK) == 0 ? 0 : -ENOENT;
}

/* Is cmd (a path, or a name found in $PATH) a statically linked ELF
 * executable: no PT_INTERP, so no dynamic loader to honour LD_PRELOAD?
 * Scripts and anything unreadable: no. */
static int is_static_elf(const char *cmd)
{
	char path[PATH_MAX];
	const char *p = cmd;
	if (!strchr(cmd, '/')) {
		const char *dirs = getenv("PATH");
		p = NULL;
		for (const char *d = dirs ? dirs : "/usr/bin:/bin"; d && *d && !p;) {
			const char *e = strchr(d, ':');
			size_t n = e ? (size_t)(e - d) : strlen(d);
			snprintf(path, sizeof(path), "%.*s/%s", (int)n, n ? d : ".", cmd);
			if (access(path, X_OK) == 0)
				p = path;
			d = e ? e + 1 : NULL;
		}
		if (!p)
			return 0;
	}
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	Elf64_Ehdr eh;
	int is_static = 0;
	if (pread(fd, &eh, sizeof(eh), 0) == (ssize_t)sizeof(eh) && !memcmp(eh.e_ident, ELFMAG, SELFMAG) &&
	    eh.e_ident[EI_CLASS] == ELFCLASS64 && (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) &&
	    eh.e_phentsize == sizeof(Elf64_Phdr) && eh.e_phnum > 0 && eh.e_phnum < 256) {
		Elf64_Phdr ph[256];
		size_t len = (size_t)eh.e_phnum * sizeof(Elf64_Phdr);
		if (pread(fd, ph, len, (off_t)eh.e_phoff) == (ssize_t)len) {
			is_static = 1;
			for (int i = 0; i < eh.e_phnum; i++)
				if (ph[i].p_type == PT_INTERP)
					is_static = 0;
		}
	}
	close(fd);
	return is_static;
}

/* The options that take a whole number: checked here against the bounds
 * the library takes (preload/config.c), so a bad one stops before CMD
 * runs; then passed on in the environment. */
static const struct numopt {
	int val;
	const char *name, *env, *unset;
	unsigned long long lo, hi;
} kNum[] = {
	{ 'F', "--freq", "VPROF_FREQ", "VPROF_PERIOD", 1, 1000000000ull / UPCALL_MIN_PERIOD_NS },
	{ 'p', "--period", "VPROF_PERIOD", "VPROF_FREQ", UPCALL_MIN_PERIOD_NS, 1ull << 40 },
	{ 'L', "--interp-len", "VPROF_INTERP_LEN", NULL, 1, 4096 },
	{ 'R', "--interp-reach", "VPROF_INTERP_REACH", NULL, 0, 4096 },
	{ 'K', "--interp-every", "VPROF_INTERP_EVERY", NULL, 1, 1000000 },
	{ 'S', "--skew-skip", "VPROF_SKEW_SKIP", NULL, 0, 64 },
	{ 'C', "--max-cost", "VPROF_MAX_COST", NULL, 0, 100 },
	{ 'D', "--stack-depth", "VPROF_STACK_DEPTH", NULL, 1, SPOOL_STACK_MAX },
	{ 'Q', "--epoch-secs", "VPROF_EPOCH_SECS", NULL, 1, 100000000 },
	{ 'W', "--cachesim-len", "VPROF_CACHESIM_LEN", NULL, 1000, 1000000 },
};

/* A whole number in [lo, hi] for option `opt`, else a usage message (2). */
static int whole(const char *opt, const char *arg, unsigned long long lo, unsigned long long hi,
		 unsigned long long *out)
{
	char msg[200], *end;
	errno = 0;
	unsigned long long v = strtoull(arg, &end, 10);
	if (!*arg || *end || errno || *arg == '-' || v < lo || v > hi) {
		snprintf(msg, sizeof(msg), "%s %s: expected a whole number from %llu to %llu", opt, arg,
			 lo, hi);
		return report_usage("run", msg);
	}
	if (out)
		*out = v;
	return 0;
}

/* The database path must be a directory, or be made one. */
static int db_usable_path(const char *db, int given)
{
	struct stat st;
	char msg[PATH_MAX + 100];
	if (stat(db, &st) == 0 ? S_ISDIR(st.st_mode) : errno != ENOTDIR)
		return 0;
	snprintf(msg, sizeof(msg), "%s%s: not a directory, so not a database", given ? "--db " : "database ",
		 db);
	return report_usage("run", msg);
}

/* A run's id: random, never 0 (the spools' "no run"). */
static uint64_t new_run_id(void)
{
	uint64_t id = 0;
	if (getrandom(&id, sizeof(id), 0) != (ssize_t)sizeof(id))
		id = (uint64_t)getpid() << 32 ^ (uint64_t)time(NULL) ^ (uint64_t)clock();
	return id ? id : 1;
}

/* The summary line: this run's processes (own), the CPU of its process
 * tree, and where its data went. */
static void run_summary(const struct merge_stats *s, double cpu, const char *db, int epoch,
			int fresh, int add, const char *cmd)
{
	char backends[200] = "";
	size_t o = 0;
	for (int b = 1; b < UPCALL_EV_MAX; b++)
		if (s->by_backend[b])
			o += (size_t)snprintf(backends + o, sizeof(backends) - o, "%s%s", o ? "+" : "",
					      upcall_event_name((unsigned)b));
	/* Periods are ns for the clocks; for PMU counters they are events,
	 * which make no rate by themselves. */
	int clocks = !s->by_backend[UPCALL_EV_CYCLES] && !s->by_backend[UPCALL_EV_INSTRUCTIONS];
	double mean_hz = clocks && s->processes && s->period_ns_sum
				 ? 1e9 / ((double)s->period_ns_sum / (double)s->processes)
				 : 0;
	char fell[96] = "";
	if (s->ring_fallbacks)
		snprintf(fell, sizeof(fell), " (ring mode fell back to a signal per sample in %llu thread%s)",
			 (unsigned long long)s->ring_fallbacks, s->ring_fallbacks == 1 ? "" : "s");
	char limited[600] = "", lim[300], sbx[300];
	const char *mc = getenv("VPROF_MAX_COST");
	if (report_selflimit_line(s, mc && *mc ? atoi(mc) : 25, lim, sizeof(lim)))
		snprintf(limited, sizeof(limited), " (%s)", lim);
	if (report_sandbox_line(s, sbx, sizeof(sbx)))
		snprintf(limited + strlen(limited), sizeof(limited) - strlen(limited), " (%s)", sbx);
	char asked[64] = "asked a PMU period";
	if (!s->processes)
		snprintf(asked, sizeof(asked), "nothing sampled");
	else if (mean_hz > 0)
		snprintf(asked, sizeof(asked), "asked %.0f Hz", mean_hz);
	/* Where the data went: a run that found data in the current epoch
	 * starts a new one (its report then holds this run only), unless
	 * asked to add to it. */
	char where[200] = "";
	if (!add && fresh && epoch > 1)
		snprintf(where, sizeof(where), " (a new epoch: this run's data only; earlier runs' stay "
			 "in older epochs, and --add adds to the current one)");
	else if (add && !fresh)
		snprintf(where, sizeof(where), " (added to the data already in it)");
	/* Why a run that was profiled has no sample: it ended within a
	 * period or so of CPU, which a sampler at this rate cannot see. */
	char hint[300] = "";
	if (s->processes && s->merged < 3 && mean_hz > 0 && cpu * mean_hz < 3) {
		const char *base = strrchr(cmd, '/');
		snprintf(hint, sizeof(hint), "; %s used %.1f ms of CPU, %s one sampling period at %.0f Hz "
			 "(%.1f ms): too short to be sampled at this rate (--freq up to %llu samples "
			 "every %.2f ms)", base ? base + 1 : cmd, cpu * 1e3,
			 cpu * mean_hz < 1 ? "less than" : "about", mean_hz, 1e3 / mean_hz,
			 1000000000ull / UPCALL_MIN_PERIOD_NS, UPCALL_MIN_PERIOD_NS / 1e6);
	}
	fprintf(stderr,
		"vprof: %llu samples from %llu process%s (%llu dropped, %llu unknown%s), backend %s%s%s, "
		"%s, achieved %.0f Hz over %.2f CPU-s; database %s epoch %d%s%s\n",
		(unsigned long long)s->merged, (unsigned long long)s->processes,
		s->processes == 1 ? "" : "es", (unsigned long long)s->dropped,
		(unsigned long long)s->unknown, s->corrupt ? ", some spools corrupt" : "",
		o ? backends : "none", fell, limited, asked, cpu > 0 ? (double)s->samples / cpu : 0, cpu,
		db, epoch, where, hint);
}

/* What the run's spools lost for want of room, as one line. */
static void say_nospace(const struct merge_stats *s)
{
	uint64_t n = s->nospace_spools + s->room_failed_spools;
	if (!s->nospace_dropped && !n)
		return;
	char why[200];
	if (s->nospace_spools)
		snprintf(why, sizeof(why), "the database's filesystem had no room for all of the spool%s "
			 "of %llu process%s (%s)", n == 1 ? "" : "s", (unsigned long long)n,
			 n == 1 ? "" : "es", strerror(ENOSPC));
	else
		snprintf(why, sizeof(why), "the system refused pages of the spool%s of %llu process%s",
			 n == 1 ? "" : "s", (unsigned long long)n, n == 1 ? "" : "es");
	fprintf(stderr, "vprof: %s: %s sampling stopped there, %llu sample%s lost; the program ran on "
		"unharmed; free space there, or use another --db\n", why, n == 1 ? "its" : "their",
		(unsigned long long)s->nospace_dropped, s->nospace_dropped == 1 ? "" : "s");
}

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },     { "event", required_argument, 0, 'e' },
		{ "freq", required_argument, 0, 'F' },   { "period", required_argument, 0, 'p' },
		{ "no-merge", no_argument, 0, 'n' },     { "help", no_argument, 0, 'h' },
		{ "values", no_argument, 0, 'V' },       { "interp-len", required_argument, 0, 'L' },
		{ "branches", no_argument, 0, 'B' },
		{ "interp-reach", required_argument, 0, 'R' },
		{ "interp-every", required_argument, 0, 'K' }, { "skew-skip", required_argument, 0, 'S' },
		{ "module", required_argument, 0, 'M' },
		{ "stacks", no_argument, 0, 'T' },       { "stack-depth", required_argument, 0, 'D' },
		{ "no-stacks", no_argument, 0, 'N' },    { "no-python", no_argument, 0, 'P' },
		{ "no-lua", no_argument, 0, 'U' },      { "opcodes", no_argument, 0, 'O' },
		{ "epoch-secs", required_argument, 0, 'Q' },
		{ "max-cost", required_argument, 0, 'C' },
		{ "add", no_argument, 0, 'A' },
		{ "cachesim", no_argument, 0, 'Y' },     { "cache", required_argument, 0, 'Z' },
		{ "cachesim-len", required_argument, 0, 'W' },
		{ "hazards", no_argument, 0, 'H' },
		{ "alloc-fn", required_argument, 0, 'G' },
		{ 0, 0, 0, 0 },
	};
	const char *dbopt = NULL;
	int merge = 1, add = 0, lenopt = 0, c, rc;
	unsigned long long epoch_secs = 0;
	char msg[300];

	/* Everything is checked before anything runs: a bad option or value
	 * is one message naming it, and exit 2, never an unprofiled run. */
	opterr = 0;
	optind = 1;
	for (int li = -1; (c = getopt_long(argc, argv, "+:d:e:F:p:nh", opts, &li)) != -1; li = -1) {
		/* "--freq -- CMD", "--db --add": the value was left out, and
		 * getopt took what follows for it. */
		if (optarg && !strncmp(optarg, "--", 2)) {
			char name[64];
			if (li >= 0)
				snprintf(name, sizeof(name), "--%s", opts[li].name);
			else
				snprintf(name, sizeof(name), "-%c", c);
			snprintf(msg, sizeof(msg), "%s takes a value: got '%s' (is it missing?)", name, optarg);
			return report_usage("run", msg);
		}
		switch (c) {
		case 'd': dbopt = optarg; break;
		case 'e':
			if (strcmp(optarg, "auto") && upcall_event_parse(optarg) < 0)
				return report_bad_event("run", optarg);
			setenv("VPROF_EVENT", optarg, 1);
			break;
		case 'n': merge = 0; break;
		case 'A': add = 1; break;
		case 'V': setenv("VPROF_VALUES", "on", 1); break;
		case 'B': setenv("VPROF_BRANCHES", "on", 1); break;
		case 'Y': setenv("VPROF_CACHESIM", "on", 1); break;
		case 'H': setenv("VPROF_HAZARDS", "on", 1); break;
		case 'G': {
			/* Names of allocation functions, comma-separated in
			 * VPROF_ALLOC_FN (the list's first given replaces one
			 * from the environment). */
			static int given;
			const char *old = given ? getenv("VPROF_ALLOC_FN") : NULL;
			if (!*optarg || strchr(optarg, ',') || strlen(optarg) > 127)
				return report_usage("run", "--alloc-fn takes one function name (at most 127 bytes)");
			size_t n = (old ? strlen(old) + 1 : 0) + strlen(optarg) + 1;
			if (n > 1024)
				return report_usage("run", "--alloc-fn: at most 1023 bytes of names in all");
			char *list = malloc(n);
			snprintf(list, n, "%s%s%s", old ? old : "", old ? "," : "", optarg);
			setenv("VPROF_ALLOC_FN", list, 1);
			free(list);
			given = 1;
			setenv("VPROF_CACHESIM", "on", 1);
			break;
		}
		case 'Z': {
			struct spool_cache_geom g;
			char why[200];
			spool_cache_geom_machine(&g);
			if (spool_cache_geom_parse(optarg, &g, why, sizeof(why)) < 0) {
				snprintf(msg, sizeof(msg), "--cache %s", why);
				return report_usage("run", msg);
			}
			setenv("VPROF_CACHE", optarg, 1);
			setenv("VPROF_CACHESIM", "on", 1);
			break;
		}
		case 'M': {
			/* A path is made absolute (the program may change
			 * directory); a bare name is libvprof.so's to find in its
			 * modules/ folder; what does not load, the library says. */
			char abs[PATH_MAX];
			setenv("VPROF_MODULE", strchr(optarg, '/') && realpath(optarg, abs) ? abs : optarg, 1);
			setenv("VPROF_VALUES", "on", 1);
			break;
		}
		case 'T': setenv("VPROF_STACKS", "on", 1); break;
		case 'N': setenv("VPROF_STACKS", "off", 1); break;
		case 'P': setenv("VPROF_PYTHON", "off", 1); break;
		case 'U': setenv("VPROF_LUA", "off", 1); break;
		case 'O': setenv("VPROF_OPCODES", "on", 1); break;
		case 'F': case 'p': case 'L': case 'R': case 'K': case 'S': case 'C': case 'D': case 'Q': case 'W': {
			const struct numopt *no = kNum;
			unsigned long long v = 0;
			while (no->val != c)
				no++;
			if ((rc = whole(no->name, optarg, no->lo, no->hi, &v)))
				return rc;
			setenv(no->env, optarg, 1);
			if (no->unset)           /* the other of a pair, from the environment */
				unsetenv(no->unset);
			if (c == 'D')
				setenv("VPROF_STACKS", "on", 1);
			if (c == 'Q')
				epoch_secs = v;
			if (c == 'W')
				lenopt = 1;
			break;
		}
		case 'h': fputs(kHelp, stdout); return report_finish_stdout(0);
		case ':':
			snprintf(msg, sizeof(msg), "%s takes a value", argv[optind - 1]);
			return report_usage("run", msg);
		default:
			/* A long option given a value it does not take
			 * (--values=1), an unknown short one, or an unknown long
			 * one (with the nearest name). */
			for (const struct option *o = opts; optopt && o->name; o++)
				if (o->val == optopt && o->has_arg == no_argument &&
				    !strncmp(argv[optind - 1], "--", 2)) {
					snprintf(msg, sizeof(msg), "--%s takes no value (%s)", o->name,
						 argv[optind - 1]);
					return report_usage("run", msg);
				}
			if (optopt) {
				snprintf(msg, sizeof(msg), "unknown option -%c", optopt);
				return report_usage("run", msg);
			}
			return report_bad_option("run", argv[optind - 1], opts);
		}
	}
	/* --cachesim-len alone means cache simulation. */
	if (lenopt && !getenv("VPROF_HAZARDS"))
		setenv("VPROF_CACHESIM", "on", 1);
	if (optind >= argc)
		return report_usage("run", "no command given (vprof run -- CMD ARGS)");
	const char *db = report_db_path(dbopt);
	if ((rc = db_usable_path(db, dbopt != NULL)))
		return rc;
	if (is_static_elf(argv[optind]))
		fprintf(stderr, "vprof: %s is statically linked: there is no dynamic loader to load libvprof.so "
			"into it (LD_PRELOAD), so it runs unprofiled; dynamically linked programs it starts "
			"are profiled\n", argv[optind]);

	char lib[PATH_MAX], dbabs[PATH_MAX], why[300];
	struct merge_db mdb;
	int profiled = 0, epoch = 0, fresh = 0;
	uint64_t run_id = new_run_id();

	if (find_lib(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "vprof: cannot find libvprof.so (set VPROF_LIB); running %s unprofiled\n",
			argv[optind]);
	} else if (merge_db_open(&mdb, db, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof: cannot use database %s: %s; running %s unprofiled\n", db, why,
			argv[optind]);
	} else if ((epoch = merge_db_run_begin(&mdb, run_id, add, &fresh)) < 0) {
		/* The database takes no write (a full disk): the spools could
		 * not be made nor merged either. */
		fprintf(stderr, "vprof: cannot write to database %s: %s; running %s unprofiled\n", db,
			strerror(-epoch), argv[optind]);
		merge_db_close(&mdb);
	} else {
		profiled = 1;
		/* Absolute: the program and its children may change directory. */
		if (!realpath(db, dbabs))
			snprintf(dbabs, sizeof(dbabs), "%s", db);
		setenv("VPROF_DB", dbabs, 1);
		char runenv[64];
		snprintf(runenv, sizeof(runenv), "%016llx:%d", (unsigned long long)run_id, epoch);
		setenv("VPROF_RUN", runenv, 1);
		const char *old = getenv("LD_PRELOAD");
		char heap[PATH_MAX];
		heap_lib(lib, heap, sizeof(heap));
		char *pre = malloc(strlen(lib) + strlen(heap) + (old ? strlen(old) : 0) + 3);
		sprintf(pre, "%s%s%s%s%s", lib, *heap ? ":" : "", heap, old && *old ? ":" : "", old && *old ? old : "");
		setenv("LD_PRELOAD", pre, 1);
		free(pre);
		unsetenv("VPROF_DISABLED");
		measure_trigger_cost();
		/* AddressSanitizer refuses to run with any library preloaded
		 * before its runtime unless told this is fine; its own advice. */
		const char *asan = getenv("ASAN_OPTIONS");
		if (!asan || !strstr(asan, "verify_asan_link_order")) {
			char *o = malloc((asan ? strlen(asan) : 0) + 40);
			sprintf(o, "%s%sverify_asan_link_order=0", asan ? asan : "", asan && *asan ? ":" : "");
			setenv("ASAN_OPTIONS", o, 1);
			free(o);
		}
	}

	/* Like system(): while the child runs, the terminal's ^C and ^\ are its
	 * business; we learn of them from its status. */
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	/* Continuous mode: woken by SIGCHLD (blocked, taken by sigtimedwait)
	 * or every epoch to merge what the processes handed over. */
	int follow = profiled && merge && epoch_secs > 0;
	sigset_t chld, omask;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	if (follow)
		sigprocmask(SIG_BLOCK, &chld, &omask);
	pid_t pid = fork();
	if (pid < 0) {
		fprintf(stderr, "vprof: fork: %s\n", strerror(errno));
		return 1;
	}
	if (pid == 0) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		if (follow)
			sigprocmask(SIG_SETMASK, &omask, NULL);
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "vprof: cannot run %s: %s\n", argv[optind], strerror(errno));
		_exit(errno == ENOENT ? 127 : 126);
	}
	int status = 0, merge_rc = 0;
	struct rusage ru;
	struct merge_result res;
	memset(&res, 0, sizeof(res));
	if (follow) {
		for (;;) {
			pid_t w = wait4(pid, &status, WNOHANG, &ru);
			if (w == pid || (w < 0 && errno != EINTR))
				break;
			struct timespec ts = { (time_t)epoch_secs, 0 };
			if (sigtimedwait(&chld, NULL, &ts) == SIGCHLD)
				continue;
			struct merge_result r;
			int mrc = merge_db_merge(&mdb, &r, stderr);
			if (mrc < 0)
				merge_rc = mrc;
		}
		sigprocmask(SIG_SETMASK, &omask, NULL);
	} else {
		while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
			;
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);

	if (profiled && merge) {
		int mrc = merge_db_merge_run(&mdb, run_id, &res, stderr);
		if (mrc == 0 && merge_rc < 0)
			mrc = merge_rc;
		/* This run's processes, whichever merge took them (another
		 * run's, a `merge --follow` beside it): its ledger. */
		struct merge_stats own;
		merge_db_run_end(&mdb, epoch, run_id, &own);
		double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		if (mrc < 0) {
			/* What this run's spools hold, read but not merged. */
			merge_stats_add(&own, &res.run);
			fprintf(stderr, "vprof: cannot merge into %s: %s; the spools stay in %s/spool "
				"(%llu samples of %llu process%s of this run): `vprof merge --db %s` "
				"merges them once that is mended\n", db, strerror(-mrc), db,
				(unsigned long long)own.merged, (unsigned long long)own.processes,
				own.processes == 1 ? "" : "es", db);
			say_nospace(&own);
		} else {
			run_summary(&own, cpu, db, epoch, fresh, add, argv[optind]);
			say_nospace(&own);
		}
	}
	if (profiled)
		merge_db_close(&mdb);
	return report_exit_like(status);
}
