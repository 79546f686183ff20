"""How a call treats its tensors: zero-copy on both sides (fmlp gets
torch's own data pointers and writes into the tensor it returns), leading
dims kept, any row stride, numpy on the CPU, many threads on one module."""
import ctypes
import threading

import numpy as np
import pytest
from conftest import FakeLlamaMLP, randn, reference, rel_err, torch

import fmlp
import fmlp.modules

nn = torch.nn


@pytest.fixture
def geglu():
    torch.manual_seed(1)
    module = FakeLlamaMLP(32, 48, act=nn.GELU(approximate="tanh"))
    return module, fmlp.MLP.from_torch(module, mode="fused")


@pytest.fixture
def spy(monkeypatch):
    """Records the fmlp_tensor structs each forward receives."""
    seen = []
    real = fmlp.modules._forward

    def forward(h, mode, bx, by):
        x, y = bx._obj, by._obj
        seen.append(dict(x=(x.data, x.rows, x.cols, x.ld), y=(y.data, y.rows, y.cols, y.ld)))
        return real(h, mode, bx, by)

    monkeypatch.setattr(fmlp.modules, "_forward", forward)
    return seen


def test_zero_copy_both_sides(geglu, spy):
    module, f = geglu
    x = randn(5, 32)
    with torch.inference_mode():
        y = f(x)
    assert len(spy) == 1
    assert spy[0]["x"] == (x.data_ptr(), 5, 32, 32), "fmlp must read torch's own x"
    assert spy[0]["y"] == (y.data_ptr(), 5, 32, 32), "fmlp must write the tensor it returns"
    assert y.is_contiguous() and y.storage_offset() == 0
    assert rel_err(y, reference(module, x)) <= 1e-5


def test_row_strided_view_is_not_copied(geglu, spy):
    module, f = geglu
    big = randn(6, 80)
    x = big[1:, 8:40]  # rows 80 elements apart
    with torch.inference_mode():
        y = f(x)
    assert spy[0]["x"] == (x.data_ptr(), 5, 32, 80)
    assert rel_err(y, reference(module, x)) <= 1e-5


@pytest.mark.parametrize("shape", [(32,), (1, 32), (2, 3, 32), (2, 1, 3, 32), (0, 32), (4, 0, 32)])
def test_leading_dims_kept(geglu, shape):
    module, f = geglu
    x = randn(*shape) if 0 not in shape else torch.empty(shape)
    with torch.inference_mode():
        y = f(x)
    assert y.shape == shape[:-1] + (32,)
    if y.numel():
        assert rel_err(y, reference(module, x)) <= 1e-5


def test_leading_dims_of_one_stride(geglu, spy):
    module, f = geglu
    base = randn(4, 6, 40)
    x = base[:, 1:4, :32]  # (4, 3, 32) rows strided 40, batches 240: not one stride
    with pytest.raises(fmlp.ShapeError, match="contiguous"):
        f(x)
    x = base[:, :, :32]  # (4, 6, 32): rows 40 apart, batches 6 rows apart
    with torch.inference_mode():
        y = f(x)
    assert spy[-1]["x"] == (x.data_ptr(), 24, 32, 40)
    assert y.shape == (4, 6, 32) and rel_err(y, reference(module, x)) <= 1e-5


def test_out_dim_other_than_dim():
    module = nn.Sequential(nn.Linear(32, 48), nn.ReLU(), nn.Linear(48, 20))
    f = fmlp.MLP.from_torch(module)
    x = randn(2, 3, 32)
    with torch.inference_mode():
        y = f(x)
    assert y.shape == (2, 3, 20) and rel_err(y, reference(module, x)) <= 1e-5


def test_numpy_on_the_cpu(geglu):
    module, f = geglu
    x = randn(2, 4, 32).numpy()
    y = f(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (2, 4, 32)
    assert rel_err(torch.from_numpy(y), reference(module, torch.from_numpy(x))) <= 1e-5
    strided = np.asarray(randn(3, 50).numpy())[:, 5:37]
    assert rel_err(torch.from_numpy(f(strided)), reference(module, torch.from_numpy(strided))) <= 1e-5


def test_numpy_zero_copy(geglu, spy):
    _, f = geglu
    x = randn(3, 32).numpy()
    y = f(x)
    assert spy[0]["x"][0] == x.ctypes.data and spy[0]["y"][0] == y.ctypes.data


def test_nan_propagates(geglu):
    _, f = geglu
    x = randn(3, 32)
    x[1, 5] = float("nan")
    with torch.inference_mode():
        y = f(x)
    assert torch.isnan(y[1]).any() and not torch.isnan(y[0]).any() and not torch.isnan(y[2]).any()


def test_threads_share_one_module(geglu):
    module, f = geglu
    xs = [randn(7, 32) for _ in range(8)]
    with torch.inference_mode():
        want = [f(x) for x in xs]
    bad, done = [], []

    def work(i):
        with torch.inference_mode():
            for k in range(40):
                x = xs[(i + k) % len(xs)]
                y = f(x)
                if not torch.equal(y, want[(i + k) % len(xs)]):
                    bad.append((i, k))
        done.append(i)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(done) == 6 and not bad, "concurrent calls must give the single-thread results bit for bit"


def test_close_while_calls_run(geglu):
    _, f = geglu
    x = randn(64, 32)
    stop = []

    def work():
        with torch.inference_mode():
            while not stop:
                try:
                    f(x)
                except fmlp.InvalidArgument:
                    return

    t = threading.Thread(target=work)
    t.start()
    f.close()
    stop.append(1)
    t.join()
    with pytest.raises(fmlp.InvalidArgument, match="closed"):
        f(x)


def test_byref_objects_are_tensors():
    # the spy above relies on ctypes' byref keeping the struct in _obj
    t = fmlp._lib.Tensor()
    assert ctypes.byref(t)._obj is t
