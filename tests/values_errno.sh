#!/bin/bash
# Value sampling must not change the program's errno. The interpreter runs
# the program's next instructions in the handler; after a failing system
# call those are libc's store of errno, and the handler restored the errno
# it found at entry over it: read(-1) returned -1 with errno 0 in ~1 call
# of 3,000 at 4 kHz (found by CPython's test suite under vprof: "OSError:
# [Errno 0]" in test_eintr, test_logging, test_compileall).
. "$(dirname "$0")/lib.sh"

gcc -O2 -o "$TMP/errno_loop" "$TOP/tests/fixtures/errno_loop.c" || fail "cannot build tests/fixtures/errno_loop.c"
n=1500000
st0=$(runst "$TMP/p.out" "$TMP/p.err" "$TMP/errno_loop" $n)
check "plain: every failing read() sets EBADF ($(cat "$TMP/p.out"))" [ "$st0" = 0 ]
for len in 4 2; do
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db$len" --freq 4000 --values \
		--interp-every 1 --interp-len $len -- "$TMP/errno_loop" $n)
	cat "$TMP/v.err"
	check "--values --interp-len $len at 4 kHz: errno intact after every failing read() ($(cat "$TMP/v.out"))" \
		[ "$st" = 0 -a "$(cat "$TMP/v.out")" = "0 of $n calls: errno not EBADF" ]
	check "--interp-len $len: samples were taken (summary: $(grep -o '^vprof: [0-9]* samples' "$TMP/v.err"))" \
		grep -q '^vprof: [1-9][0-9]* samples' "$TMP/v.err"
done
finish
