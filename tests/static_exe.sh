#!/bin/bash
# A statically linked executable has no dynamic loader, so
# LD_PRELOAD cannot put vprof into it. `vprof run` says so in one line,
# runs it with its own output and exit status, and still profiles the
# dynamically linked programs it starts (they inherit the environment).
. "$(dirname "$0")/lib.sh"

cat >"$TMP/st.c" <<'CEOF'
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
int main(int argc, char **argv)
{
	puts("static says hello");
	fflush(stdout);
	if (argc > 1) {          /* start a dynamically linked program */
		pid_t p = fork();
		if (p == 0) {
			execv(argv[1], argv + 1);
			_exit(127);
		}
		int st;
		waitpid(p, &st, 0);
	}
	return 3;
}
CEOF
cat >"$TMP/spin.c" <<'CEOF'
#include <stdio.h>
int main(void)
{
	volatile unsigned long x = 1;
	for (long i = 0; i < 300000000; i++)
		x = x * 6364136223846793005ul + 1442695040888963407ul;
	printf("%lu\n", x & 0xff);
	return 0;
}
CEOF
if ! gcc -static -O1 -o "$TMP/st" "$TMP/st.c" 2>"$TMP/cc.err"; then
	fail "cannot link statically: $(head -c 200 "$TMP/cc.err")"; finish
fi
gcc -O1 -o "$TMP/spin" "$TMP/spin.c"
check "the fixture is static (no PT_INTERP)" sh -c "! readelf -l '$TMP/st' | grep -q INTERP"

"$TMP/st" >"$TMP/plain.out"; pst=$?
st=$(runst "$TMP/v.out" "$TMP/v.err" "$VPROF" run --db "$TMP/db" --freq 1000 -- "$TMP/st")
cat "$TMP/v.err"
check "exit status unchanged ($st, natively $pst)" [ "$st" = "$pst" ]
check "output unchanged" cmp -s "$TMP/plain.out" "$TMP/v.out"
check "one line says it is statically linked and runs unprofiled" \
	[ "$(grep -c 'statically linked: there is no dynamic loader' "$TMP/v.err")" = 1 ]

# A dynamically linked child of the static program is profiled.
st=$(runst "$TMP/v2.out" "$TMP/v2.err" "$VPROF" run --db "$TMP/db2" --freq 1000 -- "$TMP/st" "$TMP/spin")
cat "$TMP/v2.err"
n=$(sed -n 's/^vprof: \([0-9]*\) samples from \([0-9]*\) process.*/\1 \2/p' "$TMP/v2.err")
check "its dynamically linked child is profiled (samples, processes: ${n:-none})" \
	[ "${n%% *}" -gt 50 -a "${n##* }" = 1 ]
check "status 3 kept with the child" [ "$st" = 3 ]

# A dynamically linked program gets no such line.
runst "$TMP/v3.out" "$TMP/v3.err" "$VPROF" run --db "$TMP/db3" --freq 1000 -- "$TMP/spin" >/dev/null
check "a dynamic program: no static-link message" sh -c "! grep -q 'statically linked' '$TMP/v3.err'"
finish
