#!/usr/bin/env bash
# Why: device time is scarce, so one script does a whole device visit:
# build, check, sanitize, benchmark, and print a short table last, with full
# logs under $OUT. Stages: kernels (the standalone kernel check only), full.
set -u
STAGE=${1:-full}
OUT=${OUT:-/tmp/fmlp_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
note "gpu: $(tail -1 "$OUT/gpu.txt")"

if [ "$STAGE" = kernels ]; then
NVFLAGS="-std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc"
nvcc $NVFLAGS bench/cuda/kernel_check.cu src/cuda/gemm.cu src/cuda/pointwise.cu -o /tmp/kernel_check \
    >"$OUT/kernel_check_build.log" 2>&1 || { note "kernel_check build FAILED"; tail -20 "$OUT/kernel_check_build.log"; }
if [ -x /tmp/kernel_check ]; then
    /tmp/kernel_check >"$OUT/kernel_check.log" 2>&1
    note "kernel_check rc=$? $(tail -1 "$OUT/kernel_check.log")"
    KC_QUICK=1 timeout 240 compute-sanitizer --tool memcheck /tmp/kernel_check >"$OUT/san_memcheck_kernels.log" 2>&1
    note "memcheck(kernels) rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/san_memcheck_kernels.log" | tail -1)"
    KC_QUICK=1 timeout 240 compute-sanitizer --tool racecheck /tmp/kernel_check >"$OUT/san_racecheck_kernels.log" 2>&1
    note "racecheck(kernels) rc=$? $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' "$OUT/san_racecheck_kernels.log" | tail -1)"
fi
fi

if [ "$STAGE" = full ]; then
    bash bench/cuda/device_full.sh "$OUT" "$SUMMARY"
fi

echo "==== failures ===="
grep -h -E "^FAIL|FAIL " "$OUT"/test_cuda_*.log 2>/dev/null | head -30
grep -h -E "error" "$OUT/build.log" 2>/dev/null | head -10
echo "==== kernel check (failures and timings) ===="
grep -E "^FAIL" "$OUT/kernel_check.log" 2>/dev/null | head -20
sed -n '/^rows /,$p' "$OUT/kernel_check.log" 2>/dev/null
echo "==== summary ===="
cat "$SUMMARY"
