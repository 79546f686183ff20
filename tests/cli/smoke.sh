#!/usr/bin/env bash
# Why: the CLI is how most people meet fmlp. Every subcommand answers
# --help, a bad argument gives a one-line error, the usage and exit status 2,
# and the commands run end to end on small shapes, --input/--output included.
set -u
FMLP=${1:?usage: smoke.sh PATH_TO_FMLP}
TMP=${FMLP_TEST_TMP:-/tmp}/cli-smoke
DATA=${FMLP_TEST_DATA:?FMLP_TEST_DATA must point at tests/data}
mkdir -p "$TMP"
. "$(dirname "$0")/lib/check.sh"

for cmd in mlp linear bench info trace; do
    check "fmlp $cmd --help exits 0 with a usage line" \
        bash -c "'$FMLP' $cmd --help | grep -q usage"
done
check "fmlp --help" status_is 0 "$FMLP" --help
check "no command: usage error" status_is 2 "$FMLP"
check "unknown command: usage error" status_is 2 "$FMLP" frobnicate
check "bad --dim value: exit 2" status_is 2 "$FMLP" mlp --dim abc
check "  the error names the flag and value" grep -q -- '--dim: "abc"' "$TMP/err"
check "  and the usage follows" grep -q usage "$TMP/err"
check "unknown flag: exit 2" status_is 2 "$FMLP" linear --frob
check "bad --mode: exit 2" status_is 2 "$FMLP" mlp --mode turbo
check "  the error names the mode" grep -q turbo "$TMP/err"
check "bad --dtype: exit 2" status_is 2 "$FMLP" mlp --dtype f64
check "missing value: exit 2" status_is 2 "$FMLP" mlp --batch
check "bench with an empty list: exit 2" status_is 2 "$FMLP" bench --rows ,
check "--iters past the sample limit: exit 2" status_is 2 "$FMLP" bench --iters 5000

check "info lists the code paths" bash -c "'$FMLP' info | grep -q 'CPU code paths'"
check "--explain prints 5, 4 and 2 kernels for GeGLU" bash -c \
    "'$FMLP' mlp --explain --batch 2 --seq 4 --dim 32 --hidden 48 >'$TMP/explain' &&
     grep -q 'eager (bf16, cpu, 8 rows): 5 kernels' '$TMP/explain' &&
     grep -q 'compiled (bf16, cpu, 8 rows): 4 kernels' '$TMP/explain' &&
     grep -q 'fused (bf16, cpu, 8 rows): 2 kernels' '$TMP/explain'"
check "mlp runs every mode and prints the speedup summary" bash -c \
    "'$FMLP' mlp --batch 2 --seq 8 --dim 48 --hidden 80 --iters 2 --no-profile >'$TMP/run' &&
     grep -q 'speedup vs eager' '$TMP/run' && grep -q '^fused ' '$TMP/run'"
check "  rates and amounts carry a fitting unit" bash -c \
    "grep -Eq '^fused: .* per forward \(median of 2\), [0-9.]+ [kMGT]?FLOP/s$' '$TMP/run' &&
     grep -Eq 'total: [0-9.]+ [kMGT]?FLOP, [0-9.]+ [kMGT]?B moved at least' '$TMP/run'"
check "  no host<->device copy line on the CPU" bash -c "! grep -q 'host <-> device' '$TMP/run'"
check "--host-io on the CPU: usage error naming --device cuda" status_is 2 "$FMLP" mlp --host-io --no-profile
check "  the error says what to do" grep -q -- "--device cuda" "$TMP/err"
check "linear with bias runs" bash -c "'$FMLP' linear --batch 64 --bias --iters 2 --no-profile >/dev/null"
check "swiglu stack of f32 runs" bash -c "'$FMLP' mlp --act swiglu --dtype f32 --batch 3 --seq 5 --dim 24 --hidden 40 --iters 1 --no-profile >/dev/null"
check "gelu stack of 3 layers runs" bash -c "'$FMLP' mlp --act gelu --layers 3 --bias --batch 3 --seq 5 --dim 24 --hidden 40 --iters 1 --no-profile >/dev/null"
check "bench writes JSON and CSV" bash -c \
    "'$FMLP' bench --rows 1,5 --dtype f32,bf16 --mode eager,fused --dim 32 --hidden 48 --iters 2 --json '$TMP/b.json' --csv '$TMP/b.csv' >/dev/null 2>'$TMP/progress' &&
     grep -q '\"results\"' '$TMP/b.json' && [ \$(wc -l <'$TMP/b.csv') -eq 9 ] && grep -q '\[8/8\]' '$TMP/progress'"
check "--weights/--input/--output round trip" bash -c \
    "'$FMLP' mlp --weights '$DATA/geglu_f32.safetensors' --input '$DATA/geglu_f32_io.safetensors' --output '$TMP/y.safetensors' --act geglu --dtype f32 --mode fused --iters 1 --no-profile >'$TMP/io' && [ -s '$TMP/y.safetensors' ]"
check "  x (2, 5, 64) gives y (2, 5, 64), as PyTorch returns it" grep -q "^wrote y (2, 5, 64) from fused mode" "$TMP/io"
check "  the header names x's shape" grep -q "^fmlp mlp: 2x5x64, f32, 10 rows" "$TMP/io"
check "missing weights file: clear error, exit 1" status_is 1 "$FMLP" mlp --weights "$TMP/nope.safetensors" --no-profile
check "  the error names the file" grep -q nope.safetensors "$TMP/err"
check "weights of the wrong shape for --input: exit 1" status_is 1 "$FMLP" mlp --weights "$DATA/geglu_f32.safetensors" --input "$DATA/swiglu_bias_f32_io.safetensors" --dtype f32 --no-profile

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
