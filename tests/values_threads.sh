#!/bin/bash
# What a thread costs with value sampling on (its memory): a
# program with 1000 threads alive at once, each of which has had value
# samples, must not gain more than BOUND_KB per thread in resident memory
# over the same program unprofiled (README, "Value sampling": 24 KiB of
# value state per thread plus the touched pages of its 64 KiB alternate
# stack; ~40 KB per thread measured here, 179 KB before the decode cache
# was cut to 64 entries). Memory, not time: the figure does not depend on
# the machine's load.
#
# tests/fixtures/threads.c N MS: N threads each spin MS ms of their own
# CPU, then all wait at a barrier while main reads VmRSS. At 4000 Hz with
# every sample interpreted, a thread of 4 ms gets ~8-16 samples (2-4 kHz achieved), so nearly
# every thread has mapped its value state when RSS is read.
. "$(dirname "$0")/lib.sh"

N=1000
BOUND_KB=56          # per thread, above the unprofiled run

cc -O2 -pthread -o "$TMP/threads" "$TOP/tests/fixtures/threads.c"
"$TMP/threads" $N 4 >"$TMP/plain.out"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --values --interp-every 1 \
	--freq 4000 -- "$TMP/threads" $N 4)
cat "$TMP/plain.out" "$TMP/v.out" "$TMP/v.err"
check "exit status unchanged with --values and $N threads ($st)" [ "$st" = 0 ]
pc=$(sed -n 's/.*check=\([0-9]*\).*/\1/p' "$TMP/plain.out")
vc=$(sed -n 's/.*check=\([0-9]*\).*/\1/p' "$TMP/v.out")
check "every thread ran with --values ($vc of $N)" [ "${vc:-0}" = "$N" -a "${pc:-0}" = "$N" ]

runs=$("$VPROF" report --db "$TMP/db" 2>/dev/null | sed -n 's/.*interpretation runs \([0-9]*\).*/\1/p' | head -1)
check "at least one value sample per thread on average (${runs:-0} interpretation runs, $N threads)" \
	[ "${runs:-0}" -ge $N ]

prss=$(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$TMP/plain.out")
vrss=$(sed -n 's/.*rss_kb=\([0-9]*\).*/\1/p' "$TMP/v.out")
grow=$(( ${vrss:-0} - ${prss:-0} ))
echo "RSS: ${prss:-?} kB unprofiled, ${vrss:-?} kB with --values: +$grow kB, $(( grow * 1024 / N )) bytes per thread"
check "RSS growth with --values and $N threads: $grow kB <= $((BOUND_KB * N)) kB ($BOUND_KB kB per thread)" \
	[ -n "$prss" -a -n "$vrss" -a "$grow" -le $((BOUND_KB * N)) ]
finish
