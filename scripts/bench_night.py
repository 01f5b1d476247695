#!/usr/bin/env python3
"""One night of the decision benchmark through the real daemon (bench_decisions.sh).

  bench_night.py setup REPO CANDIDATES.tsv --a A --b B --fake FAKE_TRAINER --rule new|old [--seconds S] [--gpus 1|4]
      writes a research repo: trainer/train.cu in the fake trainer's simulation
      mode with one `effect 0 slotN` line per candidate (three lines apart, so
      edits to different slots re-apply onto each other), script.json (the
      scripted proposer: candidate N replaces its slot's line with its true
      effect over the best of the moment) and autoresearch.toml: 4 fake GPUs
      at 0.95, 0.98, 1.00 and 1.03 x speed, the budget scale passed on
      (--gpus 1: one fake GPU at 1.00 x speed, the common case). Each run's
      noise is drawn from its content and a count of the night's runs (a
      counter file beside REPO), so a night on one GPU, where the runs come in
      the same order, is the same night each time it runs with its seed.
      --rule old: no noise rounds, no confirmations, no calibration: strictly
      lower than the best decides (the rule before the keep rule).
      --promote on|off (bench_promotion.sh): CANDIDATES.tsv's second column is
      each candidate's effect at rung 1 (`effect X scaled Y`, in its description
      too), the stage passes --budget {budget} and --depth-scale {depth_scale}
      (the default ladder's rung 1: depth 2, twice the budget); off adds
      [promote] max_share = 0 (no round is ever due), or with
      --no-round-by-every (a tree that refuses max_share = 0) every = 1000000;
      --on-fail label|revert (with on) sets promote.on_fail, --max-share X
      (with on) promote.max_share.
  bench_night.py figures RESULTS_DB LABEL
      prints one line: LABEL b=... null_keep_rate=... true_keep_rate=...
      board_bias=... repeat_share=... worse_kept=... and the counts behind them.
"""
import json
import sqlite3
import sys
from pathlib import Path

SPEEDS = "0.95,0.98,1.00,1.03"


