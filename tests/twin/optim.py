"""The twin of the trainer's optimizer (issue 5, "Optimizer"): MuonAdamW and
its schedules, with the rounding of a Precision (precision.py).

AdamW (bias-corrected, eps outside the sqrt, no weight decay) for
  lm_head        UNEMBEDDING_LR * (dim/768)^-0.5
  wte, value_*   EMBEDDING_LR   * (dim/768)^-0.5   (bf16 tables: re-rounded after each step)
  resid_lambdas  RESID_LAMBDA_LR
  x0_lambdas     X0_LAMBDA_LR, beta1 X0_LAMBDA_BETA1
Muon for every 2-D block matrix, stacked by shape, per matrix:
  buf = lerp(buf, g, 1-mu);  g = lerp(g, buf, mu)            Nesterov, fp32
  X = polar_express(g)                                       bf16, 5 iterations
  u = normuon(X, V)                                          per-row / per-column EMA, norm kept
  p -= lr u + lr wd p [u p >= 0]                             lr = MATRIX_LR sqrt(max(1, rows/cols))
"""

import torch

POLAR_EXPRESS_COEFFS = (
    (8.156554524902461, -22.48329292557795, 15.878769915207462),
    (4.042929935166739, -2.808917465908714, 0.5000178451051316),
    (3.8916678022926607, -2.772484153217685, 0.5060648178503393),
    (3.285753657755655, -2.3681294933425376, 0.46449024233003106),
    (2.3465413258596377, -1.7097828382687081, 0.42323551169305323),
)


# ---- schedules (progress = step / steps of the dumped run) ----
def lr_multiplier(progress, hp):
    """Linear warm-up over WARMUP_RATIO, constant, then linear warm-down over the last
    WARMDOWN_RATIO to FINAL_LR_FRAC."""
    if progress < hp["WARMUP_RATIO"]:
        return progress / hp["WARMUP_RATIO"]
    if progress < 1.0 - hp["WARMDOWN_RATIO"]:
        return 1.0
    cooldown = (1.0 - progress) / hp["WARMDOWN_RATIO"]
    return cooldown + (1.0 - cooldown) * hp["FINAL_LR_FRAC"]


def muon_momentum(step, hp):
    f = min(1.0, step / hp["MUON_MOMENTUM_STEPS"])
    return (1 - f) * hp["MUON_MOMENTUM_START"] + f * hp["MUON_MOMENTUM_END"]


def muon_weight_decay(progress, hp):
    return hp["WEIGHT_DECAY"] * (1.0 - progress)


# ---- Muon pieces, on stacks (count, rows, cols) ----
def polar_express(G, prec):
    """Approximate orthogonal polar factor of each matrix of G (count, rows, cols).
    X = G / (||G||_F * 1.02 + 1e-6), then per (a, b, c):
      tall (rows > cols): A = XᵀX, X = aX + X(bA + cA²)
      otherwise:          A = XXᵀ, X = aX + (bA + cA²)X
    bf16 mode: every stored matrix (X, A, bA + cA²) is rounded to bf16 and each product is
    fp32-accumulated from those bf16 values (a bf16 GEMM with fp32 accumulation)."""
    X = prec.round(G)
    X = prec.round(X / (X.norm(dim=(-2, -1), keepdim=True) * 1.02 + 1e-6))
    tall = G.shape[-2] > G.shape[-1]
    for a, b, c in POLAR_EXPRESS_COEFFS:
        if tall:
            A = prec.round(X.transpose(-2, -1) @ X)
            P = prec.round(b * A + c * (A @ A))
            X = prec.round(a * X + X @ P)
        else:
            A = prec.round(X @ X.transpose(-2, -1))
            P = prec.round(b * A + c * (A @ A))
            X = prec.round(a * X + P @ X)
    return X


