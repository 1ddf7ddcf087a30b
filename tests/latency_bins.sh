#!/bin/bash
# Load-latency bins: `vprof calibrate` finds the levels value
# samples can tell apart on this machine (timed in the handler, which has
# just displaced part of L1 and the TLB), and a pointer chase over a
# working set in the middle of each level lands at least 90% of its load
# samples in that level's bins (`vprof latency`). Here the TSC ticks in
# ~10 ns steps and rdtscp costs ~20 ns, so L1 and L2 merge; cache and
# DRAM must separate: at least two levels.
. "$(dirname "$0")/lib.sh"

cc -O2 -g -o "$TMP/chase" "$TOP/tests/fixtures/chase.c" || { fail "build chase"; finish; }
"$VPROF" calibrate --db "$TMP/db" --max-size 128M --loads 3000 --sample-ms 1000 --json \
	>"$TMP/cal.json" 2>"$TMP/cal.err"
cat "$TMP/cal.json" "$TMP/cal.err"
nl=$(grep -c '"level"' "$TMP/cal.json")
check "calibrate measured levels as samples see them ($nl levels, each with its sampled share)" \
	[ "$nl" -ge 2 -a "$(grep -c '"within"' "$TMP/cal.json")" = "$nl" ]

# One chase per level, in its middle (a power of two between its working
# sets), for about a second of CPU.
$PY - "$TMP/cal.json" <<'PYEOF' >"$TMP/levels"
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    a, b = r["from_bytes"].bit_length() - 1, r["to_bytes"].bit_length() - 1
    print(r["level"], 1 << ((a + b) // 2))
PYEOF
while read -r level size; do
	steps=$((size < 8388608 ? 500000000 : 12000000))   # >= 1000 load samples either way, with room
	"$TMP/chase" "$size" 1000 >/dev/null || { fail "chase $size runs"; continue; }
	rm -rf "$TMP/c"; mkdir -p "$TMP/c"; cp "$TMP/db/calibration" "$TMP/c/"
	st=$(runst "$TMP/c.out" "$TMP/c.err" "$VPROF" run --db "$TMP/c" --values --interp-every 1 \
		--interp-len 16 --freq 1000 -- "$TMP/chase" "$size" "$steps")
	"$VPROF" latency --db "$TMP/c" --json -n 0 >"$TMP/lat.json"
	read -r vtot right top <<<"$($PY - "$TMP/lat.json" "$level" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if r.get("procedure") == "chase" and r.get("kind") == "latency"]
r = max(rows, key=lambda r: r["vtot"]) if rows else {"vtot": 0, "bins": []}
right = sum(b["share"] for b in r["bins"] if b.get("level") == sys.argv[2])
top = r["bins"][0]["level"] if r["bins"] else "none"
print(r["vtot"], "%.4f" % right, top)
PYEOF
)"
	echo "level $level: chase over $size bytes: $vtot load samples, $right in its bins (top bin: $top)"
	check "chase over $((size >> 10)) KiB (level $level): status $st, ${vtot:-0} load samples (>= 1000), $right of them in the $level bins (>= 0.90)" \
		$PY -c 'import sys; sys.exit(not (sys.argv[1] == "0" and int(sys.argv[2]) >= 1000 and float(sys.argv[3]) >= 0.90))' \
		"$st" "${vtot:-0}" "${right:-0}"
done <"$TMP/levels"

# Bad values: one message each.
for bad in "--sample-ms 5" "--chase 1" "--max-size 1K"; do
	"$VPROF" calibrate --db "$TMP/bad" $bad >"$TMP/b.out" 2>"$TMP/b.err"; st=$?
	check "calibrate $bad: usage error, one line ($(head -c 100 "$TMP/b.err"))" \
		[ "$st" = 2 -a "$(wc -l <"$TMP/b.err")" = 1 ]
done
finish
