#!/bin/bash
# bench/branches.sh — what `vprof run --branches` costs at its defaults, on
# real Debian programs (tests/fixtures/real_workloads.sh: python3.11,
# sqlite3, gzip -6, xz -6), against the program alone.
#
#   bench/branches.sh [--pairs N] [--only NAMES] [-- EXTRA RUN OPTIONS]
#
# Per program, N interleaved pairs (default 9; the order swapped every
# pair) of the program alone and under `vprof run --branches` (merge
# included), and reads:
#   cpu      the profiled command's CPU (vprof run, the program and the
#            merge: getrusage of the children) over the plain run's of the
#            same pair: median [IQR] of the pairs
#   wall     the same for wall-clock time
#   handler  vprof's own time in the handler by its own count (vprof report
#            --json cost_ns over cpu_ns): median
#   windows  interpretation windows a run (the records behind a profile)
#   same     whether every profiled run printed what the plain one did
# Results: BENCHMARKS.md, "Branch records".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PAIRS=9
ONLY=""
EXTRA=()
while [ $# -gt 0 ]; do
	case "$1" in
	--pairs) PAIRS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	--) shift; EXTRA=("$@"); break ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "branches.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-branches.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3 DIR=$W
. "$ROOT/tests/fixtures/real_workloads.sh"
[ -n "$ONLY" ] && REAL_NAMES=${ONLY//,/ }

echo "== bench/branches.sh --pairs $PAIRS${EXTRA[*]:+ -- ${EXTRA[*]}}: the cost of vprof run --branches"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

# timed OUT CMD...: run CMD (stdin $REAL_IN, stdout to OUT), print "cpu wall"
# of it and its children.
timed() {
	"$PY" - "$REAL_IN" "$@" <<'PYEOF'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[3:], stdin=open(sys.argv[1], "rb"), stdout=open(sys.argv[2], "wb"), stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f %.4f" % (r.ru_utime + r.ru_stime, time.monotonic() - t))
PYEOF
}

printf '\n%-8s %-24s %-24s %8s %8s %5s\n' program cpu wall handler windows same
for name in $REAL_NAMES; do
	real_cmd "$name"
	: >"$W/r"
	same=yes
	for i in $(seq 1 "$PAIRS"); do
		rm -rf "$W/db"
		if [ $((i % 2)) = 1 ]; then
			base=$(timed "$W/plain.out" "${REAL_CMD[@]}")
			prof=$(timed "$W/prof.out" "$W/vprof" run --db "$W/db" --branches "${EXTRA[@]}" -- "${REAL_CMD[@]}")
		else
			prof=$(timed "$W/prof.out" "$W/vprof" run --db "$W/db" --branches "${EXTRA[@]}" -- "${REAL_CMD[@]}")
			base=$(timed "$W/plain.out" "${REAL_CMD[@]}")
		fi
		cmp -s "$W/plain.out" "$W/prof.out" || same=no
		"$W/vprof" report --db "$W/db" --json >"$W/rep.json" 2>/dev/null
		"$PY" - "$W/rep.json" "$base" "$prof" <<'PYEOF' >>"$W/r"
import json, sys
rep = json.loads(open(sys.argv[1]).read().splitlines()[0])
bc, bw = map(float, sys.argv[2].split()); pc, pw = map(float, sys.argv[3].split())
print("%.5f %.5f %.6f %d" % (pc / bc, pw / bw, rep.get("cost_ns", 0) / max(rep.get("cpu_ns", 1), 1),
      rep.get("interp_runs", 0)))
PYEOF
	done
	"$PY" - "$W/r" "$name" "$same" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
def q(a, f):
    a = sorted(a); h = (len(a) - 1) * f; lo = int(h)
    return a[lo] + (h - lo) * (a[min(lo + 1, len(a) - 1)] - a[lo])
cols = list(zip(*rows))
def ratio(c):
    return "%+5.1f%% [%+.1f..%+.1f]" % ((q(c, .5) - 1) * 100, (q(c, .25) - 1) * 100, (q(c, .75) - 1) * 100)
print("%-8s %-24s %-24s %7.2f%% %8.0f %5s" % (sys.argv[2], ratio(cols[0]), ratio(cols[1]),
      100 * q(cols[2], .5), q(cols[3], .5), sys.argv[3]))
PYEOF
done
echo ""
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) at end"
