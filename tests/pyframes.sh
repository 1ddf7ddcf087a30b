#!/bin/bash
# Python frames (preload/pyframes.c): a CPython 3.11 profile names the
# user's Python functions and lines, mixed with native frames.
#   - the offsets pyframes.c reads at are those of the interpreter's own
#     headers (python3.11-dev), for Debian's build and, when there is one,
#     the python3 first on PATH;
#   - four pure-Python functions of planted cost: their inclusive shares
#     within 3 points of the truth (each function timed alone, the start-up
#     subtracted; and each function's own clock in the profiled run), their
#     hot lines named, output and status unchanged;
#   - a Python function calling zlib and json: the Python caller above the
#     native callee in folded stacks and in `go tool pprof -top`; a Python
#     thread and a Python child process named too;
#   - --no-python gives the native view (the evaluator), and a program that
#     looks like Python 3.12 gets one message, native frames and its
#     output unchanged.
. "$(dirname "$0")/lib.sh"

PY311=/usr/bin/python3.11
FIX=$TOP/tests/fixtures

# --- the layout, from the headers ---
layout() {   # INCLUDE_DIR LABEL
	if ! cc -I"$1" "$FIX/py311_offsets.c" -o "$TMP/offsets" 2>"$TMP/cc.err"; then
		fail "$2: cannot build the offsets program against $1: $(head -c 300 "$TMP/cc.err")"
		return
	fi
	"$TMP/offsets" | sort >"$TMP/hdr.txt"
	grep -E '^#define [A-Z0-9_]+ +[0-9]+' "$TOP/preload/pyframes.c" | awk '{print $2, $3}' | sort >"$TMP/ours.txt"
	local bad
	bad=$(join -a1 "$TMP/hdr.txt" "$TMP/ours.txt" | awk 'NF != 3 || $2 != $3')
	check "$2: the $(wc -l <"$TMP/hdr.txt") offsets pyframes.c reads are the headers' ($1)${bad:+; differ: $bad}" \
		[ -z "$bad" -a "$(wc -l <"$TMP/hdr.txt")" -ge 30 ]
}
layout /usr/include/python3.11 "Debian's python3.11"
other=$(command -v python3)
if [ -n "$other" ] && [ "$(readlink -f "$other")" != "$(readlink -f "$PY311")" ]; then
	inc=$("$other" -c 'import sys, sysconfig; print(sysconfig.get_config_var("INCLUDEPY") if sys.version_info[:2] == (3, 11) else "")' 2>/dev/null)
	if [ -n "$inc" ] && [ -e "$inc/internal/pycore_frame.h" ]; then
		layout "$inc" "$other ($("$other" -c 'import sys; print(sys.version.split()[0])'))"
	fi
fi

# --- four functions: shares against the truth ---
# The truth: each function timed alone (a process each, start-up
# subtracted, medians of 3: within 3 points of the range its 3 rounds
# spread over, a margin the load's spread sets), and each function's own
# clock in the profiled run (py_four.py's "times"): within 3 points.
ROUNDS=${PYFRAMES_ROUNDS:-50}
plain=$("$PY311" "$FIX/py_four.py" "$ROUNDS"); pst=$?
four() {
	"$PY311" "$FIX/alone_shares.py" 3 "$PY311" "$FIX/py_four.py" "$ROUNDS" >"$TMP/truth.txt"
	rm -rf "$TMP/four"
	"$VPROF" run --db "$TMP/four" --freq 1000 -- "$PY311" "$FIX/py_four.py" "$ROUNDS" all times \
		>"$TMP/four.out" 2>"$TMP/four.err"
	echo $? >"$TMP/four.st"
	"$VPROF" export --db "$TMP/four" --format folded -o "$TMP/four.folded" 2>"$TMP/exp.err"
	"$PY311" "$FIX/frame_shares.py" "$TMP/truth.txt" "$TMP/four.err" "$TMP/four.folded" \
		alpha=alpha beta=beta gamma=gamma delta=delta
}
check_twice "four Python functions' shares within 3 points of the truth" four
st=$(cat "$TMP/four.st")
check "py_four.py: output and exit status unchanged under vprof ($st, plain $pst)" \
	[ "$st" = "$pst" ] && [ "$(cat "$TMP/four.out" | head -1)" = "$plain" ]
