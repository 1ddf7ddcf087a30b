#!/bin/bash
# Unprivileged use: CI runs as root, users do not. vprof runs as an
# ordinary user (created here when the suite runs as root) with `ulimit -l`
# at 64 KiB and the machine's default perf_event_mlock_kb, so that not every
# thread's ring can be locked (perf_event_paranoid >= 0 here), on a
# multi-threaded Debian program (xz with 20 worker threads). Checks: the
# condition really holds (a ring past the locked-memory budget is refused
# with EPERM for that user), samples are recorded, the summary names the
# backend and a sane rate, the program's output and exit status are those
# of the plain run, and the database is 0600 files in 0700 directories, all
# owned by that user, even with umask 000.
. "$(dirname "$0")/lib.sh"

USER_NAME=vprofu
memlock_kb=64
if [ "$(id -u)" = 0 ]; then
	if ! id "$USER_NAME" >/dev/null 2>&1; then
		useradd --system --no-create-home --home-dir /nonexistent \
			--shell /usr/sbin/nologin "$USER_NAME" >"$TMP/useradd.err" 2>&1
	fi
	if ! id "$USER_NAME" >/dev/null 2>&1; then
		fail "cannot create the unprivileged user $USER_NAME: $(cat "$TMP/useradd.err" 2>/dev/null)"
		finish
	fi
	uid=$(id -u "$USER_NAME"); gid=$(id -g "$USER_NAME")
	# setpriv, not su/runuser: no PAM session, so no limits.conf resets the
	# memlock limit set below and nothing else of the environment changes.
	asuser() { setpriv --reuid="$uid" --regid="$gid" --init-groups -- "$@"; }
else
	# Already unprivileged: the test runs as this user.
	uid=$(id -u); gid=$(id -g); USER_NAME=$(id -un)
	asuser() { "$@"; }
fi
check "running vprof as an unprivileged user ($USER_NAME, uid $uid)" [ "$uid" != 0 ]

# A directory the user owns, outside root's 0700 $TMP, with copies of
# the binaries (the build tree may not be readable to other users).
U=$(mktemp -d /tmp/vprof-unpriv.XXXXXX)
trap 'rm -rf "$TMP" "$U"' EXIT
chmod 0755 "$U"
cp "$VPROF" "$LIBVPROF" "$U/"
"$PY" - "$U/data" <<'EOF'
import random, sys
r = random.Random(8)
words = [''.join(r.choice('abcdefghijklmnopqrstuvwxyz') for _ in range(r.randint(2, 9))) for _ in range(4000)]
with open(sys.argv[1], 'w') as f:
    for i in range(160000):
        f.write(' '.join(r.choice(words) for _ in range(6)) + ' %d\n' % r.randrange(10**6))
EOF
chmod 0644 "$U/data"
[ "$(id -u)" = 0 ] && chown "$uid:$gid" "$U"

mlock_kb=$(cat /proc/sys/kernel/perf_event_mlock_kb)
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid)
echo "perf_event_mlock_kb=$mlock_kb perf_event_paranoid=$paranoid ulimit -l $memlock_kb, $(nproc) CPUs"

# The condition itself: as that user, with that limit, map rings of the
# size vprof uses (1 + 16 pages) on task-clock events of this thread until
# one is refused. The kernel allows perf_event_mlock_kb x CPUs per user plus
# RLIMIT_MEMLOCK per process; past that, EPERM.
cat >"$U/rings.py" <<'EOF'
import ctypes, mmap, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
# struct perf_event_attr (size 128): type SOFTWARE(1), config TASK_CLOCK(1),
# sample_period 1 ms, sample_type IP, flags: disabled | exclude_kernel | exclude_hv
attr = bytearray(128)
struct.pack_into('IIQQQ', attr, 0, 1, 128, 1, 1000000, 1)
struct.pack_into('Q', attr, 40, 1 | (1 << 5) | (1 << 6))
buf = ctypes.create_string_buffer(bytes(attr), 128)
maps = []
for i in range(64):
    fd = libc.syscall(298, buf, 0, -1, -1, 8)   # perf_event_open(attr, self, any cpu, no group, CLOEXEC)
    if fd < 0:
        print("open", i, os.strerror(ctypes.get_errno())); sys.exit(0)
    try:
        maps.append(mmap.mmap(fd, 17 * 4096, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE))
    except OSError as e:
        print("mmap", i, e.strerror); sys.exit(0)
print("all", len(maps))
EOF
r=$(asuser bash -c "ulimit -l $memlock_kb && exec $PY $U/rings.py" 2>&1)
echo "ring probe as $USER_NAME: $r"
check "as $USER_NAME with ulimit -l $memlock_kb, not every ring can be locked: ring $(echo "$r" | awk '{print $2}') refused ($r)" \
	[ "$(echo "$r" | awk '{print $1 "/" $3}')" = "mmap/Operation" ]
nring=$(echo "$r" | awk '{print $2}')

# The workload: xz with 20 worker threads (+ the main thread: more threads
# than rings that fit), fixed block size so the output does not depend on
# the scheduling. Plain first (as the user, same limits), then profiled.
threads=20
xzcmd="xz -3 -T$threads --block-size=131072 -c $U/data"
st0=$(asuser bash -c "ulimit -l $memlock_kb && umask 000 && cd $U && $xzcmd >$U/p.out 2>$U/p.err; echo \$?")
check "plain xz -T$threads as $USER_NAME: exit 0, output written ($(wc -c <"$U/p.out") bytes)" [ "$st0" = 0 -a -s "$U/p.out" ]
st=$(asuser bash -c "ulimit -l $memlock_kb && umask 000 && cd $U && $U/vprof run --db $U/db --freq 1000 -- $xzcmd >$U/v.out 2>$U/v.err; echo \$?")
cp "$U/v.err" "$TMP/v.err"
cat "$U/v.err"
check "profiled xz: same exit status ($st, plain $st0)" [ "$st" = "$st0" ]
check "profiled xz: byte-identical output" cmp "$U/p.out" "$U/v.out"
check "profiled xz: the output decompresses to the input" \
	bash -c "xz -dc <'$U/v.out' | cmp - '$U/data'"
