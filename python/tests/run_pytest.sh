#!/usr/bin/env bash
# Why: ctest runs the Python package's tests against the libfmlp.so of the
# build it belongs to (FMLP_LIBRARY and PYTHONPATH come from CMake), with
# an interpreter that has torch: $FMLP_PYTHON, else the first python3 on the
# PATH that has it, else Debian's /usr/bin/python3. Without torch anywhere it
# prints "skipped" and exits 77; any other shortfall fails.
set -u
here=$(cd "$(dirname "$0")" && pwd)
pick=""
for py in ${FMLP_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    if "$py" -c "import torch" >/dev/null 2>&1; then
        pick=$py
        break
    fi
done
if [ -z "$pick" ]; then
    echo "skipped: no python3 with torch (apt-get install python3-torch python3-pytest python3-numpy, or set FMLP_PYTHON)"
    exit 77
fi
if ! "$pick" -c "import pytest, numpy" >/dev/null 2>&1; then
    echo "FAIL: $pick has torch but not pytest and numpy; apt-get install python3-pytest python3-numpy"
    exit 1
fi
echo "python: $pick ($("$pick" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)'))"
echo "library: ${FMLP_LIBRARY:-installed package}"
cd "$here"
"$pick" -m pytest -q -rs -p no:cacheprovider "$@" .
rc=$?
[ $rc = 5 ] && echo "FAIL: pytest collected no tests"
[ $rc = 5 ] && exit 1
exit $rc
