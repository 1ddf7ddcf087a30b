#!/bin/bash
# bench/sampling.sh — what PC sampling costs the profiled program.
#
#   bench/sampling.sh [--quick] [--rounds N] [--units N] [--python]
#   bench/sampling.sh --report RUNS...
#
# VPROF_BENCH_KEEP=FILE keeps the raw runs (one line per run) in FILE and
# section 6's in FILE.trig; --report pools such files (e.g. several full
# runs, bench/results/*.runs) and prints sections 1-3 from them, running
# nothing.
#
# Interleaved A/B runs of a CPU-bound workload (bench/workloads/spin.c,
# ~1 s of pure user CPU in three functions) against the same workload
# unprofiled. Every round runs each variant once, in a shuffled order, with
# an unprofiled baseline run before and after each variant:
#
#     B V7 B V2 B V19 B ... B
#
# and a variant's per-round ratio is its cost over the mean of its two
# neighbouring baselines. Tables give the median of the per-round ratios as a
# slowdown in percent, and the IQR (25th..75th percentile) of the same
# ratios as the spread. Variants:
#
#   vprof   `vprof run --event E --freq F` for E in task-clock, cpu-timer,
#           itimer and F in 250, 1000, 4000 (the achieved rate is parsed
#           from vprof's summary line: CPU timers stop at the tick, HZ=250)
#   floor   the same with VPROF_BENCH_EMPTY=1: the handler only identifies
#           and re-arms the signal, so this is what the trigger itself costs
#   perf    perf record -e cpu-clock -F F -o FILE -- spin
#   gperf   LD_PRELOAD=libprofiler.so CPUPROFILE=FILE CPUPROFILE_FREQUENCY=F
#   default `vprof run -- spin` (no --event/--freq: upcall_choose's choice)
#
# --python runs sections 1-4 on Debian's /usr/bin/python3 running
# bench/workloads/loop.py (a pure-Python loop, ~0.7 s for 100 units)
# instead of spin; sections 5 and 6 stay as they are. Here, under load,
# python3 runs varied by +-20% from one to the next (spin: +-2%), so the
# Python tables need many more rounds to mean anything.
#
# Section 6 measures the trigger alone, without vprof (workloads/trigcost.c):
# a task-clock sample delivered into a perf ring buffer, as a signal, and as
# a signal plus vprof's per-sample ioctl re-arm.
#
# The measure. The primary column is the CPU time (user+sys, getrusage
# RUSAGE_SELF at the end of main) of the profiled process itself: that is
# what sampling adds to (timer interrupts, signal delivery and the handler
# are all charged to the sampled thread), it is exact (the kernel's
# sum_exec_runtime, not tick-sampled), and, for a register-bound loop
# like spin, it barely moves when other jobs share the two CPUs (+-2% per
# run at load 9 here), while wall time doubles. It
# misses a profiler's separate processes, so two more columns give the
# whole command (runstat: wait4 rusage of the command and its children, and
# its wall time): perf record's start-up and post-processing at exit, and
# vprof run's merge, show there. Wall time is only meaningful on an idle
# machine; the load average is printed at the start and the end.
#
# Memory: the workload prints its VmHWM/VmRSS at the end of main; the
# script compares an unprofiled and a profiled run (default backend) for 1
# and 16 threads and a short and a long run, and gives the spool's apparent
# size (ls -l) and allocated size (du: the file is sparse), once while the
# long run is still running and once after it ended.
#
# Targets (PASS/MISS is printed; the script exits 0 either way: it is a
# benchmark, not a test): vprof's own work adds under 10% to the floor;
# at equal rate vprof is no slower than perf record + 1 point and no slower
# than gperftools; the default keeps the slowdown under 2%.
#
# Full mode: 7 rounds of 100 units (~1 s each): 21 min at load 9 here,
# ~8-9 min estimated on an idle machine. --quick: 3 rounds of 40 units and
# a shorter memory section: 2.8 min at load 7, ~1.5 min estimated idle.
# Results of 2026-11-21: BENCHMARKS.md, "Sampling overhead";
# raw runs in bench/results/.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=7
UNITS=100
MEM_SHORT=50
MEM_LONG=300
QUICK=0
RATES="250 1000 4000"
BACKENDS="task-clock cpu-timer itimer"
GPERF_LIB=/usr/lib/x86_64-linux-gnu/libprofiler.so

