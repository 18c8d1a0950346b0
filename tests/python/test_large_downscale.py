# tests/python/test_large_downscale.py: the public calls that crashed in
# libswscale on a large after-RGB downscale (issue 25): a VideoDecoder of a
# 1080p video at 28x28 bicubic, reel.vlm.fetch_video of a 4K video resized to
# 28x28, and a Loader with that size policy. Each runs in a forked child (a
# crash fails the test, not the session) and its pixels equal the ffmpeg CLI's.
from __future__ import annotations

import subprocess

import pytest

import reel
import reel.vlm
from conftest import in_child

# seconds-long soaks and subprocess runs: make test runs them, make check does not
pytestmark = pytest.mark.slow

np = pytest.importorskip("numpy")
torch = pytest.importorskip("torch")

# asks 28x28; the pixel budget's minimum (4 x 28 x 28, as qwen-vl-utils)
# makes it 56x56: 68.6x down across a 4K frame, past bicubic's cascade (64x)
SP = {"resized_height": 28, "resized_width": 28}
VLM_SIZE = (56, 56)


@pytest.fixture(scope="module")
def hd(synth):
    return synth(width=1920, height=1080, frames=4, gop=4, bframes=0)


@pytest.fixture(scope="module")
def uhd(synth):
    return synth(width=3840, height=2160, frames=4, gop=4, bframes=0)


def ffmpeg_rgb(ffmpeg, path, flags, indices, w=28, h=28):
    """Frames `indices` through -vf format=rgb24,scale=w:h:flags=F: [n, h, w, 3] uint8."""
    raw = subprocess.run([ffmpeg, "-nostdin", "-v", "error", "-i", str(path), "-vf",
                          f"format=rgb24,scale={w}:{h}:flags={flags}", "-pix_fmt", "rgb24", "-f", "rawvideo", "-"],
                         capture_output=True, check=True).stdout
    return np.frombuffer(raw, np.uint8).reshape(-1, h, w, 3)[list(indices)]


def child(fn):
    """fn() in a forked child: its result, or a failure naming how it ended."""
    kind, got = in_child(fn)
    assert kind == "ok", got
    return got


@pytest.mark.parametrize("which,filt,flags", [("hd", "bicubic", "bicubic"), ("uhd", "bilinear", "bilinear")])
def test_decoder_after_rgb_28x28(request, ffmpeg, which, filt, flags):
    path = request.getfixturevalue(which)

    def run():
        with reel.VideoDecoder(path, size=(28, 28), filter=filt, convert_path="after_rgb", layout="HWC") as d:
            return d.get_frames_at([3, 0]).numpy().copy()

    got = child(run)
    assert got.shape == (2, 28, 28, 3)
    assert np.array_equal(got, ffmpeg_rgb(ffmpeg, path, flags, [3, 0]))


def test_fetch_video_4k_to_28x28(uhd, ffmpeg):
    def run():
        v, meta = reel.vlm.fetch_video({"video": uhd, **SP}, return_video_metadata=True, dtype="uint8")
        return v.numpy().copy(), list(meta["frames_indices"])

    frames, idx = child(run)
    assert frames.shape == (len(idx), 3, *VLM_SIZE) and len(idx) >= 2
    assert np.array_equal(frames.transpose(0, 2, 3, 1), ffmpeg_rgb(ffmpeg, uhd, "bicubic", idx, *VLM_SIZE))


def test_loader_4k_to_28x28_completes_an_epoch(uhd, hd, ffmpeg):
    def run():
        out = []
        with reel.Loader([uhd, hd], sampler="fps", batch_size=1, shuffle=False, epochs=1, dtype="uint8",
                         size_policy=SP) as L:
            for b in L:
                for f, ci in zip(b.frames, b.info):
                    out.append((ci.path, list(ci.frame_indices), f.torch().numpy().copy()))
            return out, L.metrics()["failure_count"]

    samples, failed = child(run)
    assert failed == 0 and sorted(p for p, _, _ in samples) == sorted([uhd, hd])
    for path, idx, frames in samples:
        assert frames.shape == (len(idx), 3, *VLM_SIZE) and len(idx) >= 2
        want = ffmpeg_rgb(ffmpeg, path, "bicubic", idx, *VLM_SIZE)
        assert np.array_equal(frames.transpose(0, 2, 3, 1), want), path
