"""Why: every test compares fmlp against the double-precision reference of
the same weights (random inputs, never zeros; outputs poisoned where fmlp
writes into caller memory) with the project's per-dtype bounds; the shared
pieces live here. GPU tests skip with a reason when no GPU is present."""
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (apt-get install python3-torch)")

import fmlp  # noqa: E402

TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}
DTYPES = [torch.float32, torch.bfloat16]
MODES = ["eager", "compiled", "fused", "auto"]


def rel_err(y, ref):
    """||y - ref|| / ||ref|| in double; NaN in y where ref is finite -> inf."""
    y, ref = y.detach().double().cpu(), ref.detach().double().cpu()
    if torch.isnan(y).any() and not torch.isnan(ref).any():
        return float("inf")
    return float((y - ref).norm() / ref.norm())


def reference(module, x):
    """The module computed in float64 on its weights and x as stored."""
    import copy
    m64 = copy.deepcopy(module).to(device="cpu", dtype=torch.float64)
    with torch.no_grad():
        return m64(x.detach().to(device="cpu", dtype=torch.float64))


def tol_for(module, dtype):
    """The dtype's bound per rounded intermediate: a stack of L Linears
    rounds L - 1 of them, everything else one."""
    linears = sum(isinstance(m, torch.nn.Linear) for m in module.modules())
    rounded = linears - 1 if isinstance(module, torch.nn.Sequential) and linears > 2 else 1
    return TOL[dtype] * rounded


def randn(*shape, dtype=torch.float32, device="cpu"):
    x = torch.rand(*shape, dtype=torch.float64) * 2 - 1
    x[x == 0] = 0.5
    return x.to(dtype=dtype, device=device)


class FakeLlamaMLP(torch.nn.Module):
    """transformers' LlamaMLP as it is written: gate_proj, up_proj,
    down_proj and act_fn."""

    def __init__(self, hidden_size, intermediate_size, act=None, bias=False):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=bias)
        self.up_proj = torch.nn.Linear(hidden_size, intermediate_size, bias=bias)
        self.down_proj = torch.nn.Linear(intermediate_size, hidden_size, bias=bias)
        self.act_fn = act if act is not None else torch.nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def have_cuda():
    return torch.cuda.is_available() and fmlp.cuda_device_count() > 0


def cuda_skip_reason():
    if not torch.cuda.is_available():
        return "no GPU: torch.cuda.is_available() is False"
    if fmlp.cuda_device_count() == 0:
        return "libfmlp.so has no CUDA backend or sees no GPU (fmlp.cuda_device_count() == 0)"
    return ""


requires_cuda = pytest.mark.skipif(not have_cuda(), reason=cuda_skip_reason() or "n/a")
