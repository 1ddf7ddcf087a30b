#!/bin/bash
# Heap blocks named by allocation site under `vprof run --cachesim`
# (libvprof-heap.so's interposers, preload/heap.c's table):
#  - tests/fixtures/heap_churn.c (blocks of 4-256 KiB from malloc, calloc,
#    posix_memalign, aligned_alloc and realloc among 3000 live ones, mmap
#    and partial munmap, small blocks between, a second thread, a forked
#    child that _exits 3): same output and status; `vprof memory --by
#    object` names the blocks by the lines that allocate them (through
#    the small wrappers site_a and site_b, their callers' lines, inlined
#    or not);
#  - an allocation loop (64 KiB malloc/free, a sample handler that maps
#    memory at its first cache window) finishes: the handler's own
#    mappings never wait on the table's lock; so do 16 threads
#    allocating at once on 2 CPUs;
#  - a program linked with gperftools' tcmalloc: same output, its blocks
#    named (the interposers pass calls to the allocator after them);
#  - C++: std::vector's and make_unique's blocks named by main's lines,
#    not the library headers' lines inlined into main;
#  - --alloc-fn names a wrapper too large to be told by its size: its
#    callers' lines name the blocks; a bad name is one message, status 2;
#  - Debian's python3.11, sqlite3, gzip and xz on the real workloads:
#    same output;
#  - VPROF_HEAP=off preloads no interposer (no heap row), and a missing
#    libvprof-heap.so is one message, the program profiled all the same.
. "$(dirname "$0")/lib.sh"

SRC=$TOP/tests/fixtures/heap_churn.c
cc -O1 -g -pthread -o "$TMP/churn" "$SRC" || { fail "build heap_churn"; finish; }
"$TMP/churn" 3 >"$TMP/plain.out"; pst=$?
st=$(runst "$TMP/v.out" "$TMP/v.err" timeout 300 "$VPROF" run --db "$TMP/db" --cachesim -- "$TMP/churn" 3)
same=no; cmp -s "$TMP/plain.out" "$TMP/v.out" && same=yes
check "heap_churn under --cachesim: same output ($same), same status ($st, plain $pst)" [ "$same" = yes -a "$st" = "$pst" ]
"$VPROF" memory --db "$TMP/db" --by object -n 0 --json >"$TMP/obj.json"
names=$("$PY" - "$TMP/obj.json" "$SRC" <<'PYEOF'
import json, sys
m = json.load(open(sys.argv[1]))
src = open(sys.argv[2]).read().splitlines()
heap = {r["source"].rsplit("/", 1)[-1]: r for r in m["rows"] if r["class"] == "heap" and r.get("source")}
want = {}
for tag in ("live[i] = site_a(n)", "live[i] = site_b(n)", "posix_memalign(&p", "aligned_alloc(64", "realloc(site_a"):
    want[tag] = "heap_churn.c:%d" % next(i + 1 for i, l in enumerate(src) if tag in l)
found = [w for w in want.values() if w in heap]
other = [s for s in heap if s not in want.values() and not s.startswith("heap_churn.c:")]
print("%d of %d sites named (%s); rows elsewhere: %s" % (len(found), len(want), " ".join(sorted(found)), other or "none"))
sys.exit(0 if len(found) >= 4 and not other else 1)
PYEOF
)
check "--by object names heap_churn's blocks by their allocating lines: $names" [ $? = 0 ]

cc -O2 -pthread -o "$TMP/loop" "$TOP/tests/fixtures/alloc_loop.c" || fail "build tests/fixtures/alloc_loop.c"
"$TMP/loop" b 3000000 >"$TMP/loop.plain"
st=$(runst "$TMP/loop.out" "$TMP/loop.err" timeout 120 "$VPROF" run --db "$TMP/db_loop" --cachesim -- "$TMP/loop" b 3000000)
check "an allocation loop of 64 KiB blocks under --cachesim finishes (status $st), same output" \
	cmp -s "$TMP/loop.plain" "$TMP/loop.out"

# 16 threads allocating kept blocks at once on this machine's 2 CPUs: the
# table's lock is contended and its holders lose their CPU; waiters yield.
"$TMP/loop" t 100000 >"$TMP/mt.plain"
st=$(runst "$TMP/mt.out" "$TMP/mt.err" timeout 120 "$VPROF" run --db "$TMP/db_mt" --cachesim -- "$TMP/loop" t 100000)
same=no; cmp -s "$TMP/mt.plain" "$TMP/mt.out" && same=yes
check "16 threads allocating 64 KiB blocks at once under --cachesim finish (status $st), same output ($same)" \
	[ "$same" = yes -a "$st" = 0 ]

