"""fmlp modules built from torch modules compute what the torch modules
compute: every supported block x dtype (f32, bf16) x mode on the CPU,
against the float64 reference, with torch's own output checked against the
same reference so the reference itself is right."""
import pytest
from conftest import DTYPES, MODES, FakeLlamaMLP, randn, reference, rel_err, tol_for, torch

import fmlp

nn = torch.nn


class GELUTanh(nn.Module):
    """Named as transformers.activations names its tanh GELU."""

    def forward(self, x):
        return nn.functional.gelu(x, approximate="tanh")


class NewGELUActivation(GELUTanh):
    pass


class SiLUActivation(nn.Module):
    def forward(self, x):
        return nn.functional.silu(x)


BLOCKS = {
    "linear": lambda: nn.Linear(40, 24),
    "linear_nobias": lambda: nn.Linear(40, 24, bias=False),
    "swiglu": lambda: FakeLlamaMLP(40, 72),
    "swiglu_bias": lambda: FakeLlamaMLP(40, 72, bias=True),
    "geglu_nn": lambda: FakeLlamaMLP(40, 72, act=nn.GELU(approximate="tanh")),
    "geglu_transformers": lambda: FakeLlamaMLP(40, 72, act=GELUTanh()),
    "geglu_newgelu": lambda: FakeLlamaMLP(40, 72, act=NewGELUActivation()),
    "silu_transformers": lambda: FakeLlamaMLP(40, 72, act=SiLUActivation()),
    "gated_gelu_exact": lambda: FakeLlamaMLP(40, 72, act=nn.GELU()),
    "gated_relu": lambda: FakeLlamaMLP(40, 72, act=nn.ReLU()),
    "stack2_gelu": lambda: nn.Sequential(nn.Linear(40, 72), nn.GELU(), nn.Linear(72, 24)),
    "stack3_relu": lambda: nn.Sequential(nn.Linear(40, 72), nn.ReLU(), nn.Linear(72, 72), nn.ReLU(),
                                         nn.Linear(72, 24)),
    "stack2_silu_nobias": lambda: nn.Sequential(nn.Linear(40, 72, bias=False), nn.SiLU(),
                                                nn.Linear(72, 40, bias=False)),
    "stack2_tanh_dropout": lambda: nn.Sequential(nn.Linear(40, 72), nn.GELU(approximate="tanh"),
                                                 nn.Dropout(0.1), nn.Linear(72, 24)).eval(),
}


def _init(module):
    # Biases away from zero so a dropped bias cannot pass.
    for p in module.parameters():
        with torch.no_grad():
            p.uniform_(0.05, 0.3) if p.dim() == 1 else None
    return module


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
@pytest.mark.parametrize("block", sorted(BLOCKS))
def test_parity_every_mode(block, dtype):
    torch.manual_seed(hash(block) % 1000)
    module = _init(BLOCKS[block]()).to(dtype)
    f = fmlp.MLP.from_torch(module)
    assert f.dtype == {torch.float32: "f32", torch.bfloat16: "bf16"}[dtype]
    tol = tol_for(module, dtype)
    for rows in (1, 3, 17):
        x = randn(rows, 40, dtype=dtype)
        ref = reference(module, x)
        with torch.no_grad():
            mine = module(x)
        assert rel_err(mine, ref) <= tol, "the reference disagrees with torch itself"
        for mode in MODES:
            with torch.inference_mode():
                y = f(x, mode=mode)
            assert y.dtype == dtype and y.shape == ref.shape
            err = rel_err(y, ref)
            assert err <= tol, "%s %s rows=%d: err %.2e > %.0e" % (block, mode, rows, err, tol)


def test_linear_from_torch_is_a_linear():
    lin = nn.Linear(12, 20)
    f = fmlp.Linear.from_torch(lin)
    assert isinstance(f, fmlp.Linear) and (f.in_features, f.out_features) == (12, 20)
    assert isinstance(fmlp.MLP.from_torch(lin), fmlp.Linear)
    with pytest.raises(fmlp.InvalidArgument, match="nn.Linear"):
        fmlp.Linear.from_torch(FakeLlamaMLP(8, 16))


def test_mode_attribute_and_plan():
    f = fmlp.MLP.from_torch(FakeLlamaMLP(40, 72, act=nn.GELU(approximate="tanh")), mode="eager")
    assert f.mode == "eager" and f.act == "gelu_tanh" and f.block == "gated"
    assert len(f.plan(4)) == 5
    f.mode = "fused"
    assert f.plan(4).resolved == "fused" and len(f.plan(4)) <= 2
    assert "kernels" in str(f.plan(4))


def test_weights_are_the_modules_own():
    module = FakeLlamaMLP(16, 24, bias=True)
    f = fmlp.MLP.from_torch(module)
    for name, t in module.state_dict().items():
        assert torch.equal(f.get_weight(name), t.float()), name


def test_random_mlp_matches_its_c_reference():
    f = fmlp.MLP(24, 40, act="silu", dtype="f32", seed=3)
    x = randn(5, 24)
    with torch.inference_mode():
        y = f(x)
    ref = torch.from_numpy(f.reference(x.numpy()))
    assert rel_err(y, ref) <= 1e-5


def test_safetensors_round_trip(tmp_path):
    module = _init(FakeLlamaMLP(40, 72, act=nn.GELU(approximate="tanh"), bias=True)).to(torch.bfloat16)
    f = fmlp.MLP.from_torch(module)
    path = tmp_path / "model.safetensors"
    f.save_safetensors(path, prefix="model.layers.0.mlp.")
    g = fmlp.MLP.from_safetensors(path, prefix="model.layers.0.mlp.", act="gelu_tanh")
    assert (g.dim, g.hidden, g.bias, g.dtype) == (40, 72, True, "bf16")
    x = randn(7, 40, dtype=torch.bfloat16)
    with torch.inference_mode():
        assert rel_err(g(x), reference(module, x)) <= 1e-2
    with pytest.raises(fmlp.InvalidArgument, match="act="):
        fmlp.MLP.from_safetensors(path, prefix="model.layers.0.mlp.")
    with pytest.raises(fmlp.FormatError):
        fmlp.MLP.from_safetensors(path, prefix="model.layers.9.mlp.", act="silu")
    with pytest.raises(fmlp.FileError):
        fmlp.MLP.from_safetensors(tmp_path / "missing.safetensors", act="silu")


def test_safetensors_saved_by_pytorch():
    import os
    data = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "geglu_f32.safetensors")
    if not os.path.exists(data):
        pytest.skip("tests/data/geglu_f32.safetensors is not in this tree")
    f = fmlp.MLP.from_safetensors(data, act="gelu_tanh")
    module = FakeLlamaMLP(f.dim, f.hidden, act=nn.GELU(approximate="tanh"), bias=f.bias)
    for name, _ in module.state_dict().items():
        module.state_dict()[name].copy_(f.get_weight(name))
    x = randn(3, f.dim)
    with torch.inference_mode():
        assert rel_err(f(x), reference(module, x)) <= 1e-5