REPORT=()
PYTHON=0
while [ $# -gt 0 ]; do
	case "$1" in
	--quick) QUICK=1; ROUNDS=3; UNITS=40; MEM_SHORT=20; MEM_LONG=100 ;;
	--rounds) ROUNDS=$2; shift ;;
	--units) UNITS=$2; shift ;;
	--python) PYTHON=1 ;;
	--report) shift; REPORT=("$@"); break ;;
	-h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) echo "sampling.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	esac
	shift
done

W=$(mktemp -d "${TMPDIR:-/tmp}/vprof-bench.XXXXXX")
trap 'rm -rf "$W"' EXIT
# Private copies (vprof finds libvprof.so beside itself): a `make` in the
# tree while the benchmark runs must not swap the library under it.
VPROF=$W/vprof
LIB=$W/libvprof.so
T0=$(date +%s)

say() { printf '%s\n' "$*"; }

# ---- build -------------------------------------------------------------
if [ ${#REPORT[@]} -gt 0 ]; then
	HAVE_PERF=1; HAVE_GPERF=1
	for f in "${REPORT[@]}"; do [ -r "$f" ] || { echo "sampling.sh: cannot read $f" >&2; exit 2; }; done
elif ! make -s -C "$ROOT" -j2 build/vprof build/libvprof.so >"$W/make.log" 2>&1; then
	if [ -x "$VPROF" ] && [ -f "$LIB" ]; then
		say "warning: make failed (see below); using the existing build/"
		tail -5 "$W/make.log"
	else
		cat "$W/make.log"; exit 1
	fi
fi
if [ ${#REPORT[@]} -eq 0 ]; then
	cp "$ROOT/build/vprof" "$VPROF" && cp "$ROOT/build/libvprof.so" "$LIB" || exit 1
	gcc -O2 -g -Wall -Wextra -pthread -o "$W/spin" "$ROOT/bench/workloads/spin.c" || exit 1
	gcc -O2 -Wall -Wextra -o "$W/runstat" "$ROOT/bench/workloads/runstat.c" || exit 1
	gcc -O2 -Wall -Wextra -o "$W/trigcost" "$ROOT/bench/workloads/trigcost.c" || exit 1
	HAVE_PERF=0; command -v perf >/dev/null && HAVE_PERF=1
	HAVE_GPERF=0; [ -f "$GPERF_LIB" ] && HAVE_GPERF=1
fi
SPIN="$W/spin -n $UNITS"
# A fixed hash seed: with a random one, dict layouts and so the loop's
# speed change from run to run.
[ $PYTHON = 1 ] && SPIN="env PYTHONHASHSEED=0 /usr/bin/python3 $ROOT/bench/workloads/loop.py $UNITS"

# ---- the variants ------------------------------------------------------
# One id per line; run_one knows how to run each kind.
variants() {
	for f in $RATES; do
		for e in $BACKENDS; do
			say "vprof:$e:$f"
			say "floor:$e:$f"
		done
		[ $HAVE_PERF = 1 ] && say "perf:cpu-clock:$f"
		[ $HAVE_GPERF = 1 ] && say "gperf:itimer:$f"
	done
	say "default:auto:auto"
}

# run_one ID SEQ ROUND: run once, append one record to $W/runs:
#   seq round id cpu_self cmd_cpu cmd_wall samples dropped hz_asked hz_achieved
run_one() {
	local id=$1 seq=$2 round=$3 kind ev f
	IFS=: read -r kind ev f <<<"$id"
	local out=$W/out err=$W/err rs=$W/rs db=$W/db
	rm -rf "$db" "$W/x.data" "$W/x.prof"; : >"$rs"
	case $kind in
	base)
		"$W/runstat" "$rs" $SPIN >"$out" 2>"$err" ;;
	vprof|floor|default)
		local args=(--db "$db")
		[ "$ev" != auto ] && args+=(--event "$ev" --freq "$f")
		if [ $kind = floor ]; then
			"$W/runstat" "$rs" env VPROF_BENCH_EMPTY=1 "$VPROF" run "${args[@]}" -- $SPIN >"$out" 2>"$err"
		else
			"$W/runstat" "$rs" "$VPROF" run "${args[@]}" -- $SPIN >"$out" 2>"$err"
		fi ;;
	perf)
		"$W/runstat" "$rs" perf record -q -e cpu-clock -F "$f" -o "$W/x.data" -- $SPIN >"$out" 2>"$err" ;;
	gperf)
		# env inside runstat: only the workload is to be profiled
		"$W/runstat" "$rs" env LD_PRELOAD="$GPERF_LIB" CPUPROFILE="$W/x.prof" \
			CPUPROFILE_FREQUENCY="$f" $SPIN >"$out" 2>"$err" ;;
	esac
	local cpu rcpu rwall samples=- dropped=- hz=-
	cpu=$(sed -n 's/^spin cpu=\([0-9.]*\).*/\1/p' "$out")
	rcpu=$(sed -n 's/^runstat .*cpu=\([0-9.]*\) user.*/\1/p' "$rs")
	rwall=$(sed -n 's/^runstat wall=\([0-9.]*\).*/\1/p' "$rs")
	if [ -z "$cpu" ] || [ -z "$rcpu" ]; then
		say "run failed: $id (round $round)" >&2
		sed 's/^/    /' "$err" "$out" >&2
		return 1
	fi
	case $kind in
	vprof|floor|default)
		# vprof: N samples from 1 process (D dropped, U unknown), backend B,
		#   asked A Hz, achieved H Hz over C CPU-s; ...
		samples=$(sed -n 's/^vprof: \([0-9]*\) samples from.*/\1/p' "$err")
		dropped=$(sed -n 's/^vprof: .*(\([0-9]*\) dropped.*/\1/p' "$err")
		hz=$(sed -n 's/^vprof: .*achieved \([0-9]*\) Hz.*/\1/p' "$err")
		[ $kind = default ] && f=$(sed -n 's/^vprof: .*asked \([0-9]*\) Hz.*/\1/p' "$err") &&
			ev=$(sed -n 's/^vprof: .*backend \([a-z+-]*\),.*/\1/p' "$err")
		if [ -z "$samples" ] || grep -q '^vprof: .* from 0 processes' "$err"; then
			{ say "discarded: $id round $round was not profiled:"; sed 's/^/    /' "$err"; } >>"$W/notes"
			return 1
		fi
		grep -v '^vprof: [0-9]* samples from' "$err" | grep -q . &&
			{ say "note: $id round $round said:"; sed 's/^/    /' "$err"; } >>"$W/notes"
		;;
	perf)
		# Counted outside the timed command, first round only (perf script
		# is slow to start).
		if [ "$round" = 1 ]; then
			samples=$(perf script -i "$W/x.data" -F ip 2>/dev/null | wc -l)
			hz=$(awk -v n="$samples" -v c="$cpu" 'BEGIN { printf "%.0f", n / c }')
			dropped=$(perf report -i "$W/x.data" --stdio 2>/dev/null |
				  sed -n 's/^# Total Lost Samples: \([0-9]*\).*/\1/p' | head -1)
		fi ;;
	gperf)
		samples=$(sed -n 's/^PROFILE: interrupts\/evictions\/bytes = \([0-9]*\)\/.*/\1/p' "$err")
		[ -n "$samples" ] && hz=$(awk -v n="$samples" -v c="$cpu" 'BEGIN { printf "%.0f", n / c }')
		;;
	esac
	[ "$kind" = base ] && { ev=-; f=-; }
	say "$seq $round $kind:$ev:$f $cpu $rcpu $rwall ${samples:--} ${dropped:--} ${f:--} ${hz:--}" >>"$W/runs"
}

