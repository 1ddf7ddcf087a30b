#!/bin/bash
# Customization modules (docs/modules.md): each shipped module on
# a fixture with a known answer, the worked example of docs/modules.md
# built from the page itself, and the bad inputs (unknown module, not a
# module, another API version, a module that faults): one message each,
# the program's output and exit status unchanged.
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures
MODS=$TOP/build/modules

cc -O2 -g -o "$TMP/disp" "$FIX/mod_dispatch.c"
cc -O2 -g -o "$TMP/stride" "$FIX/mod_stride.c"
cc -O2 -g -o "$TMP/chase" "$FIX/mod_chase.c"
cc -O2 -fno-tree-vectorize -g -o "$TMP/fp" "$FIX/mod_fp.c"
for m in badver fault notmod; do
	cc -shared -fPIC -O2 -I"$TOP/include" -o "$TMP/$m.so" "$FIX/mod_$m.c"
done
check "the shipped modules are built (build/modules/{values,latency,indirect,stride}.so)" \
	[ -f "$MODS/values.so" -a -f "$MODS/latency.so" -a -f "$MODS/indirect.so" -a -f "$MODS/stride.so" ]

# hot_rows FILE KIND: from `vprof list --json`, one line per hotlist of
# KIND: "instruction|top text|top share|vtot", largest vtot first.
hot_rows() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
rows = []
for l in open(sys.argv[1]):
    if not l.strip():
        continue
    r = json.loads(l)
    for v in r.get("values", []):
        if v.get("kind") == sys.argv[2] and v.get("top"):
            t = v["top"][0]
            rows.append((v["vtot"], "%s|%s|%.4f|%d" % (r.get("instruction", ""), t.get("text", ""), t.get("share", 0), v["vtot"])))
for _, s in sorted(rows, reverse=True):
    print(s)
EOF
}
# kinds_at FILE PREFIX: the kinds with hotlists at the first instruction
# starting with PREFIX, sorted, space-separated.
kinds_at() {
	"$PY" - "$1" "$2" <<'EOF'
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l) if l.strip() else {}
    if r.get("instruction", "").startswith(sys.argv[2]) and r.get("values"):
        print(" ".join(sorted(v["kind"] for v in r["values"])))
        break
EOF
}
nmsg() { grep -c '^vprof: ' "$1"; }
# same ST WANT OUT PLAIN: status ST is WANT and OUT is byte-identical to PLAIN.
same() { [ "$1" = "$2" ] && cmp -s "$3" "$4"; }

# ---- indirect: a skewed function-pointer dispatch ----
N=150000000
st0=$(runst "$TMP/plain.out" "$TMP/plain.err" "$TMP/disp" $N)
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_ind" --module indirect \
	--interp-len 64 --interp-every 1 --freq 4000 -- "$TMP/disp" $N)
cat "$TMP/v.err"
check "indirect: exit status unchanged ($st, plain $st0)" [ "$st" = "$st0" -a "$st0" = 3 ]
check "indirect: output unchanged" cmp -s "$TMP/plain.out" "$TMP/v.out"
check "indirect: nothing said but the summary ($(nmsg "$TMP/v.err") lines)" [ "$(nmsg "$TMP/v.err")" = 1 ]
"$VPROF" list main --db "$TMP/db_ind" --json >"$TMP/ind.json"
"$VPROF" list main --db "$TMP/db_ind" | grep -B1 target
IFS='|' read -r insn top share vtot < <(hot_rows "$TMP/ind.json" target | head -1)
read -r _ add _ sub _ mul _ xor _ <"$TMP/plain.out"
truth=$("$PY" -c "print('%.4f' % ($add / ($add + $sub + $mul + $xor)))")
echo "indirect: top target at '$insn': $top $share of $vtot (truth: op_add $truth)"
check "indirect: at least 2000 target samples at the dispatch call (${vtot:-0})" [ "${vtot:-0}" -ge 2000 ]
check "indirect: the top target is named by symbol, op_add ($top)" [ "$top" = op_add ]
check "indirect: op_add's share $share within 3 points of the truth $truth" \
	"$PY" -c "import sys; sys.exit(abs(${share:-0} - $truth) > 0.03)"
