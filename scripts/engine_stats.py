#!/usr/bin/env python3
"""Throughput figures of a daemon run, read from its results.db.

    scripts/engine_stats.py RESULTS_DB [--gpus N] [--tag TAG]

Prints one line:
    experiments=E wall_s=W exp_per_hour=X busy_share=B train_share=S median_gap_s=G

- wall time: the sum of the tag's sessions (start to end);
- experiments: those that trained and reached a kept or discarded decision;
- busy share: time in stages (the trials table; before it existed, the last
  stage of each experiment) over wall time x GPUs;
- training share: the trainers' training_seconds over wall time x GPUs;
- median gap: between one training's end and the next training's start on
  the same GPU.
Works on databases of every schema version since 1 (read only).
"""
import argparse
import sqlite3
import statistics
import sys


def trainings(db, tag):
    """(gpu, started_at, ended_at, training_seconds) of every finished training."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "trials" in tables:
        rows = db.execute("SELECT gpu, started_at, ended_at, COALESCE(training_seconds, 0) FROM trials "
                          "WHERE tag = ? AND ended_at IS NOT NULL", (tag,)).fetchall()
        if rows:
            return rows
    return db.execute("SELECT '0', stage_started_at, ended_at, COALESCE(training_seconds, 0) FROM experiments "
                      "WHERE tag = ? AND val_bpb IS NOT NULL AND stage_started_at IS NOT NULL "
                      "AND ended_at IS NOT NULL", (tag,)).fetchall()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("db")
    p.add_argument("--gpus", type=int, default=1)
    p.add_argument("--tag", default="bench")
    a = p.parse_args()
    db = sqlite3.connect("file:%s?mode=ro" % a.db, uri=True)
    wall = db.execute("SELECT COALESCE(SUM(COALESCE(ended_at, started_at) - started_at), 0) FROM sessions "
                      "WHERE tag = ?", (a.tag,)).fetchone()[0]
    done = db.execute("SELECT COUNT(*) FROM experiments WHERE tag = ? AND state IN ('kept', 'discarded')",
                      (a.tag,)).fetchone()[0]
    runs = trainings(db, a.tag)
    if wall <= 0:
        print("engine_stats: no finished session of tag %s in %s" % (a.tag, a.db), file=sys.stderr)
        return 1
    busy = sum(end - start for _, start, end, _ in runs)
    train = sum(t for _, _, _, t in runs)
    gaps = []
    for gpu in {r[0] for r in runs}:
        mine = sorted((start, end) for g, start, end, _ in runs if g == gpu)
        gaps += [b[0] - a_[1] for a_, b in zip(mine, mine[1:])]
    gap = statistics.median(gaps) if gaps else float("nan")
    print("experiments=%d wall_s=%.1f exp_per_hour=%.1f busy_share=%.3f train_share=%.3f median_gap_s=%.2f" %
          (done, wall, done * 3600 / wall, busy / (wall * a.gpus), train / (wall * a.gpus), gap))
    return 0


if __name__ == "__main__":
    sys.exit(main())
