#!/bin/bash
# vprof merge --from: a fleet's databases fold into one.
#
# Three databases from real programs (gzip twice, so one build-id meets
# itself, with call stacks; xz; python3). Folding is associative and commutative: (A+B)+C,
# A+(B+C) and C+B+A in one command give the same report, row for row, and
# every row is the sum of the three. --epoch picks the sources' epoch. Bad
# input (no such directory, not a database, a corrupt profile, the
# destination itself, an epoch it lacks) is one message, exit 1, and the
# destination unchanged. Killed at each of its steps
# (VPROF_TEST_MERGE_DIE), a fold leaves the destination as before or as
# after, never between, and the next merge completes it.
. "$(dirname "$0")/lib.sh"

"$PY" -c 'import random
r = random.Random(7)
words = [("w%d" % i).encode() * (1 + i % 5) for i in range(3000)]
open("'"$TMP"'/in", "wb").write(b" ".join(r.choice(words) for _ in range(1500000)))'
run() { "$VPROF" run --db "$1" "${@:2}" >/dev/null 2>"$TMP/run.err" </dev/null ||
	fail "vprof run $*: $(cat "$TMP/run.err")"; }
run "$TMP/A" --stacks -- gzip -9 -c "$TMP/in"
run "$TMP/B" -- xz -6 -c "$TMP/in"
run "$TMP/C" --stacks -- gzip -6 -c "$TMP/in"
run "$TMP/C" --add -- "$PY" -c 'sum(i * i % 7 for i in range(3000000))'

# report DB [--epoch E]: the JSON report, normalized to one line per row.
report() {
	"$VPROF" report --db "$@" --json -n 0 2>/dev/null | "$PY" -c 'import json, sys
d = json.load(sys.stdin)
for k in ("processes", "samples", "samples_seen", "dropped", "unknown", "kernel_samples"):
    print(k, d.get(k, 0))
for e in d.get("events", []):
    for r in e["rows"]:
        print(e["event"], r["image"], r["procedure"], r["samples"])
        print(e["event"], r["image"], r["procedure"], "inclusive", r.get("inclusive", 0))' | sort
}
# sum of reports: every numeric last field added per key
sumrep() { cat "$@" | awk '{k = $0; sub(/ [0-9]+$/, "", k); s[k] += $NF} END {for (k in s) print k, s[k]}' | sort; }
state() { (cd "$1" && find epochs -type f | sort | xargs sha256sum); }

report "$TMP/A" >"$TMP/rA"; report "$TMP/B" >"$TMP/rB"; report "$TMP/C" >"$TMP/rC"
sumrep "$TMP/rA" "$TMP/rB" "$TMP/rC" >"$TMP/rsum"
check "sources have samples ($(grep '^samples ' "$TMP/rA" "$TMP/rB" "$TMP/rC" | tr '\n' ' '))" \
	[ "$(awk '$1 == "samples" {print $2}' "$TMP/rA")" -gt 50 -a "$(awk '$1 == "samples" {print $2}' "$TMP/rB")" -gt 50 ]

cp -a "$TMP/A" "$TMP/X"             # (A+B)+C
"$VPROF" merge --db "$TMP/X" --from "$TMP/B" >"$TMP/o1" 2>&1
r1=$?
"$VPROF" merge --db "$TMP/X" --from "$TMP/C" >"$TMP/o2" 2>&1
r2=$?
check "merge --from: exit 0 ($r1 $r2; $(cat "$TMP/o1"))" \
	sh -c "[ $r1 = 0 -a $r2 = 0 ] && grep -q '^folded ' '$TMP/o2'"
cp -a "$TMP/B" "$TMP/Y"             # A+(B+C)
"$VPROF" merge --db "$TMP/Y" --from "$TMP/C" >/dev/null 2>&1
cp -a "$TMP/A" "$TMP/Z"
"$VPROF" merge --db "$TMP/Z" --from "$TMP/Y" >/dev/null 2>&1
"$VPROF" merge --db "$TMP/W" --from "$TMP/C" "$TMP/B" "$TMP/A" >"$TMP/o3" 2>&1   # C+B+A, a new db
check "several sources in one command ($(cat "$TMP/o3"))" grep -q 'of 3 databases' "$TMP/o3"
report "$TMP/X" >"$TMP/rX"; report "$TMP/Z" >"$TMP/rZ"; report "$TMP/W" >"$TMP/rW"
check "(A+B)+C = A+(B+C), row for row ($(wc -l <"$TMP/rX") rows)" cmp -s "$TMP/rX" "$TMP/rZ"
check "(A+B)+C = C+B+A" cmp -s "$TMP/rX" "$TMP/rW"
check "every count is the sum of the sources' ($(diff "$TMP/rX" "$TMP/rsum" | head -3 | tr '\n' ' '))" \
	cmp -s "$TMP/rX" "$TMP/rsum"
n=$(cat "$TMP"/{A,B,C}/epochs/1/processes.tsv | wc -l)
check "processes.tsv lines folded ($(wc -l <"$TMP/X/epochs/1/processes.tsv") = $n)" \
	[ "$(wc -l <"$TMP/X/epochs/1/processes.tsv")" = "$n" ]
