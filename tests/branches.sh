#!/bin/bash
# Branch outcomes from interpreted windows (`vprof run --branches`,
# `vprof branches`), on tests/fixtures/branches.c: planted shares recovered
# within 3 points by each branch's source line:
#  - a branch one way in 90% of executions (BRANCH90), one at 50% (BRANCH50);
#  - the loop branch of a 3-trip loop (LOOP3: on 2 of 3 ways round, the
#    loop goes on) and of a 100-trip loop (LOOP100: 99 of 100);
# the program's output and exit status unchanged; --branches alone records
# no operand values, and with --values both kinds are kept.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/fixtures/branches.c
cc -O2 -g -o "$TMP/branches" "$SRC" || { fail "build branches"; finish; }
"$TMP/branches" 2700000 >"$TMP/plain.out"

# measure DB: run the fixture (~3 s of CPU) at 4 kHz with --branches and print
# the planted branches' shares against the truth; succeed when every one
# is within 3 points.
measure() {
	local db=$1
	rm -rf "$db"
	st=$(runst "$TMP/b.out" "$TMP/b.err" "$VPROF" run --db "$db" --branches --freq 4000 -- "$TMP/branches" 2700000)
	[ "$st" = 0 ] || { echo "exit status $st" >&2; cat "$TMP/b.err" >&2; echo "run failed"; return 1; }
	"$VPROF" branches --db "$db" -n 0 >&2
	"$VPROF" branches --db "$db" -n 0 --json >"$TMP/br.json"
	"$PY" - "$TMP/br.json" "$SRC" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
lines = {}
for i, l in enumerate(open(sys.argv[2]), 1):
    for m in ("BRANCH90", "BRANCH50", "LOOP3", "LOOP100"):
        if "/* %s */" % m in l:
            lines[m] = i
# truth: the share of the majority way (50% either way for BRANCH50)
truth = {"BRANCH90": 0.90, "BRANCH50": 0.50, "LOOP3": 2 / 3, "LOOP100": 0.99}
out, ok = [], True
for m, line in sorted(lines.items(), key=lambda kv: kv[1]):
    here = [r for r in rows if (r.get("source") or "").endswith("branches.c:%d" % line)]
    if not here:
        out.append("%s: no branch at line %d" % (m, line)); ok = False; continue
    r = max(here, key=lambda r: r["outcomes"])   # a loop's own branch, not its entry test
    p = r["taken_share"]
    got = abs(p - 0.5) + 0.5 if m != "BRANCH50" else p
    good = abs(got - truth[m]) <= 0.03
    ok &= good
    out.append("%s %.1f%% (truth %.1f%%, %d outcomes)%s" % (m, 100 * got, 100 * truth[m], r["outcomes"], "" if good else " OFF"))
print("; ".join(out))
sys.exit(0 if ok and len(lines) == 4 else 1)
PYEOF
}
check_twice "planted branch shares within 3 points" measure "$TMP/db"
same=no; cmp -s "$TMP/plain.out" "$TMP/b.out" && same=yes
check "output (a checksum of the work) unchanged under --branches, exit status 0" [ "$same" = yes ]

"$VPROF" invariants --db "$TMP/db" --all --json >"$TMP/inv.json"
nops=$("$PY" -c 'import json, sys; print(sum(1 for l in open(sys.argv[1]) if l.startswith("{") and "value" in json.loads(l)))' "$TMP/inv.json")
check "--branches alone records no operand values ($nops rows in vprof invariants --all)" [ "$nops" = 0 ]

rm -rf "$TMP/db2"
"$VPROF" run --db "$TMP/db2" --values --branches --freq 1000 -- "$TMP/branches" 900000 >/dev/null 2>&1
"$VPROF" invariants --db "$TMP/db2" --all --json >"$TMP/inv2.json"
nops=$("$PY" -c 'import json, sys; print(sum(1 for l in open(sys.argv[1]) if l.startswith("{") and "value" in json.loads(l)))' "$TMP/inv2.json")
nbr=$("$VPROF" branches --db "$TMP/db2" --json | grep -c '^{')
check "--values --branches keeps both ($nops value rows, $nbr branches)" [ "$nops" -gt 0 -a "$nbr" -gt 0 ]

rm -rf "$TMP/db3"
"$VPROF" run --db "$TMP/db3" --values --freq 1000 -- "$TMP/branches" 450000 >/dev/null 2>&1
"$VPROF" branches --db "$TMP/db3" >"$TMP/none.txt"
check "--values alone records no branch outcomes, and says how to get them" grep -q 'vprof run --branches records them' "$TMP/none.txt"

"$VPROF" branches --db "$TMP/db" --min 0 >"$TMP/bad.txt" 2>&1; st=$?
check "a bad --min is one message and status 2" [ "$st" = 2 -a "$(wc -l <"$TMP/bad.txt")" -le 2 ]
finish
