/*
 * vprof report: the dcpiprof view. Procedures (or, with --by image, images)
 * sorted by samples, per event, with count, percent, cumulative percent and
 * image; totals, processes, dropped and unknown samples above the table.
 *
 * Workload: a database holds one profile per (image, event) with a few
 * thousand PCs each; every PC is looked up once in the image's sorted symbol
 * array, rows are gathered in a flat array and sorted twice (to combine,
 * then to rank). Symbols of each image are opened once.
 */
#include "reports/report.h"
#include "reports/symbolize.h"
#include "merge/profile.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

struct row {
	unsigned event;
	char *image;
	char *proc;
	uint64_t count;
};

struct symcache {
	char key[600];
	struct report_image *im;
	char image[512];
};

struct ctx {
	struct row *rows;
	size_t n, cap;
	struct symcache *syms;
	size_t nsyms, capsyms;
	struct merge_stats stats;
	int by_image;
	int event;               /* filter, 0 = all */
	int nprofiles;
};

static struct symcache *symbols_for(struct ctx *c, const struct merge_profile *p)
{
	char key[600];
	if (p->build_id_len) {
		for (uint32_t i = 0; i < p->build_id_len; i++)
			snprintf(key + 2 * i, 3, "%02x", p->build_id[i]);
	} else {
		snprintf(key, sizeof(key), "path:%s", p->path);
	}
	for (size_t i = 0; i < c->nsyms; i++)
		if (!strcmp(c->syms[i].key, key))
			return &c->syms[i];
	if (c->nsyms == c->capsyms) {
		c->capsyms = c->capsyms ? 2 * c->capsyms : 32;
		c->syms = realloc(c->syms, c->capsyms * sizeof(*c->syms));
		if (!c->syms) {
			perror("vprof report");
			exit(1);
		}
	}
	struct symcache *s = &c->syms[c->nsyms++];
	char why[200];
	snprintf(s->key, sizeof(s->key), "%s", key);
	snprintf(s->image, sizeof(s->image), "%s", p->path[0] ? p->path : "[no path]");
	s->im = report_image_open(p->path, p->build_id, p->build_id_len, why, sizeof(why));
	/* Once per image: its samples show as [no symbol]. The vDSO has no
	 * file to read; that needs no saying. */
	if (!s->im && strncmp(p->path, "linux-vdso", 10) != 0)
		fprintf(stderr, "vprof report: no symbols for %s: %s\n", s->image, why);
	return s;
}

static void add_row(struct ctx *c, unsigned ev, const char *image, const char *proc, uint64_t n)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 1024;
		c->rows = realloc(c->rows, c->cap * sizeof(*c->rows));
		if (!c->rows) {
			perror("vprof report");
			exit(1);
		}
	}
	c->rows[c->n++] = (struct row){ ev, strdup(image), strdup(proc), n };
}

static int on_profile(const struct merge_profile *p, void *arg)
{
	struct ctx *c = arg;
	if (p->flags & MERGE_PROF_STATS) {
		merge_stats_add(&c->stats, &p->stats);
		return 0;
	}
	if (c->event && (int)p->event != c->event)
		return 0;
	c->nprofiles++;
	if (p->flags & MERGE_PROF_UNKNOWN) {
		add_row(c, p->event, "[unknown]", "[unknown]", p->total);
		return 0;
	}
	struct symcache *s = symbols_for(c, p);
	if (c->by_image) {
		add_row(c, p->event, s->image, "", p->total);
		return 0;
	}
	for (size_t i = 0; i < p->n; i++) {
		uint64_t start, size;
		const char *name = s->im ? report_sym_lookup(s->im, p->pcs[i].offset, &start, &size) : NULL;
		add_row(c, p->event, s->image, name ? name : "[no symbol]", p->pcs[i].count);
	}
	return 0;
}

static int by_key(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	int r = strcmp(x->image, y->image);
	return r ? r : strcmp(x->proc, y->proc);
}

