#!/bin/sh
# Installs the Debian 12 packages vprof needs, when any is missing. Needs
# root (or sudo) only if something must be installed.
#
#   scripts/deps.sh build    what `make` and `make demo` need: the compiler,
#                            the libraries vprof links and their headers,
#                            protoc-c for the pprof encoder, and libc6-dbg
#                            (7 MB: glibc's symbol tables, so that a report
#                            names libc's functions, not sub_166560)
#   scripts/deps.sh test     build's, and what the tests and benchmarks run:
#                            perf, gperftools, Go, Python with CPython's test
#                            suite, Chromium and selenium, Lua, Node.js, the
#                            compressors and tools the identity tests
#                            profile, AutoFDO's create_llvm_prof and
#                            llvm-profdata (the branch-profile export's
#                            readers), python3.11-dev (the headers
#                            tests/pyframes.sh checks the frame layout
#                            against) and python3-scalene (bench/pyframes.sh)
#                            (`make check`, `make bench`, .ci/run)
#
# With no argument: test (everything).
set -e
build="gcc make libc6-dev binutils libunwind-dev libelf-dev libdw-dev libxxhash-dev libzydis-dev
       zlib1g-dev libprotobuf-c-dev protobuf-c-compiler libc6-dbg"
test="google-perftools libgoogle-perftools-dev linux-perf python3 procps sqlite3 bc gzip lua5.4
      xz-utils g++ protobuf-compiler golang-go clang libjpeg-turbo-progs
      libpython3.11-testsuite chromium chromium-driver python3-selenium nodejs isal python3-numpy
      zstd jq openssl perl autofdo llvm python3.11-dev python3-scalene"
case ${1:-test} in
build) need=$build ;;
test) need="$build $test" ;;
*) echo "usage: scripts/deps.sh [build|test]" >&2; exit 2 ;;
esac
missing=""
for p in $need; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
