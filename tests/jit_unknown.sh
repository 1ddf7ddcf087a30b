#!/bin/bash
# Samples in code no image covers (JIT code in an anonymous mapping) are
# kept in the unknown profile, as DCPI kept its unknown samples, and shown
# (when the process leaves no /tmp/perf-PID.map: see jit_node.sh).
. "$(dirname "$0")/lib.sh"
gcc -O1 -o "$TMP/jit" "$TOP/tests/fixtures/jit.c" || fail "cannot build fixture"
out=$("$VPROF" run --db "$TMP/db" -- "$TMP/jit" 2>/dev/null)
check "JIT fixture ran" [ "$out" = "jit done" ]
check "an unknown profile was written" ls "$TMP"/db/epochs/1/unknown.task-clock.prof
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
"$PY" - "$TMP/r.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["events"][0]["rows"]
unk = sum(x["samples"] for x in rows if x["image"] == "[unknown]")
print(("PASS" if unk > 0.8 * r["samples"] else "FAIL") + " %d of %d samples in [unknown]" % (unk, r["samples"]))
print(("PASS" if r["unknown"] == unk else "FAIL") + " stats count %d unknown samples" % r["unknown"])
PYEOF
finish
