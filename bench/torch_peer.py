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
                        [--dim 768 --hidden 3072]
      median time per forward for each (impl, dtype, rows). eager is the
      nn.Module as users run it; jit is torch.jit.script + freeze with
      oneDNN fusion on, the closest thing to torch.compile that torch 1.13
      has (optional; reported as failed when it does not work).
  torch_peer.py merge --machine M.json --fmlp F1.json ... --torch T1.json ...
                      --out-json OUT.json --out-md OUT.md
      joins the pieces bench/run_cpu_vs_torch.sh collected (several rounds,
      interleaved) into one results file with ratios and the issue's bars.

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


def set_shape(dim, hidden):
    global DIM, HIDDEN
    DIM, HIDDEN = int(dim), int(hidden)


def measure(a):
    set_shape(a.dim, a.hidden)
    torch.set_num_threads(a.threads)
    out = {"peer": "torch", "info": info(a.threads), "dim": DIM, "hidden": HIDDEN, "results": []}
    rows_list = [int(r) for r in a.rows.split(",")]
    for impl in a.impl.split(","):
        for dname in a.dtype.split(","):
            dtype = DTYPES[dname]
            for rows in rows_list:
                torch.manual_seed(rows * 7 + len(dname))
                rec = {"impl": "torch_" + impl + a.suffix, "dtype": dname, "rows": rows}
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
                print("torch_%-5s%s %-4s rows %5d  %12.1f us  %7.1f GFLOP/s  (%d x %d)" %
                      (impl, a.suffix, dname, rows, rec["median_us"], rec["gflops"], len(per), inner), file=sys.stderr)
    return out


# ------------------------------------------------------------------ merge

def _num(rec, *keys):
    for k in keys:
        if k in rec and isinstance(rec[k], (int, float)):
            return float(rec[k])
    return None


def fmlp_records(doc):
    """(mode, dtype, rows, median_us) from `fmlp bench --json`, whatever
    nesting it uses: any dict with mode, dtype, rows and a time."""
    out = []

    def walk(o):
        if isinstance(o, dict):
            mode, dt, rows = o.get("mode"), o.get("dtype"), o.get("rows")
            us = _num(o, "median_us", "time_us", "us")
            if us is None and _num(o, "median_ms", "time_ms", "ms") is not None:
                us = _num(o, "median_ms", "time_ms", "ms") * 1e3
            if us is None and _num(o, "median_s", "seconds") is not None:
                us = _num(o, "median_s", "seconds") * 1e6
            if isinstance(mode, str) and isinstance(dt, str) and isinstance(rows, int) and us is not None:
                rec = {"impl": "fmlp_" + mode, "dtype": dt, "rows": rows, "median_us": us}
                for k in ("resolved", "kernels", "n_kernels", "cpu_path", "path", "plan", "min_us"):
                    if k in o:
                        rec[k] = o[k]
                out.append(rec)
                return
            for v in o.values():
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    walk(doc)
    return out


