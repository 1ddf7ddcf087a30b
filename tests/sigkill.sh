#!/bin/bash
# A profiled program killed with SIGKILL mid-run loses
# nothing it had sampled: `vprof merge` recovers its samples.
#
# The program runs under plain LD_PRELOAD (no `vprof run` to help), is
# killed with SIGKILL after ~2 s of CPU, and `vprof merge` then recovers
# its spool. Expected range: the CPU time the process had used when it died
# times the rate, from 0.6x (task-clock counts only user time; start-up; the
# last drain interval's samples, still in the ring, die with it) to 1.15x
# (+ jitter). That CPU time is the dead child's own (wait4's rusage), not
# /proc read before the kill: on a loaded machine the program ran on for a
# while between that read and the kill.
. "$(dirname "$0")/lib.sh"

gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
freq=1000
for ev in task-clock cpu-timer; do
	[ $ev = cpu-timer ] && freq=250   # tick-driven: at most HZ here
	db="$TMP/db-$ev"
	mkdir -p "$db"
	# Start the program, wait for ~2 s of its CPU (from /proc), SIGKILL it;
	# print how it ended and the CPU ns it died with.
	read -r how cpu_ns < <(kill_after_cpu 2 env LD_PRELOAD="$LIBVPROF" VPROF_DB="$db" VPROF_EVENT=$ev \
		VPROF_FREQ=$freq "$TMP/spin" forever)
	check "$ev: the program died of SIGKILL ($how)" [ "$how" = signal9 ]
	check "$ev: its spool is still there" ls "$db"/spool/*.spool
	"$VPROF" merge --db "$db" >"$TMP/merge.out" 2>&1
	check "$ev: vprof merge succeeds ($(cat "$TMP/merge.out"))" [ $? -eq 0 ]
	got=$(awk -F'\t' '{s += $5} END {print s + 0}' "$db/epochs/1/processes.tsv")
	exited=$(awk -F'\t' '{print $7}' "$db/epochs/1/processes.tsv")
	check "$ev: recorded as not exited normally" [ "$exited" = 0 ]
	lo=$(( ${cpu_ns:-0} / 1000000 * freq * 60 / 100000 ))
	hi=$(( ${cpu_ns:-0} / 1000000 * freq * 115 / 100000 ))
	check "$ev: recovered $got samples, expected $lo..$hi for $(( ${cpu_ns:-0} / 1000000 )) ms of CPU at $freq Hz" \
		[ "$got" -ge "$lo" -a "$got" -le "$hi" ]
	check "$ev: the spool was consumed" [ -z "$(ls "$db"/spool/ 2>/dev/null)" ]
done
finish
