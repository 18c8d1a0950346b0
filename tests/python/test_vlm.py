# tests/python/test_vlm.py: reel.vlm against qwen-vl-utils 0.0.14 itself
# (decord backend, torchvision's antialiased bicubic): on 30+ element variants
# the frame indices, metadata, sample fps and output size are equal and the
# pixels within 35 dB PSNR; uint8 output, process_vision_info, image lists,
# URLs and the errors qwen raises.
#
# The reference lives in its own folder (scripts/deps.sh --test installs it
# into .deps/vlm-ref; REEL_VLM_REF overrides), appended to sys.path. PyPI's
# torchvision 0.28 is a CUDA build whose _C.so does not load beside CPU torch
# 2.13; its pure-Python transforms (all qwen-vl-utils uses) import when
# torch.library.register_fake tolerates the operators _C would have defined
# (tolerant_torchvision.py).
from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import pytest

from servers import nginx
from tolerant_torchvision import tolerant_register_fake

ROOT = Path(__file__).resolve().parents[2]
torch = pytest.importorskip("torch")

import reel  # noqa: E402
import reel.vlm  # noqa: E402


def _import_reference():
    ref = os.environ.get("REEL_VLM_REF") or str(ROOT / ".deps" / "vlm-ref")
    if os.path.isdir(ref) and ref not in sys.path:
        sys.path.append(ref)  # after site-packages: the system's numpy and torch win
    os.environ["FORCE_QWENVL_VIDEO_READER"] = "decord"  # torchcodec's PyPI wheel is CUDA-only too
    try:
        with tolerant_register_fake():
            from qwen_vl_utils import vision_process
    except ImportError as exc:
        pytest.skip(f"qwen-vl-utils reference not installed ({exc}); run scripts/deps.sh --test")
    return vision_process


@pytest.fixture(scope="module")
def qwen():
    return _import_reference()


@pytest.fixture(scope="module")
def videos(synth, shared_videos):
    s = shared_videos
    return {
        "base": synth(width=320, height=240, frames=300, fps_num=30, gop=30),
        "odd": synth(width=161, height=97, frames=50, gop=12, yuv444=True),
        "portrait": synth(width=180, height=320, frames=90, fps_num=30, gop=30),
        "vfr": synth(width=192, height=144, frames=120, gop=24, vfr=True),
        "ntsc": synth(width=256, height=144, frames=200, fps_num=30000, fps_den=1001, gop=250, bframes=0),
        "karma": str(s / "karma.mp4"),
        "fire2_rot180_vfr": str(s / "fire2.mp4"),
        "rot90": str(s / "nasa_13013_rotated.mp4"),
        "rot-90": str(s / "video_90.mov"),
        "hevc": str(s / "foreman_hevc.mp4"),
        "1080p60": str(s / "video-1080p-60fps-2s.mp4"),
        "nasa": str(s / "nasa_13013.mp4"),
        "pancake_mkv": str(s / "flipping_a_pancake.mkv"),
        "nonzero_start": str(s / "test_non_zero_start.mp4"),
    }


VARIANTS = [
    ("base", {}),
    ("base", {"fps": 1.0}),
    ("base", {"fps": 0.5}),
    ("base", {"fps": 7.3}),
    ("base", {"fps": 30.0}),
    ("base", {"fps": 0.1, "min_frames": 5}),
    ("base", {"fps": 4.0, "max_frames": 11}),
    ("base", {"fps": 2.0, "min_frames": 16, "max_frames": 16}),
    ("base", {"nframes": 2}),
    ("base", {"nframes": 7}),
    ("base", {"nframes": 9}),
    ("base", {"nframes": 64}),
    ("base", {"nframes": 300}),
    ("base", {"video_start": 1.5, "video_end": 7.2}),
    ("base", {"video_start": 2.0}),
    ("base", {"video_end": 3.33, "fps": 3.0}),
    ("base", {"video_start": 0.51, "video_end": 9.99, "nframes": 12}),
    ("base", {"video_start": 8.0, "video_end": 50.0}),
    ("base", {"max_pixels": 150000}),
    ("base", {"min_pixels": 300000}),
    ("base", {"total_pixels": 1000000}),
    ("base", {"total_pixels": 20000, "min_pixels": 50000}),
    ("base", {"resized_height": 100, "resized_width": 130}),
    ("base", {"resized_height": 224, "resized_width": 224, "nframes": 4}),
    ("base", {"max_pixels": 30000, "min_pixels": 4 * 784}),
    ("odd", {}),
    ("odd", {"nframes": 10, "min_pixels": 20000}),
    ("portrait", {}),
    ("portrait", {"fps": 3.0, "max_pixels": 110000}),
    ("vfr", {}),
    ("vfr", {"fps": 5.0, "video_start": 0.7, "video_end": 3.9}),
    ("ntsc", {"fps": 2.0}),
    ("ntsc", {"video_start": 1.1, "video_end": 5.5}),
    ("karma", {}),
    ("karma", {"fps": 1.0, "video_start": 3.0, "video_end": 9.0, "max_pixels": 200000}),
    ("fire2_rot180_vfr", {}),
    ("rot90", {}),
    ("rot90", {"nframes": 6}),
    ("rot-90", {}),
    ("hevc", {"fps": 4.0}),
    ("1080p60", {"fps": 4.0, "total_pixels": 4000000}),
    ("nasa", {"video_start": 1.0, "video_end": 3.3}),
    ("pancake_mkv", {"fps": 1.0}),
    ("nonzero_start", {"nframes": 4}),
]


