#!/bin/bash
# Anything is not a database. A directory that is not a vprof database
# (no epochs/, nor spool/ before a first merge) is refused by every command that reads one, with one
# message saying what was expected, exit 1, and nothing written into it
# (no lock file). An epoch or an event the database does not have is
# named in the message, with the ones it has.
. "$(dirname "$0")/lib.sh"
cd "$TMP" || exit 1
has() { grep -q "$1" "$2" && echo y; }   # has PATTERN FILE: "y" when it matches
gcc -O1 -o prog "$TOP/tests/fixtures/rebuilt.c" || { fail "cannot build rebuilt.c"; finish; }
st=$(runst r.out r.err "$VPROF" run --db db --event task-clock --freq 1000 -- ./prog 30000000)
check "vprof run makes a database ($st)" [ "$st" = 0 -a -d db/epochs ]

mkdir empty notdb
echo "my notes" >notdb/notes.txt
for dir in empty notdb; do
	before=$(ls -lA --time-style=full-iso "$dir")
	for cmd in "report" "report --by image --json" "list steady" "export --format folded" \
		   "html -o $TMP/o.html" "invariants" "latency" "targets" "epoch list" "merge"; do
		set -- $cmd
		st=$(runst o.txt o.err "$VPROF" "$@" --db "$dir")
		lines=$(wc -l <o.err)
		if [ "$st" = 1 ] && [ "$lines" = 1 ] && grep -q "database $dir: not a vprof database (it has no epochs/ or spool/ directory" o.err &&
			[ ! -s o.txt ]; then
			pass "$1 --db $dir: exit 1, one message: $(cat o.err)"
		else
			fail "$1 --db $dir: exit $st, $lines lines on stderr ($(head -c 300 o.err)), stdout $(head -c 100 o.txt)"
		fi
	done
	for cmd in "diff $dir db" "stats db $dir"; do
		set -- $cmd
		st=$(runst o.txt o.err "$VPROF" "$@")
		check "$cmd: exit 1, one message ($(head -c 200 o.err))" \
			[ "$st" = 1 -a "$(wc -l <o.err)" = 1 -a "$(has "not a vprof database" o.err)" = y ]
	done
	check "nothing was written into $dir" [ "$before" = "$(ls -lA --time-style=full-iso "$dir")" ]
	check "no lock file in $dir" [ ! -e "$dir/lock" ]
done
st=$(runst o.txt o.err "$VPROF" report --db missing)
check "a missing directory: exit 1, one message ($(cat o.err))" \
	[ "$st" = 1 -a "$(wc -l <o.err)" = 1 -a "$(has "database missing: no such directory" o.err)" = y ]
check "and it is not made" [ ! -e missing ]

# ---- an epoch or an event the database does not have ----
for cmd in "report" "report --json" "list steady" "export --format folded" "invariants"; do
	set -- $cmd
	st=$(runst o.txt o.err "$VPROF" "$@" --db db --epoch 5)
	check "$cmd --epoch 5: exit 1, the epochs there named ($(cat o.err))" \
		[ "$st" = 1 -a "$(wc -l <o.err)" = 1 -a "$(cat o.err)" = "vprof $1: database db has no epoch 5 (its epochs: 1)" ]
	st=$(runst o.txt o.err "$VPROF" "$@" --db db --event cycles)
	check "$cmd --event cycles: exit 1, the events there named ($(cat o.err))" \
		[ "$st" = 1 -a "$(wc -l <o.err)" = 1 -a "$(has "^vprof $1: db epoch 1 has no cycles samples (its events: task-clock ([0-9]* samples))$" o.err)" = y ]
done
"$VPROF" epoch --db db new >/dev/null
st=$(runst o.txt o.err "$VPROF" report --db db --epoch 7)
check "two epochs: both named ($(cat o.err))" [ "$(has "has no epoch 7 (its epochs: 1, 2)" o.err)" = y ]
st=$(runst o.txt o.err "$VPROF" report --db db --epoch 1 --event task-clock)
check "an epoch and an event that exist: exit 0 ($st)" [ "$st" = 0 -a "$(has steady o.txt)" = y ]
finish
