#!/bin/bash
# Value windows reach the instruction that cost the time. A timer
# interrupt lands after the instruction that took the time, so a window
# that only runs forward from the sample never meets a divide or a
# missing load in a loop longer than itself. At the defaults of `vprof
# run --values` (no length or rate given):
#  - a divide whose divisor is 64 in 95% of iterations, in a 24-instruction
#    loop body (tests/fixtures/skid_div.c): the divisor ranks first in
#    `vprof invariants`, 64, named at the divide's line;
#  - a pointer chase over 64 MiB (tests/fixtures/chase.c): its load ranks
#    first in `vprof latency`, with most of its samples in the DRAM bins;
#    its row reads "the load at chase.c:16 in chase() waits on DRAM (~N
#    cycles) in P% of its samples: T% of the time", and T is chase()'s
#    share of the run as `vprof report` counts it in the same run (the
#    loop is the load, a subtract and a branch, and the PC samples land
#    after the load), within 2 points.
# Both failed before windows ran on to close their loop ("no invariant
# candidates"; the chase's load not found).
. "$(dirname "$0")/lib.sh"

cc -O2 -g -o "$TMP/div" "$TOP/tests/fixtures/skid_div.c" || { fail "build skid_div"; finish; }
cc -O2 -g -o "$TMP/chase" "$TOP/tests/fixtures/chase.c" || { fail "build chase"; finish; }

"$TMP/div" 400000000 >"$TMP/plain.out"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --values -- "$TMP/div" 400000000)
check "skid_div: exit status ($st) and output unchanged under --values" \
	[ "$st" = 0 ] && cmp -s "$TMP/plain.out" "$TMP/v.out"
"$VPROF" report --db "$TMP/db" >"$TMP/rep.txt"
grep '^value samples' "$TMP/rep.txt"
line=$(grep -n 'acc = (acc' "$TOP/tests/fixtures/skid_div.c" | cut -d: -f1)
"$VPROF" invariants --db "$TMP/db" --json >"$TMP/inv.json"
head -3 "$TMP/inv.json"
read -r val src <<<"$($PY - "$TMP/inv.json" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
rows = [r for r in rows if "value" in r]
r = rows[0] if rows else {}
print(r.get("value"), r.get("source", "-"))
PYEOF
)"
check "skid_div: the top invariant is the divisor, 64, at the divide (skid_div.c:$line): got $val at $src" \
	[ "$val" = 64 ] && [ "${src##*:}" = "$line" ]

"$VPROF" calibrate --db "$TMP/cdb" --max-size 128M --loads 3000 --sample-ms 1000 >/dev/null 2>&1
st=$(runst "$TMP/c.out" "$TMP/c.err" "$VPROF" run --db "$TMP/cdb" --values -- "$TMP/chase" 67108864 15000000)
"$VPROF" latency --db "$TMP/cdb" --json -n 0 >"$TMP/lat.json"
"$VPROF" latency --db "$TMP/cdb" -n 3
"$VPROF" report --db "$TMP/cdb" --json >"$TMP/crep.json"
head -c 600 "$TMP/lat.json"; echo
cline=$(grep -n 'p = (void \*\*)\*p' "$TOP/tests/fixtures/chase.c" | cut -d: -f1)
res=$($PY - "$TMP/lat.json" "$TMP/crep.json" "$cline" <<'PYEOF'
import json, re, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
r = rows[0] if rows else {"bins": []}
dram = sum(b["share"] for b in r["bins"] if b.get("level") == "DRAM")
rep = json.load(open(sys.argv[2]))
ev = max(rep["events"], key=lambda e: e.get("total", 0))
procs = [x for x in ev["rows"] if x.get("procedure") == "chase"]
pshare = procs[0]["percent"] / 100 if procs else 0
sent = r.get("sentence", "")
m = re.fullmatch(r"the load at \S*chase\.c:(\d+) in chase\(\) waits on DRAM \(~(\d+) cycles\) "
                 r"in ([\d.]+)% of its samples: ([\d.]+)% of the time", sent)
words = bool(m) and m.group(1) == sys.argv[3] and abs(float(m.group(4)) - 100 * r.get("time", -1)) <= 0.5
print(r.get("procedure"), "%.3f" % dram, r.get("vtot", 0), "%.4f" % r.get("time", 0), "%.4f" % pshare,
      "yes" if words else "no")
print(sent)
PYEOF
)
read -r proc dram vtot time pshare words <<<"$(head -1 <<<"$res")"
sentence=$(sed -n 2p <<<"$res")
check "chase: the top load of vprof latency is the chase's ($proc, $vtot samples), $dram of them in DRAM bins (>= 0.8)" \
	[ "$proc" = chase ] && [ "${vtot:-0}" -ge 100 ] && $PY -c "import sys; sys.exit(not $dram >= 0.8)"
check "chase: its row reads as a sentence naming chase.c:$cline, DRAM and its time ($sentence)" \
	[ "$words" = yes ]
check "chase: its time ($time) is chase()'s share of the run in vprof report ($pshare, >= 0.8), within 0.02" \
	$PY -c "import sys; t, p = $time, $pshare; sys.exit(not (p >= 0.8 and abs(t - p) <= 0.02))"
finish
