#!/bin/bash
# Lua frames (preload/luaframes.c): a Lua 5.4.4 profile (Debian's lua5.4,
# stripped: no luaV_execute symbol) names the script's functions
# (FILE:LINE they begin at) and lines, mixed with native frames.
#   - the offsets luaframes.c reads at are those of Lua 5.4.4's headers
#     (bench/programs/lua-5.4.4, Debian's source);
#   - four Lua functions of planted cost: their inclusive shares within 3
#     points of the truth (each function timed alone, start-up subtracted;
#     and each function's own clock in the profiled run), their hot lines
#     named, output and status unchanged;
#   - a Lua function calling a C function (math.sin): the Lua caller above
#     the native callee in folded stacks;
#   - --no-lua gives the native view, and a program that looks like
#     Lua 5.3 gets one message, native frames and its output unchanged.
. "$(dirname "$0")/lib.sh"

LUA=/usr/bin/lua5.4
FIX=$TOP/tests/fixtures
if ! cc -I"$TOP/bench/programs/lua-5.4.4" "$FIX/lua544_offsets.c" -o "$TMP/offsets" 2>"$TMP/cc.err"; then
	fail "cannot build the offsets program: $(head -c 300 "$TMP/cc.err")"
else
	"$TMP/offsets" | sort >"$TMP/hdr.txt"
	grep -E '^#define [A-Z0-9_]+ +[0-9]+' "$TOP/preload/luaframes.c" | awk '{print $2, $3}' | sort >"$TMP/ours.txt"
	bad=$(join -a1 "$TMP/hdr.txt" "$TMP/ours.txt" | awk 'NF != 3 || $2 != $3')
	check "the $(wc -l <"$TMP/hdr.txt") offsets luaframes.c reads are Lua 5.4.4's headers'${bad:+; differ: $bad}" \
		[ -z "$bad" -a "$(wc -l <"$TMP/hdr.txt")" -ge 30 ]
fi
check "$LUA is Lua 5.4.4" sh -c "'$LUA' -v 2>&1 | grep -q 'Lua 5.4.4'"