k=$(kinds_at "$TMP/ind.json" "call")
check "indirect: the module decides what is captured: only targets at the call ($k)" [ "$k" = target ]

# ---- values: the default capture as a module ----
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_val" --module values \
	--interp-len 16 --interp-every 1 --freq 4000 -- "$TMP/disp" 20000000)
"$TMP/disp" 20000000 >"$TMP/plain.out"
check "values module: output and status unchanged ($st)" same "$st" 3 "$TMP/v.out" "$TMP/plain.out"
"$VPROF" list main --db "$TMP/db_val" --json >"$TMP/val.json"
k=$(kinds_at "$TMP/val.json" "call")
echo "values module: kinds at the call: $k"
check "values module: the default kinds at the call, target and call site included ($k)" \
	[ -n "$(echo "$k" | grep -w target | grep -w retaddr | grep -w src1)" ]
IFS='|' read -r insn top share vtot < <(hot_rows "$TMP/val.json" target | head -1)
check "values module: top target op_add ($top, $share of $vtot)" [ "$top" = op_add ]

# ---- stride: a loop with a fixed stride of 9 longs = 72 bytes ----
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_str" --module stride \
	--interp-len 16 --interp-every 1 --freq 4000 -- "$TMP/stride" 3000)
"$TMP/stride" 3000 >"$TMP/plain.out"
check "stride: output and status unchanged ($st)" same "$st" 0 "$TMP/v.out" "$TMP/plain.out"
"$VPROF" list walk --db "$TMP/db_str" --json >"$TMP/str.json"
"$VPROF" list walk --db "$TMP/db_str" | grep -B1 stride
IFS='|' read -r insn top share vtot < <(hot_rows "$TMP/str.json" stride | head -1)
echo "stride: '$insn': top stride $top, $share of $vtot"
check "stride: the load's top stride is 72, shown signed ($top, $share of $vtot)" \
	[ "$top" = 72 -a "${vtot:-0}" -ge 100 ]

# ---- latency: bins at the calibrated levels ----
"$VPROF" calibrate --db "$TMP/db_lat" --max-size 64M --loads 3000 --sample-ms 600 >"$TMP/cal.txt"
cat "$TMP/cal.txt"
levels=$(awk '$1 == "level" { print $2 ":" $3 }' "$TMP/db_lat/calibration" | tr '\n' ' ')
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_lat" --module latency \
	--interp-len 16 --interp-every 1 --freq 4000 -- "$TMP/chase" 67108864 5000000)
"$TMP/chase" 67108864 5000000 >"$TMP/plain.out"
check "latency: output and status unchanged ($st)" same "$st" 0 "$TMP/v.out" "$TMP/plain.out"
check "latency: nothing said but the summary ($(nmsg "$TMP/v.err") lines)" [ "$(nmsg "$TMP/v.err")" = 1 ]
"$VPROF" latency --db "$TMP/db_lat" -n 3
"$VPROF" latency --db "$TMP/db_lat" --json >"$TMP/lat.json"
res=$("$PY" - "$TMP/lat.json" "$levels" <<'EOF'
import json, sys
levels = dict(x.split(":") for x in sys.argv[2].split())      # name -> typical
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
bins = [(b["cycles"], b.get("level")) for r in rows for b in r.get("bins", [])]
ok = bins and all(str(c) == levels.get(lv) for c, lv in bins)
chase = [r for r in rows if r.get("procedure") == "chase"]
slowest = max(levels, key=lambda n: int(levels[n]))
top = chase[0]["bins"][0]["level"] if chase and chase[0].get("bins") else "none"
print(len(bins), "yes" if ok else "no", top, slowest)
EOF
)
read -r nbins atlevels top slowest <<<"$res"
echo "latency: $nbins bins, all at calibrated levels ($levels): $atlevels; chase's top bin $top"
check "latency: bins present, each at a calibrated level's latency ($nbins, $atlevels)" \
	[ "${nbins:-0}" -gt 0 -a "$atlevels" = yes ]