cat >"$TMP/tc.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(void)
{
	size_t n = 8 << 20;
	long s = 0;
	for (int r = 0; r < 1000; r++) {
		char *a = malloc(n);               /* the swept block */
		memset(a, r, n);
		for (int k = 0; k < 4; k++)
			for (size_t i = 0; i < n; i += 64)
				s += a[i];
		free(a);
	}
	printf("%ld\n", s);
	return 0;
}
CEOF
if cc -O1 -g -o "$TMP/tc" "$TMP/tc.c" -ltcmalloc_minimal; then
	"$TMP/tc" >"$TMP/tc.plain"; pst=$?
	st=$(runst "$TMP/tc.out" "$TMP/tc.err" "$VPROF" run --db "$TMP/db_tc" --cachesim -- "$TMP/tc")
	same=no; cmp -s "$TMP/tc.plain" "$TMP/tc.out" && same=yes
	check "a tcmalloc program under --cachesim: same output ($same), status $st (plain $pst)" [ "$same" = yes -a "$st" = "$pst" ]
	top=$("$VPROF" memory --db "$TMP/db_tc" --by object --json -n 1 | "$PY" -c 'import json,sys; r=json.load(sys.stdin)["rows"][0]; print(r["object"].rsplit("/",1)[-1])')
	line=$(grep -n "the swept block" "$TMP/tc.c" | cut -d: -f1)
	check "its swept block, allocated by tcmalloc, is the top object: tc.c:$line main ($top)" [ "$top" = "tc.c:$line main" ]
else
	fail "build against gperftools' tcmalloc (libgoogle-perftools-dev)"
fi

