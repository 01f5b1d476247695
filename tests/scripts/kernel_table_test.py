#!/usr/bin/env python3
"""scripts/kernel_table.py on hand-made Nsight Compute CSV files (both of its page formats):
the step window runs from the second optimizer start to the third, the units row is applied,
kernels group by name (matrix products also by grid), and an empty file is a one-line error."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import kernel_table  # noqa: E402

HEADER = '"ID","Kernel Name","Block Size","Grid Size","gpu__time_duration.sum"\n'
ADAM = "void (anonymous namespace)::adamw_kernel<float, float>(float*, const float*)"
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_execute_kernel__5x_cublas"


def raw_csv(kernels, unit="usecond"):
    rows = [HEADER, f'"","","","","{unit}"\n']
    for i, (name, grid, t) in enumerate(kernels):
        rows.append(f'"{i}","{name}","(256, 1, 1)","{grid}","{t}"\n')
    return "==PROF== Connected to process 1\n" + "".join(rows)


def write(text):
    f = tempfile.NamedTemporaryFile("w", suffix=".csv", delete=False)
    f.write(text)
    f.close()
    return f.name


# three steps: optimizer (two AdamW launches), then the passes of the next step; the norm
# kernel takes 5, 10 and 15 us in steps 0, 1 and 2, so the window's total says which step it is
STEPS = [k for step in range(3) for k in
         [(ADAM, "(1, 1, 1)", 1), (ADAM, "(1, 1, 1)", 1), ("void rmsnorm_kernel<bf16>(bf16*)", "(8, 1, 1)", 5 * (step + 1)),
          (GEMM, "(2, 66, 1)", 40), (GEMM, "(2, 64, 1)", 30)]]


class KernelTable(unittest.TestCase):
    def test_names_drop_arguments_and_anonymous_namespaces(self):
        self.assertEqual(kernel_table.short_name(ADAM), "adamw_kernel<float, float>")

    def test_the_window_is_one_step_from_the_second_optimizer_start(self):
        window, what = kernel_table.one_step(kernel_table.read_kernels(write(raw_csv(STEPS))))
        self.assertIn("one step", what)
        self.assertEqual(len(window), 5)
        self.assertEqual(window[0][0], "adamw_kernel<float, float>")
        self.assertAlmostEqual(sum(k[3] for k in window), 82e3)  # step 1, microseconds -> nanoseconds

    def test_fewer_than_three_optimizer_starts_keeps_every_kernel(self):
        window, what = kernel_table.one_step(kernel_table.read_kernels(write(raw_csv(STEPS[:5]))))
        self.assertEqual(len(window), 5)
        self.assertIn("fewer than 3", what)

    def test_the_details_page_reads_the_same(self):
        text = '"ID","Kernel Name","Grid Size","Metric Name","Metric Unit","Metric Value"\n'
        text += f'"0","{GEMM}","(2, 66, 1)","gpu__time_duration.sum","msecond","1.5"\n'
        text += f'"0","{GEMM}","(2, 66, 1)","sm__throughput.avg","%","80"\n'
        kernels = kernel_table.read_kernels(write(text))
        self.assertEqual(len(kernels), 1)
        self.assertAlmostEqual(kernels[0][3], 1.5e6)

    def test_table_groups_products_by_grid(self):
        out = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts", "kernel_table.py"),
                              write(raw_csv(STEPS))], capture_output=True, text=True, check=True).stdout
        gemm_lines = [line for line in out.splitlines() if "xmma_gemm" in line]
        self.assertEqual(len(gemm_lines), 2)  # (2, 66, 1) and (2, 64, 1) stay apart
        self.assertIn("5 kernels, 0.08 ms", out)
        self.assertIn("rmsnorm_kernel<bf16>", out)

    def test_a_file_without_rows_is_a_clear_error(self):
        r = subprocess.run([sys.executable, os.path.join(HERE, "..", "..", "scripts", "kernel_table.py"),
                            write("==PROF== no kernels\n")], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("no CSV rows", r.stderr)


if __name__ == "__main__":
    unittest.main()
