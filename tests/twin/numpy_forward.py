"""An independent float64 forward pass of the issue's model in plain numpy,
written from the issue text alone (it shares no code with model.py), so that
the fake dump's step-0 loss checks the twin's model definition.
Straight loops over layers, heads and positions; fine for tiny shapes only.
"""

import numpy as np


def rms(x, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)


def rotate(x, base):
    """x (T, D) of one head: pairs (x[f], x[f + D/2]) rotated by angle t / base^(2f/D)."""
    T, D = x.shape
    half = D // 2
    out = np.empty_like(x)
    for t in range(T):
        for f in range(half):
            a = t / base ** (2.0 * f / D)
            c, s = np.cos(a), np.sin(a)
            out[t, f] = x[t, f] * c + x[t, f + half] * s
            out[t, f + half] = -x[t, f] * s + x[t, f + half] * c
    return out


def mean_loss(W, c, rows):
    """W: {name: float64 array}; c: the dump's config dict; rows (n, T+1) tokens.
    Returns the mean next-token cross-entropy over all n*T positions."""
    L, H, Hkv, D = c["depth"], c["n_head"], c["n_kv_head"], c["head_dim"]
    T, eps, cap = c["seq_len"], c["norm_eps"], c["softcap"]
    pattern, gate_ch = c["window_pattern"], int(c["VE_GATE_CHANNELS"])
    total = 0.0
    for row in rows:
        idx, tgt = row[:-1], row[1:]
        x0 = rms(W["wte"][idx], eps)
        x = x0
        for i in range(L):
            S = pattern[i % len(pattern)] == "S" and i != L - 1
            window = c["short_window"] if S else T
            x = W["resid_lambdas"][i] * x + W["x0_lambdas"][i] * x0
            n = rms(x, eps)
            q = n @ W[f"blocks.{i}.attn.c_q"].T
            k = n @ W[f"blocks.{i}.attn.c_k"].T
            v = n @ W[f"blocks.{i}.attn.c_v"].T
            if f"value_embeds.{i}" in W:
                logits = n[:, :gate_ch] @ W[f"blocks.{i}.attn.ve_gate"].T   # (T, Hkv)
                g = 2.0 / (1.0 + np.exp(-logits))
                ve = W[f"value_embeds.{i}"][idx]
                for j in range(Hkv):
                    v[:, j * D:(j + 1) * D] += g[:, j:j + 1] * ve[:, j * D:(j + 1) * D]
            y = np.zeros((T, H * D))
            for h in range(H):
                j = h // (H // Hkv)
                qh = rms(rotate(q[:, h * D:(h + 1) * D], c["rope_base"]), eps)
                kh = rms(rotate(k[:, j * D:(j + 1) * D], c["rope_base"]), eps)
                vh = v[:, j * D:(j + 1) * D]
                for t in range(T):
                    lo = max(0, t - window)
                    s = kh[lo:t + 1] @ qh[t] / np.sqrt(D)
                    p = np.exp(s - s.max())
                    y[t, h * D:(h + 1) * D] = (p / p.sum()) @ vh[lo:t + 1]
            x = x + y @ W[f"blocks.{i}.attn.c_proj"].T
            hid = rms(x, eps) @ W[f"blocks.{i}.mlp.c_fc"].T
            x = x + (np.maximum(hid, 0.0) ** 2) @ W[f"blocks.{i}.mlp.c_proj"].T
        z = rms(x, eps) @ W["lm_head"].T
        z = cap * np.tanh(z / cap)
        m = z.max(axis=1, keepdims=True)
        lse = m[:, 0] + np.log(np.exp(z - m).sum(axis=1))
        total += float(np.sum(lse - z[np.arange(T), tgt]))
    return total / (len(rows) * T)
