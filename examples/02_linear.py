#!/usr/bin/env python3
"""The tutorial's nn.Linear, in PyTorch and in fmlp side by side.

"Profiling in PyTorch (Part 2)" starts from one nn.Linear: y = x @ W.T + b,
which PyTorch runs as aten::linear -> aten::addmm, one GEMM kernel with the
bias folded in. fmlp.Linear.from_torch runs the same weights; both
profilers' tables are printed, then kernels per step and the time per
forward. Runs on the CPU (Debian's torch 1.13) or a GPU:

  PYTHONPATH=python FMLP_LIBRARY=build/libfmlp.so python3 examples/02_linear.py [--device cpu|cuda]
"""
import torch

import side_by_side as sbs


def main():
    a = sbs.parse_args(__doc__, batch=1024, in_dim=32, out_dim=64)
    torch.manual_seed(0)
    layer = torch.nn.Linear(a.in_dim, a.out_dim).to(device=a.device, dtype=a.torch_dtype)
    x = torch.randn(a.batch, a.in_dim, device=a.device, dtype=a.torch_dtype)
    sbs.compare("nn.Linear(%d, %d)" % (a.in_dim, a.out_dim), layer, x, a.device, a.iters, modes=("eager", "fused"))


if __name__ == "__main__":
    main()
