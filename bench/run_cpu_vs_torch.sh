#!/usr/bin/env bash
# Runs issue 2's CPU benchmark: fmlp's GeGLU MLP (dim 768, hidden 3072, or
# DIM and HIDDEN: the Llama-3-8B MLP is DIM=4096 HIDDEN=14336) in every mode
# against PyTorch on the same machine, in one run.
#
# Why: the issue's bars (fused bf16 at 1024 rows >= torch bf16 eager; fused
# f32 at 1024 rows >= 0.8x torch f32 eager; fused faster than fmlp eager at
# every row count) only mean something when both sides run side by side on
# the same CPU, with the same thread count, under the same load. So the two
# are interleaved per row count, in ROUNDS rounds whose order alternates, and
# each figure is the best of its rounds' medians.
#
# Writes bench/results/cpu_geglu_<date>.json (machine, versions, every
# figure, ratios, bars) and bench/results/cpu_geglu_<date>.md (a summary);
# cpu_geglu_<dim>x<hidden>_<date>.* for another shape.
#
# Needs: a built fmlp (FMLP=path, default build/fmlp), Debian's PyTorch
# (apt-get install python3-torch python3-numpy) and, for a fair f32 peer,
# libopenblas0-pthread (without it torch's f32 matmul is netlib's reference
# BLAS). Knobs (environment): ROWS, DTYPES, MODES, THREADS (2), ROUNDS (3),
# TORCH_IMPLS (eager,jit), REFBLAS=1 (also time torch f32 with the reference
# BLAS at rows <= 128), FMLP_BUDGET (0.5 s per point), PYTHON (/usr/bin/python3), OUT (results path stem),
# DIM (768), HIDDEN (3072).
set -euo pipefail

cd "$(dirname "$0")/.."
FMLP=${FMLP:-build/fmlp}
PY=${PYTHON:-/usr/bin/python3}
ROWS=${ROWS:-1,16,128,1024,8192}
DTYPES=${DTYPES:-f32,bf16}
MODES=${MODES:-eager,compiled,fused}
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
TORCH_IMPLS=${TORCH_IMPLS:-eager,jit}
FMLP_BUDGET=${FMLP_BUDGET:-0.5}  # seconds per point, the same as the peer's --min-time
DIM=${DIM:-768}
HIDDEN=${HIDDEN:-3072}
DATE=$(date -u +%Y-%m-%d)
if [ "$DIM" = 768 ] && [ "$HIDDEN" = 3072 ]; then OUT=${OUT:-bench/results/cpu_geglu_$DATE}
else OUT=${OUT:-bench/results/cpu_geglu_${DIM}x${HIDDEN}_$DATE}; fi

[ -x "$FMLP" ] || { echo "run_cpu_vs_torch.sh: no fmlp program at $FMLP (build it, or set FMLP=path)" >&2; exit 2; }
"$PY" -c 'import torch' 2>/dev/null || { echo "run_cpu_vs_torch.sh: $PY has no torch (apt-get install python3-torch)" >&2; exit 2; }

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS

# ------------------------------------------------------------ machine
flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(avx2|fma|avx512f|avx512bw|avx512vl|avx512_vnni|avx512_bf16|avx512_fp16|amx_bf16|amx_tile|amx_int8)$' | sort -u | tr '\n' ' ')
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
git diff --quiet HEAD -- src include tools CMakeLists.txt cmake 2>/dev/null || commit="$commit (with uncommitted changes)"
how="DIM=$DIM HIDDEN=$HIDDEN FMLP=$FMLP ROWS=$ROWS DTYPES=$DTYPES MODES=$MODES THREADS=$THREADS ROUNDS=$ROUNDS TORCH_IMPLS=$TORCH_IMPLS FMLP_BUDGET=$FMLP_BUDGET REFBLAS=${REFBLAS:-0} bench/run_cpu_vs_torch.sh"
"$PY" - "$tmp/machine.json" "$flags" "$THREADS" "$FMLP" "$commit" "$how" <<'PYEOF'
import json, os, platform, subprocess, sys, datetime
out, flags, threads, fmlp, commit, how = sys.argv[1], sys.argv[2].split(), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6]
def sh(*cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=60).stdout.strip()
    except Exception as e:
        return "unavailable: %s" % e