static int by_count(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	if (x->event != y->event)
		return x->event < y->event ? -1 : 1;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return by_key(a, b);
}

static void combine(struct ctx *c)
{
	size_t o = 0;
	if (!c->n)
		return;
	qsort(c->rows, c->n, sizeof(*c->rows), by_key);
	for (size_t i = 1; i < c->n; i++) {
		if (by_key(&c->rows[i], &c->rows[o]) == 0) {
			c->rows[o].count += c->rows[i].count;
			free(c->rows[i].proc);
			free(c->rows[i].image);
		} else {
			c->rows[++o] = c->rows[i];
		}
	}
	c->n = o + 1;
	qsort(c->rows, c->n, sizeof(*c->rows), by_count);
}

static uint64_t event_total(const struct ctx *c, unsigned ev)
{
	uint64_t t = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->rows[i].event == ev)
			t += c->rows[i].count;
	return t;
}

static void print_text(const struct ctx *c, const char *db, const char *epochs, long limit)
{
	const struct merge_stats *s = &c->stats;
	printf("vprof report: %s, epoch %s\n", db, epochs);
	printf("processes %llu (%llu without a normal exit: killed or exec'd), samples %llu, "
	       "dropped %llu (%.2f%%), unknown %llu, corrupt spools %llu\n",
	       (unsigned long long)s->processes, (unsigned long long)s->killed,
	       (unsigned long long)s->merged, (unsigned long long)s->dropped,
	       s->samples ? 100.0 * (double)s->dropped / (double)s->samples : 0.0,
	       (unsigned long long)s->unknown, (unsigned long long)s->corrupt);
	for (unsigned ev = 1; ev < MERGE_EV_MAX; ev++) {
		uint64_t total = event_total(c, ev), cum = 0;
		long shown = 0;
		if (!total)
			continue;
		printf("\nevent %s: %llu samples\n", merge_event_name(ev), (unsigned long long)total);
		printf("%10s %7s %7s  %-40s %s\n", "samples", "%", "cum%",
		       c->by_image ? "image" : "procedure", c->by_image ? "" : "image");
		for (size_t i = 0; i < c->n; i++) {
			const struct row *r = &c->rows[i];
			if (r->event != ev)
				continue;
			cum += r->count;
			if (limit > 0 && shown++ >= limit)
				continue;
			if (c->by_image)
				printf("%10llu %7.2f %7.2f  %s\n", (unsigned long long)r->count,
				       100.0 * (double)r->count / (double)total,
				       100.0 * (double)cum / (double)total, r->image);
			else
				printf("%10llu %7.2f %7.2f  %-40s %s\n", (unsigned long long)r->count,
				       100.0 * (double)r->count / (double)total,
				       100.0 * (double)cum / (double)total, r->proc, r->image);
		}
		if (limit > 0 && shown > limit)
			printf("%10s (%ld more rows; -n 0 shows all)\n", "...", shown - limit);
	}
	if (!c->n)
		printf("\nno samples\n");
}

