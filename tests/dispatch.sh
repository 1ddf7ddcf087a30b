#!/bin/bash
# Interpreter dispatch histogram: Debian's lua5.4 dispatches
# every bytecode with a computed goto, so the targets of its indirect
# jumps, as value sampling captures them, are its dynamic opcode mix.
#
# tests/fixtures/dispatch.lua runs a branch-free loop with a skewed mix.
# Truth, twice over: the loop body read from `luac5.4 -l -l` (MMBIN*
# excluded: the integer fast path skips them), and an exact count of the
# real binary's indirect-jump targets by ptrace breakpoints
# (tests/fixtures/dispatch_count.c) at two loop lengths, whose difference
# must be exactly the static mix. Then lua5.4 runs under vprof (once per
# capture in CAPTURES), `vprof targets` sums the target hotlists over the
# jump sites, and scripts/lua_opcodes.py names the targets (the binary's
# own disptab):
# every opcode with at least 5% true share must come out within TOL
# points, the top three in order, and lua's output and status unchanged.
. "$(dirname "$0")/lib.sh"

# How the targets are captured, each checked the same way: the `indirect`
# customization module (targets only: the "indirect-branch module"),
# and default value sampling, which keeps them among all its hotlists.
CAPTURES=("--module indirect" "--values")
# --interp-len 1024: a window spans ~28 dispatches, more than one loop
# iteration (18), so what a window sees hardly depends on where the sample
# landed; at 4 (the default) a dispatch is seen only when a sample lands
# in the 4 instructions before it, i.e. in proportion to the time spent
# there, and the mix is off by up to 15 points (README, "Interpreter
# dispatch histogram"). --skew-skip 64 moves each window off the landing
# instruction. --freq 250: ~400 windows are plenty when each sees whole
# iterations, and, with --values, fewer windows in lua's start-up code
# leave the spool's shared value area room (at 1000 Hz, 8 of 35 runs lost
# dispatch hotlists there; see the report line printed below on failure).
SAMPLING="--interp-len 1024 --interp-every 1 --skew-skip 64 --freq 250"
N=60000000          # loop iterations under vprof: ~1.6 s of lua5.4 here
TOL=2.0             # points of share, for each opcode with >= 5% true share
LUA=/usr/bin/lua5.4
LUAC=/usr/bin/luac5.4
FIX=$TOP/tests/fixtures/dispatch.lua

if [ ! -x "$LUA" -o ! -x "$LUAC" ]; then
	fail "lua5.4 and luac5.4 installed (scripts/deps.sh installs them)"
	finish
fi

# Opcode names of the handler addresses, from the binaries themselves.
"$PY" "$TOP/scripts/lua_opcodes.py" "$LUA" "$LUAC" >"$TMP/ops" 2>"$TMP/ops.err"
st=$?
head -1 "$TMP/ops"; cat "$TMP/ops.err"
nops=$(grep -vc '^#' "$TMP/ops")
check "lua5.4's dispatch table found and named ($nops opcodes, status $st)" [ "$st" = 0 -a "$nops" -ge 80 ]

# Truth 1: the hot loop's body as luac compiles it.
"$LUAC" -l -l -p "$FIX" >"$TMP/luac.txt"
"$PY" - "$TMP/luac.txt" >"$TMP/static" <<'EOF'
import re, sys
ins = {}
for l in open(sys.argv[1]):
    m = re.match(r"\s*(\d+)\s+\[\d+\]\s+(\w+)\s*(.*)", l)
    if m:
        ins[int(m.group(1))] = (m.group(2), m.group(3))
    elif l.startswith("constants") and ins:
        break                                   # the main chunk only
loops = [(at, int(re.search(r"to (\d+)", a).group(1))) for at, (op, a) in ins.items() if op == "FORLOOP"]
at, start = max(loops, key=lambda x: x[0] - x[1])
body = [ins[k][0] for k in range(start, at + 1)]
jumps = set("JMP TEST TESTSET EQ LT LE EQK EQI LTI LEI GTI GEI LFALSESKIP CALL TAILCALL RETURN "
            "RETURN0 RETURN1 FORPREP FORLOOP TFORPREP TFORCALL TFORLOOP CLOSE TBC".split())
