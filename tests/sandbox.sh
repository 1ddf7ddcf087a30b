#!/bin/bash
# seccomp sandboxes never harm the program. vprof makes system calls on
# the program's threads after start-up (drains and checks in the handler,
# perf_event_open at a thread's first sample and in new threads, getpid
# and getrusage at exit); a program that entered a sandbox was killed by
# them (strict mode: exit 137 instead of 42; a kill filter: SIGSYS, 159)
# or, under an errno filter, crashed or went unsampled without a word.
# Now prctl(PR_SET_SECCOMP) and seccomp(2) are interposed: the filter is
# run against every call sampling makes (preload/sandbox.c) and, if it
# forbids any, the thread stops sampling before the sandbox is in force,
# its threads made later are not armed, and vprof makes no call on it the
# sandbox forbids; a filter that forbids none changes nothing. A sandbox
# put in force without libc (the raw system call) is met by the first
# call of vprof's it refuses (EPERM): that thread stops, said once.
#
# tests/fixtures/sandbox.c burns 0.3 s in work_before, enters the sandbox,
# burns 0.3 s in work_after and 0.2 s in a thread (work_thread), exits 42.
# Checks, per backend and mode: output and exit status as unprofiled; the
# samples before the sandbox kept; after it, none where sampling stopped
# and the summary says why, all of them where the filter allows sampling.
# Then a program exec'd inside a filter (a service's allow-list that kills;
# a container's deny-list that fails perf_event_open with EPERM): the
# constructor probes the filter in a child (sandbox.c) and runs the
# program unprofiled with one message, or profiles it with a backend the
# filter allows (cpu-timer).
. "$(dirname "$0")/lib.sh"
gcc -O2 -g -o "$TMP/sandbox" "$TOP/tests/fixtures/sandbox.c" -lpthread || fail "cannot build sandbox.c"

declare -A want_out want_st
for mode in strict kill errno tsync invalid deny rawerrno; do
	want_st[$mode]=$(runst "$TMP/out" "$TMP/err" "$TMP/sandbox" $mode)
	want_out[$mode]=$(cat "$TMP/out")
	check "unprofiled $mode: exits 42 (fixture sane)" [ "${want_st[$mode]}" = 42 ]
done

samples() {   # samples FUNCTION: its own samples in the last run's report
	awk -v f="$1" '$NF ~ /sandbox$/ && $(NF-1) == f { s += $1 } END { print s + 0 }' "$TMP/rep"
}

# one CONFIG MODE...: CONFIG is a backend, or --values / --stacks.
one() {
	local cfg=$1 mode st opt before after thread line
	shift
	case $cfg in --*) opt=$cfg ;; *) opt="--event $cfg" ;; esac
	for mode in "$@"; do
		rm -rf "$TMP/db"
		st=$(runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" $opt --freq 1000 -- "$TMP/sandbox" $mode)
		check "$cfg $mode: exit $st and its output, as unprofiled (exit ${want_st[$mode]})" \
			[ "$st" = "${want_st[$mode]}" -a "$(cat "$TMP/out")" = "${want_out[$mode]}" ]
		"$VPROF" report --db "$TMP/db" -n 0 >"$TMP/rep" 2>&1
		before=$(samples work_before) after=$(samples work_after) thread=$(samples work_thread)
		line=$(grep -o 'sampling stopped[^)]*' "$TMP/v.err")
		# 0.3 s at 1 kHz; the itimer ticks at most HZ (250) times a second.
		local least=150
		[ "$cfg" = itimer ] && least=40
		check "$cfg $mode: the $before work_before samples before the sandbox kept (>= $least)" \
			[ "$before" -ge $least ]
		case $mode in
		strict|kill|errno|tsync)
			# work_after's few samples are the fixture's timing of it,
			# before the sandbox.
			check "$cfg $mode: not sampled inside the sandbox (work_after $after, work_thread $thread)" \
				[ "$after" -le 20 -a "$thread" = 0 ]
			local n=1
			[ $mode = tsync ] && n=2
			check "$cfg $mode: the summary says why: ${line:-nothing}" \
				grep -q "sampling stopped in $n threads\{0,1\} at a seccomp sandbox that forbids calls sampling makes" "$TMP/v.err"
			case $mode in kill|errno)
				check "$cfg $mode: ... and that the thread made inside was not sampled" \
					grep -q "; 1 thread made inside one not sampled" "$TMP/v.err" ;;
			esac ;;
		deny|invalid)
			check "$cfg $mode: sampled on (work_after $after >= $least, work_thread $thread >= $((least / 2)))" \
				[ "$after" -ge $least -a "$thread" -ge $((least / 2)) ]
			check "$cfg $mode: no sandbox stopped anything (${line:-nothing})" [ -z "$line" ] ;;
		rawerrno)
			check "$cfg $mode: the summary names the refused call: ${line:-nothing}" \
				grep -q "sampling stopped in 1 thread at a seccomp sandbox that refused a call of vprof's" "$TMP/v.err" ;;
		esac
		r=$(rate_sane); check "$cfg $mode: rate sane ${r:-}" [ -z "$r" ]
	done
}

gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build spin"
want=$("$TMP/spin" 20)
for mode in exec-kill exec-errno; do
	rm -rf "$TMP/db"
	st=$(runst "$TMP/out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/sandbox" $mode "$TMP/spin" 20)
	check "$mode spin: exit $st and its output, as unprofiled" [ "$st" = 0 -a "$(cat "$TMP/out")" = "$want" ]
	"$VPROF" report --db "$TMP/db" -n 0 >"$TMP/rep" 2>&1
	spun=$(awk '$NF ~ /spin$/ { s += $1 } END { print s + 0 }' "$TMP/rep")
	if [ $mode = exec-kill ]; then
		n=$(grep -c "^vprof: this process runs inside a seccomp filter that forbids [a-z_0-9]*; running unprofiled$" "$TMP/v.err")
		check "$mode: spin unprofiled, said once ($n): $(grep -o 'this process runs.*' "$TMP/v.err")" [ "$n" = 1 -a "$spun" = 0 ]
	else
		check "$mode: spin profiled ($spun samples, >= 100)" [ "$spun" -ge 100 ]
		check "$mode: ... with cpu-timer ($(grep -o 'backend [a-z+-]*' "$TMP/v.err"))" \
			grep -q "backend [a-z+-]*cpu-timer" "$TMP/v.err"
		check "$mode: nothing said of running unprofiled" bash -c "! grep -q unprofiled '$TMP/v.err'"
	fi
done

one task-clock strict kill errno tsync invalid deny rawerrno
one cpu-timer strict kill errno tsync deny rawerrno
one itimer strict kill errno tsync
one --values strict kill errno
one --stacks strict kill errno
finish
