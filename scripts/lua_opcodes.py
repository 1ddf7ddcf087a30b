#!/usr/bin/python3
"""Map the dispatch targets of Debian's Lua 5.4 VM to opcode names.

usage: lua_opcodes.py [LUA [LUAC]]      (default /usr/bin/lua5.4 /usr/bin/luac5.4)

Prints one line per opcode, in opcode order: "VADDR NAME" (VADDR in hex,
the ELF vaddr of the opcode's handler in LUA, as `vprof targets` reports
targets). Exits 1 with one message if either table is not found.

Lua 5.4's luaV_execute dispatches with computed gotos through ljumptab.h's
`static const void *const disptab[NUM_OPCODES] = { &&L_OP_MOVE, ... }`,
the labels in lopcodes.h's order. In a PIE (Debian builds lua5.4 as one)
that array lives in .data.rel.ro and every slot has an R_X86_64_RELATIVE
relocation whose addend is the label's vaddr. The names come from luac's
own `opnames[]` (lopnames.h, same order, NULL-terminated), also an array
of relocated pointers, found by its first string "MOVE". The jump table is
the run of NUM_OPCODES consecutive relocated slots, all pointing into the
executable section, that the code addresses with a RIP-relative lea/mov,
and whose targets are all distinct; exactly one run must qualify.

Binaries are stripped (no luaV_execute symbol), so nothing here uses
symbols: only the ELF headers, .rela.dyn and the code bytes.
"""
import struct
import sys

R_X86_64_RELATIVE = 8


class Elf:
    def __init__(self, path):
        self.path = path
        self.b = open(path, "rb").read()
        b = self.b
        if b[:4] != b"\x7fELF" or b[4] != 2 or b[5] != 1:
            raise ValueError("%s: not a little-endian ELF64 file" % path)
        (self.shoff,) = struct.unpack_from("<Q", b, 0x28)
        (self.phoff,) = struct.unpack_from("<Q", b, 0x20)
        phentsize, phnum, shentsize, shnum, shstrndx = struct.unpack_from("<HHHHH", b, 0x36)
        self.segs = []
        for i in range(phnum):
            p_type, p_flags, p_offset, p_vaddr, _, p_filesz, _, _ = struct.unpack_from(
                "<IIQQQQQQ", b, self.phoff + i * phentsize)
            if p_type == 1:  # PT_LOAD
                self.segs.append((p_vaddr, p_offset, p_filesz, p_flags))
        secs = []
        for i in range(shnum):
            secs.append(struct.unpack_from("<IIQQQQIIQQ", b, self.shoff + i * shentsize))
        strtab = secs[shstrndx]
        self.secs = {}
        for s in secs:
            name = b[strtab[4] + s[0]:b.index(b"\0", strtab[4] + s[0])].decode()
            # name -> (type, flags, addr, offset, size, entsize)
            self.secs[name] = (s[1], s[2], s[3], s[4], s[5], s[9])

    def off(self, vaddr):
        for va, off, sz, _ in self.segs:
            if va <= vaddr < va + sz:
                return off + vaddr - va
        return None

    def cstr(self, vaddr):
        o = self.off(vaddr)
        if o is None:
            return None
        e = self.b.find(b"\0", o)
        return self.b[o:e].decode("latin-1") if e >= 0 else None

    def relative(self):
        """{slot vaddr: addend} of every R_X86_64_RELATIVE in .rela.dyn."""
        out = {}
        s = self.secs.get(".rela.dyn")
        if not s:
            return out
        for o in range(s[3], s[3] + s[4], 24):
            r_offset, r_info, r_addend = struct.unpack_from("<QQq", self.b, o)
            if r_info & 0xffffffff == R_X86_64_RELATIVE:
                out[r_offset] = r_addend
        return out

    def rip_refs(self):
        """Every vaddr the executable section reaches with a RIP-relative
        REX.W lea/mov (48-4f 8b/8d modrm mod=00 rm=101 disp32)."""
        s = self.secs[".text"]
        b, addr, off, size = self.b, s[2], s[3], s[4]
        refs = set()
        for i in range(off, off + size - 7):
            if 0x48 <= b[i] <= 0x4f and b[i + 1] in (0x8b, 0x8d) and b[i + 2] & 0xc7 == 0x05:
                (disp,) = struct.unpack_from("<i", b, i + 3)
                refs.add(addr + (i - off) + 7 + disp)
        return refs


def opnames(luac):
    rel = luac.relative()
    for slot in sorted(rel):
        if luac.cstr(rel[slot]) != "MOVE":
            continue
        names = []
        while slot in rel:
            names.append(luac.cstr(rel[slot]))
            slot += 8
        if all(n and n.isupper() for n in names) and len(names) > 40:
            return names
    raise ValueError("%s: no opnames[] table (an array of strings from \"MOVE\")" % luac.path)


def jumptab(lua, n):
    rel = lua.relative()
    text = lua.secs[".text"]
    lo, hi = text[2], text[2] + text[4]
    refs = lua.rip_refs()
    found = []
    for start in sorted(rel):
        if start not in refs:
            continue
        slots = [rel.get(start + 8 * k) for k in range(n)]
        if any(t is None or not lo <= t < hi for t in slots) or len(set(slots)) != n:
            continue
        found.append((start, slots))
    if len(found) != 1:
        raise ValueError("%s: %d candidate dispatch tables of %d code pointers (want exactly 1)"
                         % (lua.path, len(found), n))
    return found[0]


def main():
    lua_path = sys.argv[1] if len(sys.argv) > 1 else "/usr/bin/lua5.4"
    luac_path = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/luac5.4"
    try:
        names = opnames(Elf(luac_path))
        start, slots = jumptab(Elf(lua_path), len(names))
    except (OSError, ValueError, KeyError) as e:
        print("lua_opcodes: %s" % e, file=sys.stderr)
        return 1
    print("# %s: disptab at %#x, %d opcodes (names from %s)" % (lua_path, start, len(names), luac_path))
    for name, t in zip(names, slots):
        print("%#x %s" % (t, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
