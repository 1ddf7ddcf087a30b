#!/bin/bash
# vprof holds no descriptor the program can see: a program that
# lists /proc/self/fd (CPython's subprocess tests, daemons and sandboxes
# that close or pass "everything they have") must find exactly what it
# finds unprofiled. tests/fixtures/fdlist.c lists at start, after CPU
# time, from a thread, in a fork child and in an exec'd /bin/ls; the
# listings under vprof must equal the plain run's, in ring mode (the
# default), with signals per sample (VPROF_RING=0 and --values, whose
# events keep only a mapped header page), with the CPU-timer backend,
# at 10 kHz, and with --stacks (the default cfi unwinder: no libunwind,
# no pipe; with and without --values). Then CPython's own test_pass_fds_redirected and
# test_close_fds (Debian's libpython3.11-testsuite) pass under vprof as
# they pass plain.
. "$(dirname "$0")/lib.sh"

FL=$TMP/fdlist
gcc -O2 -Wall -pthread -o "$FL" "$TOP/tests/fixtures/fdlist.c" || { fail "build fixture"; finish; }

# Descriptors 0-2 to files; what else the caller passes down is the same
# in every run.
run_list() {   # run_list OUT CMD...: the same file names in every run
	local out=$1; shift
	"$@" </dev/null >"$TMP/stdout" 2>"$TMP/stderr"
	mv "$TMP/stdout" "$out"
	mv "$TMP/stderr" "$out.err"
}
run_list "$TMP/plain" "$FL" /bin/ls -1 /proc/self/fd
n=$(grep -c '' "$TMP/plain")
[ "$n" -ge 14 ] && pass "plain run listed its descriptors ($n lines)" ||
	fail "plain run listed its descriptors: $(head -c 400 "$TMP/plain.err")"

mode() {   # mode NAME ENV... -- VPROF-RUN-OPTIONS...
	local name=$1; shift
	local envs=()
	while [ "$1" != -- ]; do envs+=("$1"); shift; done
	shift
	rm -rf "$TMP/db"
	run_list "$TMP/$name" env "${envs[@]}" "$VPROF" run --db "$TMP/db" "$@" -- "$FL" /bin/ls -1 /proc/self/fd
	if cmp -s "$TMP/plain" "$TMP/$name"; then
		pass "$name: every listing equals the plain run's"
	else
		fail "$name: listings differ from the plain run's: $(diff "$TMP/plain" "$TMP/$name" | head -8 | tr '\n' '|')"
	fi
	local s
	s=$(sed -n 's/^vprof: \([0-9]*\) samples from \([0-9]*\) processes.*/\1 \2/p' "$TMP/$name.err")
	# fdlist, its fork child, the ls: 3 processes, ~0.25 s of CPU.
	[ "${s%% *}" -gt 0 -a "${s#* }" -ge 3 ] 2>/dev/null &&
		pass "$name: the run was profiled ($s: samples, processes)" ||
		fail "$name: the run was profiled: $(grep '^vprof' "$TMP/$name.err" | tr '\n' '|')"
}
mode ring -- --freq 1000
mode ring-10k -- --freq 10000
mode signals VPROF_RING=0 -- --freq 1000
mode values -- --freq 1000 --values
mode cpu-timer -- --event cpu-timer --freq 1000
mode stacks -- --freq 1000 --stacks
mode stacks-values -- --freq 1000 --stacks --values

# The one exception: an event that cannot be mapped (perf's locked-memory
# allowance spent; forced here by a test knob) keeps its descriptor. The
# thread is still sampled, and what the program sees beyond its own is
# only that: perf events, high (the top quarter of RLIMIT_NOFILE).
rm -rf "$TMP/db"
run_list "$TMP/nomap" env VPROF_TEST_UPCALL_NOMAP=1 "$VPROF" run --db "$TMP/db" --freq 1000 -- "$FL"
run_list "$TMP/plain1" "$FL"
extra=$(diff "$TMP/plain1" "$TMP/nomap" | grep '^[<>]' || true)
bad=$(echo "$extra" | grep -v '^> [a-z-]*: [0-9]\{3,\} anon_inode:$' | grep -v '^$' || true)
s=$(sed -n 's/^vprof: \([0-9]*\) samples.*/\1/p' "$TMP/nomap.err")
[ -n "$extra" -a -z "$bad" -a "${s:-0}" -gt 0 ] &&
	pass "no mapping possible: sampled ($s samples), only high perf descriptors kept ($(echo "$extra" | wc -l) lines)" ||
	fail "no mapping possible: sampled ($s samples), only high perf descriptors kept: extra '$(echo "$extra" | head -5 | tr '\n' '|')' bad '$(echo "$bad" | head -3 | tr '\n' '|')'"

