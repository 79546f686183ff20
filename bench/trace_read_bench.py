#!/usr/bin/env python3
"""Times `fmlp trace summarize` on torch.profiler-style traces of growing
size and records time, peak memory and events/s per size, to check that
reading a trace stays linear and within its budget: at 1 GB <= 10 s and
<= 400 MB peak, and time per event at 1 GB <= 1.1x that at the smallest
size (2x the events <= 2.2x the time). Sizes past 1 GB are reported too.

Each size is generated (bench/make_big_trace.py) into a scratch directory,
measured, and deleted before the next, so the disk holds one trace at a
time. Every size runs REPEATS times under /usr/bin/time -v and the best
(shortest) run counts. A run counts only if it exits 0 and its per-step
table lists every ProfilerStep#N the generator wrote. Before each run the
script waits, up to a bound,
for the machine's 1-minute load to fall below --max-load, and records the
load it ran under.

    bench/trace_read_bench.py --fmlp build/fmlp
    bench/trace_read_bench.py --fmlp build/fmlp --sizes 100,250 --repeats 1

Writes bench/results/trace_read_<date>.json and .md.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load1():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def wait_quiet(max_load, max_wait):
    t0 = time.time()
    while load1() > max_load and time.time() - t0 < max_wait:
        time.sleep(5)
    return load1()


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def time_v(cmd, stdout_path):
    """Runs cmd under /usr/bin/time -v, its stdout to stdout_path:
    (wall s, user s, sys s, peak RSS KB, exit code)."""
    with open(stdout_path, "w") as out:
        p = subprocess.run(["/usr/bin/time", "-v"] + cmd, stdout=out, stderr=subprocess.PIPE, text=True)
    err = p.stderr

    def field(name):
        m = re.search(re.escape(name) + r":\s*(.+)", err)
        return m.group(1).strip() if m else None

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    parts = [float(x) for x in wall.split(":")]
    secs = parts[-1] + 60 * parts[-2] + (3600 * parts[-3] if len(parts) > 2 else 0)
    return secs, float(field("User time (seconds)")), float(field("System time (seconds)")), int(
        field("Maximum resident set size (kbytes)")), p.returncode


def steps_listed(stdout_path):
    """The number of ProfilerStep#N rows in a summary's per-step table."""
    pat = re.compile(r"^\s*ProfilerStep#\d+\s")
    with open(stdout_path) as f:
        return sum(1 for line in f if pat.match(line))


BARS = {"max_s_1gb": 10.0, "max_rss_mb_1gb": 400.0, "max_time_per_event_ratio": 1.1}


