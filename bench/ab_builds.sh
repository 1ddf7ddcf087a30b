#!/bin/bash
# bench/ab_builds.sh — what one change costs a profiled program: two builds
# of vprof, A and B, on the same workload, interleaved.
#
#   bench/ab_builds.sh VPROF_A VPROF_B [--freq HZ] [--event E] [--rounds N] [--with OPT]...
#
# --with adds an option to both runs (--with --stacks, --with --values).
#
# VPROF_A and VPROF_B are `vprof` binaries (each finds its own
# libvprof.so beside it), e.g. HEAD's build/vprof and an older commit's,
# built in a git worktree:
#
#   git worktree add /tmp/old REV && make -C /tmp/old
#   bench/ab_builds.sh /tmp/old/build/vprof build/vprof --freq 4000
#
# Each round runs  base A base B base  with A and B swapped every other
# round (a fixed order showed a 2% "cost" that swapping removed), and a
# variant's ratio is its run's CPU over the mean of its two neighbouring
# unprofiled runs. The CPU is the workload's own (bench/workloads/spin.c
# prints getrusage RUSAGE_SELF at the end of main: what sampling adds to,
# and steady when other jobs share the CPUs), not vprof run's merge. The
# script prints each round, then the medians of A's and B's ratios, the
# median of the per-round B/A, and in how many rounds B cost more.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/ab_builds.sh VPROF_A VPROF_B [--freq HZ] [--event E] [--rounds N] [--with OPT]..." >&2; exit 2; }
A=$1 B=$2; shift 2
freq=4000 event=task-clock rounds=12 with=()
while [ $# -gt 0 ]; do
	case "$1" in
	--freq) freq=$2; shift 2 ;;
	--event) event=$2; shift 2 ;;
	--rounds) rounds=$2; shift 2 ;;
	--with) with+=("$2"); shift 2 ;;
	*) echo "bench/ab_builds.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
for v in "$A" "$B"; do
	[ -x "$v" ] || { echo "bench/ab_builds.sh: $v is not an executable vprof" >&2; exit 2; }
done
tmp=$(mktemp -d /tmp/vprof-ab.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
cc -O2 -o "$tmp/spin" "$TOP/bench/workloads/spin.c" -lpthread || exit 1

cpu() { sed -n 's/^spin cpu=\([0-9.]*\).*/\1/p'; }
base() { "$tmp/spin" | cpu; }
prof() {
	rm -rf "$tmp/db"
	"$1" run --db "$tmp/db" --event "$event" --freq "$freq" ${with[@]+"${with[@]}"} -- "$tmp/spin" 2>/dev/null | cpu
}
ratio() { awk -v a="$1" -v x="$2" -v b="$3" 'BEGIN { printf "%.4f", x / ((a + b) / 2) }'; }

echo "# bench/ab_builds.sh: A=$A B=$B, --event $event --freq $freq ${with[*]+${with[*]}}, $rounds rounds"
echo "# load at start: $(cut -d' ' -f1-3 /proc/loadavg)"
for r in $(seq 1 "$rounds"); do
	if [ $((r % 2)) = 1 ]; then first=$A second=$B; else first=$B second=$A; fi
	b0=$(base); x=$(prof "$first"); b1=$(base); y=$(prof "$second"); b2=$(base)
	rx=$(ratio "$b0" "$x" "$b1"); ry=$(ratio "$b1" "$y" "$b2")
	if [ $((r % 2)) = 1 ]; then echo "round $r A $rx B $ry"; else echo "round $r A $ry B $rx"; fi
done | tee "$tmp/rounds"
echo "# load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
sort_med() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ma=$(awk '{ print $4 }' "$tmp/rounds" | sort_med)
mb=$(awk '{ print $6 }' "$tmp/rounds" | sort_med)
mr=$(awk '{ print $6 / $4 }' "$tmp/rounds" | sort_med)
more=$(awk '$6 > $4' "$tmp/rounds" | wc -l)
printf "median slowdown: A %+.1f%%, B %+.1f%%; per-round B/A median %.4f; B cost more in %d of %d rounds\n" \
	"$(awk -v m="$ma" 'BEGIN { print (m - 1) * 100 }')" "$(awk -v m="$mb" 'BEGIN { print (m - 1) * 100 }')" \
	"$mr" "$more" "$rounds"
