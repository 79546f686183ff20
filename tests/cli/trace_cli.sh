#!/usr/bin/env bash
# Why: the issue's acceptance run, end to end through the CLI: `fmlp mlp
# --mode all --trace-dir` writes a trace and table per mode under the
# tutorial's names; `fmlp trace summarize` reads them (and a real
# torch.profiler trace, and a gzip'd one); `fmlp trace diff` tells the
# 5 -> 4 -> 2 kernel story; `fmlp trace render` draws a standalone SVG; bad
# arguments exit 2 with a one-line error and the usage; FIFOs, directories,
# truncated .gz files and traces past a limit exit 1 saying what they are;
# `fmlp trace summarize DIR` reads a folder of per-rank traces.
set -u
FMLP=${1:?usage: trace_cli.sh PATH_TO_FMLP}
TMP=${FMLP_TEST_TMP:-/tmp}/cli-trace
DATA=${FMLP_TEST_DATA:?FMLP_TEST_DATA must point at tests/data}
rm -rf "$TMP"
mkdir -p "$TMP"
. "$(dirname "$0")/lib/check.sh"

# The tutorial's GeGLU (dim 768, hidden 3072, bf16) on 2 x 64 tokens.
check "fmlp mlp --mode all --trace-dir runs" \
    status_is 0 "$FMLP" mlp --mode all --batch 2 --seq 64 --threads 2 --budget 0.05 --trace-dir "$TMP/traces" --record-shapes
cp "$TMP/out" "$TMP/mlp.out"
for mode in eager compiled fused; do
    f=$(ls "$TMP/traces/"*"_bf16_warm_$mode.json" 2>/dev/null | head -1)
    check "$mode: <shape>_bf16_warm_$mode.json written" test -s "$f"
    check "$mode: table .txt beside it" test -s "${f%.json}.txt"
    check "$mode: table has torch's header and footer" \
        bash -c "grep -q 'Self CPU %' '${f%.json}.txt' && grep -q '^Self CPU time total: ' '${f%.json}.txt'"
    check "$mode: summarize exits 0" status_is 0 "$FMLP" trace summarize "$f"
    check "$mode: summarize names fmlp as the writer" grep -q "written by fmlp" "$TMP/out"
    check "$mode: summarize prints a verdict" grep -q "^Verdict: " "$TMP/out"
done
check "the run prints the table for each mode" test "$(grep -c '^Self CPU time total' "$TMP/mlp.out")" -eq 3

E=$(ls "$TMP/traces/"*_eager.json | head -1)
C=$(ls "$TMP/traces/"*_compiled.json | head -1)
F=$(ls "$TMP/traces/"*_fused.json | head -1)
check "diff eager compiled fused exits 0" status_is 0 "$FMLP" trace diff "$E" "$C" "$F"
check "diff shows 5 -> 4 -> 2 kernels per step" \
    grep -Eq '^kernels per step +5 +4 \(-20%\) +2 \(-60%\)' "$TMP/out"
check "diff lists time per kernel name" grep -q "time per step by kernel name" "$TMP/out"

check "render writes an SVG" status_is 0 "$FMLP" trace render "$E" -o "$TMP/eager.svg"
check "  it is a whole SVG document" bash -c "head -c 200 '$TMP/eager.svg' | grep -q '<svg' && tail -1 '$TMP/eager.svg' | grep -q '</svg>'"
check "  with named CPU lanes and arrows" bash -c "grep -q 'CPU thread' '$TMP/eager.svg' && grep -q 'marker-end' '$TMP/eager.svg'"
check "render --step draws one step" status_is 0 "$FMLP" trace render "$F" -o "$TMP/fused.svg" --step 2
if command -v rsvg-convert >/dev/null; then
    check "  rsvg-convert reads it" rsvg-convert -o "$TMP/fused.png" "$TMP/fused.svg"
fi
check "render a step that is not there fails" status_is 1 "$FMLP" trace render "$F" -o "$TMP/x.svg" --step 99

check "summarize a torch.profiler trace" status_is 0 "$FMLP" trace summarize "$DATA/torch_profiler_cpu_trace.json"
check "  recognised as torch.profiler's" grep -q "written by torch.profiler" "$TMP/out"
check "  aten::mm row with 6 calls" grep -Eq 'aten::mm .* 6  $' "$TMP/out"
check "  5 compute ops per step" grep -q "5 compute ops per step" "$TMP/out"
check "summarize a torch.profiler CUDA trace (.json.gz)" \
    status_is 0 "$FMLP" trace summarize "$DATA/torch_profiler_cuda_trace.json.gz"
check "  CUDA columns and footer" bash -c "grep -q 'Self CUDA %' '$TMP/out' && grep -q '^Self CUDA time total: ' '$TMP/out'"
check "  5 kernels per step, overhead-bound" grep -q "^Verdict: overhead-bound, 5 kernels per step" "$TMP/out"
if command -v gzip >/dev/null; then
    gzip -c "$E" >"$TMP/eager.json.gz"
    check "summarize a .json.gz trace" status_is 0 "$FMLP" trace summarize "$TMP/eager.json.gz" --sort-by count --row-limit 3
