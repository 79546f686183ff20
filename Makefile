# Wraps the two commands a newcomer runs; CMake does the real work.
#   make run   - build, then run the tutorial's GeGLU MLP on the CPU in every
#                mode, printing plans, timings, profiler tables; traces go to traces/
#   make test  - build, then run the test suite
BUILD ?= build
JOBS ?= $(shell nproc)

.PHONY: all build run test clean

all: build

build:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/fmlp mlp --mode all --trace-dir traces

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j $(JOBS)

clean:
	rm -rf $(BUILD) traces
