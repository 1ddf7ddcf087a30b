/*
 * vprof merge [--db DIR] [--json]: fold every finished spool into the
 * current epoch. Safe to run while profiled programs are running (their
 * spools are skipped) and concurrently with other merges.
 *
 * --follow: keep doing so until SIGINT/SIGTERM (reports/merge_follow.c);
 * --from SRC...: fold other databases' profiles in (reports/merge_from.c).
 */
#include "reports/builtin.h"
#include "reports/report.h"
#include "reports/merge_cmd.h"
#include "merge/profile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char kHelp[] =
	"usage: vprof merge [--db DIR] [--json]\n"
	"       vprof merge --follow [--db DIR] [--interval SECS] [--epoch-every SECS]\n"
	"                   [--keep-epochs N] [--json]\n"
	"       vprof merge --from SRC [SRC...] [--db DIR] [--epoch N|all] [--json]\n"
	"  fold finished spools (processes that exited or were killed, spools that\n"
	"  processes under VPROF_EPOCH_SECS rotated out) into the epoch their vprof run\n"
	"  chose, else the current one; corrupt spools are kept as NAME.corrupt\n"
	"  --follow           run until SIGINT/SIGTERM, merging every --interval seconds\n"
	"                     (default 2); the merge under way finishes, then exit 0\n"
	"  --epoch-every S    with --follow: start a new epoch every S seconds\n"
	"  --keep-epochs N    with --follow: keep the newest N epochs, delete older ones\n"
	"  --from SRC...      fold the profiles of databases SRC (their current epoch, or\n"
	"                     --epoch N or all) into this database's current epoch; a\n"
	"                     source that is not a database or holds a corrupt profile\n"
	"                     stops it with nothing written\n";

struct mopts {
	int follow;
	struct report_merge_follow_opts f;
	const char *from;
	int set_interval, set_every, set_keep;
};

static int num(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (!*s || *end || !(v >= lo && v <= hi))
		return -1;
	*out = v;
	return 0;
}

static int on_extra(int ch, const char *arg, void *ctx)
{
	struct mopts *m = ctx;
	double v;
	switch (ch) {
	case 'f':
		m->follow = 1;
		return 0;
	case 'i':
		if (num(arg, 0.01, 86400, &v) < 0)
			return report_usage("merge", "--interval: expected seconds, 0.01 to 86400");
		m->f.interval = v;
		m->set_interval = 1;
		return 0;
	case 'w':
		if (num(arg, 1, 1e8, &v) < 0)
			return report_usage("merge", "--epoch-every: expected seconds, at least 1");
		m->f.epoch_every = v;
		m->set_every = 1;
		return 0;
	case 'k':
		if (num(arg, 1, 1000000, &v) < 0 || v != (int)v)
			return report_usage("merge", "--keep-epochs: expected a count, at least 1");
		m->f.keep_epochs = (int)v;
		m->set_keep = 1;
		return 0;
	case 'F':
		m->from = arg;
		return 0;
	}
	return report_usage("merge", "bad option");
}

int cmd_merge(int argc, char **argv)
{
	static const struct option extra[] = {
		{ "follow", no_argument, 0, 'f' },
		{ "interval", required_argument, 0, 'i' },
		{ "epoch-every", required_argument, 0, 'w' },
		{ "keep-epochs", required_argument, 0, 'k' },
		{ "from", required_argument, 0, 'F' },
		{ 0, 0, 0, 0 },
	};
	static const struct report_cmd cmd = {
		.name = "merge", .help = kHelp,
		.common = REPORT_OPT_DB | REPORT_OPT_JSON | REPORT_OPT_EPOCH,
		.extra = extra, .extra_short = "fi:w:k:F:", .on_extra = on_extra,
	};
	struct report_opts o = { 0 };
	struct mopts m = { .f = { .interval = 2 } };
	int rc = report_opts_parse(&cmd, argc, argv, &o, &m);
	if (rc >= 0)
		return rc;
	int json = o.json;
	const char *db = o.db;
	if (m.from && m.follow)
		return report_usage("merge", "--from and --follow do not go together");
	if (!m.follow && (m.set_interval || m.set_every || m.set_keep))
		return report_usage("merge", "--interval, --epoch-every and --keep-epochs go with --follow");
	if (o.epoch && !m.from)
		return report_usage("merge", "--epoch chooses the sources' epoch: it goes with --from");
	if (m.from) {
		/* --from SRC, then any further sources as operands. */
		int n = 1 + (argc - o.next);
		char **src = malloc((size_t)n * sizeof(*src));
		if (!src)
			return 1;
		src[0] = (char *)m.from;
		for (int i = o.next; i < argc; i++)
			src[1 + i - o.next] = argv[i];
		rc = report_merge_from(db, src, n, o.epoch, json);
		free(src);
		return report_finish_stdout(rc);
	}
	if (o.next < argc)
		return report_usage("merge", "takes no operands");
	if (m.follow) {
		m.f.json = json;
		return report_finish_stdout(report_merge_follow(db, &m.f));
	}
	struct merge_db mdb;
	struct merge_result r;
	char why[300];
	if (merge_db_open(&mdb, db, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof merge: database %s: %s\n", db, why);
		return 1;
	}
	rc = merge_db_merge(&mdb, &r, stderr);
	int epoch = merge_db_epoch(&mdb);
	merge_db_close(&mdb);
	if (rc < 0) {
		fprintf(stderr, "vprof merge: %s: %s (spools kept)\n", db, strerror(-rc));
		return 1;
	}
	char nospace[120] = "";
	if (r.stats.nospace_dropped)
		snprintf(nospace, sizeof(nospace), ", %llu of them for want of room on the filesystem",
			 (unsigned long long)r.stats.nospace_dropped);
	if (json) {
		printf("{\"db\":");
		report_json_str(stdout, db);
		printf(",\"epoch\":%d,\"spools\":%d,\"processes\":%llu,\"busy\":%d,"
		       "\"corrupt\":%llu,\"samples\":%llu,\"merged\":%llu,\"dropped\":%llu,"
		       "\"nospace_dropped\":%llu,\"profiles_written\":%d}\n",
		       epoch, r.spools, (unsigned long long)r.stats.processes, r.spools_busy,
		       (unsigned long long)r.stats.corrupt, (unsigned long long)r.stats.samples,
		       (unsigned long long)r.stats.merged, (unsigned long long)r.stats.dropped,
		       (unsigned long long)r.stats.nospace_dropped, r.profiles_written);
	} else {
		/* A run's spools go to its epoch: with several epochs written,
		 * the current one is only where the others went. */
		printf("merged %d spool%s (%llu samples, %llu dropped%s) into %s epoch %d%s; "
		       "%d still running, %llu corrupt\n",
		       r.spools, r.spools == 1 ? "" : "s", (unsigned long long)r.stats.merged,
		       (unsigned long long)r.stats.dropped, nospace, db, epoch,
		       r.epochs > 1 ? " and others (their runs' epochs)" : "", r.spools_busy,
		       (unsigned long long)r.stats.corrupt);
	}
	return report_finish_stdout(r.stats.corrupt ? 1 : 0);
}
