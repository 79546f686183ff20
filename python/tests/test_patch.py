"""fmlp.patch on a small transformers-style model: every MLP submodule is
replaced, nothing else is, the outputs match the original's within the
dtype's bound, state_dict() reads as before, and unpatch restores the very
same modules."""
import pytest
from conftest import DTYPES, FakeLlamaMLP, randn, rel_err, torch

import fmlp

nn = torch.nn


class FakeAttention(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.q_proj = nn.Linear(d, d, bias=False)
        self.o_proj = nn.Linear(d, d, bias=False)

    def forward(self, x):
        return self.o_proj(torch.tanh(self.q_proj(x)))


class FakeDecoderLayer(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.self_attn = FakeAttention(d)
        self.mlp = FakeLlamaMLP(d, h)

    def forward(self, x):
        x = x + self.self_attn(x)
        return x + self.mlp(x)


class FakeModel(nn.Module):
    def __init__(self, d=48, h=80, n=3):
        super().__init__()
        self.embed = nn.Linear(d, d)
        self.layers = nn.ModuleList(FakeDecoderLayer(d, h) for _ in range(n))
        self.head = nn.Sequential(nn.Linear(d, h), nn.GELU(approximate="tanh"), nn.Linear(h, d))

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


class FakeForCausalLM(nn.Module):
    def __init__(self):
        super().__init__()
        self.model = FakeModel()

    def forward(self, x):
        return self.model(x)


@pytest.mark.parametrize("dtype", DTYPES, ids=["f32", "bf16"])
def test_patch_and_unpatch(dtype):
    torch.manual_seed(4)
    model = FakeForCausalLM().to(dtype).eval()
    x = randn(2, 5, 48, dtype=dtype)
    with torch.inference_mode():
        want = model(x)
    want64 = FakeForCausalLM().double().eval()
    want64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    with torch.inference_mode():
        ref = want64(x.double())
    keys = list(model.state_dict())
    originals = [model.model.layers[i].mlp for i in range(3)]
    replaced = fmlp.patch(model, mode="fused")
    assert sorted(replaced) == ["model.head", "model.layers.0.mlp", "model.layers.1.mlp", "model.layers.2.mlp"]
    assert replaced["model.layers.1.mlp"] is originals[1]
    assert isinstance(model.model.layers[0].self_attn.q_proj, nn.Linear), "attention Linears are left alone"
    assert type(model.model.layers[0].mlp).__name__ == "PatchedMLP"
    assert list(model.state_dict()) == keys
    with torch.inference_mode():
        got = model(x)
    bound = {torch.float32: 1e-5, torch.bfloat16: 1e-2}[dtype] * 4
    assert rel_err(got, ref) <= bound
    assert rel_err(want, ref) <= bound
    assert fmlp.patch(model) == {}, "patching again finds nothing new"
    restored = fmlp.unpatch(model)
    assert sorted(restored) == sorted(replaced)
    assert all(model.model.layers[i].mlp is originals[i] for i in range(3))
    with torch.inference_mode():
        assert torch.equal(model(x), want)


def test_patch_needs_a_model_around_the_mlp():
    with pytest.raises(fmlp.InvalidArgument, match="from_torch"):
        fmlp.patch(FakeLlamaMLP(8, 16))


def test_patch_is_all_or_nothing():
    class QuickGELU(nn.Module):
        def forward(self, x):
            return x * torch.sigmoid(1.702 * x)

    model = FakeModel()
    model.layers[2].mlp.act_fn = QuickGELU()
    before = [layer.mlp for layer in model.layers]
    with pytest.raises(fmlp.Unsupported, match="layers.2.mlp"):
        fmlp.patch(model)
    assert [layer.mlp for layer in model.layers] == before


def test_patched_forward_only_under_grad():
    model = FakeModel()
    fmlp.patch(model)
    x = randn(2, 48)
    with pytest.raises(fmlp.Unsupported, match="no_grad"):
        model(x)  # the embedding's output requires grad
    with torch.no_grad():
        assert model(x).shape == (2, 48)
