#!/bin/bash
# bench/handler_ab.sh — what a change to the value-sampling path costs on
# real programs: vprof's own time in the handler per sample, two builds
# interleaved on the same Debian programs.
#
#   bench/handler_ab.sh VPROF_A VPROF_B [--rounds N] [--only LIST] [--with OPT]...
#
# VPROF_A and VPROF_B are `vprof` binaries (each finds its libvprof.so
# beside it), e.g. a baseline built in a worktree and this tree's:
#
#   git worktree add /tmp/base REV && make -C /tmp/base
#   bench/handler_ab.sh /tmp/base/build/vprof build/vprof --rounds 7
#
# Programs: tests/fixtures/real_workloads.sh's python3, sqlite3, gzip and
# xz (a few seconds each; --only a comma-separated subset), each run with
# `vprof run --values` at its defaults (--with adds options to both). A
# round runs A then B, swapped every other round. Per run: the handler's
# own time per sample (the spools' TSC count, `vprof report --json`
# cost_ns over samples: what vprof spent in the program's threads, its
# value samples included) and the program's CPU (getrusage of the
# children, vprof run's merge included). Prints each run, then per
# program the medians of A and B, the median of the per-round ratios B/A
# with its IQR, and in how many rounds B was the cheaper.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/handler_ab.sh VPROF_A VPROF_B [--rounds N] [--only LIST] [--with OPT]..." >&2; exit 2; }
A=$1 B=$2; shift 2
ROUNDS=7 ONLY="python3 sqlite3 gzip xz" with=()
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--only) ONLY=${2//,/ }; shift 2 ;;
	--with) with+=("$2"); shift 2 ;;
	*) echo "bench/handler_ab.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
for v in "$A" "$B"; do
	[ -x "$v" ] || { echo "bench/handler_ab.sh: $v is not an executable vprof" >&2; exit 2; }
done
W=$(mktemp -d /tmp/vprof-hab.XXXXXX)
trap 'rm -rf "$W"' EXIT
PY=/usr/bin/python3
DIR=$W
. "$TOP/tests/fixtures/real_workloads.sh"

echo "== bench/handler_ab.sh: vprof's handler time per sample under --values, A/B"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
echo "A:       $A"
echo "B:       $B"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg)"
# one LABEL VPROF: a line "LABEL us_per_sample cpu_s samples" into $W/runs
one() {
	rm -rf "$W/db"
	"$PY" - "$1" "$REAL_IN" "$2" run --db "$W/db" --values ${with[@]+"${with[@]}"} -- "${REAL_CMD[@]}" <<'EOF' >>"$W/runs"
import json, resource, subprocess, sys
lab, stdin, cmd = sys.argv[1], sys.argv[2], sys.argv[3:]
subprocess.run(cmd, stdin=open(stdin, "rb"), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
rep = subprocess.run([cmd[0], "report", "--db", cmd[3], "--json"], capture_output=True, text=True).stdout
d = json.loads(rep) if rep.strip() else {}
n = max(1, d.get("samples", 0))
print(lab, "%.2f %.3f %d" % (d.get("cost_ns", 0) / 1e3 / n, r.ru_utime + r.ru_stime, n))
EOF
}
: >"$W/runs"
for prog in $ONLY; do
	real_cmd "$prog" || continue
	for i in $(seq 1 "$ROUNDS"); do
		if [ $((i % 2)) = 1 ]; then one "$prog:A" "$A"; one "$prog:B" "$B"
		else one "$prog:B" "$B"; one "$prog:A" "$A"; fi
	done
done
cat "$W/runs"
"$PY" - "$W/runs" $ONLY <<'EOF'
import statistics as st, sys
rows = [l.split() for l in open(sys.argv[1])]
def q(a, f):
    a = sorted(a); h = (len(a) - 1) * f; lo = int(h)
    return a[lo] + (h - lo) * (a[min(lo + 1, len(a) - 1)] - a[lo])
print("%-8s %22s %22s %28s %10s" % ("program", "A us/sample (CPU s)", "B us/sample (CPU s)",
                                    "B/A per round [IQR]", "B cheaper"))
for prog in sys.argv[2:]:
    a = [r for r in rows if r[0] == prog + ":A"]
    b = [r for r in rows if r[0] == prog + ":B"]
    if not a or not b:
        continue
    ratio = [float(y[1]) / float(x[1]) for x, y in zip(a, b) if float(x[1]) > 0]
    print("%-8s %12.1f (%6.2f) %14.1f (%6.2f) %10.3f [%.3f..%.3f] %7d of %d" % (
        prog, st.median(float(x[1]) for x in a), st.median(float(x[2]) for x in a),
        st.median(float(x[1]) for x in b), st.median(float(x[2]) for x in b),
        q(ratio, .5), q(ratio, .25), q(ratio, .75), sum(r < 1 for r in ratio), len(ratio)))
EOF
