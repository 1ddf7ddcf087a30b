#!/bin/bash
# Output identity: real programs from Debian packages (compressors,
# a database shell, a calculator, a scripting language, a compiler, an image
# codec) give byte-identical stdout and the same exit status plain and under
# `vprof run` at 1 kHz and 10 kHz. Inputs are made here, deterministically.
# xz, sqlite3, lua5.4, python3, bc and gcc also with value
# sampling, interpreting at every sample (`--values --interp-every 1`) at
# 1 kHz and 4 kHz: the interpreter advances the program's own state, so a
# single wrong instruction shows here.
. "$(dirname "$0")/lib.sh"

# Inputs: ~2 MB of compressible text, a C file, an SQL script, a PPM image.
"$PY" - "$TMP" <<'EOF'
import random, sys
d = sys.argv[1]
r = random.Random(8)
words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9))) for _ in range(3000)]
with open(d + '/data.txt', 'w') as f:
    for i in range(60000):
        f.write(' '.join(r.choice(words) for _ in range(6)) + ' %d\n' % r.randrange(10**6))
w, h = 640, 480
with open(d + '/img.ppm', 'wb') as f:
    f.write(b'P6 %d %d 255\n' % (w, h))
    f.write(bytes((x * 255 // w + r.randrange(16)) % 256 if c == 0 else (y * 255 // h) if c == 1 else (x ^ y) & 255
                  for y in range(h) for x in range(w) for c in range(3)))
EOF
cat >"$TMP/prog.c" <<'EOF'
#include <stdio.h>
struct node { int key; struct node *l, *r; };
static int depth(const struct node *n) { if (!n) return 0; int a = depth(n->l), b = depth(n->r); return 1 + (a > b ? a : b); }
int main(void) { struct node n[3] = { { 1, &n[1], &n[2] }, { 0, 0, 0 }, { 2, 0, 0 } }; printf("%d\n", depth(n)); return 0; }
EOF
echo 'int main(void) { return undeclared; }' >"$TMP/bad.c"
cat >"$TMP/q.sql" <<'EOF'
CREATE TABLE t(i INTEGER PRIMARY KEY, v TEXT, n REAL);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 150000)
INSERT INTO t SELECT x, hex(x * 7919 % 100003), (x * 31 % 977) / 7.0 FROM c;
CREATE INDEX tv ON t(v);
SELECT count(*), sum(n), min(v), max(v) FROM t;
SELECT substr(v, 1, 2) AS p, count(*), round(avg(n), 6) FROM t GROUP BY p ORDER BY p LIMIT 20;
SELECT i, v FROM t WHERE v LIKE 'A1%' ORDER BY v, i LIMIT 15;
EOF
cat >"$TMP/work.lua" <<'EOF'
local t, s = {}, 0
for i = 1, 300000 do t[i] = (i * 7919) % 100003 end
table.sort(t)
for i = 1, #t, 3 do s = s + t[i] * 0.5 end
local w = {}
for word in io.read("a"):gmatch("%a+") do w[word] = (w[word] or 0) + 1 end
local n = 0
for _ in pairs(w) do n = n + 1 end
print(string.format("%.1f %d %s", s, n, string.rep("ab", 3)))
os.exit(5)
EOF
cat >"$TMP/work.py" <<'EOF'
import hashlib, json, re, zlib, sys
h = hashlib.sha256()
for i in range(200000):
    h.update(str(i * i).encode())
d = {str(i): [i, i / 7, str(i)[::-1]] for i in range(20000)}
s = json.dumps(d, sort_keys=True)
print(h.hexdigest(), len(s), zlib.crc32(s.encode()), len(re.findall(r'"1\d*"', s)))
print(sorted(set(w for w in open(sys.argv[1]).read().split()[:200000] if len(w) > 7))[:20])
sys.exit(3)
EOF
xz -9 -T1 -c "$TMP/data.txt" >"$TMP/data.xz"
gzip -9 -c "$TMP/data.txt" >"$TMP/data.gz"
cjpeg -quality 85 "$TMP/img.ppm" >"$TMP/img.jpg" 2>/dev/null

# runio IN OUT CMD...: run CMD with stdin from IN, stdout to OUT, stderr
# dropped; print its exit status, or -N if killed by signal N.
runio() {
	"$PY" -c 'import subprocess, sys
r = subprocess.run(sys.argv[3:], stdin=open(sys.argv[1], "rb"), stdout=open(sys.argv[2], "wb"), stderr=subprocess.DEVNULL)
print(r.returncode)' "$@"
}

n=0
# same WHAT IN CMD...: plain, then at 1 kHz and 10 kHz (and, with
# VALUES=1, with --values interpreting at every sample at 1 kHz and
# 4 kHz): same stdout, same status
same() {
	local what=$1 in=$2; shift 2
	local st0 st f mode opts
	st0=$(runio "$in" "$TMP/p.out" "$@")
	[ -s "$TMP/p.out" ] || [ "$st0" != 0 ] || { fail "$what: no output even without vprof"; return; }
	for mode in 1000 10000 ${VALUES:+values:1000 values:4000}; do
		n=$((n + 1))
		f=${mode#values:}
		opts=
		[ "$mode" = "$f" ] || opts="--values --interp-every 1"
		st=$(runio "$in" "$TMP/v.out" "$VPROF" run --db "$TMP/db$n" --freq "$f" $opts -- "$@")
		local runs=
		if [ -n "$opts" ]; then
			# The runs must really have interpreted: else identity is trivial.
			runs=$("$VPROF" report --db "$TMP/db$n" --json 2>/dev/null |
				"$PY" -c 'import json, sys; print(json.load(sys.stdin).get("interp_runs", 0))' 2>/dev/null)
			[ "${runs:-0}" -gt 0 ] || { fail "$what at $f Hz $opts: no interpretation run recorded"; continue; }
		fi
		if [ "$st" = "$st0" ] && cmp -s "$TMP/p.out" "$TMP/v.out"; then
			pass "$what at $f Hz${opts:+ $opts}: same stdout ($(wc -c <"$TMP/p.out") bytes), same status $st0${runs:+, $runs interpretation runs}"
		else
			fail "$what at $f Hz${opts:+ $opts}: status $st vs $st0 plain; $(cmp "$TMP/p.out" "$TMP/v.out" 2>&1)"
		fi
	done
}

VALUES=1 same "xz -9 compress" "$TMP/data.txt" xz -9 -T1 -c
VALUES=1 same "xz decompress" "$TMP/data.xz" xz -d -c
same "gzip -9 compress" "$TMP/data.txt" gzip -9 -c
same "gzip decompress" "$TMP/data.gz" gzip -d -c
same "gzip -d of garbage (exit 1)" "$TMP/prog.c" gzip -d -c
VALUES=1 same "sqlite3 script" "$TMP/q.sql" sqlite3 :memory:
VALUES=1 same "bc: 1500 digits of pi" /dev/null sh -c 'echo "scale=1500; 4*a(1)" | bc -l'
VALUES=1 same "python3 (exit 3)" /dev/null "$PY" "$TMP/work.py" "$TMP/data.txt"
VALUES=1 same "lua5.4 (exit 5)" "$TMP/data.txt" lua5.4 "$TMP/work.lua"
VALUES=1 same "gcc -O2 -S" /dev/null gcc -O2 -S -o - "$TMP/prog.c"
same "gcc on an error (exit 1)" /dev/null gcc -c -o /dev/null "$TMP/bad.c"
same "cjpeg encode" "$TMP/img.ppm" cjpeg -quality 85
same "djpeg decode" "$TMP/img.jpg" djpeg -ppm
finish
