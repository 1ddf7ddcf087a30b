#!/bin/bash
# Samples are proportional to CPU time, for
# short processes as for long ones, and the summary's achieved rate is the
# asked one.
#
# 200 short processes (~30 ms of CPU each, tests/fixtures/burn.c copied
# as burnshort) and one long one (~2 s, burnlong) under `vprof run --freq
# F`, F = 1000 and 250. For each class, what the report counts for it
# (its samples, from processes.tsv, plus its [kernel:EXE] row, the system
# CPU, and its [start-up:EXE] row, the user CPU before sampling began: the
# dynamic loader and the constructors, ~5 ms of a ~45 ms process here)
# must be within 10% of its CPU time (processes.tsv cpu_ns) x F. Without
# the [start-up] row the short class came to 0.84-0.87 of it; with it,
# 0.98-1.02 in runs by hand. The samples alone, over the CPU after arming
# (user and system; task-clock sees user only), are checked within 15%.
#
# Then the achieved rate: a CPU-bound program (spin.c, ~1.5 s) at 250 and
# 1000 Hz, three runs each: the median within 5% of the asked rate, every
# run within 10%, the three runs measured again once if not. (Before, each thread's period was jittered once, by up
# to +-1/16: one thread in five ran more than 5% off.) CPU time, not wall
# time, is what counts, so the load on the machine does not move it much.
. "$(dirname "$0")/lib.sh"

gcc -O1 -o "$TMP/burn" "$TOP/tests/fixtures/burn.c" || fail "cannot build burn"
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build spin"
cp "$TMP/burn" "$TMP/burnshort"; cp "$TMP/burn" "$TMP/burnlong"

# Calibrate: CPU ns per million iterations, median of 3 unprofiled runs.
per=$(for i in 1 2 3; do "$PY" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:])
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(int((r.ru_utime + r.ru_stime) * 1e9 / 300))' "$TMP/burn" 300; done | sort -n | sed -n 2p)
short=$(( 30000000 / per )); long=$(( 2000000000 / per ))
[ "$short" -ge 1 ] || short=1

for f in 1000 250; do
	db="$TMP/db$f"
	"$VPROF" run --freq $f --db "$db" -- bash -c \
		"cd '$TMP' && for i in \$(seq 200); do ./burnshort $short; done; ./burnlong $long; true" \
		>/dev/null 2>"$TMP/run$f.err"
	"$VPROF" report --db "$db" --by image --json -n 0 >"$TMP/r$f.json"
	"$PY" - "$f" "$db" "$TMP/r$f.json" >"$TMP/cls$f" <<'EOF'
import json, sys
f = int(sys.argv[1]); db = sys.argv[2]
d = json.load(open(sys.argv[3]))
rows = {}
for e in d["events"]:
    for r in e["rows"]:
        rows[r["image"]] = rows.get(r["image"], 0) + r["samples"]
for cls in ("burnshort", "burnlong"):
    n = m = cpu = armed = 0
    for l in open(db + "/epochs/1/processes.tsv"):
        c = l.rstrip("\n").split("\t")
        if not c[2].endswith("/" + cls) or c[6] != "1":
            continue
        n += 1; m += int(c[4]); cpu += int(c[7])
        armed += int(c[12]) if len(c) > 12 and c[12] else 0
    k = rows.get("[kernel:%s]" % cls, 0); s = rows.get("[start-up:%s]" % cls, 0)
    want = cpu / 1e9 * f
    win = (cpu - armed) / 1e9 * f
    print(cls, n, m, k, s, m + k + s, round(want), "%.3f" % ((m + k + s) / max(want, 1)),
          "%.3f" % (m / max(win, 1)))
EOF
	while read -r cls n m k s tot want ratio wratio; do
		if [ $cls = burnshort ]; then cnt=200; else cnt=1; fi
		check "$f Hz, $cls: $cnt processes merged, exited ($n)" [ "$n" = $cnt ]
		check "$f Hz, $cls: $m samples + $k [kernel] + $s [start-up] = $tot, within 10% of CPU x rate = $want (ratio $ratio)" \
			"$PY" -c "import sys; sys.exit(not 0.9 <= $ratio <= 1.1)"
		check "$f Hz, $cls: samples over the CPU after arming x rate: $wratio, within 15%" \
			"$PY" -c "import sys; sys.exit(not 0.85 <= $wratio <= 1.15)"
	done <"$TMP/cls$f"
	check "$f Hz: the report names the start-up" grep -q '"startup_samples":[1-9]' "$TMP/r$f.json"
done

# The achieved rate on a CPU-bound program. rates_ok F: three runs at F
# Hz; succeeds when the median is within 5% of F and every run within
# 10%. Now and then one run on this guest falls short with nothing to
# show why (220 Hz at 250 in a fresh clone's CI, the two beside it at 248
# and 249): a failure is measured once more (check_twice), and a rate
# that is really off fails both times.
rates_ok() {
	local f=$1 rates=() r med ok=1 i
	for i in 1 2 3; do
		rm -rf "$TMP/dbs"
		"$VPROF" run --freq "$f" --db "$TMP/dbs" -- "$TMP/spin" 150 >/dev/null 2>"$TMP/v.err"
		r=$(grep -o "asked $f Hz, achieved [0-9]* Hz" "$TMP/v.err" | awk '{print $5}')
		rates+=("${r:-0}")
	done
	med=$(printf '%s\n' "${rates[@]}" | sort -n | sed -n 2p)
	[ "$((med * 100))" -ge "$((f * 95))" -a "$((med * 100))" -le "$((f * 105))" ] || ok=0
	for r in "${rates[@]}"; do
		[ "$((r * 100))" -ge "$((f * 90))" -a "$((r * 100))" -le "$((f * 110))" ] || ok=0
	done
	echo "median $med Hz, runs ${rates[*]}"
	[ $ok = 1 ]
}
for f in 250 1000; do
	check_twice "$f Hz asked: the median run within 5%, every run within 10%" rates_ok "$f"
done
finish
