#!/usr/bin/env python3
"""fmlp.patch on a Llama-style decoder stack on the GPU (for the H200).

Why: the package's promise on a GPU is that fmlp.patch(model) keeps a
model's outputs (within 1e-2 normwise in bf16) and that its MLPs cost no
more inside a torch-captured CUDA graph than fmlp's own forward does. This
builds transformers' LlamaModel with random weights (hidden 4096,
intermediate 14336, bf16; a built-in Llama-style stack when transformers
is missing) at each depth of --layers and judges its patched and unpatched
bf16 outputs against the same model run in f32, and one MLP alone against
itself in f32. A check holds when the patched MLP is within 1e-2 and the
patched model within 1e-2 or no further from f32 than torch's own bf16
model is (past a few layers bf16 rounding in attention and norms alone
exceeds 1e-2). Then it times per MLP forward of the deepest model, over
--rows:

  torch graph    the original LlamaMLP, captured with torch.cuda.graph
  patched graph  the patched MLP (fmlp kernels) captured with torch.cuda.graph
  fmlp graph     the same fmlp module through the package with fmlp's own
                 CUDA graph per forward (the C API's forward, graph mode)
  fmlp eager     the same, plain launches
  C auto         with --c-bench BUILD/fmlp_bench_cuda: the C program's own
                 auto forward (patch's mode), L2-warm, same sizes (its MLP
                 is GeGLU, not SwiGLU: the same GEMMs, another epilogue), no
                 Python anywhere

  FMLP_LIBRARY=build/libfmlp.so PYTHONPATH=python python3 bench/python_gpu.py [--layers 1,2,4] [--rows 1,16,128,1024,8192]
"""
import argparse
import json
import subprocess
import sys

import torch
from torch import nn

import fmlp

HIDDEN, INTER = 4096, 14336


