#!/usr/bin/env python3
"""PyTorch peer for fmlp's CPU benchmark (issue 2, "Performance").

Why: fmlp's bars are stated against PyTorch running the same GeGLU MLP
(dim 768, hidden 3072, no biases) on the same CPU, in the same run. This
program times that module with Debian's PyTorch and prints JSON that
bench/run_cpu_vs_torch.sh merges with `fmlp bench`'s figures.

  torch_peer.py info
      torch version, oneDNN line of torch.__config__, threads, and whether
      torch.compile exists (it does not in torch 1.x).
  torch_peer.py measure --rows 1,16,128 --dtype f32,bf16 [--impl eager,jit]
      median time per forward for each (impl, dtype, rows). eager is the
      nn.Module as users run it; jit is torch.jit.script + freeze with
      oneDNN fusion on, the closest thing to torch.compile that torch 1.13
      has (optional; reported as failed when it does not work).

BLAS: Debian's torch runs f32 matmul through whatever libblas.so.3 the
system's alternatives select (its own build says BLAS_INFO=generic); bf16
matmul goes through oneDNN. With only libblas3 installed that is the netlib
reference BLAS (a few GFLOP/s); `apt-get install libopenblas0-pthread`
switches it to OpenBLAS, the fair peer. `info` reports which library is
loaded, and bench/run_cpu_vs_torch.sh can time both.

Method: torch.set_num_threads(--threads) (2 by default, one per core on the
CI machine), inference_mode, x drawn fresh from randn for every (dtype, rows)
and weights from nn.Linear's default init, bf16 by module.to(torch.bfloat16)
(weights and activations bf16, as PyTorch users run it). Warm-up forwards
first; then repeats of `inner` back-to-back forwards (inner chosen so one
repeat lasts at least --rep-ms), at least --min-reps repeats and --min-time
seconds; the figure is the median over repeats of the time per forward.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

# OpenBLAS and OpenMP read these when loaded: pin them before torch loads.
_THREADS = "2"
for _i, _a in enumerate(sys.argv):
    if _a == "--threads" and _i + 1 < len(sys.argv):
        _THREADS = sys.argv[_i + 1]
    elif _a.startswith("--threads="):
        _THREADS = _a.split("=", 1)[1]
for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, _THREADS)

import torch  # noqa: E402
import torch.nn as nn
import torch.nn.functional as F  # noqa: E402

DIM, HIDDEN = 768, 3072
DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16}


class GeGLUMLP(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.gate_proj = nn.Linear(dim, hidden, bias=False)
        self.up_proj = nn.Linear(dim, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, dim, bias=False)

    def forward(self, x):
        return self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))


def onednn_line():
    for line in torch.__config__.show().splitlines():
        if "MKL-DNN" in line or "oneDNN" in line:
            return line.strip(" -")
    return ""


def blas_library():
    """The BLAS shared object torch's f32 matmul resolved to in this process."""
    torch.randn(64, 64) @ torch.randn(64, 64)
    libs = set()
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1] if len(line.split()) >= 6 else ""
                base = os.path.basename(path)
                if "blas" in base or "mkl_rt" in base or "blis" in base:
                    libs.add(os.path.realpath(path))
    except OSError:
        pass
    return sorted(libs)


