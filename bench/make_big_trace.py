#!/usr/bin/env python3
"""Writes a torch.profiler-style trace of a chosen size, for timing
`fmlp trace summarize` on files as large as real training runs produce.

The file follows Kineto's export_chrome_trace layout and formatting (one
event per indented block, the same keys and args): a main thread stepping
ProfilerStep#N spans, each step a stack of layers whose cpu_ops
(aten::linear > aten::t > aten::transpose, aten::matmul > aten::reshape,
aten::mm with its FLOPs, aten::gelu, aten::copy_) launch GPU kernels and copies
through cuda_runtime calls, joined by ac2g flows and External ids; a
data-loader thread with its own ops; deviceProperties, distributedInfo and
baseTimeNanoseconds up front and the M events naming lanes at the end. As
Kineto does, CPU events are written before the GPU activity of the same
steps, so the file is not in time order.

    bench/make_big_trace.py --bytes 1000000000 --out /tmp/big.json
    bench/make_big_trace.py --bytes 50000000 --out /tmp/big.json.gz

Prints one JSON line: bytes written (uncompressed), events, steps.
"""
import argparse
import gzip
import json
import random
import sys

PID, TID, LOADER_TID, GPU_PID, STREAM = 4711, 4711, 4790, 0, 7
GEMM = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
GELU = ("void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, "
        "at::native::GeluType)::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, "
        "std::array<char*, 2ul> >(int, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&, at::native::GeluType)"
        "::{lambda()#2}::operator()() const::{lambda()#4}::operator()() const::{lambda(c10::BFloat16)#1}, std::array<char*, 2ul>)")
MEMCPY = "Memcpy DtoD (Device -> Device)"


def us(t):
    return "%.3f" % t


class Writer:
    def __init__(self, out):
        self.out = out
        self.bytes = 0
        self.events = 0
        self.first = True
        self.buf = []

    def put(self, text):
        if not self.first:
            text = ",\n" + text
        self.first = False
        self.buf.append(text)
        self.bytes += len(text)
        self.events += 1
        if len(self.buf) >= 4096:
            self.flush()

    def raw(self, text):
        self.buf.append(text)
        self.bytes += len(text)

    def flush(self):
        self.out.write("".join(self.buf))
        self.buf = []


def span(cat, name, pid, tid, ts, dur, args):
    return ('  {\n    "ph": "X", "cat": "%s", "name": %s, "pid": %d, "tid": %d,\n    "ts": %s, "dur": %s,\n'
            '    "args": {\n      %s\n    }\n  }' % (cat, json.dumps(name), pid, tid, us(ts), us(dur), args))


def flow(ph, fid, pid, tid, ts):
    end = ', "bp": "e"' if ph == "f" else ""
    return ('  {\n    "ph": "%s", "id": %d, "pid": %d, "tid": %d, "ts": %s,\n    "cat": "ac2g", "name": "ac2g"%s\n  }'
            % (ph, fid, pid, tid, us(ts), end))


