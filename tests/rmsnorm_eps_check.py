#!/usr/bin/env python3
"""Which epsilon does PyTorch's F.rms_norm add for a bf16 input (eps=None)?

The reference trainer calls norm(x) = F.rms_norm(x, (x.size(-1),)) on bf16
activations under autocast, eagerly and through torch.compile. Its docs say
finfo(x.dtype).eps (2^-7 for bf16); the kernels may use the fp32 eps of the
computation type instead. This measures it: on an input of mean square m,
y = x / sqrt(m + eps), so eps = (x / y)^2 - m; an input of magnitude 1e-3
(m = 1e-6) tells 2^-7 = 7.8e-3 from 1.2e-7 at a glance.

Prints one line per mode and a last line `reference_norm_eps: bf16|fp32`
(exit 0), or exits 1 when the modes disagree or the value is neither.
Needs torch with CUDA (the GPU machine).
"""
import sys

import torch
import torch.nn.functional as F


def measured_eps(fn):
    x = torch.full((4, 128), 1e-3, device="cuda").to(torch.bfloat16)
    with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
        y = fn(x)
    xd, yd = x.double(), y.double()
    return float(((xd / yd) ** 2 - (xd ** 2).mean(-1, keepdim=True)).mean()), y.dtype


def main():
    norm = lambda x: F.rms_norm(x, (x.size(-1),))
    results = {"eager": measured_eps(norm), "compiled": measured_eps(torch.compile(norm))}
    kinds = set()
    for mode, (eps, dtype) in results.items():
        kind = "bf16" if abs(eps - 2 ** -7) < 1e-4 else "fp32" if abs(eps) < 1e-5 else "other"
        kinds.add(kind)
        print(f"torch {torch.__version__} rms_norm on bf16, {mode}: eps {eps:.3e} ({kind}), output {dtype}")
    if len(kinds) != 1 or "other" in kinds:
        print("reference_norm_eps: unclear")
        return 1
    print(f"reference_norm_eps: {kinds.pop()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
