#!/usr/bin/python3
"""bench/fixed_time.py — execution counts from windows of fixed native
time (bench/workloads/forkclock.c) against exact ones.

    fixed_time.py RECORDS BINARY CALLGRIND_OUT [FAULT_NS]

Exact counts: callgrind (--dump-instr=yes) on the same binary and input,
as in bench/exec_counts.py. Blocks are runs of instructions with one
exact count (a jump of more than 16 bytes also starts one); blocks with
1% or more of the block executions are compared at their first
instruction. Three estimates, each scaled by one factor for the program:

  fixed time     the sum of each matched window's executions: a window
                 covers the same native time wherever it starts, so
                 windows at uniform random times count executions in
                 proportion to how often they happen
  per ns         the same with each window's counts divided by its
                 native time: its measured CPU time less FAULT_NS for each
                 page fault in it (a copy-on-write copy while the snapshot
                 lives: time the program would not have spent unprofiled)
  fixed length   the first 4096 instructions of every window: windows of
                 fixed length started where time goes, as vprof's
                 --branches windows are

Prints a row per block and, per estimate, "blocks N, within 10% K"; for
the fixed-time estimate also how often the exact count lies inside a 95%
interval from resampling the windows. A block that no matched window
reached (its code always meets a system call within a window: a replay
stops there) is lost to the fixed-time estimates; the same three lines
then follow with those blocks left out and the rest scaled again.
"""
import random, struct, sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from exec_counts import big_blocks, exact_counts  # noqa: E402

H = struct.Struct("<IIQQqIIQ")
E = struct.Struct("<QII")


def read_records(path):
    d = open(path, "rb").read()
    o, recs = 0, []
    while o + H.size <= len(d):
        magic, matched, n, dt, faults, nent, stop, base = H.unpack_from(d, o)
        o += H.size
        if magic != 0x4B4C4346:
            sys.exit("%s: not a forkclock record at byte %d" % (path, o - H.size))
        ents = {}
        for i in range(nent):
            pc, a, f = E.unpack_from(d, o + i * E.size)
            ents[pc - base] = (a, f)
        o += nent * E.size
        recs.append(dict(matched=matched, n=n, dt=dt, faults=faults, stop=stop, ents=ents))
    return recs


def main():
    path, binary, cg = sys.argv[1:4]
    fault_ns = float(sys.argv[4]) if len(sys.argv) > 4 else 0.0
    recs = read_records(path)
    exact, _ = exact_counts(cg, binary)
    big = big_blocks(exact, sorted(exact))
    matched = [r for r in recs if r["matched"]]
    ns = sorted(r["n"] for r in matched)
    dts = sorted(r["dt"] for r in matched)
    fl = sorted(r["faults"] for r in matched)
    stops = {}
    for r in recs:
        if not r["matched"]:
            stops[r["stop"]] = stops.get(r["stop"], 0) + 1
    print("windows %d, matched %d (unmatched by interpreter stop: %s)" % (
        len(recs), len(matched), ", ".join("%d: %d" % kv for kv in sorted(stops.items())) or "none"))
    if not matched:
        return
    mid = len(matched) // 2
    print("matched windows: instructions median %d [p10 %d, p90 %d]; CPU time median %.1f us "
          "[p10 %.1f, p90 %.1f]; minor faults median %d [p90 %d]" % (
              ns[mid], ns[len(ns) // 10], ns[len(ns) * 9 // 10], dts[mid] / 1e3,
              dts[len(dts) // 10] / 1e3, dts[len(dts) * 9 // 10] / 1e3, fl[mid], fl[len(fl) * 9 // 10]))

    def estimate(rs, key, blocks=big):
        est = dict.fromkeys(blocks, 0.0)
        for r in rs:
            w = 1e3 / max(1e3, r["dt"] - fault_ns * r["faults"]) if key == "per_ns" else 1.0
            for a in blocks:
                e = r["ents"].get(a)
                if e:
                    est[a] += w * (e[1] if key == "first" else e[0])
        s = sum(est.values())
        scale = sum(exact[a] for a in blocks) / s if s else 0.0
        return {a: est[a] * scale for a in blocks}

    ests = [("fixed time", estimate(matched, "all")), ("per ns", estimate(matched, "per_ns")),
            ("fixed length", estimate(recs, "first"))]
    rnd = random.Random(1)
    boots = [estimate([rnd.choice(matched) for _ in matched], "all") for _ in range(200)]
    lo = {a: sorted(b[a] for b in boots)[5] for a in big}
    hi = {a: sorted(b[a] for b in boots)[194] for a in big}
    print("%10s %12s  %s" % ("block", "exact", "  ".join("%22s" % n for n, _ in ests)))
    for a in big:
        cells = []
        for _, est in ests:
            cells.append("%12.0f %+7.1f%%" % (est[a], 100 * (est[a] - exact[a]) / exact[a]))
        print("%#10x %12d  %s  95%% %.0f..%.0f" % (a, exact[a], "  ".join("%22s" % c for c in cells),
                                                  lo[a], hi[a]))
    def summary(ests, blocks, lo=None, hi=None, tag=""):
        for name, est in ests:
            ok = sum(abs(est[a] - exact[a]) <= 0.10 * exact[a] for a in blocks)
            worst = max(blocks, key=lambda a: abs(est[a] - exact[a]) / exact[a])
            line = "%s%s: blocks %d, within 10%% %d, worst %+.1f%% at %#x" % (
                name, tag, len(blocks), ok, 100 * (est[worst] - exact[worst]) / exact[worst], worst)
            if lo and name == "fixed time":
                line += ", exact inside the 95%% interval %d" % sum(lo[a] <= exact[a] <= hi[a] for a in blocks)
            print(line)

    summary(ests, big, lo, hi)
    lost = [a for a in big if ests[0][1][a] == 0]
    kept = [a for a in big if a not in lost]
    if lost and kept:
        print("blocks no matched window reached: %s" % " ".join("%#x" % a for a in lost))
        summary([(n, estimate(matched if k != "first" else recs, k, kept))
                 for n, k in (("fixed time", "all"), ("per ns", "per_ns"), ("fixed length", "first"))],
                kept, tag=" without them")


main()
