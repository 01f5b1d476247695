#!/usr/bin/env python3
"""scripts/e2e_replay.py on the repository's own trainer/train.cu and on a hand-made one: five
answers in the answer format, each SEARCH a line that occurs exactly once in the file and each
REPLACE a different line; the build-breaking one without its ';' and its fix with it; a constant
missing from the file is a one-line error, exit 1."""
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "e2e_replay.py")
TRAIN_CU = os.path.join(ROOT, "trainer", "train.cu")
BLOCK = re.compile(r"^DESCRIPTION: (.+)\n\ntrainer/train.cu\n<<<<<<< SEARCH\n(.*)\n=======\n(.*)\n>>>>>>> REPLACE\n$")


def run(path):
    return subprocess.run([sys.executable, SCRIPT, path], capture_output=True, text=True)


class E2EReplayTest(unittest.TestCase):
    def test_edits_of_the_real_trainer(self):
        r = run(TRAIN_CU)
        self.assertEqual(r.returncode, 0, r.stderr)
        steps = json.loads(r.stdout)
        self.assertEqual(len(steps), 5)
        with open(TRAIN_CU) as f:
            lines = f.read().splitlines()
        edits = []
        for step in steps:
            m = BLOCK.match(step["answer"])
            self.assertIsNotNone(m, step["answer"])
            description, search, replace = m.groups()
            self.assertEqual(lines.count(search), 1, search)
            self.assertNotEqual(search, replace)
            edits.append((search, replace))
        self.assertIn("TOTAL_BATCH_TOKENS = 262144;", edits[0][1])
        self.assertIn("MATRIX_LR = 0.004f;", edits[1][1])
        self.assertRegex(edits[2][1], r"WARMUP_RATIO = 0\.02 +//")  # no ';': the build fails
        self.assertIn("WARMUP_RATIO = 0.02;", edits[3][1])
        self.assertEqual(edits[2][0], edits[3][0])  # the fix edits the best commit's line again
        self.assertIn("EMBEDDING_LR = 1e30f;", edits[4][1])

    def test_missing_constant(self):
        with tempfile.NamedTemporaryFile("w", suffix=".cu", delete=False) as f:
            f.write("constexpr int DEPTH = 8;\n")
        r = run(f.name)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), "e2e_replay: TOTAL_BATCH_TOKENS: 0 definitions in train.cu, expected 1")
        self.assertEqual(r.stdout, "")


if __name__ == "__main__":
    unittest.main()
