#!/usr/bin/env python3
"""The transfer rule (daemon/decide/transfer_rule.h) alone, over simulated
promotion rounds: how often its labels are right, how often a scale-bound
change is labelled transfers, and how many runs a change costs at the rung,
for bounds other than the shipped ones. A model of the rule, not of the
daemon (no cap, no engine): scripts/bench_promotion.sh measures the daemon.

The kept changes of scripts/bench_promotion.py: 71 % transfer (Δ at the rung
= U(0.8, 1.2) × 3σ0), 14.5 % no gain there, 14.5 % lose half their gain. A
round runs the reference 4 times and each change once, then more as the rule
asks; g is the rung-0 gain as measured (3σ0 + bias + noise, floored at σ).

  scripts/sim_transfer_rule.py [--sigma-rung 1.13] [--g-noise 0.8] [--g-bias 0.3] [--seed 11]
prints one line per (A, B, last look, max runs):
  A=... B=... last=... max_runs=...: label_accuracy=... false_transfer_rate=... runs_per_change=...
the shipped rule is A=1 B=-1 last=0.5 max_runs=2.
"""
import argparse
import random


def round_of(rng, n, a, b, last, max_runs, sr, g_noise, g_bias):
    steps, gains = [], []
    for _ in range(n):
        u = rng.random()
        steps.append(rng.uniform(2.4, 3.6) if u < 0.71 else 0.0 if u < 0.855 else -1.5)
        gains.append(max(sr, 3.0 + g_bias + rng.gauss(0, g_noise)))
    mu = [0.0]
    for s in steps:
        mu.append(mu[-1] + s)
    runs = [[rng.gauss(mu[0], sr) for _ in range(4)]] + [[rng.gauss(m, sr)] for m in mu[1:]]
    right = false_transfers = bound = 0
    for k in range(1, n + 1):
        g = gains[k - 1]
        while True:
            before, change = runs[k - 1], runs[k]
            delta = sum(change) / len(change) - sum(before) / len(before)  # higher is better here
            lam = (delta * g - g * g / 2) / ((1 / len(before) + 1 / len(change)) * sr * sr)
            if lam >= a or lam <= b or len(change) >= max_runs:
                transfers = lam >= a if (lam >= a or lam <= b) else lam >= last
                break
            change.append(rng.gauss(mu[k], sr))
        truth = steps[k - 1] > 0.9
        right += transfers == truth
        bound += not truth
        false_transfers += transfers and not truth
    return right, false_transfers, bound, sum(len(r) for r in runs) - 4


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sigma-rung", type=float, default=1.13, help="σ at the rung in units of σ at rung 0")
    ap.add_argument("--g-noise", type=float, default=0.8, help="the rung-0 gain's measurement noise, in σ0")
    ap.add_argument("--g-bias", type=float, default=0.3, help="its bias (kept changes were selected), in σ0")
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--rounds", type=int, default=300)
    o = ap.parse_args()
    for a, b, last, max_runs in [(1, -1, 0.5, 2), (1, -1, 0, 2), (1, -2, 0.5, 2), (2, -1, 0.5, 2), (2, -1, 0, 3),
                                 (2, -2, 0.5, 3), (3, -2.25, 0, 3), (3, -3, 0.5, 4)]:
        rng = random.Random(o.seed)
        tot = [0, 0, 0, 0]
        for _ in range(o.rounds):
            for i, v in enumerate(round_of(rng, 50, a, b, last, max_runs, o.sigma_rung, o.g_noise, o.g_bias)):
                tot[i] += v
        n = 50 * o.rounds
        print(f"A={a} B={b} last={last} max_runs={max_runs}: label_accuracy={tot[0] / n:.3f} "
              f"false_transfer_rate={tot[1] / tot[2]:.3f} runs_per_change={tot[3] / n:.2f}")


if __name__ == "__main__":
    main()
