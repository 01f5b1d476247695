"""`torch_twin.py --self-test`: checks of the twin's own pieces on CPU, each with
its tolerance and a reason, then a replay of a fake dump:
  polar_express  near-orthogonal output, same singular vectors as the input,
                 tall and wide branches transposes of each other, bf16 close to fp64
  normuon        Frobenius norm kept, per-row / per-column equalisation, EMA state
  cautious       decay exactly where update * param >= 0
  AdamW          equals torch.optim.AdamW (fp64), group lrs and betas
  Muon step      equals a plain numpy fp64 step written here from the issue text
  attention      the window mask's extent; SDPA (torch >= 2) against the explicit product
  schedules      lr multiplier, momentum ramp, weight decay at chosen points
  fake dump      fp64 twin step 0 == numpy forward (1e-9); the check notices a wrong
                 window, soft cap or eps; bf16 replay within the default tolerance
Prints one line per check; returns 0 when all pass, 1 otherwise.
"""

import math
import os
import tempfile

import numpy as np
import torch

from .config import HYPERPARAMETER_DEFAULTS, TwinConfig
from .dump import Dump, DumpError
from .optim import (POLAR_EXPRESS_COEFFS, MuonAdamW, cautious_update, lr_multiplier, muon_momentum,
                    muon_weight_decay, normuon, polar_express)
from .model import HAS_SDPA, attention, window_mask
from .precision import Precision

P64, P16 = Precision("fp64"), Precision("bf16")


class Checks:
    def __init__(self):
        self.failed = 0

    def expect(self, ok, what):
        print(f"  {'ok  ' if ok else 'FAIL'} {what}")
        self.failed += 0 if ok else 1


def check_polar_express(c, gen):
    for shape in [(96, 32), (32, 96), (4, 32)]:  # aspect >= 3: singular values of G within 4x
        G = torch.randn(4, *shape, dtype=torch.float64, generator=gen)
        X = polar_express(G, P64)
        s = torch.linalg.svdvals(X)
        # 5 Polar Express iterations map well-conditioned spectra into ~[0.86, 1.14]
        c.expect(bool(s.min() > 0.8 and s.max() < 1.2),
                 f"polar_express {shape}: singular values in [0.8, 1.2] ({s.min():.3f}..{s.max():.3f})")
        U, _, Vh = torch.linalg.svd(G, full_matrices=False)
        M = U.transpose(-2, -1) @ X @ Vh.transpose(-2, -1)
        off = (M - torch.diag_embed(torch.diagonal(M, dim1=-2, dim2=-1))).norm() / M.norm()
        # an odd matrix polynomial of G keeps G's singular vectors (exactly, up to fp64 rounding)
        c.expect(bool(off < 1e-10), f"polar_express {shape}: X = U f(S) Vᵀ (off-diagonal {off:.1e})")
        XT = polar_express(G.transpose(-2, -1), P64).transpose(-2, -1)
        c.expect(bool((XT - X).abs().max() < 1e-12), f"polar_express {shape}: tall/wide branches agree")
        Xb = polar_express(G.float(), P16).double()
        rel = float(((Xb - X).norm(dim=(-2, -1)) / X.norm(dim=(-2, -1))).max())
        # bf16 rounds by 2^-9 relative, but the first iteration's coefficients (8.2, -22.5, 15.9)
        # cancel and magnify that ~20x: measured 2 % on 96 x 32, 7 % on the 4 x 32 gate shape
        c.expect(rel < 0.10, f"polar_express {shape}: bf16 within 10 % of fp64 ({100 * rel:.2f} %)")
    G = torch.randn(64, 48, dtype=torch.float64, generator=gen) * 1e3
    X = polar_express(G[None], P64)[0]
    c.expect(bool(X.norm() < math.sqrt(48) * 1.2), "polar_express: output scale independent of input scale")