check "latency: the 64 MiB pointer chase lands mostly in the slowest level ($top, $slowest)" \
	[ "$top" = "$slowest" ]
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_nocal" --module latency \
	--interp-every 1 --freq 1000 -- "$TMP/chase" 1048576 2000000)
cat "$TMP/v.err"
check "latency without a calibration: one note, then the summary ($(nmsg "$TMP/v.err") lines)" \
	[ "$(grep -c 'no calibration' "$TMP/v.err")" = 1 -a "$(nmsg "$TMP/v.err")" = 2 -a "$st" = 0 ]

# ---- the worked example of docs/modules.md, built from the page ----
sed -n '/<!-- example fpload.c -->/,/<!-- end example -->/p' "$TOP/docs/modules.md" |
	sed '1,2d;$d' | sed '$d' >"$TMP/fpload.c"
check "docs/modules.md's example extracted ($(wc -l <"$TMP/fpload.c") lines)" grep -q vprof_module "$TMP/fpload.c"
check "docs/modules.md's example builds against include/vprof-module.h" \
	cc -shared -fPIC -O2 -Wall -Werror -I"$TOP/include" -o "$TMP/fpload.so" "$TMP/fpload.c"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_fp" --module "$TMP/fpload.so" \
	--interp-len 8 --interp-every 1 --freq 4000 -- "$TMP/fp" 60000)
"$TMP/fp" 60000 >"$TMP/plain.out"
check "example: output and status unchanged ($st)" same "$st" 0 "$TMP/v.out" "$TMP/plain.out"
"$VPROF" list dot --db "$TMP/db_fp" --json >"$TMP/fp.json"
"$VPROF" list dot --db "$TMP/db_fp" | grep -B1 mod0
IFS='|' read -r insn top share vtot < <(hot_rows "$TMP/fp.json" mod0.double | head -1)
check "example: the load reads 2.5 in 90% within 4 points (shown as a double: $top, $share of $vtot)" \
	"$PY" -c "import sys; sys.exit(not ('$top' == '2.5' and abs(${share:-0} - 0.9) < 0.04))"

