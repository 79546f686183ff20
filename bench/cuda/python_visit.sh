#!/usr/bin/env bash
# Why: one GPU visit for the Python package: build libfmlp.so for Hopper,
# run the stream test, the Python tests (GPU ones included) and
# bench/python_gpu.py, check that pip installs the package offline, and
# print a short summary last; logs go to $OUT. Run from anywhere:
#   OUT=/tmp/out bash bench/cuda/python_visit.sh
set -u
OUT=${OUT:-/tmp/fmlp_py_out}
mkdir -p "$OUT"
cd "$(dirname "$0")/../.."
B=/tmp/fmlp-py-build
PY=${FMLP_PYTHON:-python3}
S="$OUT/python_summary.txt"
: >"$S"
note() { echo "$*" | tee -a "$S"; }
note "python: $($PY -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__, torch.cuda.get_device_name())' 2>&1 | tail -1)"
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release "-DFMLP_CUDA_GENCODE=-gencode=arch=compute_90a,code=sm_90a" >"$OUT/py_build.log" 2>&1 &&
    cmake --build $B -j"$(nproc)" --target fmlp_shared test_cuda_stream forward_timing fmlp_bench_cuda >>"$OUT/py_build.log" 2>&1
note "build rc=$?"
timeout 300 $B/tests/test_cuda_stream >"$OUT/test_cuda_stream.log" 2>&1
note "test_cuda_stream rc=$? $(tail -1 "$OUT/test_cuda_stream.log")"
export FMLP_LIBRARY=$B/libfmlp.so PYTHONPATH=$PWD/python
if $PY -c "import pytest" >/dev/null 2>&1; then
    (cd python/tests && timeout 900 $PY -m pytest -q -rs -p no:cacheprovider . >"$OUT/pytest.log" 2>&1)
    note "pytest rc=$? $(tail -1 "$OUT/pytest.log")"
else
    note "pytest: not installed for $PY; python tests not run (bench/python_gpu.py below still checks patch and capture)"
fi
timeout 600 $PY bench/python_gpu.py --layers 4 --c-bench $B/fmlp_bench_cuda --json "$OUT/python_gpu.json" >"$OUT/python_gpu.txt" 2>&1
note "python_gpu rc=$?"
cat "$OUT/python_gpu.txt" | tee -a "$S"
timeout 300 $PY bench/python_overhead.py --forward-timing $B/bench/forward_timing --json "$OUT/python_overhead_host.json" \
    >"$OUT/python_overhead.txt" 2>&1
note "python_overhead (host CPU) rc=$?"
cat "$OUT/python_overhead.txt" | tee -a "$S"
(unset FMLP_LIBRARY PYTHONPATH; cd /tmp && rm -rf fmlp-venv && $PY -m venv --system-site-packages fmlp-venv >/dev/null 2>&1 &&
    FMLP_LIBRARY=$B/libfmlp.so fmlp-venv/bin/python -m pip install --no-build-isolation --no-deps "$OLDPWD/python" \
        >"$OUT/pip.log" 2>&1 && fmlp-venv/bin/python -c "import fmlp, torch; print(fmlp.MLP.from_torch(torch.nn.Linear(8, 8).cuda())(torch.randn(2, 8, device='cuda')).shape)" >>"$OUT/pip.log" 2>&1)
note "pip install (venv) rc=$? $(tail -1 "$OUT/pip.log")"
