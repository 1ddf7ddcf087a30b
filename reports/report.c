/*
 * Helpers every subcommand shares (see report.h). Kept apart from main() in
 * vprof.c so that unit tests can link the commands.
 */
#include "reports/report.h"
#include "merge/profile.h"
#include "interp/interp.h"
#include "spool/format.h"

#include <ctype.h>
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

/* Length of the well-formed UTF-8 sequence at p (1 to 4), or 0 if the
 * bytes there are not one: a stray continuation byte, a truncated or
 * overlong sequence, a surrogate, or past U+10FFFF. */
static int utf8_len(const unsigned char *p)
{
	unsigned c = p[0];
	int n = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 :
		c >= 0xf0 && c < 0xf5 ? 4 : 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] >= 0xa0) ||
	    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] >= 0x90))
		return 0;
	return n;
}

void report_json_str(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = utf8_len(p);
		if (!n) {
			/* A path is bytes, not text: a byte that is not UTF-8
			 * becomes U+FFFD, so the output is always valid JSON. */
			fputs("\\ufffd", f);
			p++;
		} else if (*p == '"' || *p == '\\') {
			fprintf(f, "\\%c", *p++);
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
		} else {
			fwrite(p, 1, (size_t)n, f);
			p += n;
		}
	}
	fputc('"', f);
}

/* Levenshtein distance of a and b, at most 32 bytes of b considered. */
static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[34];
	if (lb > 32)
		lb = 32;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j];
			size_t best = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *report_stop_name(int i)
{
	if (i < INTERP_STOP__COUNT)
		return interp_stop_name(i);
	return i == SPOOL_INTERP_STOP_LOOP ? "loop" : "other";
}

const char *report_did_you_mean(const char *given, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t bd = (size_t)-1, len = strlen(given);
	if (!len || len > 32)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t d = edit_distance(given, names[i]);
		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	/* One edit in a short word, two in a longer one: what a typo makes. */
	return best && bd <= (len <= 4 ? 1u : 2u) ? best : NULL;
}

int report_bad_option(const char *cmd, const char *arg, const struct option *opts)
{
	const char *names[64];
	size_t n = 0;
	char given[48], msg[160];
	const char *a = arg ? arg : "";
	while (*a == '-')
		a++;
	snprintf(given, sizeof(given), "%.*s", (int)strcspn(a, "="), a);
	for (; opts && opts->name && n < 64; opts++)
		names[n++] = opts->name;
	const char *near = report_did_you_mean(given, names, n);
	if (near)
		snprintf(msg, sizeof(msg), "unknown option %s; did you mean --%s?", arg, near);
	else
		snprintf(msg, sizeof(msg), "unknown option %s", arg ? arg : "");
	return report_usage(cmd, msg);
}

int report_bad_event(const char *cmd, const char *given)
{
	const char *names[UPCALL_EV_MAX + 1];
	size_t n = 0;
	char msg[300];
	names[n++] = "auto";
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++)
		names[n++] = upcall_event_name(ev);
	const char *near = report_did_you_mean(given, names, n);
	int o = snprintf(msg, sizeof(msg), "--event %s: not an event", given);
	if (near)
		o += snprintf(msg + o, sizeof(msg) - (size_t)o, "; did you mean %s?", near);
	o += snprintf(msg + o, sizeof(msg) - (size_t)o, " (one of");
	for (size_t i = 0; i < n && o < (int)sizeof(msg); i++)
		o += snprintf(msg + o, sizeof(msg) - (size_t)o, "%s %s", i ? "," : "", names[i]);
	snprintf(msg + o, sizeof(msg) - (size_t)o, ")");
	return report_usage(cmd, msg);
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
	opterr = 0;      /* the messages are ours: they name the command */
	while ((ch = getopt_long(argc, argv, shortopts, opts, NULL)) != -1) {
		char *end;
		switch (ch) {
		case 'h': fputs(cmd->help, stdout); return report_finish_stdout(0);
		case 'd': dbopt = optarg; break;
		case 'E': o->epoch = optarg; break;
		case 'j': o->json = 1; break;
		case 'e':
			if ((o->event = upcall_event_parse(optarg)) < 0)
				return report_bad_event(cmd->name, optarg);
			break;
		case 'n':
			o->limit = strtol(optarg, &end, 10);
			if (*end || o->limit < 0)
				return report_usage(cmd->name, "-n takes a number of rows (0: all)");
			break;
		case '?':
			if (optopt)      /* a known option without its value, or a short one */
				return report_usage(cmd->name, "bad option or missing value");
			return report_bad_option(cmd->name, argv[optind - 1], opts);
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

/* ---- procedure names: one matcher for every command that takes one ---- */

static int alnum(char c)
{
	return isalnum((unsigned char)c);
}

/* The qualified name inside a demangled one, [*b, *e) of name: without
 * the return type a function template's name starts with ("double
 * geo::sum_dots<double>(...)"), the parameter list and what follows it,
 * or a symbol version or "@plt" ("memcmp@plt"). Brackets of every kind
 * nest; "(anonymous namespace)" and operator names ("operator()",
 * "operator<<") are parts of the name. */
static void qualified_span(const char *name, size_t *b, size_t *e)
{
	size_t n = strlen(name), start = 0, end = n;
	int depth = 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];
		if (!strncmp(name + i, "operator", 8) &&
		    (i == 0 || (!alnum(name[i - 1]) && name[i - 1] != '_')) &&
		    !alnum(name[i + 8]) && name[i + 8] != '_') {
			i += 8;
			if (name[i] == ' ')
				continue;        /* operator new, a conversion */
			if (name[i] == '(' && name[i + 1] == ')')
				i++;
			else
				while (name[i + 1] && strchr("<>=!+-*/%^&|~[],", name[i + 1]))
					i++;
			if (name[i + 1] == ' ' && name[i + 2] == '<')
				i++;     /* "operator<< <T>": its template arguments */
			continue;
		}
		if ((c == '(' && depth == 0 && strncmp(name + i, "(anonymous namespace)", 21)) ||
		    (c == '@' && depth == 0)) {
			end = i;
			break;
		}
		if (c == '<' || c == '(' || c == '{' || c == '[')
			depth++;
		else if ((c == '>' || c == ')' || c == '}' || c == ']') && depth > 0)
			depth--;
		else if (c == ' ' && depth == 0)
			start = i + 1;
	}
	*b = start < end ? start : 0;
	*e = end;
}

