#!/bin/sh
# Installs the Debian packages vprof builds, tests and benchmarks with, when
# any is missing. Needs root (or sudo) only if something must be installed.
set -e
need="gcc make libunwind-dev libelf-dev libdw-dev libxxhash-dev libzydis-dev
      google-perftools libgoogle-perftools-dev linux-perf python3 binutils
      sqlite3 bc gzip lua5.4 xz-utils libc6-dbg g++ zlib1g-dev libprotobuf-c-dev
      protobuf-c-compiler protobuf-compiler golang-go clang libjpeg-turbo-progs
      libpython3.11-testsuite chromium chromium-driver python3-selenium nodejs
      isal python3-numpy zstd jq openssl perl"
missing=""
for p in $need; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "deps: installing$missing" >&2
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
