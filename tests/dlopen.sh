#!/bin/bash
# Images loaded at run time: samples in a dlopen'd library (built here with
# a build-id) are attributed to that library's path and function, also when
# it is dlclose'd before exit, also when another library later takes its
# address, also when loaded with dlmopen into a new namespace, also when the
# process ends with _exit() or SIGKILL before vprof's next image scan, also
# without a build-id; a library rebuilt after the run does not lend its
# symbols to old samples; and a library found only through the program's
# $ORIGIN RUNPATH
# still loads under vprof (the dlopen interposer must keep the caller's
# return address: a sibling call). Fixtures: tests/fixtures/behave_dlopen.c
# (the program) and tests/fixtures/behave_dlib.c (the library, -DFN=name).
. "$(dirname "$0")/lib.sh"

F=$TOP/tests/fixtures
DL=$TMP/behave_dlopen
lib() {   # lib OUT FN [extra gcc flags]
	gcc -O2 -fPIC -shared -Wl,--build-id "${@:3}" -DFN="$2" -o "$1" "$F/behave_dlib.c"
}
{ gcc -O2 -Wall -o "$DL" "$F/behave_dlopen.c" -ldl &&
	lib "$TMP/libbehave_a.so" dlib_work_a && lib "$TMP/libbehave_b.so" dlib_work_b &&
	mkdir -p "$TMP/app/lib" &&
	gcc -O2 -Wall -o "$TMP/app/behave_dlopen_rp" "$F/behave_dlopen.c" -ldl \
		-Wl,-rpath,'$ORIGIN/lib' -Wl,--enable-new-dtags &&
	lib "$TMP/app/lib/libbehave_rp.so" dlib_work_rp -Wl,-soname,libbehave_rp.so; } ||
	{ fail "build fixtures"; finish; }
readelf -n "$TMP/libbehave_a.so" | grep -q 'Build ID' && pass "library has a build-id" ||
	fail "library has a build-id"
readelf -d "$TMP/app/behave_dlopen_rp" | grep -q 'RUNPATH.*\$ORIGIN/lib' &&
	! readelf -d "$TMP/app/behave_dlopen_rp" | grep -q '(RPATH)' &&
	pass "RUNPATH fixture has DT_RUNPATH \$ORIGIN/lib and no DT_RPATH" ||
	fail "RUNPATH fixture has DT_RUNPATH \$ORIGIN/lib and no DT_RPATH: $(readelf -d "$TMP/app/behave_dlopen_rp" | grep PATH)"


# rows DB: "samples<TAB>procedure<TAB>image" for every row of the report.
rows() {
	"$VPROF" report --db "$1" --json -n 0 2>>"$TMP/report.err" | "$PY" -c '
import json, sys
for e in json.load(sys.stdin)["events"]:
    for x in e["rows"]:
        print("%d\t%s\t%s" % (x["samples"], x.get("procedure", ""), x["image"]))'
}
# (samples only: the [kernel:EXE] and [start-up:EXE] rows are CPU
# accounting, system time and start-up, not samples of the program's code)
total() { rows "$1" | awk -F'\t' '$3 !~ /^\[(kernel|start-up):/ { s += $1 } END { print s + 0 }'; }
# samples DB FN IMAGE: samples of procedure FN attributed to IMAGE
samples() { rows "$1" | awk -F'\t' -v f="$2" -v i="$3" '$2 == f && $3 == i { s += $1 } END { print s + 0 }'; }

n=0
# profile WHAT [vprof run options] -- CMD...: run CMD with and without vprof
# run; same stdout and status. The database is $TMP/db$n.
profile() {
	local what=$1; shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	n=$((n + 1))
	local st0 st1
	st0=$(runst "$TMP/p.out" "$TMP/p.err" "$@")
	if grep -q '^usage: behave_' "$TMP/p.err"; then fail "$what: the fixture does not know these arguments: $*"; return; fi
	st1=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db$n" "${opts[@]}" -- "$@")
	cat "$TMP/v.err"
	if [ "$st0" = "$st1" ] && cmp -s "$TMP/p.out" "$TMP/v.out"; then pass "$what: same output and status as without vprof"
	else fail "$what: same output and status as without vprof: status $st1 vs $st0, stdout $(diff "$TMP/p.out" "$TMP/v.out" | tr '\n' '|')"; fi
	grep -q '^ran\|failed' "$TMP/p.out" || fail "$what: the fixture did something: $(tr '\n' '|' <"$TMP/p.out")"
}
# attributed WHAT DB FN IMAGE SHARE%: FN in IMAGE has at least SHARE% of all samples
attributed() {
	local got tot
	got=$(samples "$2" "$3" "$4"); tot=$(total "$2")
	if [ "$tot" -gt 0 ] && [ $((got * 100)) -ge $((tot * $5)) ]; then
		pass "$1: $got of $tot samples in $3 of $4"
	else
		fail "$1: $3 of $4 should have >= $5% of samples, has $got of $tot; rows: $(rows "$2" | head -6 | tr '\n' '|')"
	fi
}

