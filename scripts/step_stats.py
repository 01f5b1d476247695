#!/usr/bin/env python3
"""Step-time statistics of a training log, the figures docs/LOG.md compares runs by.

    step_stats.py LOG [--from N]

LOG: the trainer's output (step lines "step 00042 (...) | ... | dt: 261ms | ..."). Prints one
line for the steps numbered N and after (default 30: past start-up and the first steps' autotune):

    LOG: steps 30-99 (70): mean 261.56, median 261, p10 260, p90 263 ms; val_bpb 0.980926

The mean is what an A/B pair of short runs is judged by (it moves with every step, where the
median of whole milliseconds does not); val_bpb is the summary's, where the run got that far.
Exits 1 with a one-line error when LOG holds fewer than two step lines from N on.
"""
import argparse
import re
import statistics
import sys

STEP_LINE = re.compile(r"^step (\d+) .*\| dt: ([0-9.]+)ms")
VAL_BPB = re.compile(r"^val_bpb:\s+([0-9.]+)")


def step_stats(lines, first):
    """(first step, last step, [dt ms]) of the step lines numbered `first` and after, and the
    summary's val_bpb (None without one)."""
    steps, dts, val_bpb = [], [], None
    for line in lines:
        m = STEP_LINE.match(line)
        if m and int(m.group(1)) >= first:
            steps.append(int(m.group(1)))
            dts.append(float(m.group(2)))
        m = VAL_BPB.match(line)
        if m:
            val_bpb = m.group(1)
    return steps, dts, val_bpb


def percentile(sorted_values, fraction):
    """The value at rank floor(fraction * n) of the n sorted_values (the last one at most)."""
    return sorted_values[min(int(fraction * len(sorted_values)), len(sorted_values) - 1)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log")
    ap.add_argument("--from", dest="first", type=int, default=30)
    a = ap.parse_args(argv)
    try:
        with open(a.log) as f:
            steps, dts, val_bpb = step_stats(f, a.first)
    except OSError as e:
        print(f"step_stats: {e}", file=sys.stderr)
        return 1
    if len(dts) < 2:
        print(f"step_stats: {a.log} has {len(dts)} step lines from step {a.first} on, need at least 2",
              file=sys.stderr)
        return 1
    s = sorted(dts)
    line = (f"{a.log}: steps {steps[0]}-{steps[-1]} ({len(dts)}): mean {statistics.mean(dts):.2f}, "
            f"median {statistics.median(dts):g}, p10 {percentile(s, 0.1):g}, p90 {percentile(s, 0.9):g} ms")
    print(line + (f"; val_bpb {val_bpb}" if val_bpb else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
