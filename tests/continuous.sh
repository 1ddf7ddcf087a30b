#!/bin/bash
# Continuous mode: a server profiled for a long time keeps
# bounded spools, and `vprof merge --follow` takes its samples while it runs.
#
# tests/fixtures/contin.c runs TICKS ticks of TICK_MS ms (3 threads of fixed
# work a tick, a fork child every 5 ticks) under plain LD_PRELOAD with
# VPROF_EPOCH_SECS=EPOCH, beside `vprof merge --follow --interval 0.5`. A
# sampler records the spool directory every 0.2 s. Checks:
#   - output and exit status equal to a plain run's;
#   - spools bounded: at most 5 files at any time (the server's current
#     spool and one rotated out being closed, a live child's, and what
#     finished within one follow interval), allocated bytes at most 5 spools';
#   - at 3/4 of the run the database already holds at least 3/4 of the
#     samples less what an epoch (+2 s) takes and 10% (without rotation it
#     would hold only the children's, ~6%);
#   - every sample seen is in the database once: samples_seen = samples +
#     dropped (a sample lost or counted twice across a switch breaks it),
#     and the server's rotated spools were merged one by one;
#   - the same with --values (value spools are 5.3 MB of address space),
#     with --epoch-every 3 --keep-epochs 2: epochs rotate and old ones go;
#   - SIGTERM during a merge: it finishes (no journal left), exit 0;
#   - `vprof run --epoch-secs --stacks`: merges while the program runs, one
#     summary, a call stack for every sample across rotations;
#     60 short value-sampled processes never leave 60 spools at once;
#   - a bad VPROF_EPOCH_SECS: one message, the program runs unprofiled.
# scripts/continuous_long.sh runs this for 10 minutes with 30 s epochs
# (CONTIN_TICKS, CONTIN_TICK_MS, CONTIN_EPOCH, CONTIN_WORK).
. "$(dirname "$0")/lib.sh"

TICKS=${CONTIN_TICKS:-40}
TICK_MS=${CONTIN_TICK_MS:-500}
EPOCH=${CONTIN_EPOCH:-2}
WORK=${CONTIN_WORK:-200000}
secs=$((TICKS * TICK_MS / 1000))

gcc -O1 -pthread -o "$TMP/contin" "$TOP/tests/fixtures/contin.c" || fail "cannot build fixture"

# sampler DIR OUT: every 0.2 s, "count allocated_bytes apparent_bytes" of DIR/*.spool
sampler() {
	"$PY" - "$1" "$2" >/dev/null 2>&1 <<'EOF' &
import os, sys, time
d, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    while True:
        n = a = s = 0
        try:
            for e in os.scandir(d):
                if e.name.endswith(".spool"):
                    try:
                        st = e.stat()
                    except FileNotFoundError:
                        continue
                    n += 1; a += st.st_blocks * 512; s += st.st_size
        except FileNotFoundError:
            pass
        f.write("%d %d %d\n" % (n, a, s)); f.flush()
        time.sleep(0.2)
EOF
	echo $!
}
maxcol() { awk -v c="$2" 'BEGIN {m = 0} $c > m {m = $c} END {print m}' "$1"; }
jfield() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# --- the plain run, the profiled run, and a value-sampling run, at once ---
"$TMP/contin" "$TICKS" "$TICK_MS" "$WORK" >"$TMP/plain.out" 2>&1 &
plain=$!

A=$TMP/dba
B=$TMP/dbb
mkdir -p "$A" "$B"
"$VPROF" merge --follow --db "$A" --interval 0.5 >"$TMP/fa.out" 2>"$TMP/fa.err" &
fa=$!
"$VPROF" merge --follow --db "$B" --interval 0.5 --epoch-every 3 --keep-epochs 2 \
	>"$TMP/fb.out" 2>"$TMP/fb.err" &
fb=$!
sa=$(sampler "$A/spool" "$TMP/sa")
sb=$(sampler "$B/spool" "$TMP/sb")

