# Wraps the two commands a newcomer runs; CMake does the real work.
#   make run   - build, then run the tutorial's GeGLU MLP on the CPU in every
#                mode, printing plans, timings, profiler tables; traces go to traces/
#   make test  - build, then run the test suite (the Python package's tests
#                are one of its entries)
#   make python - build libfmlp.so and install the Python package into
#                $(PYTHON) with pip, offline (PYTHON=/usr/bin/python3 for
#                Debian's, which has python3-torch)
BUILD ?= build
JOBS ?= $(shell nproc)
PYTHON ?= python3
# Debian's own interpreter is marked externally managed (PEP 668); pip then
# needs to be told that installing into it is intended.
PIP_FLAGS ?= $(shell $(PYTHON) -c "import os, sys, sysconfig; print('--break-system-packages' if sys.prefix == sys.base_prefix and os.path.exists(os.path.join(sysconfig.get_path('stdlib'), 'EXTERNALLY-MANAGED')) else '')" 2>/dev/null)

.PHONY: all build run test python clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/fmlp mlp --mode all --trace-dir traces

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

python: build
	FMLP_LIBRARY=$(abspath $(BUILD))/libfmlp.so $(PYTHON) -m pip install --no-build-isolation --no-deps $(PIP_FLAGS) ./python

clean:
	rm -rf $(BUILD) traces
