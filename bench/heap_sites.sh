#!/bin/bash
# bench/heap_sites.sh — what naming heap blocks by allocation site costs
# the program: libvprof-heap.so's interposers and preload/heap.c's table
# under `vprof run --cachesim`, against the same run without them
# (VPROF_HEAP=off), on an allocation loop: SMALL pairs of malloc(48)/free
# (kept by no table: the cost every allocation pays), BIG pairs of
# malloc(64 KiB)/free among 1000 live 64 KiB blocks (kept: a table of 1000
# entries, inserted and removed), and 16 threads each making THREADS
# pairs of 64-88 KiB at once (the table's lock contended, on 2 CPUs). CPU time of each, interleaved, N rounds
# (default 7): the median per-round ratio with-sites / without [range],
# and the difference per pair in ns.
#
#   bench/heap_sites.sh [--rounds N]
#
# Results: BENCHMARKS.md, "Cache simulation".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=7
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "heap_sites.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-heap.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so build/libvprof-heap.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$ROOT/build/libvprof-heap.so" "$W/" || exit 1
export VPROF_LIB=$W/libvprof.so
SMALL=20000000 BIG=2000000 THREADS=200000
gcc -O2 -pthread -o "$W/alloc" "$ROOT/tests/fixtures/alloc_loop.c" || exit 1

echo "== bench/heap_sites.sh: allocation sites' cost under --cachesim, $ROUNDS rounds"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
cpu() {   # CPU seconds of the profiled program: HEAP MODE N
	rm -rf "$W/db"
	VPROF_HEAP=$1 /usr/bin/time -f '%U %S' "$W/vprof" run --db "$W/db" --cachesim -- "$W/alloc" "$2" "$3" \
		2>&1 >/dev/null | tail -1 | awk '{ print $1 + $2 }'
}
for r in $(seq 1 "$ROUNDS"); do
	echo "$(cpu on s $SMALL) $(cpu off s $SMALL) $(cpu on b $BIG) $(cpu off b $BIG) $(cpu on t $THREADS) $(cpu off t $THREADS)"
done >"$W/t"
python3 - "$W/t" "$SMALL" "$BIG" "$THREADS" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
for name, a, b, n in (("malloc(48)/free, not kept", 0, 1, int(sys.argv[2])),
                      ("malloc(64K)/free among 1000 kept", 2, 3, int(sys.argv[3])),
                      ("16 threads, malloc(64K+)/free", 4, 5, 16 * int(sys.argv[4]))):
    ratios = [r[a] / r[b] for r in rows if r[b] > 0]
    ns = [1e9 * (r[a] - r[b]) / n for r in rows]
    print("%-34s with sites / without: %.3fx [%.3f-%.3f]; %+.1f ns a pair (median; without %.1f ns)" % (
        name, statistics.median(ratios), min(ratios), max(ratios), statistics.median(ns),
        1e9 * statistics.median(r[b] for r in rows) / n))
PYEOF