class RMSNorm(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        v = x.float().pow(2).mean(-1, keepdim=True)
        return (x.float() * torch.rsqrt(v + 1e-5)).to(x.dtype) * self.weight


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.up_proj = nn.Linear(HIDDEN, INTER, bias=False)
        self.down_proj = nn.Linear(INTER, HIDDEN, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, x):
        return self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, heads=32):
        super().__init__()
        self.heads = heads
        self.input_layernorm, self.post_attention_layernorm = RMSNorm(HIDDEN), RMSNorm(HIDDEN)
        self.q_proj, self.k_proj = nn.Linear(HIDDEN, HIDDEN, bias=False), nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.v_proj, self.o_proj = nn.Linear(HIDDEN, HIDDEN, bias=False), nn.Linear(HIDDEN, HIDDEN, bias=False)
        self.mlp = MLP()

    def forward(self, x):
        b, s, _ = x.shape
        h = self.input_layernorm(x)
        q, k, v = (p(h).view(b, s, self.heads, -1).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        a = nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(a.transpose(1, 2).reshape(b, s, HIDDEN))
        return x + self.mlp(self.post_attention_layernorm(x))


class Stack(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.layers = nn.ModuleList(Layer() for _ in range(n))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return x


def build(layers):
    """(model, forward(x) -> hidden states, its MLP modules, where from)."""
    try:
        from transformers import LlamaConfig, LlamaModel
        cfg = LlamaConfig(hidden_size=HIDDEN, intermediate_size=INTER, num_hidden_layers=layers,
                          num_attention_heads=32, num_key_value_heads=8, vocab_size=1024)
        model = LlamaModel(cfg)
        run = (lambda m, x: m(inputs_embeds=x).last_hidden_state)
        return model, run, "transformers.LlamaModel"
    except ImportError:
        return Stack(layers), (lambda m, x: m(x)), "built-in Llama-style stack (transformers missing)"


def rel(a, b):
    return float((a.double() - b.double()).norm() / b.double().norm())


def graph_time_us(fn, reps):
    """Per-call time of fn replayed in a torch-captured CUDA graph."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return loop_time_us(g.replay, reps)


def loop_time_us(fn, reps):
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    best = float("inf")
    for _ in range(5):
        torch.cuda.synchronize()
        start.record()
        for _ in range(reps):
            fn()
        end.record()
        end.synchronize()
        best = min(best, start.elapsed_time(end) * 1e3 / reps)
    return best


def c_bench_us(exe, rows):
    """{rows: us} of fmlp_bench_cuda's warm auto forward (patch's mode)."""
    out = subprocess.run([exe, "--rows", ",".join(str(r) for r in rows), "--dim", str(HIDDEN), "--hidden",
                          str(INTER)], check=True, capture_output=True, text=True).stdout
    got = {}
    for line in out.splitlines():
        r = json.loads(line)
        if r.get("variant") == "auto" and r.get("l2") == "warm":
            got[r["rows"]] = r["us"]
    return got


def check(layers, seq):
    """Builds a `layers`-deep model; prints and returns the normwise errors of
    its patched and unpatched bf16 outputs against its f32 twin, and the
    model, its forward, its original and its patched MLPs."""
    torch.manual_seed(0)
    # built on the GPU in bf16 directly: a 4-layer stack is 0.9 G parameters
    torch.set_default_dtype(torch.bfloat16)
    with torch.device("cuda"):
        model, run, origin = build(layers)
    torch.set_default_dtype(torch.float32)
    model = model.to(device="cuda", dtype=torch.bfloat16).eval()
    mlps = [m for m in model.modules() if type(m).__name__.endswith("MLP")]
    x = torch.randn(1, seq, HIDDEN, device="cuda", dtype=torch.bfloat16)
    with torch.inference_mode():
        want = run(model, x)
        # the same model in f32 (bf16 -> f32 -> bf16 is exact): the output
        # both bf16 runs are judged against
        ref = run(model.float(), x.float())
        model.to(torch.bfloat16)
        # one MLP alone, on the same bf16 input, against itself in f32
        xm = torch.randn(seq, HIDDEN, device="cuda", dtype=torch.bfloat16)
        m_want = mlps[0](xm)
        m_ref = mlps[0].float()(xm.float())
        mlps[0].to(torch.bfloat16)
        replaced = fmlp.patch(model)
        got = run(model, x)
        patched = [m for m in model.modules() if type(m).__name__ == "PatchedMLP"]
        m_got = patched[0](xm)
    e = dict(layers=layers, patched=rel(got, ref), unpatched=rel(want, ref), patched_vs_unpatched=rel(got, want),
             mlp_patched=rel(m_got, m_ref), mlp_unpatched=rel(m_want, m_ref))
    e["ok"] = e["patched"] <= max(1e-2, e["unpatched"]) and e["mlp_patched"] <= 1e-2
    print("%s, %d layers, hidden %d, intermediate %d, bf16, torch %s, %s; patched %d MLPs" % (
        origin, layers, HIDDEN, INTER, torch.__version__, torch.cuda.get_device_name(), len(replaced)))
    print("  normwise error against the f32 model: patched %.2e, unpatched bf16 %.2e, patched vs unpatched %.2e; "
          "one MLP against itself in f32: patched %.2e, unpatched %.2e; %s" % (
              e["patched"], e["unpatched"], e["patched_vs_unpatched"], e["mlp_patched"], e["mlp_unpatched"],
              "ok" if e["ok"] else "FAIL"))
    return e, model, origin, mlps, patched


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--layers", default="1,2,4", help="depths checked; the last is timed")
    ap.add_argument("--rows", default="1,16,128,1024,8192")
    ap.add_argument("--seq", type=int, default=64, help="tokens for the output check")
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json", default=None)
    ap.add_argument("--c-bench", default=None, help="fmlp_bench_cuda, for the C program's own forward time")
    a = ap.parse_args()
    if not torch.cuda.is_available() or fmlp.cuda_device_count() == 0:
        print("skipped: bench/python_gpu.py needs a GPU and a libfmlp.so built with CUDA")
        return 77
    checks = []
    for layers in [int(n) for n in a.layers.split(",")]:
        model = mlps = patched = None
        torch.cuda.empty_cache()
        e, model, origin, mlps, patched = check(layers, a.seq)
        checks.append(e)
    f = patched[0].fmlp
    rows_out = []
    row_list = [int(r) for r in a.rows.split(",")]
    c_us = c_bench_us(a.c_bench, row_list) if a.c_bench else {}
    print("\n%8s %14s %14s %14s %14s %14s   (us per MLP forward)" % ("rows", "torch graph", "patched graph",
                                                                        "fmlp graph", "fmlp eager", "C auto"))
    with torch.inference_mode():
        for rows in row_list:
            xs = torch.randn(rows, HIDDEN, device="cuda", dtype=torch.bfloat16)
            t_torch = graph_time_us(lambda: [m(xs) for m in mlps], a.reps) / len(mlps)
            t_patch = graph_time_us(lambda: [p(xs) for p in patched], a.reps) / len(patched)
            f.graph = False
            t_eager = loop_time_us(lambda: f(xs), a.reps)
            f.graph = True
            t_own = loop_time_us(lambda: f(xs), a.reps)
            f.graph = False
            t_c = c_us.get(rows, float("nan"))
            rows_out.append(dict(rows=rows, torch_graph_us=t_torch, patched_graph_us=t_patch, fmlp_graph_us=t_own,
                                 fmlp_eager_us=t_eager, c_auto_us=t_c, plan=f.plan(rows).resolved))
            print("%8d %14.1f %14.1f %14.1f %14.1f %14.1f   %s" % (rows, t_torch, t_patch, t_own, t_eager, t_c,
                                                                 rows_out[-1]["plan"]))
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(origin=origin, checks=checks, torch=torch.__version__, gpu=torch.cuda.get_device_name(),
                           results=rows_out), fh, indent=1)
    return 0 if all(e["ok"] for e in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
