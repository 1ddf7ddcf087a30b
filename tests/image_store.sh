#!/bin/bash
# A profile outlives a rebuild of its program. The merge keeps each image
# it gave samples (and the image's separate debug file) by build-id in
# DB/images/.build-id/; the reports read the kept copy when the file on
# disk has another build-id or is gone; `vprof diff` across the rebuild
# matches procedures by name.
#  1. tests/fixtures/rebuilt.c profiled into A, rebuilt with grown() made
#     three times longer, profiled into B: A still names steady() and
#     grown() (rows, lines, disassembly), and `vprof diff A B` has both
#     in A and B, grown() first by ratio. With the kept copy moved away,
#     A shows [no symbol] and "build-id mismatch": the names came from it.
#  2. The kept copy is a hard link on the same file system, a copy on
#     another (/dev/shm), each made once per build-id.
#  3. A stripped build whose symbols and lines are in a separate debug
#     file ($VPROF_DEBUG_DIRS): both kept; with the binary and the debug
#     tree deleted, the report still names procedures and lines.
. "$(dirname "$0")/lib.sh"
FIX=$TOP/tests/fixtures
cd "$TMP" || exit 1
N=80000000

# js FILE EXPR: EXPR in Python over a report's JSON j; rows of its first event.
js() {
	"$PY" -c 'import json, sys
j = json.load(open(sys.argv[1])); rows = j["events"][0]["rows"] if j["events"] else []
print(eval(sys.argv[2]))' "$@"
}
build_id() { readelf -n "$1" | awk '/Build ID/ {print $3}'; }
kept_path() { local id; id=$(build_id "$2"); echo "$1/images/.build-id/${id:0:2}/${id:2}"; }

gcc -O1 -g -o prog "$FIX/rebuilt.c" || { fail "cannot build rebuilt.c"; finish; }
st=$(runst a.out a.err "$VPROF" run --db a.db --freq 1000 -- ./prog $N)
check "vprof run, first build ($st: $(head -c 200 a.err))" [ "$st" = 0 ]
kept=$(kept_path a.db prog)
check "the merge kept the image as $kept" cmp -s prog "$kept"
check "same file system: the kept image is a hard link (no space used)" \
	[ "$(stat -c %i prog)" = "$(stat -c %i "$kept")" ]
old_id=$(build_id prog)

gcc -O1 -g -DGROWN=3 -o prog "$FIX/rebuilt.c" || { fail "cannot rebuild rebuilt.c"; finish; }
check "the rebuild has another build-id" [ "$(build_id prog)" != "$old_id" ]
check "the kept image is still the first build" [ "$(build_id "$kept")" = "$old_id" ]
st=$(runst b.out b.err "$VPROF" run --db b.db --freq 1000 -- ./prog $N)
check "vprof run, second build ($st)" [ "$st" = 0 ]

# ---- 1. the first build's profile after the rebuild ----
"$VPROF" report --db a.db -n 0 --json >ra.json 2>ra.err
"$VPROF" report --db a.db -n 0 >ra.txt 2>>ra.err
cat ra.txt
check "report of the first build: steady and grown named ($(js ra.json '[(r["procedure"], r["samples"]) for r in rows]'))" \
	[ "$(js ra.json 'sorted(r["procedure"] for r in rows if r["image"].endswith("/prog"))')" = "['grown', 'steady']" ]
check "report of the first build: no build-id mismatch said ($(head -c 300 ra.err))" \
	[ ! -s ra.err ]
"$VPROF" report --db a.db --by line -n 0 --json >la.json 2>/dev/null
check "report --by line of the first build: grown's samples on rebuilt.c lines" \
	[ "$(js la.json 'all(r["file"] and r["file"].endswith("rebuilt.c") and r["line"] > 0 for r in rows if r["procedure"] == "grown") and any(r["procedure"] == "grown" for r in rows)')" = True ]
"$VPROF" list --db a.db grown >lista.txt 2>&1
check "list grown on the first build: its instructions disassembled from the kept image" \
	grep -qE '^ +[0-9]+ +[0-9.]+% +0x[0-9a-f]+ +[a-z]' lista.txt
if grep -q 'unavailable' lista.txt; then fail "list grown: image bytes unavailable"; fi

