#!/bin/bash
# bench/cosim.sh — co-simulation and coverage on real Debian programs:
# interpreters (python3, perl), compressors (gzip, xz,
# zstd), a database, a compiler, crypto (openssl), JSON (jq), sort, and
# numeric programs (bc, lua5.4, awk), each run under `vprof verify` (interpreter in a shadow,
# then the CPU single-stepped over the same instructions and compared).
# Prints the markdown table kept in BENCHMARKS.md ("Co-simulation and
# coverage") and checks each program's output is the same as without vprof.
#
#   bench/cosim.sh            LEN=256 FREQ=20000 JOBS=2 by default; each
#                             stepped instruction is a #DB trap (~15 us of
#                             CPU here, more wall time under a hypervisor)
#   LEN=64 FREQ=4000 bench/cosim.sh    quicker, fewer instructions
#
#   bench/cosim.sh --quick [NAME...]   a short check (LEN=64 FREQ=4000,
#                             unless set): does each program run under
#                             vprof verify with 0 mismatches? Not the
#                             figures for BENCHMARKS.md.
#   bench/cosim.sh NAME...    only the programs named (e.g. xz zstd)
#
# Needs: python3 gzip sqlite3 bc gcc xz zstd openssl perl lua5.4 jq sort
# awk (scripts/deps.sh installs them).
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
V=$TOP/build/vprof
PY=/usr/bin/python3
if [ "${1:-}" = --quick ]; then
	shift
	LEN=${LEN:-64}
	FREQ=${FREQ:-4000}
fi
LEN=${LEN:-256}
FREQ=${FREQ:-20000}
W=$(mktemp -d /tmp/vprof-cosim.XXXXXX)
trap 'rm -rf "$W"' EXIT
[ -x "$V" ] || { echo "build first: make" >&2; exit 1; }

# Inputs, made the same way every time.
cat /usr/lib/x86_64-linux-gnu/libc.so.6 /usr/bin/bash /usr/bin/gzip /usr/lib/x86_64-linux-gnu/libc.so.6 \
	| head -c 6000000 >"$W/in.bin"
cat >"$W/db.sql" <<'SQL'
create table t(a integer primary key, b text, c real);
with recursive n(i) as (select 1 union all select i+1 from n where i < 400000)
insert into t select i, printf('row%08d', (i*7919)%400000), i*0.5 from n;
create index tb on t(b);
select count(*), sum(c), max(b) from t where b like 'row0001%';
select substr(b,1,6), count(*), avg(c) from t group by substr(b,1,6) order by 2 desc limit 3;
SQL
cat >"$W/py.py" <<'PYEOF'
import re, json
d = {}
for i in range(1200000):
    k = "k%d" % (i % 5000)
    d[k] = d.get(k, 0) + i * i % 7
s = json.dumps(d)
print(len(s), sum(d.values()), len(re.findall(r"k\d+7", s)))
PYEOF
cat >"$W/pl.pl" <<'PLEOF'
my %h; my $s = "";
for my $i (1 .. 1500000) {
    my $k = sprintf("w%05d", ($i * 7919) % 20000);
    $h{$k} += $i % 13;
    $s .= $k if $i % 1000 == 0;
}
my @m = ($s =~ /w(\d+7)/g);
my $t = 0; $t += $h{$_} for keys %h;
print scalar(keys %h), " $t ", scalar(@m), "\n";
PLEOF
cat >"$W/mandel.lua" <<'LUAEOF'
-- numeric: Mandelbrot set, floating point only
local n, it, inside = 500, 200, 0
for y = 0, n - 1 do
  local ci = 2.0 * y / n - 1.0
  for x = 0, n - 1 do
    local cr, zr, zi, k = 2.5 * x / n - 2.0, 0.0, 0.0, 0
    while k < it and zr * zr + zi * zi <= 4.0 do
      zr, zi = zr * zr - zi * zi + cr, 2.0 * zr * zi + ci
      k = k + 1
    end
    if k == it then inside = inside + 1 end
  end
end
print(inside)
LUAEOF
awk 'BEGIN { for (i = 0; i < 200000; i++) printf "{\"id\":%d,\"k\":\"g%d\",\"v\":%d.%d}\n", i, (i * 7) % 97, (i * 31) % 1000, i % 10 }' >"$W/in.jsonl"
awk 'BEGIN { for (i = 0; i < 400000; i++) printf "%d %08x\n", (i * 2654435761) % 1000003, i }' >"$W/in.txt"

