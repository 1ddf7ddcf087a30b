#!/bin/bash
# `vprof merge` killed at any point loses nothing already merged and
# counts nothing twice. A set of finished spools (real programs run under
# plain LD_PRELOAD, not merged) is merged once into a reference database.
# Then, on fresh copies of the same spools:
#  - every step window: VPROF_TEST_MERGE_DIE=K SIGKILLs the merge at its
#    K-th step (profile staged, manifest, commit, each file moved, each spool
#    unlinked), for K = 1, 2, ... until a merge runs through;
#  - MERGE_KILLS random kills (default 10; `make reliability`: 100): the
#    merge, slowed at each step by a random few hundred us, is SIGKILLed by
#    its pid after a random few ms, sometimes twice in a row;
#  - four merges at once, two of them killed;
# and a plain `vprof merge` then finishes the job. The totals (report --json:
# processes, samples, per-event per-image counts) and processes.tsv's row
# count must equal the reference's, with no spool and no journal left.
. "$(dirname "$0")/lib.sh"

KILLS=${MERGE_KILLS:-10}
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
src=$TMP/src
for i in 1 2 3 4; do LD_PRELOAD=$LIBVPROF VPROF_DB=$src VPROF_FREQ=1000 "$TMP/spin" 3 >/dev/null; done
LD_PRELOAD=$LIBVPROF VPROF_DB=$src VPROF_FREQ=1000 "$PY" -c 'print(sum(i * i for i in range(1500000)))' >/dev/null
LD_PRELOAD=$LIBVPROF VPROF_DB=$src VPROF_FREQ=1000 sh -c 'i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done'
nspools=$(ls "$src/spool" | grep -c '\.spool$')
check "made $nspools spools to merge" [ "$nspools" -ge 6 ]

# fingerprint DB: what a merge must leave, as one line of text.
fingerprint() {
	{ "$VPROF" report --db "$1" --json --by image -n 0 2>/dev/null || echo '{}'; } | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
rows = sorted((e["event"], x["image"], x["samples"]) for e in r.get("events", []) for x in e["rows"])
print(r.get("processes"), r.get("samples"), r.get("dropped"), rows)'
	echo "rows $(wc -l <"$1/epochs/1/processes.tsv" 2>/dev/null)"
}
# fresh NAME: a database holding a copy of the unmerged spools
fresh() { rm -rf "$TMP/$1"; mkdir -p "$TMP/$1"; cp -a "$src/spool" "$TMP/$1/"; echo "$TMP/$1"; }
# leftovers DB: what must be gone after a finished merge
leftovers() { ls "$1/spool" 2>/dev/null | grep '\.spool$'; ls -d "$1"/merge.* 2>/dev/null; }

ref=$(fresh ref)
"$VPROF" merge --db "$ref" >"$TMP/m.out" 2>&1
check "reference merge succeeds ($(cat "$TMP/m.out"))" [ $? -eq 0 ]
want=$(fingerprint "$ref")
s=$("$VPROF" report --db "$ref" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
check "reference has $s samples from $nspools processes" [ "${s:-0}" -gt 0 ]

# finish DB WHAT: a plain merge completes; the totals equal the reference.
bad=0
finish_and_compare() {
	"$VPROF" merge --db "$1" >"$TMP/m.out" 2>&1 || { fail "$2: the merge after the kill failed: $(cat "$TMP/m.out")"; bad=$((bad + 1)); return; }
	local got left; got=$(fingerprint "$1"); left=$(leftovers "$1")
	if [ "$got" != "$want" ] || [ -n "$left" ]; then
		fail "$2: after the kill: $got, want $want; left over: $left"; bad=$((bad + 1))
	fi
}

# 1. Every step window, deterministically.
k=1 windows=0
while [ $k -le 400 ]; do
	db=$(fresh die)
	VPROF_TEST_MERGE_DIE=$k "$VPROF" merge --db "$db" >/dev/null 2>&1
	rc=$?
	[ $rc -eq 0 ] && break           # ran through: every window was hit
	[ $rc -eq 137 ] || { fail "step $k: merge ended with $rc, not SIGKILL"; break; }
	windows=$((windows + 1))
	finish_and_compare "$db" "killed at step $k"
	k=$((k + 1))
done
check "killed once in each of the $windows step windows, then a merge ran through: nothing lost or doubled" [ $bad -eq 0 -a $windows -ge 5 -a $k -le 400 ]

# 2. Random kills by pid.
bad=0 killed=0
for i in $(seq "$KILLS"); do
	db=$(fresh rnd)
	for again in 1 2; do
		VPROF_TEST_MERGE_DELAY_US=$((RANDOM % 400)) "$VPROF" merge --db "$db" >/dev/null 2>&1 &
		pid=$!
		sleep "0.00$((RANDOM % 10))$((RANDOM % 10))"
		kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
		wait "$pid" 2>/dev/null
		[ $((RANDOM % 2)) -eq 0 ] && break
	done
	finish_and_compare "$db" "random kill $i"
done
check "$killed random SIGKILLs over $KILLS merges: every total equal to the reference" [ $bad -eq 0 -a $killed -gt 0 ]
echo "merge_kill: $windows step windows, $killed random kills, $KILLS databases"

# 3. Four merges at once on one database, two of them SIGKILLed at random:
# the lock serializes them, and the totals still equal the reference.
bad=0
for i in 1 2 3; do
	db=$(fresh conc)
	pids=()
	for j in 1 2 3 4; do
		VPROF_TEST_MERGE_DELAY_US=$((RANDOM % 300)) "$VPROF" merge --db "$db" >/dev/null 2>&1 &
		pids+=($!)
	done
	sleep "0.00$((RANDOM % 10))"; kill -9 "${pids[0]}" 2>/dev/null
	sleep "0.00$((RANDOM % 10))"; kill -9 "${pids[2]}" 2>/dev/null
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
	finish_and_compare "$db" "concurrent merges, round $i"
done
check "4 merges at once, 2 killed, 3 rounds: totals equal to the reference" [ $bad -eq 0 ]

# 4. A merge killed after committing is finished, never redone, by the next
# merge even when new spools came meanwhile: they are counted once too.
db=$(fresh late)
VPROF_TEST_MERGE_DIE=$((windows - 1)) "$VPROF" merge --db "$db" >/dev/null 2>&1
LD_PRELOAD=$LIBVPROF VPROF_DB=$db VPROF_FREQ=1000 "$TMP/spin" 3 >/dev/null
"$VPROF" merge --db "$db" >/dev/null 2>&1
n=$(wc -l <"$db/epochs/1/processes.tsv")
check "killed late, then merged with one more spool: $n process rows, want $((nspools + 1))" [ "$n" -eq $((nspools + 1)) ]
finish
