#!/bin/bash
# Sampling triggers: each backend that this machine has produces samples in
# the right function; the hardware ones fail cleanly (one message, program
# unharmed); the automatic choice falls back in order cycles -> task-clock ->
# cpu-timer -> itimer -> unprofiled, forced down that path with
# VPROF_UPCALL_FAKE_ENOENT. Fixture: tests/fixtures/behave_spin.c.
#
# The hardware path (cycles, instructions actually sampling) is untested
# here: this VM has no PMU, perf_event_open of a hardware event fails with
# ENOENT. Only its failure and the selection logic are checked.
. "$(dirname "$0")/lib.sh"

SP=$TMP/behave_spin
gcc -O2 -Wall -pthread -o "$SP" "$TOP/tests/fixtures/behave_spin.c" || { fail "build fixture"; finish; }

# report_get DB WHAT: from `vprof report --json`: "events" (event names with
# a non-zero total, comma-separated), "total EVENT", "proc EVENT NAME"
# (samples of that procedure).
report_get() {
	"$VPROF" report --db "$1" --json -n 0 2>"$TMP/report.err" | "$PY" -c '
import json, sys
r = json.load(sys.stdin)
what = sys.argv[1:]
evs = {e["event"]: e for e in r["events"]}
if what[0] == "events":
    print(",".join(sorted(k for k, e in evs.items() if e["total"] > 0)))
elif what[0] == "total":
    print(evs[what[1]]["total"] if what[1] in evs else 0)
elif what[0] == "proc":
    e = evs.get(what[1], {"rows": []})
    print(sum(x["samples"] for x in e["rows"] if x.get("procedure") == what[2]))
' "${@:2}"
}

st0=$(runst "$TMP/p.out" "$TMP/p.err" "$SP" spin 0.4)
[ "$st0" = 0 ] && grep -q spun "$TMP/p.out" && pass "fixture runs without vprof" ||
	fail "fixture runs without vprof: status $st0"

# Same program output and status as the run without vprof.
same_as_plain() {   # same_as_plain WHAT STATUS
	if [ "$2" = "$st0" ] && cmp -s "$TMP/p.out" "$TMP/v.out"; then pass "$1"
	else fail "$1: status $2 (without vprof $st0), stdout: $(tr '\n' '|' <"$TMP/v.out")"; fi
}
summary_backend() { sed -n 's/^vprof: .* samples from .*, backend \([a-z+-]*\), .*/\1/p' "$TMP/v.err"; }

# Each software backend, forced: samples, under its own event, in spin_main.
for ev in task-clock cpu-timer itimer; do
	db=$TMP/db-$ev
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" --event "$ev" -- "$SP" spin 0.4)
	same_as_plain "--event $ev: program output and status unchanged" "$st"
	b=$(summary_backend)
	[ "$b" = "$ev" ] && pass "--event $ev: vprof run says backend $ev" ||
		fail "--event $ev: vprof run says backend $ev: got '$b': $(tr '\n' '|' <"$TMP/v.err")"
	evs=$(report_get "$db" events)
	[ "$evs" = "$ev" ] && pass "--event $ev: report has samples under $ev only" ||
		fail "--event $ev: report has samples under $ev only: got '$evs' $(cat "$TMP/report.err")"
	tot=$(report_get "$db" total "$ev")
	inspin=$(report_get "$db" proc "$ev" spin_main)
	# 0.4 s of CPU at 250 Hz is ~100 samples; most of them in spin_main.
	[ "${tot:-0}" -gt 0 ] && [ $((inspin * 10)) -ge $((tot * 8)) ] &&
		pass "--event $ev: $tot samples, $inspin in spin_main" ||
		fail "--event $ev: samples in spin_main: $inspin of ${tot:-0}"
	grep -v '^vprof: [0-9]* samples from' "$TMP/v.err" | grep -q . &&
		fail "--event $ev: no other messages: $(tr '\n' '|' <"$TMP/v.err")" ||
		pass "--event $ev: no messages besides the summary"
done

