# reel: the entry points. Everything goes through CMake in build/ (and
# build-asan/ for the sanitizer tree); scripts/deps.sh installs what is missing.
#
#   make / make build     check deps, configure (first time), build -> build/reel
#   make check            the quick tier: C tests of build/ and pytest without
#                         the tests marked slow, Ray, sanitizers, fuzzing or
#                         the wheel (about 3 minutes here); same last line
#   make test             C tests, C tests under address+undefined sanitizers,
#                         pytest (tests/python), then the wheel: built (on a
#                         fresh clone zig, FFmpeg and the bundled libraries
#                         too, then cached: times in docs/WHEEL.md; libreel
#                         with the CUDA kernels) and tested; last line
#                         "N passed, N failed"
#   make asan             only the sanitizer tree and its tests
#   make cuda             build-cuda/: libreel with the CUDA kernels embedded
#                         (REEL_CUDA=ON; NVRTC 12.0 from PyPI via scripts/deps.sh
#                         --cuda, or REEL_NVCC=/path/to/nvcc; no GPU needed)
#   make tsan             the threaded C tests under ThreadSanitizer (clang)
#   make format           format the C sources (.clang-format; make test checks it)
#   make fuzz             the libFuzzer targets, FUZZ_SECONDS (300) each
#   make demo             a small end-to-end demo
#   make bench            decoder benchmark (bench/run_decoder.py)
#   make wheel            the self-contained manylinux_2_28 wheel dist/reel-*.whl
#                         (zig cc for glibc 2.28; FFmpeg LGPL and the bundled
#                         libraries from Debian's sources, cached in build-wheel/)
#   make test-wheel       that wheel in a fresh venv, system FFmpeg hidden
#   make install PREFIX=/usr/local [DESTDIR=...]
#   make clean            (keeps build-wheel/, the FFmpeg cache: make clean-wheel)
#
# Variables: BUILD_DIR (build), ASAN_DIR (build-asan), PREFIX (/usr/local),
# CMAKE_ARGS (extra -D options for the configure step), JOBS (parallelism).

SHELL := /bin/bash
.DEFAULT_GOAL := build

BUILD_DIR ?= build
ASAN_DIR  ?= build-asan
PREFIX    ?= /usr/local
CMAKE_ARGS ?=
JOBS      ?= $(shell nproc 2>/dev/null || echo 2)
REEL      := $(BUILD_DIR)/reel

# cmake/ninja installed by `pip install --user` land in ~/.local/bin.
export PATH := $(HOME)/.local/bin:$(PATH)
export CMAKE_ARGS JOBS

.PHONY: all build deps check test asan tsan fuzz format demo bench install clean help wheel test-wheel clean-wheel cuda

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@bash scripts/cmake_build.sh $(BUILD_DIR)

# The runner builds build/ itself (after deps) so that even a failed build
# ends with the summary line.
check:
	@bash scripts/deps.sh --test
	@bash scripts/run_tests.sh --build-first --quick --build $(BUILD_DIR)

test:
	@bash scripts/deps.sh --test
	@bash scripts/run_tests.sh --build-first --build $(BUILD_DIR) --asan $(ASAN_DIR)

asan: deps
	@bash scripts/run_tests.sh --build-first --asan-only --build $(BUILD_DIR) --asan $(ASAN_DIR)

# libreel with the CUDA kernels (docs/GPU.md): NVRTC 12.0 from PyPI compiles
# them, or the nvcc REEL_NVCC names; compiled here, run on a GPU machine by
# scripts/device_check.sh.
CUDA_DIR ?= build-cuda
REEL_NVCC ?=
cuda: deps
	@if [ -n "$(REEL_NVCC)" ]; then how=(-DREEL_NVCC="$(REEL_NVCC)" -DREEL_NVRTC=); \
	  else nvrtc=$$(bash scripts/deps.sh --cuda) || exit 1; how=(-DREEL_NVRTC="$$nvrtc" -DREEL_NVCC=); fi; \
	  images=$$(python3 scripts/cuda_kernels.py --print-default-images) || exit 1; \
	  bash scripts/cmake_build.sh $(CUDA_DIR) -DREEL_CUDA=ON -DREEL_WERROR=ON -DREEL_CUDA_IMAGES="$$images" "$${how[@]}"

# Formats the C sources with .clang-format (make test checks them).
format:
	@bash scripts/check_format.sh --fix

# ThreadSanitizer: the threaded C tests in build-tsan/ (clang).
tsan: deps
	@bash scripts/deps.sh --test
	@bash scripts/run_tests.sh --build-first --tsan-only --build $(BUILD_DIR)

# The libFuzzer targets (tests/fuzz) in build-fuzz/, FUZZ_SECONDS each (default 300).
FUZZ_SECONDS ?= 300
fuzz: build
	@bash scripts/deps.sh --test
	@REEL_CLI=$(REEL) bash scripts/fuzz.sh $(FUZZ_SECONDS)

# ============================================================== DEMO (begin)
# The loader demo: a Kinetics-like sample set that reel generates itself
# (64 H.264 clips of 10 s, 340x256, 25 fps, in class folders, plus 4 damaged
# files to show the error policy), then `reel bench` runs the batch loader
# over it: 8 frames per clip, 224x224, batches of 32, with a live progress
# bar, a report naming the bottleneck stage, and a Chrome trace. Then the
# same set is packed once into a JPEG store (`reel pack`, the damaged files
# recorded as failures) and the loader runs over the store the same way,
# for its speed beside the video path.
DEMO_DIR := $(BUILD_DIR)/demo

demo: build
	@test -f $(DEMO_DIR)/kinetics/manifest.csv || \
	  $(REEL) synth --dataset $(DEMO_DIR)/kinetics --videos 64 --seconds 10 --size 340x256 --fps 25 --corrupt 4
	$(REEL) bench $(DEMO_DIR)/kinetics --frames-per-clip 8 --clips-per-video 1 --size 224 --batch 32 \
	  --epochs 1 --trace $(DEMO_DIR)/trace.json
	@echo "demo: trace written to $(DEMO_DIR)/trace.json (open in https://ui.perfetto.dev or chrome://tracing)"
	@echo; echo "demo: packing the same set into a store (decoded once, JPEG shards) ..."
	$(REEL) pack $(DEMO_DIR)/kinetics $(DEMO_DIR)/kinetics.store --size 256 --format jpeg
	$(REEL) bench $(DEMO_DIR)/kinetics.store --frames-per-clip 8 --clips-per-video 1 --size 224 --batch 32 \
	  --epochs 3
	@echo "demo: compare the frames/s of the two runs above: the video path, then the store"
# ============================================================== DEMO (end)

# The wheel: scripts/build_wheel.sh (zig from PyPI; FFmpeg, dav1d, zlib,
# libjpeg-turbo, zstd, OpenSSL and curl from `apt-get source`, each cached by
# version and configure line). The first build's times, per library, are in
# docs/WHEEL.md ("Build times"); after that a wheel is reel only.
wheel:
	@bash scripts/build_wheel.sh

test-wheel:
	@bash scripts/test_wheel.sh

clean-wheel:
	rm -rf build-wheel dist

bench: build
	python3 bench/run_decoder.py $(BENCH_ARGS)

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) build-tsan build-fuzz build-cuda

help:
	@sed -n '3,28p' Makefile | sed 's/^# \{0,1\}//'
