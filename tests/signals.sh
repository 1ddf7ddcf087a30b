#!/bin/bash
# The profiled program's signals, exit status, errno and output are its own:
# every check runs the same program with and without `vprof run` and compares
# what the program printed and how it ended (exit status, or the signal that
# killed it). Covered: the program's own SIGPROF handlers, timers (setitimer,
# timer_create), masks, pending signals (sigpending, sigtimedwait,
# sigsuspend, signalfd, fork), SA_RESTART/EINTR, SA_RESETHAND, the stack its
# handler runs on, SIG_IGN across exec/posix_spawn; exit statuses and fatal
# signals; errno; file descriptors after closefrom(3); output of real
# programs (python3, sort, gzip), of gperftools' profiler and of an
# AddressSanitizer build. Fixture: tests/fixtures/behave_signals.c.
. "$(dirname "$0")/lib.sh"
ulimit -c 0                       # the SIGABRT/SIGSEGV cases: no core files

BS=$TMP/behave_signals
gcc -O2 -Wall -Wno-deprecated-declarations -pthread -o "$BS" "$TOP/tests/fixtures/behave_signals.c" || { fail "build fixture"; finish; }

# runst OUT ERR CMD...: run CMD with stdout/stderr to files; print how it
# ended: the exit status, or -N when killed by signal N (Python's returncode,
# which keeps "exit 139" and "killed by SIGSEGV" apart). same (lib.sh): the
# program plainly and under vprof run, compared.

# (a) The program's own SIGPROF handler and its own ITIMER_PROF: the handler
# still runs, and querying the disposition returns the program's handler
# (with its flags and mask), never vprof's.
# "default" is no --event at all: the automatic choice, task-clock here.
for ev in default cpu-timer; do
	evopt=(--event "$ev"); want=$ev
	[ "$ev" = default ] && { evopt=(); want=task-clock; }
	for how in own-sigaction own-signal; do
		same "$how: own SIGPROF handler and setitimer, same output ($ev)" "${evopt[@]}" -- "$BS" "$how"
		# The fixture also prints these; state them so the failure says which.
		grep -q 'handler ran: yes' "$TMP/v.out" && pass "$how: own handler runs ($ev)" ||
			fail "$how: own handler runs ($ev): $(cat "$TMP/v.out" | tr '\n' '|')"
		grep -q 'query returns own handler' "$TMP/v.out" && ! grep -q 'something else\|changed' "$TMP/v.out" &&
			pass "$how: sigaction(SIGPROF, NULL, &old) gives the program's handler ($ev)" ||
			fail "$how: sigaction(SIGPROF, NULL, &old) gives the program's handler ($ev): $(tr '\n' '|' <"$TMP/v.out")"
		grep -q 'backend '"$want" "$TMP/v.err" && pass "$how: profiled with $want ($ev)" ||
			fail "$how: profiled with $want ($ev): $(grep '^vprof:' "$TMP/v.err")"
	done
done

# The program's own POSIX timer delivering SIGPROF (SI_TIMER, its sival):
# every one reaches its handler with its own siginfo, on every backend.
for ev in task-clock cpu-timer itimer; do
	same "own timer_create SIGPROF timer, same output ($ev)" --event "$ev" -- "$BS" own-posix-timer
	grep -q 'timer handler ran: yes; siginfo always the timer.s own: yes' "$TMP/v.out" &&
		pass "own timer_create SIGPROF: handler ran with its siginfo ($ev)" ||
		fail "own timer_create SIGPROF: handler ran with its siginfo ($ev): $(tr '\n' '|' <"$TMP/v.out")"
done

# SIGPROF blocked by the program: vprof's samples must not show up as
# pending SIGPROFs the program can see or take with sigtimedwait/signalfd;
# its own raise() pends and runs its handler once at unblock.
for ev in task-clock cpu-timer; do
	same "SIGPROF blocked: sigpending/sigtimedwait see only the program's own ($ev)" --event "$ev" -- "$BS" blocked-pending
done

