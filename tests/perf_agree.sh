#!/bin/bash
# The per-procedure profile of a CPU-bound C program
# agrees with `perf record -e cpu-clock` on the same program. Both count
# user mode only (cpu-clock:u; vprof excludes the kernel, and as root perf
# would otherwise add kernel samples vprof cannot see).
#
# Both profile the same execution: perf records `vprof run` and the
# program it starts (perf report --comms spin), so the program's own
# run-to-run variation (alpha/beta shifted by 2-7 points between two runs
# on a loaded machine; a CI run failed that way) is not counted as
# disagreement. perf's cpu-clock:u cannot see system time, so vprof's
# [kernel] row (the process's system CPU, from getrusage) is left out and
# vprof's shares are renormalized over the rest.
#
# Measure: for every procedure at or above 1% in either profile, the
# absolute difference of its percentage in the two profiles. Threshold:
# at most 5 percentage points each, and a total variation distance (half
# the sum of absolute differences over all procedures) of at most 0.06.
# With ~1000 samples per profile the sampling noise of a share p is
# sqrt(p(1-p)/n) <= 1.6 points, so 5 points is ~3 standard deviations of the difference:
# a real attribution error (wrong image bias, wrong symbol) fails it.
. "$(dirname "$0")/lib.sh"

gcc -O1 -g -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
perf record -q -e cpu-clock:u -F 1000 -o "$TMP/perf.data" -- \
	"$VPROF" run --db "$TMP/db" --event task-clock --freq 1000 -- "$TMP/spin" 100 >/dev/null 2>"$TMP/perf.err"
check "perf record ran vprof run ($(head -c 200 "$TMP/perf.err"))" [ $? -eq 0 ]
perf report -i "$TMP/perf.data" --stdio --comms spin --sort symbol -q 2>/dev/null >"$TMP/perf.txt"
"$VPROF" report --db "$TMP/db" --json -n 0 >"$TMP/v.json"

"$PY" - "$TMP/perf.txt" "$TMP/v.json" <<'PYEOF'
import json, re, sys
perf = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(\S+)", line)
    if m:
        perf[m.group(2)] = perf.get(m.group(2), 0) + float(m.group(1))
v = json.load(open(sys.argv[2]))
vp = {}
for r in v["events"][0]["rows"]:
    if r["procedure"] != "[kernel]":
        vp[r["procedure"]] = vp.get(r["procedure"], 0) + r["percent"]
tot = sum(vp.values()) or 1
vp = {n: 100 * p / tot for n, p in vp.items()}
print("perf:", sorted(perf.items(), key=lambda x: -x[1])[:8])
print("vprof:", [(n, round(p, 2)) for n, p in sorted(vp.items(), key=lambda x: -x[1])[:8]])
names = set(perf) | set(vp)
big = [n for n in names if perf.get(n, 0) >= 1 or vp.get(n, 0) >= 1]
worst = max(abs(perf.get(n, 0) - vp.get(n, 0)) for n in big) if big else 100
tvd = sum(abs(perf.get(n, 0) - vp.get(n, 0)) for n in names) / 200
print(("PASS" if len(big) >= 4 else "FAIL") + " %d procedures above 1%% (expect the fixture's 4)" % len(big))
print(("PASS" if worst <= 5 else "FAIL") + " largest difference %.2f points (limit 5)" % worst)
print(("PASS" if tvd <= 0.06 else "FAIL") + " total variation distance %.3f (limit 0.06)" % tvd)
PYEOF
finish
