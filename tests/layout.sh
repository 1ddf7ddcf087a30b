#!/bin/bash
# The layout: the folders follow the data's way (upcall/ trigger, preload/
# handler, spool/ spool, merge/, reports/), and the injected library links
# only the first three and the interpreter. From the Makefile's own link
# lines (make -n) and the built library:
#  - build/libvprof.so is linked from upcall/, preload/, spool/ objects and
#    build/libinterp.a (interp/ only), and holds no code of merge/ or
#    reports/: no merge_*, report_* or cmd_* symbol (the spool reader,
#    the database, profiles), and none of its objects needs one;
#  - build/vprof is linked from reports/, merge/, spool/ and the archive;
#  - docs/architecture.md's Layout table says, for each folder, what the
#    link lines build it into;
#  - no two source files of the shipped folders share a name.
. "$(dirname "$0")/lib.sh"
cd "$TOP" || exit 1

make -s all >"$TMP/build.log" 2>&1 || { fail "make: $(tail -5 "$TMP/build.log")"; finish; }
# The link lines, as make would run them now (-B: all of them).
make -B -n build/libvprof.so build/vprof build/libvprof-heap.so >"$TMP/make.n" 2>/dev/null
lib_line=$(grep -E -- '-shared -o build/libvprof\.so' "$TMP/make.n" | head -1)
cmd_line=$(grep -E -- '-o build/vprof\.tmp' "$TMP/make.n" | head -1)
[ -n "$lib_line" ] && [ -n "$cmd_line" ] || { fail "no link lines in make -n: $(head -c 300 "$TMP/make.n")"; finish; }

# folders LINE: the source folders of the objects a link line names
# (build/pic/F/..., build/obj/F/...; the archive counts as interp).
folders() {
	tr ' ' '\n' <<<"$1" | sed -nE 's#^build/(pic|obj)/([a-z]+)/.*\.o$#\2#p; s#^build/libinterp\.a$#interp#p' | sort -u | tr '\n' ' '
}
lib_folders=$(folders "$lib_line")
cmd_folders=$(folders "$cmd_line" | sed 's/gen //')
check "libvprof.so is linked from upcall/ preload/ spool/ interp/ only ($lib_folders)" \
	[ "$lib_folders" = "interp preload spool upcall " ]
check "vprof is linked from reports/ merge/ spool/ interp/ ($cmd_folders)" \
	[ "$cmd_folders" = "interp merge reports spool " ]

# The archive holds interp/ objects only.
bad=$(ar t build/libinterp.a | while read -r m; do [ -e "interp/${m%.o}.c" ] || echo "$m"; done)
check "build/libinterp.a holds interp/ objects only${bad:+ (not: $bad)}" [ -z "$bad" ]

# No merge/ or reports/ code in the library, by its symbols (the library
# is not stripped: hidden functions are in .symtab).
nm build/libvprof.so | awk '$2 ~ /^[TtDdBbRr]$/ {print $3}' >"$TMP/lib.syms"
check "libvprof.so has symbols to check ($(wc -l <"$TMP/lib.syms"))" [ "$(wc -l <"$TMP/lib.syms")" -gt 500 ]
bad=$(grep -E '^(merge_|report_|cmd_)' "$TMP/lib.syms" | head -5 | tr '\n' ' ')
check "libvprof.so holds no merge/ or reports/ code (merge_*, report_*, cmd_*)${bad:+: $bad}" [ -z "$bad" ]
# ... by name, what the reader and the database are:
for s in merge_spool_open merge_spool_foreach merge_db_open merge_db_merge merge_profile_read merge_attribute; do
	check "libvprof.so has no $s" bash -c "! grep -qx '$s' '$TMP/lib.syms'"
done
# ... and what the library's writer needs is there.
for s in spool_create spool_count spool_value spool_stack spool_db_create spool_hot_offer; do
	check "libvprof.so has the writer's $s" grep -qx "$s" "$TMP/lib.syms"
