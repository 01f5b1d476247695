#!/usr/bin/env python3
"""The transfer rule (daemon/decide/transfer_rule.h) alone, over simulated
promotion rounds: how often its labels are right, how often a scale-bound
change is labelled transfers, and how many runs a change costs at the rung,
for other bounds, and against the rule it replaced (each change against the
commit before it alone). A model of the rule, not of the daemon (no cap, no
engine): scripts/bench_promotion.sh measures the daemon.

The kept changes of scripts/bench_promotion.py: 71 % transfer (their gain at
the rung U(0.8, 1.2) × 3σ0), 14.5 % gain nothing there, 14.5 % lose half their
gain. A night is 10 rounds of 5 changes; the first round's reference runs 4
times, a later round's is the last change of the round before, with its runs.
Every commit runs once, then the changes the rule asks for again, until none
asks (at most max_runs each); then every change is labelled. g is the rung-0
gain as measured: 3σ0 + bias + N(0, noise²) with that variance, drawn toward
the round's mean (shrink_gains; the chain rule only) and floored at σ. σ at
the rung is exact here; the daemon's, measured on few df, is taken as a t's.

  scripts/sim_transfer_rule.py [--sigma-rung 1.0] [--g-noise 1.0] [--g-bias 0.15] [--nights 200] [--seed 7]
The defaults are the promotion benchmark's nights: its fake trainer has one σ
at every rung; a kept change's rung-0 gain, from a run or two of each commit,
is off by about σ0, and high by about 0.15σ0 (the labels' evidence).
prints one line per (rule, A, B, last look, max runs):
  chain A=... B=... last=... max_runs=...: label_accuracy=... false_transfer_rate=... runs_per_change=...
the shipped rule is `chain A=1 B=-1 last=0 max_runs=2`; `pair` lines are the
rule before it, λ = (Δ·g − g²/2)/σΔ² on the change and the commit before it.
"""
import argparse
import itertools
import math
import random

WINDOW = 2  # changes on either side (transfer_rule.cc's kWindow)
SPREAD = 0.3  # either answer: g or 0, give or take var(g) + (SPREAD·g)² (transfer_rule.cc's kSpread)


def log_sum_exp(a, b):
    if a == -math.inf:
        return b
    hi = max(a, b)
    return hi + math.log(math.exp(a - hi) + math.exp(b - hi))


def shrink_gains(gs, gvars):
    """transfer_rule.cc's shrink_gains over gs[1..m], gvars[1..m] (index 0 unused), in place."""
    n = len(gs) - 1
    if n < 3:
        return
    mean = sum(gs[1:]) / n
    spread = sum((g - mean) ** 2 for g in gs[1:]) / (n - 1)
    tau2 = max(0.0, spread - sum(gvars[1:]) / n)
    for k in range(1, n + 1):
        w = tau2 / (tau2 + gvars[k]) if tau2 + gvars[k] > 0 else 1.0
        gs[k] = mean + w * (gs[k] - mean)
        gvars[k] = w * gvars[k] + (1 - w) ** 2 * spread / n


def chain_lambda(means, ns, gs, gvars, sr, lo, hi, k):
    """λ of change k over commits lo-1..hi (transfer_rule.cc's chain_lambda)."""
    t = s = -math.inf
    for answers in itertools.product((0, 1), repeat=hi - lo + 1):
        mean, var, ll = means[lo - 1], sr * sr / ns[lo - 1], 0.0
        for j in range(lo, hi + 1):
            a = answers[j - lo]
            g = gs[j]
            pred = mean + (g if a else 0.0)
            pvar = var + gvars[j] + (SPREAD * g) ** 2
            tot = pvar + sr * sr / ns[j]
            r = means[j] - pred
            ll -= 0.5 * (math.log(tot) + r * r / tot)
            gain = pvar / tot
            mean, var = pred + gain * r, (1 - gain) * pvar
        if answers[k - lo]:
            t = log_sum_exp(t, ll)
        else:
            s = log_sum_exp(s, ll)
    return t - s


def lambdas(rule, runs, gs, gvars, sr):
    """λ of every change 1..m (index 0 unused) from runs[0..m]."""
    means = [sum(r) / len(r) for r in runs]
    ns = [len(r) for r in runs]
    m = len(runs) - 1
    if rule == "pair":
        return [None] + [((means[k] - means[k - 1]) * gs[k] - gs[k] ** 2 / 2) / ((1 / ns[k - 1] + 1 / ns[k]) * sr * sr)
                         for k in range(1, m + 1)]
    return [None] + [chain_lambda(means, ns, gs, gvars, sr, max(1, k - WINDOW), min(m, k + WINDOW), k)
                     for k in range(1, m + 1)]


def night(rng, o, rule, a, b, last, max_runs):
    right = false_transfers = bound = runs_used = total = 0
    ref_runs, ref_mean = None, 0.0
    for _ in range(10):
        steps, gs, gvars = [None], [None], [None]
        for _ in range(5):
            u = rng.random()
            steps.append(rng.uniform(2.4, 3.6) if u < 0.71 else 0.0 if u < 0.855 else -1.5)
            gs.append(3.0 + o.g_bias + rng.gauss(0, o.g_noise))
            gvars.append(o.g_noise ** 2)
        if rule == "chain":
            shrink_gains(gs, gvars)
        gs = [None] + [max(o.sigma_rung, g) for g in gs[1:]]
        mu = [ref_mean]
        for s in steps[1:]:
            mu.append(mu[-1] + s)
        if ref_runs is None:
            ref_runs = [rng.gauss(ref_mean, o.sigma_rung) for _ in range(4)]
        runs = [list(ref_runs)] + [[rng.gauss(m, o.sigma_rung)] for m in mu[1:]]
        while True:
            lam = lambdas(rule, runs, gs, gvars, o.sigma_rung)
            again = [k for k in range(1, 6) if b < lam[k] < a and len(runs[k]) < max_runs]
            if not again:
                break
            for k in again:
                runs[k].append(rng.gauss(mu[k], o.sigma_rung))
        for k in range(1, 6):
            transfers = lam[k] >= last if b < lam[k] < a else lam[k] >= a
            truth = steps[k] > 0.9
            right += transfers == truth
            bound += not truth
            false_transfers += transfers and not truth
            runs_used += len(runs[k])
            total += 1
        ref_runs, ref_mean = runs[-1], mu[-1]
    return right, false_transfers, bound, runs_used, total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sigma-rung", type=float, default=1.0, help="σ at the rung in units of σ at rung 0")
    ap.add_argument("--g-noise", type=float, default=1.0, help="the rung-0 gain's measurement noise, in σ0")
    ap.add_argument("--g-bias", type=float, default=0.15, help="its bias (kept changes were selected), in σ0")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--nights", type=int, default=200)
    o = ap.parse_args()
    for rule, a, b, last, max_runs in [("chain", 1, -1, 0, 2), ("chain", 1, -1, 0.5, 2), ("chain", 1.5, -1.5, 0, 2),
                                       ("chain", 1, -1, 0, 3), ("pair", 1, -1, 0.5, 2), ("pair", 1, -1, 0, 2)]:
        rng = random.Random(o.seed)
        tot = [0] * 5
        for _ in range(o.nights):
            for i, v in enumerate(night(rng, o, rule, a, b, last, max_runs)):
                tot[i] += v
        print(f"{rule} A={a} B={b} last={last} max_runs={max_runs}: label_accuracy={tot[0] / tot[4]:.3f} "
              f"false_transfer_rate={tot[1] / tot[2]:.3f} runs_per_change={tot[3] / tot[4]:.2f}", flush=True)


if __name__ == "__main__":
    main()
