#!/bin/bash
# Processes and threads: an exec'd program is profiled; a fork child writes
# its own spool, and nothing is counted twice; every thread is sampled (also
# threads that inherit a fully blocked signal mask, threads started by a
# library constructor before vprof's, and threads or processes shorter than
# one sampling period, in proportion); thread churn leaks no descriptor and,
# sampled at 20 kHz, is never killed by a late sample signal; a _Fork()
# child leaves the parent's sampling alone; posix_spawn, vfork, system()
# and popen() work as without vprof; with the process-wide itimer backend,
# a program exec'd without vprof (static, so LD_PRELOAD cannot reach it)
# runs as it would without vprof.
# Fixture: tests/fixtures/behave_spin.c. The per-process log checked here is
# DB/epochs/1/processes.tsv: pid ppid exe samples merged dropped exited
# cpu_ns backend cmdline.
. "$(dirname "$0")/lib.sh"

SP=$TMP/behave_spin
SPS=$TMP/behave_spin_static
gcc -O2 -Wall -pthread -o "$SP" "$TOP/tests/fixtures/behave_spin.c" || { fail "build fixture"; finish; }
gcc -O2 -Wall -pthread -static -o "$SPS" "$TOP/tests/fixtures/behave_spin.c" || { fail "build static fixture"; finish; }


