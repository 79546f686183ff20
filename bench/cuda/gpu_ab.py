#!/usr/bin/env python3
"""Why: a speed change between two commits is smaller than the H200's drift
over a minute, so two fmlp_bench_cuda builds are run in alternation, the
order swapped each round, and each case is judged by the median of its
per-round ratios (time old / time new; > 1: new faster).

Usage: gpu_ab.py OLD_BENCH NEW_BENCH [--rounds N] [--out FILE] [-- bench args]"""
import json
import statistics
import subprocess
import sys


def run(binary, args):
    out = subprocess.run([binary] + args, check=True, capture_output=True, text=True).stdout
    rows = {}
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
            if r.get("impl") == "fmlp":
                rows[(r["variant"], r["rows"], r["l2"])] = r["us"]
    return rows


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        extra = argv[argv.index("--") + 1:]
        argv = argv[:argv.index("--")]
    if len(argv) < 2:
        sys.exit(__doc__)
    old, new = argv[0], argv[1]
    rounds, out_path = 8, None
    i = 2
    while i < len(argv):
        if argv[i] == "--rounds":
            rounds = int(argv[i + 1])
        elif argv[i] == "--out":
            out_path = argv[i + 1]
        else:
            sys.exit(f"gpu_ab.py: unknown option {argv[i]!r}\n{__doc__}")
        i += 2
    ratios, raw = {}, []
    for r in range(rounds):
        order = [("old", old), ("new", new)] if r % 2 == 0 else [("new", new), ("old", old)]
        times = {name: run(binary, extra) for name, binary in order}
        raw.append({"round": r, "old": {str(k): v for k, v in times["old"].items()},
                                     "new": {str(k): v for k, v in times["new"].items()}})
        for key, t_old in times["old"].items():
            if key in times["new"] and times["new"][key] > 0:
                ratios.setdefault(key, []).append(t_old / times["new"][key])
    lines = [f"GPU A/B, fmlp_bench_cuda, time old/new (> 1: new faster), median of {rounds} alternating rounds"]
    worst = None
    for key in sorted(ratios, key=lambda k: (k[0], k[1], k[2])):
        med = statistics.median(ratios[key])
        worst = med if worst is None else min(worst, med)
        lines.append(f"{key[0]:<12} {key[1]:>6} {key[2]}  {med:.3f}  (range {min(ratios[key]):.3f}-{max(ratios[key]):.3f})")
    lines.append(f"worst median old/new: {worst:.3f} over {len(ratios)} cases")
    print("\n".join(lines))
    if out_path:
        with open(out_path, "w") as f:
            json.dump({"rounds": raw, "median": {str(k): statistics.median(v) for k, v in ratios.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