# name | description | command (run by bash -c, so pipes work)
progs=(
	"python3|interpreter: CPython 3.11, dict/str/json/re loop|$PY $W/py.py"
	"gzip|compressor: gzip -9 of 6 MB|gzip -9 -c $W/in.bin | md5sum"
	"sqlite3|database: 400k-row insert, index, group by|sqlite3 :memory: < $W/db.sql"
	"gcc|compiler: gcc -O2 -c reports/symbolize.c (cc1, as)|gcc -O2 -D_GNU_SOURCE -I$TOP -I/usr/include/x86_64-linux-gnu -c $TOP/reports/symbolize.c -o $W/sym.o && md5sum < $W/sym.o"
	"bc|numeric: bc -l, pi to 1500 digits|echo 'scale=1500; 4*a(1)' | bc -l | md5sum"
	"xz|compressor: xz -6 round trip of 6 MB|xz -6 -T1 -c $W/in.bin | xz -d -c | md5sum"
	"zstd|compressor: zstd -15 round trip of 6 MB|zstd -q -15 -c $W/in.bin | zstd -q -d -c | md5sum"
	"openssl|crypto: openssl speed -seconds 1 -bytes 16384 sha256 aes-256-gcm; enc -aes-256-ctr of 48 MB, dgst -sha256 -sha512|openssl speed -seconds 1 -bytes 16384 -evp aes-256-gcm sha256 >/dev/null 2>&1; for i in 1 2 3 4 5 6 7 8; do cat $W/in.bin; done | openssl enc -aes-256-ctr -K 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f -iv 0f0e0d0c0b0a09080706050403020100 | openssl dgst -sha256 -r; openssl dgst -sha512 -r $W/in.bin"
	"perl|interpreter: perl 5 hash/sprintf/regex loop|perl $W/pl.pl"
	"lua5.4|numeric: Lua 5.4 Mandelbrot 500x500, floating point|lua5.4 $W/mandel.lua"
	"jq|JSON: jq group_by/sum over 200k lines|jq -s -c 'group_by(.k) | map({k: .[0].k, n: length, s: (map(.v) | add)}) | sort_by(.s) | .[-3:]' $W/in.jsonl | md5sum"
	"sort|coreutils sort -n of 400k lines|sort -n -k1,1 -k2,2 $W/in.txt | md5sum"
	"awk|numeric: awk (mawk) floating-point series|awk 'BEGIN { s = 0; for (i = 1; i <= 10000000; i++) s += (i % 2 ? 4 : -4) / (2 * i - 1); printf \"%.12f\\n\", s }'"
)
if [ $# -gt 0 ]; then   # only the programs named
	sel=()
	for p in "${progs[@]}"; do
		for want in "$@"; do [ "${p%%|*}" = "$want" ] && sel+=("$p"); done
	done
	progs=("${sel[@]}")
fi

run_one() {   # name desc cmd: one program natively, then under vprof verify
	local name=$1 desc=$2 cmd=$3 same=no
	bash -c "$cmd" >"$W/$name.native" 2>&1
	"$V" verify --db "$W/db" --len "$LEN" --freq "$FREQ" --json -o "$W/$name.json" \
		-- bash -c "$cmd" >"$W/$name.out" 2>"$W/$name.err"
	cmp -s "$W/$name.native" "$W/$name.out" && same=yes
	$PY - "$W/$name.json" "$name" "$desc" "$same" >"$W/$name.row" <<'PYEOF'
import json, sys
j = json.load(open(sys.argv[1]))
top = ", ".join("%s %d" % (t["mnemonic"], t["count"]) for t in j["top_unhandled"][:4]) or "none"
print("| %s | %s | %d | %d | %.4f | %.4f | %s | %s |" % (sys.argv[2], sys.argv[3], j["compared"],
      j["mismatches"], 100 * j["coverage"], 100 * j["first_insn_coverage"], top, sys.argv[4]))
PYEOF
}

# JOBS programs at a time (default 2: this machine's cores).
JOBS=${JOBS:-2}
for p in "${progs[@]}"; do
	IFS='|' read -r name desc cmd <<<"$p"
	while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n; done
	run_one "$name" "$desc" "$cmd" &
done
wait
echo "| program | workload | instructions compared | mismatches | coverage % | first-insn coverage % | top unhandled (runs) | output unchanged |"
echo "|---|---|---:|---:|---:|---:|---|---|"
for p in "${progs[@]}"; do
	IFS='|' read -r name desc cmd <<<"$p"
	cat "$W/$name.row" 2>/dev/null || echo "| $name | $desc | failed: $(head -c 200 "$W/$name.err") |"
	cat "$W/$name.json" >>"$W/all.json" 2>/dev/null
done
$PY - "$W/all.json" "$LEN" "$FREQ" <<'PYEOF'
import json, sys
tot = {"compared": 0, "mismatches": 0, "interpreted": 0, "unhandled": 0}
for line in open(sys.argv[1]):
    j = json.loads(line)
    for k in ("compared", "mismatches", "interpreted"):
        tot[k] += j[k]
print()
print("Total: %d instructions compared, %d mismatches, %d interpreted (len %s, freq %s Hz)."
      % (tot["compared"], tot["mismatches"], tot["interpreted"], sys.argv[2], sys.argv[3]))
for line in open(sys.argv[1]):
    j = json.loads(line)
    for r in j["records"][:5]:
        print("mismatch: %s pc %s [%s] %s: %s %s expected %s actual %s" % (r["exe"], r["pc"], r["bytes"],
              r["disasm"], r["kind"], r["what"], r["expected"], r["actual"]))
PYEOF