LD_PRELOAD=$LIBVPROF VPROF_DB=$A VPROF_EPOCH_SECS=$EPOCH \
	"$TMP/contin" "$TICKS" "$TICK_MS" "$WORK" >"$TMP/a.out" 2>"$TMP/a.err" &
pa=$!
LD_PRELOAD=$LIBVPROF VPROF_DB=$B VPROF_EPOCH_SECS=$EPOCH VPROF_VALUES=on VPROF_FREQ=1000 \
	VPROF_INTERP_EVERY=1 "$TMP/contin" "$TICKS" "$TICK_MS" "$WORK" >"$TMP/b.out" 2>"$TMP/b.err" &
pb=$!

# At 3/4 of the run (the fixture flushes a line every 10 ticks): what the
# database holds already.
mark=$(( (TICKS * 3 / 4) / 10 * 10 ))
[ "$mark" -ge 10 ] || mark=10
for i in $(seq $((secs * 20 + 600))); do
	grep -q "^tick $mark " "$TMP/a.out" && break
	kill -0 $pa 2>/dev/null || break
	sleep 0.1
done
"$VPROF" report --db "$A" --json -n 1 >"$TMP/mid.json" 2>/dev/null
mid=$(jfield "$TMP/mid.json" samples 2>/dev/null || echo 0)

wait $pa; sta=$?
wait $pb; stb=$?
wait $plain; stp=$?
# One more follow round after the last exit: until both spool directories
# are empty (a deadline for a hang; the check below says if they are not).
wait_for 120 eval '[ -z "$(ls "$A/spool")" -a -z "$(ls "$B/spool")" ]'
kill -TERM $fa $fb
wait $fa; rfa=$?
wait $fb; rfb=$?
kill $sa $sb 2>/dev/null
wait $sa $sb 2>/dev/null

check "plain run ended 0 (it is the reference)" [ "$stp" = 0 ]
check "profiled: same output as plain" cmp -s "$TMP/plain.out" "$TMP/a.out"
check "profiled: same exit status ($sta)" [ "$sta" = "$stp" ]
check "profiled: nothing on stderr ($(head -c 300 "$TMP/a.err"))" [ ! -s "$TMP/a.err" ]
check "values: same output as plain" cmp -s "$TMP/plain.out" "$TMP/b.out"
check "values: same exit status ($stb)" [ "$stb" = "$stp" ]
check "merge --follow exits 0 on SIGTERM ($rfa, $rfb)" [ "$rfa" = 0 -a "$rfb" = 0 ]
check "merge --follow says it stopped" grep -q '^stopped: ' "$TMP/fa.out"
check "merge --follow printed no error ($(head -c 300 "$TMP/fa.err"))" [ ! -s "$TMP/fa.err" ]

# Spool bound, measured.
na=$(maxcol "$TMP/sa" 1); aa=$(maxcol "$TMP/sa" 2); za=$(maxcol "$TMP/sa" 3)
nb=$(maxcol "$TMP/sb" 1); ab=$(maxcol "$TMP/sb" 2); zb=$(maxcol "$TMP/sb" 3)
echo "spools at once: PC sampling max $na files, $aa bytes allocated ($za apparent);" \
	"values max $nb files, $ab bytes allocated ($zb apparent); $(wc -l <"$TMP/sa") samples"
plain_sz=2103296     # a PC-sampling spool's size (spool/writer.c layout)
values_sz=5513280    # with a VALUES section
check "PC sampling: at most 5 spools at once (max $na)" [ "$na" -ge 1 -a "$na" -le 5 ]
check "PC sampling: at most 5 spools' bytes at once ($aa allocated)" [ "$aa" -le $((5 * plain_sz)) ]
check "values: at most 5 spools at once (max $nb)" [ "$nb" -ge 1 -a "$nb" -le 5 ]
check "values: at most 5 spools' bytes at once ($ab allocated)" [ "$ab" -le $((5 * values_sz)) ]
check "no spool left after the run ($(ls "$A/spool" "$B/spool" | tr '\n' ' '))" \
	[ -z "$(ls "$A/spool")" -a -z "$(ls "$B/spool")" ]

