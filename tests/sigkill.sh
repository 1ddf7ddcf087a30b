#!/bin/bash
# A profiled program killed with SIGKILL mid-run loses
# nothing it had sampled: `vprof merge` recovers its samples.
#
# The program runs under plain LD_PRELOAD (no `vprof run` to help), is
# killed with SIGKILL after ~2 s of CPU, and `vprof merge` then recovers
# its spool. Expected range: the CPU time the process had used when killed
# (read from /proc/PID/stat just before the kill) times the rate, from 0.6x
# (task-clock counts only user time; start-up) to 1.15x (+ jitter).
. "$(dirname "$0")/lib.sh"

gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
freq=1000
for ev in task-clock cpu-timer; do
	[ $ev = cpu-timer ] && freq=250   # tick-driven: at most HZ here
	db="$TMP/db-$ev"
	mkdir -p "$db"
	LD_PRELOAD=$LIBVPROF VPROF_DB=$db VPROF_EVENT=$ev VPROF_FREQ=$freq "$TMP/spin" forever >"$TMP/out" &
	pid=$!
	for i in $(seq 100); do grep -q spinning "$TMP/out" && break; sleep 0.1; done
	# Wait for ~2 s of CPU, then kill; read the CPU time just before.
	for i in $(seq 100); do
		ticks=$(awk '{print $14 + $15}' /proc/$pid/stat)
		[ "$ticks" -ge $((2 * $(getconf CLK_TCK))) ] && break
		sleep 0.1
	done
	ticks=$(awk '{print $14 + $15}' /proc/$pid/stat)
	kill -9 $pid
	wait $pid 2>/dev/null
	check "$ev: the program died of SIGKILL" [ $? -eq 137 ]
	check "$ev: its spool is still there" ls "$db"/spool/*.spool
	"$VPROF" merge --db "$db" >"$TMP/merge.out" 2>&1
	check "$ev: vprof merge succeeds ($(cat "$TMP/merge.out"))" [ $? -eq 0 ]
	got=$(awk -F'\t' '{s += $5} END {print s + 0}' "$db/epochs/1/processes.tsv")
	exited=$(awk -F'\t' '{print $7}' "$db/epochs/1/processes.tsv")
	check "$ev: recorded as not exited normally" [ "$exited" = 0 ]
	lo=$(( ticks * freq * 60 / 100 / $(getconf CLK_TCK) ))
	hi=$(( ticks * freq * 115 / 100 / $(getconf CLK_TCK) ))
	check "$ev: recovered $got samples, expected $lo..$hi for $ticks ticks of CPU at $freq Hz" \
		[ "$got" -ge "$lo" -a "$got" -le "$hi" ]
	check "$ev: the spool was consumed" [ -z "$(ls "$db"/spool/ 2>/dev/null)" ]
done
finish