def check_normuon(c, gen):
    for shape in [(96, 32), (32, 96), (48, 48)]:
        X = torch.randn(3, *shape, dtype=torch.float64, generator=gen)
        X = X * torch.rand(3, shape[0], 1, dtype=torch.float64, generator=gen)  # uneven rows
        per_row = shape[0] >= shape[1]
        V = torch.zeros((3, shape[0], 1) if per_row else (3, 1, shape[1]), dtype=torch.float64)
        U = normuon(X, V, 0.95)
        keep = float(((U.norm(dim=(-2, -1)) - X.norm(dim=(-2, -1))).abs() / X.norm(dim=(-2, -1))).max())
        c.expect(keep < 1e-12, f"normuon {shape}: Frobenius norm kept (rel {keep:.1e})")
        red = -1 if per_row else -2
        ms = X.square().mean(dim=red, keepdim=True)
        c.expect(bool(torch.allclose(V, 0.05 * ms, rtol=1e-12, atol=0)), f"normuon {shape}: V = lerp(0, ms, 0.05)")
        # first step from V = 0: every row (column) ends with the same mean square
        ums = U.square().mean(dim=red)
        spread = float((ums.max(-1).values / ums.min(-1).values - 1).max())
        c.expect(spread < 1e-9, f"normuon {shape}: {'rows' if per_row else 'columns'} equalised")
        U2 = normuon(X, V, 0.95)
        c.expect(bool(torch.allclose(V, (0.05 * 0.95 + 0.05) * ms, rtol=1e-12, atol=0)) and
                 bool(torch.allclose(U2, U, rtol=1e-10, atol=0)),
                 f"normuon {shape}: EMA without bias correction")


def check_cautious(c):
    P = torch.tensor([[1.0, -2.0, 3.0, 0.0], [-1.0, 2.0, 0.5, -0.5]], dtype=torch.float64)
    U = torch.tensor([[0.5, 0.5, -0.5, 1.0], [-0.5, -0.5, 0.0, 0.25]], dtype=torch.float64)
    mask = torch.tensor([[1, 0, 0, 1], [1, 0, 1, 0]], dtype=torch.float64)  # U*P >= 0
    lr, wd = 0.1, 0.2
    want = P - lr * U - lr * wd * P * mask
    Q = P.clone()
    cautious_update(Q, U, lr, wd)
    c.expect(bool(torch.equal(Q, want)), "cautious weight decay only where update * param >= 0")


class _StubConfig:
    def __init__(self, model_dim):
        self.model_dim, self.hp = model_dim, dict(HYPERPARAMETER_DEFAULTS)


def check_adamw(c, gen):
    dim = 512
    scale = (dim / 768) ** -0.5
    shapes = {"lm_head": (16, 8), "wte": (16, 8), "resid_lambdas": (3,), "x0_lambdas": (3,)}
    want_lr = {"lm_head": 0.004 * scale, "wte": 0.6 * scale, "resid_lambdas": 0.005, "x0_lambdas": 0.5}
    want_b1 = {"lm_head": 0.8, "wte": 0.8, "resid_lambdas": 0.8, "x0_lambdas": 0.96}
    ours = {n: torch.randn(s, dtype=torch.float64, generator=gen) for n, s in shapes.items()}
    theirs = {n: t.clone().requires_grad_(True) for n, t in ours.items()}
    opt = MuonAdamW(ours, _StubConfig(dim), P64)
    ref = [torch.optim.AdamW([theirs[n]], lr=want_lr[n], betas=(want_b1[n], 0.95), eps=1e-10, weight_decay=0.0)
           for n in shapes]
    for step in range(5):
        lrm = 1.0 if step < 3 else 0.5
        for n in shapes:
            g = torch.randn(shapes[n], dtype=torch.float64, generator=gen)
            ours[n].grad, theirs[n].grad = g, g.clone()
        opt.step(lrm, 0.0, 0.0)
        for o in ref:
            o.param_groups[0]["lr"] = o.defaults["lr"] * lrm
            o.step()
    err = max(float((ours[n] - theirs[n].detach()).abs().max()) for n in shapes)
    c.expect(err < 1e-12, f"AdamW groups equal torch.optim.AdamW over 5 steps (max err {err:.1e})")
    ours = {"wte": torch.zeros(4, 4, dtype=torch.float32)}
    opt = MuonAdamW(ours, _StubConfig(768), P16)
    ours["wte"].grad = torch.full((4, 4), 1e-3)
    opt.step(1.0 / 0.6 * 0.3, 0.0, 0.0)  # lr 0.3 * sign: not a bf16 value before rounding
    v = ours["wte"]
    c.expect(bool(torch.equal(v, v.bfloat16().float())), "AdamW: embedding tables re-rounded to bf16")


