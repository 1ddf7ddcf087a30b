#!/bin/bash
# Hostile input: each libFuzzer target of fuzz/ (spool reader,
# profile reader, perf-map reader, the symbolizer's ELF reading) runs
# from its checked-in seed corpus for FUZZ_SECONDS (default 10) and must end without a crash, a sanitizer report or a leak.
# The corpus is copied, so the run adds nothing to the repository; a
# crashing input is kept as $TMP/crash-* and shown. Longer runs by hand:
#   make fuzz && build/fuzz/spool_fuzz -max_total_time=600 fuzz/corpus/spool_fuzz
. "$(dirname "$0")/lib.sh"

secs=${FUZZ_SECONDS:-10}
make -s -C "$TOP" fuzz >"$TMP/build.log" 2>&1 || { fail "make fuzz: $(tail -5 "$TMP/build.log")"; finish; }
for t in spool_fuzz profile_fuzz perfmap_fuzz elf_fuzz stacks_fuzz; do
	cp -r "$TOP/fuzz/corpus/$t" "$TMP/corpus-$t"
	nice -n 10 "$TOP/build/fuzz/$t" -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 \
		-artifact_prefix="$TMP/" -print_final_stats=1 "$TMP/corpus-$t" >"$TMP/$t.log" 2>&1
	rc=$?
	runs=$(grep -o 'Done [0-9]* runs in [0-9]* second' "$TMP/$t.log" | tail -1)
	if [ $rc -eq 0 ] && [ -n "$runs" ]; then
		pass "$t: no crash for $secs s ($runs(s))"
	else
		fail "$t: exit $rc: $(grep -E 'ERROR|SUMMARY|runtime error' "$TMP/$t.log" | head -3) $(ls "$TMP"/crash-* 2>/dev/null)"
		tail -20 "$TMP/$t.log"
	fi
done
finish
