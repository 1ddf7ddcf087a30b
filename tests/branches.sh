#!/bin/bash
# Branch outcomes from interpreted windows (`vprof run --branches`,
# `vprof branches`), on tests/fixtures/branches.c: planted shares recovered
# within 3 points by each branch's source line:
#  - a branch one way in 90% of executions (BRANCH90), one at 50% (BRANCH50);
#  - the loop branch of a 3-trip loop (LOOP3: on 2 of 3 ways round, the
#    loop goes on) and of a 100-trip loop (LOOP100: 99 of 100);
# the program's output and exit status unchanged; --branches alone records
# no operand values, and with --values both kinds are kept; vprof list's
# executions per call of the loops' functions within 10%. Then the loop
# to a compiler on a clang build: vprof export --format autofdo-text,
# create_llvm_prof, llvm-profdata show --sample, the planted shares in the
# profile's call counts, and clang -fprofile-sample-use.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/fixtures/branches.c
cc -O2 -g -o "$TMP/branches" "$SRC" || { fail "build branches"; finish; }
"$TMP/branches" 2700000 >"$TMP/plain.out"

# measure DB: run the fixture (~3 s of CPU) at 4 kHz with --branches and print
# the planted branches' shares against the truth; succeed when every one
# is within 3 points.
measure() {
	local db=$1
	rm -rf "$db"
	st=$(runst "$TMP/b.out" "$TMP/b.err" "$VPROF" run --db "$db" --branches --freq 4000 -- "$TMP/branches" 2700000)
	[ "$st" = 0 ] || { echo "exit status $st" >&2; cat "$TMP/b.err" >&2; echo "run failed"; return 1; }
	"$VPROF" branches --db "$db" -n 0 >&2
	"$VPROF" branches --db "$db" -n 0 --json >"$TMP/br.json"
	"$PY" - "$TMP/br.json" "$SRC" <<'PYEOF'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
lines = {}
for i, l in enumerate(open(sys.argv[2]), 1):
    for m in ("BRANCH90", "BRANCH50", "LOOP3", "LOOP100"):
        if "/* %s */" % m in l:
            lines[m] = i
# truth: the share of the majority way (50% either way for BRANCH50)
truth = {"BRANCH90": 0.90, "BRANCH50": 0.50, "LOOP3": 2 / 3, "LOOP100": 0.99}
out, ok = [], True
for m, line in sorted(lines.items(), key=lambda kv: kv[1]):
    here = [r for r in rows if (r.get("source") or "").endswith("branches.c:%d" % line)]
    if not here:
        out.append("%s: no branch at line %d" % (m, line)); ok = False; continue
    r = max(here, key=lambda r: r["outcomes"])   # a loop's own branch, not its entry test
    p = r["taken_share"]
    got = abs(p - 0.5) + 0.5 if m != "BRANCH50" else p
    good = abs(got - truth[m]) <= 0.03
    ok &= good
    out.append("%s %.1f%% (truth %.1f%%, %d outcomes)%s" % (m, 100 * got, 100 * truth[m], r["outcomes"], "" if good else " OFF"))
print("; ".join(out))
sys.exit(0 if ok and len(lines) == 4 else 1)
PYEOF
}
check_twice "planted branch shares within 3 points" measure "$TMP/db"
# Executions per call of a function (vprof list, from the same records):
# gcc keeps the loops rolled, so a loop body runs its trip count a call.
pc=$(for f in trip3 trip100; do
	"$VPROF" list --db "$TMP/db" "$f" --json | "$PY" -c 'import json, sys
print(max([json.loads(l).get("per_call", 0) for l in sys.stdin if l.startswith("{")] + [0]))'
done | tr '\n' ' ')
read -r pc3 pc100 <<<"$pc"
check "vprof list: the loop bodies run ${pc3:-?} times a call of trip3() (3) and ${pc100:-?} of trip100() (100), within 10%" \
	"$PY" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (abs(a - 3) <= .3 and abs(b - 100) <= 10))" ${pc:-0 0}
