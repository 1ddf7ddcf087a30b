/*
 * The reports' row model (reports/table.c): text alignment, TABLE_AUTO
 * widths, tpos ordering, extra lines, absent values (null, left out, "-"),
 * percent and big-number formats, JSON escaping and non-finite doubles.
 * Exact bytes: the renderers are deterministic.
 */
#include "reports/table.h"
#include "check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static char *render(const struct report_table *t, int json)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (json)
		report_table_json_lines(t, f);
	else
		report_table_text(t, f);
	fclose(f);
	return s;
}

static void expect(const char *what, char *got, const char *want)
{
	CHECK(!strcmp(got, want), "%s%s%s%s%s", what, strcmp(got, want) ? ": got\n" : "",
	      strcmp(got, want) ? got : "", strcmp(got, want) ? "want\n" : "", strcmp(got, want) ? want : "");
	free(got);
}

int main(void)
{
	struct report_table t;
	report_table_init(&t);
	report_table_col(&t, (struct report_table_col){ .head = "name", .key = "name", .type = TABLE_STR,
					  .width = TABLE_AUTO, .flags = TABLE_LEFT, .gap = 2, .tpos = 1 });
	report_table_col(&t, (struct report_table_col){ .head = "n", .key = "n", .type = TABLE_UINT, .width = TABLE_AUTO });
	report_table_col(&t, (struct report_table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 7,
					  .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.3f" });
	report_table_col(&t, (struct report_table_col){ .head = "ratio", .key = "ratio", .type = TABLE_DBL, .width = 8,
					  .fmt = "%.2f", .fmt_big = "%.3g", .inf = "new" });
	report_table_col(&t, (struct report_table_col){ .key = "arg", .type = TABLE_INT, .flags = TABLE_OMIT });
	report_table_col(&t, (struct report_table_col){ .key = "site", .type = TABLE_STR });
	report_table_col(&t, (struct report_table_col){ .key = "ok", .type = TABLE_BOOL });
	report_table_col(&t, (struct report_table_col){ .key = "list", .type = TABLE_RAW });
	report_table_col(&t, (struct report_table_col){ .key = "note", .type = TABLE_STR, .width = 4, .flags = TABLE_EXTRA });

	report_table_row(&t);
	report_table_str(&t, "a\"b");
	report_table_uint(&t, 12345);
	report_table_dbl(&t, 0.5);
	report_table_dbl(&t, INFINITY);
	report_table_int(&t, 2);
	report_table_str(&t, "x.c:3");
	report_table_bool(&t, 1);
	report_table_raw(&t, "[1,2]");
	report_table_str(&t, "hint\n");
	report_table_row(&t);
	report_table_strf(&t, "%s", "longer name");
	report_table_uint(&t, 7);
	report_table_dbl(&t, 0.125);
	report_table_dbl(&t, 2.5e7);
	report_table_none(&t);
	report_table_str(&t, NULL);
	report_table_bool(&t, 0);
	report_table_raw(&t, NULL);
	report_table_str(&t, NULL);
	report_table_row(&t);
	report_table_str(&t, "c");
	report_table_uint(&t, 1);
	report_table_dbl(&t, 0);
	report_table_dbl(&t, NAN);
	report_table_none(&t);
	report_table_none(&t);
	report_table_bool(&t, 0);
	report_table_raw(&t, "{}");
	report_table_str(&t, "");

	expect("text: numbers first (tpos), auto widths, percent, inf/big/nan texts, extra lines, "
	       "no padding after the last column",
	       render(&t, 0),
	       "    n   share    ratio  name\n"
	       "12345   50.0%      new  a\"b\n"
	       "    hint\n\n"
	       "    7   12.5%  2.5e+07  longer name\n"
	       "    1    0.0%        -  c\n"
	       "    \n");
	expect("JSON: declaration order, escapes, omitted and null values, non-finite as null",
	       render(&t, 1),
	       "{\"name\":\"a\\\"b\",\"n\":12345,\"share\":0.500,\"ratio\":null,\"arg\":2,\"site\":\"x.c:3\","
	       "\"ok\":true,\"list\":[1,2],\"note\":\"hint\\u000a\"}\n"
	       "{\"name\":\"longer name\",\"n\":7,\"share\":0.125,\"ratio\":2.5e+07,\"site\":null,"
	       "\"ok\":false,\"list\":null,\"note\":null}\n"
	       "{\"name\":\"c\",\"n\":1,\"share\":0.000,\"ratio\":null,\"site\":null,\"ok\":false,"
	       "\"list\":{},\"note\":\"\"}\n");

	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	report_table_json_elements(&t, f);
	fclose(f);
	CHECK(s && s[0] == '{' && strstr(s, "},{") && !strchr(s, '\n'),
	      "JSON elements: objects comma-separated, no newlines");
	free(s);

	report_table_clear(&t);
	expect("no rows: the heading alone, auto widths from it", render(&t, 0), "n   share    ratio  name\n");
	report_table_free(&t);

	/* A heading line never ends in spaces: an unheaded last column. */
	report_table_init(&t);
	report_table_col(&t, (struct report_table_col){ .head = "what", .type = TABLE_STR, .width = 6, .flags = TABLE_LEFT });
	report_table_col(&t, (struct report_table_col){ .head = "", .type = TABLE_STR });
	report_table_row(&t);
	report_table_str(&t, "x");
	report_table_str(&t, "y");
	expect("trailing heading spaces trimmed", render(&t, 0), "what\nx      y\n");
	report_table_free(&t);
	return g_fail;
}
