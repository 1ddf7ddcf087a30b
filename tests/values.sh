#!/bin/bash
# Value sampling end to end: `vprof run --values` interprets in
# the sample handler and fills hotlists that the value reports read.
#
# tests/fixtures/values_inv.c calls scale(x, k), whose loop multiplies by
# k, from two sites: site_a with k = 3 in 90% of calls, site_b uniform.
# `vprof invariants` must rank "SRC2 of the imul is 3" first, named at
# site_a's call, with a share within 3 points of the truth (the issue's
# bar, with at least 2000 value samples in the hotlist); the program's
# output and status must not change; bad settings get one message and the
# program runs on, unprofiled, with its own output.
#
# tests/fixtures/values_switch.c dispatches a skewed opcode stream through
# a switch: the opcode load's result hotlist and the jump's target hotlist
# must give each frequent opcode's share within 3 points.
. "$(dirname "$0")/lib.sh"

cc -O2 -g -o "$TMP/inv" "$TOP/tests/fixtures/values_inv.c"
"$TMP/inv" 8000000 >"$TMP/plain.out"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --values --interp-every 1 \
	--interp-len 8 --freq 4000 -- "$TMP/inv" 8000000 truth)
check "exit status unchanged with --values ($st)" [ "$st" = 0 ]
check "output unchanged with --values" cmp -s "$TMP/plain.out" "$TMP/v.out"
cat "$TMP/v.err"
truth_a=$(sed -n 's/^truth k=3 site_a \([0-9.]*\).*/\1/p' "$TMP/v.err")

"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
"$PY" - "$TMP/r.json" <<'EOF' >"$TMP/stats"
import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("value_samples", 0), r.get("interp_runs", 0), sum(r.get("interp_stops", {}).values()) if isinstance(r.get("interp_stops"), dict) else sum(r.get("interp_stops", [])))
EOF
read -r vs runs stops <"$TMP/stats"
check "value samples recorded (${vs:-0}) in ${runs:-0} interpretation runs" [ "${vs:-0}" -gt 1000 -a "${runs:-0}" -gt 100 ]
check "every run has a stop reason counted ($stops of $runs)" [ "${stops:-0}" = "${runs:-x}" ]

"$VPROF" invariants --db "$TMP/db" -n 5 >"$TMP/inv.txt"
"$VPROF" invariants --db "$TMP/db" -n 5 --json >"$TMP/inv.json"
cat "$TMP/inv.txt"
"$PY" - "$TMP/inv.json" "$TOP/tests/fixtures/values_inv.c" <<'EOF' >"$TMP/top"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if not r.get("summary")]
src = open(sys.argv[2]).read().split("\n")
call_a = next(i + 1 for i, l in enumerate(src) if "s += site_a(" in l)
t = rows[0] if rows else {}
print(t.get("procedure"), t.get("value"), t.get("kind"), t.get("site", ""), call_a, t.get("share", 0))
EOF
read -r proc value kind site call_a share <"$TMP/top"
echo "top: $proc $kind $value from $site (share $share), site_a's call at line $call_a"
check "the planted invariant ranks first: SRC2 of scale() is 3 by call site ($proc $kind $value)" \
	[ "$proc" = scale -a "$value" = 3 -a "$kind" = src2@site ]
check "its share $share is within 3 points of the truth ${truth_a:-?}" \
	$PY -c 'import sys; s, t = float(sys.argv[1]), float(sys.argv[2]); sys.exit(abs(s - t) > 0.03)' "${share:-0}" "${truth_a:-9}"

