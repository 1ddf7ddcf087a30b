#!/bin/bash
# `vprof invariants` on real Debian programs at the defaults of `vprof run
# --values`: python3.11 (a dict and regex workload), sqlite3 (an insert,
# an index, a group-by), gzip -6 and xz -6 (text of seeded random words),
# each a few seconds. Their output and exit status must not change under
# --values. Every one of the top 20 rows is classified again here,
# independently of vprof's own rules, from objdump's disassembly of the
# instruction at the row's pc and the bytes of the image file: none may be
# a constant-pool load (a RIP-relative read of a section without write
# permission whose bytes are the row's value), an immediate moved, a
# zeroing or all-ones idiom, or a frame address (the stack pointer, an
# rsp-based address, a value printed as [stack]). The rows are printed, so
# the log says what vprof finds in these programs.
. "$(dirname "$0")/lib.sh"
DIR=$TMP; . "$TOP/tests/fixtures/real_workloads.sh"
for p in "$REAL_PYTHON" /usr/bin/sqlite3 /usr/bin/gzip /usr/bin/xz; do
	[ -x "$p" ] || { fail "$p is installed (Debian's)"; finish; }
done

# run NAME STDIN CMD...: the program plain and under vprof run --values.
run() {
	local name=$1 in=$2
	shift 2
	"$@" <"$in" >"$TMP/$name.plain" 2>/dev/null
	local st0=$?
	local st
	st=$("$PY" -c 'import subprocess, sys
r = subprocess.run(sys.argv[4:], stdin=open(sys.argv[1], "rb"), stdout=open(sys.argv[2], "wb"), stderr=open(sys.argv[3], "wb"))
print(r.returncode)' "$in" "$TMP/$name.out" "$TMP/$name.err" "$VPROF" run --db "$TMP/$name.db" --values -- "$@")
	local same=no
	cmp -s "$TMP/$name.plain" "$TMP/$name.out" && same=yes
	check "$name: exit status ($st, plain $st0) and output ($same) unchanged under --values" \
		[ "$st" = "$st0" -a "$same" = yes ]
	grep '^vprof:' "$TMP/$name.err" | sed 's/^/    /'
	"$VPROF" invariants --db "$TMP/$name.db" -n 20 >"$TMP/$name.txt"
	"$VPROF" invariants --db "$TMP/$name.db" -n 20 --json >"$TMP/$name.json"
	local msg
	msg=$("$PY" - "$TMP/$name.json" <<'EOF'
import json, re, struct, subprocess, sys

rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
head, rows = rows[0], rows[1:]
elf = {}

def sections(path):
    """(addr, size, writable, file offset) of every allocated section."""
    if path not in elf:
        out = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True).stdout
        secs = []
        for l in out.splitlines():
            m = re.match(r"\s*\[\s*\d+\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+\S+\s+(\S*)", l)
            if m and "A" in m.group(5):
                secs.append((int(m.group(2), 16), int(m.group(4), 16), "W" in m.group(5),
                             int(m.group(3), 16), m.group(1)))
        elf[path] = secs
    return elf[path]

def ro_bytes(path, addr, n):
    """The n bytes at addr if it is in a section the program cannot write."""
    for a, size, w, off, name in sections(path):
        if a <= addr < a + size:
            if w and name not in (".got", ".data.rel.ro"):
                return None
            if name == ".bss" or off == 0:
                return None
            with open(path, "rb") as f:
                f.seek(off + addr - a)
                return f.read(n)
    return None

def insn(path, pc):
    out = subprocess.run(["objdump", "-d", "--no-show-raw-insn", "--start-address=%#x" % pc,
                          "--stop-address=%#x" % (pc + 15), path], capture_output=True, text=True).stdout
    for l in out.splitlines():
        m = re.match(r"\s*([0-9a-f]+):\s+(.*)$", l)
        if m and int(m.group(1), 16) == pc:
            return m.group(2).strip()
    return ""

ZERO = re.compile(r"^(v?p?xor[a-z]*|sub[lqwb]?|v?psub[bwdq]|v?pcmpeq[bwdq])\s+(%\w+),\s*(%\w+)(,\s*(%\w+))?")

def why_bad(r):
    text = r.get("value_text") or ""
    if text.startswith("[stack]"):
        return "a frame address (%s)" % text
    if r["what"] != "operand":
        return None
    i = insn(r["image"], int(r["pc"], 16))
    kinds = r["kind"]
    m = ZERO.match(i)
    if m and m.group(2) == m.group(3) and (not m.group(5) or m.group(5) == m.group(3)):
        return "a zeroing idiom: " + i
    if re.match(r"^mov[a-z]*\s+\$", i) and "result" in kinds:
        return "an immediate moved: " + i
    if "%rsp" in i and ("addr" in kinds or re.search(r"(^|\s|,)%rsp(,|$)", i)):
        if "addr" in kinds or "(%rsp)" not in i:
            return "a frame address: " + i
    c = re.search(r"# ([0-9a-f]+)", i)
    if "(%rip)" in i and c:
        b = ro_bytes(r["image"], int(c.group(1), 16), 8)
        v = r["value"]
        if b is not None and (v == struct.unpack("<Q", b)[0] or v == struct.unpack("<I", b[:4])[0]):
            return "a constant-pool load: " + i
    return None

bad = [(r, why_bad(r)) for r in rows]
print(" ".join(["ok" if not any(w for _, w in bad) else "bad", str(len(rows)),
                str(sum(head["hidden"].values()))]))
for r, w in bad:
    print("  %5.1f%% %-8s %s%s" % (100 * r["weight"], r["what"], r["suggestion"][:150],
                                  "   <-- NOT DATA: " + w if w else ""))
print("  hidden: %s" % head["hidden"])
EOF
)
	local verdict n nh
	read -r verdict n nh <<<"$(head -1 <<<"$msg")"
	tail -n +2 <<<"$msg"
	check "$name: none of the top $n rows is a constant-pool load, an immediate, an idiom or a frame address ($nh hidden)" \
		[ "$verdict" = ok ]
}

for name in $REAL_NAMES; do
	real_cmd "$name"
	run "$name" "$REAL_IN" "${REAL_CMD[@]}"
done
finish
