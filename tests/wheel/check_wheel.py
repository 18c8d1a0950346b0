# tests/wheel/check_wheel.py: the self-contained wheel's checks, run by
# scripts/test_wheel.sh with a fresh venv's python (only the wheel, numpy and
# torch installed) inside a mount namespace where the system's FFmpeg,
# libdav1d, libjpeg-turbo, zstd and curl (with its TLS library) are hidden.
# Prints "ok NAME" or "FAIL NAME: why" per check and ends with the line
# "N passed, N failed". Environment: REEL_SHARED_VIDEOS, WHEEL_TMP (a
# scratch folder), WHEEL_HTTP (nginx serving the shared videos), WHEEL_FOREIGN
# (a video whose codec this build has no decoder for), WHEEL_H264_STORE (a
# store packed as h264 by the source build), WHEEL_AUDIO_REFS (per clip the
# ffmpeg CLI's f32le samples and a JSON note: file, codec, channels, first frame).
from __future__ import annotations

import ctypes
import json
import os
import subprocess
import sys
import traceback
import zipfile
from pathlib import Path

SHARED = Path(os.environ["REEL_SHARED_VIDEOS"])
ROOT = Path(__file__).resolve().parents[2]
TMP = Path(os.environ["WHEEL_TMP"])
HTTP = os.environ.get("WHEEL_HTTP", "")
FOREIGN = os.environ.get("WHEEL_FOREIGN", "")
REEL = str(Path(sys.executable).with_name("reel"))  # the venv's console script
HIDDEN = ["libavcodec.so.59", "libavformat.so.59", "libavutil.so.57", "libswscale.so.6", "libswresample.so.4",
          "libdav1d.so.6",
          "libturbojpeg.so.0", "libjpeg.so.62", "libzstd.so.1", "libcurl.so.4", "libssl.so.3"]
# a few shared videos of different codecs and containers for the loader and the store
SET = ["nasa_13013.mp4", "flipping_a_pancake.mkv", "no_duration.webm", "foreman_hevc.mp4",
       "non_uniform_tiling.ivf", "test.avi", "MVI_4823.AVI"]

results = []


