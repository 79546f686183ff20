#!/usr/bin/env bash
# Why: the integration half of a device visit (device_run.sh builds, then
# calls it), in two parts that fit one call each: checks (the GPU tests,
# compute-sanitizer over them) and bench (the benchmark of the tutorial's
# MLP, the CLI on the GPU checked against it: per-mode times within 10% of
# the benchmark's device-resident figures, the copy line of an
# --input/--output run, the verdicts of its traces; the Llama-3-8B MLP;
# the GLU GEMM against cuBLASLt; then PyTorch on both shapes and the
# report). PART full runs both; quick runs the GPU tests without their
# sanitizers, then bench (one call where device time is short: on the
# H100 checks took about 300 s, 185 of them one racecheck run, bench 320).
# Usage: device_full.sh OUT SUMMARY [checks|bench|quick|full]
set -u
OUT=$1
SUMMARY=$2
PART=${3:-full}
note() { echo "$*" | tee -a "$SUMMARY"; }
B=/tmp/fmlp-build
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "$PART" != bench ]; then
    for t in test_cuda_tile_picks test_cuda_routes test_cuda_errors test_cuda_profile test_profiler_cuda test_cuda_kineto test_cuda_modes test_cuda_stream test_cuda_pdl \
        test_cuda_lt_tune test_cuda_one_kernel test_cuda_tp; do
        # the longest, test_cuda_one_kernel, took 35 s on the H100 (2026-12-06,
        # the f64 references on 16 threads; test_cuda_tp 9 s, against more
        # than 150 with one)
        (cd $B/tests && FMLP_TEST_TMP=/tmp/fmlp-tt timeout 150 ./$t) >"$OUT/$t.log" 2>&1
        note "$t rc=$? $(tail -1 "$OUT/$t.log")"
    done
fi
if [ "$PART" = checks ] || [ "$PART" = full ]; then
    (cd $B/tests && FMLP_TEST_TMP=/tmp/fmlp-tt timeout 100 compute-sanitizer --tool memcheck ./test_cuda_errors) >"$OUT/san_memcheck_errors.log" 2>&1
    note "memcheck(test_cuda_errors) rc=$? $(grep 'ERROR SUMMARY' "$OUT/san_memcheck_errors.log" | tail -1)"
    grep -E "Program hit|Invalid|out of bounds" "$OUT/san_memcheck_errors.log" | sort | uniq -c | head -5 >>"$SUMMARY"
    (cd $B/tests && FMLP_TEST_TMP=/tmp/fmlp-tt timeout 60 compute-sanitizer --tool racecheck ./test_cuda_errors) >"$OUT/san_racecheck_errors.log" 2>&1
    note "racecheck(test_cuda_errors) rc=$? $(grep 'RACECHECK SUMMARY' "$OUT/san_racecheck_errors.log" | tail -1)"
    # the cuBLASLt timing runs on their own stream and workspace
    (cd $B/tests && FMLP_TEST_TMP=/tmp/fmlp-tt timeout 120 compute-sanitizer --tool memcheck ./test_cuda_lt_tune) >"$OUT/san_memcheck_lt_tune.log" 2>&1
    note "memcheck(test_cuda_lt_tune) rc=$? $(grep 'ERROR SUMMARY' "$OUT/san_memcheck_lt_tune.log" | tail -1)"
    # The one-kernel MLP's grid barrier, named team barriers and cp.async, on a
    # few row counts (racecheck took 185 s on the H100, the others 10-11 s).
    for tool in memcheck racecheck synccheck; do
        (cd $B/tests && FMLP_TEST_QUICK=1 timeout 260 compute-sanitizer --tool $tool ./test_cuda_one_kernel) \
            >"$OUT/san_${tool}_one_kernel.log" 2>&1
        note "$tool(test_cuda_one_kernel) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_one_kernel.log" | tail -1)"
    done
fi
[ "$PART" = checks ] && exit 0
BENCH_DATE=$(date -u +%Y-%m-%dT%H:%MZ)
# the tutorial's MLP at issue 10's and 11's rows
ROWS=1,16,128,1024,4096,8192,32768
timeout 240 $B/fmlp_bench_cuda --rows $ROWS >"$OUT/bench_fmlp.jsonl" 2>"$OUT/bench_fmlp.err"
note "bench fmlp rc=$? lines=$(wc -l <"$OUT/bench_fmlp.jsonl")"
grep -A5 '^limits (' "$OUT/bench_fmlp.err" | tee -a "$SUMMARY"
$B/fmlp info >"$OUT/cli_info.log" 2>&1
# The tutorial's shape (64 x 128 tokens = 8192 rows, bf16), device-resident.
timeout 120 $B/fmlp mlp --device cuda --mode all --trace-dir "$OUT/traces" >"$OUT/cli.log" 2>&1
note "fmlp mlp --device cuda --mode all --trace-dir rc=$?"
grep -E "^(mode|eager|compiled|fused) " "$OUT/cli.log" | tee -a "$SUMMARY"
python3 "$HERE/cli_check.py" "$OUT/cli.log" "$OUT/bench_fmlp.jsonl" 8192 | tee -a "$SUMMARY"
for mode in eager compiled fused; do
    note "  trace $mode: $($B/fmlp trace summarize "$OUT"/traces/*_warm_$mode.json 2>&1 | grep '^Verdict' | head -1)"