if [ ${#REPORT[@]} -gt 0 ]; then
	# Pool kept runs: renumber seq and rounds so files follow each other.
	: >"$W/runs"; : >"$W/notes"
	for f in "${REPORT[@]}"; do
		awk -v so="$(tail -1 "$W/runs" | cut -d' ' -f1)" -v ro="$(tail -1 "$W/runs" | cut -d' ' -f2)" \
			'{ $1 += so + 1; $2 += ro; print }' "$f" >>"$W/runs"
	done
	ROUNDS=$(tail -1 "$W/runs" | cut -d' ' -f2)
	say "== vprof sampling overhead: bench/sampling.sh --report ${REPORT[*]}"
	say "pooled: $ROUNDS rounds from ${#REPORT[@]} file(s), $(wc -l <"$W/runs") runs"
	say ""
else
	NV=$(variants | wc -l)
	say "== vprof sampling overhead: bench/sampling.sh $([ $QUICK = 1 ] && say --quick) $([ $PYTHON = 1 ] && say --python)"
	say "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
	say "machine: $(nproc) CPUs, $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1), $(uname -r)"
	say "commit:  $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null)$(git -C "$ROOT" diff --quiet HEAD -- upcall preload spool 2>/dev/null || echo ' (+ uncommitted changes in the library)')"
	say "load:    $(cut -d' ' -f1-3 /proc/loadavg) (1/5/15 min) at start"
	say "plan:    $ROUNDS rounds x $NV variants, each between two unprofiled runs; workload: ${SPIN#$W/}"
	say ""

	: >"$W/runs"; : >"$W/notes"
	seq=0
	for r in $(seq 1 "$ROUNDS"); do
		seq=$((seq + 1)); run_one base:-:- $seq "$r"
		for v in $(variants | shuf); do
			seq=$((seq + 1)); run_one "$v" $seq "$r"
			seq=$((seq + 1)); run_one base:-:- $seq "$r"
		done
		printf 'round %d/%d done, %ds elapsed, load %s\n' "$r" "$ROUNDS" $(( $(date +%s) - T0 )) \
			"$(cut -d' ' -f1 /proc/loadavg)" >&2
	done
fi

# ---- statistics --------------------------------------------------------
# For each variant record: ratios over the mean of the baselines at seq-1
# and seq+1, then per variant the median and quartiles of each ratio, the
# median achieved rate and the total dropped. Output, one line per variant:
#   id med_self q1_self q3_self med_cmdcpu med_wall hz_achieved dropped n
#   base_cpu_median var_cpu_median samples_median
awk '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
function q(a, n, p,   h, lo) { if (n == 0) return 0; sortn(a, n); h = 1 + (n - 1) * p; lo = int(h); return lo >= n ? a[n] : a[lo] + (h - lo) * (a[lo+1] - a[lo]) }
{ id[$1] = $3; self[$1] = $4; cmd[$1] = $5; wall[$1] = $6; smp[$1] = $7; drp[$1] = $8; hz[$1] = $10; last = $1 }
END {
	for (s = 1; s <= last; s++) {
		if (id[s] ~ /^base/ || !(s - 1 in id)) continue
		v = id[s]; b1 = s - 1; b2 = (s + 1 in id) && id[s+1] ~ /^base/ ? s + 1 : s - 1
		k = ++n[v]
		R[v, k] = self[s] / ((self[b1] + self[b2]) / 2)
		C[v, k] = cmd[s] / ((cmd[b1] + cmd[b2]) / 2)
		L[v, k] = wall[s] / ((wall[b1] + wall[b2]) / 2)
		BC[v, k] = (self[b1] + self[b2]) / 2; VC[v, k] = self[s]
		if (hz[s] != "-") { H[v, ++nh[v]] = hz[s] }
		if (smp[s] != "-") { S[v, ++ns[v]] = smp[s] }
		if (drp[s] != "-") dr[v] += drp[s]; else if (!(v in dr)) dr[v] = "-"
	}
	for (v in n) {
		m = n[v]
		for (k = 1; k <= m; k++) { a[k] = R[v, k] } ; med = q(a, m, .5); q1 = q(a, m, .25); q3 = q(a, m, .75)
		for (k = 1; k <= m; k++) { a[k] = C[v, k] } ; mc = q(a, m, .5)
		for (k = 1; k <= m; k++) { a[k] = L[v, k] } ; ml = q(a, m, .5)
		for (k = 1; k <= m; k++) { a[k] = BC[v, k] } ; mb = q(a, m, .5)
		for (k = 1; k <= m; k++) { a[k] = VC[v, k] } ; mv = q(a, m, .5)
		h = "-"; if (nh[v]) { for (k = 1; k <= nh[v]; k++) a[k] = H[v, k]; h = sprintf("%.0f", q(a, nh[v], .5)) }
		sm = "-"; if (ns[v]) { for (k = 1; k <= ns[v]; k++) a[k] = S[v, k]; sm = sprintf("%.0f", q(a, ns[v], .5)) }
		printf "%s %.5f %.5f %.5f %.5f %.5f %s %s %d %.5f %.5f %s\n", v, med, q1, q3, mc, ml, h, dr[v], m, mb, mv, sm
	}
}' "$W/runs" >"$W/stats"

# get ID FIELD: one number of the stats line (fields as printed above)
get() { awk -v id="$1" -v f="$2" '$1 == id { print $f }' "$W/stats"; }
pct() { awk -v r="$1" 'BEGIN { printf "%+.1f%%", (r - 1) * 100 }'; }
# us RATIO BASE_CPU SAMPLES: extra CPU per sample in microseconds
us() { awk -v r="$1" -v b="$2" -v n="$3" 'BEGIN { if (n > 0) printf "%.1f", (r - 1) * b / n * 1e6; else printf "-" }'; }
iqr() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%+.1f..%+.1f", (a - 1) * 100, (b - 1) * 100 }'; }

# ---- table 1: every variant --------------------------------------------
say "== 1-4. Slowdown vs unprofiled ($ROUNDS rounds; median of per-round ratios; IQR = 25th..75th percentile)"
say "   self CPU = user+sys of the profiled process; cmd CPU / cmd wall = the whole command"
say "   (perf record's start-up and post-processing, vprof run's merge)"
say ""
printf '%-8s %-10s %6s %8s | %8s %-13s | %8s %8s | %7s %5s | %s\n' \
	variant trigger asked achieved "self CPU" IQR "cmd CPU" "cmd wall" samples drop "us/sample"
printf '%s\n' "------------------------------------------------------------------------------------------------------------"
for f in $RATES; do
	for kind in vprof floor perf gperf; do
		case $kind in perf) evs=cpu-clock ;; gperf) evs=itimer ;; *) evs=$BACKENDS ;; esac
		for e in $evs; do
			v=$kind:$e:$f
			[ -n "$(get "$v" 1)" ] || continue
			hz=$(get "$v" 7); n=$(get "$v" 12)
			# a floor takes as many signals as vprof on the same trigger
			[ $kind = floor ] && { hz="(=vprof)"; n=$(get "vprof:$e:$f" 12); }
			printf '%-8s %-10s %6s %8s | %8s %-13s | %8s %8s | %7s %5s | %s\n' "$kind" "$e" "$f" \
				"$hz" "$(pct "$(get "$v" 2)")" "$(iqr "$(get "$v" 3)" "$(get "$v" 4)")" \
				"$(pct "$(get "$v" 5)")" "$(pct "$(get "$v" 6)")" "$(get "$v" 12)" "$(get "$v" 8)" \
				"$(us "$(get "$v" 2)" "$(get "$v" 10)" "$n")"
		done
	done
	say ""