# The program's own SIGPROF while it is blocked: a fork child does not
# inherit it as pending; sigsuspend() with SIGPROF unblocked takes it; a
# signalfd for SIGPROF reads it.
same "pending SIGPROF is not inherited by a fork child" -- "$BS" pending-fork
same "sigsuspend() takes the program's pending SIGPROF" -- "$BS" sigsuspend
same "signalfd() reads the program's blocked SIGPROF" -- "$BS" signalfd

# The System V calls reach the same dispositions and masks through glibc's
# internal sigaction/sigprocmask, past the interposers: sigset(SIGPROF)
# must get the program's ticks only (not vprof's samples besides), and
# after sigignore(SIGPROF) vprof must still sample.
same "sigset/sighold/sigrelse/sigignore on SIGPROF" -- "$BS" sysv
sa=$("$VPROF" report --db "$TMP/db$n" --json -n 0 2>/dev/null | "$PY" -c '
import json, sys
print(sum(x["samples"] for e in json.load(sys.stdin)["events"] for x in e["rows"] if x.get("procedure") == "spin_after_sigignore"))')
[ "${sa:-0}" -gt 0 ] && pass "sigignore(SIGPROF): vprof still samples ($sa in spin_after_sigignore)" ||
	fail "sigignore(SIGPROF): 0.3 s in spin_after_sigignore, ${sa:-0} samples: $(grep '^vprof' "$TMP/v.err")"

# A real user of SIGPROF: gperftools' CPU profiler (its own handler, its own
# setitimer) preloaded after libvprof.so. Both profilers must get samples.
GPERF=/usr/lib/x86_64-linux-gnu/libprofiler.so.0
gp_samples() {   # total samples in a gperftools CPU profile
	"$PY" -c '
import struct, sys
d = open(sys.argv[1], "rb").read()
w = struct.unpack("<%dQ" % (len(d) // 8), d[:len(d) // 8 * 8])
i, n = 5, 0
while i + 1 < len(w):
    c, depth = w[i], w[i + 1]
    if c == 0 and depth == 1:
        break
    n += c
    i += 2 + depth
print(n)' "$1" 2>/dev/null || echo 0
}
if [ -e "$GPERF" ]; then
	gcc -O2 -Wall -pthread -o "$TMP/behave_spin" "$TOP/tests/fixtures/behave_spin.c"
	gpcmd="LD_PRELOAD=\"\${LD_PRELOAD:+\$LD_PRELOAD:}$GPERF\" CPUPROFILE='$TMP/gp.prof' CPUPROFILE_FREQUENCY=250 exec '$TMP/behave_spin' spin 0.4"
	rm -f "$TMP/gp.prof"; sh -c "$gpcmd" >/dev/null 2>&1
	g0=$(gp_samples "$TMP/gp.prof")
	for ev in task-clock cpu-timer; do
		rm -f "$TMP/gp.prof"
		same "gperftools profiler under vprof, same output ($ev)" --event "$ev" -- sh -c "$gpcmd"
		g1=$(gp_samples "$TMP/gp.prof")
		v1=$(sed -n 's/^vprof: \([0-9]*\) samples.*/\1/p' "$TMP/v.err")
		[ "$g0" -gt 0 ] && [ "$g1" -gt 0 ] && [ "${v1:-0}" -gt 0 ] &&
			pass "gperftools profiler under vprof: both sample ($ev: gperftools $g1, alone $g0; vprof $v1)" ||
			fail "gperftools profiler under vprof: both sample ($ev): gperftools $g1 (alone $g0), vprof ${v1:-none}"
	done
else
	fail "gperftools' libprofiler.so.0 (google-perftools) is installed: $GPERF missing"
fi

# The same under --event itimer: the program's setitimer(ITIMER_PROF)
# replaces vprof's (there is one per process), and every tick it asked for
# must still reach its handler.
same "own-sigaction: own SIGPROF handler and setitimer, same output (itimer)" --event itimer -- "$BS" own-sigaction
grep -q 'handler ran: yes' "$TMP/v.out" && pass "own-sigaction: own handler runs on its own ITIMER_PROF (itimer)" ||
	fail "own-sigaction: own handler runs on its own ITIMER_PROF (itimer): $(tr '\n' '|' <"$TMP/v.out")"

# The program's handler runs on the stack it asked for: without SA_ONSTACK,
# the thread's own stack, where a handler may use 200 KiB.
same "own SIGPROF handler using 200 KiB of stack" -- "$BS" deep-handler
same "own SIGPROF handler using 200 KiB of stack (cpu-timer)" --event cpu-timer -- "$BS" deep-handler
# SA_RESETHAND: the first SIGPROF runs the handler, the second kills.
same "SA_RESETHAND: handler once, then killed by SIGPROF" -- "$BS" resethand

# (b) raise(SIGPROF) with the default disposition kills, under vprof too,
# and vprof run dies of the same signal; SIG_IGN'd, it is ignored.
same "raise(SIGPROF) with SIG_DFL dies of SIGPROF" -- "$BS" raise-default
grep -q '^-27$' <<<"$(runst /dev/null /dev/null "$BS" raise-default)" &&
	pass "the fixture itself dies of SIGPROF (the comparison above means something)" ||
	fail "the fixture itself dies of SIGPROF"
same "raise(SIGPROF) with SIG_DFL dies of SIGPROF (cpu-timer)" --event cpu-timer -- "$BS" raise-default
same "raise(SIGPROF) with SIG_IGN is ignored" -- "$BS" raise-ign
same "raise(SIGPROF) with SIG_IGN is ignored (itimer)" --event itimer -- "$BS" raise-ign

# An ignored SIGPROF stays ignored across exec (the kernel keeps SIG_IGN
# through execve, resets handlers): the shell ignores it, execs (dash) or
# forks and execs (bash) the fixture, which raises it and must survive.
same "SIG_IGN of SIGPROF inherited across exec (sh -c 'trap \"\" PROF; exec ...')" -- sh -c "trap '' PROF; exec '$BS' raise-default"
same "SIG_IGN of SIGPROF inherited across fork+exec (bash)" -- bash -c "trap '' PROF; '$BS' raise-default; echo status \$?"
# ... and through posix_spawn, system() and popen() (glibc's spawn child
# resets handled signals to SIG_DFL; an ignored one stays ignored).
same "SIG_IGN of SIGPROF inherited through posix_spawn, system(), popen()" -- "$BS" ign-spawn

# A handler installed without SA_RESTART: a SIGPROF from another process
# interrupts a blocking read() with EINTR. (alarm(5) in the fixture turns a
# restarted, hanging read into death by SIGALRM.)
same "own SIGPROF handler without SA_RESTART: read() fails with EINTR" -- "$BS" eintr

# (c) Exit status and fatal signals pass through vprof run.
same "exit status 7" -- "$BS" exit7
same "killed by SIGABRT" -- "$BS" abort
same "killed by SIGSEGV" -- "$BS" segv
same "killed by SIGSEGV (itimer)" --event itimer -- "$BS" segv
same "exit status 7 (no merge)" --no-merge -- "$BS" exit7

# (d) errno: close(-1) in a tight loop, errno re-read 200 times after each
# call, ~1 s of CPU sampled at 4 kHz: the fixture counts every clobber.
# (The tick-driven timers cannot go above 250 Hz: 0.4 s for them.)
for ev in task-clock cpu-timer itimer; do
	secs=0.4; [ "$ev" = task-clock ] && secs=1
	same "errno preserved under sampling ($ev)" --event "$ev" --freq 4000 -- "$BS" errno "$secs"
	grep -q 'errno clobbered 0 times, bad returns 0' "$TMP/v.out" && pass "errno never clobbered ($ev)" ||
		fail "errno never clobbered ($ev): $(tr '\n' '|' <"$TMP/v.out")"
	s=$(sed -n 's/^vprof: \([0-9]*\) samples.*/\1/p' "$TMP/v.err")
	[ "${s:-0}" -gt 0 ] && pass "errno loop was sampled ($ev: $s samples)" ||
		fail "errno loop was sampled ($ev): $(grep '^vprof:' "$TMP/v.err")"
done

# (f) The program's file descriptors are its own. Daemons close every
# descriptor above 2 (closefrom); the descriptors the program then opens
# may have the numbers vprof's own files had. vprof must never close,
# write or ioctl them: files written and flushed at exit keep their data, a
# pipe written by a fork child delivers its message, and a spool whose
# descriptor (and flock) the program closed is not merged away while the
# program still runs (its later samples would be lost).
runst /dev/null /dev/null "$BS" fds "$TMP/f1.plain" "$TMP/f2.plain" >/dev/null
same "closefrom(3), fopen twice, exit flushes both" -- "$BS" fds "$TMP/f1" "$TMP/f2"
for f in f1 f2; do
	[ -s "$TMP/$f.plain" ] && cmp -s "$TMP/$f.plain" "$TMP/$f" &&
		pass "closefrom(3) then fopen: $f written as without vprof" ||
		fail "closefrom(3) then fopen: $f written as without vprof: got '$(cat "$TMP/$f" 2>&1)', want '$(cat "$TMP/$f.plain")'"
done
same "closefrom(3), pipe, fork: the child's message arrives" -- "$BS" fds-fork
grep -q 'not a vprof spool\|corrupt' "$TMP/v.err" &&
	fail "closefrom(3), pipe, fork: vprof's spool was written by the program: $(grep '^vprof' "$TMP/v.err" | tr '\n' '|')" ||
	pass "closefrom(3), pipe, fork: no corrupt spool"
rm -rf "$TMP/db-merge"
runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db-merge" -- "$BS" fds-merge "$VPROF" "$TMP/db-merge" >/dev/null
sa=$("$VPROF" report --db "$TMP/db-merge" --json -n 0 | "$PY" -c '
import json, sys
print(sum(x["samples"] for e in json.load(sys.stdin)["events"] for x in e["rows"] if x.get("procedure") == "spin_after_merge"))')
[ "${sa:-0}" -gt 0 ] && pass "closefrom(3), vprof merge mid-run: later samples kept ($sa in spin_after_merge)" ||
	fail "closefrom(3), vprof merge mid-run: 0.4 s of CPU in spin_after_merge after the merge, $sa samples kept: $(grep '^vprof' "$TMP/v.err" | tr '\n' '|')"

# A program with no handlers never sees EINTR: CPU bursts between
# nanosleep() and poll() calls, sampled at 1 kHz (4 ms ticks for the timers).
for ev in task-clock cpu-timer itimer; do
	same "no EINTR from nanosleep/poll under sampling ($ev)" --event "$ev" --freq 1000 -- "$BS" sleeps 0.25
done

# (e) Real Debian programs: stdout and stderr byte-identical.
printf '%s\n' pear apple fig banana apple cherry >"$TMP/words"
seq 1 200000 >"$TMP/nums"
STDERR_TOO=1
same "python3 output identical" -- "$PY" -c '
import sys
t = 0
for i in range(300000):
    t += i * i % 7
print(t); print("to stderr", file=sys.stderr); sys.exit(3)'
same "python3 output identical (cpu-timer, 1 kHz asked)" --event cpu-timer --freq 1000 -- "$PY" -c '
import hashlib
h = hashlib.sha256()
for i in range(100000):
    h.update(str(i).encode())
print(h.hexdigest())'
same "python3 uncaught exception: same traceback and status" -- "$PY" -c 'raise SystemExit("bye")'
same "sort output identical" -- sort -r "$TMP/words" "$TMP/nums"
same "sort -n output identical (itimer)" --event itimer -- sort -n -r "$TMP/nums"
same "gzip -c | md5sum identical" -- sh -c "gzip -c <'$TMP/nums' | md5sum"
same "missing file: same message and status" -- sort "$TMP/no-such-file"
same "shell pipeline killed by SIGTERM: same status" -- sh -c 'kill -TERM $$'

# A program built with AddressSanitizer: its runtime insists on coming first
# in the library list, and LD_PRELOAD puts libvprof.so before it. It must
# start and run as without vprof (ASan itself has an option for this).
STDERR_TOO=0
if gcc -O1 -fsanitize=address -o "$TMP/behave_signals_asan" "$TOP/tests/fixtures/behave_signals.c" 2>"$TMP/asan.err"; then
	same "AddressSanitizer-built program: same output and status" -- "$TMP/behave_signals_asan" exit7
	same "AddressSanitizer-built program raising SIGPROF: same status" -- "$TMP/behave_signals_asan" raise-default
else
	fail "build the fixture with -fsanitize=address: $(head -3 "$TMP/asan.err" | tr '\n' '|')"
fi
finish