# vprof report --by block on the same records: the planted functions'
# blocks in their exact proportions (per 64 calls of skewed(): 64 of
# even() and trip3(), 192 of trip3's loop body, 400 of trip100's, 128 of
# next(), 89.6 of left() and 38.4 of right()), each within 10% and within
# the 95% intervals the report gives; t/insn averages 1 over the blocks
# weighted by their instructions executed, as its definition says.
"$VPROF" report --db "$TMP/db" --by block -n 12 >&2
"$VPROF" report --db "$TMP/db" --by block -n 0 --json >"$TMP/blocks.json"
blk=$("$PY" - "$TMP/blocks.json" <<'PYEOF'
import json, math, sys
d = json.load(open(sys.argv[1]))
b = d["blocks"]
def entry(p):
    r = [x for x in b if x["procedure"] == p and x["offset"] == 0]
    return r[0] if r else None
def body(p):   # the loop body: the procedure's most executed block
    r = [x for x in b if x["procedure"] == p]
    return max(r, key=lambda x: x["executions"]) if r else None
base = entry("skewed")
want = {("entry", "even"): 1, ("body", "trip3"): 3, ("body", "trip100"): 6.25, ("entry", "next"): 2,
        ("entry", "left"): 1.4, ("entry", "right"): 0.6}
out, ok = [], base is not None and base.get("windows")
for (how, p), truth in want.items():
    x = (entry if how == "entry" else body)(p)
    if not x or not base or not x.get("windows"):
        out.append("%s: no block" % p); ok = False; continue
    ratio = x["executions"] / base["executions"]
    h = math.hypot(x["executions_hi"] / x["executions"] - 1, base["executions_hi"] / base["executions"] - 1)
    good = abs(ratio / truth - 1) <= 0.10 and abs(ratio / truth - 1) <= h
    ok = ok and good
    out.append("%s %.3f (truth %g, 95%% +-%.0f%%)%s" % (p, ratio, truth, 100 * h, "" if good else " OFF"))
w = [x for x in b if x["executions"] > 0 and x.get("time_per_insn") is not None]
avg = sum(x["time_per_insn"] * x["executions"] * x["instructions"] for x in w) / sum(x["executions"] * x["instructions"] for x in w)
ok = ok and abs(avg - 1) < 1e-3 and all(k in d for k in ("db", "epoch", "event", "samples", "procedures"))
out.append("t/insn average %.4f" % avg)
print("; ".join(out))
sys.exit(0 if ok else 1)
PYEOF
)
check "report --by block: executions relative to skewed()'s entry within 10% and their 95% intervals: $blk" [ $? = 0 ]
"$VPROF" report --db "$TMP/db" --by block --callers main >/dev/null 2>"$TMP/bcall.err"; st=$?
check "report --by block with --callers is one message and status 2" [ "$st" = 2 -a "$(wc -l <"$TMP/bcall.err")" -le 2 ]
same=no; cmp -s "$TMP/plain.out" "$TMP/b.out" && same=yes
check "output (a checksum of the work) unchanged under --branches, exit status 0" [ "$same" = yes ]

"$VPROF" invariants --db "$TMP/db" --all --json >"$TMP/inv.json"
nops=$("$PY" -c 'import json, sys; print(sum(1 for l in open(sys.argv[1]) if l.startswith("{") and "value" in json.loads(l)))' "$TMP/inv.json")
check "--branches alone records no operand values ($nops rows in vprof invariants --all)" [ "$nops" = 0 ]