def check(fn):
    try:
        fn()
        results.append(True)
        print(f"ok {fn.__name__}", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported by name
        results.append(False)
        print(f"FAIL {fn.__name__}: {e}", flush=True)
        traceback.print_exc(limit=3)
    return fn


def run(*args, ok=True):
    p = subprocess.run([REEL, *args], capture_output=True, text=True, timeout=300)
    if ok and p.returncode != 0:
        raise AssertionError(f"reel {' '.join(args)}: exit {p.returncode}: {p.stderr.strip()[-600:]}")
    return p


def load_ref(path: Path) -> bytes:
    with zipfile.ZipFile(path) as z:
        return z.read(next(n for n in z.namelist() if n.endswith("/data/0")))


@check
def system_libraries_hidden():
    for name in HIDDEN:
        try:
            ctypes.CDLL(name)
        except OSError:
            continue
        raise AssertionError(f"{name} still loads: the namespace does not hide it")


import reel  # noqa: E402 - after the check above, so a failing import is still reported by name


@check
def imports_from_the_wheel():
    assert "site-packages" in reel.__file__, reel.__file__
    info = reel.build_info()
    w = info["wheel"]
    assert w, "no reel/_wheel_build.json: not the wheel"
    # the line the libraries report is the one the wheel records (less "./configure"; FFmpeg
    # quotes the arguments with commas)
    assert info["ffmpeg_configuration"].replace("'", "").split() == w["ffmpeg_configure"].split()[1:], (
        info["ffmpeg_configuration"], w["ffmpeg_configure"])
    cfg = info["ffmpeg_configuration"]
    assert "--enable-gpl" not in cfg and "--enable-nonfree" not in cfg, cfg
    assert info["ffmpeg_license"].startswith("LGPL"), info["ffmpeg_license"]
    names = {b["soname"].split(".so")[0] for b in w["bundled"]}
    for lib in ("libavcodec", "libavformat", "libavutil", "libswscale", "libswresample", "libdav1d", "libturbojpeg",
                "libjpeg", "libzstd", "libcurl", "libssl", "libcrypto"):
        assert lib in names, f"{lib} not in the bundled list {sorted(names)}"
    # each built here from Debian's source with zig for glibc 2.28
    assert all("built here from Debian's source" in b["from"] for b in w["bundled"]), w["bundled"]
    assert w["compiler"].startswith("zig ") and w["compiler"].endswith("x86_64-linux-gnu.2.28"), w["compiler"]
    # the libcurl that answers is the bundled one, with the bundled OpenSSL (its version, not the system's)
    ssl = next(b for b in w["bundled"] if b["soname"].startswith("libssl."))
    assert info["tls"] == "OpenSSL/" + ssl["version"].split("-")[0], (info["tls"], ssl)


@check
def build_info_lists_audio_and_nvdec():
    info = reel.build_info()
    cfg = info["ffmpeg_configuration"]
    for flag in ("--enable-swresample", "--enable-ffnvcodec", "--enable-cuda", "--enable-nvdec"):
        assert flag in cfg, (flag, cfg)
    assert info["libswresample"].startswith("4."), info["libswresample"]
    want = {"aac": "aac", "mp3": "mp3float", "opus": "opus", "vorbis": "vorbis", "flac": "flac",
            "pcm_s16le": "pcm_s16le", "pcm_f32le": "pcm_f32le"}
    for codec, dec in want.items():
        assert info["audio_decoders"].get(codec) == dec, (codec, info["audio_decoders"])
    assert info["hwdevice_types"] == ["cuda"], info["hwdevice_types"]
    assert set(info["hwaccels"]["cuda"]) >= {"h264", "hevc", "vp8", "vp9", "av1", "mpeg4", "mjpeg"}, info["hwaccels"]


def cuda_images():
    """CMakeLists.txt's REEL_CUDA_IMAGES, the one list (scripts/cuda_kernels.py reads it)."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("cuda_kernels", ROOT / "scripts" / "cuda_kernels.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.default_images()


@check
def carries_the_cuda_kernels():
    """The wheel's libreel carries the CUDA kernel images build_info names
    (docs/GPU.md): in the bytes of reel's own binaries, a CUDA ELF (e_machine
    EM_CUDA, 190) per SASS architecture and the PTX text, made by NVRTC 12.0."""
    import struct

    images = cuda_images()
    info = reel.build_info()
    assert info["cuda_kernels"] == images, (info["cuda_kernels"], images)
    assert info["wheel"]["cuda_kernels_compiler"].startswith("NVRTC 12.0."), info["wheel"]
    ext = Path(reel._reel.__file__)  # the extension, libreel linked in
    data = ext.read_bytes()
    sms = set()
    at = data.find(b"\x7fELF", 1)
    while at > 0:
        if data[at + 4] == 2 and struct.unpack_from("<H", data, at + 18)[0] == 190:
            sms.add(struct.unpack_from("<I", data, at + 48)[0] & 0xFF)
        at = data.find(b"\x7fELF", at + 1)
    assert sms == {int(n[3:]) for n in images if n.startswith("sm_")}, (ext.name, sms)
    for n in images:
        if n.startswith("compute_"):
            assert f"\n.version 8.0\n.target sm_{n[8:]}\n".encode() in data, (ext.name, n)


@check
def each_gpu_gets_its_kernel_image():
    """The wheel's images as libreel offers them to a stub driver
    (tests/wheel/stub_cuda.c, WHEEL_STUB_CUDA): the GPU's SASS first, then
    the PTX where it can run; none for a GPU older than 6.0. Each refusal is
    named in the error, with the GPU, the driver's CUDA version and the images."""
    lib = os.environ.get("WHEEL_STUB_CUDA", "")
    assert lib, "no WHEEL_STUB_CUDA (test_wheel.sh builds tests/wheel/stub_cuda.c)"
    video = SHARED / "nasa_13013.mp4"
    code = (f"import reel\ntry:\n    reel.VideoDecoder({str(video)!r}, device='cuda')\n"
            "except reel.ReelError as e:\n    print(e)\n")
    carried = ", ".join(cuda_images())
    # 6.x to 8.x: the SASS of its major version only (the compute_90 PTX cannot run below 9.0);
    # 9.0: sm_90, then the PTX; 10.x, 12.x: the PTX
    for cap, offered in (("60", ["sm_60"]), ("61", ["sm_60"]), ("70", ["sm_70"]), ("72", ["sm_70"]),
                         ("75", ["sm_75"]), ("80", ["sm_80"]), ("86", ["sm_80"]), ("90", ["sm_90", "ptx"]),
                         ("100", ["ptx"]), ("120", ["ptx"]), ("52", [])):
        log = TMP / f"stub_cuda_{cap}.log"
        log.unlink(missing_ok=True)
        env = dict(os.environ, REEL_LIBCUDA=lib, STUB_CAPABILITY=cap, STUB_LOG=str(log))
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        got = log.read_text().split() if log.exists() else []
        assert got == offered, (cap, got, p.stdout, p.stderr)
        msg = p.stdout
        assert f"compute {cap[:-1]}.{cap[-1]}, driver CUDA 12.2" in msg and "Stub GPU" in msg, msg
        assert f"this libreel carries {carried} (NVRTC 12.0)" in msg, msg
        assert ("CUDA_ERROR_NO_BINARY_FOR_GPU" if offered else "no image for this GPU") in msg, msg


