#!/usr/bin/env python3
"""One night of the duplicate benchmark (bench_memory.sh): a replayed LLM that repeats itself.

  bench_memory.py setup REPO --fake FAKE_TRAINER --port PORT --count N --seed S [--gpus G] [--seconds S]
      writes a research repo: trainer/train.cu in the simulated trainer's mode with one
      `effect 0 slotK` line per idea; replay.json for tests/llm/fake_llm_server.py (one
      answer a request, SEARCH/REPLACE on the idea's slot line); autoresearch.toml (the LLM
      proposer at 127.0.0.1:PORT, G fake GPUs, confirmations, noise rounds and the sandbox as
      a user gets them). The N answers, drawn from the seed:
        - 30 %: an earlier idea again (one that cannot have been kept: no effect, or worse),
          half verbatim, half re-spaced or re-commented;
        - otherwise a new idea (50 % worse by 3-6 sigma, 35 % no effect, 15 % a 3 sigma gain),
          one in ten of them proposed twice in a row (the second while the first is in
          flight: two workers on one idea).
      Every description ends with its idea, "[idea K]": the truth the figures read.
  bench_memory.py figures RESULTS_DB
      prints the counts and one line:
      RESULT duplicate_catch_rate=... false_duplicate_rate=... duplicate_gpu_share=... concurrent_same_idea=...
      A row repeats its idea when an earlier row of that idea got a commit and was compared
      (not a conflict, a rejected edit or a proposer error).
"""
import json
import random
import re
import sqlite3
import sys
from pathlib import Path

SIGMA = 0.0015


def setup(argv):
    import argparse

    ap = argparse.ArgumentParser(prog="bench_memory.py setup")
    ap.add_argument("repo")
    ap.add_argument("--fake", required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--count", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=0.5)
    o = ap.parse_args(argv)
    rng = random.Random(o.seed)
    answers, effects, repeatable = [], {}, []

    def answer(idea, variant, again):
        e = effects[idea]
        line = f"effect {e:.8f} slot{idea}"
        if variant == "spaced":
            line = f"effect   {e:.8f}    slot{idea}"
        elif variant == "commented":
            line = f"effect {e:.8f} slot{idea}  // {'retried' if again else 'first try'}: see the notes"
        what = "again: " if again else ""
        return {"answer": f"DESCRIPTION: {what}idea {idea}, effect {e:+.6f} [idea {idea}]\n\n"
                          f"trainer/train.cu\n<<<<<<< SEARCH\neffect 0 slot{idea}\n=======\n{line}\n>>>>>>> REPLACE\n"}

    while len(answers) < o.count:
        if repeatable and rng.random() < 0.3:
            idea = rng.choice(repeatable)
            answers.append(answer(idea, "verbatim" if rng.random() < 0.5 else rng.choice(["spaced", "commented"]), True))
            continue
        idea = len(effects) + 1
        r = rng.random()
        effects[idea] = -rng.uniform(3, 6) * SIGMA if r < 0.5 else 0.0 if r < 0.85 else 3 * SIGMA
        answers.append(answer(idea, "verbatim", False))
        if effects[idea] <= 0:
            repeatable.append(idea)
        if rng.random() < 0.1 and len(answers) < o.count:
            answers.append(answer(idea, rng.choice(["verbatim", "spaced", "commented"]), True))

    repo = Path(o.repo)
    (repo / "trainer/harness").mkdir(parents=True)
    lines = [f"seconds {o.seconds}", "bpb_a 0.642", "bpb_b 1.15e-4", f"noise_sigma {SIGMA}", "step_cost 0.1",
             f"night seed {o.seed}"]
    for i in range(1, len(effects) + 1):
        lines += [f"effect 0 slot{i}", "#", "#"]
    (repo / "trainer/train.cu").write_text("\n".join(lines) + "\n")
    (repo / "trainer/harness/eval.h").write_text("// fixed\n")
    (repo / "program.md").write_text("# program\nLower val_bpb.\n")
    (repo / ".gitignore").write_text("build/\nreplay.json\nautoresearch.toml\n")
    (repo / "replay.json").write_text(json.dumps(answers))
    gpus = ", ".join(f'"{g}"' for g in range(o.gpus))
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
command = "{o.fake} run trainer/train.cu --budget 300 --budget-scale {{budget_scale}}"
timeout_s = 120
[data]
enabled = false
[preflight]
gpu = "off"
[logs]
keep_days = 0
[proposer]
kind = "llm"
[llm]
provider = "openai"
model = "replay"
base_url = "http://127.0.0.1:{o.port}/v1"
api_key_env = ""
retries = 0
max_edit_attempts = 1
max_calls_per_hour = 100000
''')


def figures(argv):
    con = sqlite3.connect(argv[0])
    rows = con.execute("SELECT id, description, state, commit_hash, started_at, ended_at FROM experiments "
                       "WHERE tag='bench' AND is_baseline=0 ORDER BY id").fetchall()
    seconds = {}
    total = 0.0
    for exp, s in con.execute("SELECT experiment_id, coalesce(training_seconds, ended_at - started_at) FROM trials "
                              "WHERE tag='bench' AND ended_at IS NOT NULL"):
        seconds[exp] = seconds.get(exp, 0) + (s or 0)
        total += s or 0
    compared = {}  # idea -> first row of it that got a commit and was compared
    dup = caught = distinct = false = 0
    dup_seconds = 0.0
    trained = {}  # idea -> [(start, end)] of its rows that trained
    for exp, desc, state, commit, start, end in rows:
        m = re.search(r"\[idea (\d+)\]", desc or "")
        if not m:
            continue
        idea = int(m.group(1))
        if exp in seconds:
            trained.setdefault(idea, []).append((start, end or float("inf")))
        if not commit or state in ("conflict", "patch_rejected", "proposer_error"):
            continue
        if idea in compared:
            dup += 1
            caught += state == "duplicate"
            dup_seconds += seconds.get(exp, 0)
        else:
            compared[idea] = exp
            distinct += 1
            false += state == "duplicate"
    concurrent = 0
    for spans in trained.values():
        for i in range(len(spans)):
            for j in range(i + 1, len(spans)):
                concurrent += spans[i][0] < spans[j][1] and spans[j][0] < spans[i][1]
    states = {}
    for r in rows:
        states[r[2]] = states.get(r[2], 0) + 1
    rate = lambda k, n: k / n if n else 0.0
    print(f"  {len(rows)} proposals: {dup} repeat an idea ({caught} caught), {distinct} distinct ({false} refused); "
          f"GPU {total:.0f} s, {dup_seconds:.0f} s of it on repeats; states " +
          " ".join(f"{k}={v}" for k, v in sorted(states.items())))
    print(f"RESULT duplicate_catch_rate={rate(caught, dup):.4f} false_duplicate_rate={rate(false, distinct):.4f} "
          f"duplicate_gpu_share={rate(dup_seconds, total):.4f} concurrent_same_idea={concurrent}")


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in ("setup", "figures"):
        sys.exit("usage: bench_memory.py setup ... | figures RESULTS_DB")
    (setup if sys.argv[1] == "setup" else figures)(sys.argv[2:])
