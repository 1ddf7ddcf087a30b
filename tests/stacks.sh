#!/bin/bash
# Call stacks (vprof run --stacks): a fixture with a planted call tree
# (tests/fixtures/calltree.c: main -> a -> leaf with ~60% of the CPU,
# main -> b -> leaf with ~40%, the truth measured by the fixture itself),
# built with and without frame pointers and unwound by vprof's own CFI
# unwinder (the default), libunwind and the frame-pointer walk: --callers leaf and --callees main within 3
# points of the truth, folded paths main;a;leaf and main;b;leaf summing to
# the samples, pprof with cumulative time; Debian's xz -T2 and python3
# unchanged under --stacks with stacks through libc; merges of two runs
# add up; --stack-depth cuts stacks and counts it; bad values get one
# message.
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures
cc -O1 -g -fno-omit-frame-pointer -o "$TMP/ct_fp" "$FIX/calltree.c"
cc -O1 -g -fomit-frame-pointer -o "$TMP/ct_nofp" "$FIX/calltree.c"
N=${STACKS_UNITS:-20000}

# share DB DIR PROC NEIGHBOUR: NEIGHBOUR's percent among PROC's callers
# (DIR callers) or callees (DIR callees), from --json; "none" if absent.
share() {
	"$VPROF" report --db "$1" --"$2" "$3" --json -n 0 2>/dev/null | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
for e in d["events"]:
    for r in e["rows"]:
        if r["procedure"] == sys.argv[1]:
            print("%.2f" % r["percent"]); sys.exit()
print("none")' "$4"
}
# near A B PTS: |A - B| <= PTS
near() { "$PY" -c 'import sys; a, b, p = sys.argv[1:]; sys.exit(not (a != "none" and abs(float(a) - float(b)) <= float(p)))' "$1" "$2" "$3"; }

