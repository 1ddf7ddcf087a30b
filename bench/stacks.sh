#!/bin/bash
# bench/stacks.sh — what a call stack costs per sample (vprof run --stacks).
#
#   bench/stacks.sh [--rounds N] [--units N] [--freq HZ] [--depths "10 30"]
#
# Workload: tests/fixtures/calltree.c -r D N, built -O1
# -fno-omit-frame-pointer (so every method can walk it): N units of ~0.13
# ms of CPU, each called D frames deep (rec()), so a sample's stack is D +
# 4 frames (leaf, D x rec, main, libc's start, _start). Variants, each run
# with `--event task-clock --freq HZ` (default 4000) and the fixture's own
# CPU time (CLOCK_PROCESS_CPUTIME_ID at exit: the handler and the kernel's
# work for the samples are charged to it):
#
#   base      no profiling
#   ring      vprof, PC only, ring mode (the default way)
#   sig       vprof, PC only, a signal per sample (VPROF_RING=0): what
#             --stacks runs on
#   cfi       vprof --stacks --stack-depth 64: vprof's own CFI unwinder
#             from the ucontext (preload/unwind.c; the default)
#   unwind    ... VPROF_STACK_METHOD=unwind: libunwind's unw_backtrace
#             through the signal frame (the default before cfi)
#   cursor    ... VPROF_STACK_METHOD=cursor: libunwind's cursor from the
#             ucontext (unw_init_local2 + unw_step)
#   fp        vprof --stacks --stack-depth 64, VPROF_STACK_METHOD=fp
#   perf      perf record -e task-clock -F HZ (the kernel writes the PC)
#   perf-fp   ... --call-graph fp (PERF_SAMPLE_CALLCHAIN: the kernel walks
#             frame pointers at each sample: method (c) of ring mode)
#   perf-dwarf ... --call-graph dwarf (PERF_SAMPLE_REGS_USER + STACK_USER,
#             8 KiB of stack copied per sample, unwound later)
#
# Every round runs the variants of a depth in shuffled order, each between
# two base runs; a variant's cost per sample is (its CPU - the mean of its
# two neighbours) / its samples (vprof's summary; perf's --stats). Medians
# over rounds; ratios against sig (what a stack adds to a signalled
# sample). Prints a markdown table for BENCHMARKS.md. Then
# bench/stacks_micro.c times the unwind alone inside a signal handler
# (no timer interrupt around it), per method, 3 runs per depth.
# --micro-only skips the whole-sample part.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5 UNITS=12000 FREQ=4000 DEPTHS="10 30" MACRO=1
while [ $# -gt 0 ]; do
	case $1 in
	--micro-only) MACRO=0 ;;
	--rounds) ROUNDS=$2; shift ;;
	--units) UNITS=$2; shift ;;
	--freq) FREQ=$2; shift ;;
	--depths) DEPTHS=$2; shift ;;
	*) echo "usage: bench/stacks.sh [--rounds N] [--units N] [--freq HZ] [--depths LIST]" >&2; exit 2 ;;
	esac
	shift
done
VPROF=$TOP/build/vprof
PY=/usr/bin/python3
W=$(mktemp -d /tmp/vprof-bstk.XXXXXX)
trap 'rm -rf "$W"' EXIT
cc -O1 -g -fno-omit-frame-pointer -o "$W/ct" "$TOP/tests/fixtures/calltree.c" || exit 1
have_perf=1
perf record -e task-clock -F "$FREQ" -o "$W/probe.data" -- true >/dev/null 2>&1 || have_perf=0

