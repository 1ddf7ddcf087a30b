#!/bin/bash
# A full filesystem under the database never harms the program, and never
# kills vprof: no SIGBUS from a spool or database write. The database is
# on a 2 MB tmpfs, full (no room at all), nearly full (512 KB free), and
# tight (room for a spool's first pages, then none: its writer stops mid-
# run), with 1 and 500 threads and with --values. In every case the
# program's stdout, exit status and death by signal are those of its
# unprofiled run, `vprof run` exits as the program did, and vprof's
# messages say what was lost and why. `vprof merge` on the full disk fails
# with one message and keeps the spools; once space is freed it merges
# them. Mounting a tmpfs needs root (CI runs as root).
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then
	echo "SKIP full_disk: mounting a 2 MB tmpfs needs root"
	exit 0
fi
M=$TMP/mnt
mkdir -p "$M"
if ! mount -t tmpfs -o size=2m tmpfs "$M"; then
	echo "SKIP full_disk: cannot mount a tmpfs here"
	exit 0
fi
trap 'umount "$M" 2>/dev/null; rm -rf "$TMP"' EXIT
gcc -O1 -o "$TMP/dt" "$TOP/tests/fixtures/disk_threads.c" -lpthread || fail "cannot build the fixture"

# fill_to KB: leave KB kilobytes free on the tmpfs.
fill_to() {
	rm -f "$M/fill"
	local avail
	avail=$(df -k --output=avail "$M" | tail -1)
	[ "$avail" -gt "$1" ] && dd if=/dev/zero of="$M/fill" bs=4k count=$(( (avail - $1) / 4 )) 2>/dev/null
	[ "$1" = 0 ] && dd if=/dev/zero of="$M/fill2" bs=4k 2>/dev/null
	true
}

# same NAME ARGS...: vprof run on the tmpfs database against a plain run
# of the fixture (stdout, exit status or signal); sets $st, $TMP/v.err.
same() {
	local name=$1; shift
	local plain
	plain=$(runst "$TMP/p.out" /dev/null "$TMP/dt" "$@")
	st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$M/db" $VOPTS -- "$TMP/dt" "$@")
	check "$name: stdout as unprofiled ($(head -c 80 "$TMP/v.out"))" cmp -s "$TMP/p.out" "$TMP/v.out"
	check "$name: vprof run ends as the program did ($st, unprofiled $plain)" [ "$st" = "$plain" ]
	check "$name: no SIGBUS, no vprof crash ($(tr '\n' '|' <"$TMP/v.err" | head -c 300))" \
		sh -c "! grep -qi 'bus error' '$TMP/v.err' && [ '$st' != -7 ]"
	check "$name: no half-made spool left (.new.*.tmp)" \
		[ -z "$(ls -A "$M/db/spool" 2>/dev/null | grep '^\.new\.')" ]
}

# ms of CPU each thread burns: 0.2 s in all for one thread, 1 s for 500.
ms() { [ "$1" = 1 ] && echo 200 || echo 2; }

# --- full: nothing can be written. One message, the program runs unprofiled.
for n in 1 500; do
	rm -rf "$M/db" "$M/fill2"; mkdir -p "$M/db"; fill_to 0
	VOPTS= same "full, $n thread(s)" "$n" "$(ms $n)" exit
	check "full, $n thread(s): one message, saying the disk is full and the program runs unprofiled" \
		[ "$(grep -c . "$TMP/v.err")" = 1 -a "$(grep -c 'No space left on device; running .* unprofiled' "$TMP/v.err")" = 1 ]
done
rm -rf "$M/db" "$M/fill2"; mkdir -p "$M/db"; fill_to 0
VOPTS= same "full, killed by SIGUSR1" 2 20 usr1
check "full: vprof run dies of the program's SIGUSR1 ($st)" [ "$st" = -10 ]
rm -f "$M/fill2"

# --- nearly full: 512 KB free, as much as a spool of these programs needs.
for n in 1 500; do
	rm -rf "$M/db"; fill_to 512
	VOPTS= same "512 KB free, $n thread(s)" "$n" "$(ms $n)" exit
	check "512 KB free, $n thread(s): a summary, or says what was lost ($(tr '\n' '|' <"$TMP/v.err"))" \
		grep -Eq '^vprof: [0-9]+ samples from|had no room|cannot merge' "$TMP/v.err"
done

# --- tight: room for a spool's first pages only. Its writer stops (the
# samples after counted as lost), the merge finds no room for profiles:
# both said, the spools kept; merge on the full disk fails cleanly; with
# room again, merge takes them.
for n in 1 500; do
	for v in "" --values; do
		rm -rf "$M/db"; fill_to 140
		VOPTS=$v same "tight, $n thread(s) $v" "$n" "$(ms $n)" exit
		check "tight, $n thread(s) $v: says the samples lost and why ($(tr '\n' '|' <"$TMP/v.err"))" \
			grep -Eq "had no room for all of the spool of 1 process \(No space left on device\): its sampling stopped there, [0-9]+ samples? lost" "$TMP/v.err"
		check "tight, $n thread(s) $v: says the spools stay and how to merge them" \
			grep -q "No space left on device; the spools stay in $M/db/spool.*vprof merge --db $M/db" "$TMP/v.err"
	done
done
"$VPROF" merge --db "$M/db" >"$TMP/m.out" 2>"$TMP/m.err"; rc=$?
check "merge on the full disk: exit 1, no SIGBUS ($rc: $(cat "$TMP/m.err"))" \
	[ "$rc" = 1 -a "$(grep -c 'No space left on device (spools kept)' "$TMP/m.err")" = 1 ]
check "merge on the full disk: the spool is kept" [ "$(ls "$M/db/spool" | grep -c '\.spool$')" = 1 ]
rm -f "$M/fill"
"$VPROF" merge --db "$M/db" >"$TMP/m.out" 2>"$TMP/m.err"; rc=$?
check "merge with room again: exit 0, the spool merged ($(cat "$TMP/m.out" "$TMP/m.err"))" \
	[ "$rc" = 0 -a "$(grep -c '^merged 1 spool' "$TMP/m.out")" = 1 ]
"$VPROF" report --db "$M/db" --json >"$TMP/r.json" 2>/dev/null
check "the report has the run's process, its lost samples counted as dropped" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not (d["processes"] == 1 and d["dropped"] > 0))' "$TMP/r.json"
finish
