#!/bin/bash
# Runs and epochs. (1) A second `vprof run` into a database reports its
# own samples only: it starts a new epoch (and says so) when the current
# one holds data, unless --add adds to it. (2) Two `vprof run` into one
# database at once, with a `vprof merge` loop beside them taking spools as
# they finish: each run's summary counts its own processes and samples
# (whoever merged them), and both land in the database: in epochs of
# their own, or, with --add, in one.
. "$(dirname "$0")/lib.sh"
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build the spin fixture"
# work THREADS MS: burns MS ms of CPU per thread, exits 3.
gcc -O1 -o "$TMP/work" "$TOP/tests/fixtures/disk_threads.c" -lpthread || fail "cannot build the work fixture"

# field JSON KEY: a top-level number of a report's JSON.
field() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# images JSON: the images with samples, sorted, one line; has JSON NAME.
images() { "$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
print(" ".join(sorted({r["image"].split("/")[-1] for e in d["events"] for r in e["rows"]})))' "$1"; }
has() { images "$1" | tr ' ' '\n' | grep -qx "$2"; }
# summary ERR: "SAMPLES PROCESSES EPOCH" from vprof run's summary line.
summary() { sed -n 's/^vprof: \([0-9]*\) samples from \([0-9]*\) process.*database .* epoch \([0-9]*\).*/\1 \2 \3/p' "$1"; }

# --- (1) a second run reports its own data ---
D=$TMP/db1
"$VPROF" run --db "$D" -- "$TMP/spin" 10 >/dev/null 2>"$TMP/r1.err"
"$VPROF" run --db "$D" -- "$TMP/work" 1 300 >/dev/null 2>"$TMP/r2.err"
"$VPROF" report --db "$D" --json -n 0 >"$TMP/rep2.json"
read -r s2 p2 e2 <<<"$(summary "$TMP/r2.err")"
check "first run: epoch 1, nothing said about epochs ($(cat "$TMP/r1.err"))" \
	sh -c "[ '$(summary "$TMP/r1.err" | cut -d' ' -f3)' = 1 ] && ! grep -q 'new epoch' '$TMP/r1.err'"
check "second run: a new epoch, and it says so ($(cat "$TMP/r2.err"))" \
	sh -c "[ '$e2' = 2 ] && grep -q 'a new epoch: this run.s data only.*--add adds to the current one' '$TMP/r2.err'"
check "second run's report: its own process only ($(field "$TMP/rep2.json" processes))" \
	[ "$(field "$TMP/rep2.json" processes)" = 1 ]
check "second run's report: its own samples only ($(field "$TMP/rep2.json" samples) = summary's $s2)" \
	[ "$(field "$TMP/rep2.json" samples)" = "$s2" ]
has "$TMP/rep2.json" work && ! has "$TMP/rep2.json" spin &&
	pass "second run's report: its program, not the first's ($(images "$TMP/rep2.json"))" ||
	fail "second run's report: its program, not the first's ($(images "$TMP/rep2.json"))"
"$VPROF" report --db "$D" --epoch 1 --json -n 0 >"$TMP/rep1.json"
has "$TMP/rep1.json" spin && ! has "$TMP/rep1.json" work &&
	pass "the first run stays in epoch 1 ($(images "$TMP/rep1.json"))" ||
	fail "the first run stays in epoch 1 ($(images "$TMP/rep1.json"))"
"$VPROF" run --db "$D" --add -- "$TMP/spin" 10 >/dev/null 2>"$TMP/r3.err"
"$VPROF" report --db "$D" --json -n 0 >"$TMP/rep3.json"
read -r s3 p3 e3 <<<"$(summary "$TMP/r3.err")"
check "--add: the current epoch, said ($(cat "$TMP/r3.err"))" \
	sh -c "[ '$e3' = 2 ] && grep -q 'added to the data already in it' '$TMP/r3.err'"
check "--add: the report holds both runs ($(field "$TMP/rep3.json" processes) processes, $(field "$TMP/rep3.json" samples) = $s2 + $s3 samples)" \
	[ "$(field "$TMP/rep3.json" processes)" = 2 -a "$(field "$TMP/rep3.json" samples)" = $((s2 + s3)) ]
# --- (2) two runs at once, each summary its own ---
# Run A: one process, 0.6 s of CPU. Run B: a shell starting 8 short
# processes, then still running (sleep) while A ends, so that A's merge
# (and the merge loop) take B's finished spools before B merges.
concurrent() {   # concurrent DB [--add]
	local db=$1 add=${2:-}
	mkdir -p "$db"
	( while [ ! -e "$TMP/stop" ]; do "$VPROF" merge --db "$db" >/dev/null 2>&1; sleep 0.05; done ) &
	local loop=$!
	"$VPROF" run --db "$db" $add -- "$TMP/work" 1 600 >/dev/null 2>"$TMP/A.err" &
	local a=$!
	"$VPROF" run --db "$db" $add -- sh -c "for i in 1 2 3 4 5 6 7 8; do '$TMP/work' 1 30; done; sleep 1" \
		>/dev/null 2>"$TMP/B.err" &
	local b=$!
	wait $a $b
	touch "$TMP/stop"; wait $loop; rm -f "$TMP/stop"
	read -r sa pa ea <<<"$(summary "$TMP/A.err")"
	read -r sb pb eb <<<"$(summary "$TMP/B.err")"
}
concurrent "$TMP/dbc"
check "concurrent: A's summary counts its one process ($(cat "$TMP/A.err"))" [ "${pa:-x}" = 1 ]
check "concurrent: B's summary counts its 10 processes: the shell, 8 children, sleep ($(cat "$TMP/B.err"))" [ "${pb:-x}" = 10 ]
check "concurrent: each in an epoch of its own ($ea, $eb)" [ -n "$ea" -a -n "$eb" -a "$ea" != "$eb" ]
for r in a b; do
	eval "e=\$e$r s=\$s$r p=\$p$r"
	"$VPROF" report --db "$TMP/dbc" --epoch "$e" --json -n 0 >"$TMP/c$r.json"
	check "concurrent: run $r's epoch $e holds its $p processes and $s samples ($(field "$TMP/c$r.json" processes), $(field "$TMP/c$r.json" samples))" \
		[ "$(field "$TMP/c$r.json" processes)" = "$p" -a "$(field "$TMP/c$r.json" samples)" = "$s" ]
done
check "concurrent: no spool left behind" [ -z "$(ls "$TMP/dbc/spool")" ]
check "concurrent: no ledger left behind ($(ls "$TMP"/dbc/epochs/*/run-* 2>/dev/null))" \
	[ -z "$(ls "$TMP"/dbc/epochs/*/run-* 2>/dev/null)" ]

concurrent "$TMP/dbd" --add
check "concurrent --add: A's summary counts its one process ($(cat "$TMP/A.err"))" [ "${pa:-x}" = 1 ]
check "concurrent --add: B's summary counts its 10 processes ($(cat "$TMP/B.err"))" [ "${pb:-x}" = 10 ]
check "concurrent --add: one epoch for both ($ea, $eb)" [ "$ea" = 1 -a "$eb" = 1 ]
"$VPROF" report --db "$TMP/dbd" --json -n 0 >"$TMP/d.json"
check "concurrent --add: the epoch holds both: $((pa + pb)) processes, $((sa + sb)) samples ($(field "$TMP/d.json" processes), $(field "$TMP/d.json" samples))" \
	[ "$(field "$TMP/d.json" processes)" = $((pa + pb)) -a "$(field "$TMP/d.json" samples)" = $((sa + sb)) ]
finish