def normuon(X, V, beta2):
    """NorMuon: mean of squares per row (rows >= cols) or per column (wide), its EMA in V
    (updated in place, no bias correction), scale by rsqrt(max(V, 1e-10)), then rescale so
    each matrix keeps its Frobenius norm. V: (count, rows, 1) or (count, 1, cols)."""
    red = -1 if X.shape[-2] >= X.shape[-1] else -2
    V.lerp_(X.square().mean(dim=red, keepdim=True), 1 - beta2)
    U = X * V.clamp_min(1e-10).rsqrt()
    keep = X.norm(dim=(-2, -1), keepdim=True) / U.norm(dim=(-2, -1), keepdim=True).clamp_min(1e-10)
    return U * keep


def cautious_update(P, U, lr, wd):
    """P -= lr U + lr wd P [U P >= 0], in place: decay only where the update agrees in sign."""
    mask = (U * P >= 0).to(P.dtype)
    P.sub_(lr * U + lr * wd * P * mask)


class MuonAdamW:
    def __init__(self, params, cfg, prec):
        """params: {name: leaf tensor} of the twin model; cfg: TwinConfig."""
        self.params, self.prec, hp = params, prec, cfg.hp
        self.hp = hp
        scale = (cfg.model_dim / 768) ** -0.5
        self.adam = []  # (name, base lr, beta1, beta2, m, v, is bf16 table)
        self.muon = {}  # shape -> {"names", "buf", "V"}
        for name, t in params.items():
            if name.startswith("blocks.") and t.dim() == 2:
                g = self.muon.setdefault(tuple(t.shape), {"names": []})
                g["names"].append(name)
                continue
            if name == "lm_head":
                lr, b1 = hp["UNEMBEDDING_LR"] * scale, hp["ADAM_BETA1"]
            elif name == "wte" or name.startswith("value_embeds."):
                lr, b1 = hp["EMBEDDING_LR"] * scale, hp["ADAM_BETA1"]
            elif name == "resid_lambdas":
                lr, b1 = hp["RESID_LAMBDA_LR"], hp["ADAM_BETA1"]
            elif name == "x0_lambdas":
                lr, b1 = hp["X0_LAMBDA_LR"], hp["X0_LAMBDA_BETA1"]
            else:
                raise ValueError(f"no optimizer group for parameter {name}")
            table = name == "wte" or name.startswith("value_embeds.")
            self.adam.append((name, lr, b1, hp["ADAM_BETA2"], torch.zeros_like(t), torch.zeros_like(t), table))
        for (rows, cols), g in self.muon.items():
            n = len(g["names"])
            g["buf"] = torch.zeros(n, rows, cols, dtype=prec.wide, device=params[g["names"][0]].device)
            vshape = (n, rows, 1) if rows >= cols else (n, 1, cols)
            g["V"] = torch.zeros(vshape, dtype=prec.wide, device=g["buf"].device)
        self.t = 0

    @torch.no_grad()
    def step(self, lrm, momentum, weight_decay):
        self.t += 1
        hp, t = self.hp, self.t
        for name, lr, b1, b2, m, v, table in self.adam:
            p, g = self.params[name], self.params[name].grad
            if table:  # a bf16 table's gradient and moments are bf16, as the trainer keeps them
                g = self.prec.round(g)
            m.lerp_(g, 1 - b1)
            v.lerp_(g.square(), 1 - b2)
            if table:
                m.copy_(self.prec.round(m))
                v.copy_(self.prec.round(v))
            denom = (v / (1 - b2 ** t)).sqrt() + hp["ADAM_EPS"]
            p.sub_(lr * lrm / (1 - b1 ** t) * m / denom)
            if table:
                p.copy_(self.prec.round(p))
        for (rows, cols), g in self.muon.items():
            P = torch.stack([self.params[n] for n in g["names"]])
            G = torch.stack([self.params[n].grad for n in g["names"]])
            g["buf"].lerp_(G, 1 - momentum)
            G = G.lerp(g["buf"], momentum)
            U = normuon(polar_express(G, self.prec), g["V"], hp["MUON_BETA2"])
            lr = hp["MATRIX_LR"] * lrm * max(1.0, rows / cols) ** 0.5
            cautious_update(P, U, lr, weight_decay)
            for i, n in enumerate(g["names"]):
                self.params[n].copy_(P[i])
