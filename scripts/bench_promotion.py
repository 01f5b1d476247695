#!/usr/bin/env python3
"""The promotion benchmark's candidates and figures (bench_promotion.sh); a
night's repo and config come from bench_night.py setup --promote on|off.

  bench_promotion.py candidates OUT.tsv --count N --seed S
      writes a night's candidates, shuffled by the seed, one a line:
      rung-0 effect, rung-1 effect, kind (σ = 0.0015, the gain 3σ as in the
      decision benchmark): 60 % transfers (rung 1: the gain × U(0.8, 1.2)),
      25 % scale-bound (rung 1: half 0, half −0.5 × the gain), the rest worse
      by 3σ to 6σ (9 %) or no effect (6 %), the decision benchmark's ratio,
      both the same at rung 1.
  bench_promotion.py figures RESULTS_DB LABEL [--implicit]
      prints one night's line: LABEL kept=... label_accuracy=... coverage=...
      false_transfer_rate=... promotion_share=... stack_gain_ratio=... and
      the counts behind them. The truth comes from the kept experiments'
      descriptions (`gain 7: effect +0.004500 scaled +0.004100`), the labels
      from change_labels at rung 1 (the latest per experiment, as
      Store::current_change_labels; none is untested), the final stack from
      trainer/train.cu at the tip of autoresearch/bench in the repo that holds
      RESULTS_DB. --implicit: no promotion ran, every kept change counts as
      labelled transfers (today's behaviour).
  bench_promotion.py result FIGURES
      pools the nights' lines of FIGURES (counts and seconds summed) into
      RESULT label_accuracy=... false_transfer_rate=... promotion_share=... stack_gain_ratio=...
"""
import random
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

SIGMA = 0.0015
GAIN = 3 * SIGMA
TAG = "bench"
DESC = re.compile(r"^(\w+) (\d+): effect ([-+]?[0-9.]+)(?: scaled ([-+]?[0-9.]+))?")
LINE = re.compile(r"^effect (\S+)(?: scaled (\S+))?")


def candidates(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="bench_promotion.py candidates")
    ap.add_argument("out")
    ap.add_argument("--count", type=int, required=True)
    ap.add_argument("--seed", type=int, required=True)
    o = ap.parse_args(argv)
    rng = random.Random(o.seed * 1000003 + 17)
    n = o.count
    transfers, bound, worse = round(0.60 * n), round(0.25 * n), round(0.09 * n)
    rows = []
    for i in range(n):
        if i < transfers:
            rows.append((GAIN, GAIN * rng.uniform(0.8, 1.2), "transfers"))
        elif i < transfers + bound:
            rows.append((GAIN, 0.0 if (i - transfers) % 2 == 0 else -0.5 * GAIN, "scale_bound"))
        elif i < transfers + bound + worse:
            e = -SIGMA * (3 + 3 * rng.random())
            rows.append((e, e, "worse"))
        else:
            rows.append((0.0, 0.0, "null"))
    rng.shuffle(rows)
    with open(o.out, "w") as f:
        f.write("# effect\tscaled\tkind\n")
        for e, s, kind in rows:
            f.write(f"{e:.8f}\t{s:.8f}\t{kind}\n")


def truth_transfers(r0, r1):
    """A change transfers when its rung-1 effect is a real gain: > 0 and > 0.3 × its rung-0 gain."""
    return r1 > 0 and r1 > 0.3 * max(r0, 0.0)