def psnr(a, b) -> float:
    mse = ((a.double() - b.double()) ** 2).mean().item()
    return math.inf if mse == 0 else 10 * math.log10(255.0 ** 2 / mse)


@pytest.mark.slow
@pytest.mark.parametrize("name,ele", VARIANTS, ids=[f"{n}-{i}" for i, (n, _) in enumerate(VARIANTS)])
def test_fetch_video_equals_qwen(qwen, videos, name, ele):
    e = dict(ele, video=videos[name])
    (q, qmeta), qfps = qwen.fetch_video(dict(e), return_video_sample_fps=True, return_video_metadata=True)
    (r, rmeta), rfps = reel.vlm.fetch_video(dict(e), return_video_sample_fps=True, return_video_metadata=True)
    assert qmeta["video_backend"] == "decord" and rmeta["video_backend"] == "reel"
    assert list(rmeta["frames_indices"]) == list(qmeta["frames_indices"])
    assert rmeta["total_num_frames"] == qmeta["total_num_frames"]
    assert rmeta["fps"] == qmeta["fps"]
    assert rfps == qfps
    assert set(rmeta) == set(qmeta)
    assert r.dtype == q.dtype == torch.float32
    assert tuple(r.shape) == tuple(q.shape)
    assert float(r.min()) >= 0 and float(r.max()) <= 255
    assert psnr(r, q) >= 35.0, f"{name} {ele}: {psnr(r, q):.1f} dB"
    # the clips_at_* face of the same samplers gives qwen's indices too
    assert whole_video_clip_indices(videos[name], ele) == list(qmeta["frames_indices"])


def whole_video_clip_indices(path, ele):
    """reel.clips_at_fps / clips_at_count's indices for a qwen element."""
    kw = {k: ele[k] for k in ("video_start", "video_end") if k in ele}
    with reel.VideoDecoder(path, size=(16, 16)) as dec:
        if "nframes" in ele:
            c = reel.clips_at_count(dec, nframes=ele["nframes"], **kw)
        else:
            kw.update({k: ele[k] for k in ("fps", "min_frames", "max_frames") if k in ele})
            c = reel.clips_at_fps(dec, **kw)
    assert c.shape[0] == 1
    return list(c.indices[0])


@pytest.mark.parametrize("threads", [1, 2])
def test_uint8_is_the_float_output_rounded(videos, threads):
    # qwen-vl-utils resizes uint8 and then widens (.float()); reel's float32
    # is likewise its uint8 resize widened, exactly, GOP-parallel or not
    e = {"video": videos["karma"], "fps": 1.0}
    f = reel.vlm.fetch_video(dict(e), threads=threads)
    u = reel.vlm.fetch_video(dict(e), dtype="uint8", threads=threads)
    assert u.dtype == torch.uint8 and u.shape == f.shape
    assert torch.equal(u.float(), f)  # the same RGB samples: 4x smaller, nothing lost


def test_defaults_and_file_urls(qwen, videos):
    r = reel.vlm.fetch_video({"video": "file://" + videos["base"]})
    q = qwen.fetch_video({"video": videos["base"]})
    assert r.shape == q.shape and psnr(r, q) >= 35.0
    # the return shapes of every flag combination
    v, fps = reel.vlm.fetch_video({"video": videos["base"]}, return_video_sample_fps=True)
    assert isinstance(fps, float) and v.shape == r.shape
    v, meta = reel.vlm.fetch_video({"video": videos["base"]}, return_video_metadata=True)
    assert meta["frames_indices"] == qwen.fetch_video({"video": videos["base"]}, return_video_metadata=True)[1][
        "frames_indices"]


