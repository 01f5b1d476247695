#!/usr/bin/env python3
"""The replay LLM's script for scripts/device_e2e.sh: real edits to trainer/train.cu, in the
answer format of docs/llm.md, for tests/llm/fake_llm_server.py to hand out one a request.

    e2e_replay.py TRAIN_CU > replay.json

In the order the daemon asks (the baseline asks nothing):
  1. help:    half the batch, 2^18 tokens a step: twice the optimizer steps in a 60 s budget
  2. hurt:    the Muon learning rate a tenth of its value
  3. broken:  a warm-up of 2 % of the budget, its line missing the ';' (the build fails)
  4. fixed:   the same warm-up, compiled (the daemon asks for a fix with the compiler's errors)
  5. crash:   the embedding learning rate 1e30: the loss is not finite within a few steps and
              the trainer exits with its FAIL line
Each SEARCH text is a whole hyperparameter line read from TRAIN_CU, so it matches the tree
that runs; a constant that is missing there is a one-line error, exit 1.
"""
import json
import re
import sys


class ReplayError(Exception):
    pass


def constant_line(source, name):
    """The one line `constexpr <type> NAME = <value>;  // comment` of source."""
    lines = [l for l in source.splitlines() if re.match(rf"^constexpr \w+ {name} = ", l)]
    if len(lines) != 1:
        raise ReplayError(f"{name}: {len(lines)} definitions in train.cu, expected 1")
    return lines[0]


def with_value(line, name, value, comment=None, semicolon=True):
    m = re.match(rf"^(constexpr \w+ {name} = )([^;]+);(\s*)(//.*)?$", line)
    if not m:
        raise ReplayError(f"{name}: cannot read its line: {line}")
    text = m.group(1) + value + (";" if semicolon else "")
    pad = " " * max(1, len(m.group(1)) + len(m.group(2)) + 1 + len(m.group(3)) - len(text))
    return text + pad + (comment if comment is not None else (m.group(4) or "")).rstrip()


def answer(description, search, replace):
    return (f"DESCRIPTION: {description}\n\ntrainer/train.cu\n<<<<<<< SEARCH\n{search}\n=======\n"
            f"{replace}\n>>>>>>> REPLACE\n")


def replay(source):
    """[{'answer': text}] in the order of the module docstring."""
    batch = constant_line(source, "TOTAL_BATCH_TOKENS")
    matrix = constant_line(source, "MATRIX_LR")
    warmup = constant_line(source, "WARMUP_RATIO")
    embed = constant_line(source, "EMBEDDING_LR")
    steps = [
        answer("half the batch (2^18 tokens a step): twice the optimizer steps in a short budget",
               batch, with_value(batch, "TOTAL_BATCH_TOKENS", "262144", "// tokens per optimizer step (2^18)")),
        answer("Muon lr a tenth (0.004): should train slower", matrix, with_value(matrix, "MATRIX_LR", "0.004f")),
        answer("linear lr warm-up over the first 2 % of the budget", warmup,
               with_value(warmup, "WARMUP_RATIO", "0.02", semicolon=False)),
        answer("linear lr warm-up over the first 2 % of the budget (the missing ';' added)", warmup,
               with_value(warmup, "WARMUP_RATIO", "0.02")),
        answer("embedding lr 1e30: the embeddings overflow and the loss is not finite", embed,
               with_value(embed, "EMBEDDING_LR", "1e30f")),
    ]
    return [{"answer": s} for s in steps]


def main(argv):
    if len(argv) != 1:
        print("usage: e2e_replay.py TRAIN_CU", file=sys.stderr)
        return 2
    try:
        with open(argv[0]) as f:
            steps = replay(f.read())
    except (ReplayError, OSError) as e:
        print(f"e2e_replay: {e}", file=sys.stderr)
        return 1
    json.dump(steps, sys.stdout, indent=1)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
