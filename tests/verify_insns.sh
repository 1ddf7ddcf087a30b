#!/bin/bash
# vprof verify on real programs that use the instructions added with the
# one instruction table:
# igzip (isa-l: CRC32 by EVEX vpclmulqdq on zmm) and numpy's AVX-512 sort
# (vcompressps/pd, vpcompress*, x87 control words through python). Each:
# output and exit status unchanged, instructions compared, 0 mismatches,
# and none of the instructions added with the table among the unhandled.
# Parts the host's CPU cannot run natively print a SKIP line (not PASS)
# saying so (what the host lacks cannot be compared).
. "$(dirname "$0")/lib.sh"

field() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }
# the issue-9 mnemonics among the report's unhandled ones, if any
unhandled9() {
	$PY -c 'import json,sys,re
u=[x["mnemonic"] for x in json.load(open(sys.argv[1]))["top_unhandled"]]
print(" ".join(m for m in u if re.match(r"v?pclmulqdq|v?p?compress|v?p?expand|vmovs[sd]|fn?stcw|fldcw|fn?stsw|fn?init|fn?clex|fwait|v?gf2p8|vpconflict|vfixupimm", m)))' "$1"
}

vcheck() {
	local name=$1 min=$2; shift 3
	local nst vst cmp mis un
	("$@" >"$TMP/$name.native" 2>&1; exit $?) 2>/dev/null; nst=$?
	("$VPROF" verify --db "$TMP/db" --len 64 --freq 5000 --json -o "$TMP/$name.json" -- "$@" \
		>"$TMP/$name.out" 2>"$TMP/$name.err"; exit $?) 2>/dev/null; vst=$?
	if [ ! -s "$TMP/$name.json" ]; then
		fail "$name: no report"; cat "$TMP/$name.err"; return
	fi
	cmp=$(field "$TMP/$name.json" compared); mis=$(field "$TMP/$name.json" mismatches)
	check "$name: exit status $vst, natively $nst" [ "$vst" = "$nst" ]
	check "$name: output unchanged" cmp -s "$TMP/$name.native" "$TMP/$name.out"
	check "$name: $cmp instructions compared (>= $min)" [ "$cmp" -ge "$min" ]
	if [ "$mis" = 0 ]; then pass "$name: 0 mismatches"; else
		fail "$name: $mis mismatches"; $PY -c 'import json,sys
for r in json.load(open(sys.argv[1]))["records"][:10]: print("  ", r)' "$TMP/$name.json"
	fi
	un=$(unhandled9 "$TMP/$name.json")
	check "$name: no issue-9 instruction unhandled (${un:-none})" [ -z "$un" ]
}

flags=$(grep -m1 '^flags' /proc/cpuinfo)
if echo "$flags" | grep -qw vpclmulqdq && echo "$flags" | grep -qw avx512f && command -v igzip >/dev/null; then
	head -c 20000000 /usr/lib/x86_64-linux-gnu/libc.so.6 >"$TMP/in.bin"
	cat /usr/bin/* 2>/dev/null | head -c 20000000 >>"$TMP/in.bin"
	vcheck igzip 2000 -- igzip -c "$TMP/in.bin"
else
	echo "SKIP igzip: no AVX-512 VPCLMULQDQ here, or no igzip"
fi
if echo "$flags" | grep -qw avx512f && /usr/bin/python3 -c 'import numpy' 2>/dev/null; then
	vcheck numpy_sort 2000 -- /usr/bin/python3 -c '
import numpy as np
r = np.random.default_rng(1)
a = r.random(1000000); b = r.integers(0, 1 << 60, 1000000)
s = 0
for _ in range(3):
    for x in (a, b, a.astype(np.float32), b.astype(np.int32)):
        y = np.sort(x); s += int(np.all(y[1:] >= y[:-1]))
print(s)'
else
	echo "SKIP numpy_sort: no AVX-512 here, or no numpy"
fi
finish
