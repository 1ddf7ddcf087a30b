#!/bin/bash
# Reliability: the make -j2 runaway at 10 kHz must not come back.
#
# The runaway: a process whose first sampling period fell near the hrtimer's
# 10 us floor spent seconds in timer interrupts (a gcc driver at 2-4 s of
# CPU instead of 20 ms, tens of thousands of samples dropped), about one
# build in five on this 2-core VM. upcall_thread_start now never arms a
# period under UPCALL_MIN_PERIOD_NS.
#
# Each build of tests/fixtures/cproj (25 processes: make, gcc drivers, cc1,
# as, collect2, ld) runs under `vprof run --event task-clock --freq 10000`.
# Every process must use at most 1.5 x its median CPU time under the
# sampling floor, scaled by the load of its build's moment and the spread
# the baseline builds showed (below), plus 20 ms, and drop nothing. The
# floor is what 10 kHz of task-clock interrupts cost any sampler on this
# machine now, process by process: the same build under `perf record -e
# task-clock:u` at 10 kHz, wrapped around the same library at a 1 Hz CPU
# timer (start-up and spool costs included, no interrupts of its own to
# speak of), which records each process's CPU in processes.tsv; processes
# are matched by program and source file, 3 such builds give the medians.
# An interrupt costs a big program more than a loop (cache and TLB
# refills): cc1 pays ~1.8x at 10 kHz under perf record where a loop pays
# ~1.25x idle. The unsampled medians (1 Hz alone) are printed beside. A
# runaway is 10-100x.
#
# The machine is shared, and its load moves a build's CPU times, together
# and one by one (a cc1 at 1.69x its floor median in CI, the rest of its
# build normal; a whole build at 1.2x here beside two busy loops). So the
# margin is measured in the same run, not fixed:
#   - load L: a profiled build's CPU over the sum of the floor medians of
#     its processes (1.0 when nothing changed); for a process's own bound,
#     the other processes' (at least 1 is used), so that a process's
#     excess never widens its own bound;
#   - spread E: how far one process of a floor build strayed from its
#     median once its build's own L is divided out, the worst over the 3
#     floor builds' processes of 10 ms or more (1.07-1.11 here beside two
#     busy loops, 1.44 once at a load average of 30);
#   - each process: CPU <= 1.5 x floor median x L x E + 20 ms;
#   - the builds: their median L <= 1.5 x S, S the worst build total over
#     its median among the unsampled and the floor builds (the same
#     machine's noise, build-wide), so that a cost that grew in every
#     process at once, which L would hide, still fails; the median, since
#     such a cost is in every build, and a burst of load in one (a build
#     at 1.49 where the baselines' totals stayed within 1.045) is not.
# S and E are taken at most 2: a bound never passes 3x the floor (times L
# for a process), a third of the smallest runaway seen. A runaway process
# fails its bound by far, and its build's bound too when it is a big one.
# Over 8 rounds beside two busy loops, the 20 ms left out (CI's cc1s are
# 4x these, where 20 ms is little), the worst process of a round came to
# 0.63-0.99 of the fixed bound and 0.59-0.80 of this one.
#
# Builds: VPROF_STRESS_BUILDS (default 3; `make reliability` runs 20).
. "$(dirname "$0")/lib.sh"

builds=${VPROF_STRESS_BUILDS:-3}

build() {   # build DB FLAGS...: one clean build of the project under vprof run
	# (PERF_WRAP=1: under perf record at 10 kHz too)
	local db=$1; shift
	rm -rf "$TMP/proj" "$db"
	cp -r "$TOP/tests/fixtures/cproj" "$TMP/proj"
	${PERF_WRAP:+perf record -q -o "$TMP/perf.data" -e task-clock:u -c 100000 --} \
		"$VPROF" run --db "$db" "$@" -- make -s -C "$TMP/proj" -j2 >"$TMP/out" 2>"$TMP/err"
}

# Interleaved: unsampled build i, floor build i and profiled build i run
# back to back, so that a change in the machine's load (other jobs on its
# 2 CPUs) lands on all three.
ok=0
for i in $(seq 1 $((builds > 3 ? builds : 3))); do
	if [ "$i" -le 3 ]; then
		build "$TMP/base$i" --event cpu-timer --freq 1 || fail "unsampled build $i: $(tail -1 "$TMP/err")"
		PERF_WRAP=1 build "$TMP/floor$i" --event cpu-timer --freq 1 ||
			fail "floor build $i under perf record: $(tail -1 "$TMP/err")"
	fi
	[ "$i" -le "$builds" ] || continue
	if build "$TMP/run$i" --event task-clock --freq 10000 && [ -x "$TMP/proj/app" ]; then
		ok=$((ok + 1))
	else
		fail "build $i under vprof at 10 kHz: $(tail -1 "$TMP/err")"
	fi
