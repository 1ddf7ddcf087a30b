#!/bin/bash
# vprof coverage: shadow-only runs measure the fraction of
# sampled instruction executions the interpreter handles; real programs
# are near 100%, a program made of x87 instructions (not interpreted yet)
# is not, and its top unhandled instructions are x87 ones. Output and exit
# status of the program are unchanged.
. "$(dirname "$0")/lib.sh"

field() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

cat >"$TMP/x87.c" <<'CEOF'
#include <stdio.h>
int main(void)
{
	volatile long double x = 1.0L;
	for (long i = 1; i < 30000000; i++)
		x = x * 1.0000001L + 1.0L / (long double)i;
	printf("%.6Lf\n", x);
	return 3;
}
CEOF
gcc -O2 -o "$TMP/x87" "$TMP/x87.c" || { fail "build x87"; finish; }

# python3: an interpreter's inner loop is all general-purpose/SSE code.
prog='d={}
for i in range(600000): d[i%977]=d.get(i%977,0)+i*i
print(sum(d.values()))'
$PY -c "$prog" >"$TMP/py.native"
"$VPROF" coverage --db "$TMP/db" --freq 10000 --json -o "$TMP/py.json" -- $PY -c "$prog" >"$TMP/py.out" 2>"$TMP/py.err"
st=$?
[ "$st" = 0 ] && pass "python3: exit status 0" || fail "python3: status $st: $(cat "$TMP/py.err")"
cmp -s "$TMP/py.native" "$TMP/py.out" && pass "python3: output unchanged" || fail "python3: output differs"
n=$(field "$TMP/py.json" interpreted); cov=$(field "$TMP/py.json" coverage)
[ "$n" -ge 10000 ] && pass "python3: $n instructions interpreted" || fail "python3: only $n interpreted"
$PY -c "import sys; sys.exit(not $cov >= 0.99)" && pass "python3: coverage $cov >= 0.99" ||
	fail "python3: coverage $cov < 0.99 ($(cat "$TMP/py.json"))"

# x87: coverage must see what the interpreter cannot do.
"$VPROF" coverage --db "$TMP/db" --json -o "$TMP/x87.json" -- "$TMP/x87" >"$TMP/x87.out" 2>"$TMP/x87.err"
st=$?
[ "$st" = 3 ] && pass "x87: exit status 3 passed through" || fail "x87: status $st"
cov=$(field "$TMP/x87.json" coverage)
$PY -c "import sys; sys.exit(not $cov < 0.9)" && pass "x87: coverage $cov < 0.9" || fail "x87: coverage $cov"
$PY -c 'import json,sys
t=json.load(open(sys.argv[1]))["top_unhandled"]
sys.exit(not (t and t[0]["mnemonic"].startswith("f") and t[0]["count"] > 0))' "$TMP/x87.json" &&
	pass "x87: top unhandled is an x87 instruction" || fail "x87: top unhandled: $(cat "$TMP/x87.json")"

# Text report.
"$VPROF" coverage --db "$TMP/db" -- "$TMP/x87" >/dev/null 2>"$TMP/text.err"
grep -q "top unhandled instructions" "$TMP/text.err" && grep -q "^vprof coverage: " "$TMP/text.err" &&
	pass "text report" || fail "text report: $(cat "$TMP/text.err")"
finish
