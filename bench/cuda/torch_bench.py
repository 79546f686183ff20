"""Why: the PyTorch peers of bench_cuda.c, measured the same way on the same
machine in the same run: the tutorial GeGLU (768 -> 3072 -> 768, bf16, no
bias) in eager, torch.compile, eager captured in a CUDA graph, and what a
PyTorch user writes by hand for speed (gate and up merged into one GEMM,
gelu*mul compiled into one kernel, the whole captured in a graph), L2-warm
(one set of weights) and L2-cold (rotating through copies of the weights
holding at least 512 MB, as bench_cuda.c does).
Also measures the two ceilings for the floor: a bf16 GEMM and a device copy.
Writes one JSON object per line to stdout.
Usage: torch_bench.py [ROWS,...] [DIM HIDDEN] (a model's shape in place of
the tutorial's); FMLP_BENCH_WINDOW_MS sets the shortest timing as
bench_cuda's --window-ms does (default 50)."""
import json
import os
import sys
import time

import torch
import torch.nn.functional as F

DIM, HIDDEN = (int(sys.argv[2]), int(sys.argv[3])) if len(sys.argv) > 3 else (768, 3072)
COPIES = min(64, max(2, -(-(512 << 20) // (3 * DIM * HIDDEN * 2))))
ROWS = [int(r) for r in sys.argv[1].split(",")] if len(sys.argv) > 1 else [1, 16, 128, 1024, 8192, 32768]


def geglu(x, wg, wu, wd):
    return F.linear(F.gelu(F.linear(x, wg), approximate="tanh") * F.linear(x, wu), wd)


def gelu_mul(g, u):
    return F.gelu(g, approximate="tanh") * u


gelu_mul_compiled = torch.compile(gelu_mul)


def merged(x, wgu, wd):
    g, u = F.linear(x, wgu).chunk(2, dim=-1)
    return F.linear(gelu_mul_compiled(g, u), wd)


def graphed(fn, sets):
    """One CUDA graph per argument set, each warmed up on a side stream first."""
    graphs = []
    for s in sets:
        st = torch.cuda.Stream()
        st.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(st):
            for _ in range(3):
                fn(*s)
        torch.cuda.current_stream().wait_stream(st)
        cg = torch.cuda.CUDAGraph()
        with torch.cuda.graph(cg):
            fn(*s)
        graphs.append((cg,))
    return graphs


# Untimed forwards of the variant about to be timed, for this long: on the
# H200 a run of matrix work lowers the clock (software power cap) over some
# 100 ms, so a timing would otherwise read the clock the variant before it
# left (bench_cuda.c does the same).
PREHEAT_S = 0.15

# The shortest timing, as bench_cuda.c's --window-ms: the clock under the
# power cap wanders within a few ms.
WINDOW_S = float(os.environ.get("FMLP_BENCH_WINDOW_MS", "50")) / 1e3


def timed(fn, sets, iters):
    for i in range(3 * len(sets)):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    t0, i = time.perf_counter(), 0
    while time.perf_counter() - t0 < PREHEAT_S:
        fn(*sets[i % len(sets)])
        i += 1
        if i % 16 == 0:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    iters = max(iters, int(i * WINDOW_S / (time.perf_counter() - t0)) + 1)
    windows = []
    for _ in range(3):
        t0 = time.perf_counter()
        for i in range(iters):
            fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
        windows.append((time.perf_counter() - t0) / iters * 1e6)
    return windows


def ceilings():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        a @ b
    torch.cuda.synchronize()
    tflops = 2 * 8192**3 * 10 / (time.perf_counter() - t0) / 1e12
    src = torch.empty(1 << 30, device="cuda", dtype=torch.uint8)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(10):
        dst.copy_(src)
    torch.cuda.synchronize()
    gbps = 2 * (1 << 30) * 10 / (time.perf_counter() - t0) / 1e9
    return tflops, gbps


def limits():
    """The small-batch limits: one graph replay of a one-kernel graph, back
    to back, and the read bandwidth of a sum over this shape's weight bytes."""
    x = torch.ones(1, device="cuda")
    cg = torch.cuda.CUDAGraph()
    st = torch.cuda.Stream()
    st.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(st):
        x.add_(1)
    torch.cuda.current_stream().wait_stream(st)
    with torch.cuda.graph(cg):
        x.add_(1)
    for _ in range(100):
        cg.replay()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        cg.replay()
    torch.cuda.synchronize()
    replay_us = (time.perf_counter() - t0) / 2000 * 1e6
    w = torch.ones(3 * DIM * HIDDEN, device="cuda", dtype=torch.bfloat16)
    big = [torch.ones(3 * DIM * HIDDEN, device="cuda", dtype=torch.bfloat16) for _ in range(COPIES)]
    res = {}
    for cold in (False, True):
        sets = big if cold else [w]
        for i in range(3 * len(sets)):
            torch.sum(sets[i % len(sets)], dtype=torch.float32)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(200):
            torch.sum(sets[i % len(sets)], dtype=torch.float32)
        torch.cuda.synchronize()
        us = (time.perf_counter() - t0) / 200 * 1e6
        res["cold" if cold else "warm"] = (us, w.numel() * 2 / us / 1e3)
    return replay_us, res


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    tflops, gbps = ceilings()
    print(json.dumps({"impl": "ceiling", "gemm_bf16_tflops": tflops, "copy_gbps": gbps,
                      "torch": torch.__version__, "device": torch.cuda.get_device_name()}), flush=True)
    replay_us, reads = limits()
    print(json.dumps({"impl": "limit", "source": "torch_bench", "dim": DIM, "hidden": HIDDEN,
                      "graph_replay_one_kernel_us": replay_us,
                      "weight_bytes": 3 * DIM * HIDDEN * 2,
                      "read_weights_us": {k: v[0] for k, v in reads.items()},
                      "read_weights_gbps": {k: v[1] for k, v in reads.items()}}), flush=True)
    g = torch.Generator(device="cuda").manual_seed(0)
    ws = [tuple((torch.rand(s, device="cuda", generator=g, dtype=torch.float32) * 2 - 1).mul_(1 / s[1] ** 0.5)
                .to(torch.bfloat16) for s in ((HIDDEN, DIM), (HIDDEN, DIM), (DIM, HIDDEN))) for _ in range(COPIES)]
    compiled = torch.compile(geglu)
    for rows in ROWS:
        xs = [torch.rand(rows, DIM, device="cuda", generator=g).mul_(2).sub_(1).to(torch.bfloat16) for _ in range(COPIES)]
        iters = 30 if rows >= 8192 else 200
        for cold in (False, True):
            n = COPIES if cold else 1
            sets = [(xs[i], *ws[i]) for i in range(n)]
            out = {}
            out["eager"] = timed(geglu, sets, iters)
            out["compile"] = timed(compiled, sets, iters)
            out["eager+graph"] = timed(lambda cg: cg.replay(), graphed(geglu, sets), iters)
            msets = [(x, torch.cat((wg, wu)), wd) for x, wg, wu, wd in sets]
            out["merged+graph"] = timed(lambda cg: cg.replay(), graphed(merged, msets), iters)
            del msets
            work = 2.0 * rows * DIM * HIDDEN * 3
            for k, windows in out.items():
                us = min(windows)
                print(json.dumps({"impl": "torch", "variant": k, "dim": DIM, "hidden": HIDDEN, "rows": rows, "l2": "cold" if cold else "warm",
                                  "us": us, "tflops": work / us * 1e-6, "us_windows": windows}), flush=True)


if __name__ == "__main__":
    main()
