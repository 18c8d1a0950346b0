#!/usr/bin/env bash
# scripts/deps.sh: make sure everything needed to build and test reel is here.
#
#   cmake >= 3.18 (from pip if missing: python3 -m pip install cmake ninja),
#   pkg-config, FFmpeg dev packages (libavformat libavcodec libavutil
#   libswscale), libjpeg-turbo and zstd (the packed store), libcurl (remote
#   input), the ffmpeg and ffprobe CLIs, a C compiler. With --test it also
#   installs what the tests need: nginx (HTTP server), moto[server] (S3
#   server), ray[data] (reel.ray's local cluster), clang with its sanitizer runtimes (fuzz targets, ThreadSanitizer)
#   and clang-format (the format check), the references some tests compare
#   with (in .deps/: lerobot 0.4.4, qwen-vl-utils, qwen-omni-utils);
#   and tries valgrind (optional: without it the leak test says it is skipped).
#   With --cuda (make cuda, the wheel) it only makes sure of the compiler of
#   the CUDA kernels (REEL_CUDA=ON) and prints its path: libnvrtc.so.12 of
#   PyPI's nvidia-cuda-nvrtc-cu12, pinned to 12.0.140 (its PTX loads on every
#   CUDA 12 and 13 driver, R525 on: docs/GPU.md says why), installed into
#   .deps/cuda12/ once. No GPU and no CUDA toolkit are needed. --test does it
#   too (the kernels' test compiles them).
#
# Missing system packages are installed with apt-get when we are root or have
# passwordless sudo; otherwise it stops (exit 1) and prints the command to run.
# Idempotent; prints one line and does nothing else when all is present.
set -euo pipefail

CMAKE_MIN=3.18
APT_PKGS="pkg-config libavformat-dev libavcodec-dev libavutil-dev libswscale-dev ffmpeg libturbojpeg0-dev libjpeg62-turbo-dev libzstd-dev libcurl4-openssl-dev"
FOR_TESTS=0
[ "${1:-}" = "--test" ] && FOR_TESTS=1
FFMPEG_MODULES="libavformat libavcodec libavutil libswscale"
LIB_MODULES="$FFMPEG_MODULES libturbojpeg libjpeg libzstd libcurl"

# pip --user installs its scripts here; the Makefile puts it on PATH too.
export PATH="${HOME:-/root}/.local/bin:$PATH"

say() { echo "deps: $*" >&2; }
have() { command -v "$1" >/dev/null 2>&1; }

# version_ge A B: A >= B for dotted versions.
version_ge() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

cmake_version() {
    cmake --version 2>/dev/null | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p'
}

# ------------------------------------------------------------ --cuda: NVRTC only
NVRTC_PIN="nvidia-cuda-nvrtc-cu12==12.0.140"
cuda_nvrtc() { # installs once, prints libnvrtc.so.12's path
    local root lib
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/.deps/cuda12"
    lib="$root/nvidia/cuda_nvrtc/lib/libnvrtc.so.12"
    if [ ! -f "$root/.complete-12.0.140" ]; then
        say "installing NVRTC from PyPI into $root ($NVRTC_PIN: the CUDA kernels' compiler, about 23 MB)"
        rm -rf "$root"
        python3 -m pip install -q --no-deps --target "$root" "$NVRTC_PIN" >&2 && [ -f "$lib" ] &&
            touch "$root/.complete-12.0.140" ||
            { say "could not install NVRTC; run: python3 -m pip install --no-deps --target $root '$NVRTC_PIN'"; return 1; }
    fi
    echo "$lib"
}
if [ "${1:-}" = "--cuda" ]; then
    cuda_nvrtc
    exit
fi

CMAKE_V=
cmake_ok() { # sets CMAKE_V
    CMAKE_V=
    have cmake || return 1
    CMAKE_V=$(cmake_version)
    [ -n "$CMAKE_V" ] && version_ge "$CMAKE_V" "$CMAKE_MIN"
}

cc_name() {
    local c
    for c in ${CC:-} cc gcc clang; do
        if have "$c"; then echo "$c"; return 0; fi
    done
    return 1
}

# ------------------------------------------------------------ what is missing
missing_apt=()
have pkg-config || missing_apt+=(pkg-config)
if have pkg-config && ! pkg-config --exists $LIB_MODULES 2>/dev/null; then
    missing_apt+=("dev packages ($LIB_MODULES)")
elif ! have pkg-config; then
    missing_apt+=("dev packages ($LIB_MODULES)")
fi
have ffmpeg || missing_apt+=(ffmpeg)
have ffprobe || missing_apt+=(ffprobe)
# root, or passwordless sudo: system packages can be installed
SUDO=
can_root=0
if [ "$(id -u)" = 0 ]; then
    can_root=1
