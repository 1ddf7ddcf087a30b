#!/bin/bash
# vprof bounds its own cost per thread
# (VPROF_MAX_COST, default 25% of the thread's CPU; preload/selflimit.c).
#
# The test-only knob VPROF_TEST_HANDLER_WORK=US adds US microseconds of
# busy work (thread CPU) per sample, in the handler or, in ring mode, per
# drained sample. At 3000 us per sample at 250 Hz (a 4 ms period) vprof
# would take 3/4 of the thread's CPU: the program's CPU would be ~4x its
# unprofiled CPU. With the bound, the rate must be lowered and said (the
# run's summary, the report's text and JSON), and the program's CPU held
# under 1.5 x (its unprofiled CPU / (1 - 0.25)) + 50 ms: 2 x + 50 ms, where
# the unbounded run takes ~4 x (checked too, with VPROF_MAX_COST=0). CPU
# times, not wall times: the load on this machine stretches wall time, not
# a process's CPU much. The unprofiled CPU is the median of 3 runs.
# Then with the knob off, normal runs (ring mode, a signal per sample,
# value sampling at 4 kHz) lower nothing; bad values get one message and
# the program runs on.
. "$(dirname "$0")/lib.sh"

gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build spin"
gcc -O1 -pthread -o "$TMP/threads" "$TOP/tests/fixtures/threads.c" || fail "cannot build threads"
"$TMP/spin" 60 >"$TMP/want.out"

# CPU seconds (user + system) of a command run unprofiled.
cpu_of() {
	"$PY" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (r.ru_utime + r.ru_stime))' "$@"
}
base=$(for i in 1 2 3; do cpu_of "$TMP/spin" 60; done | sort -n | sed -n 2p)

# field NAME: a number from the report's JSON (0 when absent).
field() {
	"$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get(sys.argv[2], 0))' "$TMP/r.json" "$1"
}

# run TAG ENV...: vprof run spin 60 with ENV, report JSON in $TMP/r.json.
run() {
	local tag=$1; shift
	rm -rf "$TMP/db"
	st=$(runst "$TMP/v.out" "$TMP/v.err" env "$@" "$VPROF" run --db "$TMP/db" -- "$TMP/spin" 60)
	cp "$TMP/v.out" "$TMP/$tag.out"; cp "$TMP/v.err" "$TMP/$tag.err"
	"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
	"$VPROF" report --db "$TMP/db" >"$TMP/r.txt"
}

for mode in ring signal; do
	extra=()
	[ $mode = signal ] && extra=(VPROF_RING=0)
	run "$mode" "${extra[@]}" VPROF_TEST_HANDLER_WORK=3000
	same=$(cmp -s "$TMP/want.out" "$TMP/v.out" && echo yes)
	check "$mode: the program's output and status are unchanged (status $st)" [ "$same" = yes -a "$st" = 0 ]
	check "$mode: the summary says the rate was lowered ($(grep -o '(vprof.s cost[^)]*)' "$TMP/v.err"))" \
		grep -q 'vprof.s cost over its bound of 25% (--max-cost): rate lowered in 1 thread for [0-9.]* CPU-s, [0-9]* Hz there' "$TMP/v.err"
	check "$mode: the report says so too" grep -q '^self-limit: vprof.s cost over its bound: rate lowered in 1 thread' "$TMP/r.txt"
	thr=$(field limit_threads); low=$(field limit_lowerings); lcpu=$(field limit_cpu_ns)
	lsam=$(field limit_samples); cpu=$(field cpu_ns)
	check "$mode: JSON: 1 thread lowered ($low times) for $lcpu ns of CPU" [ "$thr" = 1 -a "$low" -ge 1 -a "$lcpu" -gt 0 ]
	# Where lowered, 3 ms a sample within 25%: under 0.25 / 3 ms = 83 Hz
	# (250 asked), while still sampled (never silently off).
	hz=$("$PY" -c "print(int($lsam / ($lcpu / 1e9)))")
	check "$mode: still sampled where lowered, below 83 Hz: $hz Hz ($lsam samples)" [ "$lsam" -gt 0 -a "$hz" -lt 83 ]
	bound=$("$PY" -c "print(int((1.5 * $base / 0.75 + 0.05) * 1e9))")
	check "$mode: CPU bounded: $cpu ns <= 1.5 x $base s / 0.75 + 50 ms" [ "$cpu" -le "$bound" ]
done

# The bound off: the same knob takes most of the CPU (what the bound
# prevented above); shorter, since it costs ~4x.
rm -rf "$TMP/db"
VPROF_MAX_COST=0 VPROF_TEST_HANDLER_WORK=3000 "$VPROF" run --db "$TMP/db" -- "$TMP/spin" 20 >/dev/null 2>"$TMP/off.err"
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
share=$("$PY" -c "print(int(100 * $(field cost_ns) / $(field cpu_ns)))")
# Over 33%, a third above the 25% it is held to when bounded: ~45% here,
# 40% seen once under load (where 40 was the threshold).
check "VPROF_MAX_COST=0: nothing lowered, and vprof took $share% of the CPU (over 33%)" \
	[ "$(field limit_threads)" = 0 -a "$share" -gt 33 ]
check "VPROF_MAX_COST=0: the summary says nothing of a bound" bash -c "! grep -q 'over its bound' '$TMP/off.err'"

