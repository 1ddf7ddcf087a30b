#!/bin/bash
# One total per table. A run whose table holds rows that are not samples
# ([kernel]: system CPU; [start-up]: CPU before sampling began, both in
# sample-equivalents) and call stacks: tests/fixtures/sysloop.c, 40% of
# its CPU in system calls, under --stacks.
#  - report --by procedure, image and line, JSON: each event's rows add up
#    to its total, which is its samples plus its equivalents; percent is
#    samples over that total and adds to 100; exactly the [kernel] and
#    [start-up] rows say "sampled": false; the sampled part is the
#    header's merged samples; inclusive_percent is over the same total
#    (a leaf-only procedure shows one figure in both columns).
#  - the text: the line above the table says its 100% and the split, the
#    * marks only the rows that are not samples, cum% ends at 100.00.
#  - report --callers F says F's inclusive share of the same total.
#  - diff: each run's total is its samples alone, and A%, B% add to 100.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
gcc -O1 -g -fno-omit-frame-pointer -o sysloop "$TOP/tests/fixtures/sysloop.c" || { fail "cannot build sysloop"; finish; }
st=$(runst o.txt v.err "$VPROF" run --db db --stacks --event task-clock --freq 500 -- ./sysloop 0.8 40)
check "vprof run --stacks sysloop ($st)" [ "$st" = 0 ]

for by in procedure image line; do
	"$VPROF" report --db db --by $by -n 0 --json >r.json 2>r.err
	"$VPROF" report --db db --by $by -n 0 >r.txt 2>>r.err
	[ "$by" = procedure ] && cat r.txt
	"$PY" - r.json r.txt $by <<'PYEOF' || fail "--by $by: checking the totals failed"
import json, re, sys
j, text, by = json.load(open(sys.argv[1])), open(sys.argv[2]).read(), sys.argv[3]
def ok(cond, what):
    print(("PASS" if cond else "FAIL") + " --by %s: %s" % (by, what))
ok(len(j["events"]) == 1, "one event (%d)" % len(j["events"]))
e = j["events"][0]
rows, T = e["rows"], e["total"]
acct = [r for r in rows if r["image"].startswith(("[kernel:", "[start-up:"))]
ok(sum(r["samples"] for r in rows) == T, "rows add up to the total (%d, %d)" % (sum(r["samples"] for r in rows), T))
ok(e.get("samples", -1) + e.get("equivalents", -1) == T and e.get("equivalents", 0) > 0,
   "total %d = samples %s + equivalents %s (> 0)" % (T, e.get("samples"), e.get("equivalents")))
ok(all(abs(r["percent"] - 100.0 * r["samples"] / T) < 0.01 for r in rows) and abs(sum(r["percent"] for r in rows) - 100) < 0.1,
   "each percent is of that total, and they add to 100 (%.2f)" % sum(r["percent"] for r in rows))
ok(acct and all(r.get("sampled") is False for r in acct) and all(r.get("sampled") is True for r in rows if r not in acct),
   "exactly the [kernel]/[start-up] rows have sampled false (%s)" % [(r["image"], r.get("sampled")) for r in acct])
ok(sum(r["samples"] for r in rows if r.get("sampled")) == e.get("samples") == j["samples"],
   "the sampled rows add up to the header's samples (%d)" % j["samples"])
if by == "procedure":
    inc = [r for r in rows if "inclusive" in r]
    ok(inc and all(abs(r["inclusive_percent"] - 100.0 * r["inclusive"] / T) < 0.01 for r in inc),
       "inclusive_percent is of the same total")
    leaf = [r for r in inc if r["inclusive"] == r["samples"] and r["samples"] > 0 and r.get("sampled")]
    ok(leaf and all(abs(r["percent"] - r["inclusive_percent"]) < 1e-9 for r in leaf),
       "a leaf-only procedure shows one figure as self%% and incl%% (%s)" %
       [(r["procedure"], r["percent"], r["inclusive_percent"]) for r in leaf])
m = re.search(r"^event task-clock: 100% = (\d+): (\d+) samples \+ (\d+) sample-equivalents of CPU not sampled \(rows marked \*\)$", text, re.M)
ok(m and [int(x) for x in m.groups()] == [T, e["samples"], e["equivalents"]],
   "the text says the table's 100%% and its split (%s)" % (m.group(0) if m else "no such line"))
lines = [l for l in text.splitlines() if re.match(r"^ +\d+ +[\d.]+ +[\d.]+ ", l)]
marked = [l for l in lines if re.search(r"\d  \* \S", l)]
ok(len(lines) == len(rows) and len(marked) == len(acct) and all("[kernel" in l or "[start-up" in l or "[no line]" in l for l in marked),
   "the * marks the %d rows that are not samples, and only them" % len(acct))
ok(lines and lines[-1].split()[2] == "100.00", "cum%% ends at 100.00 (%s)" % (lines[-1].split()[2] if lines else "-"))
PYEOF
done

# --callers: F's inclusive share, as the report's incl%.
"$VPROF" report --db db -n 0 --json >r.json
"$VPROF" report --db db --callers syscall >c.txt 2>c.err
cat c.txt
# The two are printed each from the same double: compared as numbers, to
# the text's two decimals (a string compare failed on 24/399 = 6.015%,
# which Python's %.2f of the JSON's rounded value printed as 6.01).
res=$("$PY" - r.json c.txt <<'PYEOF'
import json, re, sys
e = json.load(open(sys.argv[1]))["events"][0]
r = [x for x in e["rows"] if x["procedure"] == "syscall"]
m = re.search(r"\(([\d.]+)% of the event's (\d+)\)", open(sys.argv[2]).read())
if not r or not m:
    print("no row or no line")
else:
    ok = abs(float(m.group(1)) - r[0]["inclusive_percent"]) <= 0.0051 and int(m.group(2)) == e["total"]
    print("%s %s%% of %s, report %.4f%% of %d" % ("ok" if ok else "differ", m.group(1), m.group(2),
                                                r[0]["inclusive_percent"], e["total"]))
PYEOF
)
check "--callers syscall says the report's incl% of the event's total ($res)" [ "${res%% *}" = ok ]

# diff: a run's total is its samples.
"$VPROF" diff --min-count 0 --json db db >d.json 2>/dev/null
"$PY" - d.json r.json <<'PYEOF' || fail "checking the diff totals failed"
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
s, rows = L[0], L[1:]
e = json.load(open(sys.argv[2]))["events"][0]
a = sum(x["share_a"] for x in rows)
print(("PASS" if s["a"]["samples"] == e["samples"] else "FAIL") +
      " diff: A's total is its samples alone (%d; the report's %d samples + %d equivalents)" % (s["a"]["samples"], e["samples"], e["equivalents"]))
print(("PASS" if abs(a - 100) < 0.1 else "FAIL") + " diff: A%% adds to 100 (%.2f)" % a)
PYEOF
finish
