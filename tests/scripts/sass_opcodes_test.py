#!/usr/bin/env python3
"""scripts/sass_opcodes.py on hand-made inputs: the opcode table learned from a cuobjdump
listing (modifiers and predicates stripped; two opcodes on the same bits refused), static
counts of each .text.<kernel> section of an ELF64 file built here (uniform instructions apart,
TMA copies not among them; unknown bits shown as ?XXX; --kernel filters), executed counts from
an ncu source-page CSV, and a one-line error, exit 1, for input of the wrong kind (not an ELF
file, a truncated one, a listing without instructions, a CSV without the counts)."""
import json
import os
import struct
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "sass_opcodes.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def write(data, suffix):
    f = tempfile.NamedTemporaryFile("wb", suffix=suffix, delete=False)
    f.write(data.encode() if isinstance(data, str) else data)
    f.close()
    return f.name


def insn(bits):
    """A 16-byte instruction whose low 12 bits are `bits` (the rest arbitrary but fixed)."""
    return struct.pack("<QQ", 0x0000001234560000 | bits, 0x000fe20000000f00)


def elf64(sections):
    """A minimal ELF64 file holding `sections` [(name, bytes)] behind a null section, with
    .shstrtab last."""
    names = b"\0"
    offsets = []
    for name, _ in sections + [(".shstrtab", b"")]:
        offsets.append(len(names))
        names += name.encode() + b"\0"
    body = b""
    placed = []
    data_start = 64
    for (_, data) in sections + [(".shstrtab", names)]:
        placed.append((data_start + len(body), len(data)))
        body += data
    shoff = data_start + len(body)
    header = bytearray(64)
    header[:5] = b"\x7fELF\x02"
    struct.pack_into("<Q", header, 0x28, shoff)
    struct.pack_into("<HHH", header, 0x3A, 64, len(sections) + 2, len(sections) + 1)
    table = bytes(64)  # the null section
    for (off, size), name_off in zip(placed, offsets):
        table += struct.pack("<IIQQQQIIQQ", name_off, 1, 0, 0, off, size, 0, 0, 16, 0)
    return bytes(header) + body + table


LISTING = """
        Function : kernel_a
        /*0000*/                   LDC R1, c[0x0][0x28] ;            /* 0x00000a00ff017b82 */
                                                                     /* 0x000fe20000000800 */
        /*0010*/              @!P0 FMUL.FTZ R3, R2, R2 ;             /* 0x0000000202037220 */
                                                                     /* 0x000fe20000410000 */
        /*0020*/                   UIADD3 UR4, UR4, 0x1, URZ ;       /* 0x0000000104047890 */
                                                                     /* 0x000fe2000fffe03f */
        /*0030*/                   UTMALDG.2D [UR8], [UR4] ;         /* 0x00000008040075b4 */
                                                                     /* 0x0001e20008019000 */
"""


