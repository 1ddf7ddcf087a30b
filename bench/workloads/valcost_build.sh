#!/bin/bash
# bench/workloads/valcost_build.sh TREE OUT — builds valcost (valcost.c,
# beside this script) linked with the library objects of TREE, a built
# vprof checkout (build/pic, build/libinterp.a), laid out by TREE's
# build/gen/hot-path.ld where it has one, as its libvprof.so is; and the
# loop it runs, libvcwork.so, beside OUT (found there through the rpath).
# Used by bench/values.sh (section 1b) and bench/valcost_ab.sh.
set -u
[ $# = 2 ] || { echo "usage: valcost_build.sh TREE OUT" >&2; exit 2; }
T=$1 OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd)
D=$(cd "$(dirname "$OUT")" && pwd) || exit 1
[ -e "$T/build/libinterp.a" ] || { echo "valcost_build.sh: $T is not built (make -C $T)" >&2; exit 2; }
CC="gcc -O2 -g -Wall -Wextra"
[ -e "$D/libvcwork.so" ] ||
	$CC -shared -fPIC -D_GNU_SOURCE -DVALCOST_WORK -o "$D/libvcwork.so" "$HERE/valcost.c" || exit 1
# The library's objects, named from its sources (build/ may hold objects
# of files since renamed or removed).
objs=$(cd "$T" && for f in upcall/*.c preload/*.c preload/*.S spool/*.c; do
	[ -e "$f" ] && echo "$T/build/pic/${f%.*}.o"; done)
ld=$([ -e "$T/build/gen/hot-path.ld" ] && echo "-Wl,-T,$T/build/gen/hot-path.ld")
# shellcheck disable=SC2086
exec $CC -D_GNU_SOURCE -o "$OUT" "$HERE/valcost.c" $objs "$T/build/libinterp.a" "$D/libvcwork.so" \
	-Wl,-rpath,"$D" -Wl,-z,now $ld -lxxhash -ldl -lpthread -lrt -lZydis
