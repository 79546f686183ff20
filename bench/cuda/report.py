"""Why: turns the two benchmark streams (fmlp's and PyTorch's JSON lines)
into the committed result: one JSON with every figure, the machine, the
floors and the limits both sides measured in their runs ("limits": every
limit line of both streams, each naming its source and shape), a PNG per
MLP shape (report_png.py), and a short table per shape with the bars of
issue 4 checked on the tutorial's, then the forward bars of issues 10 and
11 ("targets": each with the figures it was judged on) where the run
measured them.
Usage: report.py fmlp.jsonl torch.jsonl out.json out.png [gemm_only.txt]
gemm_only.txt: fmlp_gemm_one's lines (`glu lt,fmlp`), for issue 10's GLU GEMM bar.
REPORT_DATE, REPORT_COMMAND and REPORT_COMMIT, where set, record the
benchmark run's date, command and commit (the default: now, device_run.sh)."""
import datetime
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import report_png  # noqa: E402

TUTORIAL = report_png.TUTORIAL


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def shape_table(data, shape, l2, judge):
    def get(impl, var, n):
        for r in data:
            if r["impl"] == impl and r["variant"] == var and r["rows"] == n and r["l2"] == l2:
                return r["us"]
        return None

    lines = [f"\n{shape[0]} -> {shape[1]} -> {shape[0]}, L2 {l2}: us per forward; "
             "floor = max(FLOPs / bf16 GEMM peak, bytes / copy bandwidth)"]
    hdr = ["rows", "floor", "fm eager", "fm comp", "fm fused", "fm f+graph", "pt eager", "pt compile", "pt e+graph",
           "pt merged+g", "fused+g vs best pt graph", "fused vs compile"]
    lines.append(" ".join(f"{h:>11}" for h in hdr))
    for n in sorted({r["rows"] for r in data}):
        fl = next(r["floor_us"] for r in data if r["rows"] == n)
        v = [get("fmlp", "eager", n), get("fmlp", "compiled", n), get("fmlp", "fused", n),
             get("fmlp", "fused+graph", n), get("torch", "eager", n), get("torch", "compile", n),
             get("torch", "eager+graph", n), get("torch", "merged+graph", n)]
        cells = [f"{n:>11}", f"{fl:>11.1f}"] + [f"{x:>11.1f}" if x else f"{'-':>11}" for x in v]
        pt_graph = min([x for x in v[6:8] if x], default=None)
        sp1 = pt_graph / v[3] if v[3] and pt_graph else 0
        sp2 = v[5] / v[2] if v[2] and v[5] else 0
        cells += [f"{sp1:>10.2f}x", f"{sp2:>10.2f}x"]
        lines.append(" ".join(cells))
        if l2 == "warm" and shape == TUTORIAL:
            if v[0] and v[4]:
                judge("eager_within_10pct", v[0] <= 1.10 * v[4])
            if n <= 128 and v[3] and pt_graph:
                judge("fused_graph_beats_torch_graph_rows_le_128", v[3] < pt_graph)
            if n == 8192 and v[2] and v[5]:
                judge("fused_8192_le_1.15x_compile", v[2] <= 1.15 * v[5])
    return lines


LLAMA = (4096, 14336)
FMLP_MODES = ("eager", "compiled", "fused")


def same_kernels(auto, other, mode):
    """Where auto ran the plan of the mode it is compared with, its gap is the
    run's noise, not a worse pick: says so, with how far that mode's own
    rounds spread."""
    keys = ("resolved", "kernels", "first_kernel")
    if not all(k in auto and k in other for k in keys) or any(auto[k] != other[k] for k in keys):
        return ""
    rounds = other.get("us_rounds") or []
    spread = f", whose own rounds spread {max(rounds) / min(rounds):.3f}x" if len(rounds) > 1 and min(rounds) > 0 else ""
    return f"; auto ran {mode}'s plan ({auto['first_kernel']}, {auto['kernels']} kernels){spread}"


