#!/bin/sh
# `make demo`: build the demo workload, profile it with vprof into a fresh
# database (build/demo.db), and print the report.
set -e
cd "$(dirname "$0")/.."
gcc -O2 -g -o build/demo scripts/demo.c
rm -rf build/demo.db
build/vprof run --db build/demo.db -- build/demo
build/vprof report --db build/demo.db -n 15
