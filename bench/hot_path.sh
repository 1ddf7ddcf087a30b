#!/bin/bash
# bench/hot_path.sh — writes preload/hot-path.txt: the functions of
# libvprof.so that run in the sampling handler, most instructions first.
#
#   bench/hot_path.sh [--out FILE]
#
# The Makefile places these functions together at the start of the
# library's text (build/gen/hot-path.ld, an output section .text.vprof_hot),
# so that a sample's code lies on 18 pages instead of 42 spread over the
# library's 240 KiB of text (BENCHMARKS.md, "The handler's code on fewer
# pages"). Rerun it after a change that adds or renames functions on the
# handler's path; tests/layout.sh fails on a listed name the library no
# longer has.
#
# How: callgrind, collecting only inside preload_dispatch (the handler's
# C entry), twice on tests/fixtures/real_workloads.sh's xz under
# --values (every sample a signal, value samples at the defaults). The
# library is built aside from this tree with one change: valgrind 3.19
# cannot run rdtscp, which times the window's loads, so that build reads
# the clock with rdtsc. Under valgrind with the library, xz now and then
# dies of SIGSEGV in liblzma (never without valgrind: tests/
# invariants_real.sh); callgrind still writes what it collected, which is
# all this needs.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
OUT=$TOP/preload/hot-path.txt
while [ $# -gt 0 ]; do
	case "$1" in
	--out) OUT=$2; shift 2 ;;
	*) echo "bench/hot_path.sh: unknown option $1" >&2; exit 2 ;;
	esac
done
command -v valgrind >/dev/null || { echo "bench/hot_path.sh: needs valgrind" >&2; exit 2; }
W=$(mktemp -d /tmp/vprof-hot.XXXXXX)
trap 'rm -rf "$W"' EXIT
# The tree as it is (tracked files, with their changes), built aside.
mkdir -p "$W/src" && (cd "$TOP" && git ls-files -z | xargs -0 cp --parents -t "$W/src") || exit 1
grep -q '"rdtscp"' "$W/src/interp/internal.h" ||
	{ echo "bench/hot_path.sh: interp/internal.h no longer times loads with rdtscp; update this script" >&2; exit 1; }
sed -i 's/"rdtscp"/"rdtsc"/' "$W/src/interp/internal.h"
# The link needs a list; which one does not matter to what runs.
[ -e "$W/src/preload/hot-path.txt" ] || : >"$W/src/preload/hot-path.txt"
make -s -C "$W/src" -j2 build/libvprof.so >"$W/make.log" 2>&1 || { cat "$W/make.log"; exit 1; }
LIB=$W/src/build/libvprof.so
PY=/usr/bin/python3
DIR=$W
. "$TOP/tests/fixtures/real_workloads.sh"
# Two runs: one may end early (above).
real_cmd xz
for name in 1 2; do
	rm -rf "$W/db"
	VPROF_DB=$W/db VPROF_VALUES=on LD_PRELOAD=$LIB \
		valgrind --tool=callgrind --toggle-collect=preload_dispatch \
		--callgrind-out-file="$W/cg.$name" "${REAL_CMD[@]}" <"$REAL_IN" >/dev/null 2>"$W/vg.$name"
	[ -s "$W/cg.$name" ] || { tail -5 "$W/vg.$name"; exit 1; }
done
# Self instructions per function of the library, summed over the runs.
for name in 1 2; do
	callgrind_annotate --inclusive=no --threshold=100 "$W/cg.$name" 2>/dev/null
done | awk -v lib="$LIB" '
	index($0, "[" lib "]") {
		ir = $1; gsub(",", "", ir)
		# file:fn, fn'"'"'2 (recursion), fn.isra.0 (a clone, whose
		# section .text.fn.isra.0 the script matches as .text.fn.*)
		fn = $(NF - 1); sub(/.*:/, "", fn); sub(/'"'"'[0-9]+$/, "", fn); sub(/\..*/, "", fn)
		if (fn ~ /^[A-Za-z_][A-Za-z0-9_]*$/)   # not ???:0x... (the PLT)
			s[fn] += ir
	}
	END { for (f in s) print s[f], f }' | sort -k1,1nr -k2 >"$W/ir"
[ -s "$W/ir" ] || { echo "bench/hot_path.sh: callgrind saw no function of the library" >&2; exit 1; }
{
	echo "# The functions of libvprof.so that run in the sampling handler, most"
	echo "# instructions first: the Makefile places them together at the start of"
	echo "# the library's text (build/gen/hot-path.ld). Written by bench/hot_path.sh"
	echo "# on $(date -u +%Y-%m-%d): $(wc -l <"$W/ir") functions. tests/layout.sh checks that"
	echo "# each is a function of the library."
	awk '{ print $2 }' "$W/ir"
} >"$OUT"
echo "bench/hot_path.sh: $(wc -l <"$W/ir") functions, $(awk '{ s += $1 } END { print s }' "$W/ir") instructions, into $OUT"