@check
def audio_equals_the_cli():
    """One clip per audio codec: reel's samples for a run of frames against the
    system ffmpeg CLI's (decoded before the libraries were hidden)."""
    import numpy as np
    refs = Path(os.environ["WHEEL_AUDIO_REFS"])
    clips = sorted(refs.glob("*.json"))
    assert clips, f"no audio references in {refs}"
    for meta_path in clips:
        meta = json.loads(meta_path.read_text())
        ch = meta["channels"]
        ref = np.fromfile(meta_path.with_suffix(".f32"), dtype=np.float32).reshape(-1, ch).T
        with reel.VideoDecoder(SHARED / meta["file"], audio=True) as d:
            assert d.audio_metadata["codec"] == meta["codec"], (meta, d.audio_metadata)
            idx = list(range(meta["first"], meta["first"] + 8))
            a = d.get_audio_for_frames(idx)
        got = np.asarray(a.data)
        assert got.shape[0] == ch and a.num_samples > 0, (meta["file"], got.shape)
        lo, hi = a.valid
        want = ref[:, a.first_sample + lo:a.first_sample + hi]
        assert hi > lo and want.shape == got[:, lo:hi].shape, (meta["file"], a.valid, ref.shape)
        err = float(np.abs(got[:, lo:hi] - want).max())
        assert err <= 1e-6, f"{meta['file']} ({meta['codec']}): max difference {err}"


@check
def licences_in_dist_info():
    import importlib.metadata as md
    dist = md.distribution("reel")
    files = {str(f) for f in dist.files or []}
    lic = [f for f in files if "/licenses/" in f]
    need = ["FFmpeg-COPYING.LGPLv2.1", "FFmpeg-SOURCE.txt", "dav1d.copyright", "libjpeg-turbo.copyright",
            "libzstd.copyright", "curl.copyright", "openssl.copyright", "zlib.copyright"]
    for n in need:
        assert any(f.endswith("/" + n) for f in lic), f"{n} not in {sorted(lic)}"
    src = next(f for f in lic if f.endswith("FFmpeg-SOURCE.txt"))
    text = Path(dist.locate_file(src)).read_text()
    line = reel.build_info()["ffmpeg_configuration"].replace("'", "").strip()
    assert line in text, "the configure line is not in FFmpeg-SOURCE.txt"


@check
def cli_version_and_info():
    p = run("--version", "--build")
    assert "reel " + reel.__version__ in p.stdout, p.stdout
    assert "--disable-everything" in p.stdout, p.stdout
    p = run("info", str(SHARED / "nasa_13013.mp4"), "--json")
    d = json.loads(p.stdout.splitlines()[0])
    assert d.get("codec") == "h264" and d.get("width") == 480 and d.get("height") == 270, d
    p = run("info", str(SHARED / "non_uniform_tiling.ivf"), "--json")
    assert json.loads(p.stdout.splitlines()[0]).get("codec") == "av1", p.stdout


@check
def decoder_reference_frames_bit_exact():
    refs = SHARED / "nasa_13013.mp4.refs"
    for stream, idx in ((3, [0, 1, 10, 35, 180, 386, 389]), (0, [0, 5, 9, 35])):
        d = reel.VideoDecoder(SHARED / "nasa_13013.mp4", stream=stream, layout="HWC")
        got = d.get_frames_at(idx)
        per = got.nbytes // len(idx)
        blob = got.tobytes()
        for k, i in enumerate(idx):
            want = load_ref(refs / f"nasa_13013.mp4.stream{stream}.frame{i:06d}.pt")
            assert blob[k * per:(k + 1) * per] == want, f"stream {stream} frame {i} differs"
    hdr = SHARED / "nasa_13013_hdr.mp4.refs"
    f = reel.VideoDecoder(SHARED / "nasa_13013_hdr.mp4", layout="HWC").get_frames_at([0, 5, 10])
    per = f.nbytes // 3
    for k, i in enumerate((0, 5, 10)):
        assert f.tobytes()[k * per:(k + 1) * per] == load_ref(hdr / f"nasa_13013_hdr.mp4.stream0.frame{i:06d}.pt"), i