def numpy_muon_step(p, g, buf, V, mu, lr, wd, beta2):
    """One Muon step of one matrix, float64, from the issue text (independent of optim.py)."""
    rows, cols = p.shape
    buf[:] = buf + (g - buf) * (1 - mu)
    x = g + (buf - g) * mu
    x = x / (np.linalg.norm(x) * 1.02 + 1e-6)
    for a, b, cc in POLAR_EXPRESS_COEFFS:
        if rows > cols:
            A = x.T @ x
            x = a * x + x @ (b * A + cc * A @ A)
        else:
            A = x @ x.T
            x = a * x + (b * A + cc * A @ A) @ x
    axis = 1 if rows >= cols else 0
    ms = (x ** 2).mean(axis=axis, keepdims=True)
    V[:] = V + (ms - V) * (1 - beta2)
    u = x / np.sqrt(np.maximum(V, 1e-10))
    u = u * np.linalg.norm(x) / max(np.linalg.norm(u), 1e-10)
    lr = lr * math.sqrt(max(1.0, rows / cols))
    return p - lr * u - lr * wd * p * ((u * p) >= 0)


def check_muon(c, gen):
    names = {"blocks.0.mlp.c_fc": (48, 16), "blocks.1.mlp.c_fc": (48, 16), "blocks.0.mlp.c_proj": (16, 48)}
    ours = {n: torch.randn(s, dtype=torch.float64, generator=gen) for n, s in names.items()}
    ref = {n: t.numpy().copy() for n, t in ours.items()}
    state = {n: (np.zeros(s), np.zeros((s[0], 1)) if s[0] >= s[1] else np.zeros((1, s[1])))
             for n, s in names.items()}
    opt = MuonAdamW(ours, _StubConfig(64), P64)
    c.expect(sorted(len(g["names"]) for g in opt.muon.values()) == [1, 2], "Muon groups matrices by shape")
    hp = HYPERPARAMETER_DEFAULTS
    for step in range(3):
        mu, lrm, wd = muon_momentum(step, hp), [1.0, 1.0, 0.5][step], muon_weight_decay(step / 3, hp)
        for n, s in names.items():
            g = torch.randn(s, dtype=torch.float64, generator=gen)
            ours[n].grad = g
            ref[n] = numpy_muon_step(ref[n], g.numpy(), *state[n], mu, 0.04 * lrm, wd, 0.95)
        opt.step(lrm, mu, wd)
    err = max(float(np.abs(ours[n].numpy() - ref[n]).max()) for n in names)
    c.expect(err < 1e-10, f"Muon equals the numpy step over 3 steps, tall and wide (max err {err:.1e})")


def check_attention(c, gen):
    T, w = 40, 7
    m = window_mask(T, w, torch.device("cpu"))
    c.expect(m.sum(1).tolist() == [min(i, w) + 1 for i in range(T)] and not bool(m.triu(1).any()),
             f"window mask: query i sees keys i-{w}..i (min(i, {w}) + 1 of them), none after it")
    if not HAS_SDPA:
        print("  skip scaled_dot_product_attention vs the explicit product (this torch has no SDPA)")
        return
    q, k, v = (torch.randn(2, 3, T, 32, generator=gen).bfloat16() for _ in range(3))
    got = attention(q, k, v, m, P16).double()
    want = attention(q.double(), k.double(), v.double(), m, P64)  # same bf16 inputs, exact math
    rel = float((got - want).norm() / want.norm())
    # one bf16 rounding of the output (0.2 %) plus the kernel's bf16 probabilities
    c.expect(rel < 0.01, f"SDPA with the window mask (bf16) matches the explicit product ({100 * rel:.2f} %)")


