#!/bin/bash
# Memory-order hazards from interpreted windows (`vprof run --hazards`,
# `vprof hazards`), on tests/fixtures/hazards.c: a store forwarding
# failure (a 2-byte store under an 8-byte load) and a 4K alias (a store to
# b[i], a load of a[i], b 4096 bytes after a) found with their lines; the
# same loops fixed (clean) yield none; a 4K alias whose load address
# comes from the store's own data is dropped (data dependence); output and
# exit status unchanged.
# That the planted pairs cost time on this CPU is bench/hazards.sh's.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/fixtures/hazards.c
cc -O2 -g -o "$TMP/hz" "$SRC" || { fail "build hazards"; finish; }
line() { grep -n "/\* $1 \*/" "$SRC" | cut -d: -f1; }

"$TMP/hz" all 60000000 >"$TMP/plain.out"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --hazards -- "$TMP/hz" all 60000000)
same=no; cmp -s "$TMP/plain.out" "$TMP/v.out" && same=yes
check "output unchanged under --hazards, exit status $st" [ "$same" = yes -a "$st" = 0 ]
"$VPROF" hazards --db "$TMP/db" >&2
"$VPROF" hazards --db "$TMP/db" --json -n 0 >"$TMP/hz.json"
found=$("$PY" - "$TMP/hz.json" "$(line FORWARD_STORE)" "$(line FORWARD_LOAD)" "$(line ALIAS_STORE)" "$(line ALIAS_LOAD)" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
fs, fl, as_, al = sys.argv[2:6]
def find(kind, sl, ll):
    for r in rows:
        if r["kind"] == kind and (r["store"]["source"] or "").endswith(":" + sl) and (r["load"]["source"] or "").endswith(":" + ll):
            return r
out, ok = [], True
for kind, sl, ll in (("forward", fs, fl), ("4k-alias", as_, al)):
    r = find(kind, sl, ll)
    if not r:
        out.append("%s %s->%s missing" % (kind, sl, ll)); ok = False; continue
    good = r["load_share"] > 0.9 and r["count"] >= 100
    ok = ok and good
    out.append("%s store line %s, load line %s: seen %d, %.0f%% of the load's executions%s" % (
        kind, sl, ll, r["count"], 100 * r["load_share"], "" if good else " LOW"))
others = [r for r in rows if not any(r is find(k, s, l) for k, s, l in (("forward", fs, fl), ("4k-alias", as_, al)))]
ok = ok and not others
out.append("%d other pairs" % len(others))
print("; ".join(out))
sys.exit(0 if ok else 1)
PYEOF
)
check "the planted pairs with their lines: $found" [ $? = 0 ]
"$VPROF" run --db "$TMP/db_clean" --hazards -- "$TMP/hz" clean 60000000 >/dev/null 2>&1
"$VPROF" hazards --db "$TMP/db_clean" >"$TMP/clean.txt"
check "the fixed loops yield no hazard" grep -q "no hazard in the windows" "$TMP/clean.txt"
"$VPROF" run --db "$TMP/db_dep" --hazards -- "$TMP/hz" dependent 60000000 >/dev/null 2>&1
"$VPROF" hazards --db "$TMP/db_dep" --json -n 0 >"$TMP/dep.json"
ndep=$(grep -c '"kind":"4k-alias"' "$TMP/dep.json")
check "a 4K alias whose load address comes from the store's data is dropped ($ndep 4K pairs)" [ "$ndep" = 0 ]
finish
