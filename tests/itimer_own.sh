#!/bin/bash
# --event itimer samples on the process's one ITIMER_PROF. A program that
# arms its own takes that timer over: every tick is its SIGPROF and a
# sample, so samples come at its rate, not the rate asked. vprof says so
# once (it said nothing: "asked 250 Hz, achieved 97 Hz"), the program
# gets every tick it would alone, and a one-shot timer of the program's
# gives the timer back to vprof when it expires (sampling stopped for
# good before). Fixture: tests/fixtures/prof_ticks.c (a 100 Hz
# ITIMER_PROF and a handler counting its ticks; oneshot: one expiry after
# 0.1 CPU-s).
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -Wall -pthread -o "$TMP/prof_ticks" "$TOP/tests/fixtures/prof_ticks.c" || { fail "cannot build prof_ticks.c"; finish; }

ticks() { sed -n 's/^ticks: //p' "$1"; }
achieved() { sed -n 's/.*achieved \([0-9]*\) Hz.*/\1/p' "$TMP/v.err"; }

# 1. Its own 100 Hz timer, 1 CPU-s, alone and under --event itimer,
# interleaved.
alone=() under=() bad=""
for round in 1 2 3; do
	st=$(runst "$TMP/a.out" /dev/null "$TMP/prof_ticks" handler 1)
	[ "$st" = 0 ] || bad="$bad alone: exit $st;"
	alone+=("$(ticks "$TMP/a.out")")
	rm -rf "$TMP/db"
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --event itimer -- "$TMP/prof_ticks" handler 1)
	[ "$st" = 0 ] || bad="$bad under vprof: exit $st;"
	grep -q '^foreign: 0$' "$TMP/v.out" || bad="$bad its handler saw SIGPROFs not its timer's;"
	under+=("$(ticks "$TMP/v.out")")
done
bad="$bad$(median_within "${alone[*]}" "${under[*]}")"
[ -z "$bad" ] && pass "own 100 Hz ITIMER_PROF under --event itimer: every tick its own (alone ${alone[*]}, under vprof ${under[*]})" ||
	fail "own 100 Hz ITIMER_PROF under --event itimer: alone ${alone[*]}, under vprof ${under[*]}:$bad"
msg=$(grep 'its own ITIMER_PROF' "$TMP/v.err")
check "--event itimer: says once why the rate is the program's ($msg)" \
	[ "$(grep -c 'its own ITIMER_PROF' "$TMP/v.err")" = 1 ]
case "$msg" in
*"at 100 Hz"*"not the 250 Hz asked"*) pass "--event itimer: the message names both rates" ;;
*) fail "--event itimer: the message names both rates: $msg" ;;
esac
# The rate had is the program's: every tick a sample.
s=$(sed -n 's/^vprof: \([0-9]*\) samples.*/\1/p' "$TMP/v.err") t=$(ticks "$TMP/v.out")
check "--event itimer: a sample per tick of the program's ($s samples, $t ticks; achieved $(achieved) Hz)" \
	[ "${s:-0}" -ge $((t - t / 10 - 3)) -a "${s:-0}" -le $((t + t / 10 + 3)) ]

# 2. Another backend samples apart from the program's timer: no message,
# the rate asked.
runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db2" -- "$TMP/prof_ticks" handler 1 >/dev/null
check "default backend: nothing said about the program's timer ($(grep -c ITIMER_PROF "$TMP/v.err") lines)" \
	[ "$(grep -c ITIMER_PROF "$TMP/v.err")" = 0 ]
check "default backend: the rate asked ($(achieved) Hz of 250, >= 150)" [ "$(achieved)" -ge 150 ]

# 3. A one-shot timer: vprof samples again once it has expired.
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db3" --event itimer -- "$TMP/prof_ticks" oneshot 1)
check "one-shot ITIMER_PROF under --event itimer: exit $st, its one tick ($(ticks "$TMP/v.out"))" \
	[ "$st" = 0 -a "$(ticks "$TMP/v.out")" = 1 ]
check "one-shot: said ($(grep 'one expiry' "$TMP/v.err"))" grep -q 'for one expiry, .*after 0.100 CPU-s' "$TMP/v.err"
check "one-shot: sampled after it expired ($(achieved) Hz of 250 over 1 CPU-s, >= 150)" [ "$(achieved)" -ge 150 ]
finish
