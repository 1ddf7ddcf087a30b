#!/bin/bash
# Names are matched as the user types them, by every command that takes
# one (vprof list, report --callers/--callees; the matcher's cases are in
# tests/unit/name_match.c). On tests/fixtures/cxx_names.cc's "names" run,
# under --stacks: a qualified name without its parameters
# ('geo::Sorter<int>::run'), an unqualified name of a function template
# whose demangled name starts with its return type ('sum_dots' for
# "double geo::sum_dots<double>(...)"), libc's ifuncs by their public
# names ('memcmp' leads to __memcmp_evex_movbe or whichever libc chose),
# a mangled name; and a name two procedures share ('run') lists both and
# picks neither.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
has() { grep -q -- "$1" "$2" && echo y; }
g++ -O1 -g -o cxx "$TOP/tests/fixtures/cxx_names.cc" || { fail "cannot build cxx_names.cc"; finish; }
st=$(runst o.txt v.err "$VPROF" run --db db --stacks --freq 1000 -- ./cxx 2 names)
check "vprof run --stacks cxx_names names ($st)" [ "$st" = 0 ]
"$VPROF" report --db db -n 12

# v WHAT STATUS PATTERN FILE CMD...: CMD exits STATUS and FILE (out or
# err) matches PATTERN.
v() {
	local what=$1 want=$2 re=$3 which=$4; shift 4
	st=$(runst out err "$VPROF" "$@")
	check "$what: exit $want ($st), $which matches /$re/ ($(head -c 300 "$which" | tr '\n' '|'))" \
		[ "$st" = "$want" -a "$(has "$re" "$which")" = y ]
}
v "report --callees 'geo::Sorter<int>::run'" 0 "^event task-clock: callees of geo::Sorter<int>::run(long): [0-9]* samples" out \
	report --db db --callees 'geo::Sorter<int>::run'
check "  ... whose callee is [self]" [ "$(has '  \[self\] ' out)" = y ]
v "report --callers memcmp leads to libc's implementation" 0 "^event task-clock: callers of __memcmp_[a-z0-9_]*:" out \
	report --db db --callers memcmp
check "  ... called from geo::same_blocks" [ "$(has 'geo::same_blocks(' out)" = y ]
v "report --callers memcpy leads to libc's implementation" 0 "^event task-clock: callers of __memcpy_[a-z0-9_]*:" out \
	report --db db --callers memcpy
check "  ... called from geo::copy_blocks" [ "$(has 'geo::copy_blocks(' out)" = y ]
v "report --callers sum_dots --json: callers_of is the procedure's whole name" 0 \
	'"callers_of":"double geo::sum_dots<double>(double const\*, double const\*, long, long)"' out \
	report --db db --callers sum_dots --json
mangled=$(nm cxx | awk '/same_blocks/ {print $3}')
v "report --callers $mangled (the mangled name)" 0 "callers of geo::same_blocks(char const\*" out \
	report --db db --callers "$mangled"
v "report --callees run: two procedures, both listed" 1 "'run' matches 2 procedures" err \
	report --db db --callees run
check "  ... Sorter<int> and Sorter<long>, with samples" \
	[ "$(has '[0-9] samples  geo::Sorter<int>::run(long)' err)" = y -a "$(has '[0-9] samples  geo::Sorter<long>::run(long)' err)" = y ]
check "  ... and no table" [ ! -s out ]
v "report --callers nosuch: one message" 1 "^vprof report: no recorded call stack holds nosuch$" err \
	report --db db --callers nosuch

v "list sum_dots" 0 "^vprof list: double geo::sum_dots<double>(double const\*, double const\*, long, long) in " out \
	list --db db sum_dots
v "list 'geo::Sorter<int>::run'" 0 "^vprof list: geo::Sorter<int>::run(long) in " out \
	list --db db 'geo::Sorter<int>::run'
v "list 'Sorter<long>::run'" 0 "^vprof list: geo::Sorter<long>::run(long) in " out \
	list --db db 'Sorter<long>::run'
v "list memcmp" 0 "^vprof list: __memcmp_[a-z0-9_]* in .*libc.so.6" out list --db db memcmp
v "list run: both listed, nothing listed" 1 "'run' matches 2 procedures" err list --db db run
check "  ... no disassembly" [ ! -s out ]
v "list nosuch: one message" 1 "^vprof list: no procedure 'nosuch' has samples or values in db, epoch 1$" err \
	list --db db nosuch
finish
