#!/usr/bin/env python3
"""How close each timing check of the suite came to its limit, per run.

    bench/ci_worst.py LOGDIR...    (each a build/test-logs of one run)

Reads the PASS/FAIL lines the timing tests print (docs/testing.md, "The
timing tests and their method") and prints one row per check, one column
per run: 1.00 is at the limit, above it a failure. Used for the
fresh-clone runs in BENCHMARKS.md, "Five fresh clones in a row".
"""
import re, sys, os
def lines(run, t):
    p = os.path.join(run, t + ".log")
    return open(p).read().splitlines() if os.path.exists(p) else []
out = {}
for run in sys.argv[1:]:
    r = {}
    for l in lines(run, "make_stress"):
        m = re.search(r"worst at ([0-9.]+) of its bound", l)
        if m: r["make_stress worst process / bound"] = float(m.group(1))
    for l in lines(run, "latency_bins"):
        for m in re.finditer(r"median ([0-9.]+) in its bins \(>= ([0-9.]+)", l):
            v = float(m.group(2)) / float(m.group(1))
            r["latency_bins limit / median share (max)"] = max(r.get("latency_bins limit / median share (max)", 0), v)
    for l in lines(run, "perf_agree"):
        m = re.search(r"largest difference ([0-9.]+) points \(limit 5\)", l)
        if m: r["perf_agree largest diff / 5 points"] = float(m.group(1)) / 5
    for l in lines(run, "idle_threads"):
        m = re.search(r"park (\S+): (\d+) burn_worker samples .* perf record's (\d+)", l)
        if m:
            v = 0.95 * int(m.group(3)) / int(m.group(2))
            k = "idle_threads 95% of perf / vprof (max)"
            r[k] = max(r.get(k, 0), v)
    for l in lines(run, "self_limit"):
        m = re.search(r"CPU bounded: (\d+) ns <= 1.5 x ([0-9.]+) s / 0.75 \+ 50 ms", l)
        if m:
            v = int(m.group(1)) / ((1.5 * float(m.group(2)) / 0.75 + 0.05) * 1e9)
            r["self_limit CPU / bound (max)"] = max(r.get("self_limit CPU / bound (max)", 0), v)
        m = re.search(r"took (\d+)% of the CPU \(over 33%\)", l)
        if m: r["self_limit 33% / unbounded share"] = 33 / int(m.group(1))
    for l in lines(run, "top_rate"):
        m = re.search(r"took ([0-9. ]+) s of CPU, the least at most ([0-9.]+) s \(unprofiled ([0-9.]+)-([0-9.]+) s", l)
        if m:
            u = float(m.group(4))
            v = (min(map(float, m.group(1).split())) - u) / (float(m.group(2)) - u)
            k = "top_rate least CPU's excess / the bound's (max)"
            r[k] = max(r.get(k, 0), v)
    for l in lines(run, "go_cgo"):
        m = re.search(r"share ([0-9.]+)% within 3 points of .*?([0-9.]+)%$", l)
        if m:
            v = abs(float(m.group(1)) - float(m.group(2))) / 3
            r["go_cgo diff / 3 points (max)"] = max(r.get("go_cgo diff / 3 points (max)", 0), v)
    for l in lines(run, "proportion"):
        m = re.search(r"\(ratio ([0-9.]+)\)", l)
        if m:
            v = abs(float(m.group(1)) - 1) / 0.10
            r["proportion abs(ratio - 1) / 10% (max)"] = max(r.get("proportion abs(ratio - 1) / 10% (max)", 0), v)
    for l in lines(run, "unprivileged"):
        m = re.search(r"over its user CPU: (\d+) Hz", l)
        if m: r["unprivileged 500 Hz / xz's rate"] = 500 / int(m.group(1))
    for l in lines(run, "sigkill"):
        m = re.search(r"recovered (\d+) samples, expected (\d+)\.\.(\d+)", l)
        if m:
            n, lo, hi = map(int, m.groups())
            v = max(lo / n, n / hi)
            r["sigkill outside-range ratio (max)"] = max(r.get("sigkill outside-range ratio (max)", 0), v)
    out[run] = r
keys = sorted({k for r in out.values() for k in r})
print("check (1.00 = at its limit) | " + " | ".join("run %d" % (i + 1) for i in range(len(out))))
for k in keys:
    print(k + " | " + " | ".join("%.2f" % out[x][k] if k in out[x] else "-" for x in out))
