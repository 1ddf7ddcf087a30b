#!/bin/bash
# Value sampling end to end (issue 6): `vprof run --values` interprets in
# the sample handler and fills hotlists that the value reports read.
#
# tests/fixtures/values_inv.c calls scale(x, k), whose loop multiplies by
# k, from two sites: site_a with k = 3 in 90% of calls, site_b uniform.
# `vprof invariants` must rank "SRC2 of the imul is 3" first, named at
# site_a's call, with a share near the truth; the program's output and
# status must not change; bad settings get one message and the program
# runs on, unprofiled, with its own output.
. "$(dirname "$0")/lib.sh"

cc -O2 -g -o "$TMP/inv" "$TOP/tests/fixtures/values_inv.c"
"$TMP/inv" 6000000 >"$TMP/plain.out"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --values --interp-every 1 \
	--interp-len 8 --freq 4000 -- "$TMP/inv" 6000000)
check "exit status unchanged with --values ($st)" [ "$st" = 0 ]
check "output unchanged with --values" cmp -s "$TMP/plain.out" "$TMP/v.out"
cat "$TMP/v.err"

"$VPROF" report --db "$TMP/db" --json >"$TMP/r.json"
"$PY" - "$TMP/r.json" <<'EOF' >"$TMP/stats"
import json, sys
r = json.load(open(sys.argv[1]))
print(r.get("value_samples", 0), r.get("interp_runs", 0), sum(r.get("interp_stops", {}).values()) if isinstance(r.get("interp_stops"), dict) else sum(r.get("interp_stops", [])))
EOF
read -r vs runs stops <"$TMP/stats"
check "value samples recorded (${vs:-0}) in ${runs:-0} interpretation runs" [ "${vs:-0}" -gt 1000 -a "${runs:-0}" -gt 100 ]
check "every run has a stop reason counted ($stops of $runs)" [ "${stops:-0}" = "${runs:-x}" ]

# --min-share 0.2: the hotlists' estimates of a 90% value from one of two
# sites still vary run to run (24-43% of the PC's samples seen for the
# pair; see README, "Value sampling"), so the default 0.5 sometimes keeps
# no candidate at scale(); the ranking itself is what is checked.
"$VPROF" invariants --db "$TMP/db" -n 5 --min-share 0.2 >"$TMP/inv.txt"
"$VPROF" invariants --db "$TMP/db" -n 5 --min-share 0.2 --json >"$TMP/inv.json"
cat "$TMP/inv.txt"
"$PY" - "$TMP/inv.json" "$TOP/tests/fixtures/values_inv.c" <<'EOF' >"$TMP/top"
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
src = open(sys.argv[2]).read().split("\n")
call_a = next(i + 1 for i, l in enumerate(src) if "s += site_a(" in l)
t = rows[0] if rows else {}
print(t.get("procedure"), t.get("value"), t.get("kind"), t.get("site", ""), call_a, t.get("share", 0))
EOF
read -r proc value kind site call_a share <"$TMP/top"
echo "top: $proc $kind $value from $site (share $share), site_a's call at line $call_a"
check "the planted invariant ranks first: SRC2 of scale() is 3 ($proc $kind $value)" \
	[ "$proc" = scale -a "$value" = 3 ] && [ "$kind" = src2@site -o "$kind" = src2 ]

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

# Bad settings: one message, the program unaffected.
for bad in "VPROF_INTERP_LEN=0" "VPROF_INTERP_EVERY=x" "VPROF_SKEW_SKIP=1000" \
	   "VPROF_MODULE=/nonexistent/mod.so" "VPROF_STACKS=on"; do
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
