#!/usr/bin/env python3
"""The tutorial's GeGLU MLP, in PyTorch and in fmlp side by side.

y = down(gelu_tanh(gate(x)) * up(x)): PyTorch eager runs 3 GEMMs, a gelu
and a mul (5 kernels); fmlp runs the same weights in eager (the same 5),
compiled (pointwise fused: 4) and fused (GLU in the GEMM epilogue: 2)
modes. Both profilers' tables are printed, then kernels per step, the time
per forward and the error against PyTorch. The module is written with Hugging
Face's names (gate_proj, up_proj, down_proj, act_fn), so fmlp.MLP.from_torch
and fmlp.patch recognise it as they recognise LlamaMLP or GemmaMLP.

  PYTHONPATH=python FMLP_LIBRARY=build/libfmlp.so python3 examples/03_simple_mlp.py [--device cpu|cuda]
"""
import torch
from torch import nn

import side_by_side as sbs


class GeGLUMLP(nn.Module):
    def __init__(self, dim=768, hidden=3072):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)
        self.act_fn = nn.GELU(approximate="tanh")

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


def main():
    gpu = torch.cuda.is_available()
    a = sbs.parse_args(__doc__, batch=64 if gpu else 1, seq=128, dim=768, hidden=3072)
    torch.manual_seed(0)
    mlp = GeGLUMLP(a.dim, a.hidden).to(device=a.device, dtype=a.torch_dtype)
    x = torch.randn(a.batch, a.seq, a.dim, device=a.device, dtype=a.torch_dtype)
    sbs.compare("GeGLU MLP dim %d hidden %d" % (a.dim, a.hidden), mlp, x, a.device, a.iters)


if __name__ == "__main__":
    main()
