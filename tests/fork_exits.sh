#!/bin/bash
# Fork children that end by _exit lose none of their samples. A child's
# ring holds its samples until a drain, every 20 ms of its CPU: exit() runs
# the destructor, which drains it, but _exit, _Exit and a raw exit_group
# skip destructors, and 50 children doing 20 ms each kept 139-155 samples
# of ~250 and were counted "without a normal exit". Pre-fork servers,
# shells (dash's subshells) and Python's multiprocessing end children that
# way. libvprof now interposes _exit, _Exit and syscall(SYS_exit_group):
# the rings are drained and the spool marked exited there, with
# async-signal-safe steps only (a child may _exit from a signal handler).
#
# tests/fixtures/forkexit.c: 50 children burn 20 ms each in child_work and
# end by exit, _exit, exit_group, _exit in a signal handler, or SIGKILL.
# Checks: the program's output and status; _exit children get >= 95% of
# the samples exit() children get (3 rounds of each, interleaved, summed);
# every way but SIGKILL counts 0 processes "without a normal exit", and
# SIGKILL counts all 50; dash's subshells (fork, then _exit) likewise.
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -o "$TMP/forkexit" "$TOP/tests/fixtures/forkexit.c" || fail "cannot build forkexit.c"
N=50

# run MODE: profile forkexit N MODE into a fresh database; sets $work
# (child_work samples) and $killed (processes without a normal exit).
run() {
	rm -rf "$TMP/db"
	local st
	st=$(runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/forkexit" $N "$1")
	check "forkexit $1: exit 0 and its output, as unprofiled" [ "$st" = 0 -a "$(cat "$TMP/out")" = "children $N" ]
	"$VPROF" report --db "$TMP/db" -n 0 >"$TMP/rep" 2>&1
	work=$(awk '$4 ~ /^child_work/ { s += $1 } END { print s + 0 }' "$TMP/rep")
	killed=$(sed -n 's/^processes [0-9]* (\([0-9]*\) without a normal exit.*/\1/p' "$TMP/rep")
}

sum_exit=0 sum__exit=0
for round in 1 2 3; do
	for mode in exit _exit; do
		run $mode
		echo "round $round $mode: $work child_work samples, ${killed:-?} without a normal exit"
		check "forkexit $mode round $round: 0 processes without a normal exit" [ "${killed:-x}" = 0 ]
		eval "sum_$mode=\$((sum_$mode + work))"
	done
done
check "children that _exit: $sum__exit child_work samples, >= 95% of the $sum_exit of children that exit()" \
	[ $((sum__exit * 100)) -ge $((sum_exit * 95)) -a "$sum_exit" -gt $((3 * N * 20 / 2)) ]

for mode in exit_group handler; do
	run $mode
	check "forkexit $mode: $work child_work samples, >= 95% of an exit() round's $((sum_exit / 3))" \
		[ $((work * 300)) -ge $((sum_exit * 95)) ]
	check "forkexit $mode: 0 processes without a normal exit (${killed:-?})" [ "${killed:-x}" = 0 ]
done

run kill
check "forkexit kill: the $N killed children counted without a normal exit (${killed:-?})" [ "${killed:-x}" = $N ]

# dash ends its subshells with _exit.
rm -rf "$TMP/db"
st=$(runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --freq 1000 -- dash -c \
	'i=0; while [ $i -lt 20 ]; do ( j=0; while [ $j -lt 5000 ]; do j=$((j+1)); done ); i=$((i+1)); done; echo done')
check "dash subshells: exit 0 and its output" [ "$st" = 0 -a "$(cat "$TMP/out")" = done ]
killed=$("$VPROF" report --db "$TMP/db" -n 0 2>&1 | sed -n 's/^processes \([0-9]*\) (\([0-9]*\) without a normal exit.*/\1 \2/p')
check "dash subshells: 21 processes, 0 without a normal exit (${killed:-?})" [ "$killed" = "21 0" ]
finish
