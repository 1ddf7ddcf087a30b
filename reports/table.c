/*
 * The reports' row model (table.h): columns, rows of values, and the two
 * renderers, text (aligned columns) and JSON (one object per row).
 */
#include "reports/table.h"
#include "reports/report.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { CELL_UNSET, CELL_NONE, CELL_VALUE };

struct table_cell {
	unsigned char state;
	union {
		char *s;
		long long i;
		unsigned long long u;
		double d;
		int b;
	} v;
};

static void *xrealloc(void *p, size_t n)
{
	if (!(p = realloc(p, n ? n : 1))) {
		perror("vprof");
		exit(1);
	}
	return p;
}

static void die(const struct report_table *t, const char *what)
{
	const struct report_table_col *c = t->fill < t->ncols ? &t->cols[t->fill] : NULL;
	fprintf(stderr, "vprof: table: %s (column %zu, %s)\n", what, t->fill,
		c ? (c->key ? c->key : c->head ? c->head : "?") : "past the last");
	abort();
}

void report_table_init(struct report_table *t)
{
	memset(t, 0, sizeof(*t));
}

static int owns_str(const struct report_table_col *c)
{
	return c->type == TABLE_STR || c->type == TABLE_RAW;
}

void report_table_clear(struct report_table *t)
{
	for (size_t r = 0; r < t->nrows; r++)
		for (size_t k = 0; k < t->ncols; k++) {
			struct table_cell *x = &t->cells[r * t->ncols + k];
			if (x->state == CELL_VALUE && owns_str(&t->cols[k]))
				free(x->v.s);
		}
	t->nrows = 0;
	t->fill = 0;
}

void report_table_free(struct report_table *t)
{
	report_table_clear(t);
	free(t->cells);
	free(t->cols);
	report_table_init(t);
}

void report_table_col(struct report_table *t, struct report_table_col c)
{
	if (t->nrows)
		die(t, "a column added after the first row");
	if (t->ncols == t->capcols) {
		t->capcols = t->capcols ? 2 * t->capcols : 16;
		t->cols = xrealloc(t->cols, t->capcols * sizeof(*t->cols));
	}
	t->cols[t->ncols++] = c;
}

void report_table_row(struct report_table *t)
{
	if (t->nrows && t->fill != t->ncols)
		die(t, "a row started before the last one had every value");
	if (t->nrows == t->caprows) {
		t->caprows = t->caprows ? 2 * t->caprows : 64;
		t->cells = xrealloc(t->cells, t->caprows * t->ncols * sizeof(*t->cells));
	}
	memset(&t->cells[t->nrows * t->ncols], 0, t->ncols * sizeof(*t->cells));
	t->nrows++;
	t->fill = 0;
}

/* The next cell of the row, which must be of type ty. */
static struct table_cell *next(struct report_table *t, enum report_table_type ty)
{
	if (!t->nrows || t->fill >= t->ncols)
		die(t, "a value with no column for it");
	if (t->cols[t->fill].type != ty)
		die(t, "a value of the wrong type");
	struct table_cell *x = &t->cells[(t->nrows - 1) * t->ncols + t->fill++];
	x->state = CELL_VALUE;
	return x;
}

void report_table_none(struct report_table *t)
{
	if (!t->nrows || t->fill >= t->ncols)
		die(t, "a value with no column for it");
	t->cells[(t->nrows - 1) * t->ncols + t->fill++].state = CELL_NONE;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s) + 1;
	return memcpy(xrealloc(NULL, n), s, n);
}

void report_table_str(struct report_table *t, const char *s)
{
	if (!s) {
		next(t, TABLE_STR)->state = CELL_NONE;
		return;
	}
	next(t, TABLE_STR)->v.s = xstrdup(s);
}

void report_table_strf(struct report_table *t, const char *fmt, ...)
{
	va_list ap;
	char *s;
	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (n < 0) {
		perror("vprof");
		exit(1);
	}
	next(t, TABLE_STR)->v.s = s;
}

