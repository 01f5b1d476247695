#!/usr/bin/env python3
"""Instruction counts of our GPU kernels by SASS opcode, for deciding what a kernel spends its
issue slots on (docs/LOG.md, runs 79-82: a quarter of the attention forward's instructions
were shared-memory descriptor arithmetic).

  sass_opcodes.py learn LISTING... [--table T]      opcode table from `cuobjdump -sass BIN` listings,
                                                    merged into the table's opcodes
  sass_opcodes.py cubin FILE [--kernel S] [--seq]   static counts a kernel of an sm_90 cubin
  sass_opcodes.py ncu CSV [--top N]                 executed counts from Nsight Compute's
                                                    `ncu -i R --page source --csv --print-source sass`
                                                    (every kernel in the file summed: profile one)

`cubin` needs no disassembler (this machine has none): the low 12 bits of an instruction's
first 64-bit word name its opcode, and the table that maps them (scripts/sm90_opcodes.json,
the default --table) is learned from a listing made where cuobjdump exists (the GPU machine).
An opcode the table lacks prints as ?XXX (its 12 bits in hex). Build the cubin with
`nvcc -cubin -arch=sm_90a ... FILE.cu`. Uniform-datapath instructions (U*, the per-warp scalar
unit: descriptors, addresses, loop counters) are counted apart, TMA copies (UTMA*) excepted.
"""
import argparse
import collections
import csv
import json
import os
import re
import struct
import sys

DEFAULT_TABLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "sm90_opcodes.json")

# An instruction line of `cuobjdump -sass`: /*0120*/  @!P0 FMUL.FTZ R1, R2, R3 ;  /* 0x... */
LISTING_LINE = re.compile(r"\s*/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)[^;]*;\s*/\* (0x[0-9a-f]{16}) \*/")


def base_opcode(mnemonic):
    """FMUL.FTZ -> FMUL: the opcode without its modifiers."""
    return mnemonic.split(".")[0]


def is_uniform(op):
    return op.startswith("U") and not op.startswith("UTMA")


def learn(listing_lines, table=None):
    """{low 12 bits: opcode} from a cuobjdump listing, added to table (a copy); raises ValueError
    on a clash with the listing itself or with the table."""
    table = dict(table or {})
    for line in listing_lines:
        m = LISTING_LINE.match(line)
        if not m:
            continue
        key, op = int(m.group(2), 16) & 0xFFF, base_opcode(m.group(1))
        if table.setdefault(key, op) != op:
            raise ValueError(f"opcode bits {key:03x} name both {table[key]} and {op}")
    return table


def text_sections(elf):
    """[(kernel name, code bytes)] of an ELF64 file's .text.<kernel> sections."""
    if elf[:4] != b"\x7fELF" or len(elf) < 64 or elf[4] != 2:
        raise ValueError("not an ELF64 file (build it with nvcc -cubin)")
    try:
        return _text_sections(elf)
    except (struct.error, ValueError, UnicodeDecodeError):
        raise ValueError("a truncated or malformed ELF64 file (its section table lies outside it)") from None


def _text_sections(elf):
    shoff, = struct.unpack_from("<Q", elf, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
    headers = [struct.unpack_from("<IIQQQQIIQQ", elf, shoff + i * shentsize) for i in range(shnum)]
    names_at = headers[shstrndx][4]

    def name(off):
        end = elf.index(b"\0", names_at + off)
        return elf[names_at + off:end].decode()

    out = []
    for h in headers:
        n = name(h[0])
        if n.startswith(".text."):
            out.append((n[len(".text."):], elf[h[4]:h[4] + h[5]]))
    return out


def opcodes(code, table):
    """The opcode of each 16-byte instruction of `code`."""
    ops = []
    for i in range(0, len(code) - 15, 16):
        key = struct.unpack_from("<Q", code, i)[0] & 0xFFF
        ops.append(table.get(key, f"?{key:03X}"))
    return ops


def executed_by_opcode(rows):
    """Counter of executed warp instructions by opcode from the source page's CSV rows."""
    header_at = next((i for i, r in enumerate(rows) if "Source" in r and "Instructions Executed" in r), None)
    if header_at is None:
        raise ValueError("no 'Source' and 'Instructions Executed' columns (use --page source --print-source sass)")
    header = rows[header_at]
    src, executed = header.index("Source"), header.index("Instructions Executed")
    counts = collections.Counter()
    for r in rows[header_at + 1:]:
        if len(r) <= max(src, executed) or not r[executed].strip().isdigit():
            continue
        text = re.sub(r"^@!?U?P\w+\s+", "", r[src].strip())
        if text:
            counts[base_opcode(text.split()[0])] += int(r[executed])
    return counts


def print_counts(counts, top):
    total = sum(counts.values())
    uniform = sum(v for k, v in counts.items() if is_uniform(k))
    print(f"total {total / 1e6:.2f} M warp instructions, uniform {uniform / 1e6:.2f} M ({100 * uniform / max(total, 1):.1f} %)")
    for op, n in counts.most_common(top):
        print(f"{op:14s} {n / 1e6:9.2f} M {100 * n / total:6.1f} %")


def read_table(path):
    """The opcode table of a JSON file written by learn (an empty file: none yet)."""
    with open(path) as f:
        text = f.read()
    if not text.strip():
        return {}
    try:
        return {int(k, 16): v for k, v in json.loads(text).items()}
    except (ValueError, AttributeError) as e:
        raise ValueError(f"{path}: not an opcode table written by learn ({e})") from None


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("learn")
    p.add_argument("listing", nargs="+")
    p.add_argument("--table", default=DEFAULT_TABLE)
    p = sub.add_parser("cubin")
    p.add_argument("file")
    p.add_argument("--kernel", default="")
    p.add_argument("--seq", action="store_true")
    p.add_argument("--table", default=DEFAULT_TABLE)
    p = sub.add_parser("ncu")
    p.add_argument("csv")
    p.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)
    try:
        if a.cmd == "learn":
            table = read_table(a.table) if os.path.exists(a.table) else {}
            for listing in a.listing:
                with open(listing) as f:
                    lines = f.readlines()
                if not any(LISTING_LINE.match(line) for line in lines):
                    raise ValueError(f"{listing}: no SASS instruction lines (a `cuobjdump -sass` listing?)")
                table = learn(lines, table)
            tmp = a.table + ".tmp"
            with open(tmp, "w") as f:
                json.dump({f"{k:03x}": v for k, v in sorted(table.items())}, f, indent=0)
            os.replace(tmp, a.table)
            print(f"{len(table)} opcodes -> {a.table}")
        elif a.cmd == "cubin":
            table = read_table(a.table)
            with open(a.file, "rb") as f:
                sections = text_sections(f.read())
            shown = [(n, code) for n, code in sections if a.kernel in n]
            if not shown:
                raise ValueError(f"{a.file}: no kernel whose name contains '{a.kernel}'")
            for n, code in shown:
                ops = opcodes(code, table)
                c = collections.Counter(ops)
                print(f"{len(ops):6d} instr {sum(v for k, v in c.items() if is_uniform(k)):5d} uniform "
                      f"{c['HGMMA']:4d} HGMMA  {n}")
                if a.seq:
                    print(" ".join(ops))
        else:
            with open(a.csv, newline="") as f:
                print_counts(executed_by_opcode(list(csv.reader(f))), a.top)
    except (OSError, ValueError) as e:
        print(f"sass_opcodes: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
