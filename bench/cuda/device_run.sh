#!/usr/bin/env bash
# Why: device time is scarce, so one script does a whole device visit:
# build, check, sanitize, benchmark, and print a short table last, with full
# logs under $OUT. Stages: kernels (the standalone kernel check and its
# sanitizer runs), full (library, tests, sanitizers, CLI, benchmarks), all.
set -u
STAGE=${1:-all}
OUT=${OUT:-/tmp/fmlp_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
note "gpu: $(tail -1 "$OUT/gpu.txt")"

if [ "$STAGE" != full ]; then
    NVFLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc"
    (nvcc $NVFLAGS bench/cuda/kernel_check.cu src/cuda/gemm.cu src/cuda/gemm_wgmma.cu src/cuda/pointwise.cu \
        -o /tmp/kernel_check >"$OUT/kernel_check_build.log" 2>&1) &
    KC_PID=$!
fi
if [ "$STAGE" != kernels ]; then
    B=/tmp/fmlp-build
    cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release "-DFMLP_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" >"$OUT/build.log" 2>&1
    cmake --build $B -j16 --target fmlp_cli fmlp_bench_cuda test_cuda_modes test_cuda_errors test_cuda_profile >>"$OUT/build.log" 2>&1
    note "build rc=$? warnings=$(grep -c -i 'warning' "$OUT/build.log")"
fi
if [ "$STAGE" != full ]; then
    wait $KC_PID
    if [ -x /tmp/kernel_check ]; then
        timeout 150 /tmp/kernel_check >"$OUT/kernel_check.log" 2>&1
        note "kernel_check rc=$? $(tail -1 "$OUT/kernel_check.log")"
        if [ "$STAGE" = kernels ]; then
            KC_QUICK=1 timeout 90 compute-sanitizer --tool racecheck /tmp/kernel_check >"$OUT/san_racecheck_kernels.log" 2>&1
            note "racecheck(kernels) rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/san_racecheck_kernels.log" | tail -1)"
        fi
    else
        note "kernel_check build FAILED"
        tail -20 "$OUT/kernel_check_build.log"
    fi
fi
if [ "$STAGE" != kernels ]; then
    bash bench/cuda/device_full.sh "$OUT" "$SUMMARY"
fi

echo "==== failures ===="
grep -h -E "^FAIL|FAIL " "$OUT"/test_cuda_*.log "$OUT"/kernel_check.log 2>/dev/null | head -30
grep -h -E "error" "$OUT/build.log" 2>/dev/null | head -10
echo "==== kernel timings ===="
sed -n '/^rows /,/^pw .*rows=1 /p' "$OUT/kernel_check.log" 2>/dev/null
echo "==== summary ===="
cat "$SUMMARY"
# at most 8 files come back from a device visit: pack the logs
(cd "$OUT" && tar czf /tmp/fmlp_logs.tgz --exclude=summary.txt --exclude='h200_*' . ; \
    find . -maxdepth 1 -type f ! -name summary.txt ! -name 'h200_*' -delete; mv /tmp/fmlp_logs.tgz logs.tgz)
