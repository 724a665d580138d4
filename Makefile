# lockstep: the commands README promises. Every target installs missing Debian packages first.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build test bench demo clean format

all: build

deps:
	@scripts/install-deps

$(BUILD)/CMakeCache.txt: | deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release $(CMAKE_FLAGS) >/dev/null

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

bench: build
	@scripts/install-deps --bench
	$(BUILD)/bin/micro_kernels --benchmark_min_time=0.5

demo: build
	@echo "make demo trains the tutorial CNN on Fashion-MNIST; it arrives with the training issue (#3)."
	@echo "What exists today: the tensor engine, autograd and their tests (make test)."
	$(BUILD)/bin/lockstep --version

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')
