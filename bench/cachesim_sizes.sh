#!/bin/bash
# bench/cachesim_sizes.sh — the unknown references across cache sizes,
# MemSpy's Figure 8: for each D1 size (4 KiB to 256 KiB, 8 ways) and each
# LL size (256 KiB to 64 MiB, 16 ways), bzip2 1.0.8 compressing seeded
# words (bench/programs) under cachegrind (3 MB, the truth) and under
# `vprof run --cache ...` at its defaults (30 MB): the whole run's miss
# rate, vprof's estimate and its bounds (every unknown reference a hit, or
# a miss), and the same for bzip2's hottest procedure, mainSort. Writes
# the table, and the plot as docs/cachesim-sizes.png (matplotlib) with
# --plot.
#
#   bench/cachesim_sizes.sh [--plot]
#
# Results: BENCHMARKS.md, "Cache simulation"; docs/cache-simulation.md.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
PLOT=0
while [ $# -gt 0 ]; do
	case "$1" in
	--plot) PLOT=1 ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "cachesim_sizes.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-cachesizes.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so build/libvprof-heap.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$ROOT/build/libvprof-heap.so" "$W/" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3
P=$ROOT/bench/programs
gcc -O2 -g -D_FILE_OFFSET_BITS=64 -w -o "$W/bz" "$P"/bzip2-1.0.8/*.c || exit 1
DIR=$W
. "$ROOT/tests/fixtures/real_workloads.sh"
head -c 3000000 "$W/words.txt" >"$W/short.txt"
head -c 30000000 "$W/words.txt" >"$W/long.txt"
rm -f "$W/words.txt" "$W/words4.txt"

echo "== bench/cachesim_sizes.sh: bzip2, vprof's estimate and bounds against cachegrind across cache sizes"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
# level size(bytes) ways: D1 sizes with LL fixed at 8M:16, LL sizes with D1 fixed at 32K:8
: >"$W/rows"
for spec in D1:4096:8 D1:16384:8 D1:32768:8 D1:65536:8 D1:262144:8 \
	    LL:262144:16 LL:1048576:16 LL:4194304:16 LL:16777216:16 LL:67108864:16; do
	IFS=: read -r lvl size ways <<<"$spec"
	if [ "$lvl" = D1 ]; then d1="$size,$ways,64"; ll="8388608,16,64"; else d1="32768,8,64"; ll="$size,$ways,64"; fi
	valgrind --tool=cachegrind --cache-sim=yes --D1="$d1" --LL="$ll" --I1=32768,8,64 \
		--cachegrind-out-file="$W/cg.out" "$W/bz" -c <"$W/short.txt" >/dev/null 2>&1
	IFS=, read -r ds dw dl <<<"$d1"; IFS=, read -r ls lw lln <<<"$ll"
	rm -rf "$W/db"
	"$W/vprof" run --db "$W/db" --cache "D1=$ds:$dw:$dl,LL=$ls:$lw:$lln" -- "$W/bz" -c <"$W/long.txt" >/dev/null 2>&1
	"$W/vprof" memory --db "$W/db" --json -n 0 >"$W/mem.json"
	"$PY" - "$W/cg.out" "$W/mem.json" "$lvl" "$size" <<'PYEOF' >>"$W/rows"
import json, sys
sys.argv_ = sys.argv
ev, fn, tot, ms = None, None, [0, 0, 0], [0, 0, 0]
for l in open(sys.argv[1]):
    if l.startswith("events:"):
        ev = l.split()[1:]
    elif l.startswith("fn="):
        fn = l[3:].strip()
    elif l[:1].isdigit():
        v = dict(zip(ev, map(int, l.split()[1:])))
        row = (v["Dr"] + v["Dw"], v["D1mr"] + v["D1mw"], v["DLmr"] + v["DLmw"])
        for i in range(3):
            tot[i] += row[i]
            if fn == "mainSort":
                ms[i] += row[i]
m = json.load(open(sys.argv[2]))
lvl, size = sys.argv[3], int(sys.argv[4])
k, i = ("D1", 1) if lvl == "D1" else ("LL", 2)
r = [x for x in m["rows"] if x["procedure"] == "mainSort"][0]
def est(o, refs):
    return o[k]["misses"] / refs, o[k]["misses_lo"] / refs, o[k]["misses_hi"] / refs
a, alo, ahi = est(m, m["refs"])
b, blo, bhi = est(r, r["refs"])
print(json.dumps({"level": lvl, "size": size, "truth": tot[i] / tot[0], "est": a, "lo": alo, "hi": ahi,
                  "ms_truth": ms[i] / ms[0], "ms_est": b, "ms_lo": blo, "ms_hi": bhi}))
PYEOF
	tail -1 "$W/rows" | "$PY" -c 'import json, sys
r = json.loads(sys.stdin.read())
print("%s %8d KiB  whole run: cachegrind %6.2f%%  vprof %6.2f%% [%.2f-%.2f]  %s   mainSort: cachegrind %6.2f%%  vprof %6.2f%% [%.2f-%.2f]  %s" % (
    r["level"], r["size"] // 1024, 100 * r["truth"], 100 * r["est"], 100 * r["lo"], 100 * r["hi"],
    "inside" if r["lo"] <= r["truth"] <= r["hi"] else "OUTSIDE",
    100 * r["ms_truth"], 100 * r["ms_est"], 100 * r["ms_lo"], 100 * r["ms_hi"],
    "inside" if r["ms_lo"] <= r["ms_truth"] <= r["ms_hi"] else "OUTSIDE"))'
done
if [ "$PLOT" = 1 ]; then
	"$PY" - "$W/rows" "$ROOT/docs/cachesim-sizes.png" <<'PYEOF'
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
rows = [json.loads(l) for l in open(sys.argv[1])]
fig, axes = plt.subplots(2, 2, figsize=(10, 7))
for col, lvl in enumerate(("D1", "LL")):
    rs = [r for r in rows if r["level"] == lvl]
    xs = list(range(len(rs)))
    labels = ["%dK" % (r["size"] // 1024) if r["size"] < 1 << 20 else "%dM" % (r["size"] >> 20) for r in rs]
    for row, (pre, title) in enumerate((("", "whole run"), ("ms_", "mainSort"))):
        ax = axes[row][col]
        est = [100 * r[pre + "est"] for r in rs]
        lo = [100 * r[pre + "lo"] for r in rs]
        hi = [100 * r[pre + "hi"] for r in rs]
        ax.errorbar(xs, est, yerr=[[e - l for e, l in zip(est, lo)], [h - e for e, h in zip(est, hi)]],
                    fmt="o", capsize=4, label="vprof: estimate and bounds")
        ax.plot(xs, [100 * r[pre + "truth"] for r in rs], "*", markersize=12, label="cachegrind")
        ax.set_xticks(xs)
        ax.set_xticklabels(labels)
        ax.set_title("bzip2, %s: %s miss rate by %s size" % (title, lvl, lvl))
        ax.set_ylabel("misses per data reference, %")
        ax.legend(fontsize=8)
fig.tight_layout()
fig.savefig(sys.argv[2], dpi=90)
print("plot: " + sys.argv[2])
PYEOF
fi
