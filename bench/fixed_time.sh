#!/bin/bash
# bench/fixed_time.sh — would windows of fixed native time give execution
# counts without the bias of windows that start where time goes? A
# prototype outside vprof, measured against exact counts.
#
#   bench/fixed_time.sh [--runs N] [--only bzip2,lua] [--delta US] [--mech fork|shadow]
#
# vprof's --branches windows run a fixed number of instructions from a
# sample, and samples land where time goes, so a phase that runs fast per
# instruction gets fewer windows than its share of executions (BENCHMARKS.md,
# "Branch records": bzip2's input loop reads a third of its count). A
# window that instead covers a fixed stretch of native time, started at a
# uniformly random time, counts executions in proportion to how often they
# happen: no weighting needed. bench/workloads/forkclock.c (an LD_PRELOAD
# library) builds such windows: at random points of the thread's CPU time
# it forks a copy-on-write snapshot, lets the program run on natively for
# --delta us (default 200) of task-clock, and hands the registers it then
# has to the snapshot, which replays the stretch with vprof's interpreter
# until its state matches and counts every instruction. Each window also
# keeps its first 4096 instructions: vprof's fixed-length window from the
# same start, for comparison.
#
# Programs (gcc -O2 -g, as bench/exec_counts.sh builds them): bzip2 1.0.8
# compressing 5 MB of the seeded words, and Lua 5.4.4 running
# bench/programs/bench.lua 4; --runs runs of each (default 30) with a
# window every ~5 ms of CPU (FORKCLOCK_GAP_US); exact counts from
# callgrind on the same binary and input; bench/fixed_time.py compares
# per block (1% or more of the block executions). bench/workloads/cowcost.c
# first measures what a write to a page shared with a fresh snapshot
# costs here: the "per ns" estimate takes that much off a window's CPU
# time for each page fault in it.
#
# --mech shadow uses bench/workloads/shadowclock.c instead: the stretch is
# interpreted first, in shadow mode on the other CPU, and the program then
# runs it natively, timed the same way, with no snapshot (no copy-on-write
# faults); --delta then defaults to 50 us (its interpretation must reach
# as far as the native run gets).
#
# Results: BENCHMARKS.md, "Windows of fixed native time".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
RUNS=30
ONLY="bzip2 lua"
DELTA=
MECH=fork
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--only) ONLY=${2//,/ }; shift ;;
	--delta) DELTA=$2; shift ;;
	--mech) MECH=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "fixed_time.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-fixed.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/libinterp.a >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
case $MECH in
fork) DELTA=${DELTA:-200} ;;
shadow) DELTA=${DELTA:-50} ;;
*) echo "fixed_time.sh: --mech is fork or shadow" >&2; exit 2 ;;
esac
gcc -O2 -g -fPIC -shared -I"$ROOT" -o "$W/forkclock.so" "$ROOT/bench/workloads/forkclock.c" \
	"$ROOT/build/libinterp.a" -lZydis || exit 1
gcc -O2 -g -fPIC -shared -mclflushopt -I"$ROOT" -o "$W/shadowclock.so" "$ROOT/bench/workloads/shadowclock.c" \
	"$ROOT/build/libinterp.a" -lZydis || exit 1
gcc -O2 -o "$W/cowcost" "$ROOT/bench/workloads/cowcost.c" || exit 1
P=$ROOT/bench/programs
PY=/usr/bin/python3

echo "== bench/fixed_time.sh: execution counts from windows of fixed native time (forkclock) against callgrind's"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
"$W/cowcost" | tee "$W/cow.txt" | head -1
FAULT_NS=$(awk '/^cow_copy_ns/ { print $2 }' "$W/cow.txt")

for prog in $ONLY; do
	case $prog in
	lua)
		gcc -O2 -g -DLUA_USE_POSIX -o "$W/prog" "$P"/lua-5.4.4/*.c -lm || exit 1
		CMD=("$W/prog" "$P/bench.lua" 4) ;;
	bzip2)
		gcc -O2 -g -D_FILE_OFFSET_BITS=64 -w -o "$W/prog" "$P"/bzip2-1.0.8/*.c || exit 1
		DIR=$W
		. "$ROOT/tests/fixtures/real_workloads.sh"
		head -c 5000000 "$W/words.txt" >"$W/in.txt"
		rm -f "$W/words.txt" "$W/words4.txt"
		CMD=("$W/prog" -c "$W/in.txt") ;;
	*) echo "unknown program $prog"; continue ;;
	esac
	valgrind --tool=callgrind --dump-instr=yes --callgrind-out-file="$W/cg.out" "${CMD[@]}" >/dev/null 2>&1
	"${CMD[@]}" | md5sum >"$W/plain.md5"
	rm -f "$W/fc.bin"
	same=0
	for i in $(seq 1 "$RUNS"); do
		if [ "$MECH" = fork ]; then
			FORKCLOCK_OUT=$W/fc.bin FORKCLOCK_GAP_US=5000 FORKCLOCK_DELTA_US=$DELTA \
				LD_PRELOAD=$W/forkclock.so "${CMD[@]}" | md5sum >"$W/run.md5"
		else
			SHADOWCLOCK_OUT=$W/fc.bin SHADOWCLOCK_GAP_US=5000 SHADOWCLOCK_DELTA_US=$DELTA \
				LD_PRELOAD=$W/shadowclock.so "${CMD[@]}" | md5sum >"$W/run.md5"
		fi
		cmp -s "$W/plain.md5" "$W/run.md5" && same=$((same + 1))
	done
	sleep 1   # the last snapshot of the last run may still be replaying
	echo ""
	echo "$prog: $RUNS runs (output as without the library in $same), window $DELTA us of task-clock, $MECH"
	"$PY" "$ROOT/bench/fixed_time.py" "$W/fc.bin" "$W/prog" "$W/cg.out" "$FAULT_NS"
done
