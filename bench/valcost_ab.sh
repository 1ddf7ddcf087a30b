#!/bin/bash
# bench/valcost_ab.sh — vprof's own time per value sample (bench/values.sh
# section 1b's valcost) for two built trees, their runs interleaved.
#
#   bench/valcost_ab.sh TREE_A TREE_B [--rounds N] [--hz LIST] [--len L]
#
# TREE_A and TREE_B are checkouts of vprof, each built (make), e.g. a
# baseline in a worktree and this tree:
#
#   git worktree add /tmp/base REV && make -C /tmp/base
#   bench/valcost_ab.sh /tmp/base . --rounds 8
#
# valcost is linked with each tree's library objects, laid out as its
# libvprof.so is (bench/workloads/valcost_build.sh). Each round runs A and
# B for 3 s at each rate (as section 1b: a per-thread CPU timer at 250 Hz,
# a wall-clock timer above, which CPU timers do not reach here; every
# sample interpreted, length L, default 4), swapping the order every other
# round. Prints each run, then per rate the medians of A's and B's runs
# (valcost's median a run), the median of the per-round B/A, in how many
# rounds B was the cheaper, and the cold probe's median (how cold the host
# kept the caches: valcost.c).
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/valcost_ab.sh TREE_A TREE_B [--rounds N] [--hz LIST] [--len L]" >&2; exit 2; }
TA=$(cd "$1" && pwd) TB=$(cd "$2" && pwd) || exit 2
shift 2
ROUNDS=8 HZS="250 1000 4000" LEN=4
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift 2 ;;
	--hz) HZS=${2//,/ }; shift 2 ;;
	--len) LEN=$2; shift 2 ;;
	*) echo "bench/valcost_ab.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
W=$(mktemp -d /tmp/vprof-vcab.XXXXXX)
trap 'rm -rf "$W"' EXIT
for v in A B; do
	"$TOP/bench/workloads/valcost_build.sh" "$([ $v = A ] && echo "$TA" || echo "$TB")" "$W/valcost$v" || exit 1
done
echo "== bench/valcost_ab.sh: vprof's time per value sample (valcost), A/B"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
echo "A:       $TA ($(git -C "$TA" rev-parse --short HEAD 2>/dev/null)$(git -C "$TA" diff --quiet 2>/dev/null || echo ', with changes'))"
echo "B:       $TB ($(git -C "$TB" rev-parse --short HEAD 2>/dev/null)$(git -C "$TB" diff --quiet 2>/dev/null || echo ', with changes'))"
echo "length $LEN, every sample interpreted; CPU timer at 250 Hz, wall-clock above; $ROUNDS rounds of 3 s a run"
for r in $(seq 1 "$ROUNDS"); do
	for hz in $HZS; do
		for v in $( [ $((r % 2)) = 1 ] && echo A B || echo B A); do
			rm -rf "$W/db"
			out=$(env $([ "$hz" -gt 250 ] && echo VALCOST_MONO=1) VPROF_DB=$W/db VPROF_VALUES=on VPROF_INTERP_EVERY=1 VPROF_INTERP_LEN=$LEN \
				VPROF_PERIOD=1000000000 "$W/valcost$v" "$hz" 3 2>/dev/null)
			echo "run $r $hz $v $out"
		done
	done
done | tee "$W/runs"
/usr/bin/python3 - "$W/runs" $HZS <<'PYEOF'
import statistics as st, sys
runs = {}
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 5 or f[4] != "valcost":
        continue
    kv = dict(x.split("=", 1) for x in f[5:] if "=" in x)
    runs.setdefault((f[2], f[3]), []).append((int(f[1]), float(kv["cost_ns"]), float(kv["probe_ns"])))
print("%6s | %12s %12s | %22s | %9s | %s" % ("Hz", "A median ns", "B median ns", "B/A per round [IQR]", "B cheaper", "probe ns A, B"))
for hz in sys.argv[2:]:
    a = dict((r, (c, p)) for r, c, p in runs.get((hz, "A"), []))
    b = dict((r, (c, p)) for r, c, p in runs.get((hz, "B"), []))
    both = sorted(set(a) & set(b))
    if len(both) < 2:
        print("%6s | too few runs" % hz); continue
    ratio = [b[r][0] / a[r][0] for r in both]
    q = st.quantiles(ratio, n=4)
    print("%6s | %12.0f %12.0f | %.3f [%.3f..%.3f] | %4d of %d | %.0f, %.0f" % (
        hz, st.median(v[0] for v in a.values()), st.median(v[0] for v in b.values()), st.median(ratio),
        q[0], q[2], sum(x < 1 for x in ratio), len(ratio),
        st.median(v[1] for v in a.values()), st.median(v[1] for v in b.values())))
PYEOF