rm -rf "$TMP/db2"
"$VPROF" run --db "$TMP/db2" --values --branches --freq 1000 -- "$TMP/branches" 900000 >/dev/null 2>&1
"$VPROF" invariants --db "$TMP/db2" --all --json >"$TMP/inv2.json"
nops=$("$PY" -c 'import json, sys; print(sum(1 for l in open(sys.argv[1]) if l.startswith("{") and "value" in json.loads(l)))' "$TMP/inv2.json")
nbr=$("$VPROF" branches --db "$TMP/db2" --json | grep -c '^{')
check "--values --branches keeps both ($nops value rows, $nbr branches)" [ "$nops" -gt 0 -a "$nbr" -gt 0 ]

rm -rf "$TMP/db3"
"$VPROF" run --db "$TMP/db3" --values --freq 1000 -- "$TMP/branches" 450000 >/dev/null 2>&1
"$VPROF" branches --db "$TMP/db3" >"$TMP/none.txt"
check "--values alone records no branch outcomes, and says how to get them" grep -q 'vprof run --branches records them' "$TMP/none.txt"

"$VPROF" branches --db "$TMP/db" --min 0 >"$TMP/bad.txt" 2>&1; st=$?
check "a bad --min is one message and status 2" [ "$st" = 2 -a "$(wc -l <"$TMP/bad.txt")" -le 2 ]

# The branch records out to a compiler: vprof export --format autofdo-text,
# AutoFDO's create_llvm_prof (Debian's 0.19; it reads DWARF 4, not clang
# 14's default 5) writes the LLVM sample profile, llvm-profdata reads it,
# and clang builds with it. The 90/10 and 50/50 branches choose between
# calls to left() and right(): the profile's call counts give their shares.
clang -O2 -gdwarf-4 -fdebug-info-for-profiling -o "$TMP/bcl" "$SRC" || { fail "clang build of branches.c"; finish; }
rm -rf "$TMP/dbc"
"$VPROF" run --db "$TMP/dbc" --branches --freq 4000 -- "$TMP/bcl" 2700000 >/dev/null 2>&1
"$VPROF" export --db "$TMP/dbc" --format autofdo-text --binary "$TMP/bcl" -o "$TMP/b.afdo"
read -r nr ns nb <<<"$("$PY" - "$TMP/b.afdo" <<'PYEOF'
import re, sys
lines = open(sys.argv[1]).read().split("\n")
pats = [r"[0-9a-f]+-[0-9a-f]+:\d+", r"[0-9a-f]+:\d+", r"[0-9a-f]+->[0-9a-f]+:\d+"]
i, out = 0, []
for p in pats:
    n = int(lines[i]); i += 1
    bad = [l for l in lines[i:i + n] if not re.fullmatch(p, l)]
    out.append(n if not bad else -1); i += n
print(*out)
PYEOF
)"
check "export --format autofdo-text: ranges ($nr), samples ($ns), branches ($nb), each line well formed" \
	[ "${nr:--1}" -gt 0 -a "${ns:--1}" -gt 0 -a "${nb:--1}" -gt 0 ]
create_llvm_prof --profiler=text --binary="$TMP/bcl" --profile="$TMP/b.afdo" --format=text \
	--out="$TMP/b.prof" 2>"$TMP/cp.err"
check "create_llvm_prof --profiler=text reads it and writes a profile naming the planted functions" \
	sh -c "grep -q '^skewed:' '$TMP/b.prof' && grep -q '^trip100:' '$TMP/b.prof'"
llvm-profdata show --sample "$TMP/b.prof" >"$TMP/show.txt" 2>&1
check "llvm-profdata show --sample reads the profile" [ $? = 0 -a -s "$TMP/show.txt" ]
shares=$("$PY" - "$TMP/b.prof" <<'PYEOF'
import re, sys
fn, calls = None, {}
for l in open(sys.argv[1], errors="replace"):
    if not l.startswith(" "):
        fn = l.split(":")[0]; continue
    for callee, n in re.findall(r"(left|right):(\d+)", l):
        calls[(fn, callee)] = calls.get((fn, callee), 0) + int(n)
def share(f):
    l, r = calls.get((f, "left"), 0), calls.get((f, "right"), 0)
    return 100.0 * l / (l + r) if l + r else -1
print("%.1f %.1f" % (share("skewed"), share("even")))
PYEOF
)
read -r s90 s50 <<<"$shares"
check "the profile's call counts give the planted shares within 3 points: skewed() calls left() in $s90% (90), even() in $s50% (50)" \
	"$PY" -c "import sys; a, b = map(float, sys.argv[1:]); sys.exit(not (abs(a - 90) <= 3 and abs(b - 50) <= 3))" $shares
