"""Why: the small-batch bars are library-level times (fused forwards through
the API, with and without a CUDA graph, L2-warm and L2-cold) on two shapes;
this reads small_batch.sh's fmlp_bench_cuda output (JSON lines) and prints
one table with each bar and its verdict.
Usage: python3 bench/cuda/small_table.py OUT_DIR"""
import json
import os
import sys

# (shape, rows, variant, L2) -> bar in us (the targets on the H200)
BARS = {
    ("tutorial", 1, "fused+graph", "warm"): 6.0,
    ("tutorial", 1, "fused+graph", "cold"): 7.0,
    ("tutorial", 16, "fused+graph", "warm"): 6.0,
    ("tutorial", 16, "fused+graph", "cold"): 7.0,
    ("tutorial", 128, "fused+graph", "cold"): 9.0,
    ("tutorial", 1, "fused", "warm"): 9.0,
    ("llama", 1, "fused+graph", "cold"): 88.0,
    ("llama", 16, "fused+graph", "cold"): 88.0,
}
WEIGHT_BYTES = {"tutorial": 3 * 768 * 3072 * 2, "llama": 3 * 4096 * 14336 * 2}


def rows_of(path):
    if not os.path.exists(path):
        return []
    out = []
    for line in open(path):
        try:
            r = json.loads(line)
        except ValueError:
            continue
        if r.get("variant") in ("fused", "fused+graph"):
            out.append(r)
    return out


def main(out_dir):
    print("%-9s %-10s %5s %-12s %-5s %9s %7s  %-14s %s" %
          ("shape", "one-kernel", "rows", "variant", "L2", "us", "GB/s", "bar", "first kernel"))
    missed = 0
    for shape in ("tutorial", "llama"):
        for tag, k1 in (("", "on"), ("_2k", "off")):
            for r in rows_of(os.path.join(out_dir, "bench_small_%s%s.jsonl" % (shape, tag))):
                bar = BARS.get((shape, r["rows"], r["variant"], r["l2"]))
                verdict = ""
                if bar is not None and k1 == "on":
                    ok = r["us"] <= bar
                    missed += not ok
                    verdict = "<= %.1f %s" % (bar, "ok" if ok else "MISSED")
                print("%-9s %-10s %5d %-12s %-5s %9.2f %7.0f  %-14s %s (%d kernels)" %
                      (shape, k1, r["rows"], r["variant"], r["l2"], r["us"], WEIGHT_BYTES[shape] / r["us"] / 1e3,
                       verdict, r.get("first_kernel", "?"), r.get("kernels", 0)))
    print("bars missed: %d" % missed)


if __name__ == "__main__":
    main(sys.argv[1])