# An unprivileged user with little locked memory (ulimit -l 64 and the
# default perf_event_mlock_kb: about 270 pages here) and 30 live threads:
# rings are small enough that every thread's event is mapped, so none
# keeps a descriptor. (As root, locked memory is not limited.)
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	chmod 755 "$TMP"
	mkdir -m 777 "$TMP/u"
	cat >"$TMP/u/threads.py" <<'PYEOF'
import os, threading, time
n = 30
start, listed = threading.Barrier(n + 1), threading.Barrier(n)
seen = []
def work(i):
    while time.thread_time() < 0.02: pass    # past the first period
    start.wait()
    if i == 0:
        for f in os.listdir("/proc/self/fd"):
            try: seen.append(os.readlink("/proc/self/fd/" + f))
            except OSError: pass
    listed.wait()
ts = [threading.Thread(target=work, args=(i,)) for i in range(n)]
for t in ts: t.start()
start.wait()
for t in ts: t.join()
print("perf descriptors:", sum("anon_inode" in l for l in seen))
PYEOF
	chmod 644 "$TMP/u/threads.py"
	# The command and the library copied where nobody can read them: a
	# checkout under /root (mode 0700) is not.
	cp "$VPROF" "$LIBVPROF" "$TMP/u/" && chmod 755 "$TMP/u/vprof" && chmod 644 "$TMP/u/libvprof.so"
	su nobody -s /bin/sh -c "ulimit -l 64; cd '$TMP/u' && '$TMP/u/vprof' run --db '$TMP/u/db' --freq 1000 -- '$PY' threads.py" >"$TMP/u/out" 2>&1
	grep -q '^perf descriptors: 0$' "$TMP/u/out" && grep -q '^vprof: [1-9][0-9]* samples' "$TMP/u/out" &&
		pass "unprivileged, ulimit -l 64, 30 threads: sampled, no descriptor" ||
		fail "unprivileged, ulimit -l 64, 30 threads: sampled, no descriptor: $(tr '\n' '|' <"$TMP/u/out")"
else
	echo "SKIP unprivileged, ulimit -l 64, 30 threads: needs root to become nobody"
fi

# A merge while a profiled process runs must leave its spool alone (no
# flock held any more: its owner record says it runs), and take it once
# the process is gone. The process waits on a FIFO, so there is no timing.
rm -rf "$TMP/db"
mkfifo "$TMP/go"
LD_PRELOAD=$LIBVPROF VPROF_DB=$TMP/db "$PY" -c 'import time
t = time.process_time()
while time.process_time() - t < 0.1: pass
open(__import__("sys").argv[1]).read()' "$TMP/go" 2>"$TMP/live.err" &
live=$!
spools() { ls "$TMP/db/spool/" 2>/dev/null | grep -c '\.spool$'; }
wait_for 120 eval '[ "$(spools)" -ge 1 ]'
"$VPROF" merge --db "$TMP/db" >"$TMP/m1" 2>&1
grep -q 'merged 0 spools.* 1 still running' "$TMP/m1" &&
	pass "merge while the owner runs: its spool left alone" ||
	fail "merge while the owner runs: its spool left alone: $(cat "$TMP/m1")"
echo >"$TMP/go"
wait "$live"
"$VPROF" merge --db "$TMP/db" >"$TMP/m2" 2>&1
grep -q 'merged 1 spool (\([1-9][0-9]*\) samples.* 0 still running, 0 corrupt' "$TMP/m2" &&
	pass "merge after the owner exited: its spool taken" ||
	fail "merge after the owner exited: its spool taken: $(cat "$TMP/m2")"

# A process that exec'd keeps its pid and start time but has dropped the
# old image's spool (and writes a new one): the old one is taken at once,
# the new one left alone while the process waits.
rm -rf "$TMP/db" "$TMP/go"
mkfifo "$TMP/go"
LD_PRELOAD=$LIBVPROF VPROF_DB=$TMP/db "$PY" -c 'import os, sys, time
t = time.process_time()
while time.process_time() - t < 0.1: pass
os.execv(sys.executable, [sys.executable, "-c", "open(\"%s\").read()" % sys.argv[1]])' "$TMP/go" 2>"$TMP/live.err" &
live=$!
wait_for 120 eval '[ "$(spools)" -ge 2 ]'
"$VPROF" merge --db "$TMP/db" >"$TMP/m1" 2>&1
grep -q 'merged 1 spool (\([1-9][0-9]*\) samples.* 1 still running, 0 corrupt' "$TMP/m1" &&
	pass "merge after the owner exec'd: the old image's spool taken, the new one left" ||
	fail "merge after the owner exec'd: the old image's spool taken, the new one left: $(cat "$TMP/m1")"
