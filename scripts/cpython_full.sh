#!/bin/bash
# CPython's whole regression suite (Debian's libpython3.11-testsuite, run by
# /usr/bin/python3 -m test -j2) plain and under `vprof run --freq 1000
# --values --interp-every 1`, compared per test case and per module by
# tests/cpython.sh (see there for what is ignored and why). Part of `make
# reliability`; hours on 2 cores. Not in tests/, so that `make check` does
# not run it. CPYTHON_LIMIT=SECONDS bounds each of the two runs (default
# 4 h, plain; 1.5x that under vprof); CPYTHON_KEEP=DIR keeps logs and XML.
# Prints PASS/FAIL lines and ends "N passed, N failed" like tests/run.
# Room: the profiled run is in continuous mode (--epoch-secs 60), so the
# value spools of finished processes are merged every minute instead of
# waiting for the end (without it: ~5,700 spools, ~22 GB under /tmp, and
# the OOM killer took vprof run in its final merge).
cd "$(dirname "$0")/.." || exit 1
export VPROF_TOP=$PWD
CPYTHON_FULL=1 bash tests/cpython.sh 2>&1 | tee build/cpython_full.log
p=$(grep -c '^PASS' build/cpython_full.log); f=$(grep -c '^FAIL' build/cpython_full.log)
[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
