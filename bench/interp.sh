#!/bin/sh
# Builds and runs the interpreter benchmark (bench/interp_bench.c).
# Usage: bench/interp.sh [instructions-for-the-long-run]
set -e
cd "$(dirname "$0")/.."
make -s build/libinterp.a
mkdir -p build/bench
${CC:-gcc} -O2 -g -D_GNU_SOURCE -I. -o build/bench/interp_bench bench/interp_bench.c build/libinterp.a -lZydis
exec build/bench/interp_bench "$@"
