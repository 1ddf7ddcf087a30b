#!/bin/bash
# Crash and kill survival.
#  1. Programs that crash under vprof (SIGSEGV, abort(), a stack overflow by
#     unbounded recursion, each after ~0.3 s of CPU) keep their own crash
#     behaviour: the same terminating signal and the same core-dump flag as
#     unprofiled, with `ulimit -c` 0 and unlimited alike; under plain
#     LD_PRELOAD; under `vprof run` the same signal and the program's own
#     core file (vprof run's status never carries the core flag: it
#     re-raises with RLIMIT_CORE 0, see below). `vprof merge` recovers their
#     spools: the database opens, each crashed process has samples.
#  2. Profiled processes SIGKILLed by pid at random moments, several at a
#     time (CRASH_KILLS, default 24): every spool left is recovered by one
#     merge, none corrupt, none left behind, the database opens.
. "$(dirname "$0")/lib.sh"

cat >"$TMP/crash.c" <<'EOF'
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
volatile unsigned long g_sink;
static void spin(double s)   /* s seconds of CPU */
{
	struct timespec t;
	do {
		for (int i = 0; i < 100000; i++)
			g_sink = g_sink * 3 + (unsigned long)i;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while (t.tv_sec + t.tv_nsec / 1e9 < s);
}
__attribute__((noinline)) static unsigned long recurse(unsigned long n)
{
	volatile char pad[256];
	pad[n % 256] = (char)n;
	return recurse(n + 1) + pad[(n + 1) % 256];
}
int main(int argc, char **argv)
{
	spin(0.3);
	if (!strcmp(argv[1], "segv"))
		*(volatile int *)(g_sink % 64) = 1;   /* the null page */
	if (!strcmp(argv[1], "abort"))
		abort();
	if (!strcmp(argv[1], "overflow"))
		return (int)recurse(0);
	return 9;
}
EOF
gcc -O1 -o "$TMP/crash" "$TMP/crash.c" || fail "cannot build the crash fixture"
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build fixture"
cd "$TMP" || exit 1    # core files, if any, land here

# how CMD...: run CMD, print "signal S core C" (or "exit N") as waitpid saw it.
how() {
	"$PY" -c 'import os, sys
pid = os.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
_, st = os.waitpid(pid, 0)
print("signal %d core %d" % (os.WTERMSIG(st), os.WCOREDUMP(st)) if os.WIFSIGNALED(st) else "exit %d" % os.WEXITSTATUS(st))' "$@"
}
# samples_of DB EXE: merged samples of EXE's rows in processes.tsv
samples_of() { awk -F'\t' -v e="$2" '$3 == e { s += $5 } END { print s + 0 }' "$1/epochs/1/processes.tsv" 2>/dev/null; }

n=0
for core in unlimited 0; do
	ulimit -S -c $core     # -S: the hard limit stays, so the next may raise it
	for m in segv abort overflow; do
		rm -f core core.*; plain=$(how "$TMP/crash" $m); rm -f core core.*
		case $plain in signal*) ;; *) fail "$m (ulimit -c $core): the fixture did not crash: $plain"; continue ;; esac
		[ $core = 0 ] || [ "${plain##* }" = 1 ] ||
			echo "NOTE: no core dumped even unprofiled (core_pattern $(cat /proc/sys/kernel/core_pattern)): the core flag is compared, but only as 0"
		n=$((n + 1)); db=$TMP/db$n
		got=$(how env LD_PRELOAD="$LIBVPROF" VPROF_DB="$db" VPROF_FREQ=1000 "$TMP/crash" $m); rm -f core core.*
		check "$m (ulimit -c $core), LD_PRELOAD: ended '$got', plain '$plain'" [ "$got" = "$plain" ]
		"$VPROF" merge --db "$db" >"$TMP/m.out" 2>&1
		check "$m (ulimit -c $core): merge recovers the spool ($(cat "$TMP/m.out"))" [ $? -eq 0 ]
		s=$(samples_of "$db" "$TMP/crash")
		check "$m (ulimit -c $core): $s samples recovered from the crashed process" [ "$s" -gt 0 ]
		"$VPROF" report --db "$db" >/dev/null 2>"$TMP/r.err"
		check "$m (ulimit -c $core): the database opens ($(head -c 200 "$TMP/r.err"))" [ $? -eq 0 ]
		n=$((n + 1)); db=$TMP/db$n
		# vprof run re-raises the program's signal with RLIMIT_CORE 0 (so
		# as not to dump its own core over the program's): its status says
		# the signal, never "core dumped". The program's own core file is
		# what must match, where core_pattern writes one to the cwd.
		got=$(how "$VPROF" run --db "$db" --freq 1000 -- "$TMP/crash" $m 2>/dev/null)
		check "$m (ulimit -c $core), vprof run: ended with '${got% core *}', plain '${plain% core *}'" [ "${got% core *}" = "${plain% core *}" ]
		if [ "$(cat /proc/sys/kernel/core_pattern)" = core ]; then
			[ -e core ] && got=1 || got=0; rm -f core core.*
			check "$m (ulimit -c $core), vprof run: program's core file written: $got, plain: ${plain##* }" [ "$got" = "${plain##* }" ]
		fi
		[ "${plain##* }" = 1 ] && echo "NOTE: $m: vprof run's own status has no core-dump flag (reports/report.c report_exit_like)"
		s=$(samples_of "$db" "$TMP/crash")
		check "$m (ulimit -c $core), vprof run: $s samples merged" [ "$s" -gt 0 ]
	done
done
ulimit -S -c 0

# 2. Random SIGKILLs, four processes at a time, into one database.
KILLS=${CRASH_KILLS:-24}
db=$TMP/killdb killed=0
for round in $(seq $((KILLS / 4))); do
	pids=()
	for j in 1 2 3 4; do
		LD_PRELOAD=$LIBVPROF VPROF_DB=$db VPROF_FREQ=4000 "$TMP/spin" forever >/dev/null &
		pids+=($!)
	done
	for pid in "${pids[@]}"; do
		sleep "0.$((RANDOM % 3))$((RANDOM % 10))"
		kill -9 "$pid" 2>/dev/null && killed=$((killed + 1))
	done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
done
spools=$(ls "$db/spool" 2>/dev/null | grep -c '\.spool$')
"$VPROF" merge --db "$db" >"$TMP/m.out" 2>&1
check "merge after $killed SIGKILLs succeeds ($(cat "$TMP/m.out"))" [ $? -eq 0 ]
rows=$(wc -l <"$db/epochs/1/processes.tsv")
check "every spool recovered: $spools spools, $rows processes merged" [ "$rows" -eq "$spools" -a "$spools" -gt 0 ]
check "no spool left, none corrupt" [ -z "$(ls "$db/spool")" ]
j=$("$VPROF" report --db "$db" --json 2>"$TMP/r.err" | "$PY" -c 'import json, sys; r = json.load(sys.stdin); print(r["samples"], r["corrupt"], r["not_exited"])')
read -r s c ne <<<"$j"
check "the database opens: $s samples, $c corrupt, $ne not exited of $rows ($(head -c 200 "$TMP/r.err"))" [ "${s:-0}" -gt 0 -a "${c:-1}" -eq 0 -a "${ne:-0}" -eq "$rows" ]
echo "crash: $killed processes SIGKILLed, $spools spools, $rows recovered"
finish
