#!/bin/bash
# `vprof run`'s summary says when ring mode fell back to a signal
# per sample (a ring that cannot be mapped: the user's locked memory spent;
# forced here with VPROF_TEST_UPCALL_NOMAP=1), and says nothing of it when
# the rings were mapped.
. "$(dirname "$0")/lib.sh"
gcc -O2 -o "$TMP/sysloop" "$TOP/tests/fixtures/sysloop.c" || fail "cannot build fixture"
"$VPROF" run --db "$TMP/db1" --event task-clock -- "$TMP/sysloop" 0.3 0 >/dev/null 2>"$TMP/v1.err"
check "rings mapped: no fallback in the summary: $(tail -1 "$TMP/v1.err")" \
	[ -z "$(grep 'fell back' "$TMP/v1.err")" -a -n "$(grep 'backend task-clock' "$TMP/v1.err")" ]
env VPROF_TEST_UPCALL_NOMAP=1 "$VPROF" run --db "$TMP/db2" --event task-clock -- "$TMP/sysloop" 0.3 0 \
	>/dev/null 2>"$TMP/v2.err"
check "no ring mappable: the summary says so: $(tail -1 "$TMP/v2.err")" \
	grep -q 'backend task-clock (ring mode fell back to a signal per sample in 1 thread)' "$TMP/v2.err"
finish
