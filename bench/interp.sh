#!/bin/sh
# Builds and runs the interpreter benchmark (bench/interp_bench.c) against
# build/libinterp.a, the interpreter that ships: interp/optab.c
# references every family's rows, so a plain link (no --whole-archive)
# gets them all; the check below refuses to report figures for a binary
# that lacks one.
# Usage: bench/interp.sh [instructions-for-the-long-run]
set -e
cd "$(dirname "$0")/.."
make -s build/libinterp.a
mkdir -p build/bench
${CC:-gcc} -O2 -g -D_GNU_SOURCE -I. -o build/bench/interp_bench bench/interp_bench.c build/libinterp.a -lZydis
for fam in mov alu ctrl shift muldiv bit string misc crc32_movnti x87 opmask vec_int vec_fp; do
	if ! nm build/bench/interp_bench | grep -q " interp_ops_$fam\$"; then
		echo "bench/interp.sh: family $fam is not linked into the benchmark" >&2
		exit 1
	fi
done
exec build/bench/interp_bench "$@"
