#!/bin/bash
# A peer's test suite under vprof: a subset of CPython's own
# regression tests (Debian's libpython3.11-testsuite, run by /usr/bin/python3)
# plain, then under `vprof run --freq 1000 --values --interp-every 1`; every
# test case that passes plain must pass under vprof, and every module that
# passes plain must pass (not "env changed", not crash) under vprof.
# Compared per test case from regrtest's --junit-xml (tests/fixtures/
# junit_compare.py), per module from its result lines; a module that
# differs runs again once, plain and under vprof, and the PASS line says
# so (CPython's own tests time things, and a loaded machine breaks some).
#
# The subset exercises signals, threads, fork/exec/subprocess, EINTR, mmap,
# ctypes, sockets on loopback and floating point. Left out, and why:
#   test_concurrent_futures  ~190 s alone plain here (process pools, waits),
#                            more than this test's whole budget
#   test_selectors           15 s alone, mostly its timeouts; select, poll,
#                            epoll and their EINTR are in test_select,
#                            test_eintr and test_socket
#   test_lzma                7 s of compression, nothing of the list above
#                            (xz is in tests/identity.sh)
#   test_sqlite3             not shipped by Debian's libpython3.11-testsuite
#                            ("No module named 'test.test_sqlite3'")
# Ignored test cases (-i), for both runs:
#   *VSOCK*  test_socket.BasicVSOCKTest blocks for ever in vsock_accept on
#            this (Firecracker) VM, which has a vsock device but no loopback
# The whole suite: scripts/cpython_full.sh (make reliability).
# CPYTHON_TESTS="test_x test_y" runs other modules; CPYTHON_J sets -j;
# CPYTHON_KEEP=DIR keeps the logs and XML of both runs.
. "$(dirname "$0")/lib.sh"

testdir=$("$PY" -c 'import test, os; print(os.path.dirname(test.__file__))' 2>/dev/null)
if [ ! -e "$testdir/test_signal.py" ]; then
	fail "CPython's test suite is not installed (apt-get install libpython3.11-testsuite; scripts/deps.sh)"
	finish
fi

