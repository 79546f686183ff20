"""On a GPU: parity per block x dtype x mode, forwards on torch's current
stream (a non-default one), capture inside torch.cuda.graph and replay,
device errors, and the real transformers MLP classes when transformers is
importable. Every test here skips, saying why, without a GPU."""
import pytest
from conftest import MODES, FakeLlamaMLP, randn, reference, rel_err, requires_cuda, torch

import fmlp

nn = torch.nn
pytestmark = requires_cuda
CUDA_DTYPES = [torch.float32, torch.bfloat16, torch.float16]
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def blocks():
    return {
        "linear": nn.Linear(256, 96),
        "swiglu": FakeLlamaMLP(256, 512),
        "geglu_bias": FakeLlamaMLP(256, 512, act=nn.GELU(approximate="tanh"), bias=True),
        "stack3_gelu": nn.Sequential(nn.Linear(256, 384), nn.GELU(), nn.Linear(384, 384), nn.GELU(),
                                     nn.Linear(384, 128)),
    }


@pytest.mark.parametrize("dtype", CUDA_DTYPES, ids=["f32", "bf16", "f16"])
@pytest.mark.parametrize("name", sorted(blocks()))
def test_cuda_parity(name, dtype):
    torch.manual_seed(7)
    module = blocks()[name].to(device="cuda", dtype=dtype)
    f = fmlp.MLP.from_torch(module)
    assert f.device == "cuda:%d" % torch.cuda.current_device()
    tol = TOL[dtype] * (2 if "stack3" in name else 1)
    for rows in (1, 37, 300):
        x = randn(rows, 256, dtype=dtype, device="cuda")
        ref = reference(module, x)
        for mode in MODES:
            with torch.inference_mode():
                y = f(x, mode=mode)
            assert y.is_cuda and y.dtype == dtype
            err = rel_err(y, ref)
            assert err <= tol, "%s %s %s rows=%d: %.2e" % (name, dtype, mode, rows, err)


def test_cuda_zero_copy_and_leading_dims():
    module = FakeLlamaMLP(128, 256).cuda().to(torch.bfloat16)
    f = fmlp.MLP.from_torch(module)
    big = randn(3, 9, 160, dtype=torch.bfloat16, device="cuda")
    x = big[:, :, :128]
    seen = []
    real = fmlp.modules._forward

    def spy(h, mode, bx, by):
        seen.append((bx._obj.data, bx._obj.ld, by._obj.data))
        return real(h, mode, bx, by)

    fmlp.modules._forward = spy
    try:
        with torch.inference_mode():
            y = f(x)
    finally:
        fmlp.modules._forward = real
    assert seen == [(x.data_ptr(), 160, y.data_ptr())]
    assert y.shape == (3, 9, 128) and rel_err(y, reference(module, x)) <= 1e-2


def test_current_stream_is_used():
    module = FakeLlamaMLP(512, 1024).cuda().to(torch.bfloat16)
    f = fmlp.MLP.from_torch(module, mode="eager")
    s = torch.cuda.Stream()
    ctx = f.context
    with torch.inference_mode(), torch.cuda.stream(s):
        # x is produced on s and y consumed on s: only stream order keeps them right
        for _ in range(5):
            x = randn(64, 512, dtype=torch.bfloat16, device="cuda") * 1.5
            x.mul_(2.0)
            y = f(x)
            assert ctx.stream == s.cuda_stream, "fmlp must enqueue on torch's current stream"
            z = y * 1.0
        s.synchronize()
    assert rel_err(z, reference(module, x)) <= 1e-2
    with torch.inference_mode():
        f(randn(2, 512, dtype=torch.bfloat16, device="cuda"))
    # torch's default stream is the legacy NULL stream: fmlp is handed cudaStreamLegacy (1) for it
    assert ctx.stream == (torch.cuda.current_stream().cuda_stream or 1)


