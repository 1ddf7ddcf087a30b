#!/bin/bash
# `vprof run` checks its options before anything runs: each bad option or
# value is one message naming it (with "did you mean" for a near miss) and
# exit 2, and the program does not run (it would create a file). Values at
# the accepted bounds run it. A run too short to be sampled says why in
# words. The options `vprof run -h` lists are those docs/commands.md lists
# for it, and the other way round.
. "$(dirname "$0")/lib.sh"
touch "$TMP/afile"

# bad WHAT REGEX OPTIONS...: exit 2, one message matching REGEX, not run.
bad() {
	local what=$1 re=$2; shift 2
	rm -f "$TMP/ran"
	"$VPROF" run --db "$TMP/db" "$@" -- touch "$TMP/ran" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	[ "$rc" = 2 ] && [ ! -e "$TMP/ran" ] && [ "$(grep -c . "$TMP/err")" = 1 ] && grep -Eq -- "$re" "$TMP/err" &&
		pass "$what: exit 2, not run, one message ($(cat "$TMP/err"))" ||
		fail "$what: exit $rc, ran: $([ -e "$TMP/ran" ] && echo yes || echo no), message: $(cat "$TMP/err") (wanted /$re/)"
}
bad "--freq 999999" "--freq 999999: expected a whole number from 1 to 20000" --freq 999999
bad "--freq 0" "--freq 0: expected a whole number from 1 to 20000" --freq 0
bad "--freq abc" "--freq abc: expected a whole number" --freq abc
bad "--freq -- (no value)" "--freq takes a value: got '--'" --freq
bad "--db --add (its value left out)" "--db takes a value: got '--add'" --db --add
bad "--frq (a near miss)" "unknown option --frq; did you mean --freq\?" --frq 1000
bad "--vaules (a near miss)" "unknown option --vaules; did you mean --values\?" --vaules
bad "--bogus (nothing near)" "unknown option --bogus \(see" --bogus
bad "-x" "unknown option -x" -x
bad "--db naming a file" "--db $TMP/afile: not a directory" --db "$TMP/afile"
bad "--db under a file" "--db $TMP/afile/db: not a directory" --db "$TMP/afile/db"
bad "--event cycels" "--event cycels: not an event; did you mean cycles\?.*task-clock" --event cycels
bad "--period 10" "--period 10: expected a whole number from 50000" --period 10
bad "--max-cost 101" "--max-cost 101: expected a whole number from 0 to 100" --max-cost 101
bad "--max-cost -1" "--max-cost -1: expected a whole number from 0 to 100" --max-cost -1
bad "--interp-len 0" "--interp-len 0: expected a whole number from 1 to 4096" --interp-len 0
bad "--interp-every x" "--interp-every x: expected a whole number" --interp-every x
bad "--skew-skip 65" "--skew-skip 65: expected a whole number from 0 to 64" --skew-skip 65
bad "--stack-depth 65" "--stack-depth 65: expected a whole number from 1 to 64" --stack-depth 65
bad "--epoch-secs 0" "--epoch-secs 0: expected a whole number from 1" --epoch-secs 0
bad "--values=1 (takes no value)" "--values takes no value \(--values=1\)" --values=1
# No --db: the database from $VPROF_DB, a file here.
rm -f "$TMP/ran"
VPROF_DB=$TMP/afile "$VPROF" run -- touch "$TMP/ran" 2>"$TMP/err"; rc=$?
check "VPROF_DB naming a file: exit 2, not run ($rc: $(cat "$TMP/err"))" \
	[ "$rc" = 2 -a ! -e "$TMP/ran" ] && grep -q "database $TMP/afile: not a directory" "$TMP/err"

# Values at their bounds run the program, profiled.
good() {
	local what=$1; shift
	rm -f "$TMP/ran"
	"$VPROF" run --db "$TMP/db" "$@" -- touch "$TMP/ran" >"$TMP/out" 2>"$TMP/err"
	local rc=$?
	[ "$rc" = 0 ] && [ -e "$TMP/ran" ] && grep -q '^vprof: [0-9]* samples from 1 process' "$TMP/err" &&
		! grep -v '^vprof: [0-9]* samples from' "$TMP/err" | grep -q . &&
		pass "$what: runs, profiled" || fail "$what: exit $rc: $(cat "$TMP/err")"
}
good "--freq 20000" --freq 20000
good "--freq 1" --freq 1
good "--period 50000" --period 50000
good "--max-cost 0, --interp-len 4096, --skew-skip 64" --max-cost 0 --values --interp-len 4096 --skew-skip 64
good "--stack-depth 64" --stack-depth 64
good "--event auto" --event auto
# An option given overrides the other of a pair set in the environment.
VPROF_PERIOD=100000 good "--freq with VPROF_PERIOD set" --freq 500

# Too short to be sampled: said in words. `true` under the library uses
# ~1-2 ms of CPU, and up to a period or so on a busy host ("about").
"$VPROF" run --db "$TMP/dbt" -- true 2>"$TMP/err"
check "a run too short to be sampled says so ($(cat "$TMP/err"))" \
	grep -qE "true used [0-9.]* ms of CPU, (less than|about) one sampling period at 250 Hz \(4\.0 ms\): too short to be sampled at this rate" "$TMP/err"

# The options of `vprof run -h` and of docs/commands.md's `vprof run`.
# The usage lines, and the first word of each option line.
"$VPROF" run -h | awk '/^  --/ { print $1 } /^usage|^ {10,}\[/ { print }' |
	grep -o -- '--[a-z][a-z-]*' | sort -u >"$TMP/help.opts"
sed -n '/^## vprof run/,/^## /p' "$TOP/docs/commands.md" | grep -o -- '--[a-z][a-z-]*' | sort -u >"$TMP/doc.opts"
check "every option of vprof run -h is in docs/commands.md ($(comm -23 "$TMP/help.opts" "$TMP/doc.opts" | tr '\n' ' '))" \
	[ -z "$(comm -23 "$TMP/help.opts" "$TMP/doc.opts")" ]
sed -n '/^## vprof run/,/^## /p' "$TOP/docs/commands.md" | sed -n '/^    vprof run/,/^$/p' |
	grep -o -- '--[a-z][a-z-]*' | sort -u >"$TMP/syn.opts"
check "docs/commands.md's vprof run synopsis lists what -h does ($(comm -3 "$TMP/help.opts" "$TMP/syn.opts" | tr '\n' ' '))" \
	[ -z "$(comm -3 <(grep -v -- '--help' "$TMP/help.opts") "$TMP/syn.opts")" ]
finish