"$VPROF" diff --min-count 0 --json a.db b.db >d.json 2>d.err
"$VPROF" diff a.db b.db 2>&1 | head -20
dx() { "$PY" -c 'import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]; s, r = L[0], L[1:]
print(eval(sys.argv[2]))' d.json "$1"; }
check "diff across the rebuild: steady and grown each have samples in A and in B ($(dx '[(x["procedure"], x["a"], x["b"]) for x in r]'))" \
	[ "$(dx 'sorted(x["procedure"] for x in r if x["a"] > 0 and x["b"] > 0 and x["image"].endswith("/prog"))')" = "['grown', 'steady']" ]
# A sample now and then lands where no symbol covers (a PLT stub, _start):
# the names came from the kept copy when such samples stay a sliver, where
# without it (the control below) they are most of A.
nosym='sum(x["a"] for x in r if x["procedure"] == "[no symbol]") * 100 <= 3 * sum(x["a"] for x in r)'
check "diff across the rebuild: [no symbol] at most 3% of A's samples ($(dx '[(x["procedure"], x["image"], x["a"], x["b"]) for x in r if x["procedure"] == "[no symbol]"]'))" \
	[ "$(dx "$nosym")" = True ]
"$VPROF" diff --json a.db b.db >d.json 2>d.err
check "diff across the rebuild: grown (3x the work) ranks first ($(dx '[(x["procedure"], x["ratio"]) for x in r]'))" \
	[ "$(dx 'r[0]["procedure"]')" = grown ]

# The control: without the kept copy the first build is unnamed.
mv a.db/images a.db/images.off
"$VPROF" report --db a.db -n 0 --json >rc.json 2>rc.err
check "control, kept copy moved away: [no symbol] holds most of A's samples, a build-id mismatch said" \
	[ "$(js rc.json 'sum(r["samples"] for r in rows if r["procedure"] == "[no symbol]") * 2 > sum(r["samples"] for r in rows)')" = True ]
grep -q 'build-id mismatch' rc.err || fail "control: no build-id mismatch message ($(head -c 200 rc.err))"
mv a.db/images.off a.db/images

# ---- 2. once per build-id; a copy on another file system ----
# The library and `vprof merge` directly: each merge meets the image again.
VPROF_DB=e.db VPROF_FREQ=1000 LD_PRELOAD=$LIBVPROF ./prog $((N / 4)) >/dev/null
"$VPROF" merge --db e.db >/dev/null 2>&1
ke=$(kept_path e.db prog)
ino=$(stat -c %i "$ke" 2>/dev/null)
find e.db/images -type f | sort >e1.txt
VPROF_DB=e.db VPROF_FREQ=1000 LD_PRELOAD=$LIBVPROF ./prog $((N / 4)) >/dev/null
"$VPROF" merge --db e.db >/dev/null 2>&1
find e.db/images -type f | sort >e2.txt
# No new entry but the shared libraries this run was the first to sample
# in (libc, now and then), with their debug files.
libs1=$(for f in $(ldd prog | grep -o '/[^ ]*') "$LIBVPROF"; do kept_path e.db "$(readlink -f "$f")"; done)
same=$([ -z "$(comm -13 e1.txt e2.txt | sed 's/\.debug$//' | grep -vxF "$libs1")" ] && echo yes)
check "the same build merged again: the entry is left as it was, no new one ($(wc -l <e1.txt) files; new: $(comm -13 e1.txt e2.txt | tr '\n' ' '))" \
	[ -n "$ino" -a "$(stat -c %i "$ke" 2>/dev/null)" = "$ino" -a "$same" = yes ]
gcc -O1 -g -DGROWN=2 -o prog2 "$FIX/rebuilt.c"
VPROF_DB=e.db VPROF_FREQ=1000 LD_PRELOAD=$LIBVPROF ./prog2 $((N / 4)) >/dev/null
"$VPROF" merge --db e.db >/dev/null 2>&1
find e.db/images -type f | sort >e3.txt
# Its own entry, and besides it only the shared libraries this run was
# the first to sample in (a sample that lands in libc once in a while),
# with their separate debug files where the system has them.
libs=$(for f in $(ldd prog2 | grep -o '/[^ ]*') "$LIBVPROF"; do kept_path e.db "$(readlink -f "$f")"; done)
others=$(comm -13 e2.txt e3.txt | sed 's/\.debug$//' | grep -vxF "$(kept_path e.db prog2)" | grep -vxF "$libs")
check "another build merged: one more entry, its own ($(comm -13 e2.txt e3.txt | tr '\n' ' '); none but libraries besides: '$others')" \
	[ -n "$(comm -13 e2.txt e3.txt | grep -xF "$(kept_path e.db prog2)")" -a -z "$others" ]
if [ -d /dev/shm ] && [ -w /dev/shm ] && [ "$(stat -c %d /dev/shm)" != "$(stat -c %d "$TMP")" ]; then
	shm=$(mktemp -d /dev/shm/vprof-test.XXXXXX)
	"$VPROF" run --db "$shm/c.db" --freq 1000 -- ./prog $((N / 4)) >/dev/null 2>&1
	kc=$(kept_path "$shm/c.db" prog)
	check "another file system: the kept image is a copy, byte for byte" \
		[ -f "$kc" -a "$(stat -c %i prog)" != "$(stat -c %i "$kc" 2>/dev/null)" ]
	cmp -s prog "$kc" || fail "the copy differs from the image"
	rm -rf "$shm"
else
	echo "(no separate /dev/shm file system: the copy path is not checked here)"
fi

# ---- 3. a separate debug file ----
gcc -O1 -g -o sprog "$FIX/rebuilt.c" || fail "cannot build the stripped program"
sid=$(build_id sprog)
mkdir -p "dbg/.build-id/${sid:0:2}"
objcopy --only-keep-debug sprog "dbg/.build-id/${sid:0:2}/${sid:2}.debug"
strip --strip-all sprog
check "the stripped build has no symbol table" [ "$(readelf -S sprog | grep -c '\.symtab')" = 0 ]
VPROF_DEBUG_DIRS=$TMP/dbg "$VPROF" run --db s.db --freq 1000 -- ./sprog $N >/dev/null 2>s.err
kd=$(kept_path s.db sprog).debug
check "its debug file kept beside it as $kd" cmp -s "$kd" "dbg/.build-id/${sid:0:2}/${sid:2}.debug"
rm -rf sprog dbg
"$VPROF" report --db s.db --by line -n 0 --json >ls.json 2>ls.err
check "binary and debug tree deleted: steady and grown still have names and lines ($(js ls.json '[(r["procedure"], r["line"]) for r in rows][:4]'))" \
	[ "$(js ls.json 'sorted(set(r["procedure"] for r in rows if r["image"].endswith("/sprog") and r["file"] and r["file"].endswith("rebuilt.c")))')" = "['grown', 'steady']" ]
finish
