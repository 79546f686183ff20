#!/usr/bin/env bash
# Why: `fmlp mlp --tp N` drives N GPUs from one process. Its wrong uses
# fail before any GPU work, naming the value and the fix: --tp without
# --device cuda, on `fmlp linear`, with --host-io or out of range (usage
# errors, exit 2), and a build without NCCL or fewer GPUs than N (exit 1).
# Where NCCL and a GPU are present, a world of one runs end to end: every
# mode's rank plan, the per-step timing, one trace per rank in the run's
# folder, `fmlp trace summarize` of that folder, and chunks asked for
# through FMLP_TP_CHUNKS shown in the plan.
set -u
FMLP=${1:?usage: tp_cli.sh PATH_TO_FMLP}
. "$(dirname "$0")/lib/check.sh"
fresh_tmp cli-tp

check "--tp without --device cuda: exit 2" status_is 2 "$FMLP" mlp --tp 2 --no-profile
check "  the error says to add --device cuda" grep -q -- "--tp 2 runs one rank per GPU: add --device cuda" "$TMP/err"
check "--tp on fmlp linear: exit 2" status_is 2 "$FMLP" linear --tp 2 --device cuda
check "  the error points at fmlp mlp" grep -q "use \`fmlp mlp\`" "$TMP/err"
check "--tp with --host-io: exit 2" status_is 2 "$FMLP" mlp --tp 2 --device cuda --host-io
check "  the error says to drop --host-io" grep -q -- "drop --host-io" "$TMP/err"
check "--tp 0: exit 2" status_is 2 "$FMLP" mlp --tp 0 --device cuda
check "  the error names the value and the range" grep -q -- '--tp: "0" is not an integer in 1..64' "$TMP/err"
check "--help describes --tp" bash -c "'$FMLP' mlp --help | grep -q -- '--tp N  *tensor parallelism over NCCL'"

"$FMLP" info >"$TMP/info"
gpus=$(grep -c '^  cuda:[0-9]' "$TMP/info")
if ! grep -q "^tensor parallelism: NCCL" "$TMP/info"; then
    check "without NCCL: exit 1" status_is 1 "$FMLP" mlp --tp 2 --device cuda --no-profile
    check "  the error says how to get NCCL" grep -q "built without it: install NCCL" "$TMP/err"
else
    check "more ranks than GPUs: exit 1" status_is 1 "$FMLP" mlp --tp $((gpus + 1)) --device cuda --no-profile
    check "  the error names the count and the fix" \
        grep -Eq -- "--tp $((gpus + 1)) needs $((gpus + 1)) GPUs (and none is visible|but $gpus (is|are) visible; use --tp $gpus or fewer)" "$TMP/err"
fi

if [ "$gpus" -lt 1 ] || ! grep -q "^tensor parallelism: NCCL" "$TMP/info"; then
    echo "skipped: the runs need NCCL and a GPU"
else
    check "--tp 1 runs every mode with a trace per rank" status_is 0 "$FMLP" mlp --device cuda --tp 1 --batch 4 \
        --seq 64 --budget 0.05 --trace-dir "$TMP/traces"
    cp "$TMP/out" "$TMP/run.out"
    check "  a plan per rank says how y is all-reduced" grep -q "^rank 0 of 1: 3072 hidden features" "$TMP/run.out"
    check "  the all-reduce follows the plan" grep -q "then all-reduce y .* NCCL, sum over 1 ranks" "$TMP/run.out"
    check "  the forward over the ranks is timed" grep -Eq "^fused: .* per forward over 1 GPUs" "$TMP/run.out"
    check "  the modes are compared" grep -q "speedup vs eager" "$TMP/run.out"
    run=$(ls -d "$TMP/traces/"*_tp1_warm_fused 2>/dev/null | head -1)
    check "  fused's folder holds rank0.json and rank0.txt" test -s "$run/rank0.json" -a -s "$run/rank0.txt"
    check "  trace summarize reads the folder" status_is 0 "$FMLP" trace summarize "$run"
    check "  and finds rank 0 of a world of 1" grep -q "world size 1" "$TMP/out"
    check "FMLP_TP_CHUNKS=3 cuts the down GEMM in the plan" bash -c \
        "FMLP_TP_CHUNKS=3 '$FMLP' mlp --device cuda --tp 1 --batch 4 --seq 256 --mode eager --explain |
         grep -q 'down in 3 row chunks of up to 384 rows.*overlapped on stream 2 (FMLP_TP_CHUNKS=3)'"
    check "FMLP_TP_CHUNKS=3 runs" status_is 0 env FMLP_TP_CHUNKS=3 "$FMLP" mlp --device cuda --tp 1 --batch 4 \
        --seq 250 --mode eager,fused --budget 0.05 --no-profile
    check "a bad FMLP_TP_CHUNKS: exit 1 naming it" bash -c \
        "FMLP_TP_CHUNKS=x '$FMLP' mlp --device cuda --tp 1 --explain 2>&1 | grep -q 'FMLP_TP_CHUNKS=\"x\"'"
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
