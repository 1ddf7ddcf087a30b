/*
 * Helpers every subcommand shares (see report.h). Kept apart from main() in
 * vprof.c so that unit tests can link the commands.
 */
#include "reports/report.h"

#include <signal.h>
#include <stdlib.h>
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