check "gzip of A and C folded into one profile (same build-id)" \
	[ "$(ls "$TMP/X/epochs/1" | grep -c '\.prof$')" -lt \
	  "$(cat <(ls "$TMP/A/epochs/1") <(ls "$TMP/B/epochs/1") <(ls "$TMP/C/epochs/1") | grep -c '\.prof$')" ]
check "the sources are unchanged" cmp -s "$TMP/rB" <(report "$TMP/B")
# Call stacks (A's and C's gzip) fold too: inclusive counts above are from
# them; the stack count is the sum.
nst() { "$VPROF" report --db "$1" -n 1 2>/dev/null | sed -n 's/^call stacks: \([0-9]*\) samples with a stack.*/\1/p'; }
check "call stacks folded: $(nst "$TMP/X") = $(nst "$TMP/A") + $(nst "$TMP/C")" \
	[ -n "$(nst "$TMP/A")" -a "$(nst "$TMP/X")" = $(( $(nst "$TMP/A") + $(nst "$TMP/C") )) ]

# --epoch: the sources' epoch to take.
cp -a "$TMP/A" "$TMP/A2"
"$VPROF" epoch --db "$TMP/A2" new >/dev/null
run "$TMP/A2" -- xz -1 -c "$TMP/in"
"$VPROF" merge --db "$TMP/E1" --from "$TMP/A2" >/dev/null 2>&1
"$VPROF" merge --db "$TMP/E2" --from "$TMP/A2" --epoch 1 >/dev/null 2>&1
"$VPROF" merge --db "$TMP/E3" --from "$TMP/A2" --epoch all >/dev/null 2>&1
check "--from takes the source's current epoch" cmp -s <(report "$TMP/E1") <(report "$TMP/A2" --epoch 2)
check "--epoch 1 takes epoch 1" cmp -s <(report "$TMP/E2") "$TMP/rA"
check "--epoch all takes every epoch" cmp -s <(report "$TMP/E3") <(report "$TMP/A2" --epoch all)

# Bad input: one message, exit 1, destination unchanged.
state "$TMP/X" >"$TMP/s0"
mkdir -p "$TMP/notdb"; echo hi >"$TMP/notdb/file"
cp -a "$TMP/B" "$TMP/Bc"
f=$(ls "$TMP"/Bc/epochs/1/*.prof | grep -v stats | head -1)
"$PY" -c 'import sys; p = sys.argv[1]; b = bytearray(open(p, "rb").read()); b[len(b) // 2] ^= 0x55; open(p, "wb").write(b)' "$f"
bad() {   # bad WHAT EXPECTED-TEXT ARGS...
	local what=$1 want=$2; shift 2
	"$VPROF" merge --db "$TMP/X" "$@" >"$TMP/bo" 2>"$TMP/be"
	local rc=$?
	check "$what: exit 1, one message ($(cat "$TMP/be"))" \
		sh -c "[ $rc = 1 -a $(wc -l <"$TMP/be") = 1 ] && grep -q '$want' '$TMP/be'"
	check "$what: destination unchanged" cmp -s "$TMP/s0" <(state "$TMP/X")
}
bad "no such directory" "No such file" --from "$TMP/nothere"
bad "not a database" "not a vprof database" --from "$TMP/notdb"
bad "corrupt profile (first source good)" "nothing folded" --from "$TMP/A" "$TMP/Bc"
bad "the destination itself" "destination database itself" --from "$TMP/X"
bad "an epoch it lacks" "no epoch 9" --from "$TMP/A" --epoch 9
"$VPROF" merge --db "$TMP/X" --from "$TMP/A" --follow >/dev/null 2>"$TMP/be"
check "--from with --follow: usage error (exit 2)" [ $? = 2 ]

# Killed at each step: before or after, never between; the next merge completes it.
report "$TMP/A" >"$TMP/before"
sumrep "$TMP/rA" "$TMP/rB" >"$TMP/after"
killed=0 mid=0 odd=0
for k in $(seq 1 16); do
	rm -rf "$TMP/K"; cp -a "$TMP/A" "$TMP/K"
	{ VPROF_TEST_MERGE_DIE=$k "$VPROF" merge --db "$TMP/K" --from "$TMP/B" >/dev/null 2>&1; rc=$?; } 2>/dev/null
	[ $rc = 137 ] && killed=$((killed + 1))
	"$VPROF" merge --db "$TMP/K" >/dev/null 2>&1     # recovers a killed fold
	report "$TMP/K" >"$TMP/rK"
	if cmp -s "$TMP/rK" "$TMP/before"; then
		mid=$((mid + 1))                            # rolled back: fold again
		"$VPROF" merge --db "$TMP/K" --from "$TMP/B" >/dev/null 2>&1
		report "$TMP/K" >"$TMP/rK"
	fi
	cmp -s "$TMP/rK" "$TMP/after" || odd=$((odd + 1))
	[ -e "$TMP/K/merge.stage" -o -e "$TMP/K/merge.commit" ] && odd=$((odd + 1))
done
check "fold killed at $killed steps ($mid rolled back, $((killed - mid)) finished by the next merge)" \
	[ "$killed" -ge 5 -a "$mid" -ge 1 -a "$((killed - mid))" -ge 1 ]
check "every killed fold ends as A+B exactly, no journal left ($odd wrong)" [ "$odd" = 0 ]
finish
