#!/bin/bash
# A thread that blocks every signal (liblzma's workers, many thread pools)
# is still sampled (SIGPROF is never really blocked), and a fault inside
# vprof's handler there must stay vprof's: the interpreter's memory probes
# fault on purpose, and a customization module's callback may crash. With
# SIGSEGV blocked the kernel would kill the program instead of running
# vprof's fault handler. tests/fixtures/mod_fault.c crashes in its first
# sequence callback, which here comes in the blocked worker: the program
# must run on, same output and status, the module disabled with one message.
. "$(dirname "$0")/lib.sh"

cc -O2 -pthread -o "$TMP/bw" "$TOP/tests/fixtures/blocked_worker.c" || { fail "build"; finish; }
cc -O2 -shared -fPIC -I"$TOP/include" -o "$TMP/fault.so" "$TOP/tests/fixtures/mod_fault.c" ||
	{ fail "build fault module"; finish; }
"$TMP/bw" 300000000 >"$TMP/plain.out"
for i in 1 2 3; do
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db$i" --module "$TMP/fault.so" \
		--interp-every 1 --freq 4000 -- "$TMP/bw" 300000000)
	n=$(grep -c "SIGSEGV in its sequence callback" "$TMP/v.err")
	same=no; cmp -s "$TMP/plain.out" "$TMP/v.out" && same=yes
	check "run $i: a module fault in a thread that blocks every signal: status $st (0), output same ($same), said once ($n)" \
		[ "$st" = 0 -a "$same" = yes -a "$n" = 1 ]
done
finish
