#!/usr/bin/env bash
# Why: the device visit for the small-batch path (1..64 rows at the memory
# bandwidth limit), in two parts that each fit one 10-minute command:
#   kernels: build kernel_check (its .cu files in parallel, with the
#     compiler's register report), count the streaming kernels' SASS
#     instructions, run the small-batch checks and timings (every row count,
#     split and edge shape, PDL pairs and the one-kernel MLP in replayed
#     graphs, determinism; tutorial and Llama-3-8B shapes, L2-warm and
#     L2-cold, a sweep of the splits), then compute-sanitizer memcheck,
#     racecheck and synccheck on the quick subset;
#   lib: build the library, run its GPU tests, and time fused forwards
#     through the API (with the one-kernel MLP on and off).
# Each prints a short table last. Builds stay in build-small/ (kept between
# calls on a warm machine). Called by device_run.sh (stages small and
# small-lib); alone: bash bench/cuda/small_batch.sh kernels|lib OUT [SUMMARY].
set -u
PART=${1:?usage: small_batch.sh kernels|lib OUT_DIR [SUMMARY_FILE]}
OUT=${2:?usage: small_batch.sh kernels|lib OUT_DIR [SUMMARY_FILE]}
SUMMARY=${3:-$OUT/summary.txt}
mkdir -p "$OUT"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
note() { echo "$*" | tee -a "$SUMMARY"; }
BS=$ROOT/build-small
mkdir -p "$BS"
START=$(date +%s)
left() { echo $((560 - ($(date +%s) - START))); } # seconds left of a 10-minute command, with a margin
budget() { local t=$(($(left) - $1)); echo $((t > 10 ? t : 10)); } # a timeout that leaves $1 seconds

kernels() {
    local KC=$BS/kernel_check src pids=""
    for src in bench/cuda/kernel_check.cu bench/cuda/kc_stream.cu bench/cuda/kc_timing.cu src/cuda/gemm.cu \
        src/cuda/gemm_tma.cu src/cuda/gemm_stream.cu src/cuda/mlp_stream.cu src/cuda/pointwise.cu; do
        nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc -Xptxas -v -c "$src" \
            -o "$BS/$(basename "$src").o" >"$BS/$(basename "$src").log" 2>&1 &
        pids="$pids $!"
    done
    local rc=0 p
    for p in $pids; do wait "$p" || rc=1; done
    cat "$BS"/*.cu.log >"$OUT/kc_build.log"
    [ $rc = 0 ] && nvcc -gencode=arch=compute_90a,code=sm_90a "$BS"/*.cu.o -o "$KC" >>"$OUT/kc_build.log" 2>&1 || rc=1
    note "kernel_check build rc=$rc ($(($(date +%s) - START)) s)"
    if [ $rc != 0 ]; then
        grep -E "error" "$OUT/kc_build.log" | head -20
        return 1
    fi
    # registers and spills of the small-batch kernels, one line each
    awk '/Compiling entry function/ {f=$0; sub(/.*function ./, "", f); sub(/. for .*/, "", f)}
         /bytes stack frame/ {st=$0} /Used [0-9]+ registers/ && f ~ /stream|mlp_gated/ {print f, $0, st}' \
        "$OUT/kc_build.log" | sed 's/ptxas info *: //g' | sort -u >"$OUT/ptxas_small.txt"
    note "ptxas: $(wc -l <"$OUT/ptxas_small.txt") small-batch kernels, $(grep -c -v ' 0 bytes spill stores' \
        "$OUT/ptxas_small.txt") with spills; $(grep -m1 glu_bf16_stream16 "$OUT/ptxas_small.txt")"
    # SASS: 128-bit weight loads (LDG.E.128), tensor cores (HMMA), no local memory (LDL/STL)
    cuobjdump --dump-sass "$KC" 2>/dev/null | awk '/Function :/ {f=$3} f ~ /stream|mlp_gated/ {
            for (i = 1; i <= NF; i++) if ($i ~ /^(LDG|HMMA|LDL|STL|ACQBULK|PREEXIT|ATOMG|RED|NANOSLEEP|MEMBAR|CCTL|LDS|STS)/) {
                op = $i; sub(/;$/, "", op); n[f " " op]++ } }
         END { for (k in n) print k, n[k] }' | sort >"$OUT/sass_small.txt"
    local k
    for k in fmlp_gemm_glu_bf16_stream16 fmlp_gemm_bf16_stream64 fmlp_mlp_gated_bf16_stream8; do
        note "sass $k: $(grep "^$k " "$OUT/sass_small.txt" | cut -d' ' -f2- | tr '\n' ' ')"
    done

    KC_SMALL=1 timeout "$(budget 200)" "$KC" >"$OUT/kc_small.log" 2>&1
    KC_RC=$?
    note "kernel_check (KC_SMALL=1) rc=$KC_RC: $(tail -1 "$OUT/kc_small.log") ($(($(date +%s) - START)) s)"
    grep -E "^FAIL" "$OUT/kc_small.log" | head -20 | tee -a "$SUMMARY"
    local tool
    for tool in memcheck racecheck synccheck; do
        if [ "$(left)" -lt 30 ]; then
            note "$tool: skipped, no time left in this command"
            continue
        fi
        KC_SMALL=1 KC_QUICK=1 timeout $(($(left) / 2)) compute-sanitizer --tool $tool "$KC" \
            >"$OUT/san_${tool}_small.log" 2>&1
        note "$tool (KC_QUICK=1) rc=$? $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$OUT/san_${tool}_small.log" | tail -1)"
    done
    echo "==== kernel_check timings (us; GB/s of weights) ===="
    grep -E "^time " "$OUT/kc_small.log"
    grep -E "^sweep .* best" "$OUT/kc_small.log" | tee -a "$SUMMARY"
    echo "==== kernel_check summary (bf16, us; warm / cold) ===="
    grep -E "^summary" "$OUT/kc_small.log" | tee -a "$SUMMARY"
    return $KC_RC
}