# The database during and after the run.
"$VPROF" report --db "$A" --json -n 1 >"$TMP/end.json"
total=$(jfield "$TMP/end.json" samples)
seen=$(jfield "$TMP/end.json" samples_seen)
dropped=$(jfield "$TMP/end.json" dropped)
procs=$(jfield "$TMP/end.json" processes)
kids=$((TICKS / 5))
lo=$(( total * mark / TICKS - total * (EPOCH + 2) * 1000 / (TICKS * TICK_MS) - total / 10 ))
echo "at tick $mark of $TICKS: $mid of $total samples in the database (at least $lo wanted)"
check "samples taken: some ($total)" [ "$total" -ge 100 ]
check "at 3/4 of the run the database held $mid of $total samples (>= $lo)" [ "$mid" -ge "$lo" ]
check "every sample once: seen $seen = merged $total + dropped $dropped" [ "$seen" = $((total + dropped)) ]
check "processes counted once each: $procs = 1 + $kids children" [ "$procs" = $((1 + kids)) ]
rot=$(awk -F'\t' -v p=$pa '$1 == p && $7 == 3' "$A/epochs/1/processes.tsv" | wc -l)
last=$(awk -F'\t' -v p=$pa '$1 == p && $7 == 1' "$A/epochs/1/processes.tsv" | wc -l)
want=$(( secs / EPOCH - 3 ))
check "the server's rotated spools were merged one by one ($rot, want >= $want) and its last once ($last)" \
	[ "$rot" -ge "$want" -a "$last" = 1 ]
check "merge --follow merged while the program ran ($(grep -c '^merged' "$TMP/fa.out") merges)" \
	[ "$(grep -c '^merged' "$TMP/fa.out")" -ge $((secs / EPOCH / 2)) ]

# Epochs with --epoch-every 3 --keep-epochs 2.
cur=$(cat "$B/epochs/CURRENT" 2>/dev/null || echo 1)
kept=$(ls "$B/epochs" | grep -c '^[0-9]*$')
check "values db: epochs started every 3 s (current $cur, want >= $((secs / 3 - 2)))" [ "$cur" -ge $((secs / 3 - 2)) ]
check "values db: only the newest 2 epochs kept ($(ls "$B/epochs" | tr '\n' ' '))" \
	[ "$kept" = 2 -a -d "$B/epochs/$cur" -a -d "$B/epochs/$((cur - 1))" ]
check "values db: no half-dropped epoch left" [ -z "$(ls -a "$B/epochs" | grep '^\.drop')" ]
"$VPROF" report --db "$B" --epoch all --json -n 1 >"$TMP/b.json"
vs=$(jfield "$TMP/b.json" value_samples 2>/dev/null || echo 0)
check "values db: value samples in the kept epochs ($vs)" [ "$vs" -gt 0 ]

# --- SIGTERM while a merge is under way: it finishes, then exit 0 ---
C=$TMP/dbc
for i in 1 2 3; do
	LD_PRELOAD=$LIBVPROF VPROF_DB=$C "$TMP/contin" 2 50 20000 >/dev/null
done
VPROF_TEST_MERGE_DELAY_US=300000 "$VPROF" merge --follow --db "$C" >"$TMP/fc.out" 2>&1 &
fc=$!
wait_for 120 eval '[ -d "$C/merge.stage" ] || ! kill -0 $fc 2>/dev/null'
check "a merge was under way (merge.stage seen)" [ -d "$C/merge.stage" ]
kill -TERM $fc
wait $fc; rfc=$?
check "SIGTERM mid-merge: exit 0 ($rfc; $(tr '\n' ' ' <"$TMP/fc.out"))" [ "$rfc" = 0 ]
check "SIGTERM mid-merge: the merge finished (3 spools merged, no journal left)" \
	[ ! -e "$C/merge.stage" -a ! -e "$C/merge.commit" -a -z "$(ls "$C/spool")" ]
