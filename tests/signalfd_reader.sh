#!/bin/bash
# A program that reads its own SIGPROF through a signalfd reads what it
# would read without vprof: its ITIMER_PROF ticks, never vprof's samples
# (which are SIGPROF too). Before, it read 20-100 of vprof's besides its
# ~45 (a 100 Hz timer over 0.45 CPU-s), and with a second thread blocking
# SIGPROF it lost half its ticks (the kernel gave them to that thread,
# where vprof's handler held them). Now: in such a process the program's
# blocks of SIGPROF are real, the reading thread is not sampled, nor is a
# thread while it blocks SIGPROF, and vprof says so once; a thread that
# does not block it is sampled (preload/masks.c).
#
# tests/fixtures/prof_ticks.c counts the ticks (and the records that are
# not its timer's: "foreign", which must be 0). Runs alone and under vprof
# are interleaved; the median of the tick counts under vprof must lie
# within the spread of the runs alone, give or take 4 (the kernel counts
# ITIMER_PROF by scheduler ticks: on a loaded machine 0.45 CPU-s gives
# 35 to 65 of them).
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -Wall -pthread -o "$TMP/prof_ticks" "$TOP/tests/fixtures/prof_ticks.c" || { fail "cannot build prof_ticks.c"; finish; }

ticks() { sed -n 's/^ticks: //p' "$1"; }
for args in "" "blocked 1" "free 1" "blocked 1 free 1"; do
	evs="default itimer"; [ "$args" = "blocked 1 free 1" ] && evs="default cpu-timer itimer"
	for ev in $evs; do
		evopt=(--event "$ev"); [ "$ev" = default ] && evopt=()
		what="signalfd reader${args:+ ($args)}, $ev"
		alone=() under=() bad=""
		for round in 1 2 3 4; do
			st=$(runst "$TMP/a.out" /dev/null "$TMP/prof_ticks" signalfd $args)
			[ "$st" = 0 ] || bad="$bad alone: exit $st;"
			alone+=("$(ticks "$TMP/a.out")")
			rm -rf "$TMP/db"
			st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" "${evopt[@]}" -- "$TMP/prof_ticks" signalfd $args)
			[ "$st" = 0 ] || bad="$bad under vprof: exit $st;"
			grep -q '^foreign: 0$' "$TMP/v.out" || bad="$bad under vprof it read $(sed -n 's/^foreign: //p' "$TMP/v.out") SIGPROFs not its own;"
			under+=("$(ticks "$TMP/v.out")")
		done
		bad="$bad$(median_within "${alone[*]}" "${under[*]}")"
		if [ -z "$bad" ]; then
			pass "$what: its own ticks only, as many as alone (alone ${alone[*]}, under vprof ${under[*]})"
		else
			fail "$what: alone ${alone[*]}, under vprof ${under[*]}:$bad"
		fi
		# The last run's messages: said once, and why.
		n=$(grep -c 'reads SIGPROF through a signalfd' "$TMP/v.err")
		check "$what: vprof says once that the reader goes unsampled ($n: $(grep '^vprof:' "$TMP/v.err" | head -2 | tr '\n' '|'))" [ "$n" = 1 ]
		# A thread that does not block SIGPROF is still sampled (not with
		# the process-wide itimer, which is stopped), and the reader not.
		if [ "$ev" != itimer ]; then
			s=$("$VPROF" report --db "$TMP/db" -n 0 2>/dev/null | awk '$NF ~ /prof_ticks$/ { for (i = 2; i < NF; i++) c[$i] += $1 } END { printf "%d %d", c["worker_free"], c["reader"] }')
			free=${s% *} mine=${s#* }
			case "$args" in
			*free*) check "$what: the thread that does not block SIGPROF is sampled ($free samples, >= 20)" [ "$free" -ge 20 ] ;;
			esac
			check "$what: the reader is not sampled ($mine samples in it, <= 2)" [ "$mine" -le 2 ]
		fi
	done
done
finish
