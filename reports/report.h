/*
 * What the vprof subcommands share: common option handling and JSON
 * output helpers (their prototypes are builtin.h). Commands are thin;
 * the data model lives in merge/, symbols in reports/symbolize.c.
 *
 * Nothing here is async-signal-safe; the vprof command is single-threaded.
 */
#ifndef VPROF_REPORT_H
#define VPROF_REPORT_H

#include <stdint.h>
#include <stdio.h>

/*
 * Options the commands that read a database share. A command names which
 * it takes (REPORT_OPT_* bits) and may add its own through `extra` (its
 * getopt_long entries; their short letters must not be one of d E e j n h)
 * and `on_extra`, called with each such option's letter and argument and
 * returning 0, or non-zero after report_usage() to stop.
 *
 *   --db DIR     (-d)   database; o->db is resolved with report_db_path()
 *   --epoch N|all (-E)  epoch to read (NULL: the current one)
 *   --event E    (-e)   only this event (0: all)
 *   --json       (-j)   output as JSON
 *   -n ROWS, --limit    rows to show (0: all)
 *   -h, --help          print `help` on stdout
 */
enum {
	REPORT_OPT_DB = 1,
	REPORT_OPT_EPOCH = 2,
	REPORT_OPT_EVENT = 4,
	REPORT_OPT_JSON = 8,
	REPORT_OPT_LIMIT = 16,
};

struct report_opts {
	const char *db;
	const char *epoch;
	int event;
	int json;
	long limit;          /* preset by the caller to its default */
	int next;            /* argv index of the first operand */
};

struct option;
struct report_cmd {
	const char *name;
	const char *help;    /* the whole -h text */
	unsigned common;     /* REPORT_OPT_* */
	const struct option *extra;
	const char *extra_short;
	int (*on_extra)(int ch, const char *arg, void *ctx);
};

/* Parse argv. Returns -1 to go on; else the status the command should
 * return at once (0 after -h, 2 after a usage message). */
int report_opts_parse(const struct report_cmd *cmd, int argc, char **argv,
		      struct report_opts *o, void *ctx);

/* The database named by --db, else $VPROF_DB, else ./vprof.db. */
const char *report_db_path(const char *opt);

/* Write s as a JSON string literal (with quotes): always valid UTF-8,
 * each byte that is not part of a well-formed sequence written as
 * U+FFFD; NULL as null. */
void report_json_str(FILE *f, const char *s);

/* Usage error: one message naming the command, exit status 2. */
int report_usage(const char *cmd, const char *msg);
/* The usage error for an unknown option arg ("--frq=5"), with the
 * nearest of opts' long names when it is close enough to be a typo
 * ("did you mean --freq?"). Returns 2. */
struct option;
int report_bad_option(const char *cmd, const char *arg, const struct option *opts);
/* The usage error for an --event that names none, listing them. 2. */
int report_bad_event(const char *cmd, const char *given);
/* The name in names[] a typo of given would be (edit distance at most 1
 * for names of up to 4 bytes, 2 beyond), or NULL. */
const char *report_did_you_mean(const char *given, const char *const *names, size_t n);
/* The name of interp_stops[] bucket i: the interpreter's stop reasons
 * (interp_stop_name), "loop" (a value window that came back to its
 * start), "other" (the last bucket: the reasons past them). */
const char *report_stop_name(int i);

/* End as a child did: return its exit status, or, if it was killed by a
 * signal, flush our output and die of the same signal (no core of ours).
 * For `vprof run`, `verify`, `coverage`: the profiled command's status is
 * the user's. */
int report_exit_like(int status);
/* reports/selflimit_line.c: "vprof's cost over its bound: ..." into out
 * when the bound on vprof's cost lowered any rate; returns 1 then, else 0
 * and "". max_cost: the bound, in percent, if known (else 0). */
struct merge_stats;
int report_selflimit_line(const struct merge_stats *s, int max_cost, char *out, size_t cap);
/* reports/sandbox_line.c: the same for threads a seccomp sandbox stopped. */
int report_sandbox_line(const struct merge_stats *s, char *out, size_t cap);

/*
 * Procedure names as the user types them, for every command that takes one
 * (`list`, `report --callers/--callees`). How closely `want` names a
 * procedure (its demangled name proc, its symbol-table name sysname, which
 * may be NULL), closest first; 0: not at all.
 */
enum report_name_level {
	REPORT_NAME_EXACT = 1,   /* proc or sysname itself */
	REPORT_NAME_QUALIFIED,   /* proc without its return type and parameters
				    ("geo::Sorter<int>::run"), or with templates
				    left out ("geo::sum_dots"), or proc up to its
				    parameter list ("double geo::sum_dots<double>") */
	REPORT_NAME_UNQUALIFIED, /* a trailing part after "::" of those ("run",
				    "Sorter<int>::run", "sum_dots") */
	REPORT_NAME_WORD,        /* a word of proc, '_' and other
				    non-alphanumerics around it ("memcmp" in
				    "__memcmp_evex_movbe", an ifunc's choice) */
	REPORT_NAME_PART,        /* anywhere in proc */
	REPORT_NAME_STUB,        /* any of these, of a PLT stub "f@plt" */
};
int report_name_match(const char *want, const char *proc, const char *sysname);

/* The procedures a name matches, gathered from what a command has
 * (sampled PCs, stack frames, hotlists): add each occurrence, then pick. */
struct report_name {
	const char *proc;
	const char *image;       /* the first one it was seen in */
	uint64_t samples;
	int level;
};
struct report_names {
	const char *want;
	struct report_name *v;
	size_t n, cap;
	struct { const char *proc, *sys; int level; } memo[256];
};
void report_names_init(struct report_names *c, const char *want);
void report_names_add(struct report_names *c, const char *proc, const char *sysname,
		      const char *image, uint64_t samples);
/* The one procedure at the closest level that any matched: 0 and *out
 * (a pointer added); -1 when none matched (no message); -2 after one
 * message on stderr listing the candidates, with their samples, when
 * several match equally closely. */
int report_names_pick(struct report_names *c, const char *cmd, const char **out);
void report_names_free(struct report_names *c);

/* Flush stdout and turn a write error (full disk, closed pipe) into a
 * message and exit status 1, as perf does. */
int report_finish_stdout(int rc);

#endif