check "SIGTERM mid-merge: its line says 3 spools" grep -q '^merged 3 spools' "$TMP/fc.out"

# --- vprof run --epoch-secs: merges while the program runs ---
D=$TMP/dbd
"$TMP/contin" 8 500 "$WORK" >"$TMP/d0.out" &
p0=$!
"$VPROF" run --db "$D" --epoch-secs 1 --stacks -- "$TMP/contin" 8 500 "$WORK" >"$TMP/d.out" 2>"$TMP/v.err"
std=$?
wait $p0
check "vprof run --epoch-secs: exit 0 and the program's output" \
	sh -c "[ $std = 0 ] && cmp -s '$TMP/d.out' '$TMP/d0.out'"
r=$(rate_sane); check "vprof run --epoch-secs: summary line, sane rate${r:+: $r}" [ -z "$r" ]
got=$(sed -n 's/^vprof: \([0-9]*\) samples from \([0-9]*\) process.*/\1 \2/p' "$TMP/v.err")
"$VPROF" report --db "$D" --json -n 1 >"$TMP/d.json"
check "vprof run --epoch-secs: summary ($got) = database ($(jfield "$TMP/d.json" samples) samples, 2 processes)" \
	[ "$got" = "$(jfield "$TMP/d.json" samples) 2" ]
rot=$(awk -F'\t' '$7 == 3' "$D/epochs/1/processes.tsv" | wc -l)
check "vprof run --epoch-secs: rotated spools merged ($rot, want >= 2)" [ "$rot" -ge 2 ]
nst=$("$VPROF" report --db "$D" -n 1 2>/dev/null | sed -n 's/^call stacks: \([0-9]*\) samples with a stack, \([0-9]*\) dropped.*/\1 \2/p')
check "vprof run --epoch-secs --stacks: a stack for every sample across rotations ($nst)" \
	[ "$nst" = "$(jfield "$TMP/d.json" samples) 0" ]

# --- many short processes (a test suite's): vprof run --epoch-secs merges
# their spools while the run goes on, rather than 5,658 at the end ---
G=$TMP/dbg
mkdir -p "$G/spool"
sg=$(sampler "$G/spool" "$TMP/sg")
"$VPROF" run --db "$G" --values --epoch-secs 1 -- sh -c \
	'i=0; while [ $i -lt 60 ]; do '"$PY"' -S -c "sum(range(2000000))" || exit 1; i=$((i + 1)); done' \
	>/dev/null 2>"$TMP/g.err"
stg=$?
kill $sg 2>/dev/null; wait $sg 2>/dev/null
ng=$(maxcol "$TMP/sg" 1)
got=$(sed -n 's/^vprof: [0-9]* samples from \([0-9]*\) process.*/\1/p' "$TMP/g.err")
echo "60 short value-sampled processes: at most $ng spools at once"
check "60 processes under vprof run --epoch-secs 1: exit 0, 61 processes merged ($got)" \
	[ "$stg" = 0 -a "$got" = 61 ]
check "... their spools merged during the run: at most $ng at once, fewer than 60" [ "$ng" -lt 60 ]

# --- a bad value: one message, unprofiled, same output ---
LD_PRELOAD=$LIBVPROF VPROF_DB=$TMP/dbe VPROF_EPOCH_SECS=0 "$TMP/contin" 2 10 100 >"$TMP/e.out" 2>"$TMP/e.err"
ste=$?
"$TMP/contin" 2 10 100 >"$TMP/e0.out"
check "VPROF_EPOCH_SECS=0: one message ($(cat "$TMP/e.err"))" \
	[ "$(grep -c 'VPROF_EPOCH_SECS=0: expected an integer' "$TMP/e.err")" = 1 -a "$(wc -l <"$TMP/e.err")" = 1 ]
check "VPROF_EPOCH_SECS=0: the program's output and status" \
	sh -c "[ $ste = 0 ] && cmp -s '$TMP/e.out' '$TMP/e0.out'"
finish