"$VPROF" report --db "$TMP/four" --by line --json -n 0 >"$TMP/lines.json" 2>/dev/null
"$PY311" - "$TMP/lines.json" "$FIX/py_four.py" <<'EOF'
import json, sys
names = ["alpha", "beta", "gamma", "delta"]
# Lines: each function's hottest line is its loop body, named FILE:LINE.
src = open(sys.argv[2]).read().split("\n")
body = {}
for i, l in enumerate(src, 1):
    for f in names:
        if l.startswith("def %s(" % f):
            body[f] = i + 3   # "s = 0", "for ...", then the body
rows = json.load(open(sys.argv[1]))["events"][0]["rows"]
hot = {}
for r in rows:
    if r.get("procedure") in names and r["procedure"] not in hot:
        hot[r["procedure"]] = (r.get("file", ""), r.get("line", 0))
good = [f for f in names if f in hot and hot[f][0].endswith("py_four.py") and hot[f][1] in (body[f] - 1, body[f])]
print("%s each function's hottest line is its loop, named FILE:LINE: %s"
      % ("PASS" if len(good) == 4 else "FAIL", ", ".join("%s %s:%s" % (f, *hot.get(f, ("?", "?"))) for f in names)))
EOF

# --- vprof list of a Python function: its lines, self and inclusive ---
"$VPROF" list --db "$TMP/four" delta >"$TMP/list.txt" 2>&1
"$VPROF" list --db "$TMP/four" --json delta >"$TMP/list.json" 2>&1
body=$(grep -n 'x = x \* 1.0000001 + 0.5' "$FIX/py_four.py" | cut -d: -f1)
check "vprof list delta: its loop body (line $body) holds most of its samples, with its source text" \
	"$PY311" -c 'import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
top = max(rows, key=lambda r: r["inclusive"])
sys.exit(not (top["line"] == int(sys.argv[2]) and "1.0000001" in top["source"] and top["inclusive"] >= top["samples"] > 0
              and top["inclusive"] > 0.5 * sum(r["inclusive"] for r in rows)))' "$TMP/list.json" "$body"
check "vprof list main: a caller with no time of its own, its call line inclusive" \
	sh -c "'$VPROF' list --db '$TMP/four' main | grep -q 'samples of its own.*inclusive'"

"$VPROF" html --db "$TMP/four" -o "$TMP/four.html" 2>/dev/null
check "vprof html: delta's listing is its lines with their source (x * 1.0000001), not instructions" \
	"$PY311" -c 'import re, sys
s = open(sys.argv[1]).read()
i = s.find("<h3>delta</h3>")
part = s[i:s.find("</table>", i)]
sys.exit(not (i >= 0 and "1.0000001 + 0.5" in part and "<th>line</th>" in part and "<th>pc</th>" not in part
              and "image bytes unavailable" not in part))' "$TMP/four.html"

# --- deep Python stacks: 64 frames kept by default ---
"$VPROF" run --db "$TMP/deep" -- "$PY311" "$FIX/py_deep.py" 40 3000000 >/dev/null 2>&1
"$VPROF" export --db "$TMP/deep" --format folded -o "$TMP/deep.folded" 2>/dev/null
check "a recursion 40 Python frames deep is whole: <module>, 41 calls of down, then spin" \
	awk '{ n = split($1, f, ";"); d = 0; m = 0; for (i = 1; i <= n; i++) { if (f[i] == "down") d++; if (f[i] == "<module>") m = 1 }
	       if (m && d == 41 && f[n] != "" && $1 ~ /;down;spin(;|$)/) ok = 1 } END { exit !ok }' "$TMP/deep.folded"

# --- mixed stacks, threads and children ---
plain=$("$PY311" "$FIX/py_mixed.py"); pst=$?
"$VPROF" run --db "$TMP/mixed" --freq 1000 -- "$PY311" "$FIX/py_mixed.py" >"$TMP/mixed.out" 2>"$TMP/mixed.err"
st=$?
check "py_mixed.py: output and exit status unchanged ($st, plain $pst)" \
	[ "$st" = "$pst" ] && [ "$(cat "$TMP/mixed.out")" = "$plain" ]
"$VPROF" export --db "$TMP/mixed" --format folded -o "$TMP/mixed.folded" 2>/dev/null
check "folded: the Python caller squeeze above zlib's deflate" \
	grep -qE '(^|;)squeeze;([^;]*;)*deflate' "$TMP/mixed.folded"