# Hardware events: no PMU here, so they fail: exactly one message naming the
# event, and the program runs on, unprofiled, as it would without vprof.
# The runs start a shell that runs the fixture twice: the message must not
# be repeated by every process.
sh2="'$SP' spin 0.2 && '$SP' spin 0.2"
"$PY" -c 'import subprocess, sys
r = subprocess.run(["sh", "-c", sys.argv[1]], stdout=open(sys.argv[2], "wb"))
print(r.returncode)' "$sh2" "$TMP/p2.out" >"$TMP/p2.st"
for ev in cycles instructions; do
	db=$TMP/db-$ev
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" --event "$ev" -- sh -c "$sh2")
	[ "$st" = "$(cat "$TMP/p2.st")" ] && cmp -s "$TMP/p2.out" "$TMP/v.out" &&
		pass "--event $ev: programs run with their normal output and status" ||
		fail "--event $ev: programs run with their normal output and status: status $st, stdout $(tr '\n' '|' <"$TMP/v.out")"
	# The summary line of vprof run ("0 samples ..., backend none") is not
	# counted as a message about the failure.
	msgs=$(grep -v '^vprof: [0-9]* samples from' "$TMP/v.err")
	nmsg=$(grep -c . <<<"$msgs")
	[ "$nmsg" = 1 ] && grep -q "$ev" <<<"$msgs" && grep -qi 'unprofiled' <<<"$msgs" &&
		pass "--event $ev: exactly one message, naming $ev and saying the program runs unprofiled" ||
		fail "--event $ev: exactly one clear message: got $nmsg: $(tr '\n' '|' <"$TMP/v.err")"
	b=$(summary_backend)
	[ "$b" = "none" ] || [ -z "$b" ] && pass "--event $ev: no backend claimed" ||
		fail "--event $ev: no backend claimed: summary says '$b'"
	[ -z "$(report_get "$db" events)" ] && pass "--event $ev: no samples recorded" ||
		fail "--event $ev: no samples recorded: $(report_get "$db" events)"
done

# Automatic choice, with the better backends faked absent.
auto() {   # auto FAKED EXPECTED
	local db=$TMP/db-auto-$2
	st=$(VPROF_UPCALL_FAKE_ENOENT=$1 runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$db" -- "$SP" spin 0.4)
	same_as_plain "auto with ${1:-nothing} absent: program output and status unchanged" "$st"
	b=$(summary_backend)
	evs=$(report_get "$db" events)
	if [ "$2" = none ]; then
		msgs=$(grep -v '^vprof: [0-9]* samples from' "$TMP/v.err")
		[ "$(grep -c . <<<"$msgs")" = 1 ] && grep -qi unprofiled <<<"$msgs" &&
			pass "auto with ${1:-nothing} absent: one message, runs unprofiled" ||
			fail "auto with ${1:-nothing} absent: one message, runs unprofiled: $(tr '\n' '|' <"$TMP/v.err")"
		[ -z "$evs" ] && pass "auto with ${1:-nothing} absent: no samples" ||
			fail "auto with ${1:-nothing} absent: no samples: got $evs"
	else
		[ "$b" = "$2" ] && pass "auto with ${1:-nothing} absent: vprof run says backend $2" ||
			fail "auto with ${1:-nothing} absent: vprof run says backend $2: got '$b': $(tr '\n' '|' <"$TMP/v.err")"
		[ "$evs" = "$2" ] && pass "auto with ${1:-nothing} absent: report's event is $2" ||
			fail "auto with ${1:-nothing} absent: report's event is $2: got '$evs'"
		[ "$(report_get "$db" proc "$2" spin_main)" -gt 0 ] && pass "auto with ${1:-nothing} absent: spin_main sampled" ||
			fail "auto with ${1:-nothing} absent: spin_main sampled"
	fi
}
auto "" task-clock           # the real machine: no PMU, so task-clock
auto cycles task-clock
auto cycles,task-clock cpu-timer
auto cycles,task-clock,cpu-timer itimer
auto cycles,task-clock,cpu-timer,itimer none
# Faking an absent backend that was forced: the forced one fails, no fallback.
st=$(VPROF_UPCALL_FAKE_ENOENT=cpu-timer runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db-forced" --event cpu-timer -- "$SP" spin 0.2)
[ "$st" = 0 ] && grep -q 'cpu-timer' "$TMP/v.err" && [ -z "$(report_get "$TMP/db-forced" events)" ] &&
	pass "forced cpu-timer, faked absent: message, no fallback, program runs" ||
	fail "forced cpu-timer, faked absent: status $st, events '$(report_get "$TMP/db-forced" events)', $(tr '\n' '|' <"$TMP/v.err")"

# A bad --event: a usage error (exit 2) naming the nearest event and
# listing them all, before anything runs; set by hand (VPROF_EVENT), the
# library's one message and the program runs unprofiled, unharmed.
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db-bad" --event cycels -- "$SP" spin 0.2)
[ "$st" = 2 ] && [ ! -s "$TMP/v.out" ] && [ "$(grep -c . "$TMP/v.err")" = 1 ] &&
	grep -q 'did you mean cycles?.*task-clock' "$TMP/v.err" &&
	pass "--event cycels: exit 2, one message with the nearest event and the list, program not run" ||
	fail "--event cycels: status $st: $(tr '\n' '|' <"$TMP/v.err")"
st=$(VPROF_EVENT=cycels runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db-bad" -- "$SP" spin 0.2)
msgs=$(grep -v '^vprof: [0-9]* samples from' "$TMP/v.err")
[ "$st" = 0 ] && [ "$(grep -c . <<<"$msgs")" = 1 ] && grep -q 'task-clock' <<<"$msgs" &&
	pass "VPROF_EVENT=cycels: one message listing the accepted events, program runs" ||
	fail "VPROF_EVENT=cycels: status $st: $(tr '\n' '|' <"$TMP/v.err")"
finish