# ---- bad input: one clear message, the program unharmed ----
printf 'not an ELF file\n' >"$TMP/text.so"
"$TMP/disp" 3000000 >"$TMP/plain.out"
for c in "/nonexistent/mod.so|No such file" "nosuch|no module named nosuch" \
	 "$TMP/text.so|not a loadable shared library" "$TMP/notmod.so|not a vprof module" \
	 "$TMP/badver.so|built for module API version 42, this vprof has version 1" \
	 "$TMP/fault.so|SIGSEGV in its sequence callback"; do
	mod=${c%%|*} want=${c#*|}
	st=$(runst "$TMP/b.out" "$TMP/b.err" env VPROF_MODULE="$mod" VPROF_DB="$TMP/db_bad" \
		VPROF_FREQ=4000 VPROF_INTERP_EVERY=1 LD_PRELOAD="$LIBVPROF" "$TMP/disp" 3000000)
	n=$(nmsg "$TMP/b.err") m=$(grep -c "$want" "$TMP/b.err")
	same=no; cmp -s "$TMP/b.out" "$TMP/plain.out" && same=yes
	check "VPROF_MODULE=${mod##*/}: one message ($n, saying \"$want\": $m), same output ($same), status 3 ($st)" \
		[ "$n" = 1 -a "$m" = 1 -a "$same" = yes -a "$st" = 3 ]
	sed 's/^/    /' "$TMP/b.err"
done
# The same through vprof run, on a Debian program (threads: xz -T2).
head -c 4000000 /dev/urandom >"$TMP/rnd"
for c in "$TMP/badver.so|API version 42" "$TMP/fault.so|SIGSEGV in its sequence callback"; do
	mod=${c%%|*} want=${c#*|}
	st0=$(runst "$TMP/x.plain" "$TMP/x.perr" /usr/bin/xz -T2 -c "$TMP/rnd")
	st=$(runst "$TMP/x.out" "$TMP/x.err" "$VPROF" run --db "$TMP/db_xz" --module "$mod" \
		--interp-every 1 --freq 4000 -- /usr/bin/xz -T2 -c "$TMP/rnd")
	n=$(grep -c "$want" "$TMP/x.err")
	same=no; cmp -s "$TMP/x.out" "$TMP/x.plain" && same=yes
	check "vprof run --module ${mod##*/} -- xz -T2: said once ($n), same output ($same), status ($st, plain $st0)" \
		[ "$n" = 1 -a "$same" = yes -a "$st" = "$st0" ]
	grep -v 'samples from' "$TMP/x.err" | sed 's/^/    /'
done
# Children: a refused module is said once for the whole process tree; the
# children run with the default capture, quietly.
"$TMP/disp" 3000000 >"$TMP/two.plain"; "$TMP/disp" 3000000 >>"$TMP/two.plain"
st=$(runst "$TMP/two.out" "$TMP/two.err" "$VPROF" run --db "$TMP/db_kids" --module "$TMP/badver.so" \
	--interp-every 1 --freq 4000 -- sh -c "'$TMP/disp' 3000000; '$TMP/disp' 3000000")
"$VPROF" report --db "$TMP/db_kids" --json >"$TMP/kids.json"
vs=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("value_samples", 0))' "$TMP/kids.json")
check "a refused module under sh -c with two children: said once ($(grep -c 'API version 42' "$TMP/two.err"))" \
	[ "$(grep -c 'API version 42' "$TMP/two.err")" = 1 ]
check "... the children ran on with the default capture ($vs value samples), output and status unchanged ($st)" \
	[ "${vs:-0}" -gt 100 -a "$st" = 3 ]
check "... and the output is the two children's, unchanged" cmp -s "$TMP/two.out" "$TMP/two.plain"
# A module with value sampling turned off: a contradiction, refused.
st=$(runst "$TMP/b.out" "$TMP/b.err" env VPROF_MODULE=indirect VPROF_VALUES=off \
	VPROF_DB="$TMP/db_bad" LD_PRELOAD="$LIBVPROF" "$TMP/disp" 3000000)
check "VPROF_MODULE with VPROF_VALUES=off: one message ($(nmsg "$TMP/b.err"))" [ "$(nmsg "$TMP/b.err")" = 1 ]
check "VPROF_MODULE with VPROF_VALUES=off: the program runs on, same output and status ($st)" \
	same "$st" 3 "$TMP/b.out" "$TMP/plain.out"
# Installed: the modules land in PREFIX/lib/vprof/modules and an
# installed vprof finds them by name.
make -s -C "$TOP" install PREFIX="$TMP/prefix" >/dev/null
check "make install puts the modules in lib/vprof/modules" \
	[ -f "$TMP/prefix/lib/vprof/modules/indirect.so" -a -f "$TMP/prefix/lib/vprof/modules/latency.so" ]
st=$(runst "$TMP/v.out" "$TMP/v.err" "$TMP/prefix/bin/vprof" run --db "$TMP/db_inst" --module indirect \
	--interp-len 32 --interp-every 1 --freq 4000 -- "$TMP/disp" 20000000)
"$TMP/prefix/bin/vprof" list main --db "$TMP/db_inst" --json >"$TMP/inst.json"
IFS='|' read -r insn top share vtot < <(hot_rows "$TMP/inst.json" target | head -1)
check "installed vprof run --module indirect finds the installed module (top target $top, $(nmsg "$TMP/v.err") messages)" \
	[ "$top" = op_add -a "$(nmsg "$TMP/v.err")" = 1 -a "$st" = 3 ]
check "vprof run -h names --module" sh -c "'$VPROF' run -h | grep -q -- --module"
finish
