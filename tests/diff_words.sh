#!/bin/bash
# vprof diff's first line says the result in words, for someone who has
# not read McKenney: how much more the more stressed run took, and the
# top bucket's change in samples and in share of each run; the jargon
# (work, load, saturation) follows below it. Epochs with exact counts
# (tests/fixtures/mkprof.c) on a real binary's procedures
# (tests/fixtures/rebuilt.c: steady, grown, main), so the line is known
# to the character.
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures
cd "$TMP" || exit 1
gcc -O1 -D_GNU_SOURCE -I"$TOP" -o mkprof "$FIX/mkprof.c" "$TOP"/merge/*.c "$TOP"/spool/*.c -lxxhash -lpthread ||
	{ fail "cannot build mkprof"; finish; }
gcc -O1 -g -o prog "$FIX/rebuilt.c" || { fail "cannot build rebuilt.c"; finish; }
at() { printf '%#x' $((0x$(nm prog | awk -v f="$1" '$3 == f {print $1}') + 4)); }
S=$(at steady) G=$(at grown) M=$(at main)
printf 'image %s\n%s 100\n%s 50\n' "$TMP/prog" "$S" "$G" | ./mkprof w 1
printf 'image %s\n%s 100\n%s 150\n' "$TMP/prog" "$S" "$G" | ./mkprof w 2
printf 'image %s\n%s 100\n%s 50\n%s 30\n' "$TMP/prog" "$S" "$G" "$M" | ./mkprof w 3
printf 'image %s\n%s 100\n%s 150\n' "$TMP/prog" "$S" "$G" | ./mkprof w 4 2000000

first() { "$VPROF" diff --db w "$@" 2>&1 | head -1; }
want="B (w epoch 2) took 1.67x the CPU time of A (w epoch 1): 250 samples vs 150; ranked by ratio, the top change is grown: B has 3.00x A's samples of it (150 vs 50), 33.3% of A's samples to 60.0% of B's (+26.7 points)"
got=$(first @1 @2)
check "the first line in words (got: $got)" [ "$got" = "$want" ]
"$VPROF" diff --db w @1 @2 >d.txt 2>&1
check "the jargon stays below it (a blank line, then 'vprof diff: event task-clock, by procedure')" \
	[ "$(sed -n 2p d.txt)" = "" -a "$(sed -n 3p d.txt)" = "vprof diff: event task-clock, by procedure" -a "$(grep -c '^work w: ' d.txt)" = 1 ]
got=$(first @2 @1)
check "operands swapped: A is the one that took more ($got)" \
	[ "${got%%;*}" = "A (w epoch 2) took 1.67x the CPU time of B (w epoch 1): 250 samples vs 150" ]
got=$(first @1 @3)
check "a bucket only B has: 'new in B' ($got)" \
	[ "${got#*; }" = "ranked by ratio, the top change is main: new in B (30 samples), 0.0% of A's samples to 16.7% of B's (+16.7 points)" ]
got=$(first --rank linear @1 @2)
check "ranked by the linear projection: the load at which it would take all of its run ($got)" \
	[ "${got##*; }" = "projected to reach 100% of its run first, at load 2.67" ]
got=$(first @1 @4)
check "different sampling periods: samples, not time ($got)" \
	[ "${got%%:*}" = "B (w epoch 4) took 1.67x the samples of A (w epoch 1)" ]
"$VPROF" diff --db w --json @1 @2 >d.json
check "--json: the summary's headline is the same line" \
	[ "$("$PY" -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["headline"])' d.json)" = "$want" ]
finish