clang -O2 -gdwarf-4 -fdebug-info-for-profiling -fprofile-sample-use="$TMP/b.prof" -o "$TMP/bpgo" "$SRC" 2>"$TMP/pgo.err"
"$TMP/bpgo" 2700000 >"$TMP/pgo.out" 2>&1
check "clang -fprofile-sample-use builds with it, and the build prints what the plain one does" cmp -s "$TMP/pgo.out" "$TMP/plain.out"

# vprof's own LLVM sample profile, from the binary's DWARF (no
# create_llvm_prof): read by llvm-profdata, the same call shares, the
# loops' lines at the counts create_llvm_prof gives from the same records
# (duplication factors of unrolled code included), and a clang build.
"$VPROF" export --db "$TMP/dbc" --format llvm-sample --binary "$TMP/bcl" -o "$TMP/v.prof"
llvm-profdata show --sample "$TMP/v.prof" >"$TMP/vshow.txt" 2>&1
check "export --format llvm-sample: llvm-profdata show --sample reads it" [ $? = 0 -a -s "$TMP/vshow.txt" ]
llvm-profdata merge --sample "$TMP/v.prof" -o "$TMP/v.profdata" 2>"$TMP/vmerge.err"
check "llvm-profdata merge --sample turns it into the binary form" [ -s "$TMP/v.profdata" ]
cmpout=$("$PY" - "$TMP/v.prof" "$TMP/b.prof" <<'PYEOF'
import re, sys
def load(path):
    fn, calls, body = None, {}, {}
    for l in open(path, errors="replace"):
        if not l.startswith(" "):
            fn = l.split(":")[0]; continue
        if l.startswith("  "):
            continue
        m = re.match(r" (\d+(?:\.\d+)?): (\d+)", l)
        if m:
            body[(fn, m.group(1))] = max(body.get((fn, m.group(1)), 0), int(m.group(2)))
        for callee, n in re.findall(r"(left|right):(\d+)", l):
            calls[(fn, callee)] = calls.get((fn, callee), 0) + int(n)
    return calls, body
vc, vb = load(sys.argv[1])
ac, ab = load(sys.argv[2])
def share(c, f):
    l, r = c.get((f, "left"), 0), c.get((f, "right"), 0)
    return 100.0 * l / (l + r) if l + r else -1
s90, s50 = share(vc, "skewed"), share(vc, "even")
# the lines both profiles give for the loops and the branchy functions
keys = [k for k in ab if k[0] in ("trip3", "trip100", "skewed", "even") and k in vb and ab[k] >= 100]
off = [k for k in keys if abs(vb[k] - ab[k]) > 0.01 * ab[k]]
# executions: trip100's body line per call of it (the body's line, 4, with
# whatever discriminator clang gives it: 100), and main's calls of
# skewed() per call of trip100() (16)
trips = max([n for (f, l), n in vb.items() if f == "trip100" and l.split(".")[0] == "4"] + [0]) / \
    max(1, vb.get(("trip100", "2"), 0))
per = vb.get(("main", "5"), 0) / max(1, vb.get(("main", "9"), 0))
ok = abs(s90 - 90) <= 3 and abs(s50 - 50) <= 3 and len(keys) >= 8 and not off
ok = ok and abs(trips - 100) <= 10 and abs(per - 16) <= 1.6
print("left() from skewed %.1f%%, from even %.1f%%; trip100's body %.1f times a call (100), skewed() %.1f calls a trip100() (16); %d lines as create_llvm_prof has them, %d differ%s" % (
    s90, s50, trips, per, len(keys) - len(off), len(off), (": " + ", ".join("%s %s %d/%d" % (k[0], k[1], vb[k], ab[k]) for k in off[:4])) if off else ""))
sys.exit(0 if ok else 1)
PYEOF
)
check "llvm-sample: the planted call shares within 3 points, execution counts within 10%, and the lines create_llvm_prof counts alike: $cmpout" [ $? = 0 ]
clang -O2 -gdwarf-4 -fdebug-info-for-profiling -fprofile-sample-use="$TMP/v.prof" -o "$TMP/vpgo" "$SRC" 2>"$TMP/vpgo.err"
"$TMP/vpgo" 2700000 >"$TMP/vpgo.out" 2>&1
check "clang -fprofile-sample-use builds with vprof's own profile, and the build prints what the plain one does" \
	cmp -s "$TMP/vpgo.out" "$TMP/plain.out"
