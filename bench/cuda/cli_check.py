"""Why: the CLI is what a user runs, the benchmark what the results cite;
on the GPU both must say the same thing. Compares the per-mode times that
`fmlp mlp --device cuda --mode all` printed with fmlp_bench_cuda's
device-resident, L2-warm figures for the same rows, and fused's speedup
over eager, each with a one-line verdict of the 10% check.
Usage: cli_check.py cli.log bench_fmlp.jsonl ROWS"""
import json
import re
import sys

MODES = ("eager", "compiled", "fused")
UNIT_US = {"us": 1.0, "ms": 1e3, "s": 1e6}


def cli_times(path):
    times = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"^(eager|compiled|fused): ([0-9.]+) (us|ms|s) per forward", line)
            if m:
                times[m.group(1)] = float(m.group(2)) * UNIT_US[m.group(3)]
    return times


def bench_times(path, rows):
    times = {}
    with open(path) as f:
        for line in f:
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r.get("impl") == "fmlp" and r.get("rows") == rows and r.get("l2") == "warm" and r["variant"] in MODES:
                times[r["variant"]] = r["us"]
    return times


def main():
    cli_log, bench_log, rows = sys.argv[1], sys.argv[2], int(sys.argv[3])
    cli, bench = cli_times(cli_log), bench_times(bench_log, rows)
    ok = True
    print("CLI vs fmlp_bench_cuda, %d rows, L2 warm, device-resident:" % rows)
    for m in MODES:
        if m not in cli or m not in bench:
            print("  %-9s missing (cli %s, bench %s): FAIL" % (m, cli.get(m), bench.get(m)))
            ok = False
            continue
        d = cli[m] / bench[m] - 1
        good = abs(d) <= 0.10
        ok &= good
        print("  %-9s cli %8.1f us  bench %8.1f us  %+6.1f%%  within 10%%: %s" % (m, cli[m], bench[m], d * 100,
                                                                             "PASS" if good else "FAIL"))
    if all(m in cli and m in bench for m in ("eager", "fused")):
        sc, sb = cli["eager"] / cli["fused"], bench["eager"] / bench["fused"]
        d = sc / sb - 1
        good = abs(d) <= 0.10
        ok &= good
        print("  fused over eager: cli %.2fx, bench %.2fx (%+.1f%%): %s" % (sc, sb, d * 100, "PASS" if good else "FAIL"))
    print("verdict: %s" % ("PASS" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