n=0
# profile WHAT [vprof run options] -- CMD...: run CMD with and without vprof
# run: same stdout and status. The database is $DB.
profile() {
	local what=$1; shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	n=$((n + 1)); DB=$TMP/db$n
	local st0 st1
	st0=$(runst "$TMP/p.out" "$TMP/p.err" "$@")
	if grep -q '^usage: behave_' "$TMP/p.err"; then fail "$what: the fixture does not know these arguments: $*"; return; fi
	st1=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$DB" "${opts[@]}" -- "$@")
	cat "$TMP/v.err"
	local rate; rate=$(rate_sane)
	if [ "$st0" = "$st1" ] && cmp -s "$TMP/p.out" "$TMP/v.out" && [ -z "$rate" ]; then pass "$what: same output and status as without vprof"
	else fail "$what: same output and status as without vprof: status $st1 vs $st0, stdout diff: $(diff "$TMP/p.out" "$TMP/v.out" | tr '\n' '|') $rate"; fi
}
tsv() { cat "$DB/epochs/1/processes.tsv" 2>/dev/null; }
# rows_for_exe EXE: the rows of processes.tsv whose exe is EXE
rows_for_exe() { tsv | awk -F'\t' -v e="$1" '$3 == e'; }
# report_proc FN: samples of procedure FN (all events)
report_proc() {
	"$VPROF" report --db "$DB" --json -n 0 2>>"$TMP/report.err" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
print(sum(x["samples"] for e in r["events"] for x in e["rows"] if x.get("procedure") == sys.argv[1]))' "$1"
}
# Sampled counts only: the [kernel] rows (system CPU as sample-equivalents,
# kernel_samples) and [start-up] rows (CPU before arming, startup_samples)
# are not samples of any process's tables.
report_total() { "$VPROF" report --db "$DB" --json 2>>"$TMP/report.err" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
print(sum(e["total"] for e in r["events"]) - r.get("kernel_samples", 0) - r.get("startup_samples", 0))'; }

# 1. sh -c 'exec FIXTURE': the exec'd program is profiled, under its own exe.
for ev in task-clock cpu-timer; do
	profile "sh -c 'exec fixture' ($ev)" --event "$ev" -- sh -c "exec '$SP' spin 0.4"
	r=$(rows_for_exe "$SP")
	s=$(awk -F'\t' '{ s += $5 } END { print s + 0 }' <<<"$r")
	[ -n "$r" ] && [ "$s" -gt 0 ] && pass "exec'd fixture in processes.tsv with $s merged samples ($ev)" ||
		fail "exec'd fixture in processes.tsv with samples ($ev): $(tsv | cut -f1-9 | tr '\n' '|')"
	[ "$(report_proc spin_main)" -gt 0 ] && pass "exec'd fixture's spin_main in the report ($ev)" ||
		fail "exec'd fixture's spin_main in the report ($ev)"
done

# 2. fork: the child has its own spool (its own row, ppid = the parent),
# both are sampled in their own function, and the report's total equals
# the sum of the per-process merged samples (nothing counted twice).
for ev in task-clock cpu-timer itimer; do
	profile "fork child ($ev)" --event "$ev" -- "$SP" fork 0.3
	r=$(rows_for_exe "$SP")
	nr=$(grep -c . <<<"$r")
	ppid=$(awk -F'\t' '{ print $1 }' <<<"$r" | while read -r p; do
		awk -F'\t' -v p="$p" '$2 == p { print $1 }' <<<"$r"; done | head -1)
	kid=$(awk -F'\t' -v k="${ppid:-x}" '$1 == k' <<<"$r")
	[ "$nr" = 2 ] && [ -n "$kid" ] && pass "fork ($ev): parent and child each have a row, child's ppid is the parent" ||
		fail "fork ($ev): parent and child each have a row: $(tsv | cut -f1-9 | tr '\n' '|')"
	ks=$(awk -F'\t' '{ print $5 }' <<<"$kid")
	[ "${ks:-0}" -gt 0 ] && pass "fork ($ev): child has its own samples ($ks)" ||
		fail "fork ($ev): child has its own samples: row '$kid'"
	c=$(report_proc spin_child); p=$(report_proc spin_parent)
	[ "$c" -gt 0 ] && [ "$p" -gt 0 ] && pass "fork ($ev): spin_child ($c) and spin_parent ($p) both sampled" ||
		fail "fork ($ev): spin_child ($c) and spin_parent ($p) both sampled"
	# The child's samples can only be in spin_child and what it runs after
	# (exit): spin_child must not hold more samples than the child's row.
	[ "$c" -le "${ks:-0}" ] && pass "fork ($ev): spin_child's samples ($c) within the child's own (${ks:-0})" ||
		fail "fork ($ev): spin_child has $c samples, more than the child's own ${ks:-0}"
	tot=$(report_total); sum=$(tsv | awk -F'\t' '{ s += $5 } END { print s + 0 }')
	[ "$tot" -gt 0 ] && [ "$tot" = "$sum" ] && pass "fork ($ev): report total $tot = sum of per-process merged" ||
		fail "fork ($ev): report total $tot, sum of per-process merged $sum"
	said=$(sed -n 's/^vprof: \([0-9]*\) samples from \([0-9]*\) process.*/\1 \2/p' "$TMP/v.err")
	[ "$said" = "$sum 2" ] && pass "fork ($ev): vprof run's summary says $sum samples from 2 processes" ||
		fail "fork ($ev): vprof run's summary says '$said', expected '$sum 2'"
done

# 3. Eight threads from pthread_create, each in its own function: all
# eight functions are sampled (0.15 s of CPU each, ~37 samples expected).
for ev in task-clock cpu-timer; do
	profile "8 threads ($ev)" --event "$ev" -- "$SP" threads 0.15
	missing=""
	for i in 0 1 2 3 4 5 6 7; do
		[ "$(report_proc spin_t$i)" -gt 0 ] || missing="$missing spin_t$i"
	done
	[ -z "$missing" ] && pass "8 threads ($ev): all eight thread functions sampled" ||
		fail "8 threads ($ev): not sampled:$missing"
	# Equal CPU, so about equal samples: each within a factor 2.5 of the
	# mean (Poisson noise at ~37 samples is far inside that; a thread
	# sampled at its own random rate is not).
	counts=""
	for i in 0 1 2 3 4 5 6 7; do counts="$counts $(report_proc spin_t$i)"; done
	read -r lo hi mean <<<"$(tr ' ' '\n' <<<"$counts" | awk 'NF { s += $1; n++; if (n == 1 || $1 < lo) lo = $1; if ($1 > hi) hi = $1 }
		END { printf "%d %d %d\n", lo, hi, n ? s / n : 0 }')"
	[ "$mean" -gt 0 ] && [ $((lo * 5)) -ge $((mean * 2)) ] && [ $((hi * 2)) -le $((mean * 5)) ] &&
		pass "8 threads ($ev): samples in proportion to CPU (per thread:$counts)" ||
		fail "8 threads ($ev): equal CPU, unequal samples (per thread:$counts; mean $mean)"
done

# 3a. The same with every signal blocked by the main thread first, so the
# threads inherit the full mask (the usual set-up for a program that takes
# signals in one thread with sigwait). The program never asked not to be
# profiled: vprof must still sample every thread, or at least not lose
# 0.9 CPU-s without a trace.
for ev in task-clock cpu-timer; do
	profile "all signals blocked, 8 threads ($ev)" --event "$ev" -- "$SP" blocked 0.1
	missing=""
	for f in spin_main spin_t0 spin_t1 spin_t2 spin_t3 spin_t4 spin_t5 spin_t6 spin_t7; do
		[ "$(report_proc $f)" -gt 0 ] || missing="$missing $f"
	done
	[ -z "$missing" ] && pass "all signals blocked ($ev): main and all eight threads sampled" ||
		fail "all signals blocked ($ev): not sampled:$missing; $(grep '^vprof' "$TMP/v.err")"
done

# 3b. Short threads and short processes. Sampling is statistical: a thread
# or process that runs for a quarter of the mean period must be sampled
# with probability ~1/4, not never (the first period must start at a random
# phase, as a continuing counter would, not a full period from zero).
# 200 threads x 1 ms of CPU in spin_t0 at 250 Hz: ~50 samples expected;
# 100 processes x 1 ms in spin_main: ~25. Zero means short-lived work
# (thread pools, make -j's many small processes) is invisible.
profile "200 short threads" --event task-clock -- "$SP" churn 200
grep -q 'open descriptors unchanged' "$TMP/v.out" && pass "200 short threads: no descriptor leaked" ||
	fail "200 short threads: no descriptor leaked: $(cat "$TMP/v.out" "$TMP/v.err" | tr '\n' '|')"
st0=$(report_proc spin_t0)
[ "$st0" -gt 0 ] && pass "200 short threads (1 ms CPU each): sampled ($st0 samples in spin_t0)" ||
	fail "200 short threads (1 ms CPU each, 0.2 s in all): no sample in spin_t0: $(grep '^vprof' "$TMP/v.err")"
profile "100 short processes" --event task-clock -- sh -c "for i in \$(seq 100); do '$SP' spin 0.001; done"
sm=$(report_proc spin_main)
[ "$sm" -gt 0 ] && pass "100 short processes (1 ms CPU each): sampled ($sm samples in spin_main)" ||
	fail "100 short processes (1 ms CPU each, 0.1 s in all): no sample in spin_main: $(grep '^vprof' "$TMP/v.err")"

# The same churn sampled at 20 kHz (VPROF_FREQ goes to 100000): a sample
# signal still pending when a thread's trigger is stopped at its exit must
# be recognized as vprof's and dropped, never handed to the program's
# default SIGPROF action (which kills it).
profile "200 short threads at 20 kHz" --freq 20000 -- "$SP" churn 200

# 3c. fork from a second thread while the main thread spins: the child
# (single-threaded, the forking thread's copy) is profiled on its own.
profile "fork from a thread" -- "$SP" forkthread 0.3
r=$(rows_for_exe "$SP")
[ "$(grep -c . <<<"$r")" = 2 ] && [ "$(report_proc spin_child)" -gt 0 ] && [ "$(report_proc spin_parent)" -gt 0 ] &&
	pass "fork from a thread: child has its own row and its samples" ||
	fail "fork from a thread: rows $(tsv | cut -f1-9 | tr '\n' '|'), spin_child $(report_proc spin_child)"

# 3d. A child made by _Fork() (no atfork handlers: it still has the
# parent's spool mapping and the parent's perf descriptor) that exit()s,
# running destructors, must leave the parent's profiling alone: the parent
# spins after the child is gone and must be sampled.
profile "_Fork child that exit()s" -- "$SP" rawfork 0.3
sp=$(report_proc spin_parent)
[ "$sp" -gt 0 ] && pass "_Fork child that exit()s: the parent is still sampled ($sp in spin_parent)" ||
	fail "_Fork child that exit()s: the parent's 0.3 s in spin_parent afterwards has $sp samples: $(grep '^vprof' "$TMP/v.err")"

# 3e. A thread started by a library's constructor: libraries the program
# links with are initialized before LD_PRELOAD'ed ones, so it exists before
# vprof's constructor runs. It must be sampled all the same.
mkdir -p "$TMP/ctor"
gcc -O2 -Wall -pthread -fPIC -shared -o "$TMP/ctor/libbehave_ctor.so" "$TOP/tests/fixtures/behave_ctorlib.c" &&
	gcc -O2 -Wall -pthread -o "$TMP/ctor/behave_ctormain" "$TOP/tests/fixtures/behave_ctormain.c" \
		-L"$TMP/ctor" -lbehave_ctor -Wl,-rpath,"$TMP/ctor" || fail "build constructor-thread fixture"
profile "thread started by a library constructor" -- "$TMP/ctor/behave_ctormain"
ct=$(report_proc ctor_thread_spin)
[ "$ct" -gt 0 ] && pass "thread started by a library constructor: sampled ($ct in ctor_thread_spin)" ||
	fail "thread started by a library constructor: 0.3 s in ctor_thread_spin, $ct samples: $(grep '^vprof' "$TMP/v.err")"

# 4. posix_spawn, vfork (+exec, +_exit), system(), popen(): same output and
# statuses; the exec'd echo processes are profiled too (rows in the log).
profile "posix_spawn, vfork, system, popen" -- "$SP" spawn
ne=$(tsv | awk -F'\t' '$3 ~ /\/echo$/' | grep -c .)
[ "$ne" -ge 2 ] && pass "posix_spawn'd and vfork+exec'd echo profiled ($ne rows)" ||
	fail "posix_spawn'd and vfork+exec'd echo profiled: $ne rows: $(tsv | cut -f1-9 | tr '\n' '|')"
profile "posix_spawn, vfork, system, popen (itimer)" --event itimer -- "$SP" spawn

# 5. The itimer backend is process-wide and ITIMER_PROF survives execve: a
# program exec'd from a profiled process but not itself profiled (static:
# LD_PRELOAD does not apply) must not be killed by vprof's SIGPROF.
grep -q spun <("$SPS" spin 0.05) && pass "static fixture runs" || fail "static fixture runs"
profile "itimer: sh -c 'exec static program'" --event itimer -- sh -c "exec '$SPS' spin 0.3"
profile "itimer: bash forks and execs a static program" --event itimer -- bash -c "'$SPS' spin 0.3; echo status \$?"
profile "task-clock: sh -c 'exec static program'" --event task-clock -- sh -c "exec '$SPS' spin 0.3"
finish