check "folded: json's Python encoder above the C encoder it calls" \
	grep -qE '(^|;)encode;dumps;JSONEncoder.encode;JSONEncoder.iterencode;_PyObject_MakeTpCall;[^; ]+' "$TMP/mixed.folded"
check "folded: the Python thread's function (spin_in_thread under its lambda)" \
	grep -qE '<lambda>;spin_in_thread' "$TMP/mixed.folded"
check "folded: the Python child process's function (child_work under main)" \
	grep -qE '(^|;)main;child_work( |;)' "$TMP/mixed.folded"
if command -v go >/dev/null; then
	"$VPROF" export --db "$TMP/mixed" --format pprof -o "$TMP/mixed.pb.gz" 2>/dev/null
	go tool pprof -top -cum "$TMP/mixed.pb.gz" >"$TMP/top.txt" 2>"$TMP/go.err"
	check "go tool pprof -top -cum: squeeze's inclusive time covers zlib's deflate" \
		awk '$NF == "squeeze" { s = $4 + 0 } $NF == "deflate" { d = $4 + 0 } END { exit !(s > 0 && d > 0 && s >= d) }' \
		"$TMP/top.txt"
else
	fail "go is not installed (golang-go): go tool pprof cannot be checked"
fi

# --- the native view, and a Python vprof does not know ---
"$VPROF" run --db "$TMP/native" --no-python -- "$PY311" "$FIX/py_four.py" 5 >/dev/null 2>&1
"$VPROF" report --db "$TMP/native" -n 3 >"$TMP/native.txt" 2>&1
check "--no-python: the evaluator, _PyEval_EvalFrameDefault, and no [python:] image" \
	grep -q _PyEval_EvalFrameDefault "$TMP/native.txt" && ! grep -q '\[python:' "$TMP/native.txt"
cc -O1 -rdynamic -o "$TMP/fakepy" "$FIX/fake_python.c"
"$TMP/fakepy" 30000000 >"$TMP/fake.plain"; pst=$?
"$VPROF" run --db "$TMP/fake" -- "$TMP/fakepy" 30000000 >"$TMP/fake.out" 2>"$TMP/fake.err"; st=$?
n=$(grep -c 'Python 3.12: vprof knows the frames of Python 3.11 only' "$TMP/fake.err")
check "a Python 3.12 look-alike: one message ($n), output and exit status unchanged ($st, plain $pst)" \
	[ "$n" = 1 ] && [ "$st" = "$pst" ] && cmp -s "$TMP/fake.plain" "$TMP/fake.out"
"$VPROF" report --db "$TMP/fake" -n 3 >"$TMP/fake.txt" 2>&1
check "... profiled natively: its _PyEval_EvalFrameDefault on top" \
	awk '/procedure/ { getline; exit !($4 == "_PyEval_EvalFrameDefault") }' "$TMP/fake.txt"
# --- the opcode mix per function (--opcodes) ---
awk '$1 == "#define" && $3 ~ /^[0-9]+$/ && $3 < 256 && $2 != "HAVE_ARGUMENT" && !seen[$3]++ { print $3, $2 }' \
	/usr/include/python3.11/opcode.h | sort -n >"$TMP/op.hdr"
sed -n '/preload_py311_opnames/,/^};/s/^\t\[\([0-9]*\)\] = "\([A-Z_0-9]*\)",$/\1 \2/p' "$TOP/preload/opnames.c" | sort -n >"$TMP/op.ours"
check "the $(wc -l <"$TMP/op.ours") Python 3.11 opcode names are opcode.h's" \
	[ -s "$TMP/op.ours" ] && cmp -s "$TMP/op.hdr" "$TMP/op.ours"
"$VPROF" run --db "$TMP/ops" --opcodes -- "$PY311" "$FIX/py_four.py" 10 >/dev/null 2>&1
"$VPROF" report --db "$TMP/ops" --callees gamma -n 3 >"$TMP/ops.txt" 2>&1
check "--opcodes: gamma's time mostly in its dict store, STORE_SUBSCR_DICT (3.11's specialized form)" \
	awk '$1 == "samples" && $3 == "callee" { getline; ok = $3 == "STORE_SUBSCR_DICT" && $4 == "[python:<opcodes>]" && $2 > 30 } END { exit !ok }' "$TMP/ops.txt"
finish
