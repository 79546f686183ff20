"""Why: the H200 lowers its clock under a software power cap within some
100 ms of matrix work (bench/results/h200_power_cap_2026-12-02.md), and the
benchmarks time each variant after 150 ms of its own forwards, so the
matrix ceiling a large-batch forward is held to is the rate the GPU
sustains, not the rate of a short burst. This measures both, through
cuBLAS (torch.matmul, bf16, random data), for a square GEMM and for the
GEMMs of the MLPs the benchmarks run: each op is timed as a burst (the
first few ms after 2 s idle) and sustained (after 400 ms of the same op,
for 300 ms), with the SM clock, power draw and throttle reasons read right
after. Prints one JSON object per line, then a table.
Usage: sustained_gemm.py"""
import json
import threading
import time

import torch
import torch.nn.functional as F

try:
    import pynvml

    pynvml.nvmlInit()
    NVML = pynvml.nvmlDeviceGetHandleByIndex(0)
except Exception:  # no NVML: clocks are reported as unknown
    NVML = None


def gpu_state():
    if NVML is None:
        return {}
    try:
        return {
            "sm_mhz": pynvml.nvmlDeviceGetClockInfo(NVML, pynvml.NVML_CLOCK_SM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(NVML) / 1000.0,
            "throttle": hex(pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(NVML)),
        }
    except pynvml.NVMLError:
        return {}


def rnd(*shape):
    return torch.randn(*shape, device="cuda", dtype=torch.bfloat16)


def run_for(fn, seconds):
    """Runs fn back to back for about `seconds`; returns (iterations, seconds) timed by events."""
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    n, total = 0, 0.0
    batch = 1
    while total < seconds:
        e0.record()
        for _ in range(batch):
            fn()
        e1.record()
        e1.synchronize()
        total += e0.elapsed_time(e1) / 1e3
        n += batch
        batch = min(batch * 2, 64)
    return n, total


def measure(name, flop, fn):
    fn()
    torch.cuda.synchronize()
    time.sleep(2.0)
    n, t = run_for(fn, 0.003)
    burst = flop * n / t / 1e12
    run_for(fn, 0.4)
    samples = []
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            samples.append(gpu_state())
            time.sleep(0.05)

    th = threading.Thread(target=sample)
    th.start()
    n, t = run_for(fn, 0.3)
    stop.set()
    th.join()
    sustained = flop * n / t / 1e12
    rec = {"op": name, "gflop": flop / 1e9, "burst_tflops": round(burst, 1), "sustained_tflops": round(sustained, 1),
           "sustained_us": round(t / n * 1e6, 2)}
    if samples and samples[0]:
        mhz = sorted(s["sm_mhz"] for s in samples)
        pw = sorted(s["power_w"] for s in samples)
        rec.update({"sm_mhz_median": mhz[len(mhz) // 2], "sm_mhz_range": [mhz[0], mhz[-1]],
                    "power_w_median": pw[len(pw) // 2], "throttle": samples[-1]["throttle"]})
    print(json.dumps(rec), flush=True)
    return rec


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    recs = []
    a, b = rnd(8192, 8192), rnd(8192, 8192)
    recs.append(measure("square 8192^3", 2 * 8192**3, lambda: torch.matmul(a, b)))
    for dim, hidden, rows_list in ((768, 3072, (8192, 32768)), (4096, 14336, (4096, 8192))):
        wgu, wd = rnd(2 * hidden, dim) * 0.02, rnd(dim, hidden) * 0.02
        for rows in rows_list:
            x, h = rnd(rows, dim), rnd(rows, hidden)
            f1, f2 = 2.0 * rows * dim * 2 * hidden, 2.0 * rows * hidden * dim
            tag = f"{dim}->{hidden} rows {rows}"
            recs.append(measure(f"{tag}: gate|up GEMM", f1, lambda: F.linear(x, wgu)))
            recs.append(measure(f"{tag}: down GEMM", f2, lambda: F.linear(h, wd)))
            recs.append(measure(f"{tag}: both GEMMs", f1 + f2, lambda: (F.linear(x, wgu), F.linear(h, wd))))
            del x, h
        del wgu, wd
    print(f"{'op':44s} {'GFLOP':>8s} {'burst TF/s':>11s} {'sustained':>10s} {'us':>9s} {'MHz':>6s} {'W':>6s}")
    for r in recs:
        print(f"{r['op']:44s} {r['gflop']:8.1f} {r['burst_tflops']:11.1f} {r['sustained_tflops']:10.1f} "
              f"{r['sustained_us']:9.2f} {r.get('sm_mhz_median', 0):6d} {r.get('power_w_median', 0):6.0f}")


if __name__ == "__main__":
    main()
