#!/bin/bash
# bench/cachesim.sh — vprof's cache simulation (`vprof run --cachesim`,
# `vprof memory`) against valgrind's cachegrind, with the same geometry
# given to both (D1=32K:8:64, LL=8M:16:64), on three programs:
# tests/fixtures/cache_planted.c (gcc -O1: D1 hits, LL hits, misses of
# both), bzip2 1.0.8 compressing seeded words and Lua 5.4.4 running
# bench/programs/bench.lua (both gcc -O2 -g, from bench/programs).
#
#   bench/cachesim.sh [--rounds N] [--runs N] [--only planted,bzip2,lua,windows]
#
# 1. Accuracy: cachegrind and vprof (at its defaults) on the same input:
#    the whole run's mix of procedures is the input's, so a shorter input
#    for cachegrind would be another mix. Per procedure with 5% or more of
#    cachegrind's data references, and for the whole run, the D1 and LL
#    miss rates (bench/cachesim_compare.py), for each of --runs vprof runs
#    (default 3: the windows are a sample, and the runs show its spread).
#    Targets: whole run within 0.5 points, procedures within 3.
# 2. Cost: CPU time (getrusage of the children) of the program alone and
#    under `vprof run --cachesim --no-merge`, interleaved, N rounds (default
#    5), median of the per-round ratios; cachegrind's ratio from its one
#    run of section 1 against the native rounds' mean. Target: vprof <= 1.5x.
# 3. Windows on Debian's programs (tests/fixtures/real_workloads.sh:
#    python3, sqlite3, gzip, xz), `vprof run --cachesim` at its defaults:
#    how many, their median length, and what ended them (vprof memory's
#    header). Target: a median of 10,000 instructions or more.
# Results: BENCHMARKS.md, "Cache simulation".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
RUNS=3
ONLY="planted bzip2 lua windows"
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	--runs) RUNS=$2; shift ;;
	--only) ONLY=${2//,/ }; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cachesim.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-cachesim.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so build/libvprof-heap.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$ROOT/build/libvprof-heap.so" "$W/" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3
P=$ROOT/bench/programs
GEOM=D1=32K:8:64,LL=8M:16:64
CG=(valgrind --tool=cachegrind --cache-sim=yes --D1=32768,8,64 --LL=8388608,16,64 --I1=32768,8,64)

echo "== bench/cachesim.sh: vprof --cachesim against cachegrind, geometry $GEOM"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)$(git -C "$ROOT" diff --quiet HEAD -- upcall preload spool interp heap reports 2>/dev/null || echo ' (+ uncommitted changes)')"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

# cpu CMD...: the CPU seconds (user + system) of CMD and its children,
# stdin from $IN, stdout discarded.
cpu() {
	"$PY" - "$IN" "$@" <<'PYEOF'
import resource, subprocess, sys
r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(sys.argv[1], "rb") as f:
    subprocess.run(sys.argv[2:], stdin=f, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f" % (r1.ru_utime - r0.ru_utime + r1.ru_stime - r0.ru_stime))
PYEOF
}

for prog in $ONLY; do
	LONG_IN=/dev/null
	case $prog in
	planted)
		gcc -O1 -g -o "$W/prog" "$ROOT/tests/fixtures/cache_planted.c" || exit 1
		LONG=("$W/prog" 60) ;;
	bzip2)
		gcc -O2 -g -D_FILE_OFFSET_BITS=64 -w -o "$W/prog" "$P"/bzip2-1.0.8/*.c || exit 1
		DIR=$W
		. "$ROOT/tests/fixtures/real_workloads.sh"
		head -c 30000000 "$W/words.txt" >"$W/long.txt"
		rm -f "$W/words.txt" "$W/words4.txt"
		LONG=("$W/prog" -c); LONG_IN=$W/long.txt ;;
	lua)
		gcc -O2 -g -DLUA_USE_POSIX -o "$W/prog" "$P"/lua-5.4.4/*.c -lm || exit 1
		LONG=("$W/prog" "$P/bench.lua" 12) ;;
	windows)
		echo ""
		echo "windows on Debian's programs (vprof run --cachesim at its defaults):"
		DIR=$W
		. "$ROOT/tests/fixtures/real_workloads.sh"
		for name in $REAL_NAMES; do
			real_cmd "$name"
			rm -rf "$W/db"
			"$W/vprof" run --db "$W/db" --cachesim -- "${REAL_CMD[@]}" <"$REAL_IN" >/dev/null 2>"$W/run.err"
			printf '%-8s ' "$name"
			"$W/vprof" memory --db "$W/db" | sed -n '2,3p' | tr '\n' ' '
			echo ""
		done
		continue ;;
	*) echo "unknown program $prog"; continue ;;
	esac
	echo ""
	echo "$prog: cachegrind and vprof on ${LONG[*]##*/} <${LONG_IN##*/}"
	IN=$LONG_IN
	cg_cpu=$(cpu "${CG[@]}" --cachegrind-out-file="$W/cg.out" "${LONG[@]}")
	for k in $(seq 1 "$RUNS"); do
		rm -rf "$W/db"
		"$W/vprof" run --db "$W/db" --cache "$GEOM" -- "${LONG[@]}" <"$LONG_IN" >/dev/null 2>"$W/run.err"
		echo "vprof run $k of $RUNS:"
		"$W/vprof" memory --db "$W/db" -n 6 | sed -n '1,3p'
		"$W/vprof" memory --db "$W/db" --json -n 0 >"$W/mem.json"
		"$PY" "$ROOT/bench/cachesim_compare.py" "$W/cg.out" "$W/mem.json" | sed '$d'
	done
	for r in $(seq 1 "$ROUNDS"); do
		a=$(cpu "${LONG[@]}")
		b=$(cpu "$W/vprof" run --no-merge --db "$W/dbc" --cachesim -- "${LONG[@]}")
		rm -rf "$W/dbc"
		echo "$a $b"
	done >"$W/cost"
	awk -v cgc="$cg_cpu" '
	{ r[NR] = $2 / $1; n = NR; na += $1 }
	END {
		for (i = 2; i <= n; i++) { t = r[i]; for (j = i - 1; j >= 1 && r[j] > t; j--) r[j+1] = r[j]; r[j+1] = t }
		printf "cost: native %.2f s CPU (mean of %d), vprof --cachesim %.3fx (median; %.3f-%.3f), cachegrind %.1fx (%.2f s)\n",
			na / n, n, r[int((n + 1) / 2)], r[1], r[n], cgc / (na / n), cgc
	}' "$W/cost"
done