check "profiled xz: vprof printed nothing but its summary" \
	[ "$(grep -vc '^vprof: [0-9]* samples from' "$U/v.err")" = 0 ]
sum=$(grep '^vprof: [0-9]* samples from' "$U/v.err")
samples=$(echo "$sum" | awk '{print $2}')
check "samples recorded ($samples)" [ "${samples:-0}" -gt 0 ]
check "the summary names the backend: task-clock (\"$(echo "$sum" | grep -o 'backend [^,]*')\")" \
	bash -c "echo '$sum' | grep -q 'backend task-clock,'"
check "the summary names no drop (\"$(echo "$sum" | grep -o '([0-9]* dropped')\")" \
	bash -c "echo '$sum' | grep -q '(0 dropped'"
r=$(rate_sane)
check "rate at most twice the asked one${r:+: $r}" [ -z "$r" ]
# ...and not starved: the threads without a ring fall back to a signal per
# sample; if they were not sampled at all the rate would sink well below.
# Over the user CPU (processes.tsv): task-clock samples user mode only, and
# xz's system time grows with the machine's load (the summary's rate over
# all its CPU was 608-849 Hz in three runs, for ~1000 samples each time).
read -r asked achieved cpu < <(echo "$sum" | sed -n 's/.*asked \([0-9]*\) Hz, achieved \([0-9]*\) Hz over \([0-9.]*\) CPU-s.*/\1 \2 \3/p')
tsv=$(ls "$U"/db/epochs/*/processes.tsv 2>/dev/null | head -1)
read -r usam user < <(awk -F'\t' '$3 ~ /xz$/ { s += $5; u += $11 } END { printf "%d %.3f\n", s, u / 1e9 }' "${tsv:-/dev/null}")
uhz=$("$PY" -c "print(int(${usam:-0} / max(${user:-0}, 1e-9)))")
check "xz's samples over its user CPU: $uhz Hz ($usam samples in $user s; $achieved Hz over all $cpu CPU-s), at least half the asked $asked Hz" \
	[ "${uhz:-0}" -ge $(( ${asked:-1000} / 2 )) ]
# Every thread counted: threads beyond the lockable rings still sampled.
nxz=$(awk -F'\t' '$3 ~ /xz$/' "${tsv:-/dev/null}" | wc -l)
check "one xz process merged ($nxz in processes.tsv: $(cut -f3-9 "${tsv:-/dev/null}" | tr '\t\n' ' ;'))" [ "$nxz" = 1 ]

# Threads past the lockable rings are sampled as much as those with one.
# manythreads: 24 threads alive together before any works (the main
# thread's ring plus 15 fit in the user's perf_event_mlock_kb budget, one
# more in the 64 KiB of RLIMIT_MEMLOCK: the probe above), the first 8 in
# spin_first (rings), the last 8 in spin_last (no ring: a signal per
# sample), 150 ms of CPU each: 1200 samples each at 1 kHz.
gcc -O1 -pthread -o "$U/mt" "$TOP/tests/fixtures/manythreads.c" && chmod 0755 "$U/mt" ||
	fail "cannot build tests/fixtures/manythreads.c"
st=$(asuser bash -c "ulimit -l $memlock_kb && cd $U && $U/vprof run --db $U/db-mt --freq 1000 -- $U/mt 24 150 >$U/mt.out 2>$U/mt.err; echo \$?")
cat "$U/mt.err"
check "manythreads under vprof: exit 0, its line printed" [ "$st" = 0 -a "$(cat "$U/mt.out")" = "24 threads, 150 ms of CPU each" ]
asuser "$U/vprof" report --db "$U/db-mt" -n 0 >"$U/mt.rep" 2>&1
first=$(awk '$4 == "spin_first" {print $1}' "$U/mt.rep"); first=${first:-0}
last=$(awk '$4 == "spin_last" {print $1}' "$U/mt.rep"); last=${last:-0}
check "threads with a ring: spin_first $first samples, at least 60% of 8 x 150 ms x 1 kHz" [ "$first" -ge 720 ]
check "threads without a ring: spin_last $last samples, within 3/4..4/3 of spin_first's $first" \
	[ $((last * 4)) -ge $((first * 3)) -a $((last * 3)) -le $((first * 4)) ]

# The database: owned by the user, 0700 directories, 0600 files, no
# leftovers of a merge, nothing else (no symlink, fifo...).
bad=$(find "$U/db" \( -type d ! -perm 0700 \) -o \( -type f ! -perm 0600 \) -o ! -user "$uid" -o \( ! -type f ! -type d \) 2>&1)
check "database $(find "$U/db" -type f | wc -l) files, $(find "$U/db" -type d | wc -l) directories: all $USER_NAME's, files 0600, directories 0700${bad:+; not: $(echo $bad | head -c 300)}" \
	[ -z "$bad" -a -d "$U/db/epochs" ]
bad=$(find "$U/db-mt" \( -type d ! -perm 0700 \) -o \( -type f ! -perm 0600 \) -o ! -user "$uid" 2>&1)
check "second database: all $USER_NAME's, 0600 files, 0700 directories${bad:+; not: $(echo $bad | head -c 300)}" [ -z "$bad" ]
check "the database's report is readable by its owner" \
	asuser "$U/vprof" report --db "$U/db" -n 3
echo "rings lockable for $USER_NAME: $nring"
finish
