#!/bin/bash
# Time in the kernel: unprivileged perf events count user mode
# only, so each process records its user and system CPU at exit and the
# report adds a [kernel] row (image [kernel:EXE]) worth its system CPU in
# sample-equivalents. A program spending a good part of its CPU in
# getppid() system calls must show a [kernel] share within 10 points of the
# system share it measures itself (getrusage, printed by the fixture); a
# pure user loop shows ~0. processes.tsv gains the split at its end, its
# first ten columns unchanged.
. "$(dirname "$0")/lib.sh"
gcc -O2 -o "$TMP/sysloop" "$TOP/tests/fixtures/sysloop.c" || fail "cannot build fixture"

# share DB: the [kernel] row's percent of the event's samples (0 if none)
share() {
	"$VPROF" report --db "$1" --json -n 0 | "$PY" -c 'import json, sys
r = json.load(sys.stdin)
ev = r["events"][0]
print("%.1f" % sum(x["percent"] for x in ev["rows"] if x.get("procedure") == "[kernel]"))'
}

out=$(nice -n 10 "$VPROF" run --db "$TMP/db1" --event task-clock -- "$TMP/sysloop" 2 70 2>"$TMP/v.err")
check "syscall-heavy fixture ran (exit 0): $out" [ $? -eq 0 ]
read -r _ u _ s <<<"$out"
meas=$("$PY" -c "print('%.1f' % (100 * $s / ($u + $s)))")
got=$(share "$TMP/db1")
check "[kernel] share $got% within 10 points of the measured system share $meas%" \
	"$PY" -c "import sys; sys.exit(abs($got - $meas) > 10 or $meas < 20)"
# The share above follows from the split by construction (the row is the
# process's samples x sys/user); its scale must also match the clock:
# about the measured system seconds x the 250 Hz asked.
k=$("$VPROF" report --db "$TMP/db1" --json | "$PY" -c 'import json, sys; print(json.load(sys.stdin)["kernel_samples"])')
check "[kernel] holds $k sample-equivalents for ${s} s of system CPU at 250 Hz (within 30%)" \
	"$PY" -c "import sys; sys.exit(abs($k - $s * 250) > 0.3 * $s * 250)"
check "the report's kernel line names the system CPU" \
	grep -q '^kernel: system CPU .* shown as \[kernel\] rows' <("$VPROF" report --db "$TMP/db1")
check "the row's image is [kernel:sysloop]" \
	grep -q '\[kernel\] *\[kernel:sysloop\]' <("$VPROF" report --db "$TMP/db1")
row=$(head -1 "$TMP/db1/epochs/1/processes.tsv")
check "processes.tsv: cmdline still column 10, then user and system ns: $row" \
	"$PY" -c 'import sys
c = sys.argv[1].split("\t")
u, s = int(c[10]), int(c[11])
sys.exit(not (len(c) >= 12 and c[9].endswith("sysloop 2 70") and s > 0.2 * (u + s) and
              abs(u + s - int(c[7])) < 0.05 * int(c[7]) + 20e6))' "$row"

out=$(nice -n 10 "$VPROF" run --db "$TMP/db2" --event task-clock -- "$TMP/sysloop" 2 0 2>"$TMP/v.err")
check "pure user loop ran (exit 0): $out" [ $? -eq 0 ]
read -r _ u _ s <<<"$out"
meas=$("$PY" -c "print('%.1f' % (100 * $s / ($u + $s)))")
got=$(share "$TMP/db2")
# ~0 on a quiet machine (1-3%); under load the kernel charges the loop
# more system time (12% seen in CI with a fuzzer beside it): the row
# must follow what the process measured itself, within 5 points.
check "pure user loop: [kernel] share $got% within 5 points of its measured system share $meas%" \
	"$PY" -c "import sys; sys.exit(abs($got - $meas) > 5)"

# CPU timers deliver their signal on the return to user mode: their
# samples already hold the kernel time, at the system-call sites.
out=$(nice -n 10 "$VPROF" run --db "$TMP/db3" --event cpu-timer -- "$TMP/sysloop" 1 70 2>"$TMP/v.err")
got=$(share "$TMP/db3")
check "cpu-timer: no [kernel] row added ($got%)" [ "$got" = "0.0" ]
check "cpu-timer: the report says why" \
	grep -q 'no \[kernel\] rows (CPU timers' <("$VPROF" report --db "$TMP/db3")
finish