def targets(data):
    """Issue 10's and 11's forward bars, each judged on the figures of this
    run (None where a figure is missing), with those figures."""
    def rec(impl, var, shape, n, l2):
        return next((r for r in data if r["impl"] == impl and r["variant"] == var and r["rows"] == n
                     and r["l2"] == l2 and (r["dim"], r["hidden"]) == shape), {})

    def us(impl, var, shape, n, l2):
        return rec(impl, var, shape, n, l2).get("us")

    def best_torch(shape, n, l2):
        v = [r["us"] for r in data if r["impl"] == "torch" and r["rows"] == n and r["l2"] == l2
             and (r["dim"], r["hidden"]) == shape]
        return min(v) if v else None
    out = []

    def at_most(name, got, limit, what):
        out.append({"bar": name, "holds": None if got is None else got <= limit,
                    "figures": f"{what} {got:.1f} us (bar {limit} us)" if got is not None else "not measured"})
    at_most("10: tutorial fused at 8192 rows <= 175 us L2-warm", us("fmlp", "fused", TUTORIAL, 8192, "warm"), 175,
            "fused")
    at_most("10: tutorial fused at 32768 rows <= 700 us L2-warm", us("fmlp", "fused", TUTORIAL, 32768, "warm"), 700,
            "fused")
    for n, need in ((1024, 1.0), (4096, 1.03), (8192, 1.03)):
        a, t = us("fmlp", "auto", LLAMA, n, "warm"), best_torch(LLAMA, n, "warm")
        out.append({"bar": f"10: Llama-3-8B auto at {n} rows >= {need:.2f}x the fastest PyTorch path L2-warm",
                    "holds": None if a is None or t is None else t / a >= need,
                    "figures": f"auto {a:.1f} us, PyTorch {t:.1f} us: {t / a:.4f}x" if a and t else "not measured"})
    worst, where, seen = 0.0, "", False
    for shape in sorted({(r["dim"], r["hidden"]) for r in data}):
        for n in sorted({r["rows"] for r in data if (r["dim"], r["hidden"]) == shape}):
            for l2 in ("warm", "cold"):
                a = us("fmlp", "auto", shape, n, l2)
                modes = [(x, m) for x, m in ((us("fmlp", m, shape, n, l2), m) for m in FMLP_MODES) if x]
                if a is None or not modes:
                    continue
                seen = True
                fastest, mode = min(modes)
                if a / fastest > worst:
                    worst = a / fastest
                    where = f"{shape[0]}->{shape[1]} at {n} rows L2-{l2}" + same_kernels(
                        rec("fmlp", "auto", shape, n, l2), rec("fmlp", mode, shape, n, l2), mode)
    out.append({"bar": "10: auto within 3% of fmlp's fastest mode on every shape and row count",
                "holds": worst <= 1.03 if seen else None,
                "figures": f"worst {worst:.4f}x ({where})" if seen else "not measured"})
    for n in (1, 16):
        at_most(f"11: tutorial fused + graph at {n} row(s) <= 6.0 us L2-warm",
                us("fmlp", "fused+graph", TUTORIAL, n, "warm"), 6.0, "fused + graph")
        at_most(f"11: tutorial fused + graph at {n} row(s) <= 7.0 us L2-cold",
                us("fmlp", "fused+graph", TUTORIAL, n, "cold"), 7.0, "fused + graph")
    at_most("11: tutorial fused + graph at 128 rows <= 9 us L2-cold", us("fmlp", "fused+graph", TUTORIAL, 128, "cold"),
            9.0, "fused + graph")
    at_most("11: tutorial plain forward (fused, no graph) at 1 row <= 9 us", us("fmlp", "fused", TUTORIAL, 1, "warm"),
            9.0, "fused")
    for n in (1, 16):
        f, t = us("fmlp", "fused+graph", LLAMA, n, "cold"), best_torch(LLAMA, n, "cold")
        out.append({"bar": f"11: Llama-3-8B fused + graph at {n} row(s) <= 88 us L2-cold and faster than every "
                           "PyTorch path",
                    "holds": None if f is None or t is None else f <= 88 and f < t,
                    "figures": f"fused + graph {f:.1f} us, fastest PyTorch {t:.1f} us" if f and t else "not measured"})
    return out


GEMM_LINE = re.compile(r"^(fmlp_gemm_glu_\S+)\s+(\d+) x\s+(\d+) x\s+(\d+) glu\s+([0-9.]+) us.*?\s([0-9.]+)x cuBLASLt")


def gemm_target(path):
    """Issue 10's GLU GEMM bar from fmlp_gemm_one's output: every fmlp GLU
    GEMM at least as fast as cuBLASLt's plain GEMM of the same size."""
    runs = []
    with open(path) as f:
        for line in f:
            m = GEMM_LINE.match(line)
            if m:
                runs.append({"kernel": m.group(1), "m": int(m.group(2)), "n": int(m.group(3)), "k": int(m.group(4)),
                             "us": float(m.group(5)), "x_cublaslt": float(m.group(6))})
    worst = min(runs, key=lambda r: r["x_cublaslt"], default=None)
    return {"bar": "10: the GLU GEMM at least as fast as cuBLASLt's plain GEMM of the same M x N x K",
            "holds": None if worst is None else worst["x_cublaslt"] >= 1.0,
            "figures": "not measured" if worst is None else
            f"{len(runs)} GEMMs, {sum(r['x_cublaslt'] >= 1.0 for r in runs)} at or above; lowest "
            f"{worst['x_cublaslt']:.3f}x at {worst['m']} x {worst['n']} x {worst['k']}",
            "gemms": runs}


