#!/bin/bash
# `vprof run --no-python -- /usr/bin/python3 -c '<busy loop>'` then
# `vprof report` lists the interpreter's eval loop among the top procedures,
# attributed to the interpreter's own image (the file python3 resolves to);
# without --no-python, the loop is the Python code's own row, <module> of
# [python:<string>] (tests/pyframes.sh has the rest of Python frames).
. "$(dirname "$0")/lib.sh"

img=$(readlink -f "$PY")
out=$("$VPROF" run --db "$TMP/db" --no-python -- "$PY" -c '
s = 0
for i in range(4000000):
    s += i * i % 7
print(s)' 2>"$TMP/err")
rc=$?
check "python's output unchanged under vprof" [ "$out" = "$("$PY" -c 'print(sum(i*i%7 for i in range(4000000)))')" ]
check "python's exit status unchanged" [ $rc -eq 0 ]
grep -q "backend" "$TMP/err" && pass "vprof run prints its summary" || fail "no summary line: $(cat "$TMP/err")"

"$VPROF" report --db "$TMP/db" --json -n 5 >"$TMP/r.json" || fail "vprof report failed"
"$PY" - "$TMP/r.json" "$img" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1])); img = sys.argv[2]
rows = r["events"][0]["rows"]
print("top rows:", [(x["procedure"], x["image"], x["samples"]) for x in rows])
hit = [x for x in rows if x["procedure"] == "_PyEval_EvalFrameDefault"]
if not hit:
    print("FAIL _PyEval_EvalFrameDefault is not among the top 5 procedures")
elif hit[0]["image"] != img:
    print("FAIL eval loop attributed to %s, expected %s" % (hit[0]["image"], img))
else:
    print("PASS _PyEval_EvalFrameDefault in the top 5, in %s (%.1f%%)" % (img, hit[0]["percent"]))
PYEOF
# The sample count must match the CPU time the process used (250 Hz
# default): at least half of it, since task-clock samples only user time.
n=$(awk -F'\t' 'END{print NR}' "$TMP/db/epochs/1/processes.tsv"); check "one process merged" [ "$n" = 1 ]
awk -F'\t' '{ want = $8 / 1e9 * 250; if ($5 >= want / 2 && $5 <= want * 1.2) print "PASS " $5 " samples for " want " expected from its CPU time"; else print "FAIL " $5 " samples for " want " expected from its CPU time" }' "$TMP/db/epochs/1/processes.tsv"

# The default: the loop is the Python code's own row.
"$VPROF" run --db "$TMP/dbpy" -- "$PY" -c '
s = 0
for i in range(4000000):
    s += i * i % 7
print(s)' >/dev/null 2>&1
"$VPROF" report --db "$TMP/dbpy" --json -n 5 >"$TMP/py.json"
"$PY" - "$TMP/py.json" <<'PYEOF'
import json, sys
rows = json.load(open(sys.argv[1]))["events"][0]["rows"]
top = [(x["procedure"], x["image"]) for x in rows]
ok = ("<module>", "[python:<string>]") in top[:3] and not any(p == "_PyEval_EvalFrameDefault" for p, _ in top)
print("%s by default, the -c code's <module> of [python:<string>] is among the top 3 rows, the evaluator in none of the top 5: %s"
      % ("PASS" if ok else "FAIL", top))
PYEOF
finish