elif have sudo && sudo -n true 2>/dev/null; then
    SUDO="sudo"
    can_root=1
fi
if [ $FOR_TESTS -eq 1 ] && ! have valgrind; then
    # wanted, not required: a machine without it (or without apt access)
    # still runs every other test
    if [ $can_root -eq 1 ] && have apt-get; then
        say "installing valgrind with apt-get (for the loader's leak-at-shutdown test)"
        { $SUDO apt-get update -qq && $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q valgrind; } >/dev/null 2>&1 ||
            say "warning: could not install valgrind; the leak-at-shutdown test will be skipped (apt-get install -y valgrind)"
    else
        say "warning: no valgrind; the leak-at-shutdown test will be skipped (to run it: apt-get install -y valgrind)"
    fi
fi
# ------------------------------------------------------------ test servers and tools
if [ $FOR_TESTS -eq 1 ]; then
    test_apt=()
    have nginx || [ -x /usr/sbin/nginx ] || test_apt+=(nginx-light)
    have clang || test_apt+=(clang)
    have clang-format || test_apt+=(clang-format)
    [ -d /usr/lib/llvm-14/lib/clang/14.0.6/lib/linux ] && ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-*.a >/dev/null 2>&1 ||
        test_apt+=(libclang-rt-14-dev)
    have llvm-symbolizer || [ -x /usr/bin/llvm-symbolizer-14 ] || test_apt+=(llvm)
    if [ ${#test_apt[@]} -gt 0 ]; then
        if [ $can_root -eq 1 ] && have apt-get; then
            say "installing for the tests with apt-get: ${test_apt[*]}"
            { $SUDO apt-get update -qq &&
              $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${test_apt[@]}"; } >/dev/null 2>&1 ||
                { say "could not install ${test_apt[*]}; as root, run:"
                  echo "    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${test_apt[*]}" >&2
                  exit 1; }
            # Debian starts the packaged nginx on port 80; the tests start their own on free loopback ports.
            { have systemctl && $SUDO systemctl disable --now nginx; } >/dev/null 2>&1 || true
            $SUDO pkill -x nginx >/dev/null 2>&1 || true
        else
            say "the tests need: ${test_apt[*]}; as root, run:"
            echo "    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ${test_apt[*]}" >&2
            exit 1
        fi
    fi
    # Ray Data for reel.ray's tests (they start a local cluster on 127.0.0.1); the
    # range pyproject.toml's `ray` extra pins
    if ! python3 -c 'import ray.data' >/dev/null 2>&1; then
        say "installing ray[data] with pip (reel.ray's tests start a local Ray cluster on loopback)"
        python3 -m pip install -q 'ray[data]>=2.60,<2.61' 2>/dev/null ||
            python3 -m pip install -q --user 'ray[data]>=2.60,<2.61' 2>/dev/null ||
            python3 -m pip install -q --user --break-system-packages 'ray[data]>=2.60,<2.61' ||
            { say "could not install ray[data]; run: python3 -m pip install 'ray[data]>=2.60,<2.61'"; exit 1; }
    fi
    if ! python3 -c 'import moto.server, flask, werkzeug' >/dev/null 2>&1; then
        say "installing moto[server] with pip (the S3 server the remote tests start on loopback)"
        python3 -m pip install -q 'moto[server]' 2>/dev/null ||
            python3 -m pip install -q --user 'moto[server]' 2>/dev/null ||
            python3 -m pip install -q --user --break-system-packages 'moto[server]' ||
            { say "could not install moto[server]; run: python3 -m pip install 'moto[server]'"; exit 1; }
    fi
    # reel.lerobot's tests: pyarrow (its parquet tables), PyAV (the tests make
    # LeRobot-style data as LeRobot does: libsvtav1 episodes, stream-copy
    # concatenation) and torchcodec 0.13 (LeRobot's decode path, the reference)
    if ! python3 -c 'import pyarrow.parquet, av, torchcodec.decoders' >/dev/null 2>&1; then
        say "installing pyarrow, av and torchcodec 0.13 with pip (reel.lerobot's tests and bench/bench_lerobot.py)"
        python3 -m pip install -q pyarrow av 'torchcodec==0.13.*' 2>/dev/null ||
            python3 -m pip install -q --user pyarrow av 'torchcodec==0.13.*' 2>/dev/null ||
            python3 -m pip install -q --user --break-system-packages pyarrow av 'torchcodec==0.13.*' ||
            { say "could not install them; run: python3 -m pip install pyarrow av 'torchcodec==0.13.*'"; exit 1; }
    fi
    # NVRTC (PyPI): tests/python/test_cuda_kernels.py compiles the kernels with it
    cuda_nvrtc >/dev/null || exit 1
    # abi3audit (PyPI): tests/python/test_abi3.py and the wheel test check with
    # it that the extension imports nothing beyond the stable ABI of CPython 3.10
    if ! python3 -m abi3audit --version >/dev/null 2>&1; then
        say "installing abi3audit with pip (the stable-ABI check of the extension)"
        python3 -m pip install -q abi3audit 2>/dev/null ||
            python3 -m pip install -q --user abi3audit 2>/dev/null ||
            python3 -m pip install -q --user --break-system-packages abi3audit ||
            { say "could not install abi3audit; run: python3 -m pip install abi3audit"; exit 1; }
    fi
    # The reference the VLM tests compare reel.vlm with: qwen-vl-utils 0.0.14
    # reading through decord, resizing with torchvision's transforms. Kept in
    # its own folder (tests/python/test_vlm.py appends it to sys.path), not in
    # site-packages: PyPI's torchvision 0.28 is a CUDA build whose _C.so does
    # not load beside CPU torch 2.13, so a plain `import torchvision` fails for
    # everyone else; the test imports it with missing operators tolerated.
    vlm_ref="${REEL_VLM_REF:-$(cd "$(dirname "$0")/.." && pwd)/.deps/vlm-ref}"
    if [ ! -f "$vlm_ref/.complete-1" ]; then
        say "installing the VLM reference (qwen-vl-utils 0.0.14, torchvision 0.28.0, decord 0.6.0) into $vlm_ref"
        rm -rf "$vlm_ref"
        python3 -m pip install -q --no-deps --target "$vlm_ref" qwen-vl-utils==0.0.14 torchvision==0.28.0 \
            decord==0.6.0 pillow >/dev/null &&
            touch "$vlm_ref/.complete-1" ||
            say "could not install the VLM reference; run: python3 -m pip install --no-deps --target $vlm_ref qwen-vl-utils==0.0.14 torchvision==0.28.0 decord==0.6.0 pillow"
    fi
    # The reference reel.vlm's audio (use_audio_in_video) is compared with:
    # qwen-omni-utils 0.0.9's audio_process.py (the ffmpeg CLI through
    # audioread, librosa's cut and mono mix, soxr). Its own folder too, with its
    # dependencies (librosa, numba, soxr; no torch): tests/python/test_vlm_audio.py
    # loads audio_process.py alone (the package's __init__ imports torchvision).
    omni_ref="${REEL_OMNI_REF:-$(cd "$(dirname "$0")/.." && pwd)/.deps/omni-ref}"
    if [ ! -f "$omni_ref/.complete-1" ]; then
        say "installing the Qwen-Omni audio reference (qwen-omni-utils 0.0.9 with librosa) into $omni_ref"
        rm -rf "$omni_ref"
        python3 -m pip install -q --target "$omni_ref" qwen-omni-utils==0.0.9 >/dev/null &&
            touch "$omni_ref/.complete-1" ||
            say "could not install the Qwen-Omni audio reference; run: python3 -m pip install --target $omni_ref qwen-omni-utils==0.0.9"
    fi
    # lerobot 0.4.4 itself, the reference reel.lerobot's tests and
    # bench/bench_lerobot.py compare with (its LeRobotDataset and
    # decode_video_frames_torchcodec). Its own folder, --no-deps: the package
    # pins torch<2.11 and torchcodec<0.11, yet its dataset code runs with the
    # system's torch 2.13 and torchcodec 0.13; only the light packages its
    # import chain needs come along (datasets, huggingface_hub, accelerate and
    # theirs; torchvision 0.28 imports as in the VLM reference above).
    # tests/python/lerobot_data.py appends it to sys.path.
    lerobot_ref="${REEL_LEROBOT_REF:-$(cd "$(dirname "$0")/.." && pwd)/.deps/lerobot}"
    lerobot_pkgs="lerobot==0.4.4 torchvision==0.28.0 datasets==4.8.5 huggingface_hub==0.35.3 accelerate==1.15.0 \
safetensors==0.8.0 psutil==7.2.2 pillow==13.0.0 dill==0.4.1 multiprocess==0.70.19 xxhash==4.1.0 tqdm==4.70.1 \
httpx==0.28.1 httpcore==1.0.9 anyio==4.16.0 h11==0.16.0"
    if [ ! -f "$lerobot_ref/.complete-1" ]; then
        say "installing lerobot 0.4.4 (no dependencies but its dataset code's light ones) into $lerobot_ref"
        rm -rf "$lerobot_ref"
        # shellcheck disable=SC2086
        python3 -m pip install -q --no-deps --target "$lerobot_ref" $lerobot_pkgs >/dev/null &&
            touch "$lerobot_ref/.complete-1" ||
            say "could not install lerobot; run: python3 -m pip install --no-deps --target $lerobot_ref $lerobot_pkgs"
    fi
fi

need_cc=0
cc_name >/dev/null || { need_cc=1; missing_apt+=("a C compiler"); }
need_cmake=0
cmake_ok || need_cmake=1

if [ ${#missing_apt[@]} -eq 0 ] && [ $need_cmake -eq 0 ]; then
    ff=$(pkg-config --modversion libavcodec 2>/dev/null || echo '?')
    if ! version_ge "$ff" 59; then
        say "warning: libavcodec $ff is older than FFmpeg 5 (libavcodec 59); reel targets FFmpeg >= 5"
    fi
    echo "deps: ok (cmake $CMAKE_V$(have ninja && echo ', ninja'), $(cc_name), libavcodec $ff, $(command -v ffmpeg))"
    exit 0
fi

# ------------------------------------------------------------ how to install

apt_install() { # packages...
    if [ $can_root -eq 1 ] && have apt-get; then
        say "installing with apt-get: $*"
        $SUDO apt-get update -qq
        $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "$@"
    else
        if have apt-get; then
            say "cannot install system packages (not root, no passwordless sudo); as root, run:"
        else
            say "apt-get is not available; install the equivalent of these Debian packages:"
        fi
        echo "    apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $*" >&2
        say "then run make again"
        exit 1
    fi
}

if [ ${#missing_apt[@]} -gt 0 ]; then
    say "missing: $(IFS=,; echo "${missing_apt[*]}" | sed 's/,/, /g')"
    pkgs=$APT_PKGS
    [ $need_cc -eq 1 ] && pkgs="$pkgs build-essential"
    # shellcheck disable=SC2086
    apt_install $pkgs
fi

# ------------------------------------------------------------ cmake (+ ninja)
pip_install_cmake() {
    python3 -m pip --version >/dev/null 2>&1 || return 1
    say "installing cmake and ninja with pip"
    # A plain install works in venvs/pyenv; Debian's system Python (PEP 668)
    # needs --user, and its pip refuses even that without --break-system-packages
    # (which then only writes to ~/.local).
    python3 -m pip install -q cmake ninja 2>/dev/null ||
        python3 -m pip install -q --user cmake ninja 2>/dev/null ||
        python3 -m pip install -q --user --break-system-packages cmake ninja
}

if [ $need_cmake -eq 1 ]; then
    if have cmake; then
        say "cmake $CMAKE_V is older than $CMAKE_MIN"
    else
        say "missing: cmake"
    fi
    if ! pip_install_cmake; then
        if [ $can_root -eq 1 ] && have apt-get; then
            say "pip is not available; installing cmake with apt-get"
            apt_install cmake ninja-build
        else
            say "install cmake >= $CMAKE_MIN, e.g.: python3 -m pip install --user cmake ninja"
            exit 1
        fi
    fi
    hash -r
    have pyenv && pyenv rehash >/dev/null 2>&1 || true
    if ! cmake_ok; then
        scripts_dir=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))' 2>/dev/null || true)
        user_base=$(python3 -m site --user-base 2>/dev/null || true)
        for d in "$scripts_dir" "${user_base:+$user_base/bin}"; do
            [ -n "$d" ] && [ -x "$d/cmake" ] || continue
            v=$("$d/cmake" --version 2>/dev/null | sed -n '1s/^cmake version \([0-9][0-9.]*\).*/\1/p')
            [ -n "$v" ] && version_ge "$v" "$CMAKE_MIN" || continue
            say "cmake $v was installed in $d, which is not first on PATH; run"
            echo "    export PATH=\"$d:\$PATH\"" >&2
            say "and run make again"
            exit 1
        done
        say "cmake >= $CMAKE_MIN still not found after installing it; install it by hand"
        exit 1
    fi
fi

# ------------------------------------------------------------ final check
fail=0
pkg-config --exists $LIB_MODULES || { say "dev packages still missing ($LIB_MODULES)"; fail=1; }
have ffmpeg && have ffprobe || { say "ffmpeg/ffprobe still missing"; fail=1; }
cc_name >/dev/null || { say "no C compiler"; fail=1; }
[ $fail -eq 0 ] || exit 1
echo "deps: ok (cmake $CMAKE_V$(have ninja && echo ', ninja'), $(cc_name), libavcodec $(pkg-config --modversion libavcodec), $(command -v ffmpeg))"