done
# No object linked into it needs a merge/ or reports/ symbol.
objs=$(tr ' ' '\n' <<<"$lib_line" | grep -E '^build/pic/.*\.o$')
bad=$(for o in $objs; do nm -u "$o" | awk '{print $2}' | grep -E '^(merge_|report_|cmd_)' | sed "s#^#$o: #"; done | head -5 | tr '\n' ' ')
check "no object of libvprof.so refers to merge/ or reports/${bad:+: $bad}" [ -z "$bad" ]
bad=$(grep -lE '#include "(merge|reports)/' upcall/*.[ch] preload/*.[ch] spool/*.[ch] interp/*.[ch] 2>/dev/null | tr '\n' ' ')
check "upcall/ preload/ spool/ interp/ include nothing of merge/ or reports/${bad:+ ($bad)}" [ -z "$bad" ]

# The handler's functions (preload/hot-path.txt) lie together in the
# library's .text.vprof_hot; each listed name is still a function of it
# (a renamed or removed one would silently fall out of the section).
read -r hot_lo hot_size < <(readelf -SW build/libvprof.so | sed -n 's/.*\] \.text\.vprof_hot *PROGBITS *\([0-9a-f]*\) [0-9a-f]* \([0-9a-f]*\).*/\1 \2/p')
check "libvprof.so has a .text.vprof_hot section (${hot_size:-none})" [ -n "${hot_size:-}" ]
nm -S build/libvprof.so | awk '$3 ~ /^[Tt]$/ {print $1, $2, $4}' >"$TMP/lib.fns"
hot_names=$(grep -v '^#' preload/hot-path.txt)
missing=$(for f in $hot_names; do awk -v f="$f" '{ sub(/\..*/, "", $3) } $3 == f { found = 1 } END { exit !found }' "$TMP/lib.fns" || echo "$f"; done | tr '\n' ' ')
check "every name in preload/hot-path.txt is a function of libvprof.so${missing:+ (not: $missing)}" [ -z "$missing" ]
outside=$("$PY" - "$TMP/lib.fns" "${hot_lo:-0}" "${hot_size:-0}" $hot_names <<'PYEOF'
import sys
lo, size, names = int(sys.argv[2], 16), int(sys.argv[3], 16), set(sys.argv[4:])
# the asm syscall interposer has no section of its own (sandbox.c)
out = [f"{n}@{a}" for a, s, n in (l.split() for l in open(sys.argv[1]))
       if n.split(".")[0] in names - {"syscall"} and not lo <= int(a, 16) < lo + size]
print(" ".join(out[:5]))
PYEOF
)
check "the listed functions lie in .text.vprof_hot${outside:+ (outside: $outside)}" [ -z "$outside" ]

# docs/architecture.md's Layout table against the link lines.
for f in upcall preload spool merge interp reports; do
	row=$(grep -E "^\| \`$f/\` \|" docs/architecture.md | head -1)
	if [ -z "$row" ]; then fail "docs/architecture.md's Layout table has no row for $f/"; continue; fi
	into=$(awk -F'|' '{print $(NF-1)}' <<<"$row")
	want_lib=no; want_cmd=no; says_lib=no; says_cmd=no
	case " $lib_folders" in *" $f "*) want_lib=yes ;; esac
	case " $cmd_folders" in *" $f "*) want_cmd=yes ;; esac
	grep -q 'libvprof\.so' <<<"$into" && says_lib=yes
	sed 's/libvprof\.so//g' <<<"$into" | grep -qw vprof && says_cmd=yes
	check "docs/architecture.md: $f/ built into libvprof.so $says_lib, vprof $says_cmd, as the Makefile links it ($want_lib, $want_cmd)" \
		[ "$says_lib$says_cmd" = "$want_lib$want_cmd" ]
done
check "docs/architecture.md's Layout table has a row for each folder's files" \
	grep -q '^| `spool/` |' docs/architecture.md

# libvprof-heap.so: heap/'s interposers alone, reaching libvprof.so only by
# name at run time (dlsym), so it loads with or without it.
heap_line=$(grep -E -- '-o build/libvprof-heap\.so' "$TMP/make.n" | head -1)
heap_srcs=$(tr ' ' '\n' <<<"$heap_line" | grep -E '\.c$' | sed 's#/[^/]*$##' | sort -u | tr '\n' ' ')
check "libvprof-heap.so is built from heap/ only ($heap_srcs)" [ "$heap_srcs" = "heap " ]
bad=$(nm -D --undefined-only build/libvprof-heap.so | awk '{print $2}' | grep -E '^(preload_|spool_|vprof_)' | tr '\n' ' ')
check "libvprof-heap.so needs no symbol of libvprof.so at load${bad:+ ($bad)}" [ -z "$bad" ]
check "docs/architecture.md's Layout table has a row for heap/" grep -q '^| `heap/` |.*libvprof-heap\.so' docs/architecture.md

# One file name per role: no two source files of the shipped folders (and
# tests/unit/*.h, bench/*.c support) share a name.
dups=$(find upcall preload spool merge interp reports modules include heap -name '*.[chS]' | xargs -n1 basename | sort | uniq -d | tr '\n' ' ')
check "no two source files share a name${dups:+ ($dups)}" [ -z "$dups" ]
finish