def test_model_seq_len_sets_the_total_pixels(qwen, videos, monkeypatch):
    default = reel.vlm.fetch_video({"video": videos["karma"], "fps": 1.0})
    monkeypatch.setenv("MODEL_SEQ_LEN", "1000")
    r = reel.vlm.fetch_video({"video": videos["karma"], "fps": 1.0})
    # qwen-vl-utils read MODEL_SEQ_LEN at import; give it the same total
    q = qwen.fetch_video({"video": videos["karma"], "fps": 1.0, "total_pixels": 1000 * 28 * 28 * 0.9})
    assert r.shape == q.shape
    assert r.shape[-1] * r.shape[-2] < default.shape[-1] * default.shape[-2]


@pytest.mark.parametrize("ele", [
    {"video_start": 5.0, "video_end": 5.0},
    {"video_start": 20.0},
    {"nframes": 302},
    {"nframes": 1},
    {"fps": 2.0, "nframes": 4},
    {"max_pixels": 1000},
])
def test_errors_are_qwens(qwen, videos, ele):
    """Where qwen-vl-utils refuses an element, reel.vlm raises ValueError
    (qwen: ValueError, or AssertionError for its asserts)."""
    e = dict(ele, video=videos["base"])
    with pytest.raises((ValueError, AssertionError)):
        # the decord reader's own error (fetch_video would retry with
        # torchvision.io.read_video, which this torchvision lacks)
        _, _, _ = qwen._read_video_decord(dict(e))
        qwen.smart_resize(240, 320, 28, 128 * 784, e.get("max_pixels", 768 * 784))
    with pytest.raises(ValueError):
        reel.vlm.fetch_video(dict(e))


@pytest.mark.parametrize("ele, name", [
    ({"resized_height": -28, "resized_width": 56}, "resized_height"),  # was ignored: the budget's size
    ({"resized_height": 28, "resized_width": -56}, "resized_width"),
    ({"resized_height": 2**31, "resized_width": 56}, "resized_height"),  # was OverflowError, no name
    ({"nframes": 2**31}, "nframes"),
    ({"nframes": -4}, "nframes"),
    ({"max_frames": 2**31}, "max_frames"),
    ({"min_frames": 2**40}, "min_frames"),
    ({"min_pixels": -5}, "min_pixels"),
    ({"max_pixels": float("nan")}, "max_pixels"),
    ({"total_pixels": -1}, "total_pixels"),
])
def test_bad_parameters_are_refused_by_name(videos, ele, name):
    """Out-of-range sizes, frame counts and pixel counts are a ValueError
    naming the parameter, never ignored or an OverflowError."""
    with pytest.raises(ValueError, match=name) as exc:
        reel.vlm.fetch_video(dict(ele, video=videos["base"]))
    assert not isinstance(exc.value, OverflowError)


