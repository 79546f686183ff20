#!/usr/bin/env python3
"""What the Python package adds to one forward, against the C API's own.

Why: the package's bar is at most 3 us of Python per call above the C
forward (best of many calls), at one row of the tutorial's MLP (GeGLU, dim
768, hidden 3072) in f32 and bf16. A one-row forward of that MLP takes a
millisecond on a small CPU, so its best-of-N jitters by more than the bar;
a tiny GeGLU (dim 8, hidden 16) and a tiny Linear, whose C forwards take
well under a microsecond, are timed too and isolate the binding's cost.
torch.nn.functional.linear on the same row is timed for comparison.

The C side is bench/forward_timing.c (built by CMake as
BUILD/bench/forward_timing); both sides time each call alone and keep the
best and the median, in alternating rounds.

  FMLP_LIBRARY=build/libfmlp.so PYTHONPATH=python python3 bench/python_overhead.py \
      [--forward-timing build/bench/forward_timing] [--iters 20000] [--rounds 3] [--json OUT.json]
"""
import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import time

import torch

import fmlp

CASES = [
    # name, block, dim, hidden, act
    ("tutorial geglu 768x3072", "gated", 768, 3072, "gelu_tanh"),
    ("tiny geglu 8x16", "gated", 8, 16, "gelu_tanh"),
    ("tiny linear 8->8", "linear", 8, 8, "none"),
]
TORCH_DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


def best_median(fn, iters):
    t = []
    clock = time.perf_counter_ns
    for _ in range(10):
        fn()
    for _ in range(iters):
        t0 = clock()
        fn()
        t.append(clock() - t0)
    t.sort()
    return t[0] / 1e3, t[len(t) // 2] / 1e3


def c_side(exe, block, dim, hidden, act, dtype, mode, iters):
    args = [exe, "--block", block, "--dim", str(dim), "--hidden", str(hidden), "--dtype", dtype, "--mode", mode,
            "--rows", "1", "--iters", str(iters)]
    if block == "gated":
        args += ["--act", act]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    kv = dict(p.split("=") for p in out.split())
    return float(kv["best_us"]), float(kv["median_us"])


def find_forward_timing():
    for pattern in ("build/bench/forward_timing", "build*/bench/forward_timing"):
        found = sorted(glob.glob(pattern))
        if found:
            return found[0]
    sys.exit("bench/python_overhead.py: no forward_timing; build it (cmake --build build --target forward_timing) "
             "or pass --forward-timing")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--forward-timing", default=None)
    ap.add_argument("--iters", type=int, default=20000, help="calls per round for the tiny cases")
    ap.add_argument("--tutorial-iters", type=int, default=400, help="calls per round at 768x3072")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--mode", default="fused")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    exe = a.forward_timing or find_forward_timing()
    rows = []
    for name, block, dim, hidden, act in CASES:
        for dtype in ("f32", "bf16"):
            td = TORCH_DTYPES[dtype]
            if block == "gated":
                m = fmlp.MLP(dim, hidden, act=act, dtype=dtype, mode=a.mode)
            else:
                m = fmlp.Linear(dim, hidden, bias=False, dtype=dtype, mode=a.mode)
            x = torch.randn(1, dim).to(td)
            w = torch.randn(hidden, dim).to(td)
            iters = a.tutorial_iters if dim > 64 else a.iters
            c, py, lin = [], [], []
            with torch.inference_mode():
                for _ in range(a.rounds):
                    c.append(c_side(exe, block, dim, hidden, act, dtype, a.mode, iters))
                    py.append(best_median(lambda: m(x), iters))
                    lin.append(best_median(lambda: torch.nn.functional.linear(x, w), iters))
            r = dict(case=name, dtype=dtype, mode=a.mode, rows=1, iters=iters, rounds=a.rounds,
                     c_best_us=min(v[0] for v in c), c_median_us=min(v[1] for v in c),
                     py_best_us=min(v[0] for v in py), py_median_us=min(v[1] for v in py),
                     torch_linear_best_us=min(v[0] for v in lin), torch_linear_median_us=min(v[1] for v in lin),
                     torch_linear_shape="(1, %d) x (%d, %d)^T" % (dim, hidden, dim))
            r["overhead_best_us"] = r["py_best_us"] - r["c_best_us"]
            r["bar_us"] = 3.0
            r["meets_bar"] = r["overhead_best_us"] <= 3.0
            rows.append(r)
    print("%-26s %-5s %12s %12s %12s %5s %16s" % ("case (1 row)", "dtype", "C best us", "Python us", "overhead",
                                                   "<=3us", "F.linear us"))
    for r in rows:
        print("%-26s %-5s %12.3f %12.3f %12.3f %5s %16.3f" % (r["case"], r["dtype"], r["c_best_us"], r["py_best_us"],
                                                              r["overhead_best_us"], "yes" if r["meets_bar"] else "NO",
                                                              r["torch_linear_best_us"]))
    if a.json:
        doc = dict(what="Python package overhead per call (bench/python_overhead.py)",
                   machine=dict(cpu=platform.processor() or platform.machine(), cores=os.cpu_count(),
                                python=platform.python_version(), torch=torch.__version__,
                                fmlp_threads=fmlp.context("cpu").threads,
                                cpu_path_f32=fmlp.context("cpu").cpu_path("f32"),
                                cpu_path_bf16=fmlp.context("cpu").cpu_path("bf16")),
                   binding="ctypes", results=rows)
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", a.json)


if __name__ == "__main__":
    main()
