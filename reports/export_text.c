/*
 * export_text.c — the text exports: collapsed stacks (one line per stack,
 * "root;...;leaf COUNT", for flamegraph.pl, speedscope and Grafana) and
 * the whole model as JSON. Both stream straight to the FILE; the folded
 * writer takes a list of stacks so that recorded call stacks can be fed to
 * it unchanged when they exist.
 */
#include "reports/export.h"
#include "reports/report.h"
#include "reports/stack_model.h"

#include <stdlib.h>
#include <string.h>

void report_folded_write(FILE *f, const struct report_folded_stack *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (size_t d = 0; d < v[i].depth; d++) {
			if (d)
				fputc(';', f);
			for (const char *p = v[i].frames[d]; *p; p++)
				fputc(*p == ';' ? ':' : *p == '\n' ? ' ' : *p, f);
		}
		fprintf(f, " %llu\n", (unsigned long long)v[i].count);
	}
}

static int folded_one(const char *const *frames, size_t depth, uint64_t count, void *arg)
{
	struct report_folded_stack one = { frames, depth, count };
	report_folded_write(arg, &one, 1);
	return 0;
}

void report_export_folded(const struct report_model *m, unsigned ev, FILE *f)
{
	/* Recorded call stacks (vprof run --stacks): one line per distinct
	 * path, main;...;leaf. The stacks add the images they name to the
	 * model's table, a cache of opened symbols: m is otherwise unchanged. */
	struct report_stacks st;
	report_stacks_load(&st, (struct report_model *)m);
	if (st.total[ev]) {
		report_stacks_foreach(&st, ev, folded_one, f);
		report_stacks_free(&st);
		return;
	}
	report_stacks_free(&st);
	size_t n, ns = 0;
	size_t *ord = report_model_by_proc(m, ev, &n);
	struct report_folded_stack *v = calloc(n ? n : 1, sizeof(*v));
	const char **frames = calloc(2 * (n ? n : 1), sizeof(*frames));
	if (!v || !frames) {
		perror("vprof export");
		exit(1);
	}
	for (size_t i = 0; i < n; i++) {
		const struct report_model_pc *pc = &m->pcs[ord[i]];
		const struct report_model_pc *prev = i ? &m->pcs[ord[i - 1]] : NULL;
		if (prev && prev->image == pc->image && prev->proc == pc->proc) {
			v[ns - 1].count += pc->count;
			continue;
		}
		const char *img = m->images[pc->image].path, *slash = strrchr(img, '/');
		frames[2 * ns] = slash && slash[1] ? slash + 1 : img;
		frames[2 * ns + 1] = pc->proc;
		v[ns] = (struct report_folded_stack){ &frames[2 * ns], 2, pc->count };
		ns++;
	}
	report_folded_write(f, v, ns);
	free(frames);
	free(v);
	free(ord);
}

static void json_str_or_null(FILE *f, const char *s)
{
	if (s)
		report_json_str(f, s);
	else
		fputs("null", f);
}

void report_export_json(const struct report_model *m, FILE *f)
{
	const struct merge_stats *s = &m->stats;
	fprintf(f, "{\"format\":\"vprof-export\",\"version\":1,\"db\":");
	report_json_str(f, m->db);
	fprintf(f, ",\"epoch\":\"%s\",\"period_ns\":%llu,", m->epoch,
		(unsigned long long)report_model_period_ns(m));
	fprintf(f, "\"stats\":{\"processes\":%llu,\"not_exited\":%llu,\"samples_seen\":%llu,"
		   "\"samples\":%llu,\"dropped\":%llu,\"unknown\":%llu,\"corrupt\":%llu,"
		   "\"cpu_ns\":%llu},\"images\":[",
		(unsigned long long)s->processes, (unsigned long long)s->killed,
		(unsigned long long)s->samples, (unsigned long long)s->merged,
		(unsigned long long)s->dropped, (unsigned long long)s->unknown,
		(unsigned long long)s->corrupt, (unsigned long long)s->cpu_ns);
	for (size_t i = 0; i < m->nimages; i++) {
		const struct report_model_image *im = &m->images[i];
		fprintf(f, "%s{\"id\":%zu,\"path\":", i ? "," : "", i);
		report_json_str(f, im->path);
		fprintf(f, ",\"build_id\":\"");
		for (uint32_t b = 0; b < im->build_id_len; b++)
			fprintf(f, "%02x", im->build_id[b]);
		fprintf(f, "\",\"symbols\":%s}", im->sym ? "true" : "false");
	}
	fprintf(f, "],\"events\":[");
	int first = 1;
	for (unsigned ev = 1; ev < UPCALL_EV_MAX; ev++) {
		if (!m->total[ev])
			continue;
		fprintf(f, "%s{\"event\":\"%s\",\"clock\":%s,\"total\":%llu,\"pcs\":[", first ? "" : ",",
			upcall_event_name(ev), report_event_is_clock(ev) ? "true" : "false",
			(unsigned long long)m->total[ev]);
		first = 0;
		int firstpc = 1;
		for (size_t i = 0; i < m->npcs; i++) {
			const struct report_model_pc *pc = &m->pcs[i];
			if (pc->event != ev)
				continue;
			fprintf(f, "%s{\"image\":%u,\"address\":%llu,\"count\":%llu,\"procedure\":",
				firstpc ? "" : ",", pc->image, (unsigned long long)pc->vaddr,
				(unsigned long long)pc->count);
			firstpc = 0;
			report_json_str(f, pc->proc);
			fprintf(f, ",\"system_name\":");
			report_json_str(f, pc->sysname);
			fprintf(f, ",\"procedure_address\":%llu,\"file\":",
				(unsigned long long)pc->proc_start);
			json_str_or_null(f, pc->file);
			fprintf(f, ",\"line\":%d}", pc->line);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
}