branchy = [o for o in body[:-1] if o in jumps]
count = {}
for o in body:
    if not o.startswith("MMBIN"):
        count[o] = count.get(o, 0) + 1
print("branches", ",".join(branchy) or "none")
for o, c in sorted(count.items(), key=lambda x: -x[1]):
    print(o, c)
EOF
sed -n '2,$p' "$TMP/static" | tr '\n' ' '; echo
check "the hot loop has no branch, so its static mix is its dynamic one ($(head -1 "$TMP/static"))" \
	grep -qx "branches none" "$TMP/static"

# Truth 2: exact counts of the real binary's indirect-jump targets.
cc -O2 -o "$TMP/dispatch_count" "$TOP/tests/fixtures/dispatch_count.c"
objdump -d --no-show-raw-insn -j .text "$LUA" |
	awk '$2 == "jmp" && $3 ~ /^\*/ { sub(":", "", $1); print "0x" $1 }' >"$TMP/sites"
n1=1000 n2=3000
for n in $n1 $n2; do
	"$LUA" "$FIX" $n >"$TMP/plain.$n"
	"$TMP/dispatch_count" "$TMP/sites" "$TMP/count.$n" -- "$LUA" "$FIX" $n >"$TMP/traced.$n"
	st=$?
	same=no; cmp -s "$TMP/plain.$n" "$TMP/traced.$n" && same=yes
	check "ptrace count of $(wc -l <"$TMP/sites") jump sites, $n iterations: status $st, same output ($same)" \
		[ "$st" = 0 -a "$same" = yes ]
done
"$PY" - "$TMP/ops" "$TMP/count.$n1" "$TMP/count.$n2" $n1 $n2 "$TMP/static" >"$TMP/truth" <<'EOF'
import sys
ops = {int(a, 16): n for a, n in (l.split() for l in open(sys.argv[1]) if not l.startswith("#"))}
def load(p):
    c = {}
    for l in open(p):
        if l.startswith("#") or l.startswith("abs:"):
            continue
        a, k = l.split()
        n = ops.get(int(a, 16))
        if n:
            c[n] = c.get(n, 0) + int(k)
    return c
