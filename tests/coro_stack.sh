#!/bin/bash
# Code running on a stack the program made (coroutines, fibers) is not
# walked: the CFI unwinder read every address between the interrupted RSP
# and the thread's stack top, and a rule that still described the
# thread's stack sent it into the guard page above a coroutine's stack,
# mapped 1 MiB below the thread's: --stacks killed the program with
# SIGSEGV in every run (tests/fixtures/coro_stack.c). Now each thread's
# stack bottom is recorded when it starts (pthread_getattr_np; the main
# thread's top less RLIMIT_STACK, at least 128 MiB) and an RSP below it
# gets its leaf only.
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -o "$TMP/coro" "$TOP/tests/fixtures/coro_stack.c" -lpthread || fail "cannot build coro_stack.c"
"$TMP/coro" >"$TMP/plain"; pst=$?
check "coro_stack alone: exit $pst, its output" [ "$pst" = 0 -a "$(cat "$TMP/plain")" = "coro done" ]
for how in "--stacks" "--stacks fp" "--values --interp-every 1"; do
	db="$TMP/db.$(echo "$how" | tr -dc 'a-z')"
	method=cfi; [ "${how#* }" = fp ] && method=fp
	st=$(VPROF_STACK_METHOD=$method runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$db" ${how% fp} --freq 1000 -- "$TMP/coro")
	check "coro_stack under vprof $how: exit $st, same output ($(head -c 200 "$TMP/v.err"))" \
		[ "$st" = "$pst" ] && cmp -s "$TMP/plain" "$TMP/out"
	n=$("$VPROF" report --db "$db" -n 0 | awk '{ for (i = 2; i <= NF; i++) if ($i == "coro_burn") s += $1 } END { print s + 0 }')
	check "coro_stack $how: $n samples in coro_burn (>= 50 of ~130)" [ "$n" -ge 50 ]
done
# The coroutine's samples are its leaf alone; the thread's own stack is
# still walked (main's join, waiting).
"$VPROF" export --db "$TMP/db.stacks" --format folded >"$TMP/folded" 2>/dev/null
leaf=$(awk '$1 == "coro_burn" { s += $NF } END { print s + 0 }' "$TMP/folded")
deep=$(grep -c ';coro_burn ' "$TMP/folded")
check "folded stacks: $leaf samples of coro_burn as a leaf alone, $deep stacks through it" [ "$leaf" -ge 50 -a "$deep" = 0 ]
finish
