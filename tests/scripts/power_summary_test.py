#!/usr/bin/env python3
"""scripts/power_summary.py on hand-made logs: step-time medians by window (steps 0-9 left
out), SM clock and power over the loaded samples only (above 300 W; headers and "[N/A]" rows
skipped), and a one-line error, exit 1, for a log with too few steps or no loaded sample."""
import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "power_summary.py")


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".log", delete=False)
    f.write(text)
    f.close()
    return f.name


def train_log(dts):
    return "".join(f"step {i:05d} (50.0%) | loss: 3.0 | dt: {dt}ms | tok/sec: 1 | mfu: 40.0%\n" for i, dt in enumerate(dts))


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


class PowerSummaryTest(unittest.TestCase):
    def test_windows_and_loaded_samples(self):
        dts = [900] * 10 + [300] * 40 + [310] * 50 + [320] * 50  # the slow first steps are left out
        smi = "clocks.sm, power.draw, temperature.gpu\n1980, 117.0, 30\n[N/A], [N/A], 31\n" + \
              "1590, 693.0, 55\n1600, 690.0, 55\n1575, 692.0, 56\n1530, 697.0, 56\n"
        r = run(write(train_log(dts)), write(smi))
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "steps 10-49: dt median 300 ms")
        self.assertEqual(lines[1], "steps 50-99: dt median 310 ms")
        self.assertEqual(lines[2], "steps 100-149: dt median 320 ms")
        self.assertIn("loaded first half: 2 samples, SM clock median 1600 MHz (min 1590), power median 693 W (max 693)", lines[3])
        self.assertIn("loaded second half: 2 samples, SM clock median 1575 MHz (min 1530), power median 697 W (max 697), temp max 56 C", lines[4])

    def test_too_few_steps(self):
        r = run(write(train_log([300] * 5)), write("1590, 693.0, 55\n"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("5 step lines", r.stderr)

    def test_no_loaded_sample(self):
        r = run(write(train_log([300] * 20)), write("1980, 117.0, 30\n"))
        self.assertEqual(r.returncode, 1)
        self.assertIn("no samples above 300 W", r.stderr)


if __name__ == "__main__":
    unittest.main()