c1, c2, n1, n2 = load(sys.argv[2]), load(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
static = {o: int(c) for o, c in (l.split() for l in open(sys.argv[6]) if not l.startswith("branches"))}
# per iteration, and what runs once (start-up, the first loop, print)
for o in sorted(set(c1) | set(c2)):
    d = c2.get(o, 0) - c1.get(o, 0)
    per = d // (n2 - n1)
    print(o, per, c1.get(o, 0) - per * n1, "exact" if d == per * (n2 - n1) else "inexact",
          static.get(o, 0))
EOF
bad=$(awk '$4 != "exact" || $2 != $5' "$TMP/truth")
check "ptrace per-iteration counts equal luac's loop body exactly${bad:+ (differ: $(echo $bad))}" [ -z "$bad" ]

# vprof, once per capture: output and status unchanged, then the histogram.
"$LUA" "$FIX" $N >"$TMP/plain.out"
"$LUA" "$FIX" 1000 3 >"$TMP/plain3.out"; pst=$?
run_capture() {
	local capture=$1 db=$TMP/db.${1//[^a-z]/} hist=$TMP/hist.${1//[^a-z]/}
	local st same why disp oth verdict top_t top_v out
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" $capture $SAMPLING -- "$LUA" "$FIX" $N)
	cat "$TMP/v.err"
	# Value samples, how many were lost (shared value area full) and the
	# interpreter's stops: what explains a histogram that comes out empty.
	"$VPROF" report --db "$db" -n 1 | grep -E '^value samples'
	check "[$capture] lua5.4 exit status unchanged under vprof ($st)" [ "$st" = 0 ]
	check "[$capture] lua5.4 output unchanged under vprof" cmp -s "$TMP/plain.out" "$TMP/v.out"
	why=$(rate_sane)
	check "[$capture] sampling rate sane${why:+: $why}" [ -z "$why" ]
	st=$(runst "$TMP/v3.out" "$TMP/v3.err" "$VPROF" run --db "$db.exit3" $capture $SAMPLING -- "$LUA" "$FIX" 1000 3)
	same=no; cmp -s "$TMP/plain3.out" "$TMP/v3.out" && same=yes
	check "[$capture] os.exit(3) still exits 3 under vprof ($st, plain $pst), same output ($same)" \
		[ "$st" = 3 -a "$pst" = 3 -a "$same" = yes ]

	"$VPROF" targets --db "$db" --image lua5.4 -n 12
	"$VPROF" targets --db "$db" --image lua5.4 -n 0 --json >"$TMP/targets.json"
	"$PY" - "$TMP/ops" "$TMP/targets.json" "$TMP/truth" $N $TOL >"$hist" <<'EOF'
import json, sys
ops = {int(a, 16): n for a, n in (l.split() for l in open(sys.argv[1]) if not l.startswith("#"))}
N, tol = int(sys.argv[4]), float(sys.argv[5])
true = {}
for l in open(sys.argv[3]):
    o, per, once = l.split()[:3]
    true[o] = int(per) * N + int(once)
T = sum(true.values())
est, other = {}, 0.0
for l in open(sys.argv[2]):
    r = json.loads(l)
    n = None if r["foreign"] else ops.get(int(r["target"], 16))
    if n:
        est[n] = est.get(n, 0) + r["estimate"]
    else:
        other += r["estimate"]
E = sum(est.values())
if not E:
    print("dispatches 0 other %.0f" % other)
    print("verdict none")
    sys.exit()
print("dispatches %.0f other %.0f" % (E, other))
print("| opcode | true count | true share | vprof share | difference |")
print("|---|---:|---:|---:|---:|")
bad, rows = [], sorted(set(true) | set(est), key=lambda o: (-true.get(o, 0), -est.get(o, 0)))
for o in rows:
    t, v = 100 * true.get(o, 0) / T, 100 * est.get(o, 0) / E
    if t < 0.05 and v < 0.05:
        continue
    print("| %s | %d | %.2f%% | %.2f%% | %+.2f |" % (o, true.get(o, 0), t, v, v - t))
    if t >= 5 and abs(v - t) > tol:
        bad.append("%s %.1f%% for %.1f%%" % (o, v, t))
rest = 100 * sum(est.get(o, 0) for o in est if 100 * true.get(o, 0) / T < 1) / E
print("outside %.2f" % rest)
top_t = [o for o in sorted(true, key=lambda o: -true[o])][:3]
top_v = [o for o in sorted(est, key=lambda o: -est[o])][:3]
print("top %s %s" % (",".join(top_t), ",".join(top_v)))
print("verdict " + ("; ".join(bad) or "ok"))
EOF
	grep '^|' "$hist"
	read -r _ disp _ oth < <(grep '^dispatches' "$hist")
	check "[$capture] dispatches seen (${disp:-0}) and they are most indirect branches of lua5.4 (other ${oth:-?})" \
		"$PY" -c 'import sys; d, o = float(sys.argv[1]), float(sys.argv[2]); sys.exit(not (d >= 5000 and o <= 0.05 * d))' \
		"${disp:-0}" "${oth:-1e9}"
	verdict=$(sed -n 's/^verdict //p' "$hist")
	check "[$capture] every opcode with >= 5% true share within $TOL points ($verdict)" [ "$verdict" = ok ]
	read -r _ top_t top_v < <(grep '^top' "$hist")
	check "[$capture] top three in order: $top_v (truth $top_t)" [ -n "$top_t" -a "$top_t" = "$top_v" ]
	out=$(sed -n 's/^outside //p' "$hist")
	check "[$capture] opcodes under 1% true share get under 2% together (${out:-?}%)" \
		"$PY" -c 'import sys; sys.exit(not float(sys.argv[1]) < 2)' "${out:-100}"
}
for c in "${CAPTURES[@]}"; do
	run_capture "$c"
done
finish
