# lockstep: the commands README promises. Every target installs missing Debian packages first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build docs test test-asan test-tsan test-asan-quick test-tsan-quick bench bench-compare bench-python demo clean format \
        fuzz fuzz-run package

all: build

deps:
	@scripts/install-deps

# The venv comes first: the Python package is built against its nanobind (scripts/python-venv; quick once made).
$(BUILD)/CMakeCache.txt: | deps
	@scripts/python-venv $(BUILD)/venv
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: deps $(BUILD)/CMakeCache.txt
	@scripts/python-venv $(BUILD)/venv
	cmake --build $(BUILD) -j $(JOBS)

# The generated docs: docs/keras-classes.md from the registries, docs/python.md's list of supported symbols from
# the package (a test fails when either is not what its generator writes).
docs: build
	$(BUILD)/bin/lockstep classes > docs/keras-classes.md
	$(BUILD)/venv/bin/python3 python/tools/make_docs.py

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

# The suite under AddressSanitizer + UndefinedBehaviorSanitizer, and under ThreadSanitizer, each in a build dir of its
# own; the -quick forms (CI) build and run only the tests of lockstep's threads and parsers (docs/testing.md).
test-asan: deps
	@scripts/install-deps --fuzz
	JOBS=$(JOBS) scripts/sanitizers/test address build-asan
test-tsan: deps
	JOBS=$(JOBS) scripts/sanitizers/test thread build-tsan
test-asan-quick: deps
	@scripts/install-deps --fuzz
	JOBS=$(JOBS) scripts/sanitizers/test address build-asan --quick
test-tsan-quick: deps
	JOBS=$(JOBS) scripts/sanitizers/test thread build-tsan --quick

# Single-threaded kernels and one training step beside PyTorch's (OMP_NUM_THREADS=1 so that no library pool
# runs more threads than it was told).
bench: build
	@scripts/install-deps --bench
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(BUILD)/bin/micro_kernels --benchmark_min_time=0.5
	OMP_NUM_THREADS=1 $(BUILD)/bin/lockstep bench step --model tutorial_cnn --threads 1
	OMP_NUM_THREADS=1 /usr/bin/python3 bench/peers/torch_cnn.py --threads 1

# lockstep against PyTorch, TensorFlow, OpenMPI and the machine's limits in one run (about 20 minutes), rewriting
# BENCHMARKS.md's bench-compare section for this CPU kind and its mixed_bfloat16 rows (other CPU kinds' are kept);
# `bench/compare.sh --quick` is a few minutes' check of the same.
bench-compare:
	bench/compare.sh --build $(BUILD) -j $(JOBS)

# The Python front end against C++ and against TensorFlow 2.21 (bench/python/run.py), rewriting its section of
# BENCHMARKS.md; about 15 minutes.
bench-python: build
	OMP_NUM_THREADS=1 $(BUILD)/venv/bin/python3 bench/python/run.py --write

# The tutorial CNN on Fashion-MNIST on two local workers (lockstep launch), one epoch.
demo: build
	$(BUILD)/bin/lockstep train --workers 2 --model tutorial_cnn --dataset fashion_mnist --epochs 1 --batch-size 64 \
	  --optimizer adam --learning-rate 0.001 --metrics-out $(BUILD)/demo-metrics.json

# libFuzzer targets (fuzz/) in the clang ASan + UBSan build of `make test-asan` (build-asan: one instrumented
# library serves both); the binaries land in build-asan/fuzz. `make fuzz-run SECONDS=N` runs each for N seconds over
# its corpus, JOBS at a time (scripts/fuzz).
SECONDS ?= 10
fuzz: deps
	@scripts/install-deps --fuzz
	JOBS=$(JOBS) scripts/sanitizers/test address build-asan --configure
	cmake --build build-asan -j $(JOBS) --target fuzz

fuzz-run: fuzz
	scripts/fuzz --build build-asan --seconds $(SECONDS) --jobs $(JOBS)

# Debian packages of this build (CPack): $(BUILD)/lockstep_<version>_amd64.deb (the CLI, its man page) and
# lockstep-dev_<version>_amd64.deb (headers, static libraries, CMake and pkg-config files).
package: build
	cd $(BUILD) && cpack -G DEB

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')
