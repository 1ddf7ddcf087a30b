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

static char *render(const struct table *t, int json)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&s, &n);
	if (json)
		table_json_lines(t, f);
	else
		table_text(t, f);
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
	struct table t;
	table_init(&t);
	table_col(&t, (struct table_col){ .head = "name", .key = "name", .type = TABLE_STR,
					  .width = TABLE_AUTO, .flags = TABLE_LEFT, .gap = 2, .tpos = 1 });
	table_col(&t, (struct table_col){ .head = "n", .key = "n", .type = TABLE_UINT, .width = TABLE_AUTO });
	table_col(&t, (struct table_col){ .head = "share", .key = "share", .type = TABLE_DBL, .width = 7,
					  .flags = TABLE_PERCENT, .fmt = "%.1f%%", .jfmt = "%.3f" });
	table_col(&t, (struct table_col){ .head = "ratio", .key = "ratio", .type = TABLE_DBL, .width = 8,
					  .fmt = "%.2f", .fmt_big = "%.3g", .inf = "new" });
	table_col(&t, (struct table_col){ .key = "arg", .type = TABLE_INT, .flags = TABLE_OMIT });
	table_col(&t, (struct table_col){ .key = "site", .type = TABLE_STR });
	table_col(&t, (struct table_col){ .key = "ok", .type = TABLE_BOOL });
	table_col(&t, (struct table_col){ .key = "list", .type = TABLE_RAW });
	table_col(&t, (struct table_col){ .key = "note", .type = TABLE_STR, .width = 4, .flags = TABLE_EXTRA });

	table_row(&t);
	table_str(&t, "a\"b");
	table_uint(&t, 12345);
	table_dbl(&t, 0.5);
	table_dbl(&t, INFINITY);
	table_int(&t, 2);
	table_str(&t, "x.c:3");
	table_bool(&t, 1);
	table_raw(&t, "[1,2]");
	table_str(&t, "hint\n");
	table_row(&t);
	table_strf(&t, "%s", "longer name");
	table_uint(&t, 7);
	table_dbl(&t, 0.125);
	table_dbl(&t, 2.5e7);
	table_none(&t);
	table_str(&t, NULL);
	table_bool(&t, 0);
	table_raw(&t, NULL);
	table_str(&t, NULL);
	table_row(&t);
	table_str(&t, "c");
	table_uint(&t, 1);
	table_dbl(&t, 0);
	table_dbl(&t, NAN);
	table_none(&t);
	table_none(&t);
	table_bool(&t, 0);
	table_raw(&t, "{}");
	table_str(&t, "");

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
	table_json_elements(&t, f);
	fclose(f);
	CHECK(s && s[0] == '{' && strstr(s, "},{") && !strchr(s, '\n'),
	      "JSON elements: objects comma-separated, no newlines");
	free(s);

	table_clear(&t);
	expect("no rows: the heading alone, auto widths from it", render(&t, 0), "n   share    ratio  name\n");
	table_free(&t);

	/* A heading line never ends in spaces: an unheaded last column. */
	table_init(&t);
	table_col(&t, (struct table_col){ .head = "what", .type = TABLE_STR, .width = 6, .flags = TABLE_LEFT });
	table_col(&t, (struct table_col){ .head = "", .type = TABLE_STR });
	table_row(&t);
	table_str(&t, "x");
	table_str(&t, "y");
	expect("trailing heading spaces trimmed", render(&t, 0), "what\nx      y\n");
	table_free(&t);
	return g_fail;
}