fi

# Files that used to hang or exhaust the reader are refused with a message.
if mkfifo "$TMP/fifo.json" 2>/dev/null; then
    check "a FIFO as the trace: exit 1, not a hang" status_is 1 timeout 20 "$FMLP" trace summarize "$TMP/fifo.json"
    check "  the message says it is not a regular file" grep -q "FIFO (named pipe), not a regular file" "$TMP/err"
    check "FMLP_CEILINGS_FILE naming a FIFO does not block fmlp mlp" \
        status_is 0 env FMLP_CEILINGS_FILE="$TMP/fifo.json" timeout 60 "$FMLP" mlp --mode fused --batch 1 --seq 8 --budget 0.02
fi
check "a directory as the trace to render: exit 1" status_is 1 "$FMLP" trace render "$TMP" -o "$TMP/dir.svg"
check "  the message says so" grep -q "is a directory, not a regular file" "$TMP/err"
# summarize DIR reads the traces in it as the ranks of one run
mkdir -p "$TMP/ranks"
cp "$TMP/traces/"*"_bf16_warm_fused.json" "$TMP/ranks/"
check "summarize DIR reads the traces in it: exit 0" status_is 0 "$FMLP" trace summarize "$TMP/ranks"
check "  one trace, as rank 0, and the mean over ranks" \
    bash -c "grep -q '1 trace, world size' '$TMP/out' && grep -q '^rank 0: ' '$TMP/out' && grep -q '^all ranks, mean' '$TMP/out'"
mkdir -p "$TMP/empty"
check "summarize of a folder without traces: exit 1" status_is 1 "$FMLP" trace summarize "$TMP/empty"
check "  the message says so" grep -q "holds no .json or .json.gz traces" "$TMP/err"
if [ -s "$TMP/eager.json.gz" ]; then
    head -c $(($(wc -c <"$TMP/eager.json.gz") / 2)) "$TMP/eager.json.gz" >"$TMP/cut.json.gz"
    check "a truncated .json.gz: exit 1" status_is 1 "$FMLP" trace summarize "$TMP/cut.json.gz"
    check "  reported as a truncated gzip stream, not a bad path" \
        bash -c "grep -q 'truncated gzip stream' '$TMP/err' && ! grep -q 'check the path' '$TMP/err'"
fi
check "a trace past FMLP_TRACE_MAX_EVENTS: exit 1" status_is 1 env FMLP_TRACE_MAX_EVENTS=10 "$FMLP" trace summarize "$E"
check "  the message names the limit" grep -q "the limit is FMLP_TRACE_MAX_EVENTS (now 10" "$TMP/err"

check "no subcommand: exit 2" status_is 2 "$FMLP" trace
check "  one-line error and usage" bash -c "head -1 '$TMP/err' | grep -q '^fmlp trace: ' && grep -q usage '$TMP/err'"
check "unknown subcommand: exit 2" status_is 2 "$FMLP" trace frob
check "render without -o: exit 2" status_is 2 "$FMLP" trace render "$E"
check "diff with one file: exit 2" status_is 2 "$FMLP" trace diff "$E"
check "bad --sort-by: exit 2" status_is 2 "$FMLP" trace summarize "$E" --sort-by nope
check "bad --sort-by on mlp: exit 2" status_is 2 "$FMLP" mlp --sort-by nope
check "missing file: exit 1 with a message" status_is 1 "$FMLP" trace summarize "$TMP/none.json"
check "  the message names the file" grep -q "none.json" "$TMP/err"
echo "not json" >"$TMP/bad.json"
check "malformed file: exit 1" status_is 1 "$FMLP" trace summarize "$TMP/bad.json"
check "--no-profile prints no table" \
    bash -c "! '$FMLP' mlp --mode fused --batch 1 --seq 8 --budget 0.02 --no-profile | grep -q 'Self CPU time total'"
check "--repeat 2 writes a second window beside the first" \
    bash -c "'$FMLP' mlp --mode fused --batch 1 --seq 8 --budget 0.02 --wait 0 --warmup 1 --active 1 --repeat 2 --trace-dir '$TMP/rep' >/dev/null && ls '$TMP/rep/'*_warm_fused.json '$TMP/rep/'*_warm_fused_w2.json >/dev/null"
check "--cold records the first call" \
    bash -c "'$FMLP' mlp --mode eager --batch 1 --seq 8 --budget 0.02 --cold --trace-dir '$TMP/cold' >/dev/null && ls '$TMP/cold/'*_cold_eager.json >/dev/null"

echo "$pass passed, $fail failed, 0 skipped"
[ "$fail" -eq 0 ]
