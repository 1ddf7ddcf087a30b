/*
 * vprof merge [--db DIR] [--json]: fold every finished spool into the
 * current epoch. Safe to run while profiled programs are running (their
 * spools are skipped) and concurrently with other merges.
 */
#include "reports/report.h"
#include "merge/profile.h"

#include <getopt.h>
#include <string.h>

int cmd_merge(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' }, { "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' },     { 0, 0, 0, 0 },
	};
	const char *dbopt = NULL;
	int json = 0, c;
	while ((c = getopt_long(argc, argv, "d:jh", opts, NULL)) != -1) {
		switch (c) {
		case 'd': dbopt = optarg; break;
		case 'j': json = 1; break;
		case 'h': printf("usage: vprof merge [--db DIR] [--json]\n"); return 0;
		default: return report_usage("merge", "bad option");
		}
	}
	const char *db = report_db_path(dbopt);
	struct merge_db mdb;
	struct merge_result r;
	char why[300];
	if (merge_db_open(&mdb, db, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof merge: database %s: %s\n", db, why);
		return 1;
	}
	int rc = merge_db_merge(&mdb, &r, stderr);
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