done
DV=$(awk '$1 ~ /^default:/ { print $1 }' "$W/stats")
if [ -n "$DV" ]; then
	IFS=: read -r _ dev dfr <<<"$DV"
	printf '%-8s %-10s %6s %8s | %8s %-13s | %8s %8s | %7s %5s | %s\n' default "$dev" "$dfr" \
		"$(get "$DV" 7)" "$(pct "$(get "$DV" 2)")" "$(iqr "$(get "$DV" 3)" "$(get "$DV" 4)")" \
		"$(pct "$(get "$DV" 5)")" "$(pct "$(get "$DV" 6)")" "$(get "$DV" 12)" "$(get "$DV" 8)" \
		"$(us "$(get "$DV" 2)" "$(get "$DV" 10)" "$(get "$DV" 12)")"
	say ""
fi
say "us/sample = median slowdown x baseline CPU / samples (perf: samples counted in round 1)"
say "baseline self CPU (median of medians): $(awk '{ print $10 }' "$W/stats" | sort -g | awk '{ a[NR] = $1 } END { printf "%.3f s", a[int((NR + 1) / 2)] }')"
say ""

# ---- table 2: vprof's own work over the floor --------------------------
# own = (vprof - floor) in points, relative to the floor's points; also per
# sample in microseconds: (CPU with - CPU without) / samples, from medians.
say "== 2. vprof's own work over the empty-handler floor (target: < 10% of the floor's overhead)"
printf '%-10s %6s | %8s %8s %9s | %9s %9s | %s\n' trigger asked floor vprof "own (pp)" "floor us" "vprof us" verdict
printf '%s\n' "-------------------------------------------------------------------------------------"
for f in $RATES; do
	for e in $BACKENDS; do
		v=vprof:$e:$f; fl=floor:$e:$f
		[ -n "$(get "$v" 1)" ] && [ -n "$(get "$fl" 1)" ] || continue
		awk -v rv="$(get "$v" 2)" -v rf="$(get "$fl" 2)" -v e="$e" -v f="$f" \
		    -v bv="$(get "$v" 10)" -v cv="$(get "$v" 11)" -v bf="$(get "$fl" 10)" -v cf="$(get "$fl" 11)" \
		    -v n="$(get "$v" 12)" -v q1="$(get "$v" 3)" -v q3="$(get "$v" 4)" \
		    -v f1="$(get "$fl" 3)" -v f3="$(get "$fl" 4)" 'BEGIN {
			sv = (rv - 1) * 100; sf = (rf - 1) * 100; own = sv - sf
			noise = ((q3 - q1) + (f3 - f1)) * 100 / 2   # half the two IQRs added
			usv = n > 0 ? (cv - bv) / n * 1e6 : 0; usf = n > 0 ? (cf - bf) / n * 1e6 : 0
			if (sf >= 1) verdict = own <= 0.1 * sf ? sprintf("PASS (%+.0f%% of floor)", own / sf * 100) : own <= 0.1 * sf + noise ? sprintf("PASS within noise (%+.0f%% of floor, +-%.2f pp)", own / sf * 100, noise) : sprintf("MISS (%+.0f%% of floor)", own / sf * 100)
			else verdict = own <= noise ? sprintf("PASS (floor <1%%: own %+.2f pp within noise +-%.2f)", own, noise) : sprintf("MISS (floor <1%%, own %+.2f pp > noise %.2f)", own, noise)
			printf "%-10s %6s | %+7.2f%% %+7.2f%% %+9.2f | %9.1f %9.1f | %s\n", e, f, sf, sv, own, usf, usv, verdict
		}'
	done
