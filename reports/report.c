/*
 * Helpers every subcommand shares (see report.h). Kept apart from main() in
 * vprof.c so that unit tests can link the commands.
 */
#include "reports/report.h"
#include "merge/profile.h"

#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

const char *report_db_path(const char *opt)
{
	const char *e = getenv("VPROF_DB");
	return opt ? opt : e && *e ? e : "vprof.db";
}

void report_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

int report_usage(const char *cmd, const char *msg)
{
	fprintf(stderr, "vprof %s: %s (see vprof %s -h)\n", cmd, msg, cmd);
	return 2;
}

int report_finish_stdout(int rc)
{
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "vprof: error writing output\n");
		return rc ? rc : 1;
	}
	return rc;
}

int report_exit_like(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit no = { 0, 0 };
		setrlimit(RLIMIT_CORE, &no);
		signal(sig, SIG_DFL);
		sigset_t s;
		sigemptyset(&s);
		sigaddset(&s, sig);
		sigprocmask(SIG_UNBLOCK, &s, NULL);
		fflush(NULL);
		kill(getpid(), sig);
		return 128 + sig;
	}
	return 1;
}

/* The shared options, in getopt_long form; a command gets those it names. */
static const struct {
	unsigned bit;
	struct option opt;
	const char *shortopt;
} kCommon[] = {
	{ REPORT_OPT_DB, { "db", required_argument, 0, 'd' }, "d:" },
	{ REPORT_OPT_EPOCH, { "epoch", required_argument, 0, 'E' }, "E:" },
	{ REPORT_OPT_EVENT, { "event", required_argument, 0, 'e' }, "e:" },
	{ REPORT_OPT_JSON, { "json", no_argument, 0, 'j' }, "j" },
	{ REPORT_OPT_LIMIT, { "limit", required_argument, 0, 'n' }, "n:" },
};
#define NCOMMON (sizeof(kCommon) / sizeof(kCommon[0]))

int report_opts_parse(const struct report_cmd *cmd, int argc, char **argv,
		      struct report_opts *o, void *ctx)
{
	struct option opts[NCOMMON + 16];
	char shortopts[64] = "h";
	size_t n = 0;
	for (size_t i = 0; i < NCOMMON; i++) {
		if (!(cmd->common & kCommon[i].bit))
			continue;
		opts[n++] = kCommon[i].opt;
		strcat(shortopts, kCommon[i].shortopt);
	}
	for (const struct option *x = cmd->extra; x && x->name && n < NCOMMON + 14; x++)
		opts[n++] = *x;
	opts[n++] = (struct option){ "help", no_argument, 0, 'h' };
	opts[n] = (struct option){ 0, 0, 0, 0 };
	if (cmd->extra_short && strlen(shortopts) + strlen(cmd->extra_short) < sizeof(shortopts))
		strcat(shortopts, cmd->extra_short);

	const char *dbopt = NULL;
	int ch;
	optind = 1;
	while ((ch = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'h': fputs(cmd->help, stdout); return report_finish_stdout(0);
		case 'd': dbopt = optarg; break;
		case 'E': o->epoch = optarg; break;
		case 'j': o->json = 1; break;
		case 'e':
			if ((o->event = merge_event_parse(optarg)) < 0)
				return report_usage(cmd->name, "unknown event");
			break;
		case 'n':
			o->limit = strtol(optarg, &end, 10);
			if (*end || o->limit < 0)
				return report_usage(cmd->name, "-n takes a number of rows (0: all)");
			break;
		case '?': return report_usage(cmd->name, "bad option");
		default:
			if (!cmd->on_extra)
				return report_usage(cmd->name, "bad option");
			if (cmd->on_extra(ch, optarg, ctx))
				return 2;
		}
	}
	o->db = report_db_path(dbopt);
	o->next = optind;
	return -1;
}
