# Shared helpers for the shell tests. Source it: . "$(dirname "$0")/lib.sh"
# Each check prints "PASS what" or "FAIL what: why"; the runner counts them.
set -u
TOP=${VPROF_TOP:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
VPROF=$TOP/build/vprof
LIBVPROF=$TOP/build/libvprof.so
PY=/usr/bin/python3          # Debian's python3, not the first on PATH
TMP=$(mktemp -d /tmp/vprof-test.XXXXXX)
trap 'rm -rf "$TMP"' EXIT
nfail=0
pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; nfail=$((nfail + 1)); }
check() {   # check "what" command...  — passes when the command succeeds
	local what=$1; shift
	if "$@"; then pass "$what"; else fail "$what"; fi
}
finish() { exit $((nfail > 0)); }
