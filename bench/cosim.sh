#!/bin/bash
# bench/cosim.sh — co-simulation and coverage on real Debian programs
# (issue 3): an interpreter, a compressor, a database, a compiler and a
# numeric program, each run under `vprof verify` (interpreter in a shadow,
# then the CPU single-stepped over the same instructions and compared).
# Prints the markdown table kept in BENCHMARKS.md ("Co-simulation and
# coverage") and checks each program's output is the same as without vprof.
#
#   bench/cosim.sh            LEN=256 FREQ=20000 JOBS=2 by default; each
#                             stepped instruction is a #DB trap (~15 us of
#                             CPU here, more wall time under a hypervisor)
#   LEN=64 FREQ=4000 bench/cosim.sh    quicker, fewer instructions
#
# Needs: python3 gzip sqlite3 bc gcc (scripts/deps.sh installs them).
set -u
cd "$(dirname "$0")/.."
TOP=$PWD
V=$TOP/build/vprof
PY=/usr/bin/python3
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

# name | description | command (run by bash -c, so pipes work)
progs=(
	"python3|interpreter: CPython 3.11, dict/str/json/re loop|$PY $W/py.py"
	"gzip|compressor: gzip -9 of 6 MB|gzip -9 -c $W/in.bin | md5sum"
	"sqlite3|database: 400k-row insert, index, group by|sqlite3 :memory: < $W/db.sql"
	"gcc|compiler: gcc -O2 -c reports/symbolize.c (cc1, as)|gcc -O2 -D_GNU_SOURCE -I$TOP -I/usr/include/x86_64-linux-gnu -c $TOP/reports/symbolize.c -o $W/sym.o && md5sum < $W/sym.o"
	"bc|numeric: bc -l, pi to 1500 digits|echo 'scale=1500; 4*a(1)' | bc -l | md5sum"
)

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
