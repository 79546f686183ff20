"""Why: a reshaping of the CPU code must not cost speed, and on a shared
machine only a paired comparison in one run means anything. This runs two
builds of fmlp (A = before, B = after) in alternation, round after round,
on the GEMM benchmark of each CPU path and on the CLI's MLP forwards, and
reports per case the median of the per-round ratios B/A of throughput
(> 1: B is faster). Each round's figure is the best of the benchmark's own
repetitions.

Usage: python3 bench/cpu_ab.py A_BUILD B_BUILD [--rounds 5] [--threads N]
           [--paths avx512,avx512bf16,amx] [--rows 1,16,128,1024] [--json OUT]
           [--dim 768 --hidden 3072] [--max-seconds S]"""
import argparse
import json
import re
import statistics
import subprocess
import time


def gemm(build, path, dtype, rows, threads, seconds, shape):
    out = subprocess.run([build + "/bench/gemm_bench", "--path", path, "--dtype", dtype, "--rows", rows,
                          "--threads", str(threads), "--seconds", str(seconds)] + shape,
                         capture_output=True, text=True, check=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 10 and f[0] == dtype and f[1] == path:
            res[("gemm", path, dtype, int(f[2]), "glu")] = float(f[3])
            res[("gemm", path, dtype, int(f[2]), "down")] = float(f[6])
            res[("gemm", path, dtype, int(f[2]), "pointwise")] = float(f[9])
    return res


def mlp(build, dtype, rows, threads, iters, shape):
    out = subprocess.run([build + "/fmlp", "mlp", "--mode", "all", "--no-profile", "--iters", str(iters),
                          "--batch", "1", "--seq", str(rows), "--threads", str(threads), "--dtype", dtype] + shape,
                         capture_output=True, text=True, check=True).stdout
    res = {}
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6}
    for line in out.splitlines():
        m = re.match(r"^(eager|compiled|fused)\s+([0-9.]+) (s|ms|us)\b", line)
        if m:  # forwards per second, so that higher is better as for the GEMMs
            res[("mlp", "default", dtype, rows, m.group(1))] = 1.0 / (float(m.group(2)) * scale[m.group(3)])
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--paths", default="avx512,avx512bf16,amx")
    ap.add_argument("--rows", default="1,16,128,1024")
    ap.add_argument("--mlp-rows", default="1,16,1024")
    ap.add_argument("--seconds", type=float, default=0.1)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--hidden", type=int, default=3072)
    ap.add_argument("--mlp-iters", type=int, default=None, help="forwards per MLP timing (default: 20 up to 16 rows, else 5)")
    ap.add_argument("--json")
    ap.add_argument("--max-seconds", type=float, default=None,
                    help="start no round after this long, and report the rounds done")
    o = ap.parse_args()
    shape = ["--dim", str(o.dim), "--hidden", str(o.hidden)]
    cases = []
    for p in o.paths.split(","):
        for dt in (["bf16"] if p in ("avx512bf16", "amx") else ["f32", "bf16"]):
            cases.append(lambda b, p=p, dt=dt: gemm(b, p, dt, o.rows, o.threads, o.seconds, shape))
    for dt in ("f32", "bf16"):
        for r in o.mlp_rows.split(","):
            iters = o.mlp_iters or (20 if int(r) <= 16 else 5)
            cases.append(lambda b, dt=dt, r=int(r), n=iters: mlp(b, dt, r, o.threads, n, shape))
    ratios = {}
    start = time.monotonic()
    done = 0
    for rnd in range(o.rounds):
        if o.max_seconds is not None and rnd > 0 and time.monotonic() - start > o.max_seconds:
            break
        done += 1
        for case in cases:
            first, second = (o.a, o.b) if rnd % 2 == 0 else (o.b, o.a)
            r1, r2 = case(first), case(second)
            ra, rb = (r1, r2) if first == o.a else (r2, r1)
            for k in ra:
                if k in rb and ra[k] > 0:
                    ratios.setdefault(k, []).append(rb[k] / ra[k])
    rows = []
    print("%-5s %-11s %-5s %6s %-10s %8s %8s %8s" % ("what", "path", "dtype", "rows", "part", "median", "min", "max"))
    for k in sorted(ratios, key=str):
        v = ratios[k]
        med = statistics.median(v)
        rows.append({"what": k[0], "path": k[1], "dtype": k[2], "rows": k[3], "part": k[4], "median_ratio": med,
                     "ratios": v})
        print("%-5s %-11s %-5s %6d %-10s %8.3f %8.3f %8.3f" % (k + (med, min(v), max(v))))
    worst = min(r["median_ratio"] for r in rows) if rows else float("nan")
    print("worst median ratio B/A: %.3f over %d cases, %d rounds" % (worst, len(rows), done))
    if o.json:
        with open(o.json, "w") as f:
            json.dump({"a": o.a, "b": o.b, "rounds": done, "threads": o.threads, "dim": o.dim, "hidden": o.hidden,
                       "cases": rows}, f, indent=1)


if __name__ == "__main__":
    main()
