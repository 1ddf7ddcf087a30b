#!/bin/bash
# Reliability (issue 8): the make -j2 runaway at 10 kHz must not come back.
#
# The runaway: a process whose first sampling period fell near the hrtimer's
# 10 us floor spent seconds in timer interrupts (a gcc driver at 2-4 s of
# CPU instead of 20 ms, tens of thousands of samples dropped), about one
# build in five on this 2-core VM. upcall_thread_start now never arms a
# period under UPCALL_MIN_PERIOD_NS.
#
# Each build of tests/fixtures/cproj (25 processes: make, gcc drivers, cc1,
# as, collect2, ld) runs under `vprof run --event task-clock --freq 10000`.
# Every process must use at most 1.5 x F x its median CPU time with
# sampling off, plus 20 ms, and drop nothing. "Sampling off" is the same
# library at a 1 Hz CPU timer (start-up and spool costs included, no
# interrupts to speak of): the baseline is 3 such builds, CPU per process
# from processes.tsv, processes matched by program and source file.
#
# F is what 10 kHz of task-clock interrupts cost any sampler on this
# machine now, measured here: a CPU-bound loop under `perf record -e
# task-clock:u` at 10 kHz against the same loop alone (median of 3
# interleaved pairs, at least 1). Idle, F is ~1.25 (an interrupt ~25 us);
# with other work on the 2 CPUs it reached 1.9 (~90 us an interrupt, perf
# record and vprof alike), which the fixed 1.5x of the issue does not
# allow for. A runaway is 10-100x.
#
# Builds: VPROF_STRESS_BUILDS (default 3; `make reliability` runs 20).
. "$(dirname "$0")/lib.sh"

builds=${VPROF_STRESS_BUILDS:-3}

build() {   # build DB FLAGS...: one clean build of the project under vprof run
	local db=$1; shift
	rm -rf "$TMP/proj" "$db"
	cp -r "$TOP/tests/fixtures/cproj" "$TMP/proj"
	"$VPROF" run --db "$db" "$@" -- make -s -C "$TMP/proj" -j2 >"$TMP/out" 2>"$TMP/err"
}

cc -O2 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c"
# CPU seconds of CMD alone (run as a child of python3, so that perf
# record's own work is not counted when it wraps this).
child_cpu='import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print(r.ru_utime + r.ru_stime)'
for i in 1 2 3; do
	build "$TMP/base$i" --event cpu-timer --freq 1 || fail "baseline build $i: $(tail -1 "$TMP/err")"
	a=$("$PY" -c "$child_cpu" "$TMP/spin" 30)
	b=$(perf record -q -o "$TMP/perf.data" -e task-clock:u -c 100000 -- "$PY" -c "$child_cpu" "$TMP/spin" 30 2>/dev/null)
	echo "$a $b" >>"$TMP/floor"
done
F=$(awk '$1 > 0 {r = $2 / $1; printf "%.2f\n", r < 1 ? 1 : r}' "$TMP/floor" | sort -n | sed -n 2p)
echo "sampling floor: perf record at 10 kHz costs F = $F x (pairs: $(tr '\n' ';' <"$TMP/floor"))"
[ -n "$F" ] || fail "could not measure the sampling floor"

ok=0
for i in $(seq 1 "$builds"); do
	if build "$TMP/run$i" --event task-clock --freq 10000 && [ -x "$TMP/proj/app" ]; then
		ok=$((ok + 1))
	else
		fail "build $i under vprof at 10 kHz: $(tail -1 "$TMP/err")"
	fi
done
check "$ok of $builds builds at 10 kHz succeed" [ "$ok" -eq "$builds" ]

# One line per profiled process that breaks a bound, then a summary line.
"$PY" - "$TMP" "$builds" "$F" >"$TMP/verdict" <<'EOF'
import os, re, statistics, sys
tmp, builds, F = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])

def rows(db):
    with open(os.path.join(db, "epochs/1/processes.tsv")) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            # pid ppid exe samples merged dropped exited cpu_ns event cmdline
            m = re.search(r"\b(main|unit[0-9]+|app)\b", c[9])
            key = os.path.basename(c[2]) + " " + (m.group(1) if m else "")
            yield key, int(c[5]), int(c[7]) / 1e6, c[9]

base = {}
for i in (1, 2, 3):
    for key, _, ms, _ in rows(f"{tmp}/base{i}"):
        base.setdefault(key, []).append(ms)
median = {k: statistics.median(v) for k, v in base.items()}
worst, n = (0.0, ""), 0
for i in range(1, builds + 1):
    for key, dropped, ms, cmd in rows(f"{tmp}/run{i}"):
        n += 1
        if key not in median:
            print(f"BAD build {i}: {key!r} has no baseline ({cmd[:60]})")
            continue
        bound = 1.5 * F * median[key] + 20
        worst = max(worst, (ms / bound, f"{key} {ms:.0f} ms, bound {bound:.0f}"))
        if ms > bound or dropped:
            print(f"BAD build {i}: {key} used {ms:.0f} ms of CPU (median {median[key]:.0f} "
                  f"unprofiled, bound {bound:.0f}), dropped {dropped}")
print(f"SUMMARY {n} processes, worst at {worst[0]:.2f} of its bound ({worst[1]})")
EOF
cat "$TMP/verdict"
nbad=$(grep -c '^BAD' "$TMP/verdict")
nproc=$(sed -n 's/^SUMMARY \([0-9]*\) processes.*/\1/p' "$TMP/verdict")
check "processes compared (${nproc:-0}, 25 a build)" [ "${nproc:-0}" -ge $((25 * builds)) ]
check "no runaway: every process within 1.5 x $F x its unprofiled CPU + 20 ms, 0 dropped ($nbad break it)" \
	[ "${nproc:-0}" -gt 0 -a "$nbad" -eq 0 ]
finish
