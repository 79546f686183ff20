"""The tutorial's scripts run (small sizes, on the CPU) and print both
profilers' tables and the kernel counts each mode is known to have."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")


def run(script, *args):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.path.join(ROOT, "python"),
                                                        os.environ.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, os.path.join(ROOT, "examples", script), "--device", "cpu", "--iters", "2",
                          *args], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    return out.stdout


def kernels(text, name):
    line = next(line for line in text.splitlines() if line.startswith(name + " "))
    return float(line.split()[2])


@pytest.mark.parametrize("dtype", ["f32", "bf16"])
def test_simple_mlp(dtype):
    text = run("03_simple_mlp.py", "--dtype", dtype, "--seq", "8", "--dim", "64", "--hidden", "128")
    assert "torch.profiler" in text and "fmlp.profile" in text and "Self CPU time total" in text
    assert [kernels(text, "torch"), kernels(text, "fmlp eager"), kernels(text, "fmlp compiled"),
            kernels(text, "fmlp fused")] == [5.0, 5.0, 4.0, 2.0]


def test_linear():
    text = run("02_linear.py", "--batch", "64")
    assert kernels(text, "torch") == 1.0 and kernels(text, "fmlp fused") == 1.0
    assert "aten::addmm" in text and "fmlp::addmm" in text
