/*
 * vprof merge [--db DIR] [--json]: fold every finished spool into the
 * current epoch. Safe to run while profiled programs are running (their
 * spools are skipped) and concurrently with other merges.
 */
#include "reports/report.h"
#include "merge/profile.h"

#include <string.h>

static const char kHelp[] =
	"usage: vprof merge [--db DIR] [--json]\n"
	"  fold finished spools (processes that exited or were killed) into the\n"
	"  database's current epoch; corrupt spools are kept as NAME.corrupt\n";

int cmd_merge(int argc, char **argv)
{
	static const struct report_cmd cmd = {
		.name = "merge", .help = kHelp, .common = REPORT_OPT_DB | REPORT_OPT_JSON,
	};
	struct report_opts o = { 0 };
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	int json = o.json;
	if (o.next < argc)
		return report_usage("merge", "takes no operands");
	const char *db = o.db;
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
	if (json)
		printf("{\"db\":\"%s\",\"epoch\":%d,\"spools\":%llu,\"busy\":%d,\"corrupt\":%llu,"
		       "\"samples\":%llu,\"merged\":%llu,\"dropped\":%llu,\"profiles_written\":%d}\n",
		       db, epoch, (unsigned long long)r.stats.processes, r.spools_busy,
		       (unsigned long long)r.stats.corrupt, (unsigned long long)r.stats.samples,
		       (unsigned long long)r.stats.merged, (unsigned long long)r.stats.dropped,
		       r.profiles_written);
	else
		printf("merged %llu spool%s (%llu samples, %llu dropped) into %s epoch %d; "
		       "%d still running, %llu corrupt\n",
		       (unsigned long long)r.stats.processes, r.stats.processes == 1 ? "" : "s",
		       (unsigned long long)r.stats.merged, (unsigned long long)r.stats.dropped, db,
		       epoch, r.spools_busy, (unsigned long long)r.stats.corrupt);
	return report_finish_stdout(r.stats.corrupt ? 1 : 0);
}