class SassOpcodesTest(unittest.TestCase):
    def setUp(self):
        self.table = write("", ".json")
        r = run("learn", write(LISTING, ".sass"), "--table", self.table)
        self.assertEqual(r.returncode, 0, r.stderr)

    def test_learn(self):
        with open(self.table) as f:
            self.assertEqual(json.load(f), {"220": "FMUL", "5b4": "UTMALDG", "890": "UIADD3", "b82": "LDC"})
        clash = LISTING + "        /*0040*/                   FADD R1, R1, R1 ;          /* 0x0000000101017220 */\n"
        r = run("learn", write(clash, ".sass"), "--table", write("", ".json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("opcode bits 220 name both FMUL and FADD", r.stderr)
        r = run("learn", write("no instructions here\n", ".sass"), "--table", write("", ".json"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no SASS instruction lines", r.stderr)

    def test_learn_merges_into_the_table(self):
        # a later listing adds its opcodes and keeps the table's; one that contradicts it is refused
        more = "        /*0040*/                   UIADD3.64 UR4, UR4, 0x2, URZ ;     /* 0x0000000204047897 */\n"
        r = run("learn", write(more, ".sass"), write(LISTING, ".sass"), "--table", self.table)
        self.assertEqual(r.returncode, 0, r.stderr)
        with open(self.table) as f:
            self.assertEqual(json.load(f), {"220": "FMUL", "5b4": "UTMALDG", "890": "UIADD3", "897": "UIADD3",
                                            "b82": "LDC"})
        clash = "        /*0050*/                   FADD R1, R1, R1 ;          /* 0x0000000101017220 */\n"
        r = run("learn", write(clash, ".sass"), "--table", self.table)
        self.assertEqual(r.returncode, 1)
        self.assertIn("opcode bits 220 name both FMUL and FADD", r.stderr)
        with open(self.table) as f:
            self.assertEqual(len(json.load(f)), 5)  # the refused listing left the table as it was
        for bad in ("{not json", "[1, 2]", '{"zz": "FMUL"}'):
            table = write(bad, ".json")
            r = run("learn", write(LISTING, ".sass"), "--table", table)
            self.assertEqual(r.returncode, 1, bad)
            self.assertIn(f"{table}: not an opcode table written by learn", r.stderr)
            r = run("cubin", write(elf64([(".text.k", insn(0x220))]), ".cubin"), "--table", table)
            self.assertEqual(r.returncode, 1, bad)
            self.assertIn("not an opcode table", r.stderr)

    def test_cubin(self):
        a = insn(0x220) * 3 + insn(0x890) * 2 + insn(0x5B4) + insn(0xABC)
        b = insn(0xB82)
        cubin = write(elf64([(".text.kernel_a", a), (".nv.info", b"\0" * 16), (".text.other_b", b)]), ".cubin")
        r = run("cubin", cubin, "--table", self.table, "--seq")
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0].split(), ["7", "instr", "2", "uniform", "0", "HGMMA", "kernel_a"])
        self.assertEqual(lines[1], "FMUL FMUL FMUL UIADD3 UIADD3 UTMALDG ?ABC")
        self.assertEqual(lines[2].split(), ["1", "instr", "0", "uniform", "0", "HGMMA", "other_b"])
        r = run("cubin", cubin, "--table", self.table, "--kernel", "other")
        self.assertEqual(len(r.stdout.splitlines()), 1)
        self.assertIn("other_b", r.stdout)
        r = run("cubin", cubin, "--table", self.table, "--kernel", "missing")
        self.assertEqual(r.returncode, 1)
        self.assertIn("no kernel whose name contains 'missing'", r.stderr)
        r = run("cubin", write("not an elf", ".cubin"), "--table", self.table)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "sass_opcodes: not an ELF64 file (build it with nvcc -cubin)")
        with open(cubin, "rb") as f:
            head = f.read(200)  # the header, but not the section table it points to
        r = run("cubin", write(head, ".cubin"), "--table", self.table)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(),
                         "sass_opcodes: a truncated or malformed ELF64 file (its section table lies outside it)")

    def test_ncu(self):
        csv_text = ('"Kernel Name","flash_forward_kernel",\n'
                    '"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed"\n'
                    '"0x10","      FFMA R1, R2, R3, R4","5","3000000"\n'
                    '"0x20","@!P0  FFMA R1, R2, R3, R4","1","1000000"\n'
                    '"0x30","      UMOV UR4, 0x1","0","2000000"\n'
                    '"0x40","      UTMALDG.2D [UR8], [UR4]","0","1000000"\n'
                    '"0x50","      EXIT","0","-"\n')
        r = run("ncu", write(csv_text, ".csv"))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "total 7.00 M warp instructions, uniform 2.00 M (28.6 %)")
        self.assertEqual(lines[1].split(), ["FFMA", "4.00", "M", "57.1", "%"])
        r = run("ncu", write('"Kernel Name","k",\n"a","b"\n', ".csv"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no 'Source' and 'Instructions Executed' columns", r.stderr)


if __name__ == "__main__":
    unittest.main()
