#!/bin/bash
# CPython's whole regression suite (Debian's libpython3.11-testsuite, run by
# /usr/bin/python3 -m test -j2) plain and under `vprof run --freq 1000
# --values --interp-every 1`, compared per test case and per module by
# tests/cpython.sh (see there for what is ignored and why). Part of `make
# reliability`; hours on 2 cores. Not in tests/, so that `make check` does
# not run it. CPYTHON_LIMIT=SECONDS bounds each of the two runs (default
# 4 h, plain; 1.5x that under vprof); CPYTHON_KEEP=DIR keeps logs and XML.
# Prints PASS/FAIL lines and ends "N passed, N failed" like tests/run.
# Room: with --values every process's spool (5.5 MB, ~3.9 MB allocated
# once sampled) waits in the database until the run's final merge; the
# suite starts ~5,700 processes: ~22 GB under /tmp (a tmpfs there is RAM:
# by hand on tmpfs the OOM killer took vprof run in its merge).
cd "$(dirname "$0")/.." || exit 1
free=$(df -Pk /tmp | awk 'NR == 2 {print int($4 / 1048576)}')
[ "$free" -ge 25 ] || echo "warning: /tmp has ${free} GB free; the profiled run needs ~25 GB of spools" >&2
export VPROF_TOP=$PWD
CPYTHON_FULL=1 bash tests/cpython.sh 2>&1 | tee build/cpython_full.log
p=$(grep -c '^PASS' build/cpython_full.log); f=$(grep -c '^FAIL' build/cpython_full.log)
[ "$p" -eq 0 ] && [ "$f" -eq 0 ] && f=1
echo "$p passed, $f failed"
[ "$f" -eq 0 ]
