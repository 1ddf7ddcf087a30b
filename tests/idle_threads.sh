#!/bin/bash
# Threads that stop running keep their samples: ring mode drains a thread's
# ring on that thread's CPU clock (every 20 ms of its CPU), so a thread
# that ran less than that and then blocked for good (an idle pool worker,
# a parked Go M) held its samples in its ring until the process left, and
# lost them (10 such workers got 9-35 samples of ~120). A draining thread
# also drains the rings whose newest sample is over 20 ms old
# (upcall_drain_others), all of them at thread end and exit, _exit and
# exit_group through libc included; running threads' rings stay their own
# (tests/self_limit.sh checks the per-thread bound that depends on it).
#
# tests/fixtures/park.c: 10 workers burn ~12 ms of CPU each in
# burn_worker, then park; the main thread leaves by exit(0), by _exit(0),
# or burns ~60 ms and leaves by exit_group made with the system call
# instruction (Go's os.Exit: no libc, only the sweep can have drained
# them). Expected: the workers' CPU in burn_worker, by their own clocks,
# times the asked rate (1 kHz); >= 95% of it wanted. The workers read
# their clock every ~0.5 ms: reading it every ~10 us put ~10% of their
# time in the kernel, which no user-mode sample sees (perf record -e
# cpu-clock:u counted 100-114 of 120 there too).
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -o "$TMP/park" "$TOP/tests/fixtures/park.c" -lpthread || fail "cannot build park.c"
N=10
for mode in exit _exit rawexit; do
	st=$(runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$TMP/db.$mode" --freq 1000 -- "$TMP/park" $N $mode)
	check "park $mode under vprof: exit 0, its output" [ "$st" = 0 -a "$(cat "$TMP/out")" = "workers $N" ]
	w=$("$VPROF" report --db "$TMP/db.$mode" -n 0 | awk '$4 ~ /^burn_worker/ { s += $1 } END { print s + 0 }')
	ms=$(awk '$1 == "burn_worker_cpu_ms" { printf "%d", $2 }' "$TMP/v.err")
	check "park $mode: $w burn_worker samples from $N parked workers, >= 95% of the ${ms:-?} expected (their ${ms:-?} ms of CPU at 1 kHz)" \
		[ -n "$ms" -a $((w * 100)) -ge $((${ms:-1000000} * 95)) ]
	r=$(rate_sane); check "park $mode: rate sane ${r:-}" [ -z "$r" ]
done
finish
