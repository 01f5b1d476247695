"""The model shape and every hyperparameter the twin uses, read from a dump's
config (docs/CONTRACTS.md: the trainer writes the shape keys and every constant of
train.cu by its name). A key the dump lacks takes the default the issue
specifies, so the twin still runs against an older trainer; `defaulted` lists
which ones did, and the twin prints them.
"""

from .dump import DumpError

# train.cu constant name -> the default
HYPERPARAMETER_DEFAULTS = {
    "EMBEDDING_LR": 0.6,          # AdamW, wte and value embeddings (x (dim/768)^-0.5)
    "UNEMBEDDING_LR": 0.004,      # AdamW, lm_head (x (dim/768)^-0.5)
    "RESID_LAMBDA_LR": 0.005,     # AdamW, resid_lambdas
    "X0_LAMBDA_LR": 0.5,          # AdamW, x0_lambdas
    "ADAM_BETA1": 0.8,
    "ADAM_BETA2": 0.95,
    "X0_LAMBDA_BETA1": 0.96,      # x0_lambdas use betas (0.96, ADAM_BETA2)
    "ADAM_EPS": 1e-10,
    "MATRIX_LR": 0.04,            # Muon (x max(1, rows/cols)^0.5)
    "MUON_MOMENTUM_START": 0.85,
    "MUON_MOMENTUM_END": 0.95,
    "MUON_MOMENTUM_STEPS": 300,
    "MUON_BETA2": 0.95,           # NorMuon second-moment EMA
    "WEIGHT_DECAY": 0.2,          # cautious, x (1 - progress)
    "WARMUP_RATIO": 0.0,
    "WARMDOWN_RATIO": 0.5,
    "FINAL_LR_FRAC": 0.0,
    "VE_GATE_CHANNELS": 32,
}

MODEL_DEFAULTS = {"window_pattern": "SSSL", "short_window": 1024, "softcap": 15.0,
                  "rope_base": 10000.0, "norm_eps": 1.1920929e-07}
MODEL_REQUIRED = ("depth", "model_dim", "n_head", "n_kv_head", "head_dim", "vocab_size", "seq_len",
                  "batch_rows", "grad_accum", "steps")


class TwinConfig:
    def __init__(self, config):
        missing = [k for k in MODEL_REQUIRED if k not in config]
        if missing:
            raise DumpError(f"manifest.json: config lacks {', '.join(missing)}")
        self.defaulted = []
        for k in MODEL_REQUIRED:
            setattr(self, k, int(config[k]))
        for k, v in MODEL_DEFAULTS.items():
            setattr(self, k, type(v)(config[k]) if k in config else v)
            if k not in config:
                self.defaulted.append(k)
        self.hp = {}
        for k, v in HYPERPARAMETER_DEFAULTS.items():
            self.hp[k] = float(config[k]) if k in config else v
            if k not in config:
                self.defaulted.append(k)
        self.ve_gate_channels = int(self.hp["VE_GATE_CHANNELS"])
        if self.n_head % self.n_kv_head:
            raise DumpError(f"manifest.json: n_head {self.n_head} is not a multiple of n_kv_head {self.n_kv_head}")
        if not self.window_pattern or set(self.window_pattern) - set("SL"):
            raise DumpError(f"manifest.json: window_pattern {self.window_pattern!r} is not made of S and L")

    def window(self, layer):
        """Keys before the query a layer sees: S layers short_window, L layers (and the last) all."""
        last = layer == self.depth - 1
        return self.seq_len if last or self.window_pattern[layer % len(self.window_pattern)] == "L" \
            else self.short_window

    def has_ve(self, layer):
        return layer % 2 == (self.depth - 1) % 2

    def expected_params(self):
        """{name: shape} the issue's model has, as docs/CONTRACTS.md names them."""
        C, V, hd = self.model_dim, self.vocab_size, self.head_dim
        q, kv = self.n_head * hd, self.n_kv_head * hd
        shapes = {"wte": [V, C], "lm_head": [V, C], "resid_lambdas": [self.depth],
                  "x0_lambdas": [self.depth]}
        for i in range(self.depth):
            b = f"blocks.{i}"
            if self.has_ve(i):
                shapes[f"value_embeds.{i}"] = [V, kv]
                shapes[f"{b}.attn.ve_gate"] = [self.n_kv_head, self.ve_gate_channels]
            shapes.update({f"{b}.attn.c_q": [q, C], f"{b}.attn.c_k": [kv, C], f"{b}.attn.c_v": [kv, C],
                           f"{b}.attn.c_proj": [C, q], f"{b}.mlp.c_fc": [4 * C, C],
                           f"{b}.mlp.c_proj": [C, 4 * C]})
        return shapes

    def check_params(self, params, dtypes):
        """The dump's parameter table must be exactly the issue's model (names, shapes, dtypes)."""
        want = self.expected_params()
        extra = sorted(set(params) - set(want))
        lacking = sorted(set(want) - set(params))
        if extra or lacking:
            raise DumpError("manifest.json: parameter table differs from the model: "
                            + (f"unexpected {extra} " if extra else "") + (f"missing {lacking}" if lacking else ""))
        for name, shape in want.items():
            if list(params[name].shape) != shape:
                raise DumpError(f"manifest.json: {name} has shape {list(params[name].shape)}, the model's is {shape}")
            embed = name == "wte" or name.startswith("value_embeds.")
            if dtypes[name] != ("bf16" if embed else "f32"):
                raise DumpError(f"manifest.json: {name} is {dtypes[name]}, the model stores it as "
                                f"{'bf16' if embed else 'f32'}")