@check
def cli_frames():
    out = TMP / "frames"
    run("frames", str(SHARED / "vp8_video_with_alpha.webm"), "--at", "0,60,-1", "-o", str(out))
    pngs = sorted(out.glob("*.png"))
    assert len(pngs) == 3 and all(p.read_bytes()[:4] == b"\x89PNG" for p in pngs), pngs
    raw = TMP / "f.rgb"
    run("frames", str(SHARED / "nasa_13013.mp4"), "--at", "10", "--raw", str(raw))
    assert raw.read_bytes() == load_ref(SHARED / "nasa_13013.mp4.refs" / "nasa_13013.mp4.stream3.frame000010.pt")


def loader_epoch(source, n_videos):
    import torch
    seen = 0
    with reel.Loader(source, frames_per_clip=4, clips_per_video=1, size=64, batch_size=3, decode_threads=2,
                     seed=1, epochs=1) as loader:
        for b in loader:
            x, y = b.torch()
            assert isinstance(x, torch.Tensor) and x.dtype == torch.uint8 and tuple(x.shape[1:]) == (4, 3, 64, 64), x.shape
            seen += x.shape[0]
        m = loader.metrics()
    assert seen == n_videos, (seen, n_videos)
    assert m["coverage"] == 1.0, m["failures"]


@check
def loader_epoch_over_videos():
    paths = [(str(SHARED / v), i) for i, v in enumerate(SET)]
    loader_epoch(paths, len(SET))


def manifest() -> Path:
    m = TMP / "set.csv"
    m.write_text("path,label\n" + "".join(f"{SHARED / v},{i}\n" for i, v in enumerate(SET)))
    return m


@check
def pack_jpeg_and_loader_epoch_over_the_store():
    store = TMP / "store-jpeg"
    run("pack", str(manifest()), str(store), "--size", "96", "--every", "4", "--format", "jpeg", "--threads", "2")
    run("pack", "--verify", str(store))
    loader_epoch(str(store), len(SET))


@check
def pack_raw_and_loader_epoch_over_the_store():
    store = TMP / "store-raw"
    # (not --zstd: the store reader refuses zstd frames whose rows are not the
    # picture's stride, "unexpected picture layout", in the source build too)
    run("pack", str(manifest()), str(store), "--size", "64", "--every", "8", "--format", "raw", "--threads", "2")
    loader_epoch(str(store), len(SET))


@check
def pack_h264_says_how_to_get_it():
    p = run("pack", str(manifest()), str(TMP / "store-h264"), "--format", "h264", ok=False)
    assert p.returncode != 0, p.stdout
    for words in ("libx264", "--format jpeg", "from source"):
        assert words in p.stderr, p.stderr


@check
def reads_an_h264_store_packed_by_a_source_build():
    store = os.environ.get("WHEEL_H264_STORE", "")
    assert store, "no h264 store (the source build's build/reel packs it)"
    loader_epoch(store, 2)


@check
def unsupported_codec_fails_by_name():
    assert FOREIGN, "no WHEEL_FOREIGN video"
    try:
        reel.VideoDecoder(FOREIGN)
    except reel.UnsupportedError as e:
        assert "decoder for mpeg2video not in this build" in str(e), str(e)
    else:
        raise AssertionError("an mpeg2video stream opened")


@check
def remote_read_over_http():
    assert HTTP, "no WHEEL_HTTP server"
    url = HTTP + "/nasa_13013.mp4"
    idx = [0, 10, 180, 389]
    got = reel.VideoDecoder(url, layout="HWC").get_frames_at(idx).tobytes()
    want = reel.VideoDecoder(SHARED / "nasa_13013.mp4", layout="HWC").get_frames_at(idx).tobytes()
    assert got == want, "remote frames differ from local ones"
    paths = [(HTTP + "/" + v, i) for i, v in enumerate(SET[:3])]
    loader_epoch(paths, 3)


passed = sum(results)
print(f"{passed} passed, {len(results) - passed} failed")
sys.exit(0 if passed == len(results) else 1)
