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
 * JSON-only and text-only ones too): table_row(), then one table_str /
 * table_int / table_uint / table_dbl / table_bool / table_raw / table_none
 * per column. A value of the wrong type for its column is a programming
 * error: a message and abort().
 *
 * Absent values (table_none, a NULL string, a non-finite double): text
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

enum table_type {
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

struct table_col {
	const char *head;    /* text heading; NULL: not in the text table */
	const char *key;     /* JSON key; NULL: not in JSON */
	enum table_type type;
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

struct table {
	struct table_col *cols;
	size_t ncols, capcols;
	struct table_cell *cells;     /* nrows x ncols */
	size_t nrows, caprows;
	size_t fill;                  /* values given in the last row */
};

void table_init(struct table *t);
void table_free(struct table *t);
/* Forget the rows, keep the columns. */
void table_clear(struct table *t);

/* Add a column (copied; its strings must outlive the table). */
void table_col(struct table *t, struct table_col c);

/* Start a row; then one value per column, in declaration order. */
void table_row(struct table *t);
void table_str(struct table *t, const char *s);      /* copied; NULL: none */
void table_strf(struct table *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void table_int(struct table *t, long long v);
void table_uint(struct table *t, unsigned long long v);
void table_dbl(struct table *t, double v);
void table_bool(struct table *t, int v);
void table_raw(struct table *t, const char *json);   /* copied; NULL: none */
void table_none(struct table *t);

/* Text: the heading line (trailing spaces trimmed; nothing when no column
 * has a heading), the rows (each with its TABLE_EXTRA lines), or both. */
void table_text_head(const struct table *t, FILE *f);
void table_text_rows(const struct table *t, FILE *f);
void table_text(const struct table *t, FILE *f);

/* JSON: row i as one object (no newline); every row as JSON Lines; every
 * row as the elements of an array, comma-separated (no brackets). */
void table_json_row(const struct table *t, size_t i, FILE *f);
void table_json_lines(const struct table *t, FILE *f);
void table_json_elements(const struct table *t, FILE *f);

#endif
