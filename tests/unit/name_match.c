/*
 * The procedure-name matcher every command that takes a name shares
 * (report_name_match, report_names_pick in reports/report.c): each row is
 * a name as typed, a procedure (demangled and symbol-table names) and the
 * level it must match at; then the pick: the closest level wins, several
 * at it are listed, a PLT stub loses to the function it is named after.
 */
#include "reports/report.h"
#include "check.h"

#include <string.h>

#define X(want, proc, sys, level) { want, proc, sys, level, #level }
static const struct {
	const char *want, *proc, *sys;
	int level;
	const char *name;
} kCases[] = {
	X("ns::walk(long, double)", "ns::walk(long, double)", "_ZN2ns4walkEld", REPORT_NAME_EXACT),
	X("_ZN2ns4walkEld", "ns::walk(long, double)", "_ZN2ns4walkEld", REPORT_NAME_EXACT),
	X("ns::walk", "ns::walk(long, double)", "_ZN2ns4walkEld", REPORT_NAME_QUALIFIED),
	X("walk", "ns::walk(long, double)", "_ZN2ns4walkEld", REPORT_NAME_UNQUALIFIED),
	X("walk(long, double)", "ns::walk(long, double)", NULL, REPORT_NAME_UNQUALIFIED),
	X("geo::Sorter<int>::run", "geo::Sorter<int>::run(long)", NULL, REPORT_NAME_QUALIFIED),
	X("Sorter<int>::run", "geo::Sorter<int>::run(long)", NULL, REPORT_NAME_UNQUALIFIED),
	X("run", "geo::Sorter<int>::run(long)", NULL, REPORT_NAME_UNQUALIFIED),
	X("geo::Sorter::run", "geo::Sorter<int>::run(long)", NULL, REPORT_NAME_QUALIFIED),
	X("Sorter::run", "geo::Sorter<int>::run(long) const", NULL, REPORT_NAME_UNQUALIFIED),
	X("double geo::sum_dots<double>", "double geo::sum_dots<double>(double const*, long)", NULL,
	  REPORT_NAME_QUALIFIED),
	X("geo::sum_dots<double>", "double geo::sum_dots<double>(double const*, long)", NULL,
	  REPORT_NAME_QUALIFIED),
	X("sum_dots", "double geo::sum_dots<double>(double const*, long)", NULL, REPORT_NAME_UNQUALIFIED),
	X("sum_dots<double>", "double geo::sum_dots<double>(double const*, long)", NULL,
	  REPORT_NAME_UNQUALIFIED),
	X("std::vector<int, std::allocator<int> >::push_back",
	  "std::vector<int, std::allocator<int> >::push_back(int const&)", NULL, REPORT_NAME_QUALIFIED),
	X("push_back", "std::vector<int, std::allocator<int> >::push_back(int const&)", NULL,
	  REPORT_NAME_UNQUALIFIED),
	X("foo", "(anonymous namespace)::foo(int)", NULL, REPORT_NAME_UNQUALIFIED),
	X("(anonymous namespace)::foo", "(anonymous namespace)::foo(int)", NULL, REPORT_NAME_QUALIFIED),
	X("operator()", "Cmp::operator()(int, int) const", NULL, REPORT_NAME_UNQUALIFIED),
	X("Cmp::operator<", "Cmp::operator<(Cmp const&) const", NULL, REPORT_NAME_QUALIFIED),
	X("operator<<", "Log::operator<<(int)", NULL, REPORT_NAME_UNQUALIFIED),
	X("std::operator<< <std::char_traits<char> >",
	  "std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char const*)", NULL,
	  REPORT_NAME_QUALIFIED),
	X("operator<<", "std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&, char const*)",
	  NULL, REPORT_NAME_WORD),
	X("memcmp", "memcmp", "memcmp", REPORT_NAME_EXACT),
	X("memcmp", "__memcmp_evex_movbe", "__memcmp_evex_movbe", REPORT_NAME_WORD),
	X("memcpy", "__memcpy_avx_unaligned_erms", NULL, REPORT_NAME_WORD),
	X("memcmp", "__wmemcmp_evex_movbe", NULL, REPORT_NAME_PART),
	X("memcmp", "memcmp@plt", NULL, REPORT_NAME_STUB),
	X("memcmp@plt", "memcmp@plt", NULL, REPORT_NAME_EXACT),
	X("__libc_start_main", "__libc_start_main@@GLIBC_2.34", NULL, REPORT_NAME_QUALIFIED),
	X("sum", "double geo::sum_dots<double>(double const*, long)", NULL, REPORT_NAME_WORD),
	X("um_do", "double geo::sum_dots<double>(double const*, long)", NULL, REPORT_NAME_PART),
	X("walker", "ns::walk(long, double)", NULL, 0),
	X("", "main", "main", 0),
};