static void print_json(const struct ctx *c, const char *db, const char *epochs, long limit)
{
	const struct merge_stats *s = &c->stats;
	printf("{\"db\":");
	report_json_str(stdout, db);
	printf(",\"epoch\":\"%s\",\"processes\":%llu,\"not_exited\":%llu,\"samples\":%llu,"
	       "\"samples_seen\":%llu,\"dropped\":%llu,\"unknown\":%llu,\"corrupt\":%llu,\"events\":[",
	       epochs, (unsigned long long)s->processes, (unsigned long long)s->killed,
	       (unsigned long long)s->merged, (unsigned long long)s->samples,
	       (unsigned long long)s->dropped, (unsigned long long)s->unknown,
	       (unsigned long long)s->corrupt);
	int first_ev = 1;
	for (unsigned ev = 1; ev < MERGE_EV_MAX; ev++) {
		uint64_t total = event_total(c, ev);
		long shown = 0;
		if (!total)
			continue;
		printf("%s{\"event\":\"%s\",\"total\":%llu,\"rows\":[", first_ev ? "" : ",",
		       merge_event_name(ev), (unsigned long long)total);
		first_ev = 0;
		for (size_t i = 0; i < c->n; i++) {
			const struct row *r = &c->rows[i];
			if (r->event != ev || (limit > 0 && shown >= limit))
				continue;
			printf("%s{", shown++ ? "," : "");
			if (!c->by_image) {
				printf("\"procedure\":");
				report_json_str(stdout, r->proc);
				printf(",");
			}
			printf("\"image\":");
			report_json_str(stdout, r->image);
			printf(",\"samples\":%llu,\"percent\":%.4f}", (unsigned long long)r->count,
			       100.0 * (double)r->count / (double)total);
		}
		printf("]}");
	}
	printf("]}\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "db", required_argument, 0, 'd' },    { "epoch", required_argument, 0, 'E' },
		{ "by", required_argument, 0, 'b' },    { "event", required_argument, 0, 'e' },
		{ "json", no_argument, 0, 'j' },        { "limit", required_argument, 0, 'n' },
		{ "help", no_argument, 0, 'h' },        { 0, 0, 0, 0 },
	};
	const char *dbopt = NULL, *epoch = NULL;
	struct ctx c;
	long limit = 40;
	int json = 0, ch;
	memset(&c, 0, sizeof(c));
	while ((ch = getopt_long(argc, argv, "d:E:b:e:jn:h", opts, NULL)) != -1) {
		switch (ch) {
		case 'd': dbopt = optarg; break;
		case 'E': epoch = optarg; break;
		case 'b':
			if (!strcmp(optarg, "image"))
				c.by_image = 1;
			else if (strcmp(optarg, "procedure"))
				return report_usage("report", "--by takes procedure or image");
			break;
		case 'e':
			if ((c.event = merge_event_parse(optarg)) < 0)
				return report_usage("report", "unknown event");
			break;
		case 'j': json = 1; break;
		case 'n': limit = strtol(optarg, NULL, 10); break;
		case 'h':
			printf("usage: vprof report [--db DIR] [--epoch N|all] [--by procedure|image] "
			       "[--event E] [-n ROWS (0: all)] [--json]\n");
			return 0;
		default: return report_usage("report", "bad option");
		}
	}
	const char *db = report_db_path(dbopt);
	struct merge_db mdb;
	char why[300], label[32];
	if (merge_db_open(&mdb, db, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "vprof report: database %s: %s\n", db, why);
		return 1;
	}
	if (epoch && !strcmp(epoch, "all")) {
		int ep[4096], n = merge_db_epochs(&mdb, ep, 4096);
		for (int i = 0; i < n; i++)
			merge_db_load(&mdb, ep[i], on_profile, &c, stderr);
		snprintf(label, sizeof(label), "all");
	} else {
		int e = epoch ? atoi(epoch) : merge_db_epoch(&mdb);
		if (e < 1) {
			merge_db_close(&mdb);
			return report_usage("report", "--epoch takes a number >= 1 or all");
		}
		merge_db_load(&mdb, e, on_profile, &c, stderr);
		snprintf(label, sizeof(label), "%d", e);
	}
	merge_db_close(&mdb);
	combine(&c);
	if (json)
		print_json(&c, db, label, limit);
	else
		print_text(&c, db, label, limit);
	for (size_t i = 0; i < c.n; i++) {
		free(c.rows[i].proc);
		free(c.rows[i].image);
	}
	free(c.rows);
	for (size_t i = 0; i < c.nsyms; i++)
		if (c.syms[i].im)
			report_image_close(c.syms[i].im);
	free(c.syms);
	return report_finish_stdout(0);
}