done
# --input/--output: x read from a file, copied in once, y copied out once;
# the copy line is printed apart from the per-forward times.
python3 "$HERE/make_input.py" "$OUT/x.safetensors" 64 128 768
timeout 120 $B/fmlp mlp --device cuda --mode all --input "$OUT/x.safetensors" --output "$OUT/y.safetensors" --no-profile \
    >"$OUT/cli_io.log" 2>&1
note "fmlp mlp --device cuda --input/--output rc=$?"
grep -E "^(host <-> device|wrote y|fused:)" "$OUT/cli_io.log" | tee -a "$SUMMARY"
rm -f "$OUT/x.safetensors" "$OUT/y.safetensors"
# --host-io: the round trip timed on purpose; its trace's verdict is copy-bound.
timeout 120 $B/fmlp mlp --device cuda --mode fused --host-io --trace-dir "$OUT/traces_host_io" >"$OUT/cli_host_io.log" 2>&1
note "fmlp mlp --device cuda --mode fused --host-io rc=$?"
grep -E "^(host <-> device|fused:)" "$OUT/cli_host_io.log" | tee -a "$SUMMARY"
note "  trace fused --host-io: $($B/fmlp trace summarize "$OUT"/traces_host_io/*_warm_fused.json 2>&1 | grep '^Verdict' | head -1)"
FMLP_CUDA_OWN_GEMM=1 timeout 60 $B/fmlp_bench_cuda --rows 128,1024,8192 --no-limits >"$OUT/bench_fmlp_own.jsonl" 2>&1
note "fused with fmlp's own down GEMM (FMLP_CUDA_OWN_GEMM=1): $(grep '"fused"' "$OUT/bench_fmlp_own.jsonl" | grep warm | sed -E 's/.*"rows": ([0-9]+).*"us": ([0-9.]+).*/\1 rows \2 us;/' | tr '\n' ' ')"
# the Llama-3-8B MLP (4096 -> 14336 -> 4096)
LLAMA_ROWS=1,16,128,1024,4096,8192
timeout 300 $B/fmlp_bench_cuda --rows $LLAMA_ROWS --dim 4096 --hidden 14336 >"$OUT/bench_fmlp_llama.jsonl" 2>"$OUT/bench_fmlp_llama.err"
note "bench fmlp llama rc=$? lines=$(wc -l <"$OUT/bench_fmlp_llama.jsonl")"
# the GLU GEMM (gate|up with GELU-tanh) against cuBLASLt's plain GEMM of the same size
for m in 1024 4096 8192; do
    for shape in "768 3072" "4096 14336"; do
        timeout 90 $B/fmlp_gemm_one $m $shape glu lt,fmlp $([ "$shape" = "768 3072" ] && echo 10 || echo 3) >>"$OUT/gemm_only.txt" 2>&1
    done
done
grep -E "x cuBLASLt" "$OUT/gemm_only.txt" | sed -E 's/ +/ /g' | tee -a "$SUMMARY"
if [ -n "${SKIP_TORCH:-}" ]; then
    note "bench torch skipped (SKIP_TORCH set)"
    exit 0
fi
PYTHONUNBUFFERED=1 timeout 240 python3 bench/cuda/torch_bench.py $ROWS >"$OUT/bench_torch.jsonl" 2>"$OUT/bench_torch.err"
note "bench torch rc=$? lines=$(wc -l <"$OUT/bench_torch.jsonl")"
PYTHONUNBUFFERED=1 timeout 240 python3 bench/cuda/torch_bench.py $LLAMA_ROWS 4096 14336 >"$OUT/bench_torch_llama.jsonl" 2>"$OUT/bench_torch_llama.err"
note "bench torch llama rc=$? lines=$(wc -l <"$OUT/bench_torch_llama.jsonl")"
cat "$OUT/bench_fmlp.jsonl" "$OUT/bench_fmlp_llama.jsonl" >"$OUT/bench_fmlp_all.jsonl"
cat "$OUT/bench_torch.jsonl" "$OUT/bench_torch_llama.jsonl" >"$OUT/bench_torch_all.jsonl"
# The report names the run (its date, its commands, the commit: the
# device's copy of the tree has no git history, so pass REPORT_COMMIT) and
# its files the GPU (h100_mlp.json, h200_mlp.json...), which device_run.sh
# keeps out of the log archive.
TAG=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | grep -oE 'H[0-9]+' | head -1 | tr 'H' 'h')
TAG=${TAG:-gpu}
REPORT_DATE=${REPORT_DATE:-$BENCH_DATE} \
    REPORT_COMMAND=${REPORT_COMMAND:-"bash bench/cuda/device_run.sh: fmlp_bench_cuda --rows $ROWS and --rows $LLAMA_ROWS --dim 4096 --hidden 14336; python3 bench/cuda/torch_bench.py on both; fmlp_gemm_one M DIM HIDDEN glu lt,fmlp at 1024/4096/8192 rows of both; python3 bench/cuda/report.py"} \
    REPORT_COMMIT=${REPORT_COMMIT:-$(git -C "$HERE/../.." rev-parse --short HEAD 2>/dev/null || echo "unknown (set REPORT_COMMIT)")} \
    python3 bench/cuda/report.py "$OUT/bench_fmlp_all.jsonl" "$OUT/bench_torch_all.jsonl" "$OUT/${TAG}_mlp.json" "$OUT/${TAG}_mlp.png" \
    "$OUT/gemm_only.txt" >"$OUT/report.txt" 2>&1
cat "$OUT/report.txt" >>"$SUMMARY"