"$TMP/ct_nofp" "$N" >"$TMP/plain.out"; plain_st=$?
for variant in "nofp cfi" "nofp unwind" "nofp cursor" "fp cfi" "fp unwind" "fp fp"; do
	set -- $variant
	bin=$TMP/ct_$1 db=$TMP/db_$1_$2 tag="-O1 $([ "$1" = fp ] && echo -fno-omit-frame-pointer || echo -fomit-frame-pointer), method $2"
	st=$(VPROF_STACK_METHOD=$2 CALLTREE_TRUTH=$TMP/truth runst "$TMP/v.out" "$TMP/v.err" \
		"$VPROF" run --db "$db" --stacks --freq 1000 -- "$bin" "$N")
	check "$tag: same output and exit status as without vprof ($st, $plain_st)" \
		[ "$st" = "$plain_st" -a "$(cat "$TMP/v.out")" = "$(cat "$TMP/plain.out")" ]
	why=$(rate_sane); check "$tag: sane rate ${why:+($why)}" [ -z "$why" ]
	truth_a=$("$PY" -c 'import sys; d = dict(l.split() for l in open(sys.argv[1])); print("%.2f" % (100.0 * int(d["a"]) / (int(d["a"]) + int(d["b"]))))' "$TMP/truth")
	truth_b=$("$PY" -c "print('%.2f' % (100 - $truth_a))")
	ca=$(share "$db" callers leaf a) cb=$(share "$db" callers leaf b)
	check "$tag: --callers leaf: a $ca% (truth $truth_a%) within 3 points" near "$ca" "$truth_a" 3
	check "$tag: --callers leaf: b $cb% (truth $truth_b%) within 3 points" near "$cb" "$truth_b" 3
	ma=$(share "$db" callees main a) mb=$(share "$db" callees main b)
	check "$tag: --callees main: a $ma% (truth $truth_a%) within 3 points" near "$ma" "$truth_a" 3
	check "$tag: --callees main: b $mb% (truth $truth_b%) within 3 points" near "$mb" "$truth_b" 3
	"$VPROF" export --db "$db" --format folded >"$TMP/folded" 2>/dev/null
	samples=$("$VPROF" report --db "$db" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
	sum=$(awk '{s += $NF} END {print s + 0}' "$TMP/folded")
	check "$tag: folded counts sum to the samples ($sum of $samples)" [ "$sum" = "$samples" -a "$sum" -gt 1000 ]
	check "$tag: folded paths end main;a;leaf and main;b;leaf" \
		grep -q 'main;a;leaf [0-9]*$' "$TMP/folded"
	check "$tag: ... and main;b;leaf" grep -q 'main;b;leaf [0-9]*$' "$TMP/folded"
done

# Other triggers and value sampling with stacks: the tree still shows.
for combo in "--event cpu-timer" "--values --freq 1000"; do
	db=$TMP/db_combo; rm -rf "$db"
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" --stacks $combo -- "$TMP/ct_nofp" 4000)
	ca=$(share "$db" callers leaf a) cb=$(share "$db" callers leaf b)
	check "--stacks $combo: same output, leaf called from a ($ca%) more than from b ($cb%)" \
		[ "$st" = 0 -a "$(cat "$TMP/v.out")" = "calltree 4000 0" ] && "$PY" -c 'import sys; a, b = sys.argv[1:]; sys.exit(not (a != "none" and b != "none" and float(a) > float(b) > 20))' "$ca" "$cb" || fail "--stacks $combo shares"
done

# Report columns: inclusive time, main at ~100% inclusive and 0 exclusive.
db=$TMP/db_nofp_cfi
"$VPROF" report --db "$db" --json -n 0 >"$TMP/r.json" 2>/dev/null
mainpc=$("$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = [r for e in d["events"] for r in e["rows"] if r.get("procedure") == "main"]
o = [r for e in d["events"] for r in e["rows"] if r.get("procedure", "").startswith("[")]
a, b = (r[0]["inclusive_percent"], r[0]["percent"]) if r else ("none", "none")
print(a, b, ",".join("%s=%.2f%%" % (x["procedure"], x["percent"]) for x in o) or "-")' "$TMP/r.json" 2>/dev/null)
read -r mincl mexcl mother <<<"$mainpc"
# The rows that are not samples ([kernel], [start-up]: the program's
# system CPU and what ran before sampling) hold no stack: main's share is
# of the rest (a fresh-clone run once had 18.6% of system CPU here).
check "report --json: main has inclusive >= 95% of the sampled time ($mincl, besides $mother) and exclusive < 1% ($mexcl)" \
	"$PY" -c 'import sys
a, b, o = sys.argv[1:]
other = sum(float(x.split("=")[1].rstrip("%")) for x in o.split(",") if "=" in x)
sys.exit(not (a != "none" and float(a) >= 0.95 * (100 - other) and float(b) < 1))' "${mincl:-none}" "${mexcl:-none}" "${mother:--}"
"$VPROF" report --db "$db" >"$TMP/r.txt" 2>/dev/null
check "report text: incl and incl% columns, call-stacks line" \
	grep -q 'incl%' "$TMP/r.txt"
check "report text: call stacks line" grep -q '^call stacks: [0-9]* samples with a stack, 0 dropped' "$TMP/r.txt"
"$VPROF" report --db "$db" --by line >"$TMP/l.txt" 2>/dev/null
check "report --by line still gives calltree.c lines" grep -q 'calltree.c:[0-9]* *leaf' "$TMP/l.txt"
"$VPROF" report --db "$db" --callers no_such_function >/dev/null 2>"$TMP/e"; st=$?
check "--callers of a procedure on no stack: status 1 and one message" \
	[ "$st" = 1 -a "$(wc -l <"$TMP/e")" = 1 ]

# pprof: samples are stacks, so main has cumulative time.
if "$VPROF" export --db "$db" --format pprof -o "$TMP/p.pb.gz" 2>/dev/null &&
	go tool pprof -top "$TMP/p.pb.gz" >"$TMP/top" 2>/dev/null; then
	check "pprof: main's cum% at least 95 (multi-location samples)" \
		awk '$NF == "main" { c = $5; sub("%", "", c); ok = c + 0 >= 95 } END { exit !ok }' "$TMP/top"
else
	fail "pprof export or go tool pprof failed"
fi

# Merging is additive: a second run into the same database.
before=$(awk '{s += $NF} END {print s + 0}' <("$VPROF" export --db "$db" --format folded 2>/dev/null))
runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" --add --no-merge --stacks --freq 1000 -- "$TMP/ct_nofp" 3000 >/dev/null
runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" --add --no-merge --stacks --freq 1000 -- "$TMP/ct_nofp" 3000 >/dev/null
"$VPROF" merge --db "$db" >/dev/null 2>&1
after=$(awk '{s += $NF} END {print s + 0}' <("$VPROF" export --db "$db" --format folded 2>/dev/null))
total=$("$VPROF" report --db "$db" --json 2>/dev/null | "$PY" -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
check "two more processes merged: folded sum grew ($before -> $after) and equals the samples ($total)" \
	[ "$after" -gt "$before" -a "$after" = "$total" ]
check "... and main;a;leaf is still one path (frames image-relative across processes)" \
	[ "$("$VPROF" export --db "$db" --format folded 2>/dev/null | grep -c 'main;a;leaf [0-9]*$')" = 1 ]

# --stack-depth cuts and counts.
db2=$TMP/db_depth
runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db2" --stack-depth 2 --freq 1000 -- "$TMP/ct_nofp" 3000 >/dev/null
maxd=$("$VPROF" export --db "$db2" --format folded 2>/dev/null | awk '{n = split($1, a, ";"); if (n > m) m = n} END {print m + 0}')
check "--stack-depth 2 (implies --stacks): at most 2 frames per path ($maxd)" [ "$maxd" = 2 ]
check "--stack-depth 2: cut stacks counted in the report" \
	grep -q 'call stacks: [0-9]* samples with a stack, 0 dropped (stack tables full), [1-9][0-9]* cut at depth 2' \
	<("$VPROF" report --db "$db2" 2>/dev/null)

# Debian programs: same output and status; stacks deeper than one frame,
# through libc.
head -c 3000000 /dev/urandom | base64 >"$TMP/in.txt"
xz -T2 -c "$TMP/in.txt" >"$TMP/xz.plain"; xst=$?
st=$(runst "$TMP/xz.v" "$TMP/v.err" "$VPROF" run --db "$TMP/db_xz" --stacks --freq 1000 -- xz -T2 -c "$TMP/in.txt")
check "xz -T2 --stacks: identical output and status ($st)" [ "$st" = "$xst" ] && cmp -s "$TMP/xz.plain" "$TMP/xz.v" || fail "xz output differs"
"$VPROF" export --db "$TMP/db_xz" --format folded >"$TMP/xz.folded" 2>/dev/null
check "xz: folded stacks through libc's start_thread, deeper than 3 frames" \
	awk '$1 ~ /start_thread;/ && split($1, a, ";") > 3 { ok = 1 } END { exit !ok }' "$TMP/xz.folded"
code='import hashlib
h = b""
for i in range(60000):
    h = hashlib.sha256(h + str(i).encode()).digest()
print(h.hex(), sum(i * i for i in range(300000)))'
"$PY" -c "$code" >"$TMP/py.plain"; pst=$?
st=$(runst "$TMP/py.v" "$TMP/v.err" "$VPROF" run --db "$TMP/db_py" --stacks --freq 1000 -- "$PY" -c "$code")
check "python3 --stacks: identical output and status ($st)" [ "$st" = "$pst" ] && cmp -s "$TMP/py.plain" "$TMP/py.v" || fail "python3 output differs"
"$VPROF" export --db "$TMP/db_py" --format folded >"$TMP/py.folded" 2>/dev/null
check "python3: folded stacks from __libc_start_call_main through the Python code (<module>, pyframes.c)" \
	awk '$1 ~ /__libc_start_call_main;.*;<module>(;|$)/ { ok = 1 } END { exit !ok }' "$TMP/py.folded"

# Through a program's own signal handler: samples in the handler's work
# are unwound through the kernel's signal frame into main (cfi's
# __restore_rt rule), same output and status.
cat >"$TMP/sigh.c" <<'CEOF'
#include <signal.h>
#include <stdio.h>
static volatile double sink;
__attribute__((noinline)) static void burn(void) { for (int i = 0; i < 200000; i++) sink += i * 0.5; }
static void on_usr(int sig) { burn(); }
__attribute__((noinline)) static void kick(void) { raise(SIGUSR1); }
int main(void) { signal(SIGUSR1, on_usr); for (int i = 0; i < 3000; i++) kick(); printf("sigh %d\n", sink > 0); return 0; }
CEOF
cc -O1 -g -o "$TMP/sigh" "$TMP/sigh.c"
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db_sigh" --stacks --freq 1000 -- "$TMP/sigh")
"$VPROF" export --db "$TMP/db_sigh" --format folded >"$TMP/sigh.folded" 2>/dev/null
through=$(awk '$1 ~ /;main;kick;.*;on_usr;burn$/ { s += $NF } END { print s + 0 }' "$TMP/sigh.folded")
inburn=$(awk '$1 ~ /burn$/ { s += $NF } END { print s + 0 }' "$TMP/sigh.folded")
check "program's signal handler: same output and status, $through of $inburn samples in burn() unwound through the signal frame into main;kick" \
	[ "$st" = 0 -a "$(cat "$TMP/v.out")" = "sigh 1" -a "$inburn" -gt 100 -a "$through" -ge $((inburn * 9 / 10)) ]
# The handler's caller is glibc's signal return, named as its symbol
# (libc6-dbg's .symtab): its FDE opens at the nop before the symbol, where
# the return address less one falls (it was "sub_3c04f").
named=$(awk '$1 ~ /;__restore_rt;on_usr;burn$/ { s += $NF } END { print s + 0 }' "$TMP/sigh.folded")
subs=$(grep -c ';sub_[0-9a-f]*;on_usr;' "$TMP/sigh.folded")
check "program's signal handler: its caller is __restore_rt in $named of $through samples, sub_ in $subs stacks" \
	[ "$named" -ge $((through * 9 / 10)) -a "$through" -gt 0 -a "$subs" = 0 ]

# Descriptors: the default (cfi) and the frame-pointer walk hold none;
# libunwind's validation pipe is moved out of the program's way (top
# quarter, marked ours).
plain_fds=$(ls /proc/self/fd | sort -n | tr '\n' ' ')
"$VPROF" run --db "$TMP/db_fd" --stacks -- ls /proc/self/fd 2>/dev/null | sort -n | tr '\n' ' ' >"$TMP/fd.cfi"
check "--stacks (cfi, the default): no descriptor at all beyond ls's own ($(cat "$TMP/fd.cfi"))" [ "$(cat "$TMP/fd.cfi")" = "$plain_fds" ]
"$VPROF" run --db "$TMP/db_fd" --stacks -- cat /proc/self/maps >"$TMP/maps.cfi" 2>/dev/null
VPROF_STACK_METHOD=unwind "$VPROF" run --db "$TMP/db_fd" --stacks -- cat /proc/self/maps >"$TMP/maps.unwind" 2>/dev/null
check "--stacks (cfi): libunwind is not loaded ($(grep -c libunwind "$TMP/maps.cfi") mappings; $(grep -c libunwind "$TMP/maps.unwind") with unwind)" \
	[ "$(grep -c libvprof "$TMP/maps.cfi")" -gt 0 -a "$(grep -c libunwind "$TMP/maps.cfi")" = 0 -a "$(grep -c libunwind "$TMP/maps.unwind")" -gt 0 ]
VPROF_STACK_METHOD=unwind "$VPROF" run --db "$TMP/db_fd" --stacks -- ls /proc/self/fd 2>/dev/null | sort -n | tr '\n' ' ' >"$TMP/fd.unwind"
VPROF_STACK_METHOD=fp "$VPROF" run --db "$TMP/db_fd" --stacks -- ls /proc/self/fd 2>/dev/null | sort -n | tr '\n' ' ' >"$TMP/fd.fp"
low=$(tr ' ' '\n' <"$TMP/fd.unwind" | awk '$1 != "" && $1 < 1000' | tr '\n' ' ')
check "--stacks (unwind): no descriptor below the top quarter beyond ls's own ($low / $plain_fds)" [ "$low" = "$plain_fds" ]
check "--stacks (fp): no descriptor at all beyond ls's own ($(cat "$TMP/fd.fp"))" [ "$(cat "$TMP/fd.fp")" = "$plain_fds" ]

# Bad values: one clear message each.
for bad in 0 65 abc -3 ""; do
	st=$(runst "$TMP/o" "$TMP/e" "$VPROF" run --db "$TMP/db_bad" --stack-depth "$bad" -- true)
	check "vprof run --stack-depth '$bad': usage status 2, one message naming it" \
		[ "$st" = 2 -a "$(wc -l <"$TMP/e")" = 1 ] && grep -q -- "--stack-depth $bad: expected a whole number from 1 to 64" "$TMP/e" || fail "message for '$bad'"
done
st=$(runst "$TMP/o" "$TMP/e" env VPROF_DB="$TMP/db_env" VPROF_STACKS=on VPROF_STACK_DEPTH=99 LD_PRELOAD="$LIBVPROF" "$TMP/ct_nofp" 200)
check "VPROF_STACK_DEPTH=99: one message, the program runs unprofiled with its output" \
	[ "$st" = 0 -a "$(wc -l <"$TMP/e")" = 1 -a "$(cat "$TMP/o")" = "calltree 200 0" ]
check "... the message names the variable and the range" grep -q 'VPROF_STACK_DEPTH=99: expected an integer from 1 to 64' "$TMP/e"
st=$(runst "$TMP/o" "$TMP/e" env VPROF_DB="$TMP/db_env" VPROF_STACKS=off VPROF_STACK_DEPTH=8 LD_PRELOAD="$LIBVPROF" "$TMP/ct_nofp" 200)
check "VPROF_STACKS=off with VPROF_STACK_DEPTH: one message saying so" \
	[ "$st" = 0 -a "$(wc -l <"$TMP/e")" = 1 ] && grep -q 'turns off' "$TMP/e" || fail "stacks off + depth"
st=$(runst "$TMP/o" "$TMP/e" env VPROF_DB="$TMP/db_env" VPROF_STACKS=on VPROF_STACK_METHOD=dwarf LD_PRELOAD="$LIBVPROF" "$TMP/ct_nofp" 200)
check "VPROF_STACK_METHOD=dwarf: one message naming cfi, unwind, fp and cursor" \
	[ "$st" = 0 -a "$(wc -l <"$TMP/e")" = 1 ] && grep -q 'expected one of cfi, unwind, fp, cursor' "$TMP/e" || fail "method message"
finish