def merge(a):
    with open(a.machine) as f:
        machine = json.load(f)
    per_round = {}  # (impl, dtype, rows) -> [median_us per round]
    best_min = {}  # (impl, dtype, rows) -> fastest single forward seen
    extra = {}
    torch_info, fmlp_meta = None, []
    for path in a.torch:
        with open(path) as f:
            d = json.load(f)
        if torch_info is None and "dim" in d:
            set_shape(d["dim"], d["hidden"])
        torch_info = torch_info or d.get("info")
        for r in d["results"]:
            key = (r["impl"], r["dtype"], r["rows"])
            if "error" in r:
                extra.setdefault(key, {})["error"] = r["error"]
                continue
            per_round.setdefault(key, []).append(r["median_us"])
            best_min[key] = min(best_min.get(key, float("inf")), r.get("min_us", r["median_us"]))
    for path in a.fmlp:
        with open(path) as f:
            d = json.load(f)
        if isinstance(d, dict):
            fmlp_meta.append({k: v for k, v in d.items() if not isinstance(v, (list, dict))})
        for r in fmlp_records(d):
            key = (r["impl"], r["dtype"], r["rows"])
            per_round.setdefault(key, []).append(r["median_us"])
            best_min[key] = min(best_min.get(key, float("inf")), r.get("min_us", r["median_us"]))
            extra.setdefault(key, {}).update({k: v for k, v in r.items()
                                              if k not in ("impl", "dtype", "rows", "median_us", "min_us")})
    flops = lambda rows: 6 * rows * DIM * HIDDEN  # noqa: E731
    figures = []
    for (impl, dt, rows), vals in sorted(per_round.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        us = min(vals)  # best of the rounds' medians
        figures.append(dict({"impl": impl, "dtype": dt, "rows": rows, "median_us": us,
                             "rounds_us": vals, "best_single_us": best_min.get((impl, dt, rows)),
                             "gflops": flops(rows) / us / 1e3}, **extra.get((impl, dt, rows), {})))
    for key, e in extra.items():
        if key not in per_round and "error" in e:
            figures.append({"impl": key[0], "dtype": key[1], "rows": key[2], "error": e["error"]})
    fig = {(f["impl"], f["dtype"], f["rows"]): f.get("median_us") for f in figures}
    dtypes = sorted({k[1] for k in fig}, key=lambda d: ["f32", "bf16"].index(d) if d in ("f32", "bf16") else 9)
    rows_all = sorted({k[2] for k in fig})
    ratios = []
    for dt in dtypes:
        for rows in rows_all:
            t, fu, ea = fig.get(("torch_eager", dt, rows)), fig.get(("fmlp_fused", dt, rows)), \
                fig.get(("fmlp_eager", dt, rows))
            r = {"dtype": dt, "rows": rows}
            if t and fu:
                r["fused_speed_vs_torch_eager"] = t / fu
            if ea and fu:
                r["fused_speed_vs_fmlp_eager"] = ea / fu
            # paired: the two sides' medians from the same round (adjacent in
            # time), so a burst of other work hits both; median over rounds
            for name, other in (("torch_eager", "torch_eager"), ("fmlp_eager", "fmlp_eager")):
                ro, rf = per_round.get((other, dt, rows)), per_round.get(("fmlp_fused", dt, rows))
                if ro and rf and len(ro) == len(rf):
                    pr = [o / f for o, f in zip(ro, rf)]
                    r["fused_speed_vs_%s_per_round" % name] = pr
                    r["fused_speed_vs_%s_paired" % name] = statistics.median(pr)
            tj = fig.get(("torch_jit", dt, rows))
            if tj and fu:
                r["fused_speed_vs_torch_jit"] = tj / fu
            ratios.append(r)
    rat = {(r["dtype"], r["rows"]): r for r in ratios}
    bars = []

    def bar(name, value, need):
        bars.append({"bar": name, "value": value, "need": need,
                     "holds": None if value is None else bool(value >= need)})

    def pick(r, name):  # paired ratio when every round has both sides
        v = r.get("fused_speed_vs_%s_paired" % name)
        return v if v is not None else r.get("fused_speed_vs_%s" % name)

    bar("fused bf16 at 1024 rows vs torch bf16 eager (speed ratio)", pick(rat.get(("bf16", 1024), {}), "torch_eager"),
        1.0)
    bar("fused f32 at 1024 rows vs torch f32 eager (speed ratio)", pick(rat.get(("f32", 1024), {}), "torch_eager"),
        0.8)
    for r in ratios:
        bar("fused vs fmlp eager, %s rows %d" % (r["dtype"], r["rows"]), pick(r, "fmlp_eager"), 1.0)
    load = []
    if a.load and os.path.exists(a.load):
        with open(a.load) as f:
            load = [json.loads(line) for line in f if line.strip()]
    machine["loadavg1_during_run"] = {"min": min((x["loadavg1"] for x in load), default=None),
                                      "max": max((x["loadavg1"] for x in load), default=None)}
    res = {
        "benchmark": "GeGLU MLP forward on the CPU, fmlp vs PyTorch",
        "shape": {"dim": DIM, "hidden": HIDDEN, "bias": False, "act": "gelu_tanh"},
        "method": "rows x dtype x impl, interleaved fmlp/torch per rows value, %d rounds (order alternating); "
                  "each figure is the best of the rounds' medians; time per forward in microseconds; "
                  "GFLOP/s counts the three GEMMs (6*rows*dim*hidden)" % max(len(v) for v in per_round.values()),
        "machine": machine,
        "torch": torch_info,
        "fmlp": fmlp_meta[0] if fmlp_meta else {},
        "figures": figures,
        "ratios": ratios,
        "bars": bars,
        "load": load,
    }
    with open(a.out_json, "w") as f:
        json.dump(res, f, indent=1)
        f.write("\n")
    with open(a.out_md, "w") as f:
        f.write(render(res))


def render(res):
    """The markdown summary of a results JSON (merge writes both)."""
    set_shape(res["shape"]["dim"], res["shape"]["hidden"])
    fig = {(f["impl"], f["dtype"], f["rows"]): f.get("median_us") for f in res["figures"]}
    rat = {(r["dtype"], r["rows"]): r for r in res["ratios"]}
    dtypes = sorted({k[1] for k in fig}, key=lambda d: ["f32", "bf16"].index(d) if d in ("f32", "bf16") else 9)
    return markdown(res, fig, rat, dtypes, sorted({k[2] for k in fig}))


def markdown(res, fig, rat, dtypes, rows_all):
    m, t = res["machine"], res["torch"] or {}
    best = {(f["impl"], f["dtype"], f["rows"]): f.get("best_single_us") for f in res["figures"]}
    impls = [i for i in ("torch_eager", "torch_jit", "torch_eager_refblas", "fmlp_eager", "fmlp_compiled",
                         "fmlp_fused", "fmlp_auto") if any(k[0] == i for k in fig)]
    L = ["# GeGLU MLP on the CPU: fmlp against PyTorch", ""]
    L.append("dim %d, hidden %d, no bias, gelu tanh; time per forward (median, best of rounds), "
             "lower is better. Date %s." % (DIM, HIDDEN, m.get("date", "")))
    L.append("")
    L.append("- CPU: %s, %s cores (%s threads used by both sides), flags: %s" %
             (m.get("cpu_model", "?"), m.get("cpus", "?"), m.get("threads", "?"), " ".join(m.get("cpu_flags", []))))
    L.append("- PyTorch %s, %s, CPU capability %s, f32 BLAS: %s; torch.compile: %s" %
             (t.get("torch_version", "?"), t.get("onednn", "?"), t.get("cpu_capability", "?"),
              ", ".join(os.path.basename(b) for b in t.get("blas", [])) or "?", t.get("torch_compile", "?")))
    L.append("- fmlp version: %s; compiler: %s" % (m.get("fmlp_version", "?"), m.get("cc", "?")))
    fm = res.get("fmlp") or {}
    if fm.get("cpu_path_f32"):
        L.append("- fmlp CPU path: f32 %s, bf16 %s; %s threads" % (fm.get("cpu_path_f32"), fm.get("cpu_path_bf16"),
                                                                fm.get("threads", "?")))
    elif m.get("fmlp_paths"):
        L.append("- fmlp CPU paths: %s" % m["fmlp_paths"])
    if m.get("command"):
        L.append("- measured with: `%s`" % m["command"])
    if m.get("fmlp_commit"):
        L.append("- fmlp source: commit %s" % m["fmlp_commit"])
    la = m.get("loadavg1_during_run") or {}
    if la.get("max") is not None:
        L.append("- 1-minute load average before each part of the sweep: %.2f to %.2f on %s CPUs "
                 "(above the thread count means other work shared the cores; the per-round figures in "
                 "the JSON show how much that moved the medians)" % (la["min"], la["max"], m.get("cpus", "?")))
    L.append("- weights: %.1f MB in bf16, %.1f MB in f32; L2 %s, L3 %s. At 1 and 16 rows a forward streams every "
             "weight once and does little arithmetic, so its time mostly says whether the weights were still in "
             "the L3 cache from the previous forward, which other work on the machine decides; those rows swing "
             "by 10x or more between rounds." % (3 * DIM * HIDDEN * 2 / 1e6, 3 * DIM * HIDDEN * 4 / 1e6,
                                                   m.get("l2", "?"), m.get("l3", "?")))
    L.append("")
    L.append("`torch_jit` is torch.jit.script + freeze with oneDNN fusion, the nearest thing to torch.compile "
             "in torch 1.13. `torch_eager_refblas` (when present) is torch eager with the netlib reference BLAS "
             "that a bare `apt-get install python3-torch` leaves selected; `torch_eager` runs on OpenBLAS.")
    L.append("")
    for dt in dtypes:
        L.append("## %s" % dt)
        L.append("")
        L.append("Median time per forward (us), best of the rounds; the ratios are paired: the median over "
                 "rounds of (other side's median / fused median) within the same round.")
        L.append("")
        L.append("| rows | " + " | ".join(i + " (us)" for i in impls) +
                 " | fused vs torch eager | fused vs fmlp eager |")
        L.append("|" + "---:|" * (len(impls) + 3))
        for rows in rows_all:
            cells = ["%.1f" % fig[(i, dt, rows)] if fig.get((i, dt, rows)) else "–" for i in impls]
            r = rat.get((dt, rows), {})
            ft = r.get("fused_speed_vs_torch_eager_paired", r.get("fused_speed_vs_torch_eager"))
            fe = r.get("fused_speed_vs_fmlp_eager_paired", r.get("fused_speed_vs_fmlp_eager"))
            L.append("| %d | %s | %s | %s |" % (rows, " | ".join(cells), "%.2f×" % ft if ft else "–",
                                                 "%.2f×" % fe if fe else "–"))
        L.append("")
        L.append("Fastest single forward (us), less sensitive to other work on the machine:")
        L.append("")
        L.append("| rows | " + " | ".join(impls) + " | fused vs torch eager | fused vs fmlp eager |")
        L.append("|" + "---:|" * (len(impls) + 3))
        for rows in rows_all:
            b = {i: best.get((i, dt, rows)) for i in impls}
            cells = ["%.1f" % b[i] if b[i] else "–" for i in impls]
            fu, te, fe = b.get("fmlp_fused"), b.get("torch_eager"), b.get("fmlp_eager")
            L.append("| %d | %s | %s | %s |" % (rows, " | ".join(cells), "%.2f×" % (te / fu) if te and fu else "–",
                                                 "%.2f×" % (fe / fu) if fe and fu else "–"))
        L.append("")
        L.append("GFLOP/s: " + "; ".join(
            "rows %d: %s" % (rows, ", ".join("%s %.1f" % (i, 6 * rows * DIM * HIDDEN / fig[(i, dt, rows)] / 1e3)
                                             for i in impls if fig.get((i, dt, rows))))
            for rows in rows_all))
        L.append("")
    L.append("## Bars (issue 2)")
    L.append("")
    for b in res["bars"]:
        v = "n/a" if b["value"] is None else "%.2f×" % b["value"]
        verdict = "not measured" if b["holds"] is None else ("holds" if b["holds"] else "MISSED")
        L.append("- %s: %s (need ≥ %.1f×) — %s" % (b["bar"], v, b["need"], verdict))
    L.append("")
    L.append("Bars use the paired ratios (a speed ratio above 1 means fused is faster).")
    L.append("")
    return "\n".join(L)


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
    pm.add_argument("--dim", type=int, default=DIM, help="model width (default: the tutorial's)")
    pm.add_argument("--hidden", type=int, default=HIDDEN, help="hidden width (default: the tutorial's)")
    pm.add_argument("--json", help="write the JSON here instead of stdout")
    pm.add_argument("--suffix", default="", help="appended to the impl names (e.g. _refblas)")
    pg = sub.add_parser("merge")
    pg.add_argument("--machine", required=True)
    pg.add_argument("--fmlp", nargs="*", default=[])
    pg.add_argument("--torch", nargs="*", default=[])
    pg.add_argument("--load", help="JSON lines of the load average before each part")
    pg.add_argument("--out-json", required=True)
    pg.add_argument("--out-md", required=True)
    pr = sub.add_parser("render", help="rewrite the markdown summary of a results JSON")
    pr.add_argument("json_in")
    pr.add_argument("md_out")
    a = ap.parse_args()
    if a.cmd == "merge":
        merge(a)
        return
    if a.cmd == "render":
        with open(a.json_in) as f:
            res = json.load(f)
        with open(a.md_out, "w") as f:
            f.write(render(res))
        return
    res = info(a.threads) if a.cmd == "info" else measure(a)
    text = json.dumps(res, indent=1)
    if getattr(a, "json", None):
        with open(a.json, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


if __name__ == "__main__":
    main()
