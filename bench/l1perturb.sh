#!/bin/bash
# bench/l1perturb.sh — the value-sampling paper's Table 1 on this machine:
# the fraction of L1 blocks an interruption displaces, without vprof and
# with each of its modes.
#
#   bench/l1perturb.sh [--rounds N] [--secs S]
#
# bench/workloads/l1perturb.c walks a 32 KiB L1-resident cycle and, after
# every interruption in which it kept its CPU, times one walk against its
# quiet and its evicted-to-L2 time (see the file). Variants, interleaved
# in a shuffled order each round (the machine is shared and noisy): plain
# (the kernel's own ticks and whatever the hypervisor does), PC sampling
# into the ring at 1 kHz, PC sampling with a signal per sample at 1 kHz
# (--values with --interp-every 1000000: the value path's signal, no
# interpretation), values interpreting 4 and 16 instructions at every
# sample at 1 kHz. Prints per variant the median over rounds of the mean
# fraction displaced and of the interruption rate.
set -e
TOP=$(cd "$(dirname "$0")/.." && pwd)
VPROF=$TOP/build/vprof
ROUNDS=5 SECS=2
while [ $# -gt 0 ]; do
	case $1 in
	--rounds) ROUNDS=$2; shift 2 ;;
	--secs) SECS=$2; shift 2 ;;
	*) echo "usage: bench/l1perturb.sh [--rounds N] [--secs S]" >&2; exit 2 ;;
	esac
done
T=$(mktemp -d /tmp/vprof-l1.XXXXXX)
trap 'rm -rf "$T"' EXIT
cc -O2 -o "$T/l1p" "$TOP/bench/workloads/l1perturb.c"
variants="plain ring signal values4 values16"
run() {
	case $1 in
	plain) "$T/l1p" "$SECS" ;;
	ring) "$VPROF" run --db "$T/db" --freq 1000 -- "$T/l1p" "$SECS" ;;
	signal) "$VPROF" run --db "$T/db" --freq 1000 --values --interp-every 1000000 -- "$T/l1p" "$SECS" ;;
	values4) "$VPROF" run --db "$T/db" --freq 1000 --values --interp-every 1 --interp-len 4 -- "$T/l1p" "$SECS" ;;
	values16) "$VPROF" run --db "$T/db" --freq 1000 --values --interp-every 1 --interp-len 16 -- "$T/l1p" "$SECS" ;;
	esac 2>/dev/null
}
for r in $(seq "$ROUNDS"); do
	for v in $(printf '%s\n' $variants | shuf); do
		echo "$v $(run "$v")" >>"$T/runs"
		rm -rf "$T/db"
	done
done
/usr/bin/python3 - "$T/runs" $variants <<'PY'
import statistics, sys
rows = {}
for l in open(sys.argv[1]):
    f = l.split()
    d = dict(zip(f[1::2], f[2::2]))   # events N rate R perturbed P switched S perturbed P2 ...
    rows.setdefault(f[0], []).append((float(f[6]), float(f[4].rstrip('/s')), int(f[2])))
print("%-9s %10s %12s %8s   (medians over %d rounds)" % ("variant", "displaced", "interrupts/s", "events", len(rows[sys.argv[2]])))
for v in sys.argv[2:]:
    r = rows.get(v, [])
    print("%-9s %9.1f%% %12.0f %8.0f" % (v, 100 * statistics.median(x[0] for x in r),
                                         statistics.median(x[1] for x in r), statistics.median(x[2] for x in r)))
PY