/* s with every <...> left out: "geo::Sorter<int>::run" -> "geo::Sorter::run". */
static void strip_templates(const char *s, char *out, size_t cap)
{
	size_t o = 0;
	int depth = 0;
	for (; *s && o + 1 < cap; s++) {
		if (*s == '<')
			depth++;
		else if (*s == '>' && depth > 0)
			depth--;
		else if (!depth)
			out[o++] = *s;
	}
	out[o] = 0;
}

/* Does name end with "::" want (a trailing part of a qualified name)? */
static int scope_suffix(const char *name, const char *want, size_t wl)
{
	size_t n = strlen(name);
	return n > wl + 1 && !strcmp(name + n - wl, want) && name[n - wl - 1] == ':' &&
	       name[n - wl - 2] == ':';
}

/* Is want in name between non-alphanumerics ("memcmp" in
 * "__memcmp_evex_movbe": '_' separates words)? */
static int word_in(const char *name, const char *want, size_t wl)
{
	for (const char *p = strstr(name, want); p; p = strstr(p + 1, want))
		if ((p == name || !alnum(p[-1])) && !alnum(p[wl]))
			return 1;
	return 0;
}

int report_name_match(const char *want, const char *proc, const char *sysname)
{
	char q[2048], st[2048];
	size_t b, e, wl = strlen(want), pl = strlen(proc);
	int level = 0;
	if (!*want)
		return 0;
	if (!strcmp(want, proc) || (sysname && !strcmp(want, sysname)))
		return REPORT_NAME_EXACT;
	qualified_span(proc, &b, &e);
	snprintf(q, sizeof(q), "%.*s", (int)(e - b), proc + b);
	strip_templates(q, st, sizeof(st));
	if ((!strncmp(proc, want, wl) && proc[wl] == '(') || !strcmp(q, want) || !strcmp(st, want))
		level = REPORT_NAME_QUALIFIED;
	else if (scope_suffix(q, want, wl) || scope_suffix(st, want, wl) || scope_suffix(proc, want, wl))
		level = REPORT_NAME_UNQUALIFIED;
	else if (word_in(proc, want, wl))
		level = REPORT_NAME_WORD;
	else if (strstr(proc, want))
		level = REPORT_NAME_PART;
	/* A PLT stub is named after the function it jumps to, and is not it. */
	if (level && pl > 4 && !strcmp(proc + pl - 4, "@plt"))
		level = REPORT_NAME_STUB;
	return level;
}

void report_names_init(struct report_names *c, const char *want)
{
	memset(c, 0, sizeof(*c));
	c->want = want;
}

void report_names_free(struct report_names *c)
{
	free(c->v);
	memset(c, 0, sizeof(*c));
}

void report_names_add(struct report_names *c, const char *proc, const char *sysname,
		      const char *image, uint64_t samples)
{
	/* Callers pass interned names, each many times: remember the last
	 * answer per pointer. */
	size_t h = ((uintptr_t)proc >> 4) % (sizeof(c->memo) / sizeof(c->memo[0]));
	int level;
	if (c->memo[h].proc == proc && c->memo[h].sys == sysname)
		level = c->memo[h].level;
	else {
		level = report_name_match(c->want, proc, sysname);
		c->memo[h].proc = proc;
		c->memo[h].sys = sysname;
		c->memo[h].level = level;
	}
	if (!level)
		return;
	for (size_t i = 0; i < c->n; i++)
		if (c->v[i].proc == proc || !strcmp(c->v[i].proc, proc)) {
			c->v[i].samples += samples;
			if (level < c->v[i].level)
				c->v[i].level = level;
			return;
		}
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 16;
		if (!(c->v = realloc(c->v, c->cap * sizeof(*c->v)))) {
			perror("vprof");
			exit(1);
		}
	}
	c->v[c->n++] = (struct report_name){ proc, image, samples, level };
}

static int by_samples(const void *a, const void *b)
{
	const struct report_name *x = a, *y = b;
	if (x->level != y->level)
		return x->level - y->level;
	if (x->samples != y->samples)
		return x->samples > y->samples ? -1 : 1;
	return strcmp(x->proc, y->proc);
}

int report_names_pick(struct report_names *c, const char *cmd, const char **out)
{
	size_t n = 0;
	*out = NULL;
	if (!c->n)
		return -1;
	qsort(c->v, c->n, sizeof(*c->v), by_samples);
	while (n < c->n && c->v[n].level == c->v[0].level)
		n++;
	if (n == 1) {
		*out = c->v[0].proc;
		return 0;
	}
	fprintf(stderr, "vprof %s: '%s' matches %zu procedures; name one of them:\n", cmd, c->want, n);
	for (size_t i = 0; i < n && i < 20; i++)
		fprintf(stderr, "  %10llu samples  %s  (%s)\n", (unsigned long long)c->v[i].samples,
			c->v[i].proc, c->v[i].image);
	if (n > 20)
		fprintf(stderr, "  ... %zu more\n", n - 20);
	return -2;
}
