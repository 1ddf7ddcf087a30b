/*
 * html_flame.c — the flame graph's data for `vprof html`: the folded
 * stacks of an event (report_html_for_each_stack, the adapter from the profile)
 * written as compact JSON, each distinct frame name once, and the escapers
 * every string on the page goes through.
 *
 * Workload: with recorded stacks (report_stacks_foreach), tens of
 * thousands of stacks over a few thousand names; without, one name per
 * procedure and image. Names are kept
 * in an open-addressed table (copies, so the adapter's strings may be
 * transient).
 */
#include "reports/html.h"
#include "reports/report.h"
#include "reports/stack_model.h"

#include <stdlib.h>
#include <string.h>

const char *report_html_for_each_stack(const struct report_model *m, unsigned ev, report_html_stack_fn *fn,
				       void *arg)
{
	/* Recorded call stacks (vprof run --stacks): the folded paths, as
	 * the folded export writes them. */
	struct report_stacks st;
	report_stacks_load(&st, (struct report_model *)m);
	if (st.total[ev]) {
		report_stacks_foreach(&st, ev, fn, arg);
		report_stacks_free(&st);
		return "Call stacks recorded by vprof run --stacks: each stack is main;...;leaf.";
	}
	report_stacks_free(&st);
	size_t n;
	size_t *ord = report_model_by_proc(m, ev, &n);
	for (size_t i = 0; i < n;) {
		const struct report_model_pc *pc = &m->pcs[ord[i]];
		uint64_t count = 0;
		size_t j = i;
		for (; j < n && m->pcs[ord[j]].image == pc->image && m->pcs[ord[j]].proc == pc->proc; j++)
			count += m->pcs[ord[j]].count;
		const char *img = m->images[pc->image].path, *slash = strrchr(img, '/');
		const char *frames[2] = { slash && slash[1] ? slash + 1 : img, pc->proc };
		if (fn(frames, 2, count, arg))
			break;
		i = j;
	}
	free(ord);
	return "No call stacks in this profile (vprof run --stacks records them): each stack is "
	       "image;procedure, as in vprof export --format folded.";
}

void report_html_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

void report_html_json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&')
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

struct names {
	char **slot;            /* open-addressed: the name, or NULL */
	size_t *index;          /* its index in order[] */
	size_t cap, n;
	char **order;           /* names by index */
	size_t caporder;
};

static uint64_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);
	if (!p) {
		perror("vprof html");
		exit(1);
	}
	return p;
}

static size_t name_index(struct names *t, const char *s)
{
	if (2 * (t->n + 1) > t->cap) {
		size_t cap = t->cap ? 2 * t->cap : 256;
		char **slot = xcalloc(cap, sizeof(*slot));
		size_t *index = xcalloc(cap, sizeof(*index));
		for (size_t i = 0; i < t->cap; i++) {
			if (!t->slot[i])
				continue;
			size_t h = hash(t->slot[i]) & (cap - 1);
			while (slot[h])
				h = (h + 1) & (cap - 1);
			slot[h] = t->slot[i];
			index[h] = t->index[i];
		}
		free(t->slot);
		free(t->index);
		t->slot = slot;
		t->index = index;
		t->cap = cap;
	}
	size_t h = hash(s) & (t->cap - 1);
	for (; t->slot[h]; h = (h + 1) & (t->cap - 1))
		if (!strcmp(t->slot[h], s))
			return t->index[h];
	if (!(t->slot[h] = strdup(s))) {
		perror("vprof html");
		exit(1);
	}
	t->order = report_grow(t->order, &t->caporder, t->n, sizeof(*t->order));
	t->order[t->n] = t->slot[h];
	t->index[h] = t->n;
	return t->n++;
}

struct flame_out {
	FILE *f;
	struct names names;
	int first;
};

static int on_stack(const char *const *frames, size_t depth, uint64_t count, void *arg)
{
	struct flame_out *o = arg;
	fprintf(o->f, "%s[%llu", o->first ? "" : ",\n", (unsigned long long)count);
	o->first = 0;
	for (size_t d = 0; d < depth; d++)
		fprintf(o->f, ",%zu", name_index(&o->names, frames[d]));
	fputc(']', o->f);
	return 0;
}

const char *report_html_flame_json(FILE *f, const struct report_model *m, unsigned ev)
{
	struct flame_out o = { .f = f, .first = 1 };
	fprintf(f, "{\"unit\":\"samples\",\"event\":");
	report_html_json_str(f, upcall_event_name(ev));
	fprintf(f, ",\"total\":%llu,\"stacks\":[\n", (unsigned long long)m->total[ev]);
	const char *note = report_html_for_each_stack(m, ev, on_stack, &o);
	fprintf(f, "],\n\"names\":[");
	for (size_t i = 0; i < o.names.n; i++) {
		fputs(i ? ",\n" : "\n", f);
		report_html_json_str(f, o.names.order[i]);
	}
	fprintf(f, "]}");
	for (size_t i = 0; i < o.names.cap; i++)
		free(o.names.slot[i]);
	free(o.names.slot);
	free(o.names.index);
	free(o.names.order);
	return note;
}
