#!/bin/bash
# Usage is written twice, in each command's help (`vprof help CMD`) and in
# its section of docs/commands.md; this keeps the two in step. Every
# option a command's help lists (in its usage lines, or at the start of a
# line of its option list) must appear in that command's section of the
# docs (the options every report command shares may be in the docs'
# opening paragraph instead), and every option of a section's synopsis
# (its indented `vprof CMD [...]` lines) must appear in the command's help.
. "$(dirname "$0")/lib.sh"
"$PY" - "$VPROF" "$TOP/docs/commands.md" <<'PYEOF' >"$TMP/out"
import re, subprocess, sys
vprof, doc = sys.argv[1], open(sys.argv[2]).read()
cmds = re.findall(r'^  (\w+)\s', subprocess.run([vprof, 'help'], capture_output=True, text=True).stdout, re.M)
parts = re.split(r'^(##+ .*)$', doc, flags=re.M)
common, secs = parts[0], {}
for i in range(1, len(parts), 2):
    for name in re.findall(r'vprof (\w+)', parts[i]):
        secs[name] = secs.get(name, '') + parts[i + 1]
opt = r'(?<![\w-])(--[a-z][a-z0-9-]+)'
print("commands", len(cmds))
for c in cmds:
    h = subprocess.run([vprof, 'help', c], capture_output=True, text=True).stdout
    own, usage = set(), True
    for line in h.splitlines():
        if usage and (line.startswith('usage:') or line.startswith(' ' * 8)):
            own |= set(re.findall(opt, line))
            continue
        usage = False
        m = re.match(r'\s*(--[a-z][a-z0-9-]+)', line)
        if m:
            own.add(m.group(1))
    d = secs.get(c)
    if d is None:
        print("FAIL %s: no section in docs/commands.md" % c)
        continue
    documented = set(re.findall(opt, d)) | set(re.findall(opt, common))
    syn = set()
    for line in d.lstrip('\n').splitlines():
        if not line.startswith('    '):
            break
        syn |= set(re.findall(opt, line))
    a = sorted(own - documented)
    b = sorted(syn - own - set(re.findall(opt, h)))
    if a or b:
        print("FAIL %s: in its help, not in its docs section: %s; in the docs' synopsis, not in its help: %s"
              % (c, a or "none", b or "none"))
    else:
        print("PASS vprof help %s and docs/commands.md agree (%d options)" % (c, len(own)))
PYEOF
cat "$TMP/out"
n=$(sed -n 's/^commands //p' "$TMP/out")
check "vprof help lists commands ($n)" [ "${n:-0}" -ge 10 ]
finish