def final_stack_gain(repo):
    """The sum of the rung-1 effects in trainer/train.cu at the tip of autoresearch/bench; None without it."""
    try:
        text = subprocess.run(["git", "-C", str(repo), "show", f"autoresearch/{TAG}:trainer/train.cu"],
                              check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    total = 0.0
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            total += float(m.group(2) if m.group(2) is not None else m.group(1))
    return total


def figures(argv):
    db, label = argv[0], argv[1]
    implicit = "--implicit" in argv[2:]
    con = sqlite3.connect(db)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    labels = {}
    if "change_labels" in tables and not implicit:
        # Store::current_change_labels: the latest row per experiment and rung.
        labels = dict(con.execute(
            "SELECT l.experiment_id, l.label FROM change_labels l JOIN experiments e ON e.id = l.experiment_id "
            "WHERE e.tag=? AND l.rung=1 AND l.id = (SELECT max(id) FROM change_labels m "
            "WHERE m.experiment_id = l.experiment_id AND m.rung = l.rung)", (TAG,)).fetchall())
    kept = correct = labelled = bound = false_transfer = other = 0
    transfers_gain = 0.0
    kept_r1 = 0.0
    for exp, desc in con.execute("SELECT id, description FROM experiments WHERE tag=? AND is_baseline=0 "
                                 "AND state='kept' ORDER BY id", (TAG,)):
        m = DESC.match(desc)
        if not m:
            other += 1  # not a scripted candidate (a revert the engine proposed): no truth to score
            continue
        r0 = float(m.group(3))
        r1 = float(m.group(4)) if m.group(4) is not None else r0
        truth = "transfers" if truth_transfers(r0, r1) else "scale_bound"
        got = "transfers" if implicit else labels.get(exp, "untested")
        kept += 1
        kept_r1 += r1
        correct += got == truth
        labelled += got != "untested"
        if truth == "transfers":
            transfers_gain += r1
        else:
            bound += 1
            false_transfer += got == "transfers"
    cols = {r[1] for r in con.execute("PRAGMA table_info(trials)")}
    rung = "rung" if "rung" in cols else "0"
    at_rungs = total = 0.0
    rung_trials = 0
    for r, s in con.execute(f"SELECT {rung}, coalesce(training_seconds, ended_at - started_at) FROM trials "
                            "WHERE tag=? AND ended_at IS NOT NULL", (TAG,)):
        total += s or 0
        if r > 0:
            at_rungs += s or 0
            rung_trials += 1
    stack = final_stack_gain(Path(db).resolve().parent.parent)
    if stack is None:  # no branch to read: every kept change counts as in the final chain
        stack = kept_r1
    rate = lambda k, n: k / n if n else 0.0
    print(f"{label} kept={kept} label_accuracy={rate(correct, kept):.4f} coverage={rate(labelled, kept):.4f} "
          f"false_transfer_rate={rate(false_transfer, bound):.4f} promotion_share={rate(at_rungs, total):.4f} "
          f"stack_gain_ratio={rate(stack, transfers_gain):.4f} "
          f"counts correct={correct}/{kept} labelled={labelled}/{kept} false_transfer={false_transfer}/{bound} "
          f"gpu_s={at_rungs:.0f}/{total:.0f} stack={stack:.6f}/{transfers_gain:.6f} rung_trials={rung_trials}"
          + (f" other_kept={other}" if other else "") + (" (labels implicit: no promotion)" if implicit else ""))


def result(argv):
    sums = {}
    nights = 0
    implicit = False
    for line in open(argv[0]):
        if " counts correct=" not in line:
            continue
        nights += 1
        implicit |= "labels implicit" in line
        for key, a, b in re.findall(r"(\w+)=([-0-9.]+)/([-0-9.]+)", line.split(" counts ")[1]):
            t = sums.setdefault(key, [0.0, 0.0])
            t[0] += float(a)
            t[1] += float(b)
    rate = lambda key: sums[key][0] / sums[key][1] if sums.get(key, [0, 0])[1] else 0.0
    print(f"  ({nights} nights, {sums.get('correct', [0, 0])[1]:.0f} kept changes, "
          f"{sums.get('false_transfer', [0, 0])[1]:.0f} of them scale-bound; coverage={rate('labelled'):.4f}"
          + ("; labels implicit: every kept change trusted as transfers" if implicit else "") + ")")
    print(f"RESULT label_accuracy={rate('correct'):.4f} false_transfer_rate={rate('false_transfer'):.4f} "
          f"promotion_share={rate('gpu_s'):.4f} stack_gain_ratio={rate('stack'):.4f}")


if __name__ == "__main__":
    modes = {"candidates": candidates, "figures": figures, "result": result}
    if len(sys.argv) < 2 or sys.argv[1] not in modes:
        sys.exit("usage: bench_promotion.py candidates OUT --count N --seed S | figures RESULTS_DB LABEL [--implicit]"
                 " | result FIGURES")
    modes[sys.argv[1]](sys.argv[2:])