cpu() { sed -n 's/^cpu //p' "$W/truth"; }
# run VARIANT D: prints "cpu_ns samples"
run() {
	local v=$1 d=$2 s=0
	rm -rf "$W/db" "$W/p.data"
	case $v in
	base) CALLTREE_TRUTH=$W/truth "$W/ct" -r "$d" "$UNITS" >/dev/null ;;
	ring|sig|cfi|unwind|cursor|fp)
		local env=() opt=()
		[ "$v" = sig ] && env=(VPROF_RING=0)
		[ "$v" = cfi ] && { opt=(--stacks --stack-depth 64); env=(VPROF_STACK_METHOD=cfi); }
		[ "$v" = unwind ] && { opt=(--stacks --stack-depth 64); env=(VPROF_STACK_METHOD=unwind); }
		[ "$v" = fp ] && { opt=(--stacks --stack-depth 64); env=(VPROF_STACK_METHOD=fp); }
		[ "$v" = cursor ] && { opt=(--stacks --stack-depth 64); env=(VPROF_STACK_METHOD=cursor); }
		env "${env[@]}" CALLTREE_TRUTH="$W/truth" "$VPROF" run --db "$W/db" --event task-clock \
			--freq "$FREQ" "${opt[@]}" -- "$W/ct" -r "$d" "$UNITS" >/dev/null 2>"$W/err"
		s=$(grep -o '^vprof: [0-9]* samples' "$W/err" | grep -o '[0-9]*') ;;
	perf*)
		local g=()
		[ "$v" = perf-fp ] && g=(--call-graph fp)
		[ "$v" = perf-dwarf ] && g=(--call-graph dwarf)
		CALLTREE_TRUTH=$W/truth perf record -q -e task-clock -F "$FREQ" "${g[@]}" -o "$W/p.data" \
			-- "$W/ct" -r "$d" "$UNITS" >/dev/null 2>&1
		s=$(perf report -i "$W/p.data" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}') ;;
	esac
	echo "$(cpu) ${s:-0}"
}

cc -O2 -fno-omit-frame-pointer -I"$TOP" -o "$W/micro" "$TOP/bench/stacks_micro.c" -lunwind || exit 1
micro() {
	echo
	echo "unwind alone, in a SIGPROF handler raised D frames deep (bench/stacks_micro.c):"
	for r in 1 2 3; do
		for d in $DEPTHS; do "$W/micro" "$d" 20000; done
	done
}
[ $MACRO = 1 ] || { micro; exit 0; }
variants="ring sig cfi unwind cursor fp"
[ $have_perf = 1 ] && variants="$variants perf perf-fp perf-dwarf"
: >"$W/results"
for r in $(seq 1 "$ROUNDS"); do
	for d in $DEPTHS; do
		order=$(printf '%s\n' $variants | shuf)
		prev=$(run base "$d")
		for v in $order; do
			cur=$(run "$v" "$d")
			next=$(run base "$d")
			echo "$d $v $r ${prev%% *} ${next%% *} $cur" >>"$W/results"
			prev=$next
		done
	done
	echo "round $r done" >&2
done
"$PY" - "$W/results" "$FREQ" "$UNITS" "$ROUNDS" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
cost = {}
for d, v, r, b0, b1, c, s in rows:
    s = int(s)
    if s <= 0:
        continue
    base = (int(b0) + int(b1)) / 2
    cost.setdefault((int(d), v), []).append(((int(c) - base) / s / 1000.0, (int(c) / base - 1) * 100, s))
print("freq %s Hz, %s units, %s rounds; cost = (CPU - base) / samples, medians" % tuple(sys.argv[2:5]))
print()
print("| depth | variant | us per sample | x sig | slowdown | samples |")
print("|---:|---|---:|---:|---:|---:|")
for d in sorted({k[0] for k in cost}):
    sig = st.median(x[0] for x in cost.get((d, "sig"), [(float("nan"), 0, 0)]))
    for v in ["ring", "sig", "cfi", "unwind", "cursor", "fp", "perf", "perf-fp", "perf-dwarf"]:
        if (d, v) not in cost:
            continue
        xs = cost[(d, v)]
        us = st.median(x[0] for x in xs)
        print("| %d | %s | %.1f | %.2f | %+.1f%% | %d |" % (d, v, us, us / sig if sig else float("nan"),
              st.median(x[1] for x in xs), st.median(x[2] for x in xs)))
EOF
micro