done
check "$ok of $builds builds at 10 kHz succeed" [ "$ok" -eq "$builds" ]

# One line per profiled process or build that breaks a bound, then the
# margins and a summary line.
"$PY" - "$TMP" "$builds" >"$TMP/verdict" <<'EOF'
import os, re, statistics, sys
tmp, builds = sys.argv[1], int(sys.argv[2])

def rows(db):
    out = {}
    with open(os.path.join(db, "epochs/1/processes.tsv")) as f:
        for line in f:
            c = line.rstrip("\n").split("\t")
            # pid ppid exe samples merged dropped exited cpu_ns event cmdline
            m = re.search(r"\b(main|unit[0-9]+|app)\b", c[9])
            key = os.path.basename(c[2]) + " " + (m.group(1) if m else "")
            out[key] = (int(c[5]), int(c[7]) / 1e6, c[9])
    return out

def load(build, med):   # a build's CPU over the medians of its processes
    ks = [k for k in build if k in med]
    return sum(build[k][1] for k in ks) / max(1e-9, sum(med[k] for k in ks))

base = [rows(f"{tmp}/base{i}") for i in (1, 2, 3)]
floor = [rows(f"{tmp}/floor{i}") for i in (1, 2, 3)]
def medians(bs):
    keys = set().union(*bs)
    return {k: statistics.median([b[k][1] for b in bs if k in b]) for k in keys}
bmed, fmed = medians(base), medians(floor)
S = min(2.0, max([load(b, bmed) for b in base] + [load(b, fmed) for b in floor]))
E = min(2.0, max([1.0] + [b[k][1] / load(b, fmed) / fmed[k] for b in floor for k in b if fmed[k] >= 10]))
print(f"SPREAD baseline builds' totals up to {S:.3f}x their median; one process up to {E:.3f}x "
      f"its floor median beyond its build's load")
worst, n, Ls = (0.0, ""), 0, []
for i in range(1, builds + 1):
    run = rows(f"{tmp}/run{i}")
    L = load(run, fmed)
    Ls.append(L)
    ks = [k for k in run if k in fmed]
    tot, ftot = sum(run[k][1] for k in ks), sum(fmed[k] for k in ks)
    print(f"BUILD {i}: load {L:.3f} (CPU over its processes' floor medians)")
    for key, (dropped, ms, cmd) in sorted(run.items()):
        n += 1
        if key not in fmed:
            print(f"BAD build {i}: {key!r} has no floor ({cmd[:60]})")
            continue
        Lo = (tot - ms) / max(1e-9, ftot - fmed[key])     # the others' load
        bound = 1.5 * fmed[key] * max(1.0, Lo) * E + 20
        worst = max(worst, (ms / bound, f"{key} {ms:.0f} ms, bound {bound:.0f}, "
                            f"floor {fmed[key]:.0f}, unsampled {bmed.get(key, 0):.0f}, load {Lo:.2f}"))
        if ms > bound or dropped:
            print(f"BAD build {i}: {key} used {ms:.0f} ms of CPU (median {fmed[key]:.0f} under "
                  f"perf record, {bmed.get(key, 0):.0f} unsampled; bound {bound:.0f} at load {Lo:.2f}), "
                  f"dropped {dropped}")
Lm = statistics.median(Ls) if Ls else 0
print(f"BUILDS median load {Lm:.3f}, bound {1.5 * S:.3f}")
if Lm > 1.5 * S:
    print(f"BAD builds: their median CPU is {Lm:.2f}x their processes' floor medians (bound 1.5 x {S:.3f})")
tb, tf = sum(bmed.values()), sum(fmed.values())
print(f"FLOOR a build's CPU: {tb:.0f} ms unsampled, {tf:.0f} ms under perf record at 10 kHz "
      f"({tf / tb if tb else 0:.2f}x)")
print(f"SUMMARY {n} processes, worst at {worst[0]:.2f} of its bound ({worst[1]})")
EOF
cat "$TMP/verdict"
nbad=$(grep -c '^BAD' "$TMP/verdict")
nproc=$(sed -n 's/^SUMMARY \([0-9]*\) processes.*/\1/p' "$TMP/verdict")
check "processes compared (${nproc:-0}, 25 a build)" [ "${nproc:-0}" -ge $((25 * builds)) ]
check "no runaway: every process within 1.5 x its CPU under perf record at 10 kHz (x load x spread) + 20 ms, the builds' median load within 1.5 x the baselines' spread, 0 dropped ($nbad break it)" \
	[ "${nproc:-0}" -gt 0 -a "$nbad" -eq 0 ]
finish
