"""The twin dump (format 1, docs/CONTRACTS.md "The twin dump"): what `train --steps N
--dump-init DIR` writes and tests/torch_twin.py replays. This file owns reading
and writing that directory; it knows nothing of the model.

  DIR/params/<name>.bin   initial value, raw little-endian row-major, bf16 or f32
  DIR/batches.bin         uint16 tokens, shape (N, grad_accum, B, T+1)
  DIR/manifest.json       config, params table, batches shape, losses, lr_multipliers

Bad input raises DumpError with a one-line message naming the file and cause.
"""

import json
import os

import numpy as np

FORMAT = 1


class DumpError(Exception):
    pass


def bf16_bits_to_f32(bits):
    """uint16 array of raw bfloat16 bits -> float32 array (exact)."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16_bits(x):
    """float32 array -> raw bfloat16 bits, rounded to nearest even (finite inputs)."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    rounded = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


class Dump:
    """A loaded dump: config (dict), params {name: float32 array}, dtypes {name: 'bf16'|'f32'},
    param_order (manifest order), batches (N, A, B, T+1) uint16, losses, lr_multipliers."""

    def __init__(self, directory):
        self.dir = directory
        path = os.path.join(directory, "manifest.json")
        if not os.path.isfile(path):
            raise DumpError(f"{path}: missing (the trainer writes it when the --steps run ends)")
        try:
            with open(path) as f:
                m = json.load(f)
        except json.JSONDecodeError as e:
            raise DumpError(f"{path}: not JSON: {e}")
        if m.get("format") != FORMAT:
            raise DumpError(f"{path}: format {m.get('format')!r}, this twin reads format {FORMAT}")
        for key in ("config", "params", "batches", "losses"):
            if key not in m:
                raise DumpError(f"{path}: no '{key}'")
        self.manifest = m
        self.config = m["config"]
        self.losses = [float(x) for x in m["losses"]]
        self.lr_multipliers = [float(x) for x in m.get("lr_multipliers", [])]
        self.params, self.dtypes, self.param_order = {}, {}, []
        for entry in m["params"]:
            name, shape, dtype = entry["name"], [int(d) for d in entry["shape"]], entry["dtype"]
            file = os.path.join(directory, entry["file"])
            if dtype not in ("bf16", "f32"):
                raise DumpError(f"{path}: parameter {name}: unknown dtype {dtype!r}")
            raw = self._read(file, np.uint16 if dtype == "bf16" else np.float32, int(np.prod(shape)))
            values = bf16_bits_to_f32(raw) if dtype == "bf16" else raw
            self.params[name] = values.reshape(shape)
            self.dtypes[name] = dtype
            self.param_order.append(name)
        shape = [int(d) for d in m["batches"]["shape"]]
        if len(shape) != 4:
            raise DumpError(f"{path}: batches shape {shape} is not (N, grad_accum, B, T+1)")
        file = os.path.join(directory, m["batches"]["file"])
        self.batches = self._read(file, np.uint16, int(np.prod(shape))).reshape(shape)
        if len(self.losses) < shape[0]:
            raise DumpError(f"{path}: {len(self.losses)} losses for {shape[0]} steps of batches")

    @staticmethod
    def _read(file, dtype, count):
        if not os.path.isfile(file):
            raise DumpError(f"{file}: missing")
        want = count * np.dtype(dtype).itemsize
        have = os.path.getsize(file)
        if have != want:
            raise DumpError(f"{file}: {have} bytes, expected {want} ({count} x {np.dtype(dtype).name})")
        return np.fromfile(file, dtype=dtype, count=count)


def write(directory, config, params, dtypes, batches, losses, lr_multipliers, extra=None):
    """Writes a dump in the trainer's format. params: {name: float32 array} in manifest order;
    dtypes: {name: 'bf16'|'f32'}; batches: uint16 (N, A, B, T+1). manifest.json last, atomically."""
    os.makedirs(os.path.join(directory, "params"), exist_ok=True)
    table = []
    for name, value in params.items():
        value = np.ascontiguousarray(value, dtype=np.float32)
        raw = f32_to_bf16_bits(value) if dtypes[name] == "bf16" else value
        raw.tofile(os.path.join(directory, "params", name + ".bin"))
        table.append({"name": name, "shape": list(value.shape), "dtype": dtypes[name],
                      "file": f"params/{name}.bin"})
    np.ascontiguousarray(batches, dtype=np.uint16).tofile(os.path.join(directory, "batches.bin"))
    manifest = {"format": FORMAT, "config": config, "params": table,
                "batches": {"file": "batches.bin", "shape": list(batches.shape)},
                "losses": [float(x) for x in losses],
                "lr_multipliers": [float(x) for x in lr_multipliers]}
    manifest.update(extra or {})
    tmp = os.path.join(directory, "manifest.json.tmp")
    with open(tmp, "w") as f:
        json.dump(manifest, f, indent=1)
    os.replace(tmp, os.path.join(directory, "manifest.json"))
