#!/usr/bin/python3
"""bench/cachesim_compare.py — vprof memory against cachegrind, per procedure.

    cachesim_compare.py CACHEGRIND_OUT MEMORY_JSON [--min SHARE] [--slack POINTS]

CACHEGRIND_OUT: cachegrind's out file (same geometry as the vprof run);
MEMORY_JSON: `vprof memory --json -n 0`. For each function with SHARE
(default 0.05) or more of cachegrind's data references, prints vprof's
D1 and LL miss rates (estimate and bounds) beside cachegrind's, then the
whole run's: a line each, and a last line of JSON with the worst D1 and LL
differences and whether cachegrind's rates lay inside vprof's bounds, per
procedure (inside) and for the whole run (run_inside), each widened by
--slack (a fraction, default 0): cachegrind counts every reference of the
run, cold starts included, which the windows sample only by chance (a
loop over 16 KiB in a 4 KiB D1 misses 12.50% of its references in
steady state; cachegrind counts 12.55% with its first pass).
"""
import json, sys


def cachegrind(path):
    ev, fn, per = None, None, {}
    for l in open(path):
        if l.startswith("events:"):
            ev = l.split()[1:]
        elif l.startswith("fn="):
            fn = l[3:].strip()
        elif l[:1].isdigit() and fn:
            v = dict(zip(ev, map(int, l.split()[1:])))
            d = per.setdefault(fn, [0, 0, 0])
            d[0] += v["Dr"] + v["Dw"]
            d[1] += v["D1mr"] + v["D1mw"]
            d[2] += v["DLmr"] + v["DLmw"]
    return per


def main():
    args = sys.argv[1:]
    share, slack = 0.05, 0.0
    if "--min" in args:
        i = args.index("--min")
        share = float(args[i + 1])
        del args[i:i + 2]
    if "--slack" in args:
        i = args.index("--slack")
        slack = float(args[i + 1])
        del args[i:i + 2]
    per = cachegrind(args[0])
    m = json.load(open(args[1]))
    rows = {}
    for r in m["rows"]:
        rows.setdefault(r["procedure"], r)
    total = [sum(d[i] for d in per.values()) for i in range(3)]
    worst1 = worstl = 0.0
    inside = True
    out = []
    for f, (refs, d1, ll) in sorted(per.items(), key=lambda kv: -kv[1][0]):
        if refs < share * total[0]:
            continue
        r = rows.get(f)
        if not r:
            out.append({"procedure": f, "missing": True})
            inside = False
            continue
        cg1, cgl = d1 / refs, ll / refs
        v = {k: r[k]["miss_rate"] for k in ("D1", "LL")}
        lo = {k: r[k]["misses_lo"] / r["refs"] for k in ("D1", "LL")}
        hi = {k: r[k]["misses_hi"] / r["refs"] for k in ("D1", "LL")}
        ins = lo["D1"] - slack - 1e-9 <= cg1 <= hi["D1"] + slack + 1e-9 and \
            lo["LL"] - slack - 1e-9 <= cgl <= hi["LL"] + slack + 1e-9
        inside = inside and ins
        worst1 = max(worst1, abs(v["D1"] - cg1))
        worstl = max(worstl, abs(v["LL"] - cgl))
        print("%-28s refs %5.1f%%  D1 %6.2f%% [%.1f-%.1f] cachegrind %6.2f%%  LL %6.2f%% [%.1f-%.1f] cachegrind %6.2f%%%s" % (
            f[:28], 100 * refs / total[0], 100 * v["D1"], 100 * lo["D1"], 100 * hi["D1"], 100 * cg1,
            100 * v["LL"], 100 * lo["LL"], 100 * hi["LL"], 100 * cgl, "" if ins else "  (outside bounds)"))
        out.append({"procedure": f, "d1": v["D1"], "cg_d1": cg1, "ll": v["LL"], "cg_ll": cgl, "inside": ins})
    a1, al = m["D1"]["miss_rate"], m["LL"]["miss_rate"]
    run_inside = all(m[k]["misses_lo"] / m["refs"] - slack - 1e-9 <= total[i] / total[0] <=
                     m[k]["misses_hi"] / m["refs"] + slack + 1e-9 for k, i in (("D1", 1), ("LL", 2)))
    print("%-28s            D1 %6.2f%% cachegrind %6.2f%%  LL %6.2f%% cachegrind %6.2f%%" % (
        "whole run", 100 * a1, 100 * total[1] / total[0], 100 * al, 100 * total[2] / total[0]))
    print(json.dumps({"worst_d1": worst1, "worst_ll": worstl, "inside": inside, "run_inside": run_inside, "rows": out,
                      "run_d1": a1, "cg_run_d1": total[1] / total[0], "run_ll": al, "cg_run_ll": total[2] / total[0]}))


main()
