# reel: the entry points. Everything goes through CMake in build/ (and
# build-asan/ for the sanitizer tree); scripts/deps.sh installs what is missing.
#
#   make / make build     check deps, configure (first time), build -> build/reel
#   make test             C tests, C tests under address+undefined sanitizers,
#                         pytest (tests/python); last line "N passed, N failed"
#   make asan             only the sanitizer tree and its tests
#   make demo             a small end-to-end demo
#   make bench            decoder benchmark (bench/run_decoder.py)
#   make install PREFIX=/usr/local [DESTDIR=...]
#   make clean
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

.PHONY: all build deps test asan demo bench install clean help

all: build

deps:
	@bash scripts/deps.sh

build: deps
	@bash scripts/cmake_build.sh $(BUILD_DIR)

# The runner builds build/ itself (after deps) so that even a failed build
# ends with the summary line.
test: deps
	@bash scripts/run_tests.sh --build-first --build $(BUILD_DIR) --asan $(ASAN_DIR)

asan: deps
	@bash scripts/run_tests.sh --build-first --asan-only --build $(BUILD_DIR) --asan $(ASAN_DIR)

# ============================================================== DEMO (begin)
# For now: synthesise a small dataset, inspect two of its videos, and pull
# three exact frames (first, 11th, last) out of one. This block will become
# the loader demo once the pipeline and the Python package land.
DEMO_DIR := $(BUILD_DIR)/demo

demo: build
	rm -rf $(DEMO_DIR)
	$(REEL) synth --dataset $(DEMO_DIR) --videos 8 --seconds 4
	@set -e; \
	files=$$(find $(DEMO_DIR) -type f \( -name '*.mp4' -o -name '*.mkv' -o -name '*.webm' \
	         -o -name '*.mov' -o -name '*.avi' \) | sort | head -n 2); \
	if [ -z "$$files" ]; then echo "demo: no videos written under $(DEMO_DIR)" >&2; exit 1; fi; \
	first=$$(printf '%s\n' $$files | head -n 1); \
	set -x; \
	$(REEL) info $$files; \
	$(REEL) frames $$first --at 0,10,-1 -o $(DEMO_DIR)/frames; \
	ls -l $(DEMO_DIR)/frames
# ============================================================== DEMO (end)

bench: build
	@if [ -f bench/run_decoder.py ]; then \
	    python3 bench/run_decoder.py $(BENCH_ARGS); \
	else \
	    echo "bench: bench/run_decoder.py is not there yet; meanwhile try: $(REEL) bench --help"; \
	fi

install: build
	DESTDIR="$(DESTDIR)" cmake --install $(BUILD_DIR) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR)

help:
	@sed -n '3,14p' Makefile | sed 's/^# \{0,1\}//'