def bars(results):
    """The bars, judged on the size nearest 1 GB, and its time per event against the smallest size's."""
    big = min(results, key=lambda r: abs(r["size_mb"] - 1000))
    ratio = big["time_per_event_vs_smallest"]
    return {"size_mb": big["size_mb"],
            "time_s": big["best"]["wall_s"], "time_ok": big["best"]["wall_s"] <= BARS["max_s_1gb"],
            "peak_rss_mb": big["best"]["peak_rss_mb"], "rss_ok": big["best"]["peak_rss_mb"] <= BARS["max_rss_mb_1gb"],
            "time_per_event_ratio": ratio, "linear_ok": ratio <= BARS["max_time_per_event_ratio"]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fmlp", required=True, help="the fmlp binary to time")
    ap.add_argument("--sizes", default="100,250,500,1000", help="trace sizes in MB (default 100,250,500,1000)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--max-load", type=float, default=1.0, help="wait for the 1-minute load to drop below this")
    ap.add_argument("--max-wait", type=float, default=300, help="seconds to wait for that at most, per run")
    ap.add_argument("--tmp", default=tempfile.gettempdir(), help="where the traces are generated")
    ap.add_argument("--out", default=os.path.join(HERE, "results"), help="directory for the .json and .md")
    a = ap.parse_args()

    sizes = sorted(int(s) for s in a.sizes.split(","))
    free = shutil.disk_usage(a.tmp).free
    if free < max(sizes) * 1e6 * 1.2:
        sys.exit("only %.1f GB free in %s; a %d MB trace needs room (use --tmp)" % (free / 1e9, a.tmp, max(sizes)))
    commit = subprocess.run(["git", "-C", HERE, "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    if subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                      capture_output=True, text=True).stdout.strip():
        commit += "-dirty"
    command = " ".join([os.path.relpath(sys.argv[0])] + sys.argv[1:])
    results = []
    scratch = tempfile.mkdtemp(prefix="fmlp-trace-bench-", dir=a.tmp)
    try:
        for mb in sizes:
            path = os.path.join(scratch, "trace_%dMB.json" % mb)
            summary = os.path.join(scratch, "summary.txt")
            gen = subprocess.run([sys.executable, os.path.join(HERE, "make_big_trace.py"), "--bytes", str(mb * 1e6),
                                  "--out", path], capture_output=True, text=True, check=True)
            info = json.loads(gen.stdout)
            runs = []
            for _ in range(a.repeats):
                load = wait_quiet(a.max_load, a.max_wait)
                wall, user, sys_s, rss, rc = time_v([a.fmlp, "trace", "summarize", path], summary)
                if rc != 0:
                    sys.exit("fmlp trace summarize %s failed (exit %d)" % (path, rc))
                listed = steps_listed(summary)
                if listed != info["steps"]:
                    sys.exit("fmlp trace summarize %s listed %d steps, the trace has %d" % (path, listed, info["steps"]))
                runs.append({"wall_s": wall, "user_s": user, "sys_s": sys_s, "peak_rss_mb": rss * 1024 / 1e6, "load_1min": load})
            os.remove(path)
            best = min(runs, key=lambda r: r["wall_s"])
            row = {"size_mb": mb, "bytes": info["bytes"], "events": info["events"], "steps": info["steps"],
                   "best": best, "runs": runs, "events_per_s": info["events"] / best["wall_s"],
                   "mb_per_s": info["bytes"] / 1e6 / best["wall_s"]}
            results.append(row)
            print("%5d MB  %8d events  %6.2f s  %6.1f MB peak  %9.0f events/s  (load %.2f)" %
                  (mb, info["events"], best["wall_s"], best["peak_rss_mb"], row["events_per_s"], best["load_1min"]))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    # Linearity: time per event at each size against the smallest.
    base = results[0]["best"]["wall_s"] / results[0]["events"]
    for r in results:
        r["time_per_event_vs_smallest"] = r["best"]["wall_s"] / r["events"] / base
    date = datetime.date.today().isoformat()
    verdict = bars(results)
    doc = {"benchmark": "fmlp trace summarize on torch.profiler-style traces (bench/make_big_trace.py)",
           "date": date, "commit": commit, "command": command,
           "machine": {"cpu": cpu_model(), "cores": os.cpu_count(), "kernel": platform.release()},
           "repeats": a.repeats, "best_of": "shortest wall time", "results": results, "bars": BARS, "verdict": verdict}
    os.makedirs(a.out, exist_ok=True)
    stem = os.path.join(a.out, "trace_read_%s" % date)
    with open(stem + ".json", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    with open(stem + ".md", "w") as f:
        f.write("# fmlp trace summarize, %s (commit %s)\n\n" % (date, commit))
        f.write("%s, %d cores; best of %d runs each; `/usr/bin/time -v`. Traces from bench/make_big_trace.py "
                "(Kineto layout: cpu_ops with External ids, cuda_runtime launches, GPU kernels, ac2g flows, "
                "ProfilerStep#N).\n\n" % (doc["machine"]["cpu"], doc["machine"]["cores"], a.repeats))
        f.write("Command: `%s`\n\n" % command)
        f.write("| trace | events | steps | time | peak RSS | events/s | MB/s | time/event vs smallest | load (1 min) |\n")
        f.write("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
        for r in results:
            b = r["best"]
            f.write("| %d MB | %d | %d | %.2f s | %.0f MB | %.0f | %.0f | %.2f | %.2f |\n" %
                    (r["size_mb"], r["events"], r["steps"], b["wall_s"], b["peak_rss_mb"], r["events_per_s"],
                     r["mb_per_s"], r["time_per_event_vs_smallest"], b["load_1min"]))
        v = verdict
        f.write("\nBars: %d MB in %.2f s (<= %.0f s: %s), %.0f MB peak (<= %.0f MB: %s); time per event there "
                "%.2fx the smallest size's (<= %.1fx: %s). MB are 10^6 bytes; peak RSS as /usr/bin/time reports it.\n" %
                (v["size_mb"], v["time_s"], BARS["max_s_1gb"], "met" if v["time_ok"] else "MISSED",
                 v["peak_rss_mb"], BARS["max_rss_mb_1gb"], "met" if v["rss_ok"] else "MISSED",
                 v["time_per_event_ratio"], BARS["max_time_per_event_ratio"], "met" if v["linear_ok"] else "MISSED"))
    print("wrote %s.json and %s.md" % (stem, stem))


if __name__ == "__main__":
    main()
