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

# check_twice WHAT CMD...: a check whose measurement the machine's load can
# spoil (docs/testing.md, "Timing checks"). CMD measures, writes what it
# measured as its last line on stdout (details go to stderr, the log) and
# succeeds when the check holds. When it fails, CMD runs once more, never
# twice more, and the PASS line says so and gives the first result:
#   PASS WHAT: SECOND, on the second try, first: FIRST
# A FAIL gives both. CMD runs in a subshell: it leaves its results in files.
check_twice() {
	local what=$1 first second
	shift
	if first=$("$@"); then pass "$what: ${first##*$'\n'}"; return 0; fi
	first=${first##*$'\n'}
	echo "retrying once: $what: $first" >&2
	if second=$("$@"); then pass "$what: ${second##*$'\n'}, on the second try, first: $first"; return 0; fi
	fail "$what: $first; on the second try: ${second##*$'\n'}"
}

# wait_for SECS CMD...: run CMD every 0.05 s until it succeeds or SECS
# seconds have passed; returns CMD's last status, and says so in the log
# when it gave up. For waiting until a process has reached a point (a file
# exists, a line was printed): never a fixed sleep, which a loaded machine
# outlasts; SECS is a deadline for a hang, not the time the step is
# expected to take (docs/testing.md).
wait_for() {
	local secs=$1 end=$(( $(date +%s) + $1 ))
	shift
	until "$@"; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "wait_for: gave up after $secs s: $*" >&2
			return 1
		fi
		sleep 0.05
	done
}

# runst OUT ERR CMD...: run CMD with its stdout and stderr to files and
# print how it ended: its exit status, or -N if killed by signal N (so
# "exit 139" and "killed by SIGSEGV" stay apart).
runst() {
	"$PY" -c 'import subprocess, sys
r = subprocess.run(sys.argv[3:], stdout=open(sys.argv[1], "wb"), stderr=open(sys.argv[2], "wb"))
print(r.returncode)' "$@"
}

# kill_after_cpu SECS CMD...: start CMD (its stdout to /dev/null), SIGKILL
# it by its pid once it has used SECS seconds of CPU (from /proc, polled
# every 0.1 s, at most a minute), and print how it ended ("signal9",
# "exitN") and the CPU ns it died with: the dead child's own (wait4's
# rusage), not /proc read before the kill, which a loaded machine outruns.
kill_after_cpu() {
	"$PY" -c '
import os, signal, subprocess, sys
p = subprocess.Popen(sys.argv[2:], stdout=subprocess.DEVNULL)
tck, want = os.sysconf("SC_CLK_TCK"), float(sys.argv[1])
for _ in range(600):
    with open("/proc/%d/stat" % p.pid) as f:
        st = f.read().rsplit(")", 1)[1].split()
    if int(st[11]) + int(st[12]) >= want * tck:
        break
    __import__("time").sleep(0.1)
os.kill(p.pid, signal.SIGKILL)
_, status, ru = os.wait4(p.pid, 0)
how = "signal%d" % os.WTERMSIG(status) if os.WIFSIGNALED(status) else "exit%d" % os.WEXITSTATUS(status)
print(how, int((ru.ru_utime + ru.ru_stime) * 1e9))' "$@"
}

# rate_sane: samples are taken per CPU time, so vprof run's summary
# ("asked A Hz, achieved B Hz over C CPU-s") must never show B above 2 A
# (with C >= 0.2 s): more would mean extra triggers, or the program's own
# SIGPROFs counted as samples. A missing summary line is itself wrong (the
# merge failed or vprof said nothing). Prints what is wrong, or nothing.
rate_sane() {
	local l a b c
	if ! grep -q 'achieved [0-9]* Hz over [0-9.]* CPU-s' "$TMP/v.err"; then
		echo "no vprof summary line (\"achieved N Hz over C CPU-s\") in its stderr"
		return
	fi
	# "asked a PMU period" and "nothing sampled" have no rate to hold it to.
	l=$(grep -o 'asked [0-9]* Hz, achieved [0-9]* Hz over [0-9.]* CPU-s' "$TMP/v.err" | head -1)
	[ -n "$l" ] || return 0
	read -r _ a _ _ b _ _ c _ <<<"$l"
	a=${a%%[^0-9]*}; b=${b%%[^0-9]*}
	if [ "${c%%.*}${c#*.}" -ge 20 ] && [ "$a" -gt 0 ] && [ "$b" -gt $((2 * a)) ]; then
		echo "vprof sampled at $b Hz, asked $a Hz, over $c CPU-s"
	fi
}

# same WHAT [VPROF_RUN_OPTIONS...] -- CMD...: run CMD plainly and under vprof
# run; the program's stdout must be byte-identical and it must end the same
# way, and vprof's summary rate sane (rate_sane). With STDERR_TOO=1 its
# stderr too (vprof's own "vprof: " lines removed). The vprof run's
# database is $TMP/db$n (n counts the calls), its files $TMP/v.out and
# $TMP/v.err.
n=0
same() {
	local what=$1; shift
	local opts=()
	while [ "$1" != "--" ]; do opts+=("$1"); shift; done
	shift
	n=$((n + 1))
	rm -rf "$TMP/db$n"
	local st0 st1
	st0=$(runst "$TMP/p.out" "$TMP/p.err" "$@")
	if grep -q '^usage: ' "$TMP/p.err"; then fail "$what: the fixture does not know these arguments: $*"; return; fi
	st1=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db$n" "${opts[@]}" -- "$@")
	local why=""
	[ "$st0" = "$st1" ] || why="ended with $st1 under vprof, $st0 without (negative: killed by that signal);"
	cmp -s "$TMP/p.out" "$TMP/v.out" ||
		why="$why stdout differs: $(diff "$TMP/p.out" "$TMP/v.out" | head -5 | tr '\n' '|');"
	if [ "${STDERR_TOO:-0}" = 1 ]; then
		grep -v '^vprof: ' "$TMP/v.err" >"$TMP/v.err2"
		cmp -s "$TMP/p.err" "$TMP/v.err2" ||
			why="$why stderr differs: $(diff "$TMP/p.err" "$TMP/v.err2" | head -5 | tr '\n' '|');"
	fi
	# --no-merge prints no summary: there is no rate to check then.
	case " ${opts[*]} " in *" --no-merge "*) ;; *) why="$why$(rate_sane)" ;; esac
	if [ -z "$why" ]; then pass "$what"; else fail "$what: $why"; fi
}

# median_within "ALONE..." "UNDER...": nothing when the median of the
# UNDER numbers lies within the range of the ALONE ones, give or take 4
# (counts that vary from run to run, measured alone and under vprof
# interleaved); else why not.
median_within() {
	local lo hi m
	lo=$(printf '%s\n' $1 | sort -n | head -1)
	hi=$(printf '%s\n' $1 | sort -n | tail -1)
	m=$(printf '%s\n' $2 | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	[ "$m" -ge $((lo - 4)) ] && [ "$m" -le $((hi + 4)) ] || echo " median $m outside $lo..$hi, give or take 4;"
}
