#!/bin/bash
# `vprof export --format pprof` writes a file that
# `go tool pprof -top` (Debian's golang-go) reads, listing the planted
# procedures with the same shares as `vprof report`, and that passes an
# independent decode (`protoc --decode` against reports/proto/profile.proto,
# with no field left unknown); folded lines sum to the samples; JSON holds
# them all; bad input gives one clear message and a non-zero status.
#
# Fixture: tests/fixtures/spin.c (four procedures at ~40/30/20/10%) and
# the C++ fixture (demangled names, source lines). Measure: for each
# procedure at or above 1%, |pprof flat% - vprof percent| <= 1 point (same
# data, so only rounding may differ).
. "$(dirname "$0")/lib.sh"
export HOME=$TMP/home GOCACHE=$TMP/gocache GOPATH=$TMP/gopath
mkdir -p "$HOME"

gcc -O1 -g -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
"$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/spin" 30 >/dev/null 2>"$TMP/v.err"
check "vprof run ($(head -c 200 "$TMP/v.err"))" [ $? -eq 0 ]
"$VPROF" report --db "$TMP/db" --json -n 0 >"$TMP/r.json"

"$VPROF" export --db "$TMP/db" --format pprof -o "$TMP/p.pb.gz" 2>"$TMP/e.err"
check "export --format pprof succeeds ($(cat "$TMP/e.err"))" [ $? -eq 0 ]
check "the pprof file is gzip" gzip -t "$TMP/p.pb.gz"
gzip -dc "$TMP/p.pb.gz" >"$TMP/p.pb"
protoc --decode perftools.profiles.Profile -I "$TOP/reports/proto" profile.proto \
	<"$TMP/p.pb" >"$TMP/p.txt" 2>"$TMP/protoc.err"
check "protoc --decode reads it ($(head -c 200 "$TMP/protoc.err"))" [ $? -eq 0 ]
if grep -Eq '^ *[0-9]+:' "$TMP/p.txt"; then fail "protoc found fields the schema does not name"; else pass "no unknown fields"; fi
check "it has samples, locations, functions and a mapping" \
	[ "$(grep -c '^sample {' "$TMP/p.txt")" -gt 0 -a "$(grep -c '^location {' "$TMP/p.txt")" -gt 0 \
	  -a "$(grep -c '^function {' "$TMP/p.txt")" -gt 0 -a "$(grep -c '^mapping {' "$TMP/p.txt")" -gt 0 ]
grep -q "build_id: [1-9]" "$TMP/p.txt" && pass "the mapping carries a build-id" || fail "no build-id in the mapping"

go tool pprof -top "$TMP/p.pb.gz" >"$TMP/top.txt" 2>"$TMP/go.err"
check "go tool pprof -top reads it ($(head -c 300 "$TMP/go.err"))" [ $? -eq 0 ]
cat "$TMP/top.txt"
"$PY" - "$TMP/top.txt" "$TMP/r.json" <<'PYEOF' || fail "comparing pprof with vprof failed"
import json, re, sys
top = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*[\d.]+\w*\s+([\d.]+)%\s+[\d.]+%\s+[\d.]+\w*\s+[\d.]+%\s+(.+?)\s*$", line)
    if m:
        top[m.group(2)] = float(m.group(1))
rows = json.load(open(sys.argv[2]))["events"][0]["rows"]
v = {r["procedure"]: r["percent"] for r in rows}
planted = ["alpha", "beta", "gamma_", "delta"]
print("pprof:", top); print("vprof:", v)
for p in planted:
    ok = p in top and p in v and abs(top[p] - v[p]) <= 1
    print(("PASS" if ok else "FAIL") + " %s: pprof %s%%, vprof %s%% (limit 1 point)" % (p, top.get(p), v.get(p)))
big = [n for n in set(top) | set(v) if top.get(n, 0) >= 1 or v.get(n, 0) >= 1]
worst = max(abs(top.get(n, 0) - v.get(n, 0)) for n in big)
print(("PASS" if worst <= 1 else "FAIL") + " every procedure above 1%% agrees within 1 point (worst %.2f)" % worst)
PYEOF
unit=$(grep -m1 '^Type:' "$TMP/top.txt")
check "pprof sees CPU time ($unit)" [ "$unit" = "Type: cpu" ]

# The C++ fixture: demangled names and source lines reach pprof.
g++ -O1 -g -o "$TMP/cxx" "$TOP/tests/fixtures/cxx_names.cc" || fail "cannot build the C++ fixture"
"$VPROF" run --db "$TMP/dbc" -- "$TMP/cxx" 20 >/dev/null 2>&1
"$VPROF" export --db "$TMP/dbc" --format pprof -o "$TMP/c.pb.gz"
go tool pprof -top -lines "$TMP/c.pb.gz" >"$TMP/ctop.txt" 2>&1
tail -4 "$TMP/ctop.txt"
check "pprof shows the demangled ns::Hot<int>::spin(long) at cxx_names.cc lines" \
	grep -q 'ns::Hot<int>::spin(long) .*cxx_names.cc:[0-9]' "$TMP/ctop.txt"

# Folded: one line per procedure, counts summing to the samples.
"$VPROF" export --db "$TMP/db" --format folded >"$TMP/f.txt"
check "export --format folded succeeds" [ $? -eq 0 ]
cat "$TMP/f.txt"
total=$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["events"][0]["total"])' "$TMP/r.json")
sum=$(awk '{ s += $NF } END { print s + 0 }' "$TMP/f.txt")
check "folded counts sum to the samples ($sum of $total)" [ "$sum" = "$total" ]
check "folded lines are image;procedure COUNT" grep -qx 'spin;alpha [0-9]*' "$TMP/f.txt"
check "folded has no malformed line" [ "$(grep -cvE '^[^ ;]+;[^;]+ [0-9]+$' "$TMP/f.txt")" -eq 0 ]

