"""Why: a results table says how far apart the curves are; a chart shows
where each path turns from launch-bound to memory- and compute-bound and
how far it sits above the limits measured beside it. Draws, from a GPU
result JSON (what report.py writes, or a committed bench/results/h200_*.json),
one PNG per MLP shape: us per forward against rows, every fmlp mode and
every PyTorch path, an L2-warm and an L2-cold panel, with the floor and the
limits (graph replay, reading the weight bytes) as lines.
matplotlib is optional: without it, nothing is drawn and it says so.
Usage: report_png.py result.json [out.png] (several shapes: out_<dim>x<hidden>.png)"""
import json
import os
import re
import sys

TUTORIAL = (768, 3072)
# (colour, line style, marker); fmlp in blues and greens, PyTorch in reds
STYLES = {
    ("fmlp", "eager"): ("tab:blue", "--", ""),
    ("fmlp", "compiled"): ("tab:blue", ":", ""),
    ("fmlp", "fused"): ("tab:blue", "-", ""),
    ("fmlp", "fused+graph"): ("tab:blue", "-", "o"),
    ("fmlp", "auto"): ("tab:cyan", "-.", "x"),
    ("fmlp", "two-kernel fused"): ("tab:green", "-", ""),
    ("fmlp", "two-kernel fused+graph"): ("tab:green", "-", "s"),
    ("torch", "eager"): ("tab:red", "--", ""),
    ("torch", "compile"): ("tab:red", "-", ""),
    ("torch", "eager+graph"): ("tab:red", "-", "o"),
    ("torch", "merged+graph"): ("tab:orange", "-", "^"),
}
OTHER = {"fmlp": ("tab:purple", "-", "d"), "torch": ("tab:brown", "-", "v")}
# what each measuring program called a limit over the visits
REPLAY_ONE = ("graph_replay_one_kernel_us", "graph_replay_one_kernel_us_python_loop")
REPLAY_TWO = ("graph_replay_two_kernels_us",)
READ = ("read_weights_us", "torch_sum_read_weights_us")


def shape_of(rec, default):
    """(dim, hidden) of a result or limit record: its own fields, a shape name
    such as "llama3_8b_4096x14336", or the document's."""
    if "dim" in rec and "hidden" in rec:
        return int(rec["dim"]), int(rec["hidden"])
    m = re.search(r"(\d+)x(\d+)", str(rec.get("shape", "")))
    return (int(m.group(1)), int(m.group(2))) if m else default


def first(rec, keys):
    return next((rec[k] for k in keys if k in rec), None)


def limits_of(doc, default):
    """{(dim, hidden): [(source, replay_one_us, replay_two_us, {l2: read_us})]}
    from a document's "limits": a list of limit lines (report.py today), one
    limit line (report.py before), or records keyed by shape name (written
    by hand)."""
    raw = doc.get("limits")
    if isinstance(raw, dict) and "impl" in raw:
        recs = [(raw, default)]
    elif isinstance(raw, dict):
        recs = [(v, shape_of({"shape": k}, None)) for k, v in raw.items() if isinstance(v, dict)]
    else:
        recs = [(r, default) for r in raw or []]
    out = {}
    for rec, fallback in recs:
        shape = shape_of(rec, fallback)
        if shape is None:
            continue
        source = "fmlp" if str(rec.get("source", "")).startswith("fmlp") else "torch"
        out.setdefault(shape, []).append((source, first(rec, REPLAY_ONE), first(rec, REPLAY_TWO),
                                          first(rec, READ) or {}))
    return out


def device_of(doc):
    ceil = doc.get("ceilings") or {}
    for name in (ceil.get("device"), doc.get("gpu")):
        if name:
            return str(name).split(" (")[0]
    lim = doc.get("limits")
    for rec in lim if isinstance(lim, list) else []:
        if rec.get("device"):
            return rec["device"]
    return "GPU"


def out_paths(out_png, shapes):
    if len(shapes) == 1:
        return {shapes[0]: out_png}
    stem, ext = os.path.splitext(out_png)
    return {s: f"{stem}_{s[0]}x{s[1]}{ext or '.png'}" for s in shapes}


def plot(doc, out_png):
    """Writes one PNG per shape of doc["results"]; returns the paths written
    (none, with a line saying why, when matplotlib is not installed)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("PNG skipped: matplotlib not installed (Debian: apt-get install python3-matplotlib)")
        return []
    sh = doc.get("shape") or {}
    default = (int(sh["dim"]), int(sh["hidden"])) if "dim" in sh and "hidden" in sh else TUTORIAL
    results = [r for r in doc.get("results", []) if r.get("impl") in ("fmlp", "torch") and "us" in r]
    by_shape = {}
    for r in results:
        by_shape.setdefault(shape_of(r, default), []).append(r)
    limits = limits_of(doc, default)
    device = device_of(doc)
    written = []
    for shape, path in out_paths(out_png, sorted(by_shape)).items():
        recs = by_shape[shape]
        fig, axes = plt.subplots(1, 2, figsize=(14, 5.6), sharey=True)
        for ax, l2 in zip(axes, ("warm", "cold")):
            draw_panel(ax, recs, limits.get(shape, []), l2)
            ax.set_title(f"GeGLU {shape[0]}->{shape[1]}->{shape[0]} bf16, {device}, L2 {l2}")
        handles, labels = [], []
        for ax in axes:
            for h, lab in zip(*ax.get_legend_handles_labels()):
                if lab not in labels:
                    handles.append(h)
                    labels.append(lab)
        fig.legend(handles, labels, loc="lower center", ncol=5, fontsize=8, frameon=False)
        fig.tight_layout(rect=(0, 0.06 + 0.025 * (len(labels) // 5), 1, 1))
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
        print(f"wrote {path}")
    return written


def draw_panel(ax, recs, limits, l2):
    rows = sorted({r["rows"] for r in recs})
    series = []
    for r in recs:
        key = (r["impl"], r["variant"])
        if key not in series:
            series.append(key)
    for impl, var in series:
        pts = sorted((r["rows"], r["us"]) for r in recs if (r["impl"], r["variant"]) == (impl, var) and r["l2"] == l2)
        if pts:
            colour, ls, marker = STYLES.get((impl, var), OTHER[impl])
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=colour, ls=ls, marker=marker, ms=5,
                    label=f"{impl} {var}")
    floor = sorted({(r["rows"], r["floor_us"]) for r in recs if "floor_us" in r})
    if floor:
        ax.plot([p[0] for p in floor], [p[1] for p in floor], "k-", lw=0.8, label="floor (GEMM peak, copy bandwidth)")
    for source, one, two, read in limits:
        faint = source == "torch"
        replay = "graph replay from a Python loop" if faint else "graph replay"
        for value, ls, what in ((read.get(l2), "-.", "read the weight bytes"), (one, ":", f"{replay}, 1 kernel"),
                                (two, "--", f"{replay}, 2 kernels")):
            if value and rows:
                ax.hlines(value, rows[0], rows[-1], colors="tab:gray" if faint else "k", linestyles=ls,
                          lw=0.9 if faint else 1.2, label=f"limit ({source}): {what}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rows")
    ax.set_ylabel("us per forward")
    ax.grid(True, which="both", alpha=0.3)


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("Usage: ")[1])
    with open(sys.argv[1]) as f:
        doc = json.load(f)
    plot(doc, sys.argv[2] if len(sys.argv) == 3 else os.path.splitext(sys.argv[1])[0] + ".png")


if __name__ == "__main__":
    main()