done
say "(us = extra CPU of the profiled process per sample, from the median runs and vprof's sample count;"
say " noise = half the sum of the two IQRs, in points)"
say ""

# ---- table 3: comparisons at equal rate --------------------------------
say "== 3. vprof against perf record and gperftools at equal rate"
say "   perf record -e cpu-clock and vprof task-clock are both perf hrtimer events;"
say "   gperftools and vprof itimer/cpu-timer are both tick-driven (setitimer / POSIX CPU timer)"
printf '%6s | %-22s %8s | %-22s %8s | %s\n' asked vprof slowdown other slowdown verdict
printf '%s\n' "-------------------------------------------------------------------------------------------"
cmp_line() { # VPROF_ID OTHER_ID TOLERANCE_PP LABEL
	local a=$1 b=$2 tol=$3
	[ -n "$(get "$a" 1)" ] && [ -n "$(get "$b" 1)" ] || return 0
	IFS=: read -r _ ae af <<<"$a"; IFS=: read -r bk be _ <<<"$b"
	awk -v ra="$(get "$a" 2)" -v rb="$(get "$b" 2)" -v tol="$tol" -v f="$af" \
	    -v la="vprof $ae @$(get "$a" 7)Hz" -v lb="$bk @$(get "$b" 7)Hz" \
	    -v qa1="$(get "$a" 3)" -v qa3="$(get "$a" 4)" -v qb1="$(get "$b" 3)" -v qb3="$(get "$b" 4)" 'BEGIN {
		sa = (ra - 1) * 100; sb = (rb - 1) * 100; d = sa - sb
		noise = ((qa3 - qa1) + (qb3 - qb1)) * 100 / 2
		if (d <= tol) v = "PASS"
		else if (d <= tol + noise) v = sprintf("PASS within noise (%+.2f pp, IQRs %.2f)", d - tol, noise)
		else v = sprintf("MISS by %.2f pp", d - tol)
		printf "%6s | %-22s %+7.2f%% | %-22s %+7.2f%% | %s%s\n", f, la, sa, lb, sb, v, (tol > 0 ? " (target: <= +" tol " pp)" : " (target: <=)")
	}'
}
for f in $RATES; do
	cmp_line vprof:task-clock:$f perf:cpu-clock:$f 1