# The suggestion names the operand as what it is: k is scale()'s second
# argument (rsi, never written in scale()), named as its DWARF parameter;
# the imul's other source (rax, written by the mov that starts scale()) is
# not an argument. (site_a and site_b call scale() by a tail jump: its
# return address, the call site of its values, is their caller's call,
# in main; no argument row is taken at a jump.)
"$VPROF" invariants --db "$TMP/db" -n 0 --min-share 0 --min-time 0 --min-vtot 1 --json >"$TMP/all.json"
"$PY" - "$TMP/inv.json" "$call_a" "$TMP/all.json" <<'EOF' >"$TMP/arg"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
rows = [r for r in rows if not r.get("summary")]
t = rows[0] if rows else {}
sug = t.get("suggestion", "")
ok = t.get("argument") == 2 and t.get("argument_name") == "k" and \
     sug.startswith("k (argument 2 of scale) of `imul ") and " is 3 (0x3) in " in sug and \
     ("of its time from main (values_inv.c:%s)" % sys.argv[2]) in sug
allr = [json.loads(l) for l in open(sys.argv[3]) if l.strip()]
allr = [r for r in allr if not r.get("summary")]
imul = t.get("pc")
# the imul's first source (rax) is no argument; the mov that copies x (rdi) is argument 1
notarg = [r for r in allr if r.get("pc") == imul and r.get("kind", "").startswith("src1")]
arg1 = [r for r in allr if r.get("procedure") == "scale" and r.get("kind") == "src1" and r.get("argument") == 1]
# (the mov's rows need a sample at scale()'s first instruction: shown, not required)
print("ok" if ok and notarg and all(r.get("argument") is None for r in notarg) else "bad",
      len(notarg), len(arg1), json.dumps(sug))
EOF
read -r argok nnot narg1 argsug <"$TMP/arg"
check "the suggestion says which argument, from which call: $argsug (imul src1 rows without argument: $nnot; x as argument 1: $narg1)" [ "$argok" = ok ]

# The call site: in `vprof list scale`, the top entry of the imul's
# SRC2-by-site hotlist is 3 from site_a's call line.
"$VPROF" list scale --db "$TMP/db" --json >"$TMP/list.json"
"$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l) if l.strip() else {}
    if not r.get("instruction", "").startswith("imul"):
        continue
    for v in r.get("values", []):
        if v.get("kind") == "src2@site" and v.get("top"):
            t = v["top"][0]
            print(t.get("site", "") if t.get("value") == 3 else "top-is-not-3", t.get("share", 0))' "$TMP/list.json" >"$TMP/site"
read -r site share <"$TMP/site"
check "SRC2 = 3 of scale() is seen from site_a's call, values_inv.c:$call_a (${site:-none}, $share)" \
	[ "${site##*:}" = "$call_a" ]

# Per-site share in `vprof list`, from the hotlist itself: vtot >= 2000.
"$PY" - "$TMP/list.json" "${truth_a:-9}" <<'EOF' >"$TMP/acc"
import json, sys
truth = float(sys.argv[2])
for l in open(sys.argv[1]):
    r = json.loads(l) if l.strip() else {}
    if not r.get("instruction", "").startswith("imul"):
        continue
    hot = {v["kind"]: v for v in r.get("values", [])}
    s2, ra = hot.get("src2@site"), hot.get("retaddr")
    if not s2 or not ra or not s2["top"] or s2["top"][0].get("value") != 3:
        continue
    t = s2["top"][0]
    site = next((x for x in ra["top"] if x.get("value") == t.get("aux")), None)
    if site:
        print(s2["vtot"], "%.4f" % (t["estimate"] / site["estimate"]), "%.4f" % truth)
        break
EOF
read -r vtot lshare ltruth <"$TMP/acc"
check "list: the imul's hotlist holds >= 2000 value samples (${vtot:-0}) and 3's share of site_a's, ${lshare:-?}, is within 3 points of ${ltruth:-?}" \
	$PY -c 'import sys; v, s, t = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]); sys.exit(v < 2000 or abs(s - t) > 0.03)' "${vtot:-0}" "${lshare:-0}" "${ltruth:-9}"

