#!/usr/bin/env bash
# Why: a device visit is short, and building the library there takes
# about five minutes of it; this packs what device_run.sh runs from a
# CUDA build made here (Release, -gencode=arch=compute_90a,code=sm_90a)
# into one file for FMLP_PREBUILT, laid out as the build directory is.
# Usage: pack_prebuilt.sh BUILD_DIR OUT.tar.xz
set -eu
[ $# = 2 ] || { echo "usage: pack_prebuilt.sh BUILD_DIR OUT.tar.xz" >&2; exit 2; }
B=$1
OUT_FILE=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
for f in fmlp fmlp_bench_cuda fmlp_gemm_one tests/test_cuda_errors tests/test_profiler_cuda; do
    [ -x "$B/$f" ] || { echo "pack_prebuilt.sh: $B/$f is missing: build the CUDA targets first" >&2; exit 1; }
done
cd "$B"
tar cJf "$OUT_FILE" fmlp fmlp_bench_cuda fmlp_gemm_one tests/test_cuda_* tests/test_profiler_cuda