done
for f in $RATES; do
	cmp_line vprof:itimer:$f gperf:itimer:$f 0
	cmp_line vprof:cpu-timer:$f gperf:itimer:$f 0
	# at equal asked rate, the backend that actually delivers it
	[ "$f" != 250 ] && cmp_line vprof:task-clock:$f gperf:itimer:$f 0
done
say "(whole-command cost, incl. perf record's post-processing and vprof run's merge: see table 1's cmd columns)"
say ""

# ---- default ------------------------------------------------------------
if [ -n "$DV" ]; then
	say "== Default (vprof run -- CMD, no --event/--freq): backend $dev at $dfr Hz asked, $(get "$DV" 7) Hz achieved"
	awk -v r="$(get "$DV" 2)" 'BEGIN { s = (r - 1) * 100; printf "   slowdown %+.2f%%: %s (target < 2%%)\n", s, s < 2 ? "PASS" : "MISS" }'
	say ""
fi

if [ ${#REPORT[@]} -gt 0 ]; then
	exit 0
fi

# ---- memory -----------------------------------------------------------
say "== 5. Memory (default backend; VmHWM/VmRSS at the end of main; spool = DB/spool/*)"
printf '%-8s %7s | %10s %10s %9s | %10s %10s | %s\n' threads units "HWM plain" "HWM vprof" added "spool ls" "spool du" "while running (RSS, spool du)"
printf '%s\n' "--------------------------------------------------------------------------------------------------"
mem_run() { # THREADS UNITS
	local t=$1 u=$2 db=$W/memdb plain prof mid="" pid
	plain=$("$W/spin" -n "$u" -t "$t" | sed -n 's/.*hwm_kb=\([0-9]*\).*/\1/p')
	rm -rf "$db"; mkdir -p "$db"
	VPROF_DB=$db LD_PRELOAD=$LIB "$W/spin" -n "$u" -t "$t" >"$W/memout" 2>"$W/memerr" &
	pid=$!
	if [ "$u" = "$MEM_LONG" ]; then
		# halfway through the run: the live process and its spool
		sleep "$(awk -v u="$u" -v t="$t" 'BEGIN { printf "%.1f", u * 0.01 / (t > 1 ? 4 : 2) }')"
		local rss sdu
		rss=$(sed -n 's/^VmRSS:[[:space:]]*\([0-9]*\).*/\1/p' /proc/$pid/status 2>/dev/null)
		sdu=$(du -sk "$db/spool" 2>/dev/null | cut -f1)
		mid="${rss:-?} kB, ${sdu:-?} kB"
	fi
	wait $pid
	prof=$(sed -n 's/.*hwm_kb=\([0-9]*\).*/\1/p' "$W/memout")
	local ls du
	ls=$(find "$db/spool" -type f -printf '%s\n' 2>/dev/null | awk '{ s += $1 } END { printf "%d kB", s / 1024 }')
	du=$(du -sk "$db/spool" 2>/dev/null | cut -f1)
	printf '%-8s %7s | %7s kB %7s kB %6s kB | %10s %7s kB | %s\n' "$t" "$u" "$plain" "$prof" \
		$((prof - plain)) "$ls" "$du" "$mid"
	grep -q . "$W/memerr" && sed 's/^/    stderr: /' "$W/memerr"
}
for t in 1 16; do
	for u in $MEM_SHORT $MEM_LONG; do
		mem_run $t $u
	done
done
say "(added = VmHWM profiled - unprofiled; spool ls = apparent size, du = allocated blocks)"
say ""

# ---- trigger design -----------------------------------------------------
# What one task-clock sample costs by delivery, outside vprof: the kernel
# writing the PC into a perf ring buffer (perf record's way), a signal per
# sample with the kernel reloading the period, and a signal plus the
# ioctl(PERIOD) re-arm that vprof does for its randomized periods.
TC_HZ=4000
TC_ITERS=$([ $QUICK = 1 ] && echo 400000000 || echo 900000000)
say "== 6. Trigger design: one task-clock sample by delivery, at $TC_HZ Hz asked (bench/workloads/trigcost.c)"
: >"$W/tc"
for r in $(seq 1 "$ROUNDS"); do
	"$W/trigcost" none $TC_HZ $TC_ITERS >>"$W/tc"
	for m in $(printf 'ring\nsig\nsig-rearm\n' | shuf); do
		"$W/trigcost" "$m" $TC_HZ $TC_ITERS >>"$W/tc"
		"$W/trigcost" none $TC_HZ $TC_ITERS >>"$W/tc"
	done
done
printf '%-10s | %8s | %8s %-13s | %9s %-13s\n' delivery achieved slowdown IQR "us/sample" IQR
printf '%s\n' "-------------------------------------------------------------------------"
awk '
function sortn(a, n,   i, j, t) { for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t } }
function q(a, n, p,   h, lo) { sortn(a, n); h = 1 + (n - 1) * p; lo = int(h); return lo >= n ? a[n] : a[lo] + (h - lo) * (a[lo+1] - a[lo]) }
{ m[NR] = $2; c = $4; sub("cpu=", "", c); cpu[NR] = c; s = $5; sub("samples=", "", s); smp[NR] = s }
END {
	for (i = 2; i < NR; i++) {
		if (m[i] == "none") continue
		b = (cpu[i-1] + cpu[i+1]) / 2; k = ++n[m[i]]
		R[m[i], k] = cpu[i] / b; U[m[i], k] = smp[i] > 0 ? (cpu[i] - b) / smp[i] * 1e6 : 0
		Z[m[i], k] = cpu[i] > 0 ? smp[i] / cpu[i] : 0
	}
	split("ring sig sig-rearm", order, " ")
	for (o = 1; o <= 3; o++) {
		v = order[o]; c = n[v]; if (!c) continue
		for (k = 1; k <= c; k++) a[k] = Z[v, k]; hz = q(a, c, .5)
		for (k = 1; k <= c; k++) a[k] = R[v, k]; r = q(a, c, .5); r1 = q(a, c, .25); r3 = q(a, c, .75)
		for (k = 1; k <= c; k++) a[k] = U[v, k]; u = q(a, c, .5); u1 = q(a, c, .25); u3 = q(a, c, .75)
		printf "%-10s | %8.0f | %+7.1f%% %-13s | %9.1f %-13s\n", v, hz, (r - 1) * 100, sprintf("%+.1f..%+.1f", (r1 - 1) * 100, (r3 - 1) * 100), u, sprintf("%.1f..%.1f", u1, u3)
	}
}' "$W/tc"
say "(ring: the kernel stores PC+TID, nobody is woken; sig: one SIGPROF per sample, empty handler;"
say " sig-rearm: + ioctl(PERF_EVENT_IOC_PERIOD) in the handler, which restarts the period from"
say " the handler's time, so the achieved rate falls by the handler's latency)"
say ""

if [ -s "$W/notes" ]; then
	say "== Messages from the runs"
	sort -u "$W/notes" | head -40
	say ""
fi
say "load:    $(cut -d' ' -f1-3 /proc/loadavg) at end; total $(( $(date +%s) - T0 )) s"
[ -n "${VPROF_BENCH_KEEP:-}" ] && cp "$W/runs" "$VPROF_BENCH_KEEP" && cp "$W/tc" "$VPROF_BENCH_KEEP.trig" &&
	say "raw runs kept in $VPROF_BENCH_KEEP and $VPROF_BENCH_KEEP.trig"
exit 0
