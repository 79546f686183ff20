#!/usr/bin/env bash
# Why: device time is scarce, so one script does a whole device visit:
# build, check, sanitize, benchmark, and print a short table last, with full
# logs under $OUT. Stages: kernels (the standalone kernel check, its SASS and
# its sanitizer runs), checks (library, GPU tests, their sanitizers), bench
# (library, benchmarks of both MLP shapes against PyTorch, CLI, report),
# quick (the GPU tests without their sanitizers, then bench: one call where
# device time is short), full (checks and bench), all (kernels and full;
# the rest is skipped when the kernel check fails). A visit's call runs at
# most ten minutes: kernels, checks, bench and quick each fit one.
# SKIP_TORCH=1 leaves out the PyTorch side and its report (a visit short of time).
# REPORT_COMMIT=<commit> names the commit in the report (the device's copy of
# the tree has no git history).
# A kernel_check built elsewhere can be carried as build-dev/kernel_check.
# FMLP_PREBUILT=<file.tar.xz> (bench/cuda/pack_prebuilt.sh makes it) takes
# the library's binaries from there instead of building them here (the
# build alone takes about five of a visit's minutes).
set -u
STAGE=${1:-all}
case "$STAGE" in
kernels | checks | bench | quick | full | all) ;;
*) echo "device_run.sh: unknown stage '$STAGE'; use kernels, checks, bench, quick, full or all" >&2; exit 2 ;;
esac
OUT=${OUT:-/tmp/fmlp_out}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
SUMMARY="$OUT/summary.txt"
: >"$SUMMARY"
note() { echo "$*" | tee -a "$SUMMARY"; }
KC=/tmp/kernel_check

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv >"$OUT/gpu.txt" 2>&1
note "gpu: $(tail -1 "$OUT/gpu.txt")"

if [ "$STAGE" != kernels ]; then
    B=/tmp/fmlp-build
    if [ -n "${FMLP_PREBUILT:-}" ]; then
        (mkdir -p $B && tar xJf "$FMLP_PREBUILT" -C $B && echo "prebuilt: $FMLP_PREBUILT" >"$OUT/build.log"
         echo "rc=$?" >>"$OUT/build.log") &
    else
        (cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release "-DFMLP_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" >"$OUT/build.log" 2>&1 &&
            cmake --build $B -j16 >>"$OUT/build.log" 2>&1
         echo "rc=$?" >>"$OUT/build.log") &
    fi
    BUILD_PID=$!
fi
KC_RC=0
if [ "$STAGE" = kernels ] || [ "$STAGE" = all ]; then
    if [ -x build-dev/kernel_check ] && KC_QUICK=1 timeout 60 build-dev/kernel_check >"$OUT/kernel_check_quick.log" 2>&1; then
        cp build-dev/kernel_check $KC
        note "kernel_check: carried binary, quick check $(tail -1 "$OUT/kernel_check_quick.log")"
    else
        nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc bench/cuda/kernel_check.cu src/cuda/gemm.cu \
            src/cuda/gemm_tma.cu src/cuda/pointwise.cu src/cuda/gemv_row.cu -lcublasLt -lcuda -o $KC >"$OUT/kernel_check_build.log" 2>&1
        note "kernel_check: built here rc=$?"
    fi
    if [ -x $KC ]; then
        cuobjdump --dump-sass $KC 2>/dev/null | grep -oE "^ *(/\*[0-9a-f]+\*/)? *[A-Z][A-Z0-9.]+" | awk '{print $NF}' |
            grep -E "^(HGMMA|UTMALDG|UTMASTG|SYNCS|HMMA|LDSM|LDGSTS)" | sed 's/\..*//' | sort | uniq -c | tr '\n' ' ' >"$OUT/sass_ops.txt"
        note "sass ops: $(cat "$OUT/sass_ops.txt")"
        timeout 240 $KC >"$OUT/kernel_check.log" 2>&1
        KC_RC=$?
        note "kernel_check rc=$KC_RC $(tail -1 "$OUT/kernel_check.log")"
        KC_QUICK=1 timeout 120 compute-sanitizer --tool memcheck $KC >"$OUT/san_memcheck_kernels.log" 2>&1
        note "memcheck(kernels) rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/san_memcheck_kernels.log" | tail -1)"
        KC_QUICK=1 timeout 120 compute-sanitizer --tool racecheck $KC >"$OUT/san_racecheck_kernels.log" 2>&1
        note "racecheck(kernels) rc=$? $(grep -E 'RACECHECK SUMMARY' "$OUT/san_racecheck_kernels.log" | tail -1)"
        KC_QUICK=1 timeout 120 compute-sanitizer --tool synccheck $KC >"$OUT/san_synccheck_kernels.log" 2>&1
        note "synccheck(kernels) rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/san_synccheck_kernels.log" | tail -1)"
    else
        KC_RC=1
        note "kernel_check build FAILED"
        tail -20 "$OUT/kernel_check_build.log"
    fi
fi
if [ "$STAGE" != kernels ]; then
    wait $BUILD_PID
    note "build $(tail -1 "$OUT/build.log") warnings=$(grep -c -i 'warning' "$OUT/build.log")"
    if [ "$KC_RC" = 0 ] || [ -n "${FORCE:-}" ]; then
        bash bench/cuda/device_full.sh "$OUT" "$SUMMARY" "$(case "$STAGE" in checks | bench | quick) echo "$STAGE" ;; *) echo full ;; esac)"
    else
        note "full stage skipped: the kernel check failed"
    fi
fi

echo "==== failures ===="
grep -h -E "^FAIL|FAIL " "$OUT"/test_cuda_*.log "$OUT"/kernel_check.log 2>/dev/null | head -30
grep -h -E "error" "$OUT/build.log" 2>/dev/null | head -10
echo "==== kernel timings ===="
sed -n '/^rows /,/^pw .*rows=1 /p' "$OUT/kernel_check.log" 2>/dev/null
echo "==== summary ===="
cat "$SUMMARY"
# at most 8 files come back from a device visit: pack the logs
(cd "$OUT" && tar czf /tmp/fmlp_logs.tgz --exclude=summary.txt --exclude='h[0-9]*_mlp*' . ; \
    find . -mindepth 1 -maxdepth 1 ! -name summary.txt ! -name 'h[0-9]*_mlp*' -exec rm -rf {} +; mv /tmp/fmlp_logs.tgz logs.tgz)