def setup(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="bench_night.py setup")
    ap.add_argument("repo")
    ap.add_argument("candidates")
    ap.add_argument("--a", type=float, required=True)
    ap.add_argument("--b", type=float, required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("--rule", choices=["new", "old"], required=True)
    ap.add_argument("--seconds", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpus", type=int, choices=[1, 4], default=4)
    ap.add_argument("--promote", choices=["on", "off"])
    ap.add_argument("--no-round-by-every", action="store_true")
    ap.add_argument("--on-fail", choices=["label", "revert"])
    ap.add_argument("--max-share", type=float)
    o = ap.parse_args(argv)
    speeds = SPEEDS if o.gpus == 4 else "1.00"
    gpus = ", ".join(f'"{g}"' for g in range(o.gpus))
    effects, scaled = [], []
    for line in Path(o.candidates).read_text().splitlines():
        if line.startswith("#") or not line.strip():
            continue
        effects.append(float(line.split("\t")[0]))
        scaled.append(float(line.split("\t")[1]) if o.promote else None)
    repo = Path(o.repo)
    (repo / "trainer/harness").mkdir(parents=True)
    # The night's n-th run draws its noise from seed and n (sim_trainer's --nonce), not the clock.
    counter = repo.parent / "runs"
    nonce = (f"$(flock {counter}.lock sh -c 'n=$(cat {counter} 2>/dev/null || echo 0); "
             f"echo $((n+1)) > {counter}; echo $(({o.seed}*1000003+n))')")
    lines = [f"seconds {o.seconds}", f"bpb_a {o.a}", f"bpb_b {o.b}", "noise_sigma 0.0015", "step_cost 0.1",
             f"night seed {o.seed}"]
    for i in range(1, len(effects) + 1):
        lines += [f"effect 0 slot{i}", "#", "#"]
    (repo / "trainer/train.cu").write_text("\n".join(lines) + "\n")
    (repo / "trainer/harness/eval.h").write_text("// fixed\n")
    (repo / "program.md").write_text("# program\nLower val_bpb.\n")
    (repo / ".gitignore").write_text("build/\nscript.json\nautoresearch.toml\n")
    script = []
    for i, (e, r1) in enumerate(zip(effects, scaled), 1):
        kind = "null" if e == 0 else ("gain" if e > 0 else "worse")
        at_rung1 = "" if r1 is None else f" scaled {r1:+.6f}"
        script.append({"description": f"{kind} {i}: effect {e:+.6f}{at_rung1}",
                       "edits": [{"path": "trainer/train.cu", "find": f"effect 0 slot{i}\n",
                                  "replace": f"effect {e:.8f}{at_rung1} slot{i}\n"}]})
    (repo / "script.json").write_text(json.dumps(script))
    decisions = ("[keep]\nconfirmations = 0\n[noise]\nrounds = false\ncalibrate = false\n" if o.rule == "old" else "")
    budget_flags = "300"
    if o.promote:  # rung 1 of the default ladder: its budget and depth scale reach the fake trainer
        budget_flags = "{budget} --depth-scale {depth_scale}"
    if o.promote == "off":
        decisions += "[promote]\n" + ("every = 1000000\n" if o.no_round_by_every else "max_share = 0\n")
    elif o.promote == "on" and (o.on_fail or o.max_share is not None):
        decisions += "[promote]\n" + (f'on_fail = "{o.on_fail}"\n' if o.on_fail else "")
        decisions += f"max_share = {o.max_share}\n" if o.max_share is not None else ""
    (repo / "autoresearch.toml").write_text(f'''tag = "bench"
budget_s = 300
startup_s = 5
retry_wait_s = 0.5
gpus = [{gpus}]
lookahead = 1
[build]
command = "{o.fake} build trainer/train.cu"
timeout_s = 60
[[stage]]
name = "train"
command = "FAKE_GPU_SPEEDS={speeds} {o.fake} run trainer/train.cu --budget {budget_flags} --budget-scale {{budget_scale}} --nonce {nonce}"
timeout_s = 120
[data]
enabled = false
[preflight]
gpu = "off"
[sandbox]                # off: the night measures decisions, and its runs share the counter beside the repo
mode = "off"
[logs]
keep_days = 0
[proposer]
kind = "scripted"
script = "script.json"
''' + decisions)


def figures(argv):
    db, label = argv[0], argv[1]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT id, description, state FROM experiments WHERE tag='bench' AND is_baseline=0 "
                       "ORDER BY id").fetchall()
    first_gpu = {}
    for exp, gpu in con.execute("SELECT experiment_id, gpu FROM trials WHERE tag='bench' AND purpose='candidate' "
                                "ORDER BY id"):
        first_gpu.setdefault(exp, gpu)
    n = {"null": 0, "gain": 0, "worse": 0}
    kept = {"null": 0, "gain": 0, "worse": 0}
    by_board = {}
    for exp, desc, state in rows:
        kind = desc.split(" ")[0]
        if kind not in n or state not in ("kept", "discarded"):
            continue
        n[kind] += 1
        k = state == "kept"
        kept[kind] += k
        if kind == "null" and exp in first_gpu:
            t = by_board.setdefault(first_gpu[exp], [0, 0])
            t[0] += 1
            t[1] += k
    total = repeat = 0.0
    for purpose, s in con.execute("SELECT purpose, coalesce(training_seconds, ended_at - started_at) FROM trials "
                                  "WHERE tag='bench' AND ended_at IS NOT NULL"):
        total += s or 0
        if purpose in ("confirm", "incumbent", "noise"):
            repeat += s or 0
    rate = lambda k, m: k / m if m else 0.0
    board = {g: rate(t[1], t[0]) for g, t in by_board.items()}
    # GPU 0 is the slowest board (0.95), GPU 3 the fastest (1.03).
    bias = abs(board.get("3", 0) - board.get("0", 0))
    print(f"{label} null_keep_rate={rate(kept['null'], n['null']):.4f} "
          f"true_keep_rate={rate(kept['gain'], n['gain']):.4f} board_bias={bias:.4f} "
          f"repeat_share={rate(repeat, total):.4f} worse_kept={kept['worse']} "
          f"counts null={kept['null']}/{n['null']} gain={kept['gain']}/{n['gain']} "
          f"null_by_board=" + ",".join(f"{g}:{by_board[g][1]}/{by_board[g][0]}" for g in sorted(by_board)))


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("setup", "figures"):
        sys.exit("usage: bench_night.py setup ... | figures RESULTS_DB LABEL")
    (setup if sys.argv[1] == "setup" else figures)(sys.argv[2:])