"$VPROF" export --db "$TMP/dbc" --format llvm-sample -o "$TMP/x.prof" 2>"$TMP/nobin.err"; st=$?
check "llvm-sample without --binary is one message and status 2" [ "$st" = 2 -a "$(wc -l <"$TMP/nobin.err")" -le 2 ]

# Inlined code under its call site: next() inlined into skewed() and even().
clang -O2 -g -fdebug-info-for-profiling -DINLINE_NEXT -o "$TMP/binl" "$SRC" || { fail "clang build with next() inlined"; finish; }
rm -rf "$TMP/dbi"
"$VPROF" run --db "$TMP/dbi" --branches --freq 1000 -- "$TMP/binl" 900000 >/dev/null 2>&1
"$VPROF" export --db "$TMP/dbi" --format llvm-sample --binary "$TMP/binl" -o "$TMP/i.prof"
llvm-profdata show --sample --function=skewed "$TMP/i.prof" >"$TMP/ishow.txt" 2>&1
check "llvm-sample: next() inlined into skewed() is its inlined callee there (DWARF 5), read by llvm-profdata" \
	grep -q 'inlined callee: next' "$TMP/ishow.txt"

# Indirect-call targets for clang's promotion: value sampling's targets of a
# virtual call (tests/fixtures/inv_virt.cc: Circle in 97% of sum_circles'
# calls) become the call line's targets, by their mangled names.
clang++ -O2 -g -fdebug-info-for-profiling -o "$TMP/virt" "$TOP/tests/fixtures/inv_virt.cc" || { fail "clang++ build of inv_virt.cc"; finish; }
rm -rf "$TMP/dbv"
"$VPROF" run --db "$TMP/dbv" --values --freq 2000 -- "$TMP/virt" >/dev/null 2>&1
"$VPROF" export --db "$TMP/dbv" --format llvm-sample --binary "$TMP/virt" -o "$TMP/virt.prof"
top=$("$PY" - "$TMP/virt.prof" <<'PYEOF'
import re, sys
fn, best = None, None
for l in open(sys.argv[1]):
    if not l.startswith(" "):
        fn = l.split(":")[0]; continue
    if fn.startswith("_Z11sum_circles"):
        t = re.findall(r"(_Z\w+):(\d+)", l.split(":", 1)[1])
        if len(t) >= 2:
            c = sorted(t, key=lambda x: -int(x[1]))
            best = "%s %.0f%%" % (c[0][0], 100.0 * int(c[0][1]) / sum(int(n) for _, n in c))
print(best or "none")
PYEOF
)
check "llvm-sample: sum_circles()'s virtual call goes to $top (Circle::area 97%), from value sampling's targets" \
	"$PY" -c "import sys; n, p = sys.argv[1], float(sys.argv[2].rstrip('%')); sys.exit(not (n == '_ZNK6Circle4areaEv' and p >= 85))" $top
finish
