"""Where the twin rounds. Two modes:

  bf16  the trainer's numerics: activations stored in bf16, every elementwise
        op and reduction computed in fp32 from them and rounded once on
        output; matrix products on bf16 operands with fp32 accumulation;
        parameters in fp32 (the embedding tables hold bf16 values and are
        re-rounded after each update); logits and the loss in fp32.
  fp64  the same algorithm with no rounding at all (activations, parameters,
        optimizer state in float64): the exact-math reference the fake dump's
        later steps and the self-test compare against.
"""

import torch


class Precision:
    def __init__(self, name):
        if name not in ("bf16", "fp64"):
            raise ValueError(f"unknown precision {name!r} (bf16 or fp64)")
        self.name = name
        self.low = name == "bf16"
        self.act = torch.bfloat16 if self.low else torch.float64   # stored activations
        self.wide = torch.float32 if self.low else torch.float64   # elementwise math, params, state

    def round(self, x):
        """x rounded to bf16 (kept in the wide dtype) in bf16 mode; unchanged in fp64 mode."""
        return x.to(torch.bfloat16).to(self.wide) if self.low else x


def exact_matmuls():
    """fp32 products must be true fp32 (no TF32) and bf16 GEMMs must reduce in fp32,
    or the twin's own rounding would exceed the trainer's."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:  # torch >= 2.0; older versions have no such switch (and raise on the lookup)
        torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    except (AttributeError, AssertionError):
        pass
