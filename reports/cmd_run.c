/*
 * vprof run [options] -- CMD [ARGS]: profile CMD and every process it
 * starts (they inherit LD_PRELOAD and VPROF_*), wait for it, merge the
 * spools, print a summary on stderr, and exit as CMD did (same status, or
 * killed by the same signal).
 *
 * If the database cannot be used, CMD still runs, unprofiled, after one
 * message: profiling must never cost the user their command.
 */
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void help(void)
{
	printf("usage: vprof run [--db DIR] [--event E] [--freq HZ | --period N] [--values [--interp-len N]\n"
	       "                 [--interp-every K] [--skew-skip S]] [--module M]\n"
	       "                 [--stacks [--stack-depth N]] [--epoch-secs S] [--no-merge] -- CMD [ARGS]\n"
	       "  --event E         auto (default), cycles, instructions, task-clock, cpu-timer, itimer\n"
	       "  --freq HZ         mean samples per CPU-second (default 250, at most 20000;\n"
	       "                    lowered where that would cost more than --max-cost)\n"
	       "  --period N        mean period: ns of CPU time for clocks, events for counters\n"
	       "  --values          value sampling: interpret after some samples, keep value hotlists\n"
	       "                    (VPROF_VALUES=on); value profiles can hold data such as secrets\n"
	       "  --interp-len N    instructions interpreted per value sample (default 4)\n"
	       "  --interp-every K  interpret at every K-th sample of a thread (default 2)\n"
	       "  --skew-skip S     first run a random 0..S instructions unobserved (default 0)\n"
	       "  --module M        customization module (implies --values): a path to a .so\n"
	       "                    built against vprof-module.h, or a shipped one by name:\n"
	       "                    values, latency, indirect, stride (docs/modules.md)\n"
	       "  --stacks          record the call stack at each sample (VPROF_STACKS=on):\n"
	       "                    inclusive time, --callers/--callees, folded and pprof stacks;\n"
	       "                    a signal per sample (no ring), unwound by vprof's own\n"
	       "                    .eh_frame unwinder (VPROF_STACK_METHOD=cfi; fp: frame\n"
	       "                    pointers, needs -fno-omit-frame-pointer; unwind, cursor:\n"
	       "                    libunwind)\n"
	       "  --stack-depth N   frames kept per stack, 1 to 64 (default 32; implies --stacks)\n"
	       "  --epoch-secs S    continuous mode: every S seconds each process hands its spool\n"
	       "                    over and starts a new one (VPROF_EPOCH_SECS), and vprof run\n"
	       "                    merges finished spools while CMD runs: spools stay bounded\n"
	       "  --max-cost PCT    bound vprof's own cost (handler, drains and the kernel's work\n"
	       "                    on each sample) to PCT%% of each thread's CPU by lowering\n"
	       "                    that thread's rate (default 25; 0 off)\n"
	       "  --no-merge        leave the spools for a later `vprof merge`\n");
}

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

