#!/usr/bin/env python3
"""The trainer compiles every trainer/model/*.cu, as program.md promises a research edit: a copy
of trainer/ configured alone (as the daemon builds it) lists a kernel file added before the
configure, and one added afterwards once the build files are brought up to date (the glob is
checked again at each build). Only CMake runs; nothing is compiled. Exits 77 (skipped) where
no nvcc is found, since the trainer's CUDA part is then not configured at all."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

TRAINER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "trainer")


def find_nvcc():
    """nvcc on PATH, else the CUDA toolkit's default place (None: neither)."""
    default = "/usr/local/cuda/bin/nvcc"
    return shutil.which("nvcc") or (default if os.access(default, os.X_OK) else None)


class TrainerSourcesTest(unittest.TestCase):
    def test_new_kernel_files_are_built(self):
        with tempfile.TemporaryDirectory() as tmp:
            src, build = os.path.join(tmp, "trainer"), os.path.join(tmp, "build")
            shutil.copytree(TRAINER, src, ignore=shutil.ignore_patterns("tests"))
            with open(os.path.join(src, "model", "probe_early.cu"), "w") as f:
                f.write("// added before the configure\n")
            env = dict(os.environ, CUDACXX=NVCC)
            r = subprocess.run(["cmake", "-S", src, "-B", build, "-G", "Ninja", "-DTRAINER_TESTS=OFF"],
                               capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(build, "build.ninja")) as f:
                ninja = f.read()
            self.assertIn("probe_early.cu.o", ninja)
            self.assertIn("attention.cu.o", ninja)
            self.assertNotIn("probe_late.cu.o", ninja)
            with open(os.path.join(src, "model", "probe_late.cu"), "w") as f:
                f.write("// added by an edit after the configure\n")
            r = subprocess.run(["ninja", "-C", build, "build.ninja"], capture_output=True, text=True, env=env)
            self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            with open(os.path.join(build, "build.ninja")) as f:
                self.assertIn("probe_late.cu.o", f.read())


if __name__ == "__main__":
    NVCC = find_nvcc()
    if not NVCC:
        print("no nvcc: the trainer's CUDA part is not configured; skipped")
        sys.exit(77)
    if not shutil.which("ninja") or not shutil.which("cmake"):
        print("trainer_sources_test: cmake and ninja are needed", file=sys.stderr)
        sys.exit(1)
    unittest.main()
