#!/usr/bin/env python3
"""scripts/e2e_summary.py on a hand-made state directory: a results.db made with the daemon's
own schema and stamped stage logs as scripts/device_e2e.sh writes them. Checks each
experiment's split (build, check, startup, warm-up steps, evaluation, training, the rest), the
run's training share, experiments per hour and the extrapolation to 300 s, the GPU busy share,
and the one-line errors for a missing database and an empty one."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
SCRIPT = os.path.join(ROOT, "scripts", "e2e_summary.py")
SCHEMA = os.path.join(ROOT, "results.db.schema")
T0 = 1_800_000_000.0


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)


def stage_log(path, begin, end, steps=(), summary=None):
    """A stage log: begin stamp, stamped step lines [(stamp, step, dt_ms)], summary, end stamp."""
    lines = [f"ard-e2e-t {begin:.3f} begin", "model: depth 8, dim 512"]
    for stamp, step, dt in steps:
        lines += [f"ard-e2e-t {stamp:.3f} step",
                  f"step {step:05d} ( 1.0%) | loss: 6.0 | raw: 6.0 | lrm: 1.000 | dt: {dt}ms | tok/sec: 1 | "
                  f"mfu: 48.0% | epoch: 1 | remaining: 1s"]
    if summary is not None:
        lines += [f"ard-e2e-t {summary:.3f} summary", "---", "val_bpb:          0.990000"]
    lines.append(f"ard-e2e-t {end:.3f} end")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


class E2ESummaryTest(unittest.TestCase):
    def setUp(self):
        self.state = tempfile.mkdtemp()
        os.mkdir(os.path.join(self.state, "logs"))
        self.db = os.path.join(self.state, "results.db")
        con = sqlite3.connect(self.db)
        with open(SCHEMA) as f:
            con.executescript(f.read())
        con.execute("INSERT INTO runs VALUES ('e2e', 'autoresearch/e2e', ?, ?)", ("a" * 40, T0))
        con.commit()
        con.close()

    def add(self, eid, state, started, ended, training_seconds=None, tokens_m=None, steps=None, desc=""):
        con = sqlite3.connect(self.db)
        summary = json.dumps({"total_tokens_M": tokens_m, "num_steps": steps}) if tokens_m else None
        con.execute("INSERT INTO experiments (id, tag, parent_commit, description, state, started_at, ended_at, "
                    "training_seconds, summary_json) VALUES (?, 'e2e', ?, ?, ?, ?, ?, ?, ?)",
                    (eid, "a" * 40, desc, state, started, ended, training_seconds, summary))
        con.commit()
        con.close()

    def log(self, name):
        return os.path.join(self.state, "logs", name)

    def trained(self, eid, start):
        """An experiment that trains: build 15 s, check 4 s, startup 2 s, steps of 100 ms
        (11 uncounted: 1.1 s), counted budget 60 s, eval 3 s, exit 0.5 s, 1 s before the build."""
        b0 = start + 1
        stage_log(self.log(f"{eid}-build.log"), b0, b0 + 15)
        stage_log(self.log(f"{eid}-check.log"), b0 + 15, b0 + 19)
        t_begin = b0 + 19
        first = t_begin + 2 + 0.1  # step 0 began 2 s in and printed after its 100 ms
        steps = [(first + 0.1 * i, i, 100) for i in range(11)]
        last = first + 0.1 * 10 + 60  # the counted steps: two more lines, the last 60 s later
        steps += [(last - 30, 11, 100), (last, 12, 100)]
        stage_log(self.log(f"{eid}-train.log"), t_begin, last + 3.5, steps, summary=last + 3)
        end = last + 3.5
        # tokens a step: 2.0 M tokens over 20 steps = 100000 a step; dt 100 ms -> 1.0 M tokens/s
        self.add(eid, "kept", start, end, training_seconds=60.0, tokens_m=2.0, steps=20, desc=f"exp {eid}")
        return end

    def test_split_share_and_extrapolation(self):
        e1 = self.trained(1, T0)
        e2 = self.trained(2, e1)
        # a build failure: 1 s proposing, an 8 s build
        stage_log(self.log("3-build.log"), e2 + 1, e2 + 9)
        self.add(3, "build_fail", e2, e2 + 9, desc="break the build")
        gpu = os.path.join(self.state, "gpu.log")
        with open(gpu, "w") as f:  # 4 samples in the run, 3 busy; one outside it
            f.write(f"{T0 + 10} 95\n{T0 + 50} 0\n{T0 + 80} 100 %\n{e2 + 5} 3\n{T0 - 100} 100\n")
        r = run(self.state, "--gpu-log", gpu)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        row1 = lines[1].split()
        # id status build check startup warmup eval train other wall
        self.assertEqual(row1[:2], ["1", "kept"])
        self.assertEqual([float(x) for x in row1[2:10]], [15.0, 4.0, 2.0, 1.1, 3.0, 60.0, 1.5, 86.6])
        row3 = lines[3].split()
        self.assertEqual(row3[:4], ["3", "build_fail", "8.0", "-"])
        self.assertEqual(float(row3[8]), 1.0)  # other
        self.assertEqual(float(row3[9]), 9.0)  # wall
        wall = 2 * 86.6 + 9
        out = r.stdout
        self.assertIn(f"run: 3 experiments finished in {wall:.0f} s ({3600 * 3 / wall:.1f} per hour at budget_s = 60)",
                      out)
        self.assertIn(f"training share of the run's wall time: {120 / wall:.3f}", out)
        self.assertIn("GPU busy share (utilization > 0, 4 samples): 0.750", out)
        # the first experiment's build (a full one) is left out of the incremental figure
        self.assertIn("incremental build: median 11.5 s, max 15.0 s (target under 20 s: met)", out)
        self.assertIn("steady-state tokens/s (tokens a step / mean dt of steps 11 on): median 1.000 M", out)
        self.assertIn("median time outside training 26.6 s, of it on the GPU (check, startup, warmup, eval) 10.1 s "
                      "(target at most 10 s: NOT met)", out)
        self.assertIn(f"at budget_s = 60: {3600 / 86.6:.1f} experiments per hour, training share {60 / 86.6:.3f}", out)
        self.assertIn(f"at budget_s = 300: {3600 / 326.6:.1f} experiments per hour, training share {300 / 326.6:.3f} "
                      "(extrapolated) (target at least 0.95: NOT met)", out)

    def test_no_training_reached(self):
        stage_log(self.log("1-build.log"), T0 + 1, T0 + 5)
        self.add(1, "build_fail", T0, T0 + 5)
        r = run(self.state)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no experiment reached the summary: no overheads to extrapolate", r.stdout)

    def test_missing_and_empty_database(self):
        r = run(os.path.join(self.state, "logs"))
        self.assertEqual(r.returncode, 1)
        self.assertRegex(r.stderr, r"^e2e_summary: .*results.db: missing")
        r = run(self.state)
        self.assertEqual(r.returncode, 1)
        self.assertEqual(r.stderr.strip(), f"e2e_summary: {self.db}: no experiment recorded")


if __name__ == "__main__":
    unittest.main()