echo >"$TMP/go"
wait "$live"

# A spool with no owner record (as an older libvprof wrote them, which
# held a flock instead) is still merged once no one holds its lock.
rm -rf "$TMP/db"
LD_PRELOAD=$LIBVPROF VPROF_DB=$TMP/db "$PY" -c 'import time
t = time.process_time()
while time.process_time() - t < 0.1: pass'
sp=$(ls "$TMP/db/spool/"*.spool 2>/dev/null | head -1)
if [ -n "$sp" ]; then
	# The owner record: 64 bytes at 3584 in page 0 (spool/spool.h).
	dd if=/dev/zero of="$sp" bs=1 seek=3584 count=64 conv=notrunc status=none
	"$VPROF" merge --db "$TMP/db" >"$TMP/m3" 2>&1
	grep -q 'merged 1 spool (\([1-9][0-9]*\) samples.* 0 corrupt' "$TMP/m3" &&
		pass "spool without an owner record (older format): merged" ||
		fail "spool without an owner record (older format): merged: $(cat "$TMP/m3")"
else
	fail "spool without an owner record: no spool was written"
fi

# CPython's own tests that list what a child inherits.
if "$PY" -c 'import test.test_subprocess' 2>/dev/null; then
	cpy() {   # cpy OUT [vprof run options]: run the two tests, plain or profiled
		local out=$1; shift
		if [ "$1" = plain ]; then
			(cd "$TMP" && "$PY" -m test test_subprocess -m test_pass_fds_redirected -m test_close_fds -v) >"$out" 2>&1
		else
			rm -rf "$TMP/db"
			(cd "$TMP" && "$VPROF" run --db "$TMP/db" "$@" -- "$PY" -m test test_subprocess \
				-m test_pass_fds_redirected -m test_close_fds -v) >"$out" 2>&1
		fi
	}
	# "test_x (test.test_subprocess.Class.test_x)", maybe a docstring line,
	# "... ok": one "Class.test_x ok" line per test, sorted.
	results() {
		"$PY" -c 'import re, sys
t = open(sys.argv[1], errors="replace").read()
for m in sorted(re.findall(r"^(test_\w+) \(([\w.]+)\)\n?[^\n]*?\.\.\. (\w+)", t, re.M)):
    print(m[1].split(".")[-2] + "." + m[0], m[2])' "$1"
	}
	cpy "$TMP/cpy.plain" plain
	cpy "$TMP/cpy.ring" --freq 1000
	cpy "$TMP/cpy.values" --freq 1000 --values
	cpy "$TMP/cpy.stacks" --freq 1000 --stacks
	np=$(results "$TMP/cpy.plain" | grep -c 'POSIXProcessTestCase.* ok$')
	[ "$np" -eq 2 ] && pass "CPython test_subprocess fd tests pass plain ($np ok)" ||
		fail "CPython test_subprocess fd tests pass plain: $(tail -5 "$TMP/cpy.plain" | tr '\n' '|')"
	for m in ring values stacks; do
		if [ -n "$(results "$TMP/cpy.plain")" ] && [ "$(results "$TMP/cpy.plain")" = "$(results "$TMP/cpy.$m")" ] &&
			grep -q '^Tests result: SUCCESS' "$TMP/cpy.$m"; then
			pass "CPython test_pass_fds_redirected, test_close_fds under vprof ($m): same results, SUCCESS"
		else
			fail "CPython fd tests under vprof ($m): $(diff <(results "$TMP/cpy.plain") <(results "$TMP/cpy.$m") | tr '\n' '|') $(grep -E 'FAIL|Error|result:' "$TMP/cpy.$m" | head -5 | tr '\n' '|')"
		fi
	done
else
	fail "CPython's test suite is not installed (libpython3.11-testsuite, scripts/deps.sh)"
fi
# The merge's own descriptors: one spool read at a time, each closed. 120
# finished spools merged with `ulimit -n 48` (a reader that kept its spools'
# descriptors failed the 40-somethingth: the fuzz target found it).
for i in $(seq 120); do
	VPROF_DB="$TMP/dbmany" LD_PRELOAD="$LIBVPROF" /bin/true
done
nsp=$(find "$TMP/dbmany" -name '*.spool' | wc -l)
( ulimit -n 48; "$VPROF" merge --db "$TMP/dbmany" >"$TMP/many.out" 2>&1 )
mst=$?
left=$(find "$TMP/dbmany" -name '*.spool' | wc -l)
check "merge of $nsp spools with ulimit -n 48: status $mst, $left spools left" [ "$nsp" -ge 120 -a "$mst" = 0 -a "$left" = 0 ]
finish