# JSON: the whole model, counts per PC summing to the total.
"$VPROF" export --db "$TMP/db" --format json -o "$TMP/x.json"
check "export --format json succeeds" [ $? -eq 0 ]
"$PY" - "$TMP/x.json" "$total" <<'PYEOF' || fail "the JSON export does not parse"
import json, sys
x = json.load(open(sys.argv[1])); ev = x["events"][0]
s = sum(p["count"] for p in ev["pcs"])
ok = s == ev["total"] == int(sys.argv[2]) and all(p["file"] for p in ev["pcs"] if p["procedure"] == "alpha")
print(("PASS" if ok else "FAIL") + " JSON: %d PCs, counts sum to %d (report: %s), alpha's PCs have files" % (len(ev["pcs"]), s, sys.argv[2]))
# Image files; [kernel:EXE] and [jit:EXE] are no files and have no build-id.
files = [im for im in x["images"] if im["path"].startswith("/")]
print(("PASS" if files and all(im["build_id"] for im in files) else "FAIL") + " JSON images carry build-ids")
PYEOF

# Bad input: one message, non-zero status, no file left behind.
# Value hotlists in the pprof file: a third sample type, value_samples,
# one sample per hotlist entry at its instruction, labelled value_kind,
# value and site. pprof reads the planted invariant back with the
# estimate `vprof list` has for it.
cc -O2 -g -o "$TMP/inv" "$TOP/tests/fixtures/values_inv.c"
"$VPROF" run --db "$TMP/vdb" --values --interp-every 1 --interp-len 8 --freq 2000 -- "$TMP/inv" 4000000 \
	>/dev/null 2>"$TMP/vrun.err"
"$VPROF" export --db "$TMP/vdb" --format pprof -o "$TMP/v.pb.gz"
"$VPROF" list scale --db "$TMP/vdb" --json >"$TMP/vlist.json"
go tool pprof -raw "$TMP/v.pb.gz" >"$TMP/v.raw" 2>"$TMP/v.rawerr"
check "go tool pprof -raw reads the value samples ($(head -c 200 "$TMP/v.rawerr"))" \
	grep -q 'value_samples/count' "$TMP/v.raw"
"$PY" - "$TMP/v.raw" "$TMP/vlist.json" <<'PYEOF' >"$TMP/vcmp"
import json, re, sys
raw = open(sys.argv[1]).read().split("\n")
# the imul's src2@site entry of value 3 from vprof list
want = None
for l in open(sys.argv[2]):
    r = json.loads(l) if l.strip() else {}
    if r.get("instruction", "").startswith("imul"):
        for v in r["values"]:
            if v["kind"] == "src2@site":
                t = [e for e in v["top"] if e["value"] == 3]
                if t:
                    want = (int(r["pc"], 16), t[0]["estimate"], t[0]["site"])
# locations: id -> address
locs = {}
at = raw.index("Locations") if "Locations" in raw else len(raw)
for l in raw[at + 1:]:
    m = re.match(r"\s*(\d+): (0x[0-9a-f]+) ", l)
    if m:
        locs[int(m.group(1))] = int(m.group(2), 16)
# samples: "  0   0   679: 39" then a label line
got = None
for i, l in enumerate(raw[:at]):
    m = re.match(r"\s*0\s+0\s+(\d+): (\d+)\s*$", l)
    if m and i + 1 < at and "value_kind:[src2@site]" in raw[i + 1] and "value:[3 (0x3)]" in raw[i + 1] \
            and want and locs.get(int(m.group(2))) == want[0] and want[2] in raw[i + 1]:
        got = int(m.group(1))
print("none" if not want else "%d %.1f %s" % (got if got is not None else -1, want[1], want[2]))
PYEOF
read -r pgot lwant lsite <"$TMP/vcmp"
check "pprof has the imul's 'src2@site = 3 from $lsite' at vprof list's estimate ($pgot against $lwant)" \
	"$PY" -c 'import sys; g, w = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (g > 0 and abs(g - w) <= 1))' \
	"${pgot:--1}" "${lwant:-0}"
go tool pprof -top "$TMP/v.pb.gz" >"$TMP/vtop" 2>&1
first=$(awk 'f { print; exit } /flat%/ { f = 1 }' "$TMP/vtop")
check "the value samples leave the time alone: pprof -top shows scale first ($(echo "$first" | tr -s ' '))" \
	sh -c "echo '$first' | grep -q ' scale$'"

bad() {   # bad WHAT STATUS ARGS...
	local what=$1 want=$2; shift 2
	"$VPROF" export "$@" >"$TMP/out" 2>"$TMP/err"; rc=$?
	check "$what: status $want (got $rc)" [ $rc -eq "$want" ]
	check "$what: one message ($(cat "$TMP/err"))" [ "$(wc -l <"$TMP/err")" -eq 1 ]
}
bad "no database" 1 --db "$TMP/nonexistent" --format pprof -o "$TMP/n.pb.gz"
check "no database: no file written" [ ! -e "$TMP/n.pb.gz" ]
bad "unknown format" 2 --db "$TMP/db" --format svg
bad "no format" 2 --db "$TMP/db"
bad "pprof to a terminal" 2 --db "$TMP/db" --format pprof
bad "unwritable output" 1 --db "$TMP/db" --format pprof -o "$TMP/nodir/p.pb.gz"
"$VPROF" epoch --db "$TMP/db" new >/dev/null
bad "empty epoch" 1 --db "$TMP/db" --format folded
bad "bad epoch" 2 --db "$TMP/db" --format folded --epoch x
finish
