#!/bin/bash
# bench/native_time.sh — two ways a thread could time a stretch of its own
# native execution without a PMU, and what each costs and resolves here.
#
#   bench/native_time.sh [--rounds N] [--samples N]
#
# The design question: execution counts (vprof run --branches) and
# trace-sampled cache simulation (--cachesim) weight each interpreted
# window as the time it started in, not the instructions it stands for
# (docs/value-sampling.md, "Execution counts"); a window's native time
# per instruction would remove that. Both ways would run the window's
# stretch natively after interpreting it in shadow mode (interp/shadow.h:
# its stores logged, not written) and stop it again:
#
# 1. a debug-register breakpoint at the window's end
#    (bench/workloads/bpcost.c: perf_event_open PERF_TYPE_BREAKPOINT on its
#    own code, unprivileged): the cost of one hit, over 20000 hits a round,
#    and the spread of 1000 hits timed one by one. A breakpoint stops at
#    every pass, so a window's end inside a loop is hit once per trip.
# 2. a task-clock sample DELTA of the thread's CPU after the window
#    (bench/workloads/tcrate.c): a loop whose trip count is in rax, armed
#    and read by a sample pair; iterations per ns against the same loop
#    unsampled, for DELTA = 20, 50, 100, 200 and 400 us (--samples pairs
#    each, default 1000). The shadow run must reach as far as the native
#    run gets in DELTA.
# 3. what running a stretch again costs its truth: a pointer chase over
#    256 MiB (bench/workloads/warmrate.c), timed as in 2 at DELTA = 200 us
#    (300 pairs), with the arming sample's handler first reading the next
#    0, 1000 or 4000 nodes, as an interpretation of the stretch would.
# 4. whether that can be undone: chases over 1, 8 and 256 MiB, the 4000
#    nodes read on the program's CPU, on it and then the lines that came
#    from DRAM flushed, or on the other CPU and then flushed (an
#    interpretation made there, by a thread the program waits for, would
#    leave the program's CPU's caches and TLB as they were).
#
# Results: BENCHMARKS.md, "Timing a window natively".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
SAMPLES=1000
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	--samples) SAMPLES=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "native_time.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-ntime.XXXXXX")
trap 'rm -rf "$W"' EXIT
for p in bpcost tcrate warmrate; do
	gcc -O2 -Wall -Wextra -pthread -mclflushopt -o "$W/$p" "$ROOT/bench/workloads/$p.c" || exit 1
done
echo "== bench/native_time.sh: timing a stretch of native execution without a PMU"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), $(uname -r)"
echo "commit:  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "-- 1. a debug-register breakpoint hit (bench/workloads/bpcost.c)"
if "$W/bpcost" "$ROUNDS" 20000 >"$W/bp"; then
	cat "$W/bp"
	awk '/^round/ { v[++n] = $6 } END {
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
		printf "median per hit over %d rounds: %.1f us\n", n, (n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2) / 1000
	}' "$W/bp"
else
	echo "the kernel refused the breakpoint event"
fi
echo
echo "-- 2. a task-clock sample DELTA after arming (bench/workloads/tcrate.c), $SAMPLES pairs each"
echo "   iterations per ns: true = unsampled; ratio = p50 / true; lost = DELTA x (1 - ratio)"
for d in 20000 50000 100000 200000 400000; do
	if out=$("$W/tcrate" "$d" "$SAMPLES"); then
		awk '{ printf "%s   lost %.1f us\n", $0, $2 * (1 - $NF) / 1000 }' <<<"$out"
	else
		echo "delta $d: the task-clock event was refused"
	fi
done
echo
echo "-- 3. a memory-bound stretch run again after its lines were read (bench/workloads/warmrate.c)"
echo "   steps per ns; ratio = p50 / true; steps = native steps in DELTA"
for w in 0 1000 4000; do
	"$W/warmrate" 200000 300 "$w" 256 || echo "warm $w: set-up failed"
done
echo
echo "-- 4. the same, the lines read where the program's CPU does not see them (warmrate.c, WARMRATE_MODE)"
echo "   4000 nodes read first (as an interpretation would) by: here = the arming thread; flush = the same,"
echo "   then the lines that came from DRAM flushed; other = a thread on the other CPU, then the same flush"
echo "   (the program on CPU 0, the helper on CPU 1, spinning); 300 pairs, DELTA 200 us"
for mib in 1 8 256; do
	for mode in here flush other; do
		WARMRATE_MODE=$mode "$W/warmrate" 200000 300 0 "$mib" || echo "$mib MiB $mode: set-up failed"
		WARMRATE_MODE=$mode "$W/warmrate" 200000 300 4000 "$mib" || echo "$mib MiB $mode: set-up failed"
	done
done
