#!/bin/bash
# Threads that stop running keep their samples: ring mode drains a thread's
# ring on that thread's CPU clock (every 20 ms of its CPU), so a thread
# that ran less than that and then blocked for good (an idle pool worker,
# a parked Go M) held its samples in its ring until the process left, and
# lost them. A draining thread also drains the rings whose newest sample
# is over 20 ms old and whose thread is not runnable (upcall_drain_others),
# all of them at thread end and exit, _exit and exit_group through libc
# included; running and preempted threads' rings stay their own
# (tests/self_limit.sh checks the per-thread bound that depends on it).
#
# tests/fixtures/park.c: 10 workers burn ~12 ms of CPU each in
# burn_worker, then park; the main thread leaves by exit(0), by _exit(0),
# or burns ~60 ms and leaves by exit_group made with the system call
# instruction (Go's os.Exit: no libc, only the sweep can have drained
# them). Expected: what perf record -e cpu-clock:u counts in burn_worker
# on the same runs at the same rate (perf records vprof run and the
# program); >= 95% of it wanted, over 3 runs per way out. Their CPU in
# burn_worker times the rate is shown too: both perf and vprof get ~96% of
# that, the rest being kernel time (the sampling interrupts' own among
# it), which no user-mode sample sees.
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -o "$TMP/park" "$TOP/tests/fixtures/park.c" -lpthread || fail "cannot build park.c"
N=10
for mode in exit _exit rawexit; do
	w=0 pw=0 ms=0
	for run in 1 2 3; do
		rm -rf "$TMP/db"
		st=$(runst "$TMP/out" "$TMP/v.err" perf record -q -e cpu-clock:u -c 1000000 -o "$TMP/perf.data" -- \
			"$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/park" $N $mode)
		check "park $mode under vprof (and perf record): exit 0, its output" [ "$st" = 0 -a "$(cat "$TMP/out")" = "workers $N" ]
		w=$((w + $("$VPROF" report --db "$TMP/db" -n 0 | awk '$4 ~ /^burn_worker/ { s += $1 } END { print s + 0 }')))
		pw=$((pw + $(perf report -i "$TMP/perf.data" --comms park --stdio -F sample,sym 2>/dev/null |
			awk '$0 ~ /burn_worker/ { s += $1 } END { print s + 0 }')))
		ms=$((ms + $(awk '$1 == "burn_worker_cpu_ms" { printf "%d", $2 }' "$TMP/v.err")))
		r=$(rate_sane); check "park $mode: rate sane ${r:-}" [ -z "$r" ]
	done
	check "park $mode: $w burn_worker samples from 3 x $N parked workers, >= 95% of perf record's $pw (their CPU there: $ms ms at 1 kHz)" \
		[ "$pw" -gt $((3 * N * 12 / 2)) -a $((w * 100)) -ge $((pw * 95)) ]
done

# Threads that run but whose drains do not come: with more runnable
# threads than CPUs the kernel's thread CPU timers stall now and then
# while their thread runs (a thread's 20 ms drain timer fired 34-64
# times of 75), and a ring the thread does not drain fills; the kernel
# drops what a full ring cannot take. Any other thread's drain takes a
# ring over half full (upcall_drain_others). 3 threads spinning 1.5 s of
# CPU each at 4 kHz beside a busy loop, 5 runs: nothing dropped (without
# that, 570-1159 of ~12000 samples were, in 2 to 4 runs of 6).
gcc -O1 -pthread -o "$TMP/threads" "$TOP/tests/fixtures/threads.c" || fail "cannot build threads"
sh -c 'while :; do :; done' &
busy=$!
dropped=0 samples=0
for run in 1 2 3 4 5; do
	rm -rf "$TMP/db"
	"$VPROF" run --freq 4000 --db "$TMP/db" -- "$TMP/threads" 3 1500 >"$TMP/t.out" 2>"$TMP/t.err"
	"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
	dropped=$((dropped + $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("dropped", -1))' "$TMP/r.json")))
	samples=$((samples + $("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("samples", 0))' "$TMP/r.json")))
done
kill "$busy"; wait "$busy" 2>/dev/null
check "3 spinning threads at 4 kHz beside a busy loop: $dropped of $samples samples dropped, none wanted" \
	[ "$dropped" = 0 -a "$samples" -gt 25000 ]
finish
