#!/usr/bin/env bash
# Runs libFuzzer targets of a build for a bounded time each and fails on the
# first crash, leak, timeout or sanitizer report, so CI can run it as a step.
#
#   CC=clang cmake -S . -B build-fuzz -DFMLP_FUZZ=ON -DFMLP_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build-fuzz -j --target fuzz_json fuzz_safetensors fuzz_trace fuzz_api
#   tests/fuzz/run.sh build-fuzz 60 [TARGET...]
#   FMLP_FUZZ_RUNS=5000000 tests/fuzz/run.sh build-fuzz 1800 fuzz_json
#
# With FMLP_FUZZ_RUNS a target stops after that many executions, or at
# SECONDS_PER_TARGET if that comes first (a long run, as recorded in
# bench/results/fuzz_*.md; CI keeps its bounded time).
# Without TARGETs it runs every fuzz_* program the build holds. Seeds come
# from tests/fuzz/corpus/<name>/ (fuzz_<name>) and are never written to; new
# inputs go to a scratch corpus. A crashing input is saved as
# BUILD_DIR/fuzz-artifacts/<target>-crash-* and its path printed; replay it
# with `BUILD_DIR/tests/fuzz/<target> FILE`.
set -u

if [ $# -lt 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS_PER_TARGET [TARGET...]" >&2
    exit 2
fi
build=$1
seconds=$2
shift 2
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    for bin in "$build"/tests/fuzz/fuzz_*; do
        [ -x "$bin" ] && [ -f "$bin" ] && targets+=("$(basename "$bin")")
    done
fi
if [ ${#targets[@]} -eq 0 ]; then
    echo "FAIL: no fuzz targets in $build/tests/fuzz (configure with CC=clang -DFMLP_FUZZ=ON and build them)" >&2
    exit 1
fi
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

status=0
for target in "${targets[@]}"; do
    bin="$build/tests/fuzz/$target"
    if [ ! -x "$bin" ]; then
        echo "FAIL $target: $bin not built (configure with CC=clang -DFMLP_FUZZ=ON)" >&2
        status=1
        continue
    fi
    kind=${target#fuzz_}
    seeds="$here/corpus/$kind"
    scratch=$(mktemp -d "${TMPDIR:-/tmp}/fmlp-$target.XXXXXX")
    log="$artifacts/$target.log"
    runs=()
    [ -n "${FMLP_FUZZ_RUNS:-}" ] && runs=(-runs="$FMLP_FUZZ_RUNS")
    echo "== $target for ${seconds}s${FMLP_FUZZ_RUNS:+ or $FMLP_FUZZ_RUNS runs} (seeds $seeds, log $log)"
    "$bin" -max_total_time="$seconds" "${runs[@]}" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
        -dict="$here/$kind.dict" -artifact_prefix="$artifacts/$target-" \
        "$scratch" "$seeds" >"$log" 2>&1
    rc=$?
    rm -rf "$scratch"
    if [ $rc -ne 0 ]; then
        echo "FAIL $target (exit $rc); last lines of $log:" >&2
        tail -n 40 "$log" >&2
        ls "$artifacts/$target-"* 2>/dev/null | grep -v '\.log$' >&2
        status=1
    else
        grep -E '^stat::number_of_executed_units|^stat::average_exec_per_sec|^Done' "$log" | tr '\n' ' '
        echo
        echo "ok   $target"
    fi
done
exit $status