tests=${CPYTHON_TESTS:-"test_signal test_threading test_subprocess test_os test_mmap test_ctypes
	test_select test_fork1 test_wait4 test_faulthandler test_posix test_re test_json test_zlib
	test_threadsignals test_eintr test_math test_float test_time test_socket"}
j=${CPYTHON_J:-2}
# The whole suite (scripts/cpython_full.sh, `make reliability`): regrtest
# with no module named runs them all; hours, not minutes.
per_test=300 limit=400 more=()
if [ "${CPYTHON_FULL:-0}" = 1 ]; then
	# Continuous mode: spools merged every minute while the suite runs
	# (~5,700 processes' value spools would otherwise wait for the end:
	# ~22 GB).
	tests="" per_test=1200 limit=${CPYTHON_LIMIT:-14400} more=(--epoch-secs 60)
fi
# Test cases flaky unprofiled on this machine (found by running the subset
# plain several times), compared but not counted: "ID  # reason".
cat >"$TMP/exclude" <<'EOF'
EOF

# regrtest in its own directory: it makes its temporary directory and
# files (test_python_*) under the current one. runs TAG TESTS...: regrtest
# plain into $TMP/plain$TAG.{log,xml}, then under vprof into
# $TMP/vprof$TAG.{log,xml} (vprof's summary in $TMP/v$TAG.err); sets st0
# and st, their exit statuses.
runs() {
	local tag=$1 t0 t1
	shift
	mkdir -p "$TMP/plain$tag" "$TMP/vprof$tag"
	(cd "$TMP/plain$tag" && timeout -s INT -k 30 "$limit" "$PY" -m test -j"$j" --timeout "$per_test" -i '*VSOCK*' \
		--junit-xml "$TMP/plain$tag.xml" "$@" >"$TMP/plain$tag.log" 2>&1)
	st0=$?
	t0=$(date +%s)
	(cd "$TMP/vprof$tag" && timeout -s INT -k 30 $((limit * 3 / 2)) "$VPROF" run --db "$TMP/db$tag" --freq 1000 \
		--values --interp-every 1 "${more[@]}" -- \
		"$PY" -m test -j"$j" --timeout "$per_test" -i '*VSOCK*' \
		--junit-xml "$TMP/vprof$tag.xml" "$@" >"$TMP/vprof$tag.log" 2>"$TMP/v$tag.err")
	st=$?
	t1=$(date +%s)
	cat "$TMP/v$tag.err"
	echo "vprof run took $((t1 - t0)) s in all (regrtest's own time and the final merge: below)"
	grep -E '^(Total duration|Tests result)' "$TMP/plain$tag.log" | sed 's/^/plain: /'
	grep -E '^(Total duration|Tests result)' "$TMP/vprof$tag.log" | sed 's/^/vprof: /'
}
# compare TAG: junit_compare.py over one pair of runs (its PASS/FAIL lines).
compare() {
	"$PY" "$TOP/tests/fixtures/junit_compare.py" --exclude "$TMP/exclude" \
		--logs "$TMP/plain$1.log" "$TMP/vprof$1.log" "$TMP/plain$1.xml" "$TMP/vprof$1.xml"
}
# shellcheck disable=SC2086
runs "" $tests
check "regrtest ran to its end plain (exit $st0) and under vprof (exit $st)" \
	[ "$st0" != 124 -a "$st0" != 137 -a "$st" != 124 -a "$st" != 137 -a -s "$TMP/plain.xml" -a -s "$TMP/vprof.xml" ]

# CPython's own tests have timeouts, itimers and sleeps that a loaded
# machine can break, plain or under vprof. So the modules that differ run
# again once, plain then under vprof, and are compared alone; the first
# try's lines are kept, marked "first try:", and the second try's are
# the verdict (docs/testing.md, "Timing checks").
if compare "" >"$TMP/cmp"; then
	cat "$TMP/cmp"
	check "same regrtest exit status under vprof ($st) as plain ($st0)" [ "$st" = "$st0" ]
else
	# The modules that passed plain and not under vprof, from regrtest's
	# result lines (a test case's id may name a helper module); all of
	# them when none did (a case skipped under vprof only).
	mods=$("$PY" -c 'import re, sys
def res(p):
    r = {}
    for l in open(p, errors="replace"):
        m = re.search(r"\[\s*\d+/\d+(?:/\d+)?\] (test\S*) (\S+)", l)
        if m:
            r[m.group(1)] = m.group(2)
    return r
a, b = res(sys.argv[1]), res(sys.argv[2])
print(" ".join(sorted(m for m in a if a[m] == "passed" and b.get(m) != "passed")))' "$TMP/plain.log" "$TMP/vprof.log")
	[ -n "$mods" ] || mods=$(echo $tests)
	sed 's/^/first try: /' "$TMP/cmp"
	first="$(grep -c '^FAIL' "$TMP/cmp") difference(s), exit status $st plain $st0"
	if grep -q '^FAIL \(no test case\|cannot read\)' "$TMP/cmp"; then
		nfail=$((nfail + 1))
		echo "FAIL the comparison itself failed: $(grep '^FAIL' "$TMP/cmp" | head -3 | tr '\n' ' ')"
	else
		echo "retrying once: $mods"
		# shellcheck disable=SC2086
		runs 2 $mods
		if compare 2 >"$TMP/cmp2" && [ "$st" = "$st0" ]; then
			cat "$TMP/cmp2"
			pass "the modules run again ($mods) pass alike plain and under vprof (exit $st), on the second try, first: $first"
		else
			cat "$TMP/cmp2"
			grep -q '^FAIL' "$TMP/cmp2" && nfail=$((nfail + 1))
			check "same regrtest exit status under vprof ($st) as plain ($st0), second try of $mods" [ "$st" = "$st0" ]
			# the regrtest report of what failed under vprof, for the log
			grep -E -B2 -A25 '^(FAIL|ERROR): ' "$TMP/vprof2.log" | head -150
		fi
	fi
	grep -E -B2 -A25 '^(FAIL|ERROR): ' "$TMP/vprof.log" | head -150 | sed 's/^/first try: /'
fi
sum=$(grep '^vprof: [0-9]* samples from' "$TMP/v.err")
samples=$(echo "$sum" | awk '{print $2}')
procs=$(echo "$sum" | awk '{print $5}')
check "vprof sampled the suite: $samples samples from $procs processes" [ "${samples:-0}" -gt 0 -a "${procs:-0}" -gt 1 ]
r=$(rate_sane)
check "vprof's rate at most twice the asked one${r:+: $r}" [ -z "$r" ]
# CPYTHON_KEEP=DIR keeps both runs' logs and XML there.
[ -n "${CPYTHON_KEEP:-}" ] && mkdir -p "$CPYTHON_KEEP" && cp "$TMP"/*.log "$TMP"/*.xml "$TMP/v.err" "$CPYTHON_KEEP/"
finish
