#!/bin/bash
# Continuous mode, the issue's long run (make reliability): tests/continuous.sh
# for 10 minutes (1200 ticks of 500 ms) with a 30 s spool rotation: spools
# stay bounded, `vprof merge --follow` merges all but the open spool, every
# sample is merged once, the program's output is unchanged. Prints the
# measured bound ("spools at once: ...") after the runner's line.
cd "$(dirname "$0")/.." || exit 1
CONTIN_TICKS=${CONTIN_TICKS:-1200} CONTIN_EPOCH=${CONTIN_EPOCH:-30} tests/run continuous
rc=$?
grep -E '^(spools at once|at tick)' build/test-logs/continuous.log
exit $rc
