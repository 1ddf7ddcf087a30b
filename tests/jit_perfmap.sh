#!/bin/bash
# A hostile perf map: a JIT-like program writes /tmp/perf-PID.map
# with bad hex, an overlong name, a 100 KiB line, binary junk, overlapping
# ranges, a truncated last line and 400,000 other lines (~25 MB). The
# program runs as without vprof, the merge says one clear warning and no
# more, and the good line names the JIT code (the later line wins where
# ranges overlap).
. "$(dirname "$0")/lib.sh"
gcc -O1 -o "$TMP/jit_map" "$TOP/tests/fixtures/jit_map.c" || fail "cannot build fixture"
out=$(nice -n 10 "$VPROF" run --db "$TMP/db" -- "$TMP/jit_map" 2>"$TMP/v.err")
rc=$?
map=${out#jit done }
check "fixture ran as without vprof (exit 0, its output)" [ $rc -eq 0 -a "${out%% *}" = "jit" ]
n=$(grep -c 'perf map' "$TMP/v.err")
check "one warning about the map ($n): $(grep 'perf map' "$TMP/v.err" | cut -c1-200)" [ "$n" = 1 ]
check "it says lines were skipped and a name cut" grep -q 'lines skipped.*names cut' "$TMP/v.err"
check "no crash or sanitizer message in the merge" [ -z "$(grep -iE 'segmentation|abort|error:' "$TMP/v.err")" ]
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
rm -f "$map"
"$PY" - "$TMP/r.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
rows = r["events"][0]["rows"]
total = r["events"][0]["total"]
top = rows[0] if rows else {}
print(("PASS" if top.get("procedure") == "jitPlantedFn" and top.get("image") == "[jit:jit_map]"
       and top["percent"] > 60 else "FAIL") + " the good line names the JIT loop: %s" % top)
bad = [x["procedure"] for x in rows if x.get("procedure") in ("olderShadowFn", "hugeRangeBeforeTheGoodLine")]
print(("PASS" if not bad else "FAIL") + " earlier overlapping lines lose to the later one %s" % bad)
PYEOF
finish