def _write_images(tmp_path, sizes):
    from PIL import Image
    import numpy as np

    paths = []
    rng = np.random.default_rng(0)
    for i, (w, h) in enumerate(sizes):
        yy, xx = np.mgrid[0:h, 0:w]
        img = np.stack([(xx * 255 // w), (yy * 255 // h), (xx + yy + 40 * i) % 256], -1).astype("uint8")
        img = (img.astype(int) + rng.integers(-3, 4, img.shape)).clip(0, 255).astype("uint8")
        p = tmp_path / f"img{i}.png"
        Image.fromarray(img).save(p)
        paths.append(str(p))
    return paths


def test_image_list_as_video_and_images(qwen, tmp_path):
    paths = _write_images(tmp_path, [(300, 200)] * 5)
    e = {"video": paths, "min_pixels": 10000}
    (q, qm), qf = qwen.fetch_video(dict(e), return_video_sample_fps=True, return_video_metadata=True)
    (r, rm), rf = reel.vlm.fetch_video(dict(e), return_video_sample_fps=True, return_video_metadata=True)
    assert r.shape == q.shape and r.dtype == q.dtype and qf == rf and rm == qm
    assert psnr(r, q) >= 30.0  # qwen resizes twice (PIL, then torchvision); reel once
    # images: fetch_image is qwen's (the same PIL resize to the same smart_resize size)
    for ele in ({"image": paths[0]}, {"image": "file://" + paths[1], "max_pixels": 20000},
                {"image": paths[2], "resized_height": 90, "resized_width": 150}):
        qi, ri = qwen.fetch_image(dict(ele)), reel.vlm.fetch_image(dict(ele))
        assert qi.size == ri.size and list(qi.getdata()) == list(ri.getdata())


def test_process_vision_info_is_a_drop_in(qwen, videos, tmp_path):
    img = _write_images(tmp_path, [(400, 300)])[0]
    conv = [{"role": "user", "content": [
        {"type": "video", "video": videos["base"], "fps": 1.0, "max_pixels": 120000},
        {"type": "image", "image": img},
        {"type": "video", "video": videos["odd"], "nframes": 6},
        {"type": "text", "text": "What happens?"}]}]
    for flags in ({"return_video_kwargs": True}, {"return_video_kwargs": True, "return_video_metadata": True}):
        q = qwen.process_vision_info(conv, **flags)
        r = reel.vlm.process_vision_info(conv, **flags)
        assert len(q) == len(r)
        assert [i.size for i in q[0]] == [i.size for i in r[0]]
        qv = [v[0] if isinstance(v, tuple) else v for v in q[1]]
        rv = [v[0] if isinstance(v, tuple) else v for v in r[1]]
        assert [tuple(v.shape) for v in qv] == [tuple(v.shape) for v in rv]
        assert all(psnr(a, b) >= 35.0 for a, b in zip(qv, rv))
        if flags.get("return_video_kwargs"):
            assert q[2] == r[2]
        if flags.get("return_video_metadata"):
            for a, b in zip(q[1], r[1]):
                assert list(a[1]["frames_indices"]) == list(b[1]["frames_indices"])


def test_http_url_fetches_the_sampled_frames(shared_videos, videos):
    local = reel.vlm.fetch_video({"video": videos["karma"], "fps": 1.0})
    with nginx(shared_videos) as base:
        r, meta = reel.vlm.fetch_video({"video": f"{base}/karma.mp4", "fps": 1.0}, return_video_metadata=True)
    assert meta["video_backend"] == "reel"
    assert torch.equal(r, local)


def test_gop_contexts_stay_open_and_their_requests_count(shared_videos):
    """GOP-parallel decoding of a URL: the other context's requests are in
    the decoder's remote_stats, and it is opened once, not per call (karma.mp4
    is under whole_object_max: each context fetches it whole when it opens)."""
    with nginx(shared_videos) as base:
        url = f"{base}/karma.mp4"
        with reel.VideoDecoder(url, size=(32, 32)) as ser:
            n = len(ser)
            idx = [0, n // 3, 2 * n // 3, n - 1]  # four keyframe runs
            want = ser.get_frames_at(idx).numpy().tobytes()
            one = ser.remote_stats["requests"]
        with reel.VideoDecoder(url, size=(32, 32), gop_contexts=2) as par:
            assert par.get_frames_at(idx).numpy().tobytes() == want
            first = par.remote_stats
            assert first["requests"] == 2 * one and first["connections"] >= 1
            assert par.get_frames_at(idx).numpy().tobytes() == want
            assert par.remote_stats["requests"] == first["requests"]


def test_reference_not_needed_at_run_time():
    code = ("import sys; sys.modules['qwen_vl_utils'] = None; sys.modules['torchvision'] = None; "
            "import reel.vlm; print(reel.vlm.smart_resize(720, 1280, 28, 128 * 784, 768 * 784))")
    from conftest import run_python

    out = run_python(code)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "(560, 1008)"


def test_gop_parallel_threads_give_the_same_tensor(synth, videos):
    """threads=2 (two decoder contexts, GOP-parallel) and threads=0 (FFmpeg's
    frame threads) give threads=1's tensor; VideoDecoder(gop_contexts=3) gives
    the serial frames, repeats and negatives included."""
    e = {"video": videos["base"], "fps": 3.0}
    one = reel.vlm.fetch_video(dict(e), threads=1)
    assert torch.equal(reel.vlm.fetch_video(dict(e), threads=2), one)
    assert torch.equal(reel.vlm.fetch_video(dict(e), threads=0), one)
    path = synth(frames=150, gop=12)
    idx = [140, 5, 5, 61, -1, 0, 33, 100, 99, 61]
    par = reel.VideoDecoder(path, gop_contexts=3, layout="HWC").get_frames_at(idx)
    ser = reel.VideoDecoder(path, layout="HWC").get_frames_at(idx)
    assert par.numpy().tobytes() == ser.numpy().tobytes()
    assert reel._testing.read_indices(par) == [i % 150 for i in idx]
