#!/bin/bash
# Spool integrity, on real spools. (1) A count changed in a finished
# spool (+61, as a random corruption once inflated 252 samples to 313) is
# refused by the merge, naming the block, and the spool is kept aside;
# none of it reaches the database. (2) Processes killed with SIGKILL at
# random points while sampling fast leave spools that all merge: the
# checks never refuse a spool only because its writer died. (3) A program
# whose path is not UTF-8 gives valid JSON (each bad byte U+FFFD). (4)
# After a merge moves a corrupt profile aside, and when a report skips
# one, the report's header counts what its tables show and names the
# files left out. Block-level cases (keys, the shared table, image
# records, a writer killed mid-update) are in tests/unit/merge_fuzz.c.
. "$(dirname "$0")/lib.sh"
gcc -O1 -o "$TMP/work" "$TOP/tests/fixtures/disk_threads.c" -lpthread || fail "cannot build the fixture"
gcc -O1 -o "$TMP/spin" "$TOP/tests/fixtures/spin.c" || fail "cannot build the spin fixture"
field() { "$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# --- (1) a changed count is refused ---
D=$TMP/db1
"$VPROF" run --db "$D" --no-merge -- "$TMP/work" 2 300 >/dev/null 2>&1
sp=$(ls "$D"/spool/*.spool)
# Add 61 to the largest count of the spool (spool/format.h layout: the
# thread slots, then the shared table, where threads leave their counts
# when they end).
"$PY" - "$sp" >"$TMP/flip" <<'EOF'
import struct, sys
p = sys.argv[1]
b = bytearray(open(p, "rb").read())
nslots, slot_size = struct.unpack_from("<II", b, 72)
threads = struct.unpack_from("<Q", b, 88 + 8)[0]
shared, shared_size = struct.unpack_from("<QQ", b, 88 + 24 + 8)
best = None
def look(lo, hi, block):
    global best
    for o in range(lo, hi, 16):
        key, count = struct.unpack_from("<QQ", b, o)
        if key and (best is None or count > best[1]):
            best = (o, count, block)
for s in range(nslots):
    look(threads + s * slot_size + 64, threads + (s + 1) * slot_size, "thread slot %d" % s)
look(shared, shared + shared_size, "shared table")
o, count, block = best
struct.pack_into("<Q", b, o + 8, count + 61)
open(p, "wb").write(b)
print(count, count + 61, block)
EOF
read -r was now block <"$TMP/flip"
"$VPROF" merge --db "$D" >"$TMP/m.out" 2>"$TMP/m.err"; rc=$?
check "a count changed ($block: $was -> $now): the merge refuses the spool, exit 1 ($rc: $(cat "$TMP/m.err"))" \
	[ "$rc" = 1 ] && grep -q "$block fails its check (a count or a key was changed); skipped, kept as .*\.corrupt" "$TMP/m.err"
check "the damaged spool is kept aside" [ -e "$sp.corrupt" ]
"$VPROF" report --db "$D" --json >"$TMP/r1.json" 2>/dev/null
check "none of its counts reach the database ($(field "$TMP/r1.json" samples) samples, $(field "$TMP/r1.json" corrupt) corrupt)" \
	[ "$(field "$TMP/r1.json" samples)" = 0 -a "$(field "$TMP/r1.json" corrupt)" = 1 ]
check "the report names the spool set aside" \
	grep -q "$(basename "$sp").corrupt (set aside)" <("$VPROF" report --db "$D" 2>/dev/null)

# --- (2) SIGKILL at random points: every spool merges ---
D=$TMP/db2
for i in 1 2 3 4 5 6; do
	"$VPROF" run --db "$D" --add --no-merge --freq 10000 -- "$TMP/work" 4 3000 >/dev/null 2>&1 &
	vp=$!
	sleep "0.$((RANDOM % 5 + 1))"
	kill -9 $(pgrep -P $vp) 2>/dev/null
	{ wait $vp; } 2>/dev/null
done
"$VPROF" merge --db "$D" >"$TMP/m.out" 2>"$TMP/m.err"; rc=$?
check "6 processes killed mid-run at 10 kHz: all 6 spools merge, none refused ($rc: $(cat "$TMP/m.out" "$TMP/m.err"))" \
	[ "$rc" = 0 ] && grep -q "^merged 6 spools (.*) .*0 corrupt" "$TMP/m.out"

# --- (3) a path that is not UTF-8 ---
bad="$TMP/sp"$'\xff'"in"$'\xc3'
cp "$TMP/spin" "$bad"
"$VPROF" run --db "$TMP/db3" -- "$bad" 10 >/dev/null 2>&1
"$VPROF" report --db "$TMP/db3" --json >"$TMP/r3.json" 2>/dev/null
check "a program path with bytes that are not UTF-8: report --json is valid UTF-8 JSON, the bytes U+FFFD" \
	"$PY" -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
imgs = {r["image"] for e in d["events"] for r in e["rows"]}
sys.exit(not any(i.endswith("/sp\ufffdin\ufffd") for i in imgs))' "$TMP/r3.json"

# --- (4) the header agrees with the tables; the files left out named ---
# samples in the tables, less the [kernel] and [start-up] rows (which the
# header shows on their own lines).
tables() { "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
print(sum(r["samples"] for e in d["events"] for r in e["rows"]
          if not r["image"].startswith(("[kernel:", "[start-up:"))))' "$1"; }
D=$TMP/db4
"$VPROF" run --db "$D" -- "$TMP/spin" 15 >/dev/null 2>&1
prof=$(grep -l "$TMP/spin" "$D"/epochs/1/*.prof | grep -v stats | head -1)
size=$(stat -c %s "$prof")
printf '\xff\xff\xff\xff' | dd of="$prof" bs=1 seek=$((size - 8)) conv=notrunc 2>/dev/null
"$VPROF" report --db "$D" --json >"$TMP/r4.json" 2>/dev/null
check "a profile skipped as corrupt: header $(field "$TMP/r4.json" samples) = tables $(tables "$TMP/r4.json")" \
	[ "$(field "$TMP/r4.json" samples)" = "$(tables "$TMP/r4.json")" ]
check "... and the report names it" \
	grep -q "$(basename "$prof") (checksum mismatch)" <("$VPROF" report --db "$D" 2>/dev/null)
"$VPROF" run --db "$D" --add -- "$TMP/spin" 15 >/dev/null 2>"$TMP/v.err"
check "a merge moves the corrupt profile aside, and says so" grep -q "moved aside to $prof.corrupt" "$TMP/v.err"
"$VPROF" report --db "$D" --json >"$TMP/r5.json" 2>/dev/null
check "after the set-aside: header $(field "$TMP/r5.json" samples) = tables $(tables "$TMP/r5.json")" \
	[ "$(field "$TMP/r5.json" samples)" = "$(tables "$TMP/r5.json")" ]
"$VPROF" report --db "$D" >"$TMP/r5.txt" 2>/dev/null
check "the report names the file set aside ($(grep corrupt "$TMP/r5.txt"))" \
	grep -q "^corrupt files, not in the tables below: $prof.corrupt (set aside)" "$TMP/r5.txt"
check "... in JSON too" "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(not any(f.startswith(sys.argv[2] + ".corrupt") for f in d.get("corrupt_files", [])))' "$TMP/r5.json" "$prof"
finish
