#!/usr/bin/env bash
# Why: every file the CLI writes (--output, --trace-dir's traces and tables,
# trace render's SVG, bench's --json and --csv) is written whole or not at
# all: a full disk (/dev/full) is a non-zero exit with a message naming the
# path and the reason, never "wrote ..." over an empty file; a symlink is
# written through; and a --trace-dir or trace file that cannot be made is
# reported as what it is, not as a failed forward.
set -u
FMLP=${1:?usage: outputs.sh PATH_TO_FMLP}
. "$(dirname "$0")/lib/check.sh"
fresh_tmp cli-outputs
SMALL="--dim 16 --hidden 24 --batch 1 --seq 4 --iters 1 --budget 0.01 --mode eager --dtype f32"

# --output through a symlink: the target gets y, the link stays a link.
echo old >"$TMP/target.safetensors"
ln -s target.safetensors "$TMP/link.safetensors"
check "--output onto a symlink: exit 0" status_is 0 "$FMLP" mlp $SMALL --no-profile --output "$TMP/link.safetensors"
check "  the link is still a link" test -L "$TMP/link.safetensors"
check "  its target holds y (a safetensors file, not 'old')" bash -c \
    "[ \$(stat -c %s '$TMP/target.safetensors') -gt 100 ] && ! grep -qx old '$TMP/target.safetensors'"
check "  no temporary file is left" bash -c "! ls '$TMP' | grep -q '\.tmp\.'"

check "--output /dev/full: exit 1" status_is 1 "$FMLP" mlp $SMALL --no-profile --output /dev/full
check "  the message names /dev/full and the reason" grep -q "/dev/full.*No space left on device" "$TMP/err"
check "--output into a missing directory: exit 1, names it" bash -c \
    "! '$FMLP' mlp $SMALL --no-profile --output '$TMP/none/y.safetensors' >/dev/null 2>'$TMP/err' &&
     grep -q '$TMP/none/y.safetensors' '$TMP/err'"

for flag in --json --csv; do
    check "bench $flag /dev/full: exit 1" status_is 1 "$FMLP" bench --rows 1 --dtype f32 --mode eager --dim 16 \
        --hidden 24 --iters 1 $flag /dev/full
    check "  names /dev/full, does not say it wrote it" bash -c \
        "grep -q '/dev/full.*No space left' '$TMP/err' && ! grep -q '^wrote' '$TMP/err'"
done
check "bench --json into a directory in the way: exit 1" status_is 1 "$FMLP" bench --rows 1 --dtype f32 \
    --mode eager --dim 16 --hidden 24 --iters 1 --json "$TMP"
check "  names it" grep -q "Is a directory" "$TMP/err"

# --trace-dir that cannot be made: the directory and the reason, up front.
touch "$TMP/a-file"
check "--trace-dir under a file: exit 1" status_is 1 "$FMLP" mlp $SMALL --trace-dir "$TMP/a-file/traces"
check "  the message names the directory and the reason" \
    grep -q "cannot create --trace-dir $TMP/a-file/traces: Not a directory" "$TMP/err"
check "  and is not a forward failure" bash -c "! grep -q 'forward failed' '$TMP/err'"
check "--trace-dir that is a file: exit 1, says so" bash -c \
    "! '$FMLP' mlp $SMALL --trace-dir '$TMP/a-file' >/dev/null 2>'$TMP/err' && grep -q 'Not a directory' '$TMP/err'"

# A trace that cannot be written: its path and reason, not "forward failed".
mkdir -p "$TMP/traces"
"$FMLP" mlp $SMALL --trace-dir "$TMP/traces" >"$TMP/out" 2>&1
json=$(ls "$TMP/traces/"*.json | head -1)
rm -f "$TMP/traces/"*
mkdir "$json"
check "a trace path taken by a directory: exit 1" status_is 1 "$FMLP" mlp $SMALL --trace-dir "$TMP/traces"
check "  the message names the trace file and the reason" grep -q "cannot write '$json': Is a directory" "$TMP/err"
check "  and is not a forward failure" bash -c "! grep -q 'forward failed' '$TMP/err'"
check "  no 'wrote' line" bash -c "! grep -q '^wrote' '$TMP/out'"
rmdir "$json"

"$FMLP" mlp $SMALL --trace-dir "$TMP/traces" >/dev/null 2>&1
check "trace render -o /dev/full: exit 1" status_is 1 "$FMLP" trace render "$json" -o /dev/full
check "  names /dev/full and the reason" grep -q "/dev/full.*No space left" "$TMP/err"
ln -s real.svg "$TMP/link.svg"
check "trace render -o a symlink: the link stays, its target is the SVG" bash -c \
    "'$FMLP' trace render '$json' -o '$TMP/link.svg' >/dev/null && test -L '$TMP/link.svg' &&
     grep -q '</svg>' '$TMP/real.svg'"

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
