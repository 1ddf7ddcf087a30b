#!/bin/bash
# A C++ program's profile shows demangled names and
# file:line, and `vprof report --by line` works both on a program built
# with -g and on a Debian binary whose debug file is installed separately
# (libc.so.6, with libc6-dbg's /usr/lib/debug/.build-id/xx/yyyy.debug).
#
# The fixture runs ns::Hot<int>::spin(long) for ~70% of its CPU and
# ns::walk(long, double) for the rest; each loop's body is on a line marked
# in the source. Measure: the two demangled names are the top two rows
# (mangled forms absent), and at least 80% of each procedure's samples lie
# on its loop's two lines (the `for` line and the marked body line).
. "$(dirname "$0")/lib.sh"

src=$TOP/tests/fixtures/cxx_names.cc
g++ -O1 -g -o "$TMP/cxx" "$src" || fail "cannot build the C++ fixture"
"$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/cxx" 30 >/dev/null 2>"$TMP/v.err"
check "vprof run on the C++ fixture ($(head -c 200 "$TMP/v.err"))" [ $? -eq 0 ]
"$VPROF" report --db "$TMP/db" -n 0 >"$TMP/r.txt"
"$VPROF" report --db "$TMP/db" -n 0 --json >"$TMP/r.json"
"$VPROF" report --db "$TMP/db" -n 0 --json --by line >"$TMP/l.json"
"$VPROF" report --db "$TMP/db" -n 5 --by line >"$TMP/l.txt"
head -12 "$TMP/r.txt"; cat "$TMP/l.txt"
if grep -q '_ZN2ns' "$TMP/r.txt"; then fail "mangled names in the text report"; else pass "no mangled names in the text report"; fi
spin=$(grep -n '// HOT-SPIN' "$src" | cut -d: -f1)
walk=$(grep -n '// HOT-WALK' "$src" | cut -d: -f1)

"$PY" - "$TMP/r.json" "$TMP/l.json" "$src" "$spin" "$walk" <<'PYEOF' || fail "checking the C++ report failed"
import json, os, sys
r, l, src = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
spin, walk = int(sys.argv[4]), int(sys.argv[5])
rows = r["events"][0]["rows"]
top = [x["procedure"] for x in rows[:2]]
print("top procedures:", [(x["procedure"], round(x["percent"], 1)) for x in rows[:4]])
want = {"ns::Hot<int>::spin(long)", "ns::walk(long, double)"}
print(("PASS" if set(top) == want else "FAIL") + " top two rows are the demangled %s (got %s)" % (sorted(want), top))
for name, body in (("ns::Hot<int>::spin(long)", spin), ("ns::walk(long, double)", walk)):
    mine = [x for x in l["events"][0]["rows"] if x["procedure"] == name]
    total = sum(x["samples"] for x in mine)
    planted = sum(x["samples"] for x in mine if x["file"] and os.path.samefile(x["file"], src)
                  and x["line"] in (body - 1, body))
    share = planted / total if total else 0
    print(("PASS" if total >= 20 and share >= 0.8 else "FAIL") +
          " %s: %d of %d samples (%.0f%%) on %s:%d-%d (want >= 80%%, >= 20 samples)"
          % (name, planted, total, 100 * share, os.path.basename(src), body - 1, body))
PYEOF

# A Debian binary with separate debug info: python3 copying buffers spends
# its time in libc's memmove, whose lines come from libc6-dbg's debug file.
libc=$(ldd "$PY" | awk '/libc.so.6/ {print $3}')
libc=$(readlink -f "$libc")
id=$(readelf -n "$libc" | awk '/Build ID/ {print $3}')
dbg=/usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug
check "libc.so.6 has no DWARF of its own" [ "$(readelf -S "$libc" | grep -c '\.debug_info')" -eq 0 ]
check "libc6-dbg's debug file for this libc exists ($dbg)" [ -r "$dbg" ]
"$VPROF" run --db "$TMP/db2" -- "$PY" -c '
y = bytes(16 << 20); x = bytearray(16 << 20)
for i in range(400): x[:] = y' >/dev/null 2>"$TMP/v2.err"
check "vprof run on python3 ($(head -c 200 "$TMP/v2.err"))" [ $? -eq 0 ]
"$VPROF" report --db "$TMP/db2" -n 0 --json --by line >"$TMP/l2.json"
"$VPROF" report --db "$TMP/db2" -n 8 --by line
"$PY" - "$TMP/l2.json" <<'PYEOF' || fail "checking the libc lines failed"
import json, sys
rows = json.load(open(sys.argv[1]))["events"][0]["rows"]
libc = [x for x in rows if x["image"].endswith("/libc.so.6")]
total = sum(x["samples"] for x in rows)
n = sum(x["samples"] for x in libc)
lined = sum(x["samples"] for x in libc if x["file"] and x["line"] > 0
            and ("sysdeps/" in x["file"] or "string/" in x["file"]))
print("libc lines:", [(x["file"], x["line"], x["procedure"], x["samples"]) for x in libc[:4]])
print(("PASS" if total and n >= total / 3 else "FAIL") + " libc holds %d of %d samples (want >= 1/3)" % (n, total))
print(("PASS" if n and lined >= 0.9 * n else "FAIL") +
      " %d of %d libc samples have a glibc source file:line (want >= 90%%)" % (lined, n))
PYEOF
finish