class Trace:
    def __init__(self, w, rng):
        self.w, self.rng = w, rng
        self.ext = 0
        self.corr = 100
        self.ev_idx = 0
        self.cpu = []  # (text) of the steps being built, in start order
        self.gpu = []
        self.gpu_free = 0.0

    def op(self, name, ts, dur, extra="", tid=TID):
        self.ext += 1
        self.ev_idx += 1
        args = '"External id": %d,"Record function id": 0%s, "Ev Idx": %d' % (self.ext, extra, self.ev_idx)
        self.cpu.append(span("cpu_op", name, PID, tid, ts, dur, args))
        return self.ext

    def launch(self, ext, api, ts, dur, kind, name, kdur, launch_args):
        self.corr += 1 + self.rng.randrange(3)
        c = self.corr
        self.cpu.append(span("cuda_runtime", api, PID, TID, ts, dur,
                             '"External id": %d, "cbid": 211, "correlation": %d' % (ext, c)))
        self.cpu.append(flow("s", c, PID, TID, ts))
        k0 = max(ts + dur * 0.8, self.gpu_free + 0.4)
        self.gpu_free = k0 + kdur
        args = ('"External id": %d, "queued": 0, "device": 0, "context": 1, "stream": %d, "correlation": %d%s'
                % (ext, STREAM, c, launch_args))
        self.gpu.append(span(kind, name, GPU_PID, STREAM, k0, kdur, args))
        self.gpu.append(flow("f", c, GPU_PID, STREAM, k0))

    def open_op(self, name, ts, extra="", tid=TID):
        """An op whose end is not known yet: close_op fills it in."""
        self.ext += 1
        self.ev_idx += 1
        self.cpu.append(None)
        return (len(self.cpu) - 1, name, ts, self.ext, self.ev_idx, extra, tid)

    def close_op(self, o, t1):
        slot, name, ts, ext, idx, extra, tid = o
        args = '"External id": %d,"Record function id": 0%s, "Ev Idx": %d' % (ext, extra, idx)
        self.cpu[slot] = span("cpu_op", name, PID, tid, ts, t1 - ts, args)
        return t1

    def layer(self, t, dim):
        """aten::linear as torch runs it on a 3-D input, then aten::gelu."""
        r = self.rng
        lin = self.open_op("aten::linear", t)
        tr = self.open_op("aten::t", t + 0.6)
        self.op("aten::transpose", t + 1.5, 2.8)
        self.op("aten::as_strided", t + 2.7, 0.9)
        self.close_op(tr, t + 4.7)
        mat = self.open_op("aten::matmul", t + 5.3)
        rs = self.open_op("aten::reshape", t + 5.9)
        self.op("aten::view", t + 6.5, 1.1)
        self.close_op(rs, t + 8.1)
        t += 8.8
        mm_dur = 9.0 + r.random() * 4
        mm = self.op("aten::mm", t, mm_dur, ', "flops": %d' % (2 * 512 * dim * dim))
        self.launch(mm, "cudaLaunchKernel", t + 2.5, 5.5 + r.random(), "kernel", GEMM, 18 + r.random() * 30,
                    ', "registers per thread": 168, "shared memory": 213248, "blocks per SM": 0.969697, '
                    '"warps per SM": 11.636364, "grid": [%d, 1, 1], "block": [384, 1, 1], '
                    '"est. achieved occupancy %%": 0' % (dim // 16))
        t += mm_dur + 0.5
        self.op("aten::_unsafe_view", t, 1.4)
        t = self.close_op(mat, t + 2.0)
        t = self.close_op(lin, t + 0.4) + 0.8
        g_dur = 7.0 + r.random() * 2
        g = self.op("aten::gelu", t, g_dur)
        self.launch(g, "cudaLaunchKernel", t + 1.8, 4.4 + r.random(), "kernel", GELU, 3 + r.random() * 3,
                    ', "registers per thread": 32, "shared memory": 0, "blocks per SM": 11.636364, '
                    '"warps per SM": 46.545456, "grid": [1536, 1, 1], "block": [128, 1, 1], '
                    '"est. achieved occupancy %": 73')
        t += g_dur + 0.9
        if r.random() < 0.25:
            c_dur = 8.0 + r.random() * 2
            cp = self.op("aten::copy_", t, c_dur)
            self.launch(cp, "cudaMemcpyAsync", t + 1.5, 4.0, "gpu_memcpy", MEMCPY, 2.0 + r.random(),
                        ', "bytes": 4194304, "memory bandwidth (GB/s)": 1800.5')
            t += c_dur + 0.6
        return t

    def step(self, n, t, layers):
        slot = len(self.cpu)
        self.cpu.append(None)
        self.ext += 1
        self.ev_idx += 1
        step_ext, step_idx = self.ext, self.ev_idx
        t0 = t
        t += 3.0
        for _ in range(layers):
            t = self.layer(t, 4096)
            if self.rng.random() < 0.1:
                lt = t - 20 * self.rng.random()
                self.op("aten::to", lt, 6.0, tid=LOADER_TID)
                self.op("aten::empty", lt + 0.5, 1.2, tid=LOADER_TID)
        self.corr += 1
        sync_t = max(t, self.gpu_free - 30)
        sync_dur = max(2.0, self.gpu_free - sync_t + 2.0)
        self.cpu.append(span("cuda_runtime", "cudaStreamSynchronize", PID, TID, sync_t, sync_dur,
                             '"cbid": 131, "correlation": %d' % self.corr))
        t = sync_t + sync_dur + 4.0
        self.cpu[slot] = span("user_annotation", "ProfilerStep#%d" % n, PID, TID, t0, t - t0,
                              '"External id": %d,"Record function id": 0, "Ev Idx": %d' % (step_ext, step_idx))
        return t + 1.0

    def flush(self):
        for text in self.cpu:
            self.w.put(text)
        for text in self.gpu:
            self.w.put(text)
        self.cpu, self.gpu = [], []


HEADER = '''{
  "schemaVersion": 1,
  "deviceProperties": [
    {
      "id": 0, "name": "NVIDIA H200", "totalGlobalMem": 150109880320,
      "computeMajor": 9, "computeMinor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
      "regsPerBlock": 65536, "warpSize": 32,
      "sharedMemPerBlock": 49152, "numSms": 132
    , "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 232448, "sharedMemPerMultiprocessor": 233472
    }
  ],
  "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8, "pg_count": 1, "pg_config": [], "nccl_version": "2.21.5"},
  "record_shapes": 0,
  "with_flops": 1,
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1790857026000000000,
  "traceEvents": [
'''


def lanes_meta():
    out = []
    for pid, tid, pname, tname, sort in [(PID, TID, "python3", "thread %d (python3)" % TID, TID),
                                         (PID, LOADER_TID, "python3", "thread %d (pt_data_loader)" % LOADER_TID, LOADER_TID),
                                         (GPU_PID, STREAM, "GPU 0", "stream %d" % STREAM, STREAM)]:
        out.append('  {"name": "process_name", "ph": "M", "ts": 5107932000000.000, "pid": %d, "tid": 0,\n'
                   '    "args": {"name": "%s"}}' % (pid, pname))
        out.append('  {"name": "thread_name", "ph": "M", "ts": 5107932000000.000, "pid": %d, "tid": %d,\n'
                   '    "args": {"name": "%s"}}' % (pid, tid, tname))
        out.append('  {"name": "thread_sort_index", "ph": "M", "ts": 5107932000000.000, "pid": %d, "tid": %d,\n'
                   '    "args": {"sort_index": %d}}' % (pid, tid, sort))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bytes", type=float, required=True, help="uncompressed size to reach (the file ends just past it)")
    ap.add_argument("--out", required=True, help="output path; .gz compresses")
    ap.add_argument("--layers", type=int, default=24, help="layers per step (each 2-3 kernels)")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    opener = gzip.open if a.out.endswith(".gz") else open
    with opener(a.out, "wt", encoding="utf-8", newline="") as f:
        w = Writer(f)
        w.raw(HEADER)
        tr = Trace(w, random.Random(a.seed))
        t, n = 5107932000100.0, 0
        target = int(a.bytes)
        while w.bytes < target:
            for _ in range(8):
                n += 1
                t = tr.step(n, t, a.layers)
            tr.flush()
        for text in lanes_meta():
            w.put(text)
        w.raw("\n  ],\n  \"traceName\": \"big_trace\"\n}\n")
        w.flush()
    print(json.dumps({"path": a.out, "bytes": w.bytes, "events": w.events, "steps": n}))


if __name__ == "__main__":
    sys.exit(main())