# 1. A library kept open until exit (0.5 s of CPU in it, ~125 samples).
profile "dlopen'd library" -- "$DL" 0.5 open "$TMP/libbehave_a.so" dlib_work_a
attributed "dlopen'd library" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 80

profile "dlopen'd library (cpu-timer)" --event cpu-timer -- "$DL" 0.5 open "$TMP/libbehave_a.so" dlib_work_a
attributed "dlopen'd library (cpu-timer)" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 80

# 2. dlclose'd before exit: its samples are still its own.
profile "dlclose'd library" -- "$DL" 0.5 close "$TMP/libbehave_a.so" dlib_work_a
grep -q 'dlclose: 0' "$TMP/v.out" && pass "dlclose'd library: dlclose succeeded" ||
	fail "dlclose'd library: dlclose succeeded: $(tr '\n' '|' <"$TMP/v.out")"
attributed "dlclose'd library" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 80

# 2b. dlmopen into a new namespace: dl_iterate_phdr shows only the caller's
# namespace, so the image must be recorded some other way; its samples
# must not end up unknown.
profile "dlmopen'd library (new namespace)" -- "$DL" 0.4 mopen "$TMP/libbehave_a.so" dlib_work_a
attributed "dlmopen'd library (new namespace)" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 80

# 2c. The process ends without destructors: _exit(0) (as fork children and
# quick exits do), or SIGKILL (the spool survives it by design). The library
# was dlopen'd after vprof's last image scan; its samples must still be its
# own, not unknown.
for how in _exit kill; do
	n=$((n + 1))
	BEHAVE_EXIT=$how runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db$n" -- \
		"$DL" 0.3 open "$TMP/libbehave_a.so" dlib_work_a >/dev/null
	grep -q '^ran dlib_work_a' "$TMP/v.out" || fail "ends with $how: the fixture ran: $(tr '\n' '|' <"$TMP/v.out")"
	attributed "dlopen'd library, process ends with $how" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 80
done

# 2d. A library without a build-id is attributed by path; a library with
# one that is rebuilt (different code, same path) after the run must not
# lend its symbols to the old samples (the build-ids differ).
lib "$TMP/libbehave_n.so" dlib_work_n -Wl,--build-id=none
profile "library without a build-id" -- "$DL" 0.3 open "$TMP/libbehave_n.so" dlib_work_n
attributed "library without a build-id" "$TMP/db$n" dlib_work_n "$TMP/libbehave_n.so" 80
cp "$TMP/libbehave_a.so" "$TMP/libbehave_r.so"
profile "library rebuilt after the run" -- "$DL" 0.3 open "$TMP/libbehave_r.so" dlib_work_a
lib "$TMP/libbehave_r.so" dlib_work_rebuilt -Wl,--build-id -O0 -g
rows "$TMP/db$n" | grep -q 'dlib_work_rebuilt' &&
	fail "library rebuilt after the run: old samples named after the new file's function: $(rows "$TMP/db$n" | tr '\n' '|')" ||
	pass "library rebuilt after the run: the new file's symbols are not used for the old samples"

# 3. Two libraries, one after the other, the first dlclose'd before the
# second is loaded (the loader usually gives the second the first one's
# address: stderr below shows the bases). Each spends half the CPU: each
# must keep its own samples, not have them all given to the later one.
profile "dlclose then dlopen of another" -- "$DL" 0.4 close "$TMP/libbehave_a.so" dlib_work_a \
	close "$TMP/libbehave_b.so" dlib_work_b
grep ' at ' "$TMP/v.err"
attributed "first library, dlclose'd before the second was loaded" "$TMP/db$n" dlib_work_a "$TMP/libbehave_a.so" 30
attributed "second library, loaded after the first was dlclose'd" "$TMP/db$n" dlib_work_b "$TMP/libbehave_b.so" 30

# 4. A library found only through the program's RUNPATH ($ORIGIN/lib),
# opened by bare soname. Without vprof it loads (checked: the comparison
# needs it to); under vprof it must too.
grep -q '^ran dlib_work_rp' <("$TMP/app/behave_dlopen_rp" 0.3 open libbehave_rp.so dlib_work_rp 2>/dev/null) &&
	pass "RUNPATH fixture loads its library without vprof" ||
	fail "RUNPATH fixture loads its library without vprof"
profile "dlopen by soname through \$ORIGIN RUNPATH" -- "$TMP/app/behave_dlopen_rp" 0.3 open libbehave_rp.so dlib_work_rp
grep -q '^ran dlib_work_rp' "$TMP/v.out" && pass "dlopen by soname through RUNPATH works under vprof" ||
	fail "dlopen by soname through RUNPATH works under vprof: $(tr '\n' '|' <"$TMP/v.out")"
attributed "library found through RUNPATH" "$TMP/db$n" dlib_work_rp "$TMP/app/lib/libbehave_rp.so" 60

# 5. A failing dlopen fails the same way (same dlerror text) under vprof.
profile "failing dlopen" -- "$DL" 0.1 open "$TMP/no-such-lib.so" nothing open libbehave_rp.so dlib_work_rp
grep -q 'failed' "$TMP/v.out" && pass "failing dlopen still fails under vprof" ||
	fail "failing dlopen still fails under vprof"
finish
