#!/bin/bash
# JIT names: a Node.js script run with --perf-basic-prof (V8 writes
# /tmp/perf-PID.map) shows its JavaScript function names in `vprof report`:
# the merge reads the map while it exists and keeps the names in the
# [jit:node] profile. The planted hot function must lead the report with
# most of the samples, and no longer be lost as [unknown].
. "$(dirname "$0")/lib.sh"
NODE=/usr/bin/node
[ -x "$NODE" ] || { fail "$NODE missing (scripts/deps.sh installs nodejs)"; finish; }
cat >"$TMP/hot.js" <<'JS'
function hotLoopPlanted(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}
function coldHelper(n) { let t = 0; for (let i = 0; i < n; i++) t += i & 7; return t; }
let acc = 0;
const t0 = process.cpuUsage();
while (true) {
  acc += hotLoopPlanted(2e6);
  acc += coldHelper(1e5);
  const u = process.cpuUsage(t0);
  if (u.user + u.system > 1.5e6) break;
}
console.log("node done", acc > 0);
JS
# From $TMP: V8 may write isolate-*-v8.log files into its directory.
out=$(cd "$TMP" && nice -n 10 "$VPROF" run --db "$TMP/db" -- "$NODE" --perf-basic-prof "$TMP/hot.js" 2>"$TMP/v.err")
rc=$?
check "node ran as without vprof (exit 0, its output)" [ $rc -eq 0 -a "$out" = "node done true" ]
# The maps of the processes merged: V8 leaves them; they are ours to remove.
maps=$(awk -F'\t' '{ print "/tmp/perf-" $1 ".map" }' "$TMP/db/epochs/1/processes.tsv" 2>/dev/null)
check "node left a perf map that the merge could read" ls $maps
check "no perf-map warning for V8's map" [ -z "$(grep 'perf map' "$TMP/v.err")" ]
"$VPROF" report --db "$TMP/db" --json -n 5 >"$TMP/r.json"
"$VPROF" report --db "$TMP/db" -n 5 >"$TMP/r.txt"
rm -f $maps
"$PY" - "$TMP/r.json" <<'PYEOF'
import json, sys
r = json.load(open(sys.argv[1]))
ev = r["events"][0]
rows, total = ev["rows"], ev["total"]
hot = [x for x in rows if "hotLoopPlanted" in x.get("procedure", "")]
ok = hot and hot[0]["image"] == "[jit:node]" and hot[0]["percent"] >= 50
print(("PASS" if ok else "FAIL") + " hotLoopPlanted among the top rows in [jit:node] with >= 50%%: %s" %
      [(x.get("procedure"), x["image"], round(x["percent"], 1)) for x in rows[:3]])
print(("PASS" if rows and "hotLoopPlanted" in rows[0].get("procedure", "") else "FAIL") +
      " it is the first row")
unk = sum(x["samples"] for x in rows if x["image"] == "[unknown]")
print(("PASS" if unk < 0.1 * total else "FAIL") + " %d of %d samples left unknown" % (unk, total))
print(("PASS" if r.get("jit_samples", 0) >= 0.5 * total else "FAIL") +
      " the stats count %s samples named from perf maps" % r.get("jit_samples"))
PYEOF
check "the text report names it too" grep -q 'hotLoopPlanted.*\[jit:node\]' "$TMP/r.txt"
# The map is gone now: the names were kept in the database.
"$VPROF" report --db "$TMP/db" -n 3 >"$TMP/r2.txt"
check "names survive the map's removal" grep -q 'hotLoopPlanted' "$TMP/r2.txt"
finish