def limits_table(limits):
    """One row per limit line, fmlp's (C, its own kernels) and PyTorch's (a
    Python loop, torch.sum) side by side."""
    lines = ["\nlimits, measured in the same runs: us (GB/s)",
             f"{'shape':>12} {'by':>16} {'replay 1 kernel':>16} {'replay 2 kernels':>17} "
             f"{'read weights warm':>22} {'read weights cold':>22}"]

    def cell(us, gbps, width):
        text = "-" if us is None else f"{us:.2f} ({gbps:.0f})" if gbps else f"{us:.2f}"
        return f"{text:>{width}}"
    for lim in limits:
        us, gbps = lim.get("read_weights_us", {}), lim.get("read_weights_gbps", {})
        one, two = lim.get("graph_replay_one_kernel_us"), lim.get("graph_replay_two_kernels_us")
        shape = f"{lim['dim']}x{lim['hidden']}"
        lines.append(f"{shape:>12} {lim['source']:>16} {cell(one, None, 16)} {cell(two, None, 17)} "
                     f"{cell(us.get('warm'), gbps.get('warm'), 22)} {cell(us.get('cold'), gbps.get('cold'), 22)}")
    lines.append("(the PyTorch replay is timed from a Python loop; fmlp's from C, the floor a graphed forward pays)")
    return lines


def main():
    if len(sys.argv) not in (5, 6):
        sys.exit(__doc__.split("Usage: ")[1])
    fm, tr, out_json, out_png = sys.argv[1:5]
    rows_f, rows_t = load(fm), load(tr)
    ceil = next(r for r in rows_t if r["impl"] == "ceiling")
    # lines from before either side recorded its shape are the tutorial's
    for r in rows_f + rows_t:
        r.setdefault("dim", TUTORIAL[0])
        r.setdefault("hidden", TUTORIAL[1])
    limits = [dict(r, source=r.get("source", "torch_bench")) for r in rows_f + rows_t if r["impl"] == "limit"]
    data = [r for r in rows_f + rows_t if r["impl"] in ("fmlp", "torch")]
    for r in data:
        n, dim, hidden = r["rows"], r["dim"], r["hidden"]
        flops = 2.0 * n * dim * hidden * 3
        nbytes = 2 * (3 * dim * hidden + 2 * n * dim)
        floor_us = max(flops / (ceil["gemm_bf16_tflops"] * 1e12), nbytes / (ceil["copy_gbps"] * 1e9)) * 1e6
        r["floor_us"] = floor_us
        r["x_floor"] = r["us"] / floor_us
    shapes = sorted({(r["dim"], r["hidden"]) for r in data}, key=lambda s: (s != TUTORIAL, s))

    # None: not measured (a side missing); a bar holds only where it was compared
    bars = {"eager_within_10pct": None, "fused_graph_beats_torch_graph_rows_le_128": None,
            "fused_8192_le_1.15x_compile": None}

    def judge(name, ok):
        bars[name] = ok and bars[name] is not False
    lines = []
    for shape in shapes:
        for l2 in ("warm", "cold"):
            lines += shape_table([r for r in data if (r["dim"], r["hidden"]) == shape], shape, l2, judge)
    lines.append(f"\nceilings: bf16 GEMM {ceil['gemm_bf16_tflops']:.0f} TFLOP/s, copy {ceil['copy_gbps']:.0f} GB/s "
                 f"({ceil['device']}, torch {ceil['torch']})")
    if limits:
        lines += limits_table(limits)
    verdict = {True: "HOLDS", False: "FAILS", None: "NOT MEASURED"}
    lines.append(f"bars ({TUTORIAL[0]} -> {TUTORIAL[1]}, L2 warm, wall time per forward): "
                 + ", ".join(f"{k}={verdict[v]}" for k, v in bars.items()))
    goals = targets(data)
    if len(sys.argv) == 6:
        goals.append(gemm_target(sys.argv[5]))
    lines.append("\nissues 10 and 11, forward bars in this run:")
    lines += [f"  {verdict[t['holds']]:>12}  {t['bar']}: {t['figures']}" for t in goals]
    print("\n".join(lines))
    first = shapes[0] if shapes else TUTORIAL
    # the run's own record where the caller gives it; else when and how device_run.sh runs it
    doc = {"date": os.environ.get("REPORT_DATE")
           or datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
           "command": os.environ.get("REPORT_COMMAND", "bash bench/cuda/device_run.sh all"),
           "commit": os.environ.get("REPORT_COMMIT", ""),
           "shape": {"dim": first[0], "hidden": first[1], "dtype": "bf16", "bias": False, "act": "gelu_tanh"},
           "shapes": [list(s) for s in shapes],
           "ceilings": ceil, "limits": limits, "bars": bars, "targets": goals, "results": data,
           "method": "wall time of N operations between two device syncs, best of 3, each timing after 150 ms "
                     "of the same variant's operations untimed (the GPU's clock under its power cap) and, from "
                     "2026-12-06, at least 50 ms long "
                     "(fmlp_bench_cuda: rounds in which its variants take turns, three before 2026-12-04, then five, "
                     "every other one in reverse; us_rounds lists each round's timing, and PyTorch's us_windows its three "
                     "timings in a row, where the run recorded them); cold = rotating weight "
                     "copies holding at least 512 MB (38 x 14.2 MB for the tutorial's MLP)"}
    with open(out_json, "w") as f:
        json.dump(doc, f, indent=1)
    report_png.plot(doc, out_png)


if __name__ == "__main__":
    main()