void report_table_raw(struct report_table *t, const char *json)
{
	if (!json) {
		next(t, TABLE_RAW)->state = CELL_NONE;
		return;
	}
	next(t, TABLE_RAW)->v.s = xstrdup(json);
}

void report_table_int(struct report_table *t, long long v) { next(t, TABLE_INT)->v.i = v; }
void report_table_uint(struct report_table *t, unsigned long long v) { next(t, TABLE_UINT)->v.u = v; }
void report_table_dbl(struct report_table *t, double v) { next(t, TABLE_DBL)->v.d = v; }
void report_table_bool(struct report_table *t, int v) { next(t, TABLE_BOOL)->v.b = v != 0; }

static const struct table_cell *cell(const struct report_table *t, size_t r, size_t k)
{
	return &t->cells[r * t->ncols + k];
}

static int absent(const struct report_table_col *c, const struct table_cell *x)
{
	return x->state != CELL_VALUE || (c->type == TABLE_DBL && !isfinite(x->v.d));
}

/* A cell's text for the text table: a pointer into buf, or the string. */
static const char *text_of(const struct report_table_col *c, const struct table_cell *x, char *buf,
			   size_t cap)
{
	const char *none = c->none ? c->none : "-";
	if (x->state != CELL_VALUE)
		return none;
	switch (c->type) {
	case TABLE_STR:
	case TABLE_RAW:
		if (!c->fmt)
			return x->v.s;
		snprintf(buf, cap, c->fmt, x->v.s);
		return buf;
	case TABLE_INT:
		snprintf(buf, cap, c->fmt ? c->fmt : "%lld", x->v.i);
		return buf;
	case TABLE_UINT:
		snprintf(buf, cap, c->fmt ? c->fmt : "%llu", x->v.u);
		return buf;
	case TABLE_BOOL:
		return x->v.b ? "yes" : "no";
	case TABLE_DBL: {
		double v = x->v.d;
		if (isnan(v))
			return none;
		if (isinf(v))
			return c->inf ? c->inf : none;
		if (c->flags & TABLE_PERCENT)
			v = v * 100;
		snprintf(buf, cap, c->fmt_big && fabs(v) >= 1e6 ? c->fmt_big : c->fmt ? c->fmt : "%.2f", v);
		return buf;
	}
	}
	return "";
}

static int in_text(const struct report_table_col *c)
{
	return c->head && !(c->flags & TABLE_EXTRA);
}

/* Every row must have all its values before the table is rendered. */
static void complete(const struct report_table *t)
{
	if (t->nrows && t->fill != t->ncols)
		die(t, "rendered with its last row short of values");
}

/* The text columns in text order (stable by tpos) and their widths. */
static size_t text_layout(const struct report_table *t, size_t *ord, int *width)
{
	size_t n = 0;
	complete(t);
	for (size_t k = 0; k < t->ncols; k++) {
		if (!in_text(&t->cols[k]))
			continue;
		size_t j = n++;
		while (j > 0 && t->cols[ord[j - 1]].tpos > t->cols[k].tpos) {
			ord[j] = ord[j - 1];
			j--;
		}
		ord[j] = k;
	}
	char buf[4096];
	for (size_t j = 0; j < n; j++) {
		const struct report_table_col *c = &t->cols[ord[j]];
		width[j] = c->width;
		if (c->width != TABLE_AUTO)
			continue;
		width[j] = (int)strlen(c->head);
		for (size_t r = 0; r < t->nrows; r++) {
			int w = (int)strlen(text_of(c, cell(t, r, ord[j]), buf, sizeof(buf)));
			width[j] = w > width[j] ? w : width[j];
		}
	}
	return n;
}

/* A cell of the text table: its gap, then s padded to width (the last
 * column left-aligned is not padded: no trailing spaces). */
static void put_cell(FILE *f, const struct report_table_col *c, int first, int last, int width, const char *s)
{
	if (!first)
		fprintf(f, "%*s", c->gap ? c->gap : 1, "");
	if (width <= 0 || (last && (c->flags & TABLE_LEFT)))
		fputs(s, f);
	else if (c->flags & TABLE_LEFT)
		fprintf(f, "%-*s", width, s);
	else
		fprintf(f, "%*s", width, s);
}

