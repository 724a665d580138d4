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
	@scripts/python-venv $(BUILD)/venv
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS) --timeout 600

bench: build
	@scripts/install-deps --bench
	$(BUILD)/bin/micro_kernels --benchmark_min_time=0.5
	$(BUILD)/bin/train_step --model tutorial_cnn --threads 1
	/usr/bin/python3 bench/peers/torch_cnn.py --threads 1

# The tutorial CNN on Fashion-MNIST on two local workers (lockstep launch), one epoch.
demo: build
	$(BUILD)/bin/lockstep train --workers 2 --model tutorial_cnn --dataset fashion_mnist --epochs 1 --batch-size 64 \
	  --optimizer adam --learning-rate 0.001 --metrics-out $(BUILD)/demo-metrics.json

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.cc' '*.h')
