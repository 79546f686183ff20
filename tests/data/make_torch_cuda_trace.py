# Why: `fmlp trace summarize` must read Kineto traces with GPU work too
# (cuda_runtime launches, kernels on streams, ac2g flows, External id and
# correlation joins). This records the tutorial's GeGLU MLP (dim 768, hidden
# 3072, bf16, 4 x 128 tokens) with torch.profiler on a CUDA GPU, schedule
# wait 1 / warmup 1 / active 2, and writes torch_profiler_cuda_trace.json.gz.
# Run: python3 make_torch_cuda_trace.py [OUT_DIR]   (needs a CUDA build of torch)
import gzip
import os
import shutil
import sys

import torch
import torch.nn.functional as F


class GeGLU(torch.nn.Module):
    def __init__(self, dim=768, hidden=3072):
        super().__init__()
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
    torch.manual_seed(0)
    model = GeGLU().cuda().to(torch.bfloat16)
    x = torch.randn(4, 128, 768, device="cuda", dtype=torch.bfloat16)
    raw = os.path.join(out_dir, "torch_profiler_cuda_trace.json")

    def ready(prof):
        prof.export_chrome_trace(raw)

    acts = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    sched = torch.profiler.schedule(wait=1, warmup=1, active=2, repeat=1)
    with torch.no_grad(), torch.profiler.profile(activities=acts, schedule=sched, on_trace_ready=ready,
                                                 record_shapes=True, with_flops=True) as prof:
        for _ in range(4):
            with torch.profiler.record_function("geglu_mlp"):
                model(x)
            torch.cuda.synchronize()
            prof.step()
    with open(raw, "rb") as f, gzip.open(raw + ".gz", "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)
    os.remove(raw)
    print("wrote", raw + ".gz", torch.__version__, torch.cuda.get_device_name(0))


if __name__ == "__main__":
    main()
