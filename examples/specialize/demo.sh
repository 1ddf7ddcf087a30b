#!/bin/sh
# `make demo-values`: the worked example of docs/worked-example.md, end to
# end. Profile examples/specialize/shade.c with value sampling into a
# fresh database (build/demo-values.db), print what `vprof invariants`
# answers, then measure the build specialized from that answer against
# the general one (bench/specialize.sh, interleaved runs, medians).
set -e
cd "$(dirname "$0")/../.."
gcc -O2 -g -o build/shade examples/specialize/shade.c -lm
rm -rf build/demo-values.db
echo "== vprof run --values -- build/shade 200"
build/vprof run --db build/demo-values.db --values -- build/shade 200
echo
echo "== vprof invariants -n 3"
build/vprof invariants --db build/demo-values.db -n 3
echo
echo "== the same program with power()'s case n = 3 (-DSPECIALIZE), against the general one"
bench/specialize.sh --rounds 5
