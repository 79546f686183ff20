"""Every bad input is an fmlp.Error subclass carrying a message that says
what was wrong and what to do; none of them crashes the interpreter."""
import subprocess
import sys

import numpy as np
import pytest
from conftest import FakeLlamaMLP, randn, torch

import fmlp

nn = torch.nn


@pytest.fixture
def f():
    return fmlp.MLP.from_torch(FakeLlamaMLP(16, 24))


def test_hierarchy():
    for cls in (fmlp.InvalidArgument, fmlp.ShapeError, fmlp.OutOfMemory, fmlp.FileError, fmlp.FormatError,
                fmlp.Unsupported, fmlp.NoDevice, fmlp.DeviceError):
        assert issubclass(cls, fmlp.Error)
    assert issubclass(fmlp.ShapeError, ValueError) and issubclass(fmlp.FileError, OSError)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float64, torch.int32])
def test_wrong_dtype(f, dtype):
    with pytest.raises(fmlp.InvalidArgument, match="f32"):
        with torch.inference_mode():
            f(randn(2, 16).to(dtype))


def test_wrong_dim(f):
    with pytest.raises(fmlp.ShapeError, match="takes 16"):
        f(randn(2, 15))
    with pytest.raises(fmlp.ShapeError, match="0-dimensional"):
        f(torch.tensor(1.0))


def test_non_contiguous_last_dim(f):
    x = randn(16, 4).t()
    with pytest.raises(fmlp.ShapeError, match="contiguous"):
        f(x)


def test_broadcast_rows_are_refused_by_the_library(f):
    x = randn(1, 16).expand(4, 16)  # row stride 0
    with pytest.raises(fmlp.ShapeError, match="row stride 0"):
        with torch.inference_mode():
            f(x)


def test_requires_grad_outside_no_grad(f):
    x = randn(2, 16).requires_grad_()
    with pytest.raises(fmlp.Unsupported, match="no_grad"):
        f(x)
    with torch.no_grad():
        assert f(x).shape == (2, 16)
    with torch.inference_mode():
        assert f(x).shape == (2, 16)


def test_not_a_tensor(f):
    with pytest.raises(fmlp.InvalidArgument, match="list"):
        f([[1.0] * 16])


def test_meta_tensor_has_no_data(f):
    with pytest.raises(fmlp.InvalidArgument):
        f(torch.empty(2, 16, device="meta"))


def test_numpy_wrong_dtype(f):
    with pytest.raises(fmlp.InvalidArgument, match="float32"):
        f(np.ones((2, 16)))


def test_closed_module(f):
    f.close()
    assert f.closed and "closed" in repr(f)
    with pytest.raises(fmlp.InvalidArgument, match="closed"):
        f(randn(2, 16))
    with pytest.raises(fmlp.InvalidArgument, match="closed"):
        f.plan(2)
    f.close()


def test_bad_mode(f):
    with pytest.raises(fmlp.InvalidArgument, match="mode"):
        f(randn(1, 16), mode="turbo")
    with pytest.raises(fmlp.InvalidArgument, match="mode"):
        fmlp.MLP.from_torch(FakeLlamaMLP(16, 24), mode="fast")


def test_f16_on_the_cpu_is_refused_with_the_librarys_message():
    with pytest.raises(fmlp.Unsupported) as e:
        fmlp.MLP.from_torch(FakeLlamaMLP(16, 24).half())
    assert "f16" in str(e.value)


class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


@pytest.mark.parametrize("module, match", [
    (FakeLlamaMLP(16, 24, act=QuickGELU()), "QuickGELU"),
    (nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 24), nn.GELU(), nn.Linear(24, 8)), "mixes"),
    (nn.Sequential(nn.Linear(16, 24), nn.ReLU()), "Linear, act, Linear"),
    (nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 32), nn.ReLU(), nn.Linear(32, 8)), "hidden width"),
    (nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 8, bias=False)), "bias"),
    (nn.Conv1d(3, 3, 1), "not a module fmlp runs"),
])
def test_unsupported_modules(module, match):
    with pytest.raises(fmlp.Unsupported, match=match):
        fmlp.MLP.from_torch(module)


def test_mixed_dtypes():
    m = FakeLlamaMLP(16, 24)
    m.down_proj.to(torch.bfloat16)
    with pytest.raises(fmlp.InvalidArgument, match="mix"):
        fmlp.MLP.from_torch(m)


def test_bad_device():
    with pytest.raises(fmlp.InvalidArgument, match="device"):
        fmlp.context("tpu")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error on a machine without a GPU")
def test_cuda_module_without_a_gpu():
    with pytest.raises((fmlp.NoDevice, fmlp.Unsupported)) as e:
        fmlp.MLP(16, 24, device="cuda")
    assert str(e.value)


def test_set_weight_errors(f):
    with pytest.raises(fmlp.InvalidArgument, match="gate_proj.weight"):
        f.set_weight("gate.weight", torch.zeros(24, 16))
    with pytest.raises(fmlp.ShapeError):
        f.set_weight("gate_proj.weight", torch.zeros(16, 24))


def test_import_without_torch_or_numpy():
    code = ("import sys; sys.modules['torch'] = None; sys.modules['numpy'] = None\n"
            "import fmlp\n"
            "m = fmlp.MLP(8, 16, act='silu')\n"
            "print(m.plan(2).resolved, m.context.threads > 0)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "True"
