#!/bin/bash
# `make install PREFIX=...` installs a vprof that finds its library and works.
. "$(dirname "$0")/lib.sh"
make -s -C "$TOP" install PREFIX="$TMP/prefix" >/dev/null
check "vprof installed" [ -x "$TMP/prefix/bin/vprof" ]
check "library installed" [ -f "$TMP/prefix/lib/vprof/libvprof.so" ]
check "module header installed" [ -f "$TMP/prefix/include/vprof-module.h" ]
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c"
"$TMP/prefix/bin/vprof" run --db "$TMP/db" -- "$TMP/spin" 5 >/dev/null 2>"$TMP/err"
check "installed vprof runs a profile ($(cat "$TMP/err"))" grep -q "backend task-clock" "$TMP/err"
check "installed vprof reports it" sh -c "'$TMP/prefix/bin/vprof' report --db '$TMP/db' | grep -q alpha"
finish