ROUNDS=${LUAFRAMES_ROUNDS:-20}
# The truth: each function timed alone (a process each, start-up
# subtracted, medians of 3: within 3 points of the range its 3 rounds
# spread over, a margin the load's spread sets), and each function's own
# clock in the profiled run (lua_four.lua's "times"): within 3 points.
plain=$("$LUA" "$FIX/lua_four.lua" "$ROUNDS"); pst=$?
four() {
	"$PY" "$FIX/alone_shares.py" 3 "$LUA" "$FIX/lua_four.lua" "$ROUNDS" >"$TMP/alone.txt"
	rm -rf "$TMP/four"
	"$VPROF" run --db "$TMP/four" --freq 1000 -- "$LUA" "$FIX/lua_four.lua" "$ROUNDS" all times \
		>"$TMP/four.out" 2>"$TMP/four.err"
	echo $? >"$TMP/four.st"
	"$VPROF" export --db "$TMP/four" --format folded -o "$TMP/four.folded" 2>/dev/null
	local args=() f
	for f in alpha beta gamma delta; do
		args+=("$f=lua_four.lua:$(grep -n "^local function $f(" "$FIX/lua_four.lua" | cut -d: -f1)")
	done
	"$PY" "$FIX/frame_shares.py" "$TMP/alone.txt" "$TMP/four.err" "$TMP/four.folded" "${args[@]}"
}
check_twice "four Lua functions' shares within 3 points of the truth" four
st=$(cat "$TMP/four.st")
check "lua_four.lua: output and exit status unchanged under vprof ($st, plain $pst)" \
	[ "$st" = "$pst" ] && [ "$(cat "$TMP/four.out")" = "$plain" ]
"$VPROF" report --db "$TMP/four" --by line --json -n 0 >"$TMP/lines.json" 2>/dev/null
"$PY" - "$TMP/lines.json" "$FIX/lua_four.lua" <<'PYEOF'
import json, sys
names = ["alpha", "beta", "gamma", "delta"]
start = {}
for i, l in enumerate(open(sys.argv[2]).read().split("\n"), 1):
    for f in names:
        if l.startswith("local function %s(" % f):
            start[f] = i
name = {f: "lua_four.lua:%d" % start[f] for f in names}
truth = name
rows = json.load(open(sys.argv[1]))["events"][0]["rows"]
hot = {}
for r in rows:
    for f in truth:
        if r.get("procedure") == name[f] and f not in hot:
            hot[f] = (r.get("file", ""), r.get("line", 0))
# The loop body: the line after "for".
good = [f for f in truth if f in hot and hot[f][0].endswith("lua_four.lua") and hot[f][1] == start[f] + 3]
print("%s each function's hottest line is its loop body, named FILE:LINE: %s"
      % ("PASS" if len(good) == 4 else "FAIL", ", ".join("%s %s:%s" % (f, *hot.get(f, ("?", "?"))) for f in truth)))
PYEOF
check "folded: delta's Lua frame above the C function it calls (math.sin: libm's sin)" \
	grep -qE 'lua_four.lua:[0-9]+;([^; ]+;)*__sin_fma' "$TMP/four.folded"
check "folded: the Lua frames start under the main chunk (lua_four.lua:main)" \
	grep -qE 'lua_four.lua:main;lua_four.lua:[0-9]+' "$TMP/four.folded"

"$VPROF" run --db "$TMP/native" --no-lua -- "$LUA" "$FIX/lua_four.lua" 3 >/dev/null 2>&1
"$VPROF" report --db "$TMP/native" -n 5 >"$TMP/native.txt" 2>&1
check "--no-lua: no [lua:] image" sh -c "! grep -q '\\[lua:' '$TMP/native.txt'"
cc -O1 -rdynamic -o "$TMP/fakelua" "$FIX/fake_lua.c"
"$TMP/fakelua" 30000000 >"$TMP/fake.plain"; pst=$?
"$VPROF" run --db "$TMP/fake" -- "$TMP/fakelua" 30000000 >"$TMP/fake.out" 2>"$TMP/fake.err"; st=$?
n=$(grep -c 'Lua 5.3.6: vprof knows the frames of Lua 5.4.4 only' "$TMP/fake.err")
check "a Lua 5.3 look-alike: one message ($n), output and exit status unchanged ($st, plain $pst)" \
	[ "$n" = 1 ] && [ "$st" = "$pst" ] && cmp -s "$TMP/fake.plain" "$TMP/fake.out"
# --- the opcode mix per function (--opcodes) ---
grep -o '^  "[A-Z_0-9]*",' "$TOP/bench/programs/lua-5.4.4/lopnames.h" | tr -d ' ",' | awk '{ print NR - 1, $1 }' >"$TMP/op.hdr"
sed -n '/preload_lua544_opnames/,/^};/s/^\t\[\([0-9]*\)\] = "\([A-Z_0-9]*\)",$/\1 \2/p' "$TOP/preload/opnames.c" >"$TMP/op.ours"
check "the $(wc -l <"$TMP/op.ours") Lua 5.4.4 opcode names are lopnames.h's" \
	[ -s "$TMP/op.ours" ] && cmp -s "$TMP/op.hdr" "$TMP/op.ours"
"$VPROF" run --db "$TMP/ops" --opcodes -- "$LUA" "$FIX/lua_four.lua" 5 >/dev/null 2>&1
g=$(grep -n '^local function gamma' "$FIX/lua_four.lua" | cut -d: -f1)
"$VPROF" report --db "$TMP/ops" --callees "lua_four.lua:$g" -n 3 >"$TMP/ops.txt" 2>&1
check "--opcodes: gamma's time mostly in its integer modulo, OP_MODK" \
	awk '$1 == "samples" && $3 == "callee" { getline; ok = $3 == "OP_MODK" && $4 == "[lua:<opcodes>]" && $2 > 30 } END { exit !ok }' "$TMP/ops.txt"
d=$(grep -n '^local function delta' "$FIX/lua_four.lua" | cut -d: -f1)
"$VPROF" report --db "$TMP/ops" --callees "lua_four.lua:$d" -n 3 >"$TMP/opsd.txt" 2>&1
check "--opcodes: delta's time mostly in the call of math.sin, OP_CALL" \
	awk '$1 == "samples" && $3 == "callee" { getline; ok = $3 == "OP_CALL" && $2 > 50 } END { exit !ok }' "$TMP/opsd.txt"
finish
