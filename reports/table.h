/*
 * table.h — one row model for the reports: a report is a query that
 * appends rows of values to a table, plus the table's column list; the
 * table renders itself as an aligned text table or as JSON objects (one
 * per row, keys = the columns' keys). See docs/architecture.md, "Writing
 * a report".
 *
 * A column has a text heading (NULL: JSON only), a JSON key (NULL: text
 * only), a type, printf formats for text and JSON, a width and an
 * alignment. Columns are declared in JSON key order; `tpos` reorders the
 * text table (a stable sort on it; all 0: declaration order), since the
 * reports print names last in text and first in JSON.
 *
 * Rows are appended value by value in declaration order (every column,
 * JSON-only and text-only ones too): report_table_row(), then one report_table_str /
 * report_table_int / report_table_uint / report_table_dbl / report_table_bool / report_table_raw / report_table_none
 * per column. A value of the wrong type for its column is a programming
 * error: a message and abort().
 *
 * Absent values (report_table_none, a NULL string, a non-finite double): text
 * shows the column's `none` ("-" by default; an extra line is left out),
 * JSON writes null, or leaves the key out with TABLE_OMIT. An infinite
 * double shows the column's `inf` text (default: as `none`); in JSON it is
 * null (JSON has no infinity).
 *
 * Nothing here is async-signal-safe; one thread.
 */
#ifndef VPROF_REPORTS_TABLE_H
#define VPROF_REPORTS_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum report_table_type {
	TABLE_STR,      /* const char *; JSON: a string, escaped */
	TABLE_INT,      /* long long; default format %lld */
	TABLE_UINT,     /* unsigned long long; %llu */
	TABLE_DBL,      /* double; text %.2f, JSON %.6g by default */
	TABLE_BOOL,     /* int; JSON true/false, text yes/no */
	TABLE_RAW,      /* JSON text written as is (an array, an object) */
};

enum {
	TABLE_LEFT = 1,      /* text: left-aligned (padded on the right,
				unless it is the last column) */
	TABLE_PERCENT = 2,   /* double, a fraction: text shows it x 100 */
	TABLE_OMIT = 4,      /* JSON: an absent value leaves the key out */
	TABLE_EXTRA = 8,     /* text: not a column but a line below the row,
				indented by `width` spaces */
};

#define TABLE_AUTO (-1)      /* width: the widest of heading and values */

struct report_table_col {
	const char *head;    /* text heading; NULL: not in the text table */
	const char *key;     /* JSON key; NULL: not in JSON */
	enum report_table_type type;
	int width;           /* text: minimum width, 0 none, TABLE_AUTO */
	unsigned flags;      /* TABLE_* */
	const char *fmt;     /* text printf format of the value, e.g. "%.2f%%" */
	const char *jfmt;    /* JSON printf format (numbers; "\"%#llx\"" for a
				hex string) */
	const char *fmt_big; /* text format for a double with |v| >= 1e6 */
	const char *none;    /* text of an absent value (default "-") */
	const char *inf;     /* text of an infinite double (default: none's) */
	int gap;             /* spaces before the column in text (0: one) */
	int tpos;            /* text order key (stable; default 0) */
};

struct table_cell;

struct report_table {
	struct report_table_col *cols;
	size_t ncols, capcols;
	struct table_cell *cells;     /* nrows x ncols */
	size_t nrows, caprows;
	size_t fill;                  /* values given in the last row */
};

void report_table_init(struct report_table *t);
void report_table_free(struct report_table *t);
/* Forget the rows, keep the columns. */
void report_table_clear(struct report_table *t);

/* Add a column (copied; its strings must outlive the table). */
void report_table_col(struct report_table *t, struct report_table_col c);

/* Start a row; then one value per column, in declaration order. */
void report_table_row(struct report_table *t);
void report_table_str(struct report_table *t, const char *s);      /* copied; NULL: none */
void report_table_strf(struct report_table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void report_table_int(struct report_table *t, long long v);
void report_table_uint(struct report_table *t, unsigned long long v);
void report_table_dbl(struct report_table *t, double v);
void report_table_bool(struct report_table *t, int v);
void report_table_raw(struct report_table *t, const char *json);   /* copied; NULL: none */
void report_table_none(struct report_table *t);

/* Text: the heading line (trailing spaces trimmed; nothing when no column
 * has a heading), the rows (each with its TABLE_EXTRA lines), or both. */
void report_table_text_head(const struct report_table *t, FILE *f);
void report_table_text_rows(const struct report_table *t, FILE *f);
void report_table_text(const struct report_table *t, FILE *f);

/* JSON: row i as one object (no newline); every row as JSON Lines; every
 * row as the elements of an array, comma-separated (no brackets). */
void report_table_json_row(const struct report_table *t, size_t i, FILE *f);
void report_table_json_lines(const struct report_table *t, FILE *f);
void report_table_json_elements(const struct report_table *t, FILE *f);

#endif
