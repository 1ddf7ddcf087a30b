/*
 * vprof epoch [--db DIR] [new|list]: epochs divide a database in time, as
 * DCPI's did: merges go to the current one; `new` starts the next, so a
 * later report (or diff) can compare before and after.
 */
#include "reports/report.h"
#include "merge/profile.h"

#include <getopt.h>
#include <string.h>

int cmd_epoch(int argc, char **argv)
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
		case 'h': printf("usage: vprof epoch [--db DIR] [--json] [new|list]\n"); return 0;
		default: return report_usage("epoch", "bad option");
		}
	}
	const char *what = optind < argc ? argv[optind] : "show";
	if (strcmp(what, "show") && strcmp(what, "new") && strcmp(what, "list"))
		return report_usage("epoch", "expected new, list or nothing");
	const char *db = report_db_path(dbopt);
	struct merge_db mdb;
	char why[300];
	if (merge_db_open(&mdb, db, !strcmp(what, "new"), why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof epoch: database %s: %s\n", db, why);
		return 1;
	}
	int rc = 0;
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
