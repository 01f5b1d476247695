#!/usr/bin/env python3
"""Summary of a training run at the power limit (scripts/device_run.sh power).

    power_summary.py TRAIN_LOG SMI_LOG

TRAIN_LOG: the trainer's output (step lines with "dt: <ms>ms"); SMI_LOG: nvidia-smi samples
"clock MHz, power W, temperature C" a line. Prints the median step time over windows of the
run, and the SM clock and power while loaded (power above 300 W), first and second half.
Exits 1 with a one-line error when a log holds no samples.
"""
import re
import sys


def median(values):
    values = sorted(values)
    return values[len(values) // 2]


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: power_summary.py TRAIN_LOG SMI_LOG")
    train_log, smi_log = sys.argv[1], sys.argv[2]
    dts = [float(m.group(1)) for m in re.finditer(r"dt: (\d+)ms", open(train_log).read())]
    if len(dts) <= 10:
        sys.exit(f"power_summary: {train_log} has {len(dts)} step lines, need more than 10")
    windows = [(10, 50), (50, 100), (100, len(dts))]
    for a, b in windows:
        if b > a and a < len(dts):
            print(f"steps {a}-{min(b, len(dts)) - 1}: dt median {median(dts[a:b]):.0f} ms")
    samples = []
    for line in open(smi_log):
        parts = [p.strip() for p in line.split(",")]
        try:
            samples.append(tuple(float(p) for p in parts[:3]))
        except ValueError:
            continue  # a header or an "[N/A]"
    loaded = [s for s in samples if len(s) == 3 and s[1] > 300]
    if not loaded:
        sys.exit(f"power_summary: {smi_log} has no samples above 300 W")
    half = len(loaded) // 2
    for name, part in [("first half", loaded[:half]), ("second half", loaded[half:])]:
        if not part:
            continue
        clocks, powers = [s[0] for s in part], [s[1] for s in part]
        print(f"loaded {name}: {len(part)} samples, SM clock median {median(clocks):.0f} MHz (min {min(clocks):.0f}), "
              f"power median {median(powers):.0f} W (max {max(powers):.0f}), temp max {max(s[2] for s in part):.0f} C")


if __name__ == "__main__":
    main()