# C++: std::vector's and make_unique's allocations, inlined from the
# library's headers into main, read as main's own lines.
cat >"$TMP/vec.cc" <<'CEOF'
#include <cstdio>
#include <memory>
#include <vector>
static long walk(const long *a, size_t n) { long s = 0; for (size_t i = 0; i < n; i += 8) s += a[i]; return s; }
int main()
{
	std::vector<long> big(8 << 20);                     // the vector
	auto arr = std::make_unique<long[]>(4 << 20);       // the array
	long s = 0;
	for (int r = 0; r < 100; r++)
		s += walk(big.data(), big.size()) + walk(arr.get(), 4 << 20);
	printf("%ld\n", s);
	return 0;
}
CEOF
if g++ -O2 -g -o "$TMP/vec" "$TMP/vec.cc"; then
	"$VPROF" run --db "$TMP/db_vec" --cachesim -- "$TMP/vec" >/dev/null 2>&1
	got=$("$VPROF" memory --db "$TMP/db_vec" --by object --json -n 0 | "$PY" -c '
import json, sys
print(" ".join(sorted(r["source"].rsplit("/", 1)[-1] + "@" + r["object"].rsplit(" ", 1)[-1]
                      for r in json.load(sys.stdin)["rows"] if r["class"] == "heap" and r.get("source"))))')
	want="vec.cc:$(grep -n 'the vector' "$TMP/vec.cc" | cut -d: -f1)@main vec.cc:$(grep -n 'the array' "$TMP/vec.cc" | cut -d: -f1)@main"
	check "C++ allocations inlined from headers read as main's lines ($got; want $want)" [ "$got" = "$want" ]
else
	fail "build the C++ program (g++)"
fi

# --alloc-fn: a wrapper too large to be told by its size, named by the
# user, gives way to its callers' lines.
cat >"$TMP/af.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static long g_bytes, g_calls;
__attribute__((noinline)) void *my_alloc(size_t n, const char *why)
{
	void *p = malloc(n);                                /* inside my_alloc */
	if (!p) {
		fprintf(stderr, "my_alloc: %zu bytes for %s: out of memory\n", n, why);
		exit(1);
	}
	memset(p, 0, n);
	g_bytes += (long)n, g_calls++;
	return p;
}
int main(void)
{
	long *a = my_alloc(16 << 20, "a"), s = 0;              /* the first caller */
	long *b = my_alloc(8 << 20, "b");                      /* the second caller */
	for (int r = 0; r < 1500; r++)
		for (size_t i = 0; i < (16u << 20) / 8; i += 8)
			s += a[i] + b[(i / 2) % ((8u << 20) / 8)];
	printf("%ld %ld %ld\n", s, g_bytes, g_calls);
	return 0;
}
CEOF
cc -O1 -g -rdynamic -o "$TMP/af" "$TMP/af.c" || fail "build the --alloc-fn program"
sites() {   # the heap rows' sources, sorted
	"$VPROF" memory --db "$1" --by object --json -n 0 | "$PY" -c '
import json, sys
print(" ".join(sorted(set(r["source"].rsplit("/", 1)[-1] for r in json.load(sys.stdin)["rows"] if r["class"] == "heap"))))'
}
"$VPROF" run --db "$TMP/db_af0" --cachesim -- "$TMP/af" >"$TMP/af0.out" 2>/dev/null
"$VPROF" run --db "$TMP/db_af1" --alloc-fn my_alloc -- "$TMP/af" >"$TMP/af1.out" 2>/dev/null; st=$?
inside="af.c:$(grep -n 'inside my_alloc' "$TMP/af.c" | cut -d: -f1)"
callers="af.c:$(grep -n 'the first caller' "$TMP/af.c" | cut -d: -f1) af.c:$(grep -n 'the second caller' "$TMP/af.c" | cut -d: -f1)"
check "without --alloc-fn the blocks are my_alloc's line ($(sites "$TMP/db_af0"); want $inside)" [ "$(sites "$TMP/db_af0")" = "$inside" ]
same=no; cmp -s "$TMP/af0.out" "$TMP/af1.out" && same=yes
check "--alloc-fn my_alloc names its callers' lines ($(sites "$TMP/db_af1"); want $callers), status $st, same output ($same)" \
	[ "$(sites "$TMP/db_af1")" = "$callers" -a "$st" = 0 -a "$same" = yes ]
"$VPROF" run --db "$TMP/db_af2" --alloc-fn "a,b" -- true >/dev/null 2>"$TMP/af2.err"; st=$?
check "--alloc-fn with a comma is one message and status 2 ($st)" [ "$st" = 2 -a "$(wc -l <"$TMP/af2.err")" -le 2 ]

# Debian's programs on the real workloads: the interposers change nothing
# they print or return.
DIR=$TMP
. "$TOP/tests/fixtures/real_workloads.sh"
for name in $REAL_NAMES; do
	real_cmd "$name"
	"${REAL_CMD[@]}" <"$REAL_IN" >"$TMP/r.plain" 2>/dev/null; pst=$?
	rm -rf "$TMP/db_r"
	"$VPROF" run --db "$TMP/db_r" --cachesim -- "${REAL_CMD[@]}" <"$REAL_IN" >"$TMP/r.out" 2>/dev/null; st=$?
	heap=$("$VPROF" memory --db "$TMP/db_r" --by object --json -n 0 | "$PY" -c 'import json,sys; print(sum(r["class"]=="heap" for r in json.load(sys.stdin)["rows"]))')
	same=no; cmp -s "$TMP/r.plain" "$TMP/r.out" && same=yes
	check "$name under --cachesim: same output ($same), status $st (plain $pst); $heap heap rows" \
		[ "$same" = yes -a "$st" = "$pst" ]
done

VPROF_HEAP=off "$VPROF" run --db "$TMP/db_off" --cachesim -- "$TMP/tc" >/dev/null 2>&1
n=$("$VPROF" memory --db "$TMP/db_off" --by object --json -n 0 | "$PY" -c 'import json,sys; print(sum(r["class"]=="heap" for r in json.load(sys.stdin)["rows"]))')
check "VPROF_HEAP=off: no heap row ($n)" [ "$n" = 0 ]
mkdir -p "$TMP/lib" && cp "$LIBVPROF" "$TMP/lib/"
VPROF_LIB=$TMP/lib/libvprof.so "$VPROF" run --db "$TMP/db_miss" --cachesim -- "$TMP/tc" >"$TMP/miss.out" 2>"$TMP/miss.err"
said=$(grep -c 'libvprof-heap.so is missing' "$TMP/miss.err")
ok=no
cmp -s "$TMP/tc.plain" "$TMP/miss.out" && "$VPROF" memory --db "$TMP/db_miss" | grep -q "data references" && ok=yes
check "a missing libvprof-heap.so is one message ($said), the program run and profiled ($ok)" [ "$said" = 1 -a "$ok" = yes ]
finish
