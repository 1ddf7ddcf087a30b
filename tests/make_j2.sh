#!/bin/bash
# `vprof run -- make -j2` on a small C project builds it,
# and one database holds samples from every gcc/cc1/as process, with nothing
# lost compared with the per-process totals.
#
# Each process's spool counts every sample its handler saw (samples) and
# what it dropped; processes.tsv has one line per merged process. "Nothing
# lost" = for every process, merged + dropped == samples, dropped == 0, and
# the report's total equals the sum over processes. The rate is high (10 kHz
# of task-clock) so that even a 1 ms `as` gets samples.
. "$(dirname "$0")/lib.sh"

cp -r "$TOP/tests/fixtures/cproj" "$TMP/proj"
"$VPROF" run --db "$TMP/db" --event task-clock --freq 10000 -- make -C "$TMP/proj" -j2 >"$TMP/out" 2>"$TMP/err"
check "make -j2 succeeds under vprof" [ $? -eq 0 ]
check "the project was built and runs" "$TMP/proj/app"
tsv="$TMP/db/epochs/1/processes.tsv"
check "processes.tsv written" [ -s "$tsv" ]

ncc=$(ls "$TMP/proj"/*.c | wc -l)
count() { awk -F'\t' -v re="$1" '$3 ~ re' "$tsv" | wc -l; }
n_cc1=$(count '/cc1$'); n_as=$(count '/(x86_64-linux-gnu-)?as$'); n_gcc=$(count '/(x86_64-linux-gnu-)?gcc(-[0-9]+)?$')
echo "processes: cc1=$n_cc1 as=$n_as gcc=$n_gcc, sources=$ncc"; cut -f1-9 "$tsv"
check "one cc1 per source file in the database ($n_cc1 of $ncc)" [ "$n_cc1" -eq "$ncc" ]
check "one as per source file in the database ($n_as of $ncc)" [ "$n_as" -eq "$ncc" ]
check "a gcc driver per compile plus the link ($n_gcc of $((ncc + 1)))" [ "$n_gcc" -eq $((ncc + 1)) ]
nos=$(awk -F'\t' '$3 ~ /\/(cc1|(x86_64-linux-gnu-)?as)$/ && $5 == 0' "$tsv" | wc -l)
check "every cc1 and as process has samples ($nos without)" [ "$nos" -eq 0 ]
bad=$(awk -F'\t' '$5 + $6 != $4 || $6 != 0' "$tsv" | wc -l)
check "per process: merged == samples seen, none dropped ($bad processes differ)" [ "$bad" -eq 0 ]
sum=$(awk -F'\t' '{s += $5} END {print s}' "$tsv")
total=$("$VPROF" report --db "$TMP/db" --json | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
check "report total ($total) equals the sum of per-process totals ($sum)" [ "$total" -eq "$sum" ]
"$VPROF" report --db "$TMP/db" --by image -n 5
finish
