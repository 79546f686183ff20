"""Why: both tutorial scripts do the same three things to one torch module
and its fmlp twin: profile a few steps of each with its own profiler and
print both tables, count the kernels per step, and time a forward. Shared
here so 02_linear.py and 03_simple_mlp.py only say what they build.
"""
import argparse
import statistics
import time

import torch

import fmlp

STEPS = dict(wait=1, warmup=1, active=3)


def parse_args(doc, **defaults):
    ap = argparse.ArgumentParser(description=doc.strip().split("\n")[0])
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu",
                    help="cpu or cuda (default: cuda when torch sees a GPU)")
    ap.add_argument("--dtype", default="f32", choices=["f32", "bf16"])
    ap.add_argument("--iters", type=int, default=20, help="timed forwards per measurement")
    for k, v in defaults.items():
        ap.add_argument("--" + k.replace("_", "-"), type=type(v), default=v)
    a = ap.parse_args()
    a.torch_dtype = {"f32": torch.float32, "bf16": torch.bfloat16}[a.dtype]
    return a


def _sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def torch_profile(fn, device):
    acts = [torch.profiler.ProfilerActivity.CPU]
    if device.startswith("cuda"):
        acts.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=acts, schedule=torch.profiler.schedule(**STEPS, repeat=1)) as prof:
        for _ in range(sum(STEPS.values())):
            fn()
            _sync(device)
            prof.step()
    return prof


# aten ops that only make views, allocate or flag: not kernels
_NOT_KERNELS = {"aten::empty", "aten::empty_strided", "aten::empty_like", "aten::t", "aten::transpose",
                "aten::expand", "aten::as_strided", "aten::view", "aten::reshape", "aten::_unsafe_view",
                "aten::_reshape_alias", "aten::resize_", "aten::detach", "aten::alias", "aten::unsqueeze",
                "aten::squeeze", "aten::permute", "aten::lift_fresh", "aten::resolve_conj", "aten::resolve_neg"}


def _computes(e):
    return e.name.startswith("aten::") and e.name not in _NOT_KERNELS


def _in_step(e):
    while e is not None:
        if e.name.startswith("ProfilerStep"):
            return True
        e = e.cpu_parent
    return False


def _below(inner, outer):
    """inner runs inside outer: starts within it on the same thread (its end
    can read a microsecond past outer's), or has it among its parents."""
    a, b = inner.time_range, outer.time_range
    if inner is outer:
        return False
    if inner.thread == outer.thread and (b.start < a.start <= b.end or (a.start == b.start and a.end < b.end)):
        return True
    e = inner.cpu_parent
    while e is not None and e is not outer:
        e = e.cpu_parent
    return e is outer


def torch_kernels_per_step(prof, device):
    """GPU kernels per recorded step (CUDA); on the CPU, the innermost aten
    ops that compute (aten::addmm, aten::gelu, aten::mul: each one parallel
    region), views and allocations left out. Innermost by start time as
    well as by the event tree, because torch 1.13's tree at times lifts an
    op out of its parent, whose recorded end can then precede the op's."""
    if device.startswith("cuda"):
        n = sum(str(getattr(e, "device_type", "")).endswith("CUDA") and "Memcpy" not in e.name
                and "Memset" not in e.name for e in prof.events())
        return n / STEPS["active"]
    ops = [e for e in prof.events() if _computes(e) and _in_step(e)]
    return sum(not any(_below(o, e) for o in ops) for e in ops) / STEPS["active"]


def fmlp_profile(fn, device):
    acts = [fmlp.ProfilerActivity.CPU] + ([fmlp.ProfilerActivity.CUDA] if device.startswith("cuda") else [])
    with fmlp.profile(activities=acts, schedule=fmlp.schedule(**STEPS, repeat=1), with_flops=True) as prof:
        for _ in range(sum(STEPS.values())):
            fn()
            _sync(device)
            prof.step()
    return prof


def median_ms(fn, device, iters):
    fn()
    _sync(device)
    t = []
    for _ in range(iters):
        t0 = time.perf_counter()
        fn()
        _sync(device)
        t.append(time.perf_counter() - t0)
    return statistics.median(t) * 1e3


def rel_err(y, ref):
    y, ref = y.double(), ref.double()
    return float((y - ref).norm() / ref.norm())


def compare(title, module, x, device, iters, modes=("eager", "compiled", "fused")):
    """Profiles, counts and times `module` on x in torch and in fmlp."""
    sort = "self_cuda_time_total" if device.startswith("cuda") else "self_cpu_time_total"
    with torch.inference_mode():
        print("=" * 100)
        print("%s: x %s %s on %s, torch %s" % (title, tuple(x.shape), x.dtype, device, torch.__version__))
        ref = module(x)
        tprof = torch_profile(lambda: module(x), device)
        print("\n--- PyTorch eager: torch.profiler")
        print(tprof.key_averages().table(sort_by=sort, row_limit=10))
        rows = [("torch eager", torch_kernels_per_step(tprof, device), median_ms(lambda: module(x), device, iters),
                 0.0)]
        for mode in modes:
            f = fmlp.MLP.from_torch(module, mode=mode)
            fprof = fmlp_profile(lambda: f(x), device)
            print("\n--- fmlp %s: fmlp.profile (plan: %d kernels)" % (mode, len(f.plan(x.numel() // x.shape[-1]))))
            print(fprof.key_averages().table(sort_by=sort, row_limit=10))
            print(fprof.summary())
            rows.append(("fmlp " + mode, fprof.summary().kernels_per_step, median_ms(lambda: f(x), device, iters),
                         rel_err(f(x), ref)))
        print("\n%-16s %16s %18s %12s %18s" % ("", "kernels/step", "median/forward", "speedup", "err vs torch"))
        base = rows[0][2]
        for name, kernels, ms, err in rows:
            print("%-16s %16.1f %15.3f ms %11.2fx %18.2e" % (name, kernels, ms, base / ms, err))
