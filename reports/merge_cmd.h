/*
 * The long-running and cross-database forms of `vprof merge`
 * (reports/merge_follow.c, reports/merge_from.c), called by cmd_merge.c.
 */
#ifndef VPROF_MERGE_CMD_H
#define VPROF_MERGE_CMD_H

struct report_merge_follow_opts {
	double interval;         /* seconds between merges */
	double epoch_every;      /* start a new epoch every so many seconds (0: never) */
	int keep_epochs;         /* keep the newest N epochs (0: all) */
	int json;
};

/* vprof merge --follow: until SIGINT/SIGTERM; 0, or 1 if the database
 * cannot be opened. */
int report_merge_follow(const char *db, const struct report_merge_follow_opts *o);

/* vprof merge --from SRC...: fold SRC's epoch (NULL: its current; "all";
 * a number) into db's current epoch. 0, or 1 with one message. */
int report_merge_from(const char *db, char **src, int nsrc, const char *epoch, int json);

#endif
