"""Static check of SASS listings (``nvdisasm -c`` output) for uniform registers read but never written.

Written for a ptxas 12.8 miscompile (the assembler bundled with Triton 3.6): the T = 1 specialisation of
``atrex_sm90_gdn_state_output_v2`` read UR16, which no instruction of the kernel writes, as half of a wgmma
shared-memory descriptor; on the H200 that was an intermittent "Warp Out-of-range Address". A uniform register that nothing in the function writes holds whatever an earlier kernel left there.

The check is deliberately simple: a register counts as written if any instruction anywhere in the listing has it
as destination (so it cannot see a read on a path where the write has not happened yet, only reads with no write at
all). Destination widths: ``.64`` / ``.WIDE`` two registers, ``.128`` four. Reads: every ``URn`` operand, ``.64``
operands two registers, the 64-bit addend of a ``.WIDE`` multiply-add two, ``desc[URn]`` two (a memory
descriptor), ``gdesc[URn]`` of a wgmma four (A and B descriptors) or, with A in registers, its upper two.
"""

import re

_INSN = re.compile(r"\s*/\*([0-9a-f]+)\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*(.*?)\s*;")
_UR = re.compile(r"^UR(\d+)$")


def unwritten_uniform_reads(sass: str) -> list:
    """``[(offset, opcode, [register numbers])]``: each instruction reading a uniform register that no instruction
    of the listing writes."""
    written, reads = set(), []
    for line in sass.splitlines():
        m = _INSN.match(line)
        if not m:
            continue
        off, op, rest = m.groups()
        ops = [o.strip() for o in rest.split(",")] if rest else []
        width = 4 if ".128" in op else 2 if (".64" in op or ".WIDE" in op) else 1
        dest = _UR.match(ops[0]) if ops else None
        if dest:  # a bare uniform register as first operand is a destination
            n = int(dest.group(1))
            written.update(range(n, n + width))
        for i, o in enumerate(ops[1:] if dest else ops, start=1 if dest else 0):
            for g in re.finditer(r"(g?desc)\[UR(\d+)\]", o):
                n = int(g.group(2))
                if g.group(1) == "desc":
                    regs = [n, n + 1]
                elif op.startswith("HGMMA") and len(ops) > 1 and re.fullmatch(r"R\d+", ops[1]):
                    regs = [n + 2, n + 3]  # A from registers: only the B descriptor
                else:
                    regs = [n, n + 1, n + 2, n + 3]
                reads.append((off, op, regs))
            for g in re.finditer(r"\bUR(\d+)\b", re.sub(r"g?desc\[UR\d+\]", "", o)):
                n = int(g.group(1))
                pair = op.startswith("U") and (".64" in op or (".WIDE" in op and i == 3))
                reads.append((off, op, [n, n + 1] if pair else [n]))
    out = []
    for off, op, regs in reads:
        missing = [r for r in regs if r not in written]
        if missing:
            out.append((off, op, missing))
    return out
