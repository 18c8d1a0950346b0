#!/usr/bin/env bash
# scripts/device_check.sh [--wheel FILE] [--no-build]: the one command for a
# lent GPU machine (issue 30; docs/GPU.md). No network; under 8 minutes.
#
#   --wheel FILE  install that wheel with --no-deps into $OUT/site (not used by
#                 the checks yet; the wheel's libreel carries the kernels)
#   --no-build    do not build build-cuda/ (use it if it is there)
#
# Without --no-build it builds build-cuda/ (REEL_CUDA=ON, the kernels
# embedded) when NVRTC (.deps/cuda12) or nvcc, cmake and FFmpeg's headers
# are there. Then
# bench/device_check.py runs every check it can and prints, for each one it
# cannot run, why (no GPU, no driver, a driver mount without libnvcuvid, no
# ffmpeg CLI, no torchcodec...). It writes $OUT/device_check.json and
# $OUT/device_check.md (OUT: $REEL_DEVICE_CHECK_OUT, default
# device_check_out/). Exit status 0 unless a check that ran failed.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

wheel=
build=1
while [ $# -gt 0 ]; do
    case "$1" in
    --wheel) wheel=${2:?--wheel needs a file}; shift 2 ;;
    --no-build) build=0; shift ;;
    *) echo "usage: scripts/device_check.sh [--wheel FILE] [--no-build]" >&2; exit 2 ;;
    esac
done

OUT=${REEL_DEVICE_CHECK_OUT:-device_check_out}
mkdir -p "$OUT"
say() { echo "device_check: $*"; }

if [ -n "$wheel" ]; then
    if python3 -m pip install -q --no-deps --no-index --target "$OUT/site" "$wheel"; then
        say "installed $wheel into $OUT/site"
        export REEL_DEVICE_CHECK_SITE="$OUT/site"
    else
        say "could not install $wheel (pip install --no-deps --target $OUT/site)"
    fi
fi

# The kernels' compiler (docs/GPU.md): $REEL_NVCC if set, else the NVRTC of
# scripts/deps.sh --cuda if .deps/cuda12 has it (no network here: it is not
# installed now), else an nvcc from /usr/local/cuda or PATH.
how=()
nvrtc=.deps/cuda12/nvidia/cuda_nvrtc/lib/libnvrtc.so.12
nvcc_bin=${REEL_NVCC:-}
[ -z "$nvcc_bin" ] && [ -f "$nvrtc" ] && how=(-DREEL_NVRTC="$PWD/$nvrtc" -DREEL_NVCC=)
[ ${#how[@]} -eq 0 ] && [ -z "$nvcc_bin" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc_bin=/usr/local/cuda/bin/nvcc
[ ${#how[@]} -eq 0 ] && [ -z "$nvcc_bin" ] && nvcc_bin=$(command -v nvcc 2>/dev/null || true)
[ -n "$nvcc_bin" ] && how=(-DREEL_NVCC="$nvcc_bin" -DREEL_NVRTC=)
if [ "$build" = 1 ]; then
    if [ ${#how[@]} -eq 0 ]; then
        say "not building build-cuda/: no NVRTC in .deps/cuda12 (bash scripts/deps.sh --cuda) and no nvcc"
    elif ! command -v cmake >/dev/null 2>&1; then
        say "not building build-cuda/: no cmake"
    elif ! pkg-config --exists libavcodec libswscale 2>/dev/null; then
        say "not building build-cuda/: no FFmpeg development files (pkg-config libavcodec)"
    else
        say "building build-cuda/ with ${how[0]#-D}"
        # the image list passed each time: a build-cuda/ configured before it changed keeps its cache
        if ! nice bash scripts/cmake_build.sh build-cuda -DREEL_CUDA=ON \
            -DREEL_CUDA_IMAGES="$(python3 scripts/cuda_kernels.py --print-default-images)" "${how[@]}" \
            >"$OUT/build.log" 2>&1; then
            say "the build failed: $OUT/build.log"
        fi
    fi
fi

exec python3 bench/device_check.py --out "$OUT" --build build-cuda
