/*
 * vprof merge --follow: the daemon of continuous profiling (DCPI's
 * vprofd). Merges finished spools as they appear, polling the spool
 * directory every --interval seconds (a spool becomes finished when its
 * process exits, is killed, or rotates it out under VPROF_EPOCH_SECS;
 * none of these shows in the directory, so inotify would not see them),
 * starts a new epoch every --epoch-every seconds, and keeps only the
 * newest --keep-epochs epochs (older ones dropped crash-safely,
 * merge_db_epoch_drop). SIGINT or SIGTERM: the merge under way finishes
 * (each is crash-safe anyway), then it exits 0.
 */
#include "reports/merge_cmd.h"
#include "merge/profile.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static volatile sig_atomic_t g_stop;

static void on_stop(int sig)
{
	g_stop = sig;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void retain(struct merge_db *db, int keep, int json)
{
	int ep[4096], n = merge_db_epochs(db, ep, 4096), cur = merge_db_epoch(db);
	for (int i = 0; i + keep < n; i++) {
		if (ep[i] == cur)
			continue;
		int rc = merge_db_epoch_drop(db, ep[i]);
		if (rc == -EBUSY)
			continue;        /* a merge to apply first: next round */
		if (rc < 0)
			fprintf(stderr, "vprof merge: cannot drop epoch %d: %s\n", ep[i], strerror(-rc));
		else if (json)
			printf("{\"dropped_epoch\":%d}\n", ep[i]);
		else
			printf("dropped epoch %d (keeping %d)\n", ep[i], keep);
	}
}

int report_merge_follow(const char *dbpath, const struct report_merge_follow_opts *o)
{
	struct merge_db db;
	char why[300];
	if (merge_db_open(&db, dbpath, 1, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof merge: database %s: %s\n", dbpath, why);
		return 1;
	}
	struct sigaction sa = { .sa_handler = on_stop, .sa_flags = SA_RESTART }, oint, oterm;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, &oint);
	sigaction(SIGTERM, &sa, &oterm);
	setvbuf(stdout, NULL, _IOLBF, 0);

	unsigned long long merges = 0, spools = 0, samples = 0;
	double next_epoch = o->epoch_every > 0 ? now_s() + o->epoch_every : 0;
	while (!g_stop) {
		struct merge_result r;
		int rc = merge_db_merge(&db, &r, stderr);
		if (rc < 0) {
			fprintf(stderr, "vprof merge: %s: %s (spools kept; trying again)\n", dbpath,
				strerror(-rc));
		} else if (r.spools || r.stats.corrupt) {
			merges++;
			spools += (unsigned)r.spools;
			samples += r.stats.merged;
			if (o->json)
				printf("{\"epoch\":%d,\"spools\":%d,\"processes\":%llu,\"samples\":%llu,"
				       "\"dropped\":%llu,\"busy\":%d,\"corrupt\":%llu}\n",
				       merge_db_epoch(&db), r.spools,
				       (unsigned long long)r.stats.processes,
				       (unsigned long long)r.stats.merged,
				       (unsigned long long)r.stats.dropped, r.spools_busy,
				       (unsigned long long)r.stats.corrupt);
			else
				printf("merged %d spool%s (%llu samples, %llu dropped) into epoch %d; "
				       "%d still open\n",
				       r.spools, r.spools == 1 ? "" : "s", (unsigned long long)r.stats.merged,
				       (unsigned long long)r.stats.dropped, merge_db_epoch(&db),
				       r.spools_busy);
		}
		if (g_stop)
			break;
		if (next_epoch > 0 && now_s() >= next_epoch) {
			int e = merge_db_epoch_new(&db);
			if (e < 0)
				fprintf(stderr, "vprof merge: cannot start an epoch: %s\n", strerror(-e));
			else if (o->json)
				printf("{\"new_epoch\":%d}\n", e);
			else
				printf("epoch %d started\n", e);
			while (next_epoch <= now_s())
				next_epoch += o->epoch_every;
		}
		if (o->keep_epochs > 0)
			retain(&db, o->keep_epochs, o->json);
		/* nanosleep is cut short by the signal (never restarted). */
		double w = o->interval;
		if (next_epoch > 0 && next_epoch - now_s() < w)
			w = next_epoch - now_s() > 0.001 ? next_epoch - now_s() : 0.001;
		struct timespec ts = { (time_t)w, (long)((w - (double)(time_t)w) * 1e9) };
		if (!g_stop)
			nanosleep(&ts, NULL);
	}
	if (o->json)
		printf("{\"stopped\":true,\"merges\":%llu,\"spools\":%llu,\"samples\":%llu}\n", merges,
		       spools, samples);
	else
		printf("stopped: %llu merges, %llu spools, %llu samples\n", merges, spools, samples);
	merge_db_close(&db);
	sigaction(SIGINT, &oint, NULL);
	sigaction(SIGTERM, &oterm, NULL);
	return fflush(stdout) == 0 ? 0 : 1;
}
