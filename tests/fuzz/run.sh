#!/usr/bin/env bash
# Runs every libFuzzer target of a build for a bounded time and fails on the
# first crash, leak, timeout or sanitizer report, so CI can run it as a step.
#
#   CC=clang cmake -S . -B build-fuzz -DFMLP_FUZZ=ON -DFMLP_CUDA=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
#   cmake --build build-fuzz -j --target fuzz_json fuzz_safetensors
#   tests/fuzz/run.sh build-fuzz 60
#
# Seeds come from tests/fuzz/corpus/<target>/ and are never written to; new
# inputs go to a scratch corpus. A crashing input is saved as
# BUILD_DIR/fuzz-artifacts/<target>-crash-* and its path printed; replay it
# with `BUILD_DIR/tests/fuzz/<target> FILE`.
set -u

if [ $# -ne 2 ]; then
    echo "usage: $0 BUILD_DIR SECONDS_PER_TARGET" >&2
    exit 2
fi
build=$1
seconds=$2
here=$(cd "$(dirname "$0")" && pwd)
artifacts="$build/fuzz-artifacts"
mkdir -p "$artifacts"

status=0
for target in fuzz_json fuzz_safetensors; do
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
    echo "== $target for ${seconds}s (seeds $seeds, log $log)"
    "$bin" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
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
        grep -E '^stat::number_of_executed_units|^Done' "$log" | tr '\n' ' '
        echo
        echo "ok   $target"
    fi
done
exit $status
