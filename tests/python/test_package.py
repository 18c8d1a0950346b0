# tests/python/test_package.py: the package as shipped: version, exports,
# docstrings, type stubs, heap types only (no static state), no link-time or
# import-time dependency on torch or numpy.
from __future__ import annotations

import inspect
import re
import shutil
import subprocess
from pathlib import Path

import reel
import reel._reel as R
from conftest import ROOT, run_python


def test_version():
    text = (ROOT / "include" / "reel" / "common.h").read_text()
    parts = [re.search(rf"REEL_VERSION_{k} +(\d+)", text).group(1) for k in ("MAJOR", "MINOR", "PATCH")]
    assert reel.__version__ == ".".join(parts) == R.version()
    assert "libavcodec" in reel.ffmpeg_versions()
    api = [int(re.search(rf"REEL_API_VERSION_{k} +(\d+)", text).group(1)) for k in ("MAJOR", "MINOR", "PATCH")]
    assert reel.version_api() == (api[0] << 16) | (api[1] << 8) | api[2]


def test_exports_and_docstrings():
    for name in reel.__all__:
        obj = getattr(reel, name)
        if callable(obj) and name != "Status":
            assert inspect.getdoc(obj), f"reel.{name} has no docstring"
    for cls in (reel.VideoDecoder, reel.Loader, reel.Frames):
        for name, member in vars(cls).items():
            if not name.startswith("_") and callable(member):
                assert inspect.getdoc(member), f"{cls.__name__}.{name} has no docstring"


def test_stubs_shipped():
    pkg = Path(reel.__file__).parent
    assert (pkg / "_reel.pyi").exists() and (pkg / "py.typed").exists()
    # that the stubs match the built extension is tests/python/test_lint.py's stubtest


def test_heap_types_only():
    heap = 1 << 9  # Py_TPFLAGS_HEAPTYPE: types live in module state, not in static storage
    for t in (R.Frames, R.Decoder, R.Loader, R.BatchHandle, R.ReelError):
        assert t.__flags__ & heap, t


def test_no_torch_or_numpy_needed(video):
    code = f"""
import sys
sys.modules["torch"] = None
sys.modules["numpy"] = None
import reel
d = reel.VideoDecoder({video!r}, layout="HWC")
f = d.get_frames_at([0, 1])
assert f.shape == (2, 120, 160, 3) and len(memoryview(f).tobytes()) == f.nbytes
for fn in (f.numpy, f.torch):
    try:
        fn()
    except ImportError:
        pass
    else:
        raise SystemExit("imported a blocked module")
c = reel.clips_at_regular_indices(d, num_clips=2, num_frames_per_clip=2)
assert c.shape == (2, 2, 120, 160, 3)
print("ok")
"""
    r = run_python(code)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


def test_extension_links_no_torch_or_numpy():
    ldd = shutil.which("ldd")
    so = Path(R.__file__)
    data = so.read_bytes()
    for needle in (b"libtorch", b"libc10", b"_ARRAY_API", b"PyArray_"):
        assert needle not in data, needle
    if ldd:
        libs = subprocess.run([ldd, str(so)], capture_output=True, text=True).stdout
        assert "torch" not in libs and "numpy" not in libs and "libavcodec" in libs


def test_build_info_and_the_bundled_cli():
    info = reel.build_info()
    assert info["reel"] == reel.__version__
    assert info["ffmpeg_libraries"] == reel.ffmpeg_versions()
    # FFmpeg's own configure line and licence, as the linked libavcodec reports them
    assert info["ffmpeg_configuration"].strip().startswith("--") and info["ffmpeg_license"]
    for key in ("libjpeg_turbo", "zstd", "libcurl", "tls"):
        assert re.match(r"\w", info[key]), (key, info[key])
    # swresample and the audio decoders reel's audio path uses, as the loaded libavcodec has them
    assert re.fullmatch(r"\d+\.\d+\.\d+", info["libswresample"]), info["libswresample"]
    for codec in ("aac", "mp3", "opus", "vorbis", "flac", "pcm_s16le", "pcm_f32le"):
        assert info["audio_decoders"][codec], (codec, info["audio_decoders"])
    # hardware decoding: Debian's FFmpeg (and the wheel's) has the cuda device type and its nvdec hwaccels
    assert "cuda" in info["hwdevice_types"], info["hwdevice_types"]
    assert set(info["hwaccels"]) == set(info["hwdevice_types"]), info["hwaccels"]
    assert {"h264", "hevc", "vp9"} <= set(info["hwaccels"]["cuda"]), info["hwaccels"]
    # the package's `reel` command: the CLI binary in reel/_bin, run by reel._build:main
    exe = info["cli"]
    assert exe and Path(exe).name == "reel", info
    r = run_python("import sys, reel._build; sys.argv = ['reel', '--version', '--build']; reel._build.main()")
    assert r.returncode == 0 and r.stdout.startswith("reel " + reel.__version__), r.stderr
    assert info["ffmpeg_configuration"] in r.stdout.replace("\\/", "/"), r.stdout