# vprof run --max-cost 10: 3 ms a sample within 10% is under 33 Hz.
rm -rf "$TMP/db"
VPROF_TEST_HANDLER_WORK=3000 "$VPROF" run --max-cost 10 --db "$TMP/db" -- "$TMP/spin" 60 >/dev/null 2>"$TMP/m.err"
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
hz=$("$PY" -c "print(int($(field limit_samples) / ($(field limit_cpu_ns) / 1e9 + 1e-9)))")
check "--max-cost 10: lowered, to $hz Hz (under 33 Hz)" [ "$(field limit_threads)" = 1 -a "$hz" -lt 33 ]

# Value sampling made expensive for real (4096 instructions interpreted at
# every sample, 4 kHz): interpretation is thinned first.
rm -rf "$TMP/db"
VPROF_INTERP_LEN=4096 VPROF_INTERP_EVERY=1 "$VPROF" run --values --freq 4000 --db "$TMP/db" -- "$TMP/spin" 60 \
	>"$TMP/i.out" 2>"$TMP/i.err"
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
check "values: interpretation thinned in $(field limit_interp_threads) thread(s), and said ($(grep -o 'interpretation thinned[^;)]*' "$TMP/i.err"))" \
	[ "$(field limit_interp_threads)" = 1 -a -n "$(grep -o 'interpretation thinned in 1 thread' "$TMP/i.err")" ]
check "values: the program's output is unchanged" cmp -s "$TMP/want.out" "$TMP/i.out"

# Threads: each counted. Two, on two CPUs: with more runnable threads
# than CPUs the kernel's thread CPU timers stall now and then (the drain
# timer of one of 3 spinning threads went hundreds of ms without firing,
# one run in four: see upcall_drain_others), and a thread whose drains
# do not come is not checked, nor does it pay for drains.
rm -rf "$TMP/db"
VPROF_TEST_HANDLER_WORK=3000 "$VPROF" run --db "$TMP/db" -- "$TMP/threads" 2 400 >"$TMP/t.out" 2>"$TMP/t.err"
"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
check "2 spinning threads: both lowered ($(field limit_threads))" [ "$(field limit_threads)" = 2 ]
check "threads: the program finished its work ($(cat "$TMP/t.out"))" grep -q 'check=2' "$TMP/t.out"

# The knob off: normal runs lower nothing. What a sample costs the kernel
# is calibrated once per run and charged to every sample; at 4 kHz in
# signal mode that is ~40 us here, 16% of the CPU against the bound of
# 25%. A calibration that reads over the bound (the whole ~40 ms of it
# slow, measured again twice and the least kept: preload/selflimit.c)
# makes a lowering right by vprof's own rule, and the summary must then
# say so; under it, nothing may be lowered.
for m in "ring 1000" "signal 4000 VPROF_RING=0" "values 4000 VPROF_VALUES=on"; do
	set -- $m
	tag=$1 f=$2; shift 2
	rm -rf "$TMP/db"
	env "$@" "$VPROF" run --freq "$f" --db "$TMP/db" -- "$TMP/spin" 60 >"$TMP/n.out" 2>"$TMP/n.err"
	"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
	share=$("$PY" -c "print('%.2f' % (100 * $(field cost_ns) / max(1, $(field cpu_ns))))")
	# The kernel's share as charged: what each sample cost by the
	# calibration, at the asked rate.
	kus=$("$PY" -c "print('%.1f' % ($(field kernel_cost_ns) / max(1, $(field kernel_cost_samples)) / 1000))")
	kshare=$("$PY" -c "print('%.1f' % ($kus * $f / 1e4))")
	lowered=$(( $(field limit_threads) + $(field limit_interp_threads) ))
	what="handler and drains measured at $share% of the CPU; the kernel's part charged at $kus us a sample, $kshare% at $f Hz"
	if "$PY" -c "import sys; sys.exit(0 if $kshare + $share >= 0.9 * 25 else 1)"; then
		check "normal $tag run at $f Hz: the calibration put the cost at the bound ($what): lowered ($lowered) only if said" \
			bash -c "[ $lowered = 0 ] || grep -q 'over its bound' '$TMP/n.err'"
		check "normal $tag run: a bound in the summary only if lowered" \
			bash -c "[ $lowered != 0 ] || ! grep -q 'over its bound' '$TMP/n.err'"
		continue
	fi
	check "normal $tag run at $f Hz: nothing lowered ($what; $(field limit_lowerings) lowerings)" [ "$lowered" = 0 ]
	check "normal $tag run: no bound in the summary" bash -c "! grep -q 'over its bound' '$TMP/n.err'"
done

# Bad values: one clear message, the program runs on (unprofiled).
for bad in abc 101 -5; do
	rm -rf "$TMP/db"
	st=$(runst "$TMP/b.out" "$TMP/b.err" env VPROF_MAX_COST=$bad "$VPROF" run --db "$TMP/db" -- "$TMP/spin" 10)
	n=$(grep -c "VPROF_MAX_COST=$bad: expected an integer from 0 to 100" "$TMP/b.err")
	check "VPROF_MAX_COST=$bad: one message ($n), the program ran (status $st)" [ "$n" = 1 -a "$st" = 0 ]
done
st=$(runst "$TMP/b.out" "$TMP/b.err" "$VPROF" run --max-cost x1 --db "$TMP/db" -- "$TMP/spin" 10)
check "--max-cost x1: a usage error naming it (exit 2), the program not run ($st: $(cat "$TMP/b.err"))" \
	[ "$(grep -c -- '--max-cost x1: expected a whole number from 0 to 100' "$TMP/b.err")" = 1 -a "$st" = 2 -a ! -s "$TMP/b.out" ]
finish