@pytest.mark.parametrize("error_mode", ["global", "thread_local"])
@pytest.mark.parametrize("graph", [False, True], ids=["plain", "fmlp_graph_on"])
def test_capture_inside_torch_cuda_graph(graph, error_mode):
    torch.manual_seed(3)
    module = FakeLlamaMLP(256, 768, act=nn.GELU(approximate="tanh")).cuda().to(torch.bfloat16)
    f = fmlp.MLP.from_torch(module, mode="fused", graph=graph)
    static_x = randn(16, 256, dtype=torch.bfloat16, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.inference_mode():
        with torch.cuda.stream(side):  # warm-up (workspace, plans) off the capture, as torch advises
            for _ in range(3):
                f(static_x)
        torch.cuda.current_stream().wait_stream(side)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g, capture_error_mode=error_mode):
            static_y = f(static_x)
        for _ in range(3):
            x = randn(16, 256, dtype=torch.bfloat16, device="cuda")
            static_x.copy_(x)
            static_y.fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            assert rel_err(static_y, reference(module, x)) <= 1e-2, "replay must recompute from the new x"


def test_cpu_tensor_to_cuda_module():
    f = fmlp.MLP.from_torch(FakeLlamaMLP(64, 128).cuda())
    with pytest.raises(fmlp.InvalidArgument, match="cuda"):
        with torch.inference_mode():
            f(randn(2, 64))
    cpu = fmlp.MLP.from_torch(FakeLlamaMLP(64, 128))
    with pytest.raises(fmlp.InvalidArgument, match="cpu"):
        with torch.inference_mode():
            cpu(randn(2, 64, device="cuda"))


def test_module_moved_by_device_argument():
    module = FakeLlamaMLP(64, 128)
    f = fmlp.MLP.from_torch(module, device="cuda")
    x = randn(3, 64)
    with torch.inference_mode():
        assert rel_err(f(x.cuda()), reference(module, x)) <= 1e-5


def test_cuda_profile():
    f = fmlp.MLP.from_torch(FakeLlamaMLP(256, 512).cuda().to(torch.bfloat16), mode="eager")
    x = randn(8, 256, dtype=torch.bfloat16, device="cuda")
    with torch.inference_mode(), fmlp.profile(activities=[fmlp.ProfilerActivity.CPU, fmlp.ProfilerActivity.CUDA],
                                              schedule=fmlp.schedule(wait=1, warmup=1, active=2, repeat=1),
                                              contexts=[f.context]) as prof:
        for _ in range(5):
            f(x)
            prof.step()
    table = prof.key_averages().table(sort_by="self_cuda_time_total")
    assert "Self CUDA" in table
    assert prof.summary().kernels_per_step == len(f.plan(8, "eager"))


TRANSFORMERS = ["LlamaMLP", "Qwen2MLP", "GemmaMLP", "MistralMLP"]


@pytest.mark.parametrize("cls", TRANSFORMERS)
def test_transformers_classes(cls):
    transformers = pytest.importorskip("transformers", reason="transformers is not installed")
    family = {"LlamaMLP": "llama", "Qwen2MLP": "qwen2", "GemmaMLP": "gemma", "MistralMLP": "mistral"}[cls]
    mod = pytest.importorskip("transformers.models.%s.modeling_%s" % (family, family))
    cfg_cls = getattr(transformers, {"llama": "LlamaConfig", "qwen2": "Qwen2Config", "gemma": "GemmaConfig",
                                     "mistral": "MistralConfig"}[family])
    cfg = cfg_cls(hidden_size=256, intermediate_size=704)
    if family == "gemma":
        cfg.hidden_activation = "gelu_pytorch_tanh"
    torch.manual_seed(11)
    module = getattr(mod, cls)(cfg).cuda().to(torch.bfloat16)
    f = fmlp.MLP.from_torch(module)
    assert f.act == ("gelu_tanh" if family == "gemma" else "silu")
    x = randn(2, 7, 256, dtype=torch.bfloat16, device="cuda")
    with torch.inference_mode():
        assert rel_err(f(x), reference(module, x)) <= 1e-2
        assert rel_err(module(x), reference(module, x)) <= 1e-2
