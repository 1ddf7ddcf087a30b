#!/bin/bash
# The handler never writes below a stack that is not vprof's. It needs
# ~10 KiB (--values --stacks); the kernel delivers SIGPROF on a program's
# own alternate stack (8 KiB, the sigaltstack(2) example) or, without
# --values, on the interrupted stack, which may be a coroutine's or a
# thread's last kilobytes. The handler's entry (preload/onstack.S) moves
# to the thread's handler stack before any work, so the kernel's frame is
# all that lands there, as for any signal the program takes.
#
# Each case runs the program alone, then under vprof, and compares its
# stdout (which reports the bytes corrupted below its alternate stack)
# and how it ended; then what vprof recorded:
#   1. tests/fixtures/altstack.c: its own 8 KiB sigaltstack in two
#      threads, a SIGSEGV handler on it (SA_ONSTACK), a SIGUSR1 handler
#      on it that samples land in; with and without a guard page below.
#      Before: --values wrote 2,100-2,700 bytes below it (exit 0), or,
#      with the guard page, the program's SIGSEGV handler fired. And its
#      main thread's stack overflowing, which that handler reports.
#   2. tests/fixtures/stack_room.c: 4 KiB left on a coroutine's stack,
#      6 KiB on a 256 KiB thread's, 6 KiB on the main thread under a
#      1 MiB RLIMIT_STACK. Before: --stacks killed the thread and main
#      cases with SIGSEGV, and plain sampling (drains) the 4 KiB ones.
. "$(dirname "$0")/lib.sh"
ulimit -c 0
gcc -O2 -g -Wall -pthread -o "$TMP/altstack" "$TOP/tests/fixtures/altstack.c" || { fail "cannot build altstack.c"; finish; }
gcc -O2 -g -Wall -pthread -o "$TMP/room" "$TOP/tests/fixtures/stack_room.c" || { fail "cannot build stack_room.c"; finish; }

# same (lib.sh): the program alone and under vprof run, its stdout and end
# compared. samples_in DB PROC: samples counted in procedure PROC.
samples_in() {
	"$VPROF" report --db "$1" -n 0 2>/dev/null |
		awk -v p="$2" '{ for (i = 2; i <= NF; i++) if ($i == p) s += $1 } END { print s + 0 }'
}

# 1. The program's own 8 KiB alternate stack.
for guard in "" guard; do
	st=$(runst "$TMP/alone" /dev/null "$TMP/altstack" $guard)
	check "altstack $guard alone: exit 0, nothing corrupted ($(tr '\n' '|' <"$TMP/alone"))" \
		[ "$st" = 0 -a "$(grep -c 'corrupted bytes below the stack: 0$' "$TMP/alone")" = 2 ]
	for how in "--values" "--values --stacks" "--stacks" ""; do
		what="altstack${guard:+ guard} under vprof run ${how:-(PC sampling)} --freq 1000"
		same "$what: same output and exit" $how --freq 1000 -- "$TMP/altstack" $guard
		grep -q 'SIGSEGV handler fired' "$TMP/v.out" &&
			fail "$what: the program's SIGSEGV handler fired" ||
			pass "$what: the program's SIGSEGV handler never fired"
		# ~1.2 CPU-s at 1 kHz: most of it in leaf_work.
		s=$(samples_in "$TMP/db$n" leaf_work)
		check "$what: samples recorded ($s in leaf_work, >= 500)" [ "$s" -ge 500 ]
		case " $how " in *" --values "*)
			# Interpretation goes on although the signal lands on the
			# program's stack (ours is made the alternate stack for
			# it): ~600 runs at --interp-every 2.
			r=$("$VPROF" report --db "$TMP/db$n" -n 1 2>/dev/null | sed -n 's/.*interpretation runs \([0-9]*\).*/\1/p')
			check "$what: values still sampled (${r:-0} interpretation runs, >= 300)" [ "${r:-0}" -ge 300 ]
		esac
		case " $how " in *" --stacks "*)
			"$VPROF" export --db "$TMP/db$n" --format folded >"$TMP/folded" 2>/dev/null
			deep=$(awk '$1 ~ /;work;mid_work;leaf_work$/ { s += $NF } END { print s + 0 }' "$TMP/folded")
			check "$what: whole stacks unwound ($deep samples through work;mid_work;leaf_work, >= 400)" \
				[ "$deep" -ge 400 ]
		esac
	done
done

# The man page's case itself: the main thread's stack overflows and the
# program's SIGSEGV handler, on its 8 KiB stack, ends it (exit 3); under
# the interpreting modes vprof holds SIGSEGV and hands it over from there.
for how in "--values" "--values --stacks" "--stacks" ""; do
	same "altstack overflow under vprof run ${how:-(PC sampling)}: its SIGSEGV handler ends it, as alone" \
		$how -- "$TMP/altstack" overflow
done

# 2. Little stack left: a coroutine, a thread, the main thread.
for c in "coro 4096" "thread 6144" "thread 4096" "main 6144"; do
	st=$(runst "$TMP/alone" "$TMP/alone.err" "$TMP/room" $c)
	check "stack_room $c alone: exit 0 ($(tr '\n' '|' <"$TMP/alone.err"))" [ "$st" = 0 ]
	for how in "--stacks" "--stacks --event cpu-timer" "" "--values"; do
		what="stack_room $c under vprof run ${how:-(PC sampling)}"
		same "$what: same output and exit" $how --freq 1000 -- "$TMP/room" $c
		s=$(samples_in "$TMP/db$n" spin.constprop.0)
		[ "$s" = 0 ] && s=$(samples_in "$TMP/db$n" spin)
		check "$what: samples recorded ($s in spin, >= 150)" [ "$s" -ge 150 ]
		if [ "$how" = "--stacks" ] && [ "${c% *}" != coro ]; then
			# A thread's or main's stack is walked whole from there; a
			# coroutine's gets its leaf (tests/coro_stack.sh).
			"$VPROF" export --db "$TMP/db$n" --format folded >"$TMP/folded" 2>/dev/null
			deep=$(awk '$1 ~ /;descend;at_bottom;spin/ { s += $NF } END { print s + 0 }' "$TMP/folded")
			check "$what: whole stacks unwound ($deep through descend;at_bottom;spin, >= 200)" [ "$deep" -ge 200 ]
		fi
	done
done
finish