int cmd_run(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },     { "event", required_argument, 0, 'e' },
		{ "freq", required_argument, 0, 'F' },   { "period", required_argument, 0, 'p' },
		{ "no-merge", no_argument, 0, 'n' },     { "help", no_argument, 0, 'h' },
		{ "values", no_argument, 0, 'V' },       { "interp-len", required_argument, 0, 'L' },
		{ "interp-every", required_argument, 0, 'K' }, { "skew-skip", required_argument, 0, 'S' },
		{ "module", required_argument, 0, 'M' },
		{ "stacks", no_argument, 0, 'T' },       { "stack-depth", required_argument, 0, 'D' },
		{ "epoch-secs", required_argument, 0, 'Q' },
		{ "max-cost", required_argument, 0, 'C' },
		{ 0, 0, 0, 0 },
	};
	const char *dbopt = NULL;
	int merge = 1, c;
	long epoch_secs = 0;

	while ((c = getopt_long(argc, argv, "+d:e:F:p:nh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbopt = optarg; break;
		case 'e': setenv("VPROF_EVENT", optarg, 1); break;
		case 'F': setenv("VPROF_FREQ", optarg, 1); break;
		case 'p': setenv("VPROF_PERIOD", optarg, 1); break;
		case 'n': merge = 0; break;
		case 'V': setenv("VPROF_VALUES", "on", 1); break;
		case 'L': setenv("VPROF_INTERP_LEN", optarg, 1); break;
		case 'K': setenv("VPROF_INTERP_EVERY", optarg, 1); break;
		case 'S': setenv("VPROF_SKEW_SKIP", optarg, 1); break;
		case 'C': setenv("VPROF_MAX_COST", optarg, 1); break;
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
		case 'D': {
			/* Checked here too, so a bad depth stops before CMD runs. */
			char *end;
			long d = strtol(optarg, &end, 10);
			if (!*optarg || *end || d < 1 || d > MERGE_STACK_MAX)
				return report_usage("run", "--stack-depth takes a number from 1 to 64");
			setenv("VPROF_STACK_DEPTH", optarg, 1);
			setenv("VPROF_STACKS", "on", 1);
			break;
		}
		case 'Q': {
			char *end;
			epoch_secs = strtol(optarg, &end, 10);
			if (*end || !*optarg || epoch_secs < 1 || epoch_secs > 100000000)
				return report_usage("run", "--epoch-secs: expected whole seconds, at least 1");
			setenv("VPROF_EPOCH_SECS", optarg, 1);
			break;
		}
		case 'h': help(); return 0;
		default: return report_usage("run", "bad option");
		}
	}
	if (optind >= argc)
		return report_usage("run", "no command given (vprof run -- CMD ARGS)");
	if (is_static_elf(argv[optind]))
		fprintf(stderr, "vprof: %s is statically linked: there is no dynamic loader to load libvprof.so "
			"into it (LD_PRELOAD), so it runs unprofiled; dynamically linked programs it starts "
			"are profiled\n", argv[optind]);

	char lib[PATH_MAX], dbabs[PATH_MAX], why[300];
	const char *db = report_db_path(dbopt);
	struct merge_db mdb;
	int profiled = 0;

	if (find_lib(lib, sizeof(lib)) < 0) {
		fprintf(stderr, "vprof: cannot find libvprof.so (set VPROF_LIB); running %s unprofiled\n",
			argv[optind]);
	} else if (merge_db_open(&mdb, db, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof: cannot use database %s: %s; running %s unprofiled\n", db, why,
			argv[optind]);
	} else {
		profiled = 1;
		/* Absolute: the program and its children may change directory. */
		if (!realpath(db, dbabs))
			snprintf(dbabs, sizeof(dbabs), "%s", db);
		setenv("VPROF_DB", dbabs, 1);
		const char *old = getenv("LD_PRELOAD");
		char *pre = malloc(strlen(lib) + (old ? strlen(old) : 0) + 2);
		sprintf(pre, "%s%s%s", lib, old && *old ? ":" : "", old && *old ? old : "");
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
			struct timespec ts = { epoch_secs, 0 };
			if (sigtimedwait(&chld, NULL, &ts) == SIGCHLD)
				continue;
			struct merge_result r;
			int rc = merge_db_merge(&mdb, &r, stderr);
			if (rc < 0)
				merge_rc = rc;
			else {
				merge_stats_add(&res.stats, &r.stats);
				res.spools += r.spools;
			}
		}
		sigprocmask(SIG_SETMASK, &omask, NULL);
	} else {
		while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR)
			;
	}
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);

	if (profiled && merge) {
		struct merge_result last;
		int rc = merge_db_merge(&mdb, &last, stderr);
		merge_stats_add(&res.stats, &last.stats);
		res.spools += last.spools;
		if (rc == 0 && merge_rc < 0)
			rc = merge_rc;
		double cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
			     (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
		const struct merge_stats *s = &res.stats;
		if (rc < 0) {
			fprintf(stderr, "vprof: merge failed: %s (spools kept in %s/spool)\n",
				strerror(-rc), db);
		} else {
			char backends[200] = "";
			size_t o = 0;
			for (int b = 1; b < MERGE_EV_MAX; b++)
				if (s->by_backend[b])
					o += (size_t)snprintf(backends + o, sizeof(backends) - o, "%s%s",
							      o ? "+" : "", merge_event_name((unsigned)b));
			/* Periods are ns for the clocks; for PMU counters they
			 * are events, which make no rate by themselves. */
			int clocks = !s->by_backend[MERGE_EV_CYCLES] &&
				     !s->by_backend[MERGE_EV_INSTRUCTIONS];
			double mean_hz = clocks && s->processes && s->period_ns_sum
						 ? 1e9 / ((double)s->period_ns_sum / (double)s->processes)
						 : 0;
			char fell[96] = "";
			if (s->ring_fallbacks)
				snprintf(fell, sizeof(fell),
					 " (ring mode fell back to a signal per sample in %llu thread%s)",
					 (unsigned long long)s->ring_fallbacks,
					 s->ring_fallbacks == 1 ? "" : "s");
			char limited[600] = "", lim[300], sbx[300];
			const char *mc = getenv("VPROF_MAX_COST");
			if (report_selflimit_line(s, mc && *mc ? atoi(mc) : 25, lim, sizeof(lim)))
				snprintf(limited, sizeof(limited), " (%s)", lim);
			if (report_sandbox_line(s, sbx, sizeof(sbx)))
				snprintf(limited + strlen(limited), sizeof(limited) - strlen(limited),
					 " (%s)", sbx);
			char asked[64] = "asked a PMU period";
			if (!s->processes)
				snprintf(asked, sizeof(asked), "nothing sampled");
			else if (mean_hz > 0)
				snprintf(asked, sizeof(asked), "asked %.0f Hz", mean_hz);
			fprintf(stderr,
				"vprof: %llu samples from %llu process%s (%llu dropped, %llu unknown"
				"%s), backend %s%s%s, %s, achieved %.0f Hz over %.2f CPU-s; "
				"database %s epoch %d\n",
				(unsigned long long)s->merged, (unsigned long long)s->processes,
				s->processes == 1 ? "" : "es", (unsigned long long)s->dropped,
				(unsigned long long)s->unknown,
				s->corrupt ? ", some spools corrupt" : "",
				o ? backends : "none", fell, limited, asked, cpu > 0 ? (double)s->samples / cpu : 0, cpu,
				db, merge_db_epoch(&mdb));
		}
	}
	if (profiled)
		merge_db_close(&mdb);
	return report_exit_like(status);
}
