#!/usr/bin/env python3
"""Writes tests/data/torch_profiler_cpu_trace.json, a real torch.profiler trace.

Why: `fmlp trace summarize` and `fmlp trace diff` must read traces written by
torch.profiler (Kineto's Chrome trace), not only fmlp's own. This profiles the
tutorial's GeGLU MLP (dim 768, hidden 3072, bf16, no biases) on the CPU with
the usual schedule (wait 1, warmup 1, active 2) and record_shapes, so the
fixture carries ProfilerStep#N spans, nested aten:: ops and input shapes.
It is a CPU-only trace: there are no kernel or cuda_runtime events in it.

Format note: Debian's python3-torch (1.13) is built without Kineto
(torch.autograd.kineto_available() is False), so export_chrome_trace writes
the legacy autograd-profiler form: a bare JSON array (no "traceEvents"
object, no schemaVersion/deviceProperties), every event `ph:"X"` with
pid "CPU functions", tid 1, integer microsecond ts/dur, no "cat", and empty
"args" (record_shapes does not reach this exporter). A reader must accept
both this array form and Kineto's object form; see tests/data/README.md.

Rerun (Debian's PyTorch, `apt-get install python3-torch`):
    /usr/bin/python3 tests/data/make_torch_trace.py [--rows 512] [--out PATH]
Timings differ from run to run; tests must check structure, not durations.
"""
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile, record_function, schedule


class GeGLUMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default=os.path.join(here, "torch_profiler_cpu_trace.json"))
    a = ap.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = GeGLUMLP(768, 3072).to(torch.bfloat16).eval()
    x = torch.randn(a.batch, a.seq, 768).to(torch.bfloat16)

    sched = schedule(wait=1, warmup=1, active=2, repeat=1)
    with torch.inference_mode(), profile(activities=[ProfilerActivity.CPU], record_shapes=True,
                                         schedule=sched) as prof:
        for _ in range(4):
            with record_function("geglu_mlp"):
                model(x)
            prof.step()
    prof.export_chrome_trace(a.out)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=12))
    print("wrote", a.out, os.path.getsize(a.out), "bytes")


if __name__ == "__main__":
    main()
