/*
 * Co-simulation results for the vprof command: launching a command with
 * VPROF_VERIFY on (a forked `vprof run`, so cmd_run stays as it is and
 * this process outlives CMD to print its report), and summing the
 * per-process result files of one launch (files carry the launch's tag).
 */
#include "reports/builtin.h"
#include "reports/verify_results.h"
#include "reports/report.h"
#include "interp/interp.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int report_verify_launch(const char *db, const char *freq, char **argv, char *tag, size_t taglen)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	snprintf(tag, taglen, "v%ld-%ld%06ld", (long)getpid(), (long)ts.tv_sec,
		 (long)(ts.tv_nsec / 1000));
	setenv("VPROF_VERIFY", "1", 1);
	setenv("VPROF_VERIFY_TAG", tag, 1);
	/* Co-simulation costs what it costs, at the rate asked: the bound on
	 * vprof's own cost (preload/selflimit.c) would lower it to under a
	 * fifth at 5 kHz. Unless the user set one. */
	setenv("VPROF_MAX_COST", "0", 0);

	int n = 0;
	while (argv[n])
		n++;
	char **a = calloc((size_t)n + 8, sizeof *a);
	int k = 0;
	a[k++] = "run";
	a[k++] = "--db";
	a[k++] = (char *)db;
	if (freq) {
		a[k++] = "--freq";
		a[k++] = (char *)freq;
	}
	a[k++] = "--";
	for (int i = 0; i < n; i++)
		a[k++] = argv[i];
	a[k] = NULL;

	/* As vprof run does: ^C and ^\ are CMD's business while it runs. */
	struct sigaction ign = { .sa_handler = SIG_IGN }, oint, oquit;
	sigaction(SIGINT, &ign, &oint);
	sigaction(SIGQUIT, &ign, &oquit);
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		free(a);
		return -1;
	}
	if (pid == 0) {
		sigaction(SIGINT, &oint, NULL);
		sigaction(SIGQUIT, &oquit, NULL);
		optind = 0;     /* cmd_run parses its own options afresh */
		int rc = cmd_run(k, a);
		fflush(NULL);
		_exit(rc);
	}
	free(a);
	int status = 0;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGQUIT, &oquit, NULL);
	return status;
}

static void add_file(struct report_verify_sum *s, const struct preload_verify_file *f)
{
	struct preload_verify_file *t = &s->tot;
	const uint64_t *src = &f->samples;
	uint64_t *dst = &t->samples;
	size_t nctr = (size_t)((const uint64_t *)&f->reserved[0] - src);
	for (size_t i = 0; i < nctr; i++)
		dst[i] += src[i];
	for (int r = 0; r < VERIFY_NSTOP; r++)
		for (int m = 0; m < VERIFY_NMNEM; m++)
			t->stop_mnem[r][m] += f->stop_mnem[r][m];
	if (f->interp_len > s->interp_len)
		s->interp_len = f->interp_len;
	size_t nr = f->nrecords < VERIFY_NRECORDS ? (size_t)f->nrecords : VERIFY_NRECORDS;
	if (nr) {
		s->recs = realloc(s->recs, (s->nrecs + nr) * sizeof *s->recs);
		for (size_t i = 0; i < nr; i++) {
			struct report_verify_rec_ex *x = &s->recs[s->nrecs++];
			x->r = f->rec[i];
			x->pid = f->pid;
			snprintf(x->exe, sizeof x->exe, "%s", f->exe);
		}
	}
}

int report_verify_collect(const char *db, const char *tag, struct report_verify_sum *s)
{
	char dir[4096], path[8192], pre[200];
	memset(s, 0, sizeof *s);
	snprintf(dir, sizeof dir, "%s/verify", db);
	snprintf(pre, sizeof pre, "%s.", tag);
	DIR *d = opendir(dir);
	if (!d)
		return -errno;
	struct dirent *e;
	struct preload_verify_file *f = malloc(sizeof *f);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (strncmp(e->d_name, pre, strlen(pre)) || l < 4 || strcmp(e->d_name + l - 4, ".vfy"))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ssize_t n = fd >= 0 ? read(fd, f, sizeof *f) : -1;
		if (fd >= 0)
			close(fd);
		if (n != (ssize_t)sizeof *f || f->magic != VERIFY_MAGIC || f->version != VERIFY_VERSION ||
		    f->hdr_size != offsetof(struct preload_verify_file, stop_mnem) ||
		    f->rec_size != sizeof(struct preload_verify_record)) {
			s->bad_files++;
			continue;
		}
		s->files++;
		add_file(s, f);
	}
	free(f);
	closedir(d);
	return 0;
}

void report_verify_sum_free(struct report_verify_sum *s)
{
	free(s->recs);
	s->recs = NULL;
}

double report_verify_coverage(const struct preload_verify_file *t)
{
	double d = (double)t->interpreted + (double)t->unhandled;
	return d > 0 ? (double)t->interpreted / d : 1.0;
}

double report_verify_first_coverage(const struct preload_verify_file *t)
{
	double d = (double)t->first_handled + (double)t->first_unhandled;
	return d > 0 ? (double)t->first_handled / d : 1.0;
}

static int unhandled(unsigned stop)
{
	return stop == INTERP_STOP_UNSUPPORTED || stop == INTERP_STOP_DECODE ||
	       stop == INTERP_STOP_BADSTATE;
}

