#!/bin/bash
# bench/hazards.sh — do the hazards `vprof hazards` reports cost time on
# this CPU? tests/fixtures/hazards.c's planted loops against the same
# loops fixed: store forwarding that fails (a 2-byte store under an 8-byte
# load) against an 8-byte store; 4K aliasing (b 4096 bytes after a)
# against b 4096 + 256 bytes after a. CPU time of each, interleaved, N
# rounds (default 7), median of the per-round ratios planted/fixed [range];
# and what `vprof run --hazards` finds in each (pairs, and the share of
# the planted load's executions).
#
#   bench/hazards.sh [--rounds N] [--n ITERATIONS]
#
# Results: BENCHMARKS.md, "Memory-order hazards".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=7
N=300000000
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	--n) N=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "hazards.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-hazards.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
gcc -O2 -g -o "$W/hz" "$ROOT/tests/fixtures/hazards.c" || exit 1

echo "== bench/hazards.sh: planted hazards against their fixes, $N iterations, $ROUNDS rounds"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() { /usr/bin/time -f %U "$W/hz" "$1" "$N" 2>&1 >/dev/null | tail -1; }
for r in $(seq 1 "$ROUNDS"); do
	echo "$(cpu forward) $(cpu forward-fixed) $(cpu alias) $(cpu alias-fixed)"
done >"$W/t"
awk '
function med(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } return a[int((n + 1) / 2)] }
{ f[NR] = $1 / $2; a[NR] = $3 / $4; fp += $1; ff += $2; ap += $3; af += $4; n = NR }
END {
	printf "store forwarding: planted %.2f s, fixed %.2f s (means): planted/fixed %.2fx median", fp / n, ff / n, med(f, n)
	printf " [%.2f-%.2f]\n", f[1], f[n]
	printf "4K aliasing:      planted %.2f s, fixed %.2f s (means): planted/fixed %.2fx median", ap / n, af / n, med(a, n)
	printf " [%.2f-%.2f]\n", a[1], a[n]
}' "$W/t"
for m in all clean dependent; do
	rm -rf "$W/db"
	"$W/vprof" run --db "$W/db" --hazards -- "$W/hz" "$m" 60000000 >/dev/null 2>&1
	echo ""
	echo "vprof run --hazards -- hazards $m:"
	"$W/vprof" hazards --db "$W/db" -n 4 | sed -e '2,3d' -e "s|$ROOT/||g"
done
