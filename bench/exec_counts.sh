#!/bin/bash
# bench/exec_counts.sh — execution counts per block from vprof's branch
# records (`vprof run --branches` at 4 kHz, `vprof list`'s executions)
# against exact counts of the same binary on the same input (valgrind's
# callgrind, --dump-instr=yes: each instruction's Ir), on three programs
# built by gcc -O2 -g: tests/fixtures/branches.c (planted branches and
# loops), Lua 5.4.4 running bench/programs/bench.lua, and bzip2 1.0.8
# compressing 5 MB of the seeded words of tests/fixtures/real_workloads.sh
# (bench/programs), each run under vprof until 800 windows are recorded
# (one run of the fixture; ~6 of Lua, ~10 of bzip2). bench/exec_counts.py compares: blocks with 1% or more
# of the block executions, vprof's relative counts scaled by one factor a
# program; the target is every such block within 10%.
#
#   bench/exec_counts.sh [--only branches,lua,bzip2]
#
# Callgrind runs the programs ~50x slower: ~3 minutes in all here.
# Results: BENCHMARKS.md, "Branch records".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ONLY="branches lua bzip2"
while [ $# -gt 0 ]; do
	case "$1" in
	--only) ONLY=${2//,/ }; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "exec_counts.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-exec.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
VPROF=$W/vprof
cp "$ROOT/build/vprof" "$VPROF" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
P=$ROOT/bench/programs
PY=/usr/bin/python3

echo "== bench/exec_counts.sh: vprof's execution counts per block against callgrind's exact ones"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

for prog in $ONLY; do
	case $prog in
	branches)
		gcc -O2 -g -o "$W/prog" "$ROOT/tests/fixtures/branches.c" || exit 1
		CMD=("$W/prog" 2700000); CG=("$W/prog" 270000) ;;
	lua)
		gcc -O2 -g -DLUA_USE_POSIX -o "$W/prog" "$P"/lua-5.4.4/*.c -lm || exit 1
		CMD=("$W/prog" "$P/bench.lua" 4); CG=("${CMD[@]}") ;;
	bzip2)
		gcc -O2 -g -D_FILE_OFFSET_BITS=64 -w -o "$W/prog" "$P"/bzip2-1.0.8/*.c || exit 1
		DIR=$W
		. "$ROOT/tests/fixtures/real_workloads.sh"
		head -c 5000000 "$W/words.txt" >"$W/in.txt"
		rm -f "$W/words.txt" "$W/words4.txt"
		CMD=("$W/prog" -c "$W/in.txt"); CG=("${CMD[@]}") ;;
	*) echo "unknown program $prog"; continue ;;
	esac
	# The fixture runs a tenth as long under callgrind: its counts are
	# per round, and vprof's are relative.
	valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$W/cg.out" "${CG[@]}" >/dev/null 2>&1
	# vprof's runs of the same command, added to one epoch until it holds
	# 800 windows or more (a short run at 4 kHz has ~80-150).
	rm -rf "$W/db"
	runs=0 windows=0
	while [ "$windows" -lt 800 ] && [ "$runs" -lt 20 ]; do
		"$VPROF" run --db "$W/db" --add --branches --freq 4000 -- "${CMD[@]}" >/dev/null 2>"$W/run.err"
		runs=$((runs + 1))
		windows=$("$VPROF" report --db "$W/db" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin).get("interp_runs", 0))')
	done
	echo ""
	echo "$prog: $runs runs of vprof run --branches --freq 4000, $windows windows"
	"$PY" "$ROOT/bench/exec_counts.py" "$VPROF" "$W/db" "$W/prog" "$W/cg.out"
done
