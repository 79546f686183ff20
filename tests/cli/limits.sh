#!/usr/bin/env bash
# Why: sizes and counts the CLI is given multiply into numbers past int64;
# each such command must exit with a message naming the flags to change,
# never crash on a wrapped size or run a wrapped count of steps.
set -u
FMLP=${1:?usage: limits.sh PATH_TO_FMLP}
. "$(dirname "$0")/lib/check.sh"
fresh_tmp cli-limits

check "2^48 rows of 16384 f32 (2^64 bytes): exit 1, no crash" status_is 1 "$FMLP" mlp --dtype f32 --batch 16777216 \
    --seq 16777216 --dim 16384 --hidden 1 --iters 1 --no-profile --mode fused
check "  the message names --batch and --seq" grep -q -- "use a smaller --batch or --seq" "$TMP/err"
check "  and the byte limit" grep -q 9223372036854775807 "$TMP/err"
check "--explain of 2^48 rows (2^64 FLOPs): exit 1" status_is 1 "$FMLP" mlp --explain --dtype f32 --batch 16777216 \
    --seq 16777216 --dim 16384 --hidden 1 --mode fused
check "  the message says to run fewer rows" grep -q "fewer rows" "$TMP/err"
check "--active 1000000 --repeat 1000000 (10^12 steps): usage error" status_is 2 "$FMLP" mlp --batch 1 --seq 1 \
    --dim 16 --hidden 16 --iters 1 --mode fused --active 1000000 --repeat 1000000
check "  the message names --active and --repeat" grep -q -- "--active 1000000 steps per cycle x --repeat 1000000" "$TMP/err"
check "  and nothing was profiled" bash -c "! grep -q Verdict '$TMP/out'"
check "--cold --active 1000000 --repeat 3000 (3 x 10^9 steps): usage error" status_is 2 "$FMLP" mlp --cold \
    --batch 1 --seq 1 --dim 16 --hidden 16 --iters 1 --mode fused --active 1000000 --repeat 3000
check "--explain of a 65536 x 65536 f32 GeGLU (51 GB of weights) prints its plans" status_is 0 "$FMLP" mlp --explain \
    --dim 65536 --hidden 65536 --dtype f32 --batch 64 --seq 128
check "  all three" test "$(grep -c '^plan: ' "$TMP/out")" -eq 3
if [ -x /usr/bin/time ]; then
    # Against the same command at 16 x 16: a CUDA build maps its runtime's
    # libraries (200 MB) before any MLP exists.
    check "  in under 200 MB of memory more than a 16 x 16 one (no weights made)" bash -c \
        "/usr/bin/time -f %M -o '$TMP/rss0' '$FMLP' mlp --explain --dim 16 --hidden 16 --dtype f32 >/dev/null &&
         /usr/bin/time -f %M -o '$TMP/rss' '$FMLP' mlp --explain --dim 65536 --hidden 65536 --dtype f32 >/dev/null &&
         [ \$((\$(tail -1 '$TMP/rss') - \$(tail -1 '$TMP/rss0'))) -lt 200000 ]"
fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
