"""Why: turns the two benchmark streams (fmlp's and PyTorch's JSON lines)
into the committed result: one JSON with every figure, the machine and the
floors, a PNG plot, and a short table with the bars of issue 4 checked.
Usage: report.py fmlp.jsonl torch.jsonl out.json out.png"""
import datetime
import json
import sys

DIM, HIDDEN = 768, 3072


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


def main():
    fm, tr, out_json, out_png = sys.argv[1:5]
    rows_f, rows_t = load(fm), load(tr)
    ceil = next(r for r in rows_t if r["impl"] == "ceiling")
    limit = next((r for r in rows_t if r["impl"] == "limit"), None)
    data = [r for r in rows_f + rows_t if r["impl"] in ("fmlp", "torch")]
    for r in data:
        n = r["rows"]
        flops = 2.0 * n * DIM * HIDDEN * 3
        nbytes = 2 * (3 * DIM * HIDDEN + 2 * n * DIM)
        floor_us = max(flops / (ceil["gemm_bf16_tflops"] * 1e12), nbytes / (ceil["copy_gbps"] * 1e9)) * 1e6
        r["floor_us"] = floor_us
        r["x_floor"] = r["us"] / floor_us

    def get(impl, var, n, l2):
        for r in data:
            if r["impl"] == impl and r["variant"] == var and r["rows"] == n and r["l2"] == l2:
                return r["us"]
        return None

    rows = sorted({r["rows"] for r in data})
    lines = []
    # None: not measured (a side missing); a bar holds only where it was compared
    bars = {"eager_within_10pct": None, "fused_graph_beats_torch_graph_rows_le_128": None,
            "fused_8192_le_1.15x_compile": None}

    def judge(name, ok):
        bars[name] = ok and bars[name] is not False
    for l2 in ("warm", "cold"):
        lines.append(f"\nL2 {l2}: us per forward; floor = max(FLOPs / bf16 GEMM peak, bytes / copy bandwidth)")
        hdr = ["rows", "floor", "fm eager", "fm comp", "fm fused", "fm f+graph", "pt eager", "pt compile", "pt e+graph",
               "pt merged+g", "fused+g vs best pt graph", "fused vs compile"]
        lines.append(" ".join(f"{h:>11}" for h in hdr))
        for n in rows:
            fl = next(r["floor_us"] for r in data if r["rows"] == n)
            v = [get("fmlp", "eager", n, l2), get("fmlp", "compiled", n, l2), get("fmlp", "fused", n, l2),
                 get("fmlp", "fused+graph", n, l2), get("torch", "eager", n, l2), get("torch", "compile", n, l2),
                 get("torch", "eager+graph", n, l2), get("torch", "merged+graph", n, l2)]
            cells = [f"{n:>11}", f"{fl:>11.1f}"] + [f"{x:>11.1f}" if x else f"{'-':>11}" for x in v]
            pt_graph = min([x for x in v[6:8] if x], default=None)
            sp1 = pt_graph / v[3] if v[3] and pt_graph else 0
            sp2 = v[5] / v[2] if v[2] and v[5] else 0
            cells += [f"{sp1:>10.2f}x", f"{sp2:>10.2f}x"]
            lines.append(" ".join(cells))
            if l2 == "warm":
                if v[0] and v[4]:
                    judge("eager_within_10pct", v[0] <= 1.10 * v[4])
                if n <= 128 and v[3] and pt_graph:
                    judge("fused_graph_beats_torch_graph_rows_le_128", v[3] < pt_graph)
                if n == 8192 and v[2] and v[5]:
                    judge("fused_8192_le_1.15x_compile", v[2] <= 1.15 * v[5])
    lines.append(f"\nceilings: bf16 GEMM {ceil['gemm_bf16_tflops']:.0f} TFLOP/s, copy {ceil['copy_gbps']:.0f} GB/s "
                 f"({ceil['device']}, torch {ceil['torch']})")
    if limit:
        lines.append(f"limits: one-kernel graph replay {limit['graph_replay_one_kernel_us']:.2f} us back to back; "
                     f"reading the {limit['weight_bytes'] / 1e6:.1f} MB of weights "
                     f"{limit['read_weights_us']['warm']:.2f} us L2-warm ({limit['read_weights_gbps']['warm']:.0f} GB/s), "
                     f"{limit['read_weights_us']['cold']:.2f} us cold ({limit['read_weights_gbps']['cold']:.0f} GB/s)")
    verdict = {True: "HOLDS", False: "FAILS", None: "NOT MEASURED"}
    lines.append("bars (L2 warm, wall time per forward): " + ", ".join(f"{k}={verdict[v]}" for k, v in bars.items()))
    text = "\n".join(lines)
    print(text)
    with open(out_json, "w") as f:
        json.dump({"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
                   "command": "bash bench/cuda/device_run.sh all",
                   "shape": {"dim": DIM, "hidden": HIDDEN, "dtype": "bf16", "bias": False, "act": "gelu_tanh"},
                   "ceilings": ceil, "limits": limit, "bars": bars, "results": data,
                   "method": "wall time of N forwards between two device syncs, best of 3; cold = rotating weight "
                             "copies holding at least 512 MB (37 x 14.2 MB)"}, f, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 2, figsize=(13, 5))
        for ax, l2 in zip(axes, ("warm", "cold")):
            for impl, var, style in (("fmlp", "eager", "b--"), ("fmlp", "compiled", "b:"), ("fmlp", "fused", "b-"),
                                     ("fmlp", "fused+graph", "b-o"), ("torch", "eager", "r--"),
                                     ("torch", "compile", "r-"), ("torch", "eager+graph", "r-o")):
                xs = [n for n in rows if get(impl, var, n, l2)]
                ax.plot(xs, [get(impl, var, n, l2) for n in xs], style, label=f"{impl} {var}")
            ax.plot(rows, [next(r["floor_us"] for r in data if r["rows"] == n) for n in rows], "k-", lw=0.8,
                    label="floor")
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel("rows")
            ax.set_ylabel("us per forward")
            ax.set_title(f"GeGLU 768->3072->768 bf16, H200, L2 {l2}")
            ax.grid(True, which="both", alpha=0.3)
        axes[0].legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_png, dpi=110)
    except ImportError:
        print("matplotlib missing: no plot")


if __name__ == "__main__":
    main()