int main(void)
{
	for (size_t i = 0; i < sizeof(kCases) / sizeof(kCases[0]); i++) {
		int got = report_name_match(kCases[i].want, kCases[i].proc, kCases[i].sys);
		CHECK(got == kCases[i].level, "'%s' names '%s' at %s (got %d, want %d)", kCases[i].want,
		      kCases[i].proc, kCases[i].name, got, kCases[i].level);
	}

	/* The pick: the ifunc's implementation, not the PLT stub, not wmemcmp. */
	struct report_names c;
	const char *got;
	report_names_init(&c, "memcmp");
	report_names_add(&c, "memcmp@plt", NULL, "/bin/prog", 3);
	report_names_add(&c, "__wmemcmp_evex_movbe", NULL, "/lib/libc.so.6", 9);
	report_names_add(&c, "__memcmp_evex_movbe", NULL, "/lib/libc.so.6", 5);
	report_names_add(&c, "__memcmp_evex_movbe", NULL, "/lib/libc.so.6", 5);
	report_names_add(&c, "main", NULL, "/bin/prog", 100);
	int rc = report_names_pick(&c, "test", &got);
	CHECK(rc == 0 && got && !strcmp(got, "__memcmp_evex_movbe"), "memcmp picks __memcmp_evex_movbe (%d, %s)",
	      rc, got ? got : "none");
	CHECK(c.n == 3 && c.v[0].samples == 10, "occurrences of one name add up (%zu names, %llu samples)",
	      c.n, (unsigned long long)c.v[0].samples);
	report_names_free(&c);

	/* Two at the closest level: listed (on stderr), none picked. */
	report_names_init(&c, "run");
	report_names_add(&c, "geo::Sorter<int>::run(long)", NULL, "/bin/prog", 62);
	report_names_add(&c, "geo::Sorter<long>::run(long)", NULL, "/bin/prog", 63);
	report_names_add(&c, "rerun", NULL, "/bin/prog", 1000);
	rc = report_names_pick(&c, "test", &got);
	CHECK(rc == -2 && !got, "'run' with two members named run: ambiguous (%d)", rc);
	report_names_free(&c);

	/* The exact name wins over closer-sounding others. */
	report_names_init(&c, "geo::Sorter<int>::run(long)");
	report_names_add(&c, "geo::Sorter<int>::run(long)", NULL, "/bin/prog", 1);
	report_names_add(&c, "geo::Sorter<int>::run(long) [clone .cold]", NULL, "/bin/prog", 50);
	rc = report_names_pick(&c, "test", &got);
	CHECK(rc == 0 && got && !strcmp(got, "geo::Sorter<int>::run(long)"), "an exact name is picked (%d)", rc);
	report_names_free(&c);

	report_names_init(&c, "nosuch");
	report_names_add(&c, "main", "main", "/bin/prog", 1);
	CHECK(report_names_pick(&c, "test", &got) == -1 && !got, "no match: -1, nothing said");
	report_names_free(&c);
	return g_fail;
}
