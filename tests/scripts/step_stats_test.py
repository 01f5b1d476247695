#!/usr/bin/env python3
"""scripts/step_stats.py on hand-made training logs: the mean, median, p10 and p90 of the step
times from --from on (steps before it and lines that are not step lines ignored), the summary's
val_bpb when the log has one, and a one-line error, exit 1, for a log with too few steps or none
at all."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "step_stats.py")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def log(dts, first=0, summary=True):
    """A trainer log: a model line, one step line per dt (numbered from `first`), the summary."""
    lines = ["model: depth 8, dim 512, heads 4/4, params 50.3M, grad accum 2, 0.2 GFLOP/token"]
    for i, dt in enumerate(dts):
        lines.append(f"step {first + i:05d} ( 1.0%) | loss: 6.000000 | raw: 6.000000 | lrm: 1.000 | dt: {dt}ms | "
                     f"tok/sec: 2000000 | mfu: 48.0% | epoch: 1 | remaining: 10s")
    if summary:
        lines += ["---", "val_bpb:          0.980926", "training_seconds: 30.0"]
    f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    f.write("\n".join(lines) + "\n")
    f.close()
    return f.name


class StepStatsTest(unittest.TestCase):
    def test_statistics_from_the_first_counted_step(self):
        # steps 0-2 are start-up (huge), steps 3-12 the counted ones: 100 .. 109 ms, 10 values
        path = log([900, 500, 400] + [100 + i for i in range(10)])
        r = run(path, "--from", "3")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(),
                         f"{path}: steps 3-12 (10): mean 104.50, median 104.5, p10 101, p90 109 ms; val_bpb 0.980926")

    def test_default_from_30_and_no_summary(self):
        path = log([300] * 30 + [261, 263, 262, 262], summary=False)
        r = run(path)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout.strip(), f"{path}: steps 30-33 (4): mean 262.00, median 262, p10 261, p90 263 ms")

    def test_too_few_steps(self):
        path = log([100, 101, 102])
        r = run(path, "--from", "2")
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), f"step_stats: {path} has 1 step lines from step 2 on, need at least 2")
        r = run(os.path.join(tempfile.gettempdir(), "no_such_training.log"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("No such file", r.stderr)
        self.assertEqual(len(r.stderr.strip().splitlines()), 1)


if __name__ == "__main__":
    unittest.main()