def info(threads):
    torch.set_num_threads(threads)
    return {
        "blas": blas_library(),
        "env_threads": {v: os.environ.get(v, "") for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS")},
        "torch_version": torch.__version__,
        "onednn": onednn_line(),
        "cpu_capability": next((l.split(":", 1)[1].strip() for l in torch.__config__.show().splitlines()
                                if "CPU capability" in l), ""),
        "mkldnn_available": torch.backends.mkldnn.is_available(),
        "threads": torch.get_num_threads(),
        "interop_threads": torch.get_num_interop_threads(),
        "torch_compile": "available" if hasattr(torch, "compile") else
                         "unavailable: torch %s has no torch.compile (it arrived in 2.0)" % torch.__version__,
        "python": platform.python_version(),
    }


def build(impl, dtype, rows):
    model = GeGLUMLP(DIM, HIDDEN).eval().to(dtype)
    if impl == "eager":
        return model
    if impl == "jit":
        torch.jit.enable_onednn_fusion(True)
        with torch.no_grad():
            m = torch.jit.freeze(torch.jit.script(model))
            x = torch.randn(rows, DIM).to(dtype)
            for _ in range(3):  # profiling runs that let the fuser specialise
                m(x)
        return m
    raise ValueError("unknown impl " + impl)


def time_one(fn, x, min_reps, min_time, rep_ms, warmup_s):
    # warm-up: at least 2 calls and warmup_s seconds
    t0 = time.perf_counter()
    n = 0
    while n < 2 or time.perf_counter() - t0 < warmup_s:
        fn(x)
        n += 1
    one = (time.perf_counter() - t0) / n
    inner = max(1, int(rep_ms / 1e3 / max(one, 1e-9)))
    per = []
    t_start = time.perf_counter()
    while len(per) < min_reps or time.perf_counter() - t_start < min_time:
        t = time.perf_counter()
        for _ in range(inner):
            fn(x)
        per.append((time.perf_counter() - t) / inner)
        if len(per) >= 1000:
            break
    return per, inner


def measure(a):
    torch.set_num_threads(a.threads)
    out = {"peer": "torch", "info": info(a.threads), "dim": DIM, "hidden": HIDDEN, "results": []}
    rows_list = [int(r) for r in a.rows.split(",")]
    for impl in a.impl.split(","):
        for dname in a.dtype.split(","):
            dtype = DTYPES[dname]
            for rows in rows_list:
                torch.manual_seed(rows * 7 + len(dname))
                rec = {"impl": "torch_" + impl, "dtype": dname, "rows": rows}
                try:
                    with torch.inference_mode() if impl == "eager" else torch.no_grad():
                        fn = build(impl, dtype, rows)
                        x = torch.randn(rows, DIM).to(dtype)
                        per, inner = time_one(fn, x, a.min_reps, a.min_time, a.rep_ms, a.warmup)
                except Exception as e:  # an optional peer may not work on this build
                    rec["error"] = "%s: %s" % (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
                    out["results"].append(rec)
                    print("torch_%s %s rows %d: failed: %s" % (impl, dname, rows, rec["error"]), file=sys.stderr)
                    continue
                med = statistics.median(per)
                flops = 6 * rows * DIM * HIDDEN
                rec.update({
                    "median_us": med * 1e6,
                    "min_us": min(per) * 1e6,
                    "reps": len(per),
                    "inner": inner,
                    "gflops": flops / med / 1e9,
                })
                out["results"].append(rec)
                print("torch_%-5s %-4s rows %5d  %12.1f us  %7.1f GFLOP/s  (%d x %d)" %
                      (impl, dname, rows, rec["median_us"], rec["gflops"], len(per), inner), file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    pi = sub.add_parser("info")
    pi.add_argument("--threads", type=int, default=2)
    pm = sub.add_parser("measure")
    pm.add_argument("--rows", default="1,16,128,1024,8192")
    pm.add_argument("--dtype", default="f32,bf16")
    pm.add_argument("--impl", default="eager")
    pm.add_argument("--threads", type=int, default=2)
    pm.add_argument("--min-reps", type=int, default=7)
    pm.add_argument("--min-time", type=float, default=1.0, help="seconds of timed repeats per point")
    pm.add_argument("--rep-ms", type=float, default=20.0, help="minimum length of one repeat")
    pm.add_argument("--warmup", type=float, default=0.3, help="seconds of warm-up per point")
    pm.add_argument("--json", help="write the JSON here instead of stdout")
    a = ap.parse_args()
    res = info(a.threads) if a.cmd == "info" else measure(a)
    text = json.dumps(res, indent=1)
    if getattr(a, "json", None):
        with open(a.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
