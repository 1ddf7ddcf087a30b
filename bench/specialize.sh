#!/bin/bash
# bench/specialize.sh — what the worked example's specialization saves
# (docs/worked-example.md): examples/specialize/shade.c built as is (A:
# power() special-cased for exponents 0, 1, 2, libm's pow for the rest)
# and with -DSPECIALIZE (B: the case n = 3 that `vprof invariants` pointed
# at), rendering the same frames, interleaved.
#
#   bench/specialize.sh [--rounds N] [--frames F]
#
# Each round runs A then B, the order swapped every other round, so a
# machine that slows down or speeds up during the run weighs on both
# alike. A run's time is its CPU time (user + system, bash's `time`):
# steadier than wall time when other jobs share the CPUs; wall time is
# printed beside it. Both builds must print the same output (the pixels'
# sum), checked once before the rounds. Prints each round,
# then the medians of A and B, the median of the per-round B/A with its
# interquartile range, and A/B as the speedup.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
rounds=11 frames=40
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) rounds=$2; shift 2 ;;
	--frames) frames=$2; shift 2 ;;
	*) echo "usage: bench/specialize.sh [--rounds N] [--frames F]" >&2; exit 2 ;;
	esac
done
tmp=$(mktemp -d /tmp/vprof-spec.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
src=$TOP/examples/specialize/shade.c
cc -O2 -g -o "$tmp/A" "$src" -lm && cc -O2 -g -DSPECIALIZE -o "$tmp/B" "$src" -lm || exit 1
"$tmp/A" "$frames" >"$tmp/A.out" && "$tmp/B" "$frames" >"$tmp/B.out" || exit 1
if ! cmp -s "$tmp/A.out" "$tmp/B.out"; then
	echo "bench/specialize.sh: the two builds disagree:" >&2
	diff "$tmp/A.out" "$tmp/B.out" >&2
	exit 1
fi

# run X: "cpu wall" of one run of build X, in seconds
run() {
	local TIMEFORMAT='%3U %3S %3R' t
	t=$( { time "$tmp/$1" "$frames" >/dev/null; } 2>&1 )
	awk '{ printf "%.3f %.3f", $1 + $2, $3 }' <<<"$t"
}

echo "# bench/specialize.sh: shade $frames frames, $rounds rounds, cc $(cc -dumpversion) -O2, $(uname -m)"
echo "# A: examples/specialize/shade.c; B: the same with -DSPECIALIZE; both print: $(cat "$tmp/A.out")"
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then a=$(run A); b=$(run B); else b=$(run B); a=$(run A); fi
	echo "round $r A $a B $b"
done | tee "$tmp/rounds"
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
# quantile Q: of the numbers on stdin (linear between ranks)
quantile() {
	sort -g | awk -v q="$1" '{ v[NR] = $1 } END { p = 1 + (NR - 1) * q; i = int(p); f = p - i;
		print (i < NR) ? v[i] + f * (v[i + 1] - v[i]) : v[NR] }'
}
# rounds: "round R A cpu wall B cpu wall"
ma=$(awk '{ print $4 }' "$tmp/rounds" | quantile 0.5)
mb=$(awk '{ print $7 }' "$tmp/rounds" | quantile 0.5)
wa=$(awk '{ print $5 }' "$tmp/rounds" | quantile 0.5)
wb=$(awk '{ print $8 }' "$tmp/rounds" | quantile 0.5)
r50=$(awk '{ print $7 / $4 }' "$tmp/rounds" | quantile 0.5)
r25=$(awk '{ print $7 / $4 }' "$tmp/rounds" | quantile 0.25)
r75=$(awk '{ print $7 / $4 }' "$tmp/rounds" | quantile 0.75)
printf "median CPU: A %.3f s, B %.3f s (wall A %.3f s, B %.3f s)\n" "$ma" "$mb" "$wa" "$wb"
printf "per-round B/A: median %.4f (IQR %.4f-%.4f); speedup A/B %.2fx\n" "$r50" "$r25" "$r75" \
	"$(awk -v r="$r50" 'BEGIN { print 1 / r }')"
