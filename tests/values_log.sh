#!/bin/bash
# The value record log (docs/formats.md, "VLOG"): the handler appends each
# value sample to its thread's chunk of the spool's log and the merge folds
# the records into hotlists; only when the log is full do values go to the
# thread tables. On tests/fixtures/inv_intarg.c (power(x, e) with e = 3 in
# 97% of one call site's calls):
#  - at the defaults nearly every value sample goes through the log, none
#    to the thread tables, and `vprof invariants` ranks the planted
#    argument first;
#  - with the log cut to one chunk (VPROF_TEST_VLOG_CHUNKS=1) or to none
#    (=0) the rest goes to the thread tables, counted, and the answer is
#    the same;
#  - killed with SIGKILL mid-run under plain LD_PRELOAD, the program's log
#    is merged by `vprof merge`: its records reach the hotlists.
. "$(dirname "$0")/lib.sh"

gcc -O2 -g -fomit-frame-pointer -o "$TMP/inv_intarg" "$TOP/tests/fixtures/inv_intarg.c" ||
	fail "cannot build fixture"
N=400000000
LINE=$(grep -n CALL_A "$TOP/tests/fixtures/inv_intarg.c" | head -1 | cut -d: -f1)

# stats DB: "value_samples values_logged values_log_missed" from the report's JSON
stats() {
	"$VPROF" report --db "$1" --json | "$PY" -c '
import json, sys
d = json.load(sys.stdin)
print(d.get("value_samples", 0), d.get("values_logged", 0), d.get("values_log_missed", 0))'
}
# top DB: the first default row of vprof invariants, "callee register value site"
top() {
	"$VPROF" invariants --db "$1" --json -n 1 | "$PY" -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()][1:]
r = rows[0] if rows else {}
print(r.get("callee", "-"), r.get("register", "-"), r.get("value", "-"), r.get("site", "-"))'
}
# planted TOPLINE: is it power(x, e)'s e = 3 from site_a's call?
planted() {
	case $1 in "power rdi 3 "*"inv_intarg.c:$LINE") return 0 ;; esac
	return 1
}

for chunks in default 1 0; do
	db=$TMP/db-$chunks
	env $([ $chunks = default ] || echo VPROF_TEST_VLOG_CHUNKS=$chunks) \
		"$VPROF" run --db "$db" --values -- "$TMP/inv_intarg" $N >"$TMP/out-$chunks" 2>"$TMP/err-$chunks"
	check "log $chunks: the program's output is as without vprof" \
		[ "$(cat "$TMP/out-$chunks")" = "$("$TMP/inv_intarg" $N)" ]
	read -r vs logged missed < <(stats "$db")
	echo "log $chunks: value_samples $vs, logged $logged, to the thread tables $missed"
	case $chunks in
	default)
		check "defaults: $logged of $vs value samples through the log, $missed to the thread tables" \
			[ "$vs" -gt 1000 -a "$missed" -eq 0 -a $((logged * 100)) -ge $((vs * 99)) ] ;;
	1)
		per=2046
		check "one chunk: $logged value samples in the log (at most a chunk's $per records' worth), $missed to the thread tables" \
			[ "$missed" -gt 0 -a "$logged" -gt 0 -a $((logged + missed)) -le "$vs" ] ;;
	0)
		check "no log: $missed of $vs value samples to the thread tables, none logged" \
			[ "$logged" -eq 0 -a $((missed * 100)) -ge $((vs * 99)) ] ;;
	esac
	t=$(top "$db")
	echo "log $chunks: top row: $t"
	check "log $chunks: the planted argument ranks first ($t)" planted "$t"
done

# The merge reads a spool into memory and passes over its holes: a run
# too short to write values leaves the ~8 MiB VALUES section (2,070
# pages) unwritten, and reading it page by page cost 2,900 page faults
# and ~30 ms of CPU a run; passing over it, ~500 faults in all.
flt=$("$PY" - "$VPROF" "$TMP/db-true" <<'PYEOF'
import resource, subprocess, sys
subprocess.run([sys.argv[1], "run", "--db", sys.argv[2], "--values", "--", "true"],
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_minflt)
PYEOF
)
check "vprof run --values -- true: $flt page faults, under the 2,070 pages of the unwritten VALUES section" \
	[ "$flt" -gt 0 -a "$flt" -lt 1500 ]

# SIGKILL: the log's records survive in the spool and the merge folds them.
db=$TMP/db-kill
read -r how _ < <(kill_after_cpu 2 env LD_PRELOAD="$LIBVPROF" VPROF_DB="$db" VPROF_VALUES=on \
	"$TMP/inv_intarg" 4000000000)
check "killed: the program died of SIGKILL ($how)" [ "$how" = signal9 ]
"$VPROF" merge --db "$db" >"$TMP/merge.out" 2>&1
check "killed: vprof merge succeeds ($(tr '\n' ' ' <"$TMP/merge.out"))" [ $? -eq 0 ]
read -r vs logged missed < <(stats "$db")
check "killed: $logged of $vs value samples recovered from the log" \
	[ "$logged" -gt 100 -a $((logged * 100)) -ge $((vs * 99)) ]
t=$(top "$db")
check "killed: the planted argument ranks first ($t)" planted "$t"
finish
