#!/usr/bin/env python3
"""Where an experiment's time goes, from a daemon's state directory after scripts/device_e2e.sh.

    e2e_summary.py STATE_DIR [--gpu-log FILE] [--budget S] [--extrapolate S]

STATE_DIR is the daemon's `.autoresearchd/` (results.db and logs/). device_e2e.sh wraps the
build and each stage in a command that prints `ard-e2e-t <unix time> begin` first and
`ard-e2e-t <unix time> end` last, and the train stage's output is stamped the same way before
each step line (`... step`) and before the summary's `---` (`... summary`). From those stamps,
the step lines' `dt` and the summary, each experiment's wall time splits into:

  build     the build stage (the incremental build of the trainer in the worktree)
  check     the check stage (`train --check`)
  startup   the train stage's start until step 0 began (launch, CUDA, data, model set-up)
  warmup    steps 0-10, which the trainer does not count against its budget
  eval      after the last step line until the summary (the final evaluation)
  train     training_seconds, the counted budget
  other     the rest: proposing, applying and committing the edit, tamper checks, the
            train stage's exit

--gpu-log: lines `<unix time> <utilization %>` (nvidia-smi sampled by device_e2e.sh); the GPU
busy share is the share of samples over the run with a utilization above 0.
The extrapolation assumes every part but `train` stays as measured at the longer budget.
Exits 1 with a one-line error when the state directory has no database or no experiment.
"""
import argparse
import json
import os
import re
import sqlite3
import statistics
import sys

STAMP = re.compile(r"^ard-e2e-t (\d+(?:\.\d+)?) (begin|end|step|summary)$")
STEP_DT = re.compile(r"^step (\d+) .*\| dt: ([0-9.]+)ms")
UNCOUNTED_STEPS = 11  # steps 0-10 (harness TrainingClock)
PARTS = ("build", "check", "startup", "warmup", "eval", "train", "other")


class SummaryError(Exception):
    pass


def read_stage_log(path):
    """{'begin', 'end'} stamps, [(stamp, step, dt_ms)] of the stamped step lines and the summary
    stamp of one stage log; empty when the file is missing."""
    stamps, steps, pending = {}, [], None
    if not os.path.isfile(path):
        return stamps, steps
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            m = STAMP.match(line)
            if m:
                t, kind = float(m.group(1)), m.group(2)
                if kind == "step":
                    pending = t
                else:
                    stamps.setdefault(kind, t)  # the first begin, the first summary
                    if kind == "end":
                        stamps["end"] = t  # the last end
                continue
            m = STEP_DT.match(line)
            if m and pending is not None:
                steps.append((pending, int(m.group(1)), float(m.group(2))))
                pending = None
    return stamps, steps


def stage_seconds(stamps):
    if "begin" in stamps and "end" in stamps:
        return stamps["end"] - stamps["begin"]
    return None


def experiment_parts(logs_dir, row):
    """The parts (seconds, None where not reached) of one experiment row."""
    eid = row["id"]
    parts = dict.fromkeys(PARTS)
    build, _ = read_stage_log(os.path.join(logs_dir, f"{eid}-build.log"))
    check, _ = read_stage_log(os.path.join(logs_dir, f"{eid}-check.log"))
    train, steps = read_stage_log(os.path.join(logs_dir, f"{eid}-train.log"))
    parts["build"], parts["check"] = stage_seconds(build), stage_seconds(check)
    if steps and "begin" in train:
        first_stamp, _, first_dt = steps[0]
        parts["startup"] = max(0.0, first_stamp - first_dt / 1000 - train["begin"])
        parts["warmup"] = sum(dt for _, step, dt in steps if step < UNCOUNTED_STEPS) / 1000
        if "summary" in train:
            parts["eval"] = train["summary"] - steps[-1][0]
    parts["train"] = row["training_seconds"]
    wall = row["ended_at"] - row["started_at"] if row["ended_at"] is not None else None
    if wall is not None:
        known = sum(v for k, v in parts.items() if v is not None and k != "other")
        parts["other"] = max(0.0, wall - known)
    steady = [dt for _, step, dt in steps if step >= UNCOUNTED_STEPS]
    return parts, wall, steady


def tokens_per_step(row):
    try:
        s = json.loads(row["summary_json"] or "{}")
        return float(s["total_tokens_M"]) * 1e6 / float(s["num_steps"])
    except (ValueError, KeyError, ZeroDivisionError, TypeError):
        return None


def gpu_busy_share(path, t0, t1):
    samples = []
    with open(path) as f:
        for line in f:
            fields = line.split()
            if len(fields) < 2:
                continue
            try:
                t, util = float(fields[0]), float(fields[1].rstrip("%,"))
            except ValueError:
                continue
            if t0 <= t <= t1:
                samples.append(util)
    if not samples:
        return None, 0
    return sum(1 for u in samples if u > 0) / len(samples), len(samples)