lscpu = {}
for line in sh("lscpu").splitlines():
    k, _, v = line.partition(":")
    lscpu[k.strip()] = v.strip()
info = sh(fmlp, "info")
ver = sh(fmlp, "--version") or next((l for l in info.splitlines() if "fmlp" in l.lower()), "")
paths = next((l.split(":", 1)[1].strip() for l in info.splitlines() if "path" in l.lower() and ":" in l), "")
mem = next((l.split()[1] for l in open("/proc/meminfo") if l.startswith("MemTotal")), "?")
json.dump({
    "date": datetime.datetime.utcnow().strftime("%Y-%m-%d %H:%M UTC"),
    "cpu_model": lscpu.get("Model name", platform.processor()),
    "cpus": os.cpu_count(),
    "cores_per_socket": lscpu.get("Core(s) per socket"),
    "threads_per_core": lscpu.get("Thread(s) per core"),
    "sockets": lscpu.get("Socket(s)"),
    "l2": lscpu.get("L2 cache"), "l3": lscpu.get("L3 cache"),
    "hypervisor": lscpu.get("Hypervisor vendor", ""),
    "mem_total_kb": mem,
    "cpu_flags": flags,
    "amx": any(f.startswith("amx") for f in flags),
    "kernel": platform.release(),
    "threads": threads,
    "cc": sh("cc", "--version").splitlines()[0] if sh("cc", "--version") else "?",
    "fmlp_version": ver,
    "fmlp_commit": commit,
    "command": how,
    "fmlp_paths": paths,
    "fmlp_info": info,
}, open(out, "w"), indent=1)
PYEOF

# ------------------------------------------------------------ sweep
fmlp_files=() torch_files=()
note_load() {  # side round rows: the 1-minute load average, to judge noise
    printf '{"side": "%s", "round": %d, "rows": %d, "loadavg1": %s}\n' "$1" "$2" "$3" \
        "$(cut -d' ' -f1 /proc/loadavg)" >> "$tmp/load.jsonl"
}
run_fmlp() {  # round rows
    local f="$tmp/fmlp_r$1_$2.json"
    note_load fmlp "$1" "$2"
    echo "== fmlp bench rows $2 (round $1)" >&2
    "$FMLP" bench --rows "$2" --dtype "$DTYPES" --mode "$MODES" --threads "$THREADS" --budget "$FMLP_BUDGET" \
        --dim "$DIM" --hidden "$HIDDEN" --json "$f" >&2
    fmlp_files+=("$f")
}
run_torch() {  # round rows
    local f="$tmp/torch_r$1_$2.json"
    note_load torch "$1" "$2"
    echo "== torch rows $2 (round $1)" >&2
    "$PY" bench/torch_peer.py measure --rows "$2" --dtype "$DTYPES" --impl "$TORCH_IMPLS" \
        --threads "$THREADS" --min-reps 5 --min-time "$FMLP_BUDGET" --dim "$DIM" --hidden "$HIDDEN" --json "$f"
    torch_files+=("$f")
    if [ "${REFBLAS:-0}" = 1 ] && [ "$2" -le 128 ] && [ -e /usr/lib/x86_64-linux-gnu/blas/libblas.so.3 ]; then
        f="$tmp/torch_refblas_r$1_$2.json"
        LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas "$PY" bench/torch_peer.py measure --rows "$2" \
            --dtype f32 --impl eager --suffix _refblas --threads "$THREADS" --min-reps 3 --dim "$DIM" --hidden "$HIDDEN" \
            --json "$f"
        torch_files+=("$f")
    fi
}
for ((round = 1; round <= ROUNDS; round++)); do
    for rows in ${ROWS//,/ }; do
        if ((round % 2)); then run_fmlp "$round" "$rows"; run_torch "$round" "$rows"
        else run_torch "$round" "$rows"; run_fmlp "$round" "$rows"; fi
    done
done

mkdir -p "$(dirname "$OUT")"
"$PY" bench/torch_peer.py merge --machine "$tmp/machine.json" --load "$tmp/load.jsonl" --fmlp "${fmlp_files[@]}" \
    --torch "${torch_files[@]}" --out-json "$OUT.json" --out-md "$OUT.md"
cat "$OUT.md"
echo "wrote $OUT.json and $OUT.md" >&2
