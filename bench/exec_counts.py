#!/usr/bin/python3
"""bench/exec_counts.py — vprof's execution counts against exact ones.

    exec_counts.py VPROF DB BINARY CALLGRIND_OUT

Exact counts: callgrind (--dump-instr=yes) run on the same binary with
the same input: each instruction's Ir is how many times it ran. vprof's:
`vprof list F --json` of every function of BINARY holding 1% or more of
the executions, its `executions` per instruction (from the branch records
of `vprof run --branches`). A block is a run of instructions with one
count in callgrind's; it is compared at its first instruction. vprof's
counts are relative, so they are scaled by one factor for the program
(the sum of exact counts over the compared blocks over vprof's). Prints
each block with 1% or more of the block executions, its exact and scaled
counts, the error and vprof's 95% interval (+-1.96/sqrt(windows), from
`vprof list`'s windows), and a last line: "blocks N, within 10% K, exact
count inside vprof's 95% interval M".
"""
import json, re, subprocess, sys


def callgrind_counts(path, binary):
    """{vaddr in binary: executions} from a callgrind out file."""
    counts, base, cur_ob, in_bin = {}, None, None, False
    obs, last_addr, skip = {}, 0, 0
    fn_first = {}
    cur_fn = None
    fns = {}
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"ob=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(2):
                obs[m.group(1)] = m.group(2)
            cur_ob = obs.get(m.group(1), "")
            in_bin = cur_ob.endswith("/" + binary.split("/")[-1]) or cur_ob == binary
            continue
        m = re.match(r"fn=\((\d+)\)(?: (.*))?$", line)
        if m:
            if m.group(2):
                fns[m.group(1)] = m.group(2)
            cur_fn = fns.get(m.group(1), "")
            continue
        m = re.match(r"(cob|cfn)=\((\d+)\) (.*)$", line)
        if m:   # a name defined where it is first called
            (obs if m.group(1) == "cob" else fns)[m.group(2)] = m.group(3)
            continue
        if line.startswith(("calls=", "cfn=", "cfi=", "cob=", "cfl=")):
            if line.startswith("calls="):
                skip = 1
            continue
        if line.startswith(("fl=", "fi=", "fe=")):
            continue
        m = re.match(r"(0x[0-9a-fA-F]+|[+-]\d+|\*)\s+\S+\s+(\d+)", line)
        if not m:
            continue
        a = m.group(1)
        if a.startswith("0x"):
            addr = int(a, 16)
        elif a == "*":
            addr = last_addr
        else:
            addr = last_addr + int(a)
        last_addr = addr
        if skip:
            skip = 0
            continue
        if in_bin:
            counts[addr] = counts.get(addr, 0) + int(m.group(2))
            if cur_fn and cur_fn not in fn_first:
                fn_first[cur_fn] = addr
    return counts, fn_first


def exact_counts(cg, binary):
    """({file vaddr: executions}, {function: vaddr}) of binary from a
    callgrind out file: its addresses are the process's, moved to the
    file's by a function both name."""
    counts, fn_first = callgrind_counts(cg, binary)
    nm = subprocess.run(["nm", "--defined-only", binary], capture_output=True, text=True).stdout
    syms = {}
    for l in nm.splitlines():
        p = l.split()
        if len(p) == 3 and p[1] in "tT":
            syms[p[2]] = int(p[0], 16)
    base = next((a - syms[f] for f, a in fn_first.items() if f in syms), None)
    if base is None:
        sys.exit("no function of %s in the callgrind output" % binary)
    return {a - base: c for a, c in counts.items()}, syms


def big_blocks(exact, addrs):
    """The blocks among addrs (sorted) with 1% or more of the block
    executions, by their first instruction: a block is a run of
    instructions with one exact count (a gap over 16 bytes starts one)."""
    blocks, prev = [], None
    for a in addrs:
        if prev is None or exact[a] != exact[prev] or a - prev > 16:
            blocks.append(a)
        prev = a
    btotal = sum(exact[a] for a in blocks)
    return [a for a in blocks if exact[a] >= 0.01 * btotal]


def main():
    vprof, db, binary, cg = sys.argv[1:5]
    exact, syms = exact_counts(cg, binary)
    total = sum(exact.values())
    # functions of the binary by their executions
    starts = sorted((v, k) for k, v in syms.items())
    per_fn = {}
    for a, c in exact.items():
        lo, hi = 0, len(starts)
        while lo < hi:
            mid = (lo + hi) // 2
            if starts[mid][0] <= a:
                lo = mid + 1
            else:
                hi = mid
        if lo:
            per_fn[starts[lo - 1][1]] = per_fn.get(starts[lo - 1][1], 0) + c
    est, win = {}, {}
    for f, c in per_fn.items():
        if c < 0.01 * total:
            continue
        out = subprocess.run([vprof, "list", "--db", db, f, "--json"], capture_output=True, text=True).stdout
        for l in out.splitlines():
            if l.startswith("{"):
                r = json.loads(l)
                if "executions" in r:
                    est[int(r["pc"], 16)] = r["executions"]
                    win[int(r["pc"], 16)] = r.get("windows", 0)
    big = big_blocks(exact, sorted(a for a in exact if a in est))
    if not big:
        print("blocks 0, within 10% 0")
        return
    scale = sum(exact[a] for a in big) / max(1e-9, sum(est[a] for a in big))
    ok = inside = 0
    for a in big:
        e = est[a] * scale
        err = (e - exact[a]) / exact[a]
        ok += abs(err) <= 0.10
        h = 1.959964 / win[a] ** 0.5 if win.get(a) else None
        inside += h is not None and abs(e - exact[a]) <= h * e
        print("  block %#8x: exact %12d  vprof %12.0f  %+6.1f%%  95%% %s" % (
            a, exact[a], e, 100 * err, "+-%.0f%%" % (100 * h) if h else "?"))
    print("blocks %d, within 10%% %d, exact count inside vprof's 95%% interval %d" % (len(big), ok, inside))


if __name__ == "__main__":
    main()