def fmt(v, width=7, digits=1):
    return f"{v:{width}.{digits}f}" if v is not None else f"{'-':>{width}}"


def summarize(state_dir, gpu_log=None, budget=60.0, extrapolate=300.0):
    db = os.path.join(state_dir, "results.db")
    if not os.path.isfile(db):
        raise SummaryError(f"{db}: missing (is {state_dir} a daemon's .autoresearchd/?)")
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    con.row_factory = sqlite3.Row
    rows = con.execute("SELECT id, description, state, started_at, ended_at, training_seconds, val_bpb, "
                       "summary_json, error FROM experiments ORDER BY id").fetchall()
    con.close()
    if not rows:
        raise SummaryError(f"{db}: no experiment recorded")
    logs_dir = os.path.join(state_dir, "logs")
    out = []
    out.append(f"{'id':>3} {'status':<15}" + "".join(f"{p:>8}" for p in PARTS) + f"{'wall':>8}  description")
    reached, builds, steady_rates = [], [], []
    for row in rows:
        parts, wall, steady = experiment_parts(logs_dir, row)
        out.append(f"{row['id']:>3} {row['state']:<15}" + "".join(" " + fmt(parts[p]) for p in PARTS) +
                   " " + fmt(wall) + "  " + row["description"][:60])
        if parts["build"] is not None and row["id"] != rows[0]["id"]:
            builds.append(parts["build"])
        if row["training_seconds"] is not None and wall is not None:
            reached.append((parts, wall))
            tps = tokens_per_step(row)
            if tps and len(steady) >= 2:
                steady_rates.append(tps / (statistics.mean(steady) / 1000))
    finished = [r for r in rows if r["ended_at"] is not None and r["state"] != "interrupted"]
    t0 = min(r["started_at"] for r in rows)
    t1 = max(r["ended_at"] for r in rows if r["ended_at"] is not None) if finished else None
    out.append("")
    out.append("seconds per experiment; '-' where the experiment did not get that far. startup: the train stage's")
    out.append("start until step 0 began; warmup: steps 0-10 (not counted); eval: the last step until the summary;")
    out.append("train: training_seconds; other: proposing, committing, checks and the train stage's exit.")
    out.append("")
    if t1 is None:
        out.append("no experiment finished")
        return "\n".join(out) + "\n"
    wall_run = t1 - t0
    trained = sum(r["training_seconds"] or 0 for r in rows)
    out.append(f"run: {len(finished)} experiments finished in {wall_run:.0f} s "
               f"({3600 * len(finished) / wall_run:.1f} per hour at budget_s = {budget:g})")
    out.append(f"training share of the run's wall time: {trained / wall_run:.3f}")
    if gpu_log:
        share, n = gpu_busy_share(gpu_log, t0, t1)
        out.append(f"GPU busy share (utilization > 0, {n} samples): " + (f"{share:.3f}" if share is not None else "-"))
    if builds:
        out.append(f"incremental build: median {statistics.median(builds):.1f} s, max {max(builds):.1f} s "
                   f"(target under 20 s: {'met' if max(builds) < 20 else 'NOT met'})")
    if steady_rates:
        out.append(f"steady-state tokens/s (tokens a step / mean dt of steps 11 on): "
                   f"median {statistics.median(steady_rates) / 1e6:.3f} M")
    if not reached:
        out.append("no experiment reached the summary: no overheads to extrapolate")
        return "\n".join(out) + "\n"
    overhead = statistics.median(wall - p["train"] for p, wall in reached)
    gpu_outside = statistics.median(sum(p[k] or 0 for k in ("check", "startup", "warmup", "eval"))
                                    for p, _ in reached)
    out.append(f"experiments that reached the summary: {len(reached)}; median time outside training "
               f"{overhead:.1f} s, of it on the GPU (check, startup, warmup, eval) {gpu_outside:.1f} s "
               f"(target at most 10 s: {'met' if gpu_outside <= 10 else 'NOT met'})")
    for b in (budget, extrapolate):
        share = b / (b + overhead)
        label = "measured overheads" if b == budget else "extrapolated"
        out.append(f"at budget_s = {b:g}: {3600 / (b + overhead):.1f} experiments per hour, training share "
                   f"{share:.3f} ({label})" + ("" if b == budget else
                                               f" (target at least 0.95: {'met' if share >= 0.95 else 'NOT met'})"))
    return "\n".join(out) + "\n"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("state_dir")
    ap.add_argument("--gpu-log")
    ap.add_argument("--budget", type=float, default=60.0)
    ap.add_argument("--extrapolate", type=float, default=300.0)
    a = ap.parse_args(argv)
    try:
        sys.stdout.write(summarize(a.state_dir, a.gpu_log, a.budget, a.extrapolate))
    except (SummaryError, OSError, sqlite3.Error) as e:
        print(f"e2e_summary: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
