#!/bin/bash
# bench/fixed_cost.sh — what a run costs apart from its samples: `vprof run
# --values -- true` (the library's start-up in the program, vprof run's
# own start, the merge of a spool with nothing in it), for two built
# trees, their runs interleaved.
#
#   bench/fixed_cost.sh TREE_A TREE_B [--rounds N]
#
# TREE_A and TREE_B are checkouts of vprof, each built (make), e.g.
#
#   git worktree add /tmp/base REV && make -C /tmp/base
#   bench/fixed_cost.sh /tmp/base . --rounds 10
#
# Each round runs A and B once each, in alternating order; a run's figures
# are the CPU (user + system) and minor page faults of vprof run and the
# program together (getrusage of the children). Prints each run, then per
# tree the median CPU with its range, and the faults' range. On xz -6 of
# 4 MB (bench/values.sh section 7, ~2.6 s of CPU here) each 26 ms is one
# point of the whole run's cost.
set -u
[ $# -ge 2 ] || { echo "usage: bench/fixed_cost.sh TREE_A TREE_B [--rounds N]" >&2; exit 2; }
TA=$(cd "$1" && pwd) TB=$(cd "$2" && pwd) || exit 2
shift 2
ROUNDS=10
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	*) echo "bench/fixed_cost.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
for t in "$TA" "$TB"; do
	[ -x "$t/build/vprof" ] || { echo "bench/fixed_cost.sh: $t/build/vprof is not built" >&2; exit 2; }
done
W=$(mktemp -d /tmp/vprof-fixed.XXXXXX)
trap 'rm -rf "$W"' EXIT
echo "== the fixed cost of vprof run --values -- true: A $TA ($(git -C "$TA" rev-parse --short HEAD 2>/dev/null)), B $TB ($(git -C "$TB" rev-parse --short HEAD 2>/dev/null))"
echo "date: $(date -u '+%Y-%m-%d %H:%M UTC'); load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in $(seq 1 "$ROUNDS"); do
	for v in $( [ $((i % 2)) = 1 ] && echo "A B" || echo "B A"); do
		t=$([ "$v" = A ] && echo "$TA" || echo "$TB")
		rm -rf "$W/db"
		/usr/bin/python3 - "$v" "$i" "$t/build/vprof" "$W/db" <<'PYEOF' | tee -a "$W/runs"
import resource, subprocess, sys
v, i, vprof, db = sys.argv[1:]
subprocess.run([vprof, "run", "--db", db, "--values", "--", "true"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("run %s %s cpu_ms=%.2f faults=%d" % (i, v, 1000 * (r.ru_utime + r.ru_stime), r.ru_minflt))
PYEOF
	done
done
/usr/bin/python3 - "$W/runs" <<'PYEOF'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for v in ("A", "B"):
    cpu = [float(r[3].split("=")[1]) for r in rows if r[2] == v]
    flt = [int(r[4].split("=")[1]) for r in rows if r[2] == v]
    print("%s: CPU median %.1f ms (%.1f..%.1f), %d..%d page faults, %d runs" % (
        v, statistics.median(cpu), min(cpu), max(cpu), min(flt), max(flt), len(cpu)))
PYEOF
