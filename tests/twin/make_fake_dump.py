#!/usr/bin/env python3
"""Writes a tiny dump in the trainer's --dump-init format (format 1), for testing
the twin without a GPU:
  python3 tests/twin/make_fake_dump.py DIR [--steps 8] [--seed 1]
Model: depth 3 (windows S S L, value embeddings on layers 0 and 2), dim 64,
2 query heads of 32 sharing 1 kv head, vocab 96, seq 64, short window 16,
4 rows x 2 micro-batches per step, tokens from a random Markov chain (something
to learn). Weights near the real init, except that the output projections,
gates and lm_head are small but non-zero (the real init's zeros would hide
attention and the MLP from step 0's loss) and the lambdas are not 1 and 0.1.
The "trainer losses": step 0 from numpy_forward.py (float64, independent of the
twin); steps >= 1 from the twin itself in fp64 (an exact-math run, there being
no independent backward here), so a bf16 replay measures bf16 drift against them.
The lr multipliers come from the issue's schedule, written out here.
"""

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from twin import dump as dumpfmt  # noqa: E402
from twin import numpy_forward  # noqa: E402

HYPERPARAMETERS = {
    "DEPTH": 3, "ASPECT_RATIO": 64, "HEAD_DIM": 32, "KV_HEAD_RATIO": 2, "MLP_RATIO": 4,
    "SHORT_WINDOW": 16, "VE_GATE_CHANNELS": 32, "SOFTCAP": 15, "ROPE_BASE": 10000,
    "X0_LAMBDA_INIT": 0.1, "TOTAL_BATCH_TOKENS": 512, "DEVICE_BATCH_ROWS": 4,
    "EMBEDDING_LR": 0.6, "UNEMBEDDING_LR": 0.004, "RESID_LAMBDA_LR": 0.005, "X0_LAMBDA_LR": 0.5,
    "ADAM_BETA1": 0.8, "ADAM_BETA2": 0.95, "X0_LAMBDA_BETA1": 0.96, "ADAM_EPS": 1e-10,
    "MATRIX_LR": 0.04, "MUON_MOMENTUM_START": 0.85, "MUON_MOMENTUM_END": 0.95,
    "MUON_MOMENTUM_STEPS": 300, "MUON_BETA2": 0.95, "WEIGHT_DECAY": 0.2,
    "WARMUP_RATIO": 0.0, "WARMDOWN_RATIO": 0.5, "FINAL_LR_FRAC": 0.0,
}


def tiny_config(steps):
    c = {"depth": 3, "model_dim": 64, "n_head": 2, "n_kv_head": 1, "head_dim": 32, "vocab_size": 96,
         "seq_len": 64, "batch_rows": 4, "grad_accum": 2, "steps": steps, "window_pattern": "SSSL",
         "short_window": 16, "softcap": 15, "rope_base": 10000, "norm_eps": 0.0078125}
    c.update(HYPERPARAMETERS)
    return c


def random_params(c, rng):
    """{name: float32} in the trainer's manifest order, and {name: dtype}."""
    C, V, D, L = c["model_dim"], c["vocab_size"], c["head_dim"], c["depth"]
    q, kv, F = c["n_head"] * D, c["n_kv_head"] * D, 4 * C
    u = lambda *shape, s=np.sqrt(3.0 / C): rng.uniform(-s, s, shape)  # noqa: E731
    P = {"wte": rng.normal(0, 1, (V, C)), "lm_head": rng.normal(0, 0.02, (V, C)),
         "resid_lambdas": rng.uniform(0.8, 1.2, L), "x0_lambdas": rng.uniform(0.05, 0.3, L)}
    for i in range(L):
        b = f"blocks.{i}"
        ve = i % 2 == (L - 1) % 2
        if ve:
            P[f"value_embeds.{i}"] = u(V, kv)
        P[f"{b}.attn.c_q"], P[f"{b}.attn.c_k"], P[f"{b}.attn.c_v"] = u(q, C), u(kv, C), u(kv, C)
        P[f"{b}.attn.c_proj"] = u(C, q, s=0.1 / np.sqrt(q))
        if ve:
            P[f"{b}.attn.ve_gate"] = u(c["n_kv_head"], 32, s=0.5)
        P[f"{b}.mlp.c_fc"], P[f"{b}.mlp.c_proj"] = u(F, C), u(C, F, s=0.1 / np.sqrt(F))
    dtypes = {n: "bf16" if n == "wte" or n.startswith("value_embeds.") else "f32" for n in P}
    out = {}
    for n, v in P.items():  # bf16 tables hold exactly representable values, as on the device
        v = v.astype(np.float32)
        out[n] = dumpfmt.bf16_bits_to_f32(dumpfmt.f32_to_bf16_bits(v)).reshape(v.shape) if dtypes[n] == "bf16" else v
    return out, dtypes


def markov_tokens(c, steps, rng):
    """(steps, A, B, T+1) uint16: each token is one of 4 fixed successors of the previous
    one (10 % uniform noise), so there is something to learn and the losses fall smoothly."""
    V, T = c["vocab_size"], c["seq_len"]
    n = steps * c["grad_accum"] * c["batch_rows"]
    successors = rng.integers(0, V, (V, 4))
    rows = np.zeros((n, T + 1), dtype=np.int64)
    rows[:, 0] = rng.integers(0, V, n)
    for t in range(1, T + 1):
        follow = successors[rows[:, t - 1], rng.integers(0, 4, n)]
        rows[:, t] = np.where(rng.random(n) < 0.1, rng.integers(0, V, n), follow)
    return rows.reshape(steps, c["grad_accum"], c["batch_rows"], T + 1).astype(np.uint16)


def schedule(c):
    """The issue's lr multiplier at progress step / steps (no warm-up, linear warm-down to 0
    over the last half)."""
    return [1.0 if s / c["steps"] < 0.5 else (1.0 - s / c["steps"]) / 0.5 for s in range(c["steps"])]


def make(directory, steps=8, seed=1, later_steps=True):
    """Writes the dump; returns the numpy step-0 loss."""
    rng = np.random.default_rng(seed)
    c = tiny_config(steps)
    params, dtypes = random_params(c, rng)
    batches = markov_tokens(c, steps, rng)
    W = {n: v.astype(np.float64) for n, v in params.items()}
    loss0 = numpy_forward.mean_loss(W, c, batches[0].reshape(-1, c["seq_len"] + 1))
    source = {"losses_source": "step 0: numpy float64 forward; later steps: copies of step 0"}
    dumpfmt.write(directory, c, params, dtypes, batches, [loss0] * steps, schedule(c), source)
    if later_steps and steps > 1:
        import torch
        from torch_twin import replay
        from twin.precision import Precision
        results = replay(dumpfmt.Dump(directory), steps, Precision("fp64"), torch.device("cpu"), 2,
                         out=lambda *_: None)
        source = {"losses_source": "step 0: numpy float64 forward; later steps: the twin in fp64"}
        dumpfmt.write(directory, c, params, dtypes, batches, [loss0] + [r[0] for r in results[1:]],
                      schedule(c), source)
    return loss0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir")
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)  # seed 0: see the lambda trap, torch_twin.py
    args = ap.parse_args()
    loss0 = make(args.dir, args.steps, args.seed)
    print(f"fake dump: {args.dir}, {args.steps} steps, numpy step-0 loss {loss0:.9f}")


if __name__ == "__main__":
    main()
