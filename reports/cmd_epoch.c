/*
 * vprof epoch [--db DIR] [new|list]: epochs divide a database in time, as
 * DCPI's did: merges go to the current one; `new` starts the next, so a
 * later report (or diff) can compare before and after.
 */
#include "reports/builtin.h"
#include "reports/report.h"
#include "merge/profile.h"

#include <string.h>

static const char kHelp[] =
	"usage: vprof epoch [--db DIR] [--json] [new|list]\n"
	"  (nothing)  print the current epoch\n"
	"  new        start the next epoch: later merges go there\n"
	"  list       every epoch, the current one marked\n";

int cmd_epoch(int argc, char **argv)
{
	static const struct report_cmd cmd = {
		.name = "epoch", .help = kHelp, .common = REPORT_OPT_DB | REPORT_OPT_JSON,
	};
	struct report_opts o = { 0 };
	int rc = report_opts_parse(&cmd, argc, argv, &o, NULL);
	if (rc >= 0)
		return rc;
	int json = o.json;
	const char *what = o.next < argc ? argv[o.next] : "show";
	if (strcmp(what, "show") && strcmp(what, "new") && strcmp(what, "list"))
		return report_usage("epoch", "expected new, list or nothing");
	const char *db = o.db;
	struct merge_db mdb;
	char why[300];
	if (merge_db_open(&mdb, db, !strcmp(what, "new"), why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof epoch: database %s: %s\n", db, why);
		return 1;
	}
	rc = 0;
	if (!strcmp(what, "new")) {
		int e = merge_db_epoch_new(&mdb);
		if (e < 0) {
			fprintf(stderr, "vprof epoch: %s: %s\n", db, strerror(-e));
			rc = 1;
		} else if (json) {
			printf("{\"current\":%d}\n", e);
		} else {
			printf("epoch %d started\n", e);
		}
	} else if (!strcmp(what, "list")) {
		int ep[4096], n = merge_db_epochs(&mdb, ep, 4096), cur = merge_db_epoch(&mdb);
		if (json) {
			printf("{\"current\":%d,\"epochs\":[", cur);
			for (int i = 0; i < n; i++)
				printf("%s%d", i ? "," : "", ep[i]);
			printf("]}\n");
		} else {
			for (int i = 0; i < n; i++)
				printf("%d%s\n", ep[i], ep[i] == cur ? " (current)" : "");
		}
	} else {
		int cur = merge_db_epoch(&mdb);
		if (json)
			printf("{\"current\":%d}\n", cur);
		else
			printf("%d\n", cur);
	}
	merge_db_close(&mdb);
	return report_finish_stdout(rc);
}
