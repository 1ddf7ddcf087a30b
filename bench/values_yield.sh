#!/bin/bash
# bench/values_yield.sh — what each value-sampling setting yields and costs
# on real Debian programs, a few seconds each (tests/fixtures/real_workloads.sh:
# python3.11, sqlite3, gzip -6, xz -6).
#
#   bench/values_yield.sh [--rounds N] [--only NAMES] [SETTING...]
#
# A SETTING is a quoted list of `vprof run` options with their values, e.g.
# "--interp-every 1"; "defaults" is none. Default settings: defaults, --interp-every 1,
# --interp-len 8, --interp-reach 32, --interp-reach 0.
#
# Per program and setting, N rounds (default 3), each running the program
# unprofiled, then under `vprof run --values SETTING`, in alternating
# order, and reading:
#   cost    the profiled run's CPU (`vprof run --no-merge`: the program's
#           and its children's, getrusage) over the unprofiled run's of the
#           same round: median of rounds
#   wall    wall-clock time of the profiled run and of the `vprof merge`
#           after it, over the unprofiled run's
#   windows interpretation runs per CPU-second of the program
#   insns   instructions interpreted per window
#   covered the share of the run's PC samples with an operand hotlist of
#           20 or more value samples at or just before their PC (vprof
#           invariants' "value samples enough to rank ... lie behind")
#   rows    rows vprof invariants shows at its defaults
# Results: BENCHMARKS.md, "Value sampling: what the defaults yield".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=3
ONLY=""
SETTINGS=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	--only) ONLY=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	--*" "*|defaults) SETTINGS+=("$1") ;;
	*) echo "values_yield.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
[ ${#SETTINGS[@]} -gt 0 ] || SETTINGS=(defaults "--interp-every 1" "--interp-len 8" "--interp-reach 32" "--interp-reach 0")

W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-yield.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3 DIR=$W
. "$ROOT/tests/fixtures/real_workloads.sh"
[ -n "$ONLY" ] && REAL_NAMES=${ONLY//,/ }

echo "== bench/values_yield.sh --rounds $ROUNDS: value sampling's yield and cost on real programs"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

# timed OUT CMD...: run CMD (stdin $REAL_IN, stdout discarded), print
# "cpu wall" of it and its children.
timed() {
	"$PY" - "$REAL_IN" "$@" <<'PYEOF'
import resource, subprocess, sys, time
t = time.monotonic()
subprocess.run(sys.argv[2:], stdin=open(sys.argv[1], "rb"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.4f %.4f" % (r.ru_utime + r.ru_stime, time.monotonic() - t))
PYEOF
}

printf '\n%-8s %-22s %7s %7s %8s %6s %8s %5s\n' program setting cost wall windows/s insns covered rows
for name in $REAL_NAMES; do
	real_cmd "$name"
	for set in "${SETTINGS[@]}"; do
		opts=(); [ "$set" = defaults ] || read -r -a opts <<<"$set"
		: >"$W/r"
		for r in $(seq 1 "$ROUNDS"); do
			rm -rf "$W/db"
			if [ $((r % 2)) = 1 ]; then
				base=$(timed "${REAL_CMD[@]}")
				prof=$(timed "$W/vprof" run --no-merge --db "$W/db" --values "${opts[@]}" -- "${REAL_CMD[@]}")
			else
				prof=$(timed "$W/vprof" run --no-merge --db "$W/db" --values "${opts[@]}" -- "${REAL_CMD[@]}")
				base=$(timed "${REAL_CMD[@]}")
			fi
			merge=$(REAL_IN=/dev/null timed "$W/vprof" merge --db "$W/db")
			"$W/vprof" report --db "$W/db" --json >"$W/rep.json" 2>/dev/null
			"$W/vprof" invariants --db "$W/db" --json >"$W/inv.json" 2>/dev/null
			"$PY" - "$W/rep.json" "$W/inv.json" "$base" "$prof" "$merge" <<'PYEOF' >>"$W/r"
import json, sys
rep = json.loads(open(sys.argv[1]).read().splitlines()[0])
inv = [json.loads(l) for l in open(sys.argv[2]) if l.strip()]
bc, bw = map(float, sys.argv[3].split()); pc, pw = map(float, sys.argv[4].split())
mc, mw = map(float, sys.argv[5].split())
runs = rep.get("interp_runs", 0)
print("%.4f %.4f %.1f %.1f %.4f %d" % (pc / bc, (pw + mw) / bw, runs / max(bc, 1e-9),
      rep.get("interp_insns", 0) / max(runs, 1), inv[0].get("covered", 0), len(inv) - 1))
PYEOF
		done
		"$PY" - "$W/r" "$name" "$set" <<'PYEOF'
import statistics, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1]) if l.strip()]
if not rows:
    print("%-8s %-22s (no data)" % (sys.argv[2], sys.argv[3])); sys.exit()
m = [statistics.median(c) for c in zip(*rows)]
print("%-8s %-22s %+6.1f%% %+6.1f%% %8.0f %6.0f %7.0f%% %5.0f" % (sys.argv[2], sys.argv[3][:22],
      (m[0] - 1) * 100, (m[1] - 1) * 100, m[2], m[3], 100 * m[4], m[5]))
PYEOF
	done
done