def check_schedules(c):
    hp = HYPERPARAMETER_DEFAULTS
    got = [lr_multiplier(p, hp) for p in (0.0, 0.3, 0.5, 0.75, 0.95)]
    c.expect(np.allclose(got, [1.0, 1.0, 1.0, 0.5, 0.1]), f"lr multiplier: constant, then warm-down to 0 {got}")
    got = [muon_momentum(s, hp) for s in (0, 150, 300, 1000)]
    c.expect(np.allclose(got, [0.85, 0.90, 0.95, 0.95]), f"Muon momentum ramp 0.85 -> 0.95 over 300 steps {got}")
    c.expect(np.isclose(muon_weight_decay(0.25, hp), 0.15), "weight decay 0.2 * (1 - progress)")


def check_fake_dump(c):
    import torch_twin  # tests/ is on sys.path (torch_twin.py put it there)
    from . import make_fake_dump
    quiet = lambda *_: None  # noqa: E731
    with tempfile.TemporaryDirectory() as d:
        loss0 = make_fake_dump.make(d, steps=8, seed=1)  # see make_fake_dump: seed 0 flips a lambda
        dump = Dump(d)
        cpu = torch.device("cpu")
        twin0 = torch_twin.replay(dump, 1, P64, cpu, 1, out=quiet)[0][0]
        c.expect(abs(twin0 - loss0) < 1e-9,
                 f"fake dump: fp64 twin step 0 {twin0:.10f} == numpy forward {loss0:.10f}")
        # the same with large output projections and lm_head, where attention, MLP and the
        # soft cap weigh on the loss; then configurations the step-0 check must notice
        strong = Dump(d)
        for n in strong.params:
            if n.endswith("c_proj") or n == "lm_head":
                strong.params[n] = strong.params[n] * 10
        W = {n: v.astype(np.float64) for n, v in strong.params.items()}
        rows = strong.batches[0].reshape(-1, strong.batches.shape[-1])
        ref = make_fake_dump.numpy_forward.mean_loss(W, strong.config, rows)
        twin0 = torch_twin.replay(strong, 1, P64, cpu, 2, out=quiet)[0][0]
        c.expect(abs(twin0 - ref) < 1e-9, f"fake dump, large weights: fp64 twin step 0 {twin0:.10f} "
                                          f"== numpy forward {ref:.10f}")
        for key, value in [("short_window", 24), ("softcap", 30), ("norm_eps", 1e-6), ("rope_base", 500)]:
            saved = strong.config[key]
            strong.config[key] = value
            moved = torch_twin.replay(strong, 1, P64, cpu, 2, out=quiet)[0][0]
            strong.config[key] = saved
            c.expect(abs(moved - ref) > 1e-6, f"fake dump: the step-0 check notices {key} = {value} "
                                              f"(moves the loss by {abs(moved - ref):.1e})")
        results = torch_twin.replay(dump, 8, P16, cpu, 2, out=quiet)
        bad = torch_twin.compare(dump, results, torch_twin.DEFAULT_ATOL, torch_twin.DEFAULT_RTOL, out=quiet)
        worst = max(abs(l - dump.losses[i]) for i, (l, _) in enumerate(results))
        c.expect(bad is None, f"fake dump: bf16 replay within the default tolerance of fp64 over 8 steps "
                              f"(max |diff| {worst:.4f})" + (f": {bad}" if bad else ""))
        os.truncate(os.path.join(d, "params", "wte.bin"), 10)
        try:
            Dump(d)
            c.expect(False, "a truncated parameter file is rejected")
        except DumpError as e:
            c.expect("wte.bin: 10 bytes, expected" in str(e), f"a truncated parameter file is rejected: {e}")
        try:
            TwinConfig({**dump.config, "depth": 2}).check_params(dump.params, dump.dtypes)
            c.expect(False, "a parameter table that is not the issue's model is rejected")
        except DumpError as e:
            c.expect("parameter table differs" in str(e), f"a parameter table that is not the model is rejected")


def run_all():
    gen = torch.Generator().manual_seed(0)
    c = Checks()
    print("twin self-test:")
    check_polar_express(c, gen)
    check_normuon(c, gen)
    check_cautious(c)
    check_adamw(c, gen)
    check_muon(c, gen)
    check_attention(c, gen)
    check_schedules(c)
    check_fake_dump(c)
    print(f"twin self-test: {'all passed' if c.failed == 0 else f'{c.failed} FAILED'}")
    return 0 if c.failed == 0 else 1
