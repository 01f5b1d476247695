#!/usr/bin/env python3
"""Per-kernel time table of one training step, from Nsight Compute's CSV.

scripts/device_run.sh profile runs the trainer under
  ncu --metrics gpu__time_duration.sum --csv --log-file ncu.csv
and this script reads that file. A step is cut at the optimizer's first AdamW
kernel: the window from the second to the third optimizer start holds one
step's optimizer and the next step's forward and backward passes, which is one
whole step whatever the number of micro-batches. Prints the kernels grouped by
name (and grid, so the different matrix products stay apart), their share of
the summed kernel time, and writes every kernel of the window in launch order
to --order (to map each one to its line in train.cu).

  python3 scripts/kernel_table.py ncu.csv [--order kernels_in_order.txt] [--top 40]
"""
import argparse
import csv
import re
import sys
from collections import OrderedDict


def short_name(name):
    """The kernel's name without its parameter list, return type or namespace noise."""
    name = name.replace("(anonymous namespace)::", "")
    name = re.sub(r"\(.*$", "", name)  # drop the argument list
    return re.sub(r"^void ", "", name)


def read_kernels(path):
    """[(name, grid, block, nanoseconds)] in launch order."""
    with open(path, newline="") as f:
        lines = [line for line in f if line.startswith('"')]  # ncu's own messages are unquoted
    rows = list(csv.reader(lines))
    if not rows:
        sys.exit(f"kernel_table: no CSV rows in {path} (did ncu profile any kernel?)")
    header = rows[0]
    col = {h: i for i, h in enumerate(header)}
    if "Metric Name" in col:  # the details page: one row per (kernel, metric)
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}
        out = []
        for r in rows[1:]:
            if r[col["Metric Name"]] != "gpu__time_duration.sum":
                continue
            ns = float(r[col["Metric Value"]].replace(",", "")) * scale.get(r[col["Metric Unit"]], 1.0)
            out.append((short_name(r[col["Kernel Name"]]), r[col["Grid Size"]] if "Grid Size" in col else "",
                        r[col["Block Size"]] if "Block Size" in col else "", ns))
        return out
    for needed in ("Kernel Name", "gpu__time_duration.sum"):
        if needed not in col:
            sys.exit(f"kernel_table: column {needed!r} missing from {path}")
    body = rows[1:]
    scale = 1.0
    if body and not re.match(r"^[0-9.,]+$", body[0][col["gpu__time_duration.sum"]]):
        unit = body[0][col["gpu__time_duration.sum"]]  # the units row
        scale = {"nsecond": 1.0, "usecond": 1e3, "msecond": 1e6, "second": 1e9}.get(unit, 1.0)
        body = body[1:]
    out = []
    for r in body:
        ns = float(r[col["gpu__time_duration.sum"]].replace(",", "")) * scale
        grid = r[col["Grid Size"]] if "Grid Size" in col else ""
        block = r[col["Block Size"]] if "Block Size" in col else ""
        out.append((short_name(r[col["Kernel Name"]]), grid, block, ns))
    return out


def one_step(kernels):
    """The kernels from the second optimizer start to the third (or all, if fewer)."""
    starts = [i for i, k in enumerate(kernels)
              if "adamw_kernel" in k[0] and (i == 0 or "adamw_kernel" not in kernels[i - 1][0])]
    if len(starts) >= 3:
        return kernels[starts[1]:starts[2]], "one step (optimizer of step 1, passes of step 2)"
    return kernels, f"all {len(kernels)} profiled kernels (fewer than 3 optimizer starts)"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("csv")
    ap.add_argument("--order", help="write the window's kernels in launch order here")
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    window, what = one_step(read_kernels(args.csv))
    total = sum(k[3] for k in window)
    groups = OrderedDict()
    for name, grid, block, ns in window:
        key = (name, grid if ("gemm" in name or "xmma" in name or "cutlass" in name) else "")
        g = groups.setdefault(key, [0, 0.0])
        g[0] += 1
        g[1] += ns
    print(f"{what}: {len(window)} kernels, {total / 1e6:.2f} ms of kernel time")
    print(f"{'ms':>9} {'share':>6} {'count':>6} {'us each':>9}  kernel [grid]")
    for (name, grid), (count, ns) in sorted(groups.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{ns / 1e6:9.2f} {100 * ns / total:5.1f}% {count:6d} {ns / count / 1e3:9.1f}  {name[:90]} {grid}")
    if args.order:
        with open(args.order, "w") as f:
            for i, (name, grid, block, ns) in enumerate(window):
                f.write(f"{i:5d} {ns / 1e3:10.1f} us  {name[:100]}  grid {grid} block {block}\n")


if __name__ == "__main__":
    main()
