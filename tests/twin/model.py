"""The twin of the trainer's GPT (issue 5, "Model"), in plain PyTorch with
autograd for the backward pass. Parameters live in a dict keyed by the dump's
names; forward() returns the summed cross-entropy of one (B, T) batch.

  x0 = norm(wte[idx])                              norm: RMSNorm, no weight, eps from the dump
  per layer i:
    x  = resid_lambdas[i] * x + x0_lambdas[i] * x0
    n  = norm(x)
    q, k, v = n Wqᵀ, n Wkᵀ, n Wvᵀ                  (B, T, H|Hkv, D)
    v += 2 sigmoid(n[:, :32] W_gateᵀ) * ve[idx]    layers with a value embedding
    q, k = norm(rope(q)), norm(rope(k))            per head; rope on the two halves
    x  = x + c_proj(attention(q, k, v))            causal, window per layer, scale 1/sqrt(D)
    x  = x + c_proj(relu(c_fc(norm(x)))^2)
  logits = softcap * tanh(norm(x) lm_headᵀ / softcap)   fp32
"""

import math

import torch
import torch.nn.functional as F

HAS_SDPA = hasattr(F, "scaled_dot_product_attention")


def window_mask(T, window, device):
    """(T, T) bool, True where query i may see key j: j <= i and i - j <= window."""
    i = torch.arange(T, device=device)[:, None]
    j = torch.arange(T, device=device)[None, :]
    return (j <= i) & (i - j <= window)


def attention(q, k, v, mask, prec):
    """q (B, H, T, D), k and v (B, H, T, D) (kv heads already repeated), mask (T, T) bool.
    bf16 on a torch with SDPA: scaled_dot_product_attention (fp32 softmax inside the kernel).
    Otherwise the explicit product in the wide dtype. Output in the activation dtype."""
    scale = 1.0 / math.sqrt(q.shape[-1])
    if prec.low and HAS_SDPA:
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)  # default scale: 1/sqrt(D)
    s = (q.to(prec.wide) @ k.to(prec.wide).transpose(-2, -1)) * scale
    s = s.masked_fill(~mask, float("-inf"))
    return (torch.softmax(s, dim=-1) @ v.to(prec.wide)).to(prec.act)


class TwinGPT:
    def __init__(self, cfg, values, prec, device):
        """values: {name: float32 numpy array} (the dump's initial parameters)."""
        self.cfg, self.prec, self.device = cfg, prec, device
        self.params = {name: torch.tensor(v, dtype=prec.wide, device=device).requires_grad_(True)
                       for name, v in values.items()}
        self.embeddings = [n for n in self.params if n == "wte" or n.startswith("value_embeds.")]
        hd, T = cfg.head_dim, cfg.seq_len
        inv_freq = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)  # (D/2,)
        angle = torch.arange(T, dtype=torch.float64)[:, None] * inv_freq[None, :]         # (T, D/2)
        self.cos = angle.cos().to(prec.wide).to(device)
        self.sin = angle.sin().to(prec.wide).to(device)
        self.masks = {w: window_mask(T, w, device) for w in {cfg.window(i) for i in range(cfg.depth)}}

    # ---- pieces (each reads act-dtype tensors, computes wide, returns act) ----
    def norm(self, x):
        x = x.to(self.prec.wide)
        return (x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.cfg.norm_eps)).to(self.prec.act)

    def linear(self, x, name):
        """x (..., in) act @ W (out, in)ᵀ: bf16 operands, fp32 accumulation, act output."""
        return F.linear(x, self.params[name].to(self.prec.act))

    def rope_norm(self, x):
        """x (B, T, H, D): y1 = x1 cos + x2 sin, y2 = -x1 sin + x2 cos, then RMSNorm over D."""
        x = x.to(self.prec.wide)
        half = x.shape[-1] // 2
        cos, sin = self.cos[None, :, None, :], self.sin[None, :, None, :]
        x1, x2 = x[..., :half], x[..., half:]
        y = torch.cat([x1 * cos + x2 * sin, -x1 * sin + x2 * cos], dim=-1)
        return self.norm(y)

    # ---- the model ----
    def forward(self, idx, targets):
        """idx, targets: (B, T) int64. Returns the summed (not mean) cross-entropy, wide dtype."""
        c, p, w = self.cfg, self.params, self.prec.wide
        B, T = idx.shape
        H, Hkv, D = c.n_head, c.n_kv_head, c.head_dim
        x0 = self.norm(F.embedding(idx, p["wte"]).to(self.prec.act))   # (B, T, C)
        x = x0
        for i in range(c.depth):
            b = f"blocks.{i}"
            x = (p["resid_lambdas"][i] * x.to(w) + p["x0_lambdas"][i] * x0.to(w)).to(self.prec.act)
            n = self.norm(x)
            q = self.linear(n, f"{b}.attn.c_q").view(B, T, H, D)
            k = self.linear(n, f"{b}.attn.c_k").view(B, T, Hkv, D)
            v = self.linear(n, f"{b}.attn.c_v").view(B, T, Hkv, D)
            if f"value_embeds.{i}" in p:
                gate = self.linear(n[..., :c.ve_gate_channels], f"{b}.attn.ve_gate")   # (B, T, Hkv)
                ve = F.embedding(idx, p[f"value_embeds.{i}"]).view(B, T, Hkv, D)
                v = (v.to(w) + 2 * torch.sigmoid(gate.to(w))[..., None] * ve).to(self.prec.act)
            q, k = self.rope_norm(q), self.rope_norm(k)
            q, k, v = (t.transpose(1, 2) for t in (q, k, v))                           # (B, h, T, D)
            if Hkv != H:  # query head h reads kv head h // (H / Hkv)
                k, v = k.repeat_interleave(H // Hkv, dim=1), v.repeat_interleave(H // Hkv, dim=1)
            y = attention(q, k, v, self.masks[c.window(i)], self.prec)
            y = y.transpose(1, 2).reshape(B, T, H * D)
            x = x + self.linear(y, f"{b}.attn.c_proj")
            h = self.linear(self.norm(x), f"{b}.mlp.c_fc")
            a = torch.relu(h.to(w)).square().to(self.prec.act)
            x = x + self.linear(a, f"{b}.mlp.c_proj")
        xf = self.norm(x).to(w)
        head = self.prec.round(p["lm_head"])    # bf16 operands, fp32 product and logits
        logits = F.linear(xf, head)
        z = c.softcap * torch.tanh(logits / c.softcap)
        return F.cross_entropy(z.reshape(B * T, -1), targets.reshape(B * T), reduction="sum")

    def zero_grad(self):
        for t in self.params.values():
            t.grad = None