# A switch over a skewed opcode stream: the opcode load's result and the
# switch jump's targets, each frequent opcode's share within 3 points.
cc -O2 -g -o "$TMP/sw" "$TOP/tests/fixtures/values_switch.c"
"$TMP/sw" 45000 >"$TMP/sw.plain"
st=$(runst "$TMP/sw.out" "$TMP/sw.err" "$VPROF" run --db "$TMP/dbsw" --values --interp-every 1 \
	--interp-len 8 --freq 4000 -- "$TMP/sw" 45000 truth)
same=no; cmp -s "$TMP/sw.plain" "$TMP/sw.out" && same=yes
check "switch: output ($same) and status ($st) unchanged" [ "$st" = 0 -a "$same" = yes ]
cat "$TMP/sw.err"
"$VPROF" list run_ops --db "$TMP/dbsw" --json >"$TMP/sw.json"
"$PY" - "$TMP/sw.json" "$TMP/sw.err" <<'EOF' >"$TMP/sw.res"
import json, sys
truth = [float(x) for x in next(l for l in open(sys.argv[2]) if l.startswith("truth")).split()[1:]]
res = tgt = None
for l in open(sys.argv[1]):
    r = json.loads(l) if l.strip() else {}
    ins = r.get("instruction", "")
    for v in r.get("values", []):
        if ins.startswith("movzx") and v["kind"] == "result":
            res = v
        if ins.startswith("jmp") and v["kind"] == "target":
            tgt = v
rs = {x["value"]: x["share"] for x in res["top"]} if res else {}
worst = max(abs(rs.get(op, 0) - truth[op]) for op in range(4))
# Targets are case labels: the four largest shares against the four
# frequent opcodes' (every other opcode is under 2%).
ts = sorted((x["share"] for x in tgt["top"]), reverse=True)[:4] if tgt else []
tworst = max(abs(a - b) for a, b in zip(ts, sorted(truth, reverse=True))) if len(ts) == 4 else 1
print(res["vtot"] if res else 0, "%.4f" % worst, tgt["vtot"] if tgt else 0, "%.4f" % tworst)
print("opcode:share/truth", " ".join("%d:%.3f/%.3f" % (op, rs.get(op, 0), truth[op]) for op in range(4)),
      "targets", " ".join("%.3f" % x for x in ts), file=sys.stderr)
EOF
read -r rv rworst tv tworst <"$TMP/sw.res"
check "switch: the opcode load's hotlist (vtot ${rv:-0} >= 2000) gives opcodes 0-3 within 3 points (worst ${rworst:-?})" \
	$PY -c 'import sys; sys.exit(int(sys.argv[1]) < 2000 or float(sys.argv[2]) > 0.03)' "${rv:-0}" "${rworst:-1}"
check "switch: the jump's target hotlist (vtot ${tv:-0} >= 2000) gives the four frequent cases within 3 points (worst ${tworst:-?})" \
	$PY -c 'import sys; sys.exit(int(sys.argv[1]) < 2000 or float(sys.argv[2]) > 0.03)' "${tv:-0}" "${tworst:-1}"

# Bad settings: one message, the program unaffected.
for bad in "VPROF_INTERP_LEN=0" "VPROF_INTERP_EVERY=x" "VPROF_SKEW_SKIP=1000" \
	   "VPROF_MODULE=/nonexistent/mod.so" "VPROF_STACK_DEPTH=0"; do
	env "$bad" VPROF_VALUES=on VPROF_DB="$TMP/db2" LD_PRELOAD="$LIBVPROF" \
		"$TMP/inv" 100000 >"$TMP/b.out" 2>"$TMP/b.err"
	st=$?
	"$TMP/inv" 100000 >"$TMP/b.plain"
	n=$(grep -c '^vprof: ' "$TMP/b.err")
	same=no; cmp -s "$TMP/b.out" "$TMP/b.plain" && same=yes
	check "$bad: one message ($n), same output ($same) and status ($st)" \
		[ "$n" -eq 1 -a "$st" = 0 -a "$same" = yes ]
	sed 's/^/    /' "$TMP/b.err"
done
finish
