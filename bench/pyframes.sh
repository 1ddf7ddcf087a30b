#!/bin/bash
# bench/pyframes.sh — Python frames (preload/pyframes.c): what reading them
# costs, and how close the shares are, against Debian's python3-scalene.
#
#   bench/pyframes.sh [--rounds N]
#
# 1. The walk's cost per sample: tests/fixtures/py_deep.py spinning 1 and
#    30 Python frames deep, `vprof run --stacks --freq 1000` with
#    VPROF_PYTHON on and off, interleaved; the handler's own time by its
#    own count (vprof report --json cost_ns / samples); per round the
#    difference on - off, median [min..max] of the rounds. Target <= 2 us
#    at depth 30.
# 2. Shares and overhead on tests/fixtures/py_four.py (four pure-Python
#    functions of planted cost): two truths, each function timed alone
#    (CPU, start-up subtracted, medians of the rounds), and each
#    function's own clock in the profiled run itself (py_four.py "times",
#    time.process_time around each call; the functions do not take the
#    same time alone as among the others); vprof at its defaults and at
#    --freq 1000, scalene --cli --cpu-only; per round the profiled CPU over
#    the plain run's (getrusage of the children, merge or report
#    included), median of the rounds; each function's share, and the
#    largest difference from each truth, median [max] of the rounds.
# Results: BENCHMARKS.md, "Python frames".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=5
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "pyframes.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done
W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-pyframes.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
cp "$ROOT/build/vprof" "$W/vprof" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3.11
if ! "$PY" -c 'import scalene' 2>/dev/null; then
	echo "pyframes.sh: python3-scalene is not installed (apt-get install python3-scalene)" >&2
	exit 1
fi
echo "== bench/pyframes.sh --rounds $ROUNDS: the cost of Python frames, and shares against scalene"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "python:  $("$PY" -c 'import sys; print(sys.version.split()[0])'), scalene $("$PY" -c 'import scalene.scalene_version as v; print(v.scalene_version)' 2>/dev/null)"
"$PY" - "$W" "$ROOT/tests/fixtures" "$ROUNDS" "$PY" <<'EOF'
import json, os, resource, statistics, subprocess, sys
W, FIX, ROUNDS, PY = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
VPROF = os.path.join(W, "vprof")
NAMES = ["alpha", "beta", "gamma", "delta"]

def cpu(cmd, env=None, out=subprocess.DEVNULL, err=subprocess.DEVNULL):
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, env=env, stdout=out, stderr=err, check=False)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)

def clocks(path):
    """py_four.py's "times": each function's own CPU in that run, as shares."""
    t = {}
    for l in open(path, errors="replace"):
        w = l.split()
        if len(w) == 2 and w[0] in NAMES:
            try:
                t[w[0]] = float(w[1])
            except ValueError:
                pass
    s = sum(t.values()) or 1
    return {f: 100.0 * t.get(f, 0) / s for f in NAMES}

def report(db):
    r = subprocess.run([VPROF, "report", "--db", db, "--json", "-n", "1"], capture_output=True, text=True)
    return json.loads(r.stdout)

def folded_shares(db):
    r = subprocess.run([VPROF, "export", "--db", db, "--format", "folded"], capture_output=True, text=True)
    incl = dict.fromkeys(NAMES, 0)
    for line in r.stdout.splitlines():
        path, n = line.rsplit(" ", 1)
        fr = path.split(";")
        for f in NAMES:
            if f in fr:
                incl[f] += int(n)
    s = sum(incl.values()) or 1
    return {f: 100.0 * incl[f] / s for f in NAMES}

def scalene_shares(js):
    d = json.load(open(js))
    got = dict.fromkeys(NAMES, 0.0)
    for f in d["files"].values():
        for fn in f.get("functions", []):
            if fn["line"] in got:
                got[fn["line"]] += fn["n_cpu_percent_python"] + fn["n_cpu_percent_c"] + fn.get("n_sys_percent", 0)
    s = sum(got.values()) or 1
    return {f: 100.0 * got[f] / s for f in NAMES}