size_t report_verify_top_unhandled(const struct preload_verify_file *t, struct report_verify_top *out, size_t n)
{
	size_t k = 0;
	for (;;) {
		struct report_verify_top best = { 0, 0, 0 };
		for (unsigned r = 0; r < VERIFY_NSTOP; r++) {
			if (!unhandled(r))
				continue;
			for (unsigned m = 0; m < VERIFY_NMNEM; m++) {
				uint64_t c = t->stop_mnem[r][m];
				if (c <= best.count)
					continue;
				int seen = 0;
				for (size_t i = 0; i < k; i++)
					seen |= out[i].mnemonic == m && out[i].stop == r;
				if (!seen)
					best = (struct report_verify_top){ m, r, c };
			}
		}
		if (!best.count || k == n)
			return k;
		out[k++] = best;
	}
}

static const char *mnem_name(unsigned m)
{
	const char *s = m ? ZydisMnemonicGetString((ZydisMnemonic)m) : NULL;
	return s ? s : "(undecoded)";
}

void report_verify_print_stops(FILE *f, const struct preload_verify_file *t)
{
	fprintf(f, "  samples: %llu, %llu not run (%llu in the half sampling period after a run)\n",
		(unsigned long long)t->samples, (unsigned long long)(t->skipped + t->cooldown),
		(unsigned long long)t->cooldown);
	fprintf(f, "  runs ended by: ");
	int first = 1;
	for (int r = 1; r < VERIFY_NSTOP; r++) {
		if (!t->stop[r])
			continue;
		fprintf(f, "%s%s %llu", first ? "" : ", ",
			r == INTERP_STOP_OBSERVER ? "cut" : interp_stop_name(r),
			(unsigned long long)t->stop[r]);
		first = 0;
	}
	fprintf(f, "%s (cut: %llu at rdtsc/cpuid/popf-like, %llu at long REP, %llu in libvprof.so, "
		"%llu store log full; "
		"%llu stepping lost; %llu differences from memory changed under the run by other threads or the kernel)\n", first ? "none" : "", (unsigned long long)t->cut_nondet,
		(unsigned long long)t->cut_rep, (unsigned long long)t->cut_self,
		(unsigned long long)t->cut_overflow, (unsigned long long)t->lost, (unsigned long long)t->raced);
	if (t->traps_unflagged)
		fprintf(f, "  %llu step traps came without the single-step bit (TRAP_BRKPT; a hypervisor's): "
			"taken as steps\n", (unsigned long long)t->traps_unflagged);
}

void report_verify_json_stops(FILE *f, const struct preload_verify_file *t)
{
	fprintf(f, "\"stops\": {");
	for (int r = 1; r < VERIFY_NSTOP; r++)
		fprintf(f, "%s\"%s\": %llu", r > 1 ? ", " : "",
			r == INTERP_STOP_OBSERVER ? "cut" : interp_stop_name(r),
			(unsigned long long)t->stop[r]);
	fprintf(f, "}, \"cut_nondet\": %llu, \"cut_rep\": %llu, \"cut_self\": %llu, \"cut_overflow\": %llu, \"lost\": %llu, \"raced\": %llu, \"cooldown\": %llu, \"traps_unflagged\": %llu",
		(unsigned long long)t->cut_nondet, (unsigned long long)t->cut_rep,
		(unsigned long long)t->cut_self, (unsigned long long)t->cut_overflow, (unsigned long long)t->lost,
		(unsigned long long)t->raced, (unsigned long long)t->cooldown, (unsigned long long)t->traps_unflagged);
}

void report_verify_json_top(FILE *f, const struct report_verify_top *top, size_t n)
{
	fprintf(f, "\"top_unhandled\": [");
	for (size_t i = 0; i < n; i++) {
		fprintf(f, "%s{\"mnemonic\": ", i ? ", " : "");
		report_json_str(f, mnem_name(top[i].mnemonic));
		fprintf(f, ", \"reason\": \"%s\", \"count\": %llu}", interp_stop_name((int)top[i].stop),
			(unsigned long long)top[i].count);
	}
	fprintf(f, "]");
}

const char *report_verify_mnem_name(unsigned m)
{
	return mnem_name(m);
}

int report_verify_parse_opts(const char *name, int argc, char **argv, void (*help)(void),
			     struct report_verify_opts *o)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },   { "len", required_argument, 0, 'l' },
		{ "freq", required_argument, 0, 'F' }, { "json", no_argument, 0, 'j' },
		{ "output", required_argument, 0, 'o' }, { "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	const char *len = "64";
	char usage[96];
	int c;

	memset(o, 0, sizeof(*o));
	o->freq = "1000";
	while ((c = getopt_long(argc, argv, "+d:l:F:jo:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->db = optarg; break;
		case 'l': len = optarg; break;
		case 'F': o->freq = optarg; break;
		case 'j': o->json = 1; break;
		case 'o': o->out = optarg; break;
		case 'h': help(); return 0;
		default: return report_usage(name, "bad option");
		}
	}
	if (optind >= argc) {
		snprintf(usage, sizeof(usage), "no command given (vprof %s -- CMD ARGS)", name);
		return report_usage(name, usage);
	}
	char *end;
	long l = strtol(len, &end, 10);
	if (*end || l < 1 || l > VERIFY_MAX_LEN)
		return report_usage(name, "--len: expected 1..256");
	setenv("VPROF_INTERP_LEN", len, 1);
	o->cmd = argv + optind;
	return -1;
}