void report_table_text_head(const struct report_table *t, FILE *f)
{
	size_t *ord = xrealloc(NULL, (t->ncols + 1) * sizeof(*ord));
	int *width = xrealloc(NULL, (t->ncols + 1) * sizeof(*width));
	size_t n = text_layout(t, ord, width), len = 0;
	char *line = NULL;
	FILE *m = open_memstream(&line, &len);
	if (!m) {
		perror("vprof");
		exit(1);
	}
	int any = 0;
	for (size_t j = 0; j < n; j++) {
		put_cell(m, &t->cols[ord[j]], j == 0, j + 1 == n, width[j], t->cols[ord[j]].head);
		any |= *t->cols[ord[j]].head != 0;
	}
	fclose(m);
	while (len && line[len - 1] == ' ')
		line[--len] = 0;
	if (any)
		fprintf(f, "%s\n", line);
	free(line);
	free(ord);
	free(width);
}

void report_table_text_rows(const struct report_table *t, FILE *f)
{
	size_t *ord = xrealloc(NULL, (t->ncols + 1) * sizeof(*ord));
	int *width = xrealloc(NULL, (t->ncols + 1) * sizeof(*width));
	size_t n = text_layout(t, ord, width);
	char buf[4096];
	for (size_t r = 0; r < t->nrows; r++) {
		for (size_t j = 0; j < n; j++) {
			const struct report_table_col *c = &t->cols[ord[j]];
			put_cell(f, c, j == 0, j + 1 == n, width[j], text_of(c, cell(t, r, ord[j]), buf, sizeof(buf)));
		}
		fputc('\n', f);
		for (size_t k = 0; k < t->ncols; k++) {
			const struct report_table_col *c = &t->cols[k];
			if (!(c->flags & TABLE_EXTRA) || cell(t, r, k)->state != CELL_VALUE)
				continue;
			fprintf(f, "%*s%s\n", c->width > 0 ? c->width : 0, "",
				text_of(c, cell(t, r, k), buf, sizeof(buf)));
		}
	}
	free(ord);
	free(width);
}

void report_table_text(const struct report_table *t, FILE *f)
{
	report_table_text_head(t, f);
	report_table_text_rows(t, f);
}

void report_table_json_row(const struct report_table *t, size_t r, FILE *f)
{
	int first = 1;
	complete(t);
	fputc('{', f);
	for (size_t k = 0; k < t->ncols; k++) {
		const struct report_table_col *c = &t->cols[k];
		const struct table_cell *x = cell(t, r, k);
		if (!c->key || (absent(c, x) && (c->flags & TABLE_OMIT)))
			continue;
		if (!first)
			fputc(',', f);
		first = 0;
		report_json_str(f, c->key);
		fputc(':', f);
		if (absent(c, x)) {
			fputs("null", f);
			continue;
		}
		switch (c->type) {
		case TABLE_STR: report_json_str(f, x->v.s); break;
		case TABLE_RAW: fputs(x->v.s, f); break;
		case TABLE_INT: fprintf(f, c->jfmt ? c->jfmt : "%lld", x->v.i); break;
		case TABLE_UINT: fprintf(f, c->jfmt ? c->jfmt : "%llu", x->v.u); break;
		case TABLE_DBL: fprintf(f, c->jfmt ? c->jfmt : "%.6g", x->v.d); break;
		case TABLE_BOOL: fputs(x->v.b ? "true" : "false", f); break;
		}
	}
	fputc('}', f);
}

void report_table_json_lines(const struct report_table *t, FILE *f)
{
	for (size_t r = 0; r < t->nrows; r++) {
		report_table_json_row(t, r, f);
		fputc('\n', f);
	}
}

void report_table_json_elements(const struct report_table *t, FILE *f)
{
	for (size_t r = 0; r < t->nrows; r++) {
		if (r)
			fputc(',', f);
		report_table_json_row(t, r, f);
	}
}
