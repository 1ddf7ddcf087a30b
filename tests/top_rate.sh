#!/bin/bash
# The documented top rate (--freq 20000) costs no more than --max-cost
# allows. Each sample costs the kernel an interrupt (and in signal mode a
# signal's delivery and return), which no clock in the handler sees: the
# bound counted only the handler and drains, and a 1.95 s program took
# 26.9 s at 20 kHz in a VM whose timer interrupt costs ~45 us, the summary
# saying "achieved 19195 Hz" and nothing else (4.9x with --values). Now
# the kernel's cost of a sample is calibrated once per process tree
# (preload/selflimit.c, upcall_trigger_cost) and charged to each sample,
# and the summary says when and why the rate was lowered, the kernel's
# share named.
#
# spin (~2 s of CPU) unprofiled and at --freq 20000, interleaved, 3
# rounds: ring mode with the default bound (25%), with --max-cost 10 and
# with --max-cost 1, and value sampling (a signal per sample). CPU times
# (user + system), which a loaded machine stretches less than wall times,
# but still by 5-10% in a bad round: the least of each kind's runs is
# compared, the profiled one with the unprofiled one / (1 - bound), plus
# what the first check comes after (a 50 ms window and a 20 ms drain at
# the asked rate) and the spread of the unprofiled runs. The profiled CPU
# is the program's own (the report's cpu_ns), not vprof run's. Where the rate was lowered (achieved under 16 kHz) the summary
# must say so and why, the kernel's share named; where it was not, it
# must say nothing of a bound: 20 kHz is within 25% on a machine whose
# interrupts are cheap. At 1% it is lowered on any machine.
. "$(dirname "$0")/lib.sh"
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build spin"
ROUNDS=200

# cpu_of OUT CMD...: CPU seconds of CMD and its children; stderr to OUT.
cpu_of() {
	local out=$1; shift
	"$PY" -c 'import resource, subprocess, sys
subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=open(sys.argv[1], "w"))
r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%.3f" % (r.ru_utime + r.ru_stime))' "$out" "$@"
}

declare -A cpu
bases=()
for round in 1 2 3; do
	bases+=("$(cpu_of /dev/null "$TMP/spin" $ROUNDS)")
	for cfg in ring25 ring10 ring1 values25; do
		case $cfg in
		ring25) opt=() ;;
		ring10) opt=(--max-cost 10) ;;
		ring1) opt=(--max-cost 1) ;;
		values25) opt=(--values) ;;
		esac
		rm -rf "$TMP/db"
		"$VPROF" run --db "$TMP/db" --freq 20000 "${opt[@]}" -- "$TMP/spin" $ROUNDS >/dev/null 2>"$TMP/$cfg.err"
		# The program's own CPU, as its process measured it at exit (not
		# vprof run's merge, nor the child that measured the kernel's
		# cost of a sample before the program started).
		c=$("$VPROF" report --db "$TMP/db" --json | "$PY" -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["cpu_ns"] / 1e9))')
		cpu[$cfg]="${cpu[$cfg]:-} $c"
	done
done
bases+=("$(cpu_of /dev/null "$TMP/spin" $ROUNDS)")
read -r bmin bmax <<<"$(printf '%s\n' "${bases[@]}" | sort -n | sed -n '1p;$p' | tr '\n' ' ')"
echo "unprofiled CPU: ${bases[*]} s"

for cfg in ring25 ring10 ring1 values25; do
	p=${cfg##*[a-z]}
	least=$(printf '%s\n' ${cpu[$cfg]} | sort -n | head -1)
	allowed=$("$PY" -c "print('%.3f' % ($bmin / (1 - $p / 100) + 0.07 + ($bmax - $bmin)))")
	check "$cfg: --freq 20000 took ${cpu[$cfg]# } s of CPU, the least at most $allowed s (unprofiled $bmin-$bmax s, bound $p%)" \
		"$PY" -c "import sys; sys.exit(not $least <= $allowed)"
	hz=$(grep -o 'achieved [0-9]* Hz' "$TMP/$cfg.err" | grep -o '[0-9]*')
	line=$(grep -o "vprof's cost over its bound[^)]*)[^)]*)" "$TMP/$cfg.err")
	if [ "${hz:-0}" -lt 16000 -o $cfg = ring1 ]; then
		check "$cfg: lowered (${hz:-?} Hz achieved), and the summary says so and why: ${line:-nothing}" \
			grep -q "vprof's cost over its bound of $p% (--max-cost): rate lowered in 1 thread .*the kernel's sampling [0-9.]*% ([0-9.]* us a sample)" "$TMP/$cfg.err"
	else
		check "$cfg: not lowered (${hz:-?} Hz achieved): the summary says nothing of a bound" \
			bash -c "! grep -q 'over its bound' '$TMP/$cfg.err'"
	fi
done
finish
