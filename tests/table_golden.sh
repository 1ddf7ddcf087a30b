#!/bin/bash
# The reports' row model (reports/table.{c,h}): every command that
# prints its rows through the table must keep the shape of its output.
# Exact numbers vary from run to run, so no golden bytes: for each command,
# on databases of real runs (tests/fixtures/values_inv.c and
# values_switch.c under --values, calltree.c twice under --stacks), every
# JSON row must parse and have exactly the declared keys, in order (the
# keys are the API), and in the text table each numeric column's values
# must end where its heading ends and the first name column start where
# its heading starts, on every row (extra lines, the invariants'
# suggestions and the latency bins, sit below their row).
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures
cc -O2 -g -o "$TMP/inv" "$FIX/values_inv.c" || { fail "build values_inv"; finish; }
cc -O2 -g -o "$TMP/sw" "$FIX/values_switch.c" || { fail "build values_switch"; finish; }
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/ct" "$FIX/calltree.c" || { fail "build calltree"; finish; }
for x in "dbv --values --interp-every 1 --interp-len 8 --freq 4000 -- $TMP/inv 4000000" \
	 "dbw --values --interp-every 1 --interp-len 8 --freq 4000 -- $TMP/sw 45000" \
	 "dbs --stacks --freq 1000 -- $TMP/ct 3000" "dbs2 --stacks --freq 1000 -- $TMP/ct 2000"; do
	set -- $x
	db=$1; shift
	st=$(runst "$TMP/$db.out" "$TMP/$db.err" "$VPROF" run --db "$TMP/$db" "$@")
	check "vprof run $db ($st)" [ "$st" = 0 -a -d "$TMP/$db" ]
done

# keys KIND FILE KEY... : KIND lines (JSON Lines, the summary object
# skipped) or report (one object, rows under events[].rows); a key with a
# trailing ? may be left out.
cat >"$TMP/keys.py" <<'EOF'
import json, sys
kind, path, want = sys.argv[1], sys.argv[2], sys.argv[3:]
text = open(path).read()
if kind == "report":
    rows = [r for e in json.loads(text)["events"] for r in e["rows"]]
else:
    rows = [json.loads(l) for l in text.splitlines()]
    rows = [r for r in rows if not r.get("summary")]
if not rows:
    sys.exit("no rows")
for r in rows:
    exp = [k.rstrip("?") for k in want if not k.endswith("?") or k.rstrip("?") in r]
    if list(r) != exp:
        sys.exit("keys %s, declared %s" % (list(r), exp))
EOF
# align FILE SPEC...: SPEC is R:HEAD (values right-aligned under HEAD) or
# L:HEAD (left-aligned), "_" for a space in HEAD; every table in FILE
# whose heading holds them, each row until a blank or "..." line.
cat >"$TMP/align.py" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
spec = [(s[0], s[2:].replace("_", " ")) for s in sys.argv[2:]]
tables = rows = 0
for i, h in enumerate(lines):
    cols, at = [], 0
    for side, name in spec:
        p = h.find(name, at)
        if p < 0 or (not cols and h[:p].strip()):
            break
        cols.append((side, name, p, p + len(name)))
        at = p + len(name)
    if len(cols) != len(spec):
        continue
    tables += 1
    for r in lines[i + 1:]:
        if not r.strip() or r.strip().startswith("...") or r.startswith("no "):
            break
        if len(r) - len(r.lstrip(" ")) >= 20:
            continue                      # an extra line below the row
        rows += 1
        for side, name, s, e in cols:
            ok = (len(r) >= e and r[e - 1] != " " and (len(r) == e or r[e] == " ")) if side == "R" \
                else (len(r) > s and r[s] != " " and r[s - 1] == " ")
            if not ok:
                sys.exit("column %s not aligned with its heading:\n%s\n%s" % (name, h, r))
if not tables or not rows:
    sys.exit("no table (%d) or no rows (%d)" % (tables, rows))
EOF

# one WHAT KIND "ARGS" "KEYS" "ALIGN": run vprof ARGS with and without
# --json and check both.
one() {
	local what=$1 kind=$2 args=$3 keys=$4 align=$5
	(cd "$TMP" && "$VPROF" $args --json >"$TMP/o.json" 2>"$TMP/o.err" && "$VPROF" $args >"$TMP/o.txt" 2>>"$TMP/o.err")
	local rc=$?
	local kmsg amsg
	kmsg=$("$PY" "$TMP/keys.py" "$kind" "$TMP/o.json" $keys 2>&1)
	local krc=$?
	amsg=$("$PY" "$TMP/align.py" "$TMP/o.txt" $align 2>&1)
	local arc=$?
	check "$what: exit 0 ($rc), JSON rows have their declared keys${kmsg:+ ($kmsg)}" [ $rc = 0 -a $krc = 0 ]
	check "$what: text columns aligned with their headings${amsg:+ ($amsg)}" [ $arc = 0 ]
}

NUM_STATS="R:range% R:sum R:sum% R:N R:mean R:std-dev R:min R:max"
NUM_DIFF="R:A R:B R:A% R:B% R:ratio R:difference R:lin-sat R:pow-sat"
K_STATS="range_percent sum sum_percent n mean std_dev min max counts"
K_DIFF="a b share_a share_b ratio new difference saturation_linear saturation_power"
for by in procedure image line instruction; do
	case $by in
	procedure) kb="procedure image" name=bucket ;;
	image) kb="image" name=image ;;
	line) kb="procedure file line image" name=bucket ;;
	instruction) kb="procedure pc image" name=bucket ;;
	esac
	one "stats --by $by" lines "stats --by $by --min-count 0 -n 0 dbs dbs2 dbs" \
		"rank $kb $K_STATS" "$NUM_STATS L:$name"
	one "diff --by $by" lines "diff --by $by --min-count 0 -n 0 dbs dbs2" \
		"rank $kb $K_DIFF" "$NUM_DIFF L:$name"
done
one "diff --rank power --work 1,3" lines "diff --rank power --work 1,3 --min-count 0 dbv dbs" \
	"rank procedure image $K_DIFF" "$NUM_DIFF L:bucket"
one "targets" lines "targets --db dbw -n 0" \
	"image target foreign procedure offset estimate share sites from" \
	"R:estimate R:share R:sites L:target L:procedure+offset"
one "latency" lines "latency --db dbw -n 0" \
	"procedure pc image source kind sentence stall time time_samples time_span samples vtot mean beyond level level_share level_cycles value value_share bins" \
	"R:stall R:time R:mean R:vtot L:load"
one "invariants" lines "invariants --db dbv -n 0 --min-share 0 --min-time 0 --min-vtot 1 --all" \
	"procedure pc image source kind what class why callee callee_impl argument argument_name argument_type register site value value_type value_text share share_low share_high of time weight time_basis samples vtot suggestion" \
	"R:weight R:time R:share L:suggestion"
one "report --by procedure" report "report --db dbv -n 0" \
	"procedure image samples percent sampled" "R:samples R:% R:cum% L:procedure"
one "report --by procedure with stacks" report "report --db dbs -n 0" \
	"procedure image samples percent inclusive inclusive_percent sampled" \
	"R:samples R:self% R:cum% R:incl R:incl% L:procedure"
one "report --by image" report "report --db dbw --by image -n 2" \
	"image samples percent sampled" "R:samples R:% R:cum% L:image"
one "report --by line" report "report --db dbv --by line -n 0" \
	"procedure file line image samples percent sampled" "R:samples R:% R:cum% L:source_line"
finish