lib() {
    local B=$BS/lib t
    (cmake -S . -B "$B" -DCMAKE_BUILD_TYPE=Release "-DFMLP_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" &&
        cmake --build "$B" -j16 --target fmlp_bench_cuda test_cuda_modes test_cuda_errors test_cuda_profile \
            test_profiler_cuda) >"$OUT/build.log" 2>&1
    note "library build rc=$? warnings=$(grep -c -i 'warning' "$OUT/build.log") ($(($(date +%s) - START)) s)"
    local RC=0
    for t in test_cuda_modes test_cuda_profile test_profiler_cuda test_cuda_errors; do
        (cd "$B/tests" && FMLP_TEST_TMP=/tmp/fmlp-tt timeout "$(budget 150)" "./$t") >"$OUT/$t.log" 2>&1 || RC=1
        note "$t: $(tail -1 "$OUT/$t.log")"
        grep -E "^FAIL" "$OUT/$t.log" | head -10 | tee -a "$SUMMARY"
    done
    # fused (plain forwards back to back) and fused+graph, warm and cold; the _2k runs
    # take the 2-kernel path everywhere (one-kernel MLP off)
    timeout 120 "$B/fmlp_bench_cuda" --rows 1,16,64,128 >"$OUT/bench_small_tutorial.jsonl" 2>&1
    FMLP_CUDA_ONE_KERNEL_MAX_ROWS=0 timeout 60 "$B/fmlp_bench_cuda" --rows 1,16 >"$OUT/bench_small_tutorial_2k.jsonl" 2>&1
    if [ "$(left)" -gt 150 ]; then
        timeout "$(budget 60)" "$B/fmlp_bench_cuda" --dim 4096 --hidden 14336 --rows 1,16,64 \
            >"$OUT/bench_small_llama.jsonl" 2>&1
    fi
    if [ "$(left)" -gt 60 ]; then
        FMLP_CUDA_ONE_KERNEL_MAX_ROWS=0 timeout "$(budget 10)" "$B/fmlp_bench_cuda" --dim 4096 --hidden 14336 \
            --rows 1,16 >"$OUT/bench_small_llama_2k.jsonl" 2>&1
    fi
    echo "==== library: fused forwards (us) ===="
    python3 bench/cuda/small_table.py "$OUT" | tee -a "$SUMMARY"
    return $RC
}

case "$PART" in
kernels) kernels ;;
lib) lib ;;
*)
    echo "small_batch.sh: part '$PART' is unknown; use kernels or lib" >&2
    exit 2
    ;;
esac
