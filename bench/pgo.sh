#!/bin/bash
# bench/pgo.sh — sample PGO from vprof's branch records against
# instrumented PGO, on two real C programs built from source with clang
# (bench/programs: Lua 5.4.4 running bench/programs/bench.lua, and bzip2
# 1.0.8 compressing then decompressing 30 MB of the seeded words of
# tests/fixtures/real_workloads.sh).
#
#   bench/pgo.sh [--rounds N] [--only lua,bzip2] [--freq HZ]
#
# Per program, four builds of the same source (clang -O2 -g
# -fdebug-info-for-profiling), each trained on the input it is timed on:
#   base     no profile
#   instr    instrumented PGO: -fprofile-instr-generate, a training run,
#            llvm-profdata merge, -fprofile-instr-use
#   vprof    `vprof run --branches --freq HZ` (default 4000) on the base
#            build, `vprof export --format llvm-sample --binary`, then
#            -fprofile-sample-use -fprofile-sample-accurate
#   pconly   the same from `vprof run --freq HZ` without --branches: the
#            export's counts are then PC samples (sampling FDO without LBR)
# then N rounds (default 11), each running every build once in shuffled
# order, CPU time of the command (getrusage of the children). Per build:
# median CPU, median per-round ratio to base [IQR]; the gain is 1 - ratio,
# and "of instr" is a build's gain over instrumented PGO's (the issue's
# target: vprof >= 80%, and above pconly). Every build's output is checked
# against base's. Results: BENCHMARKS.md, "Branch records".
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=11
ONLY="lua bzip2"
FREQ=4000
while [ $# -gt 0 ]; do
	case "$1" in
	--rounds) ROUNDS=$2; shift ;;
	--only) ONLY=${2//,/ }; shift ;;
	--freq) FREQ=$2; shift ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "pgo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-pgo.XXXXXX")
trap 'rm -rf "$W"' EXIT
make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
VPROF=$W/vprof
cp "$ROOT/build/vprof" "$VPROF" && cp "$ROOT/build/libvprof.so" "$W/libvprof.so" || exit 1
export VPROF_LIB=$W/libvprof.so
PY=/usr/bin/python3
P=$ROOT/bench/programs
CFLAGS="-O2 -g -fdebug-info-for-profiling"

echo "== bench/pgo.sh --rounds $ROUNDS --freq $FREQ: sample PGO from vprof's branch records against instrumented PGO"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC'); commit $(git -C "$ROOT" rev-parse --short HEAD)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1); $(clang --version | head -1); load $(cut -d' ' -f1-3 /proc/loadavg)"

# The program: SRCS (sources), LIBS, and run VARIANT_BINARY (the workload).
setup() {
	case $1 in
	lua)
		SRCS=$(ls "$P"/lua-5.4.4/*.c)
		DEFS="-DLUA_USE_POSIX"
		LIBS="-lm"
		cat >"$W/run-lua" <<EOF
#!/bin/sh
exec "\$1" "$P/bench.lua" 12
EOF
		;;
	bzip2)
		SRCS=$(ls "$P"/bzip2-1.0.8/*.c)
		DEFS="-D_FILE_OFFSET_BITS=64 -w"
		LIBS=""
		if [ ! -s "$W/in.txt" ]; then
			DIR=$W
			. "$ROOT/tests/fixtures/real_workloads.sh"
			head -c 30000000 "$W/words.txt" >"$W/in.txt"
			rm -f "$W/words.txt" "$W/words4.txt"
		fi
		cat >"$W/run-bzip2" <<EOF
#!/bin/sh
"\$1" -c "$W/in.txt" >"$W/w.\$\$.bz2" && "\$1" -dc "$W/w.\$\$.bz2"; rc=\$?; rm -f "$W/w.\$\$.bz2"; exit \$rc
EOF
		;;
	esac
	chmod +x "$W/run-$1"
}

build() {   # OUT EXTRA-FLAGS...
	local out=$1
	shift
	# shellcheck disable=SC2086
	clang $CFLAGS $DEFS "$@" -o "$out" $SRCS $LIBS 2>>"$W/build.log"
}

for prog in $ONLY; do
	setup "$prog"
	R=$W/run-$prog
	B=$W/$prog
	build "$B-base" || { echo "$prog: the base build failed"; tail -5 "$W/build.log"; continue; }
	build "$B-gen" -fprofile-instr-generate &&
		LLVM_PROFILE_FILE="$W/$prog-%p.profraw" "$R" "$B-gen" >/dev/null &&
		llvm-profdata merge -o "$W/$prog.profdata" "$W/$prog"-*.profraw &&
		build "$B-instr" -fprofile-instr-use="$W/$prog.profdata" || echo "$prog: instrumented PGO failed"
	for v in vprof pconly; do
		rm -rf "$W/db"
		"$VPROF" run --db "$W/db" $([ $v = vprof ] && echo --branches) --freq "$FREQ" -- "$R" "$B-base" \
			>/dev/null 2>>"$W/runs.log"
		"$VPROF" export --db "$W/db" --format llvm-sample --binary "$B-base" -o "$W/$prog-$v.prof" 2>>"$W/runs.log"
		llvm-profdata merge --sample "$W/$prog-$v.prof" -o "$W/$prog-$v.profdata" &&
			build "$B-$v" -fprofile-sample-use="$W/$prog-$v.profdata" -fprofile-sample-accurate ||
			echo "$prog: the $v build failed"
		[ $v = vprof ] && echo "$prog: training under vprof run --branches: $("$VPROF" report --db "$W/db" | sed -n 3p | cut -d, -f1-3)"
	done
	"$R" "$B-base" | cksum >"$W/base.sum"
	for v in instr vprof pconly; do
		[ -x "$B-$v" ] && { "$R" "$B-$v" | cksum | cmp -s - "$W/base.sum" || echo "$prog: the $v build's output differs"; }
	done
	"$PY" - "$ROUNDS" "$prog" "$R" "$B" <<'PYEOF'
import os, random, resource, statistics, subprocess, sys
rounds, prog, run, b = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
vs = [v for v in ("base", "instr", "vprof", "pconly") if os.access("%s-%s" % (b, v), os.X_OK)]
t = {v: [] for v in vs}
for r in range(rounds):
    order = list(vs); random.shuffle(order)
    for v in order:
        x = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([run, "%s-%s" % (b, v)], stdout=subprocess.DEVNULL)
        y = resource.getrusage(resource.RUSAGE_CHILDREN)
        t[v].append(y.ru_utime + y.ru_stime - x.ru_utime - x.ru_stime)
def q(a, f):
    a = sorted(a); h = (len(a) - 1) * f; lo = int(h)
    return a[lo] + (h - lo) * (a[min(lo + 1, len(a) - 1)] - a[lo])
gain = {}
print("%-7s %-7s %9s %-26s %9s" % ("program", "build", "cpu s", "ratio to base [IQR]", "of instr"))
for v in vs:
    rat = [x / y for x, y in zip(t[v], t["base"])]
    gain[v] = 1 - q(rat, .5)
for v in vs:
    rat = [x / y for x, y in zip(t[v], t["base"])]
    of = "%8.0f%%" % (100 * gain[v] / gain["instr"]) if "instr" in gain and gain["instr"] > 0 and v not in ("base", "instr") else ""
    print("%-7s %-7s %9.3f %.4f [%.4f..%.4f]   %s" % (prog, v, q(t[v], .5), q(rat, .5), q(rat, .25), q(rat, .75), of))
PYEOF
done
echo ""
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) at end"