print("\n1. the walk's cost per sample (handler time, VPROF_PYTHON on - off, --stacks --freq 1000)")
print("depth | on us/sample | off us/sample | on - off: median [min..max] | verdict")
for depth in (1, 30):
    diffs, ons, offs = [], [], []
    for r in range(ROUNDS):
        per = {}
        for mode in (("on", "off") if r % 2 == 0 else ("off", "on")):
            db = os.path.join(W, "deep-%s" % mode)
            subprocess.run(["rm", "-rf", db])
            env = dict(os.environ, VPROF_PYTHON=mode)
            subprocess.run([VPROF, "run", "--db", db, "--stacks", "--freq", "1000", "--", PY,
                            os.path.join(FIX, "py_deep.py"), str(depth), "20000000"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            s = report(db)
            per[mode] = s["cost_ns"] / max(s["samples"], 1) / 1000.0
        ons.append(per["on"]); offs.append(per["off"]); diffs.append(per["on"] - per["off"])
    med = statistics.median(diffs)
    verdict = ("PASS (<= 2 us)" if med <= 2 else "MISS (> 2 us)") if depth == 30 else ""
    print("%5d | %12.2f | %13.2f | %6.2f [%.2f..%.2f] | %s" % (depth, statistics.median(ons),
          statistics.median(offs), med, min(diffs), max(diffs), verdict))

print("\n2. py_four.py 50 rounds: overhead and shares against the truth")
script = os.path.join(FIX, "py_four.py")
truth_t = {n: [] for n in NAMES + ["none"]}
rows = {"plain": [], "vprof 250 Hz": [], "vprof 1 kHz": [], "scalene": []}
shares = {"vprof 250 Hz": [], "vprof 1 kHz": [], "scalene": []}
runclk = {"vprof 250 Hz": [], "vprof 1 kHz": [], "scalene": []}
errf = os.path.join(W, "four.err")
for r in range(ROUNDS):
    for n in NAMES + ["none"]:
        truth_t[n].append(cpu([PY, script, "50", n]))
    order = list(rows)
    if r % 2:
        order.reverse()
    for v in order:
        db = os.path.join(W, "four")
        subprocess.run(["rm", "-rf", db, os.path.join(W, "sc.json")])
        if v == "plain":
            t = cpu([PY, script, "50"])
        elif v.startswith("vprof"):
            f = ["--freq", "1000"] if "1 kHz" in v else []
            t = cpu([VPROF, "run", "--db", db, *f, "--", PY, script, "50", "all", "times"],
                    err=open(errf, "w"))
            shares[v].append(folded_shares(db))
            runclk[v].append(clocks(errf))
        else:
            t = cpu([PY, "-m", "scalene", "--cli", "--cpu-only", "--json", "--outfile",
                     os.path.join(W, "sc.json"), script, "---", "50", "all", "times"],
                    err=open(errf, "w"))
            shares[v].append(scalene_shares(os.path.join(W, "sc.json")))
            runclk[v].append(clocks(errf))
        rows[v].append(t)
base = statistics.median(truth_t["none"])
own = {n: max(statistics.median(truth_t[n]) - base, 0) for n in NAMES}
tot = sum(own.values())
truth = {n: 100.0 * own[n] / tot for n in NAMES}
print("truth (each alone, start-up %.3f s subtracted): %s" % (base, ", ".join("%s %.1f%%" % (n, truth[n]) for n in NAMES)))
print("profiler      | CPU / plain: median [min..max] | shares (median of rounds)       | worst |diff| from alone: median [max] | from the run's own clocks: median [max]")
plain = rows["plain"]
for v in rows:
    ratios = [a / b for a, b in zip(rows[v], plain)]
    line = "%-13s | %.3f [%.3f..%.3f]" % (v, statistics.median(ratios), min(ratios), max(ratios))
    if v in shares:
        med = {n: statistics.median(s[n] for s in shares[v]) for n in NAMES}
        worst = [max(abs(s[n] - truth[n]) for n in NAMES) for s in shares[v]]
        wrun = [max(abs(s[n] - c[n]) for n in NAMES) for s, c in zip(shares[v], runclk[v])]
        line += " | %s | %.1f [%.1f] | %.1f [%.1f]" % (" ".join("%s %4.1f" % (n[:2], med[n]) for n in NAMES),
                                                   statistics.median(worst), max(worst),
                                                   statistics.median(wrun), max(wrun))
    print(line)
EOF
