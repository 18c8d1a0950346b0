# tests/python/test_samplers.py: the clip samplers (random/regular, by index
# and by time): shapes, per-clip metadata, ranges, end-of-video policies,
# seeding, torchcodec's linspace arithmetic, and one decoding call per video.
from __future__ import annotations

import random

import pytest

import reel
from conftest import read_indices


@pytest.fixture
def dec(video):
    return reel.VideoDecoder(video, layout="HWC")


def clip_indices(frames):
    t = frames.shape[1]
    flat = read_indices(frames)
    return [flat[i:i + t] for i in range(0, len(flat), t)]


def test_random_indices(dec):
    c = reel.clips_at_random_indices(dec, num_clips=5, num_frames_per_clip=4, num_indices_between_frames=3, seed=7)
    assert c.shape == (5, 4, 120, 160, 3) and c.layout == "NTHWC"
    assert len(c.indices) == 5 and all(len(x) == 4 for x in c.indices)
    for clip in c.indices:
        assert [b - a for a, b in zip(clip, clip[1:])] == [3, 3, 3]
        assert 0 <= clip[0] <= 60 - 10
    assert clip_indices(c) == [list(x) for x in c.indices]
    assert c.pts_seconds[0][1] == pytest.approx(c.indices[0][1] * 0.04)
    assert len(c.duration_seconds[4]) == 4
    assert dec.stats.frames_requested == 20  # one call for all clips
    again = reel.clips_at_random_indices(dec, num_clips=5, num_frames_per_clip=4, num_indices_between_frames=3, seed=7)
    assert again.indices == c.indices
    # a random.Random gives each call one 64-bit seed: the same generator
    # state gives the same clips, and successive calls differ
    rng = random.Random(3)
    a = reel.clips_at_random_indices(dec, num_clips=3, seed=rng)
    b = reel.clips_at_random_indices(dec, num_clips=3, seed=rng)
    rng2 = random.Random(3)
    assert reel.clips_at_random_indices(dec, num_clips=3, seed=rng2).indices == a.indices
    assert reel.clips_at_random_indices(dec, num_clips=3, seed=rng2).indices == b.indices
    assert a.shape == (3, 1, 120, 160, 3) and a.indices != b.indices
    # the draws are the C sampler's: seed s gives what seed=random.Random(x)
    # gives when x's first 64 bits are s
    s64 = random.Random(5).getrandbits(64)
    assert reel.clips_at_random_indices(dec, num_clips=4, seed=s64).indices == \
        reel.clips_at_random_indices(dec, num_clips=4, seed=random.Random(5)).indices
    random.seed(11)
    g1 = reel.clips_at_random_indices(dec, num_clips=4).indices
    random.seed(11)
    assert reel.clips_at_random_indices(dec, num_clips=4).indices == g1


def test_random_indices_range(dec):
    c = reel.clips_at_random_indices(dec, num_clips=30, num_frames_per_clip=2, sampling_range_start=40,
                                     sampling_range_end=45, seed=1)
    assert {x[0] for x in c.indices} <= set(range(40, 45))
    c = reel.clips_at_random_indices(dec, num_clips=30, sampling_range_start=-10, seed=1)
    assert {x[0] for x in c.indices} <= set(range(50, 60))
    c = reel.clips_at_random_indices(dec, num_clips=30, sampling_range_start=-10, sampling_range_end=-5, seed=1)
    assert {x[0] for x in c.indices} <= set(range(50, 55))


def test_regular_indices(dec, torch):
    c = reel.clips_at_regular_indices(dec, num_clips=4, num_frames_per_clip=3, num_indices_between_frames=2)
    starts = [x[0] for x in c.indices]
    last_start = 60 - (2 * 2 + 1)  # the largest start whose clip fits
    want = torch.linspace(0, last_start, steps=4, dtype=torch.int).tolist()
    assert starts == want
    assert clip_indices(c) == [list(x) for x in c.indices]
    for n, lo, hi in ((7, 3, 40), (1, 0, 10), (13, 5, 17), (60, 0, 59)):
        c = reel.clips_at_regular_indices(dec, num_clips=n, sampling_range_start=lo, sampling_range_end=hi + 1)
        assert [x[0] for x in c.indices] == torch.linspace(lo, hi, steps=n, dtype=torch.int).tolist()


def test_index_policies(dec):
    kw = dict(num_clips=1, num_frames_per_clip=5, num_indices_between_frames=4, sampling_range_start=50,
              sampling_range_end=51)
    assert reel.clips_at_regular_indices(dec, **kw).indices == ((50, 54, 58, 58, 58),)
    assert reel.clips_at_regular_indices(dec, policy="wrap", **kw).indices == ((50, 54, 58, 50, 54),)
    with pytest.raises(ValueError):
        reel.clips_at_regular_indices(dec, policy="error", **kw)
    with pytest.raises(ValueError):
        reel.clips_at_regular_indices(dec, policy="other", **kw)


def test_index_validation(dec):
    for bad in (dict(num_clips=0), dict(num_frames_per_clip=0), dict(num_indices_between_frames=0),
                dict(sampling_range_start=60), dict(sampling_range_start=10, sampling_range_end=10),
                dict(sampling_range_start=0, sampling_range_end=0)):
        with pytest.raises(ValueError):
            reel.clips_at_random_indices(dec, **bad)
    # a clip longer than the video starts at 0 and follows the policy
    c = reel.clips_at_random_indices(dec, num_frames_per_clip=62, seed=0)
    assert c.indices == (tuple(range(60)) + (59, 59),)
    # so does one whose automatic range is empty: it starts at the range start
    # (the C sampler's rule, which the loader follows too)
    c = reel.clips_at_random_indices(dec, sampling_range_start=5, num_frames_per_clip=58, seed=0)
    assert c.indices == (tuple(range(5, 60)) + (59, 59, 59),)


def test_random_timestamps(dec):
    c = reel.clips_at_random_timestamps(dec, num_clips=6, num_frames_per_clip=3, seed=2)
    assert c.shape == (6, 3, 120, 160, 3)
    for clip, pts in zip(c.indices, c.pts_seconds):
        assert [b - a for a, b in zip(clip, clip[1:])] == [1, 1]  # 1/fps apart by default
        assert clip[-1] <= 59
        assert pts[0] == pytest.approx(clip[0] * 0.04)
    assert clip_indices(c) == [list(x) for x in c.indices]
    c = reel.clips_at_random_timestamps(dec, num_clips=20, seconds_between_frames=0.2, num_frames_per_clip=2,
                                        sampling_range_start=1.0, sampling_range_end=1.2, seed=5)
    for clip in c.indices:
        assert 25 <= clip[0] <= 29 and clip[1] - clip[0] == 5
    assert reel.clips_at_random_timestamps(dec, num_clips=3, seed=9).indices == \
        reel.clips_at_random_timestamps(dec, num_clips=3, seed=9).indices


def test_regular_timestamps(dec):
    c = reel.clips_at_regular_timestamps(dec, seconds_between_clip_starts=0.5, num_frames_per_clip=2)
    # starts 0, .5, 1.0, 1.5, 2.0 (the last start whose clip fits is 2.36)
    assert [x[0] for x in c.indices] == [0, 12, 25, 37, 50]
    assert c.shape == (5, 2, 120, 160, 3)
    c = reel.clips_at_regular_timestamps(dec, num_clips=4, num_frames_per_clip=1, sampling_range_start=0.4,
                                         sampling_range_end=2.0)
    assert [x[0] for x in c.indices] == [10, 20, 30, 40]
    with pytest.raises(ValueError):
        reel.clips_at_regular_timestamps(dec)
    with pytest.raises(ValueError):
        reel.clips_at_regular_timestamps(dec, num_clips=2, seconds_between_clip_starts=1.0)


def test_time_policies(dec):
    kw = dict(num_clips=1, num_frames_per_clip=4, seconds_between_frames=0.4, sampling_range_start=1.8,
              sampling_range_end=1.81)
    assert reel.clips_at_regular_timestamps(dec, **kw).indices == ((45, 55, 55, 55),)
    assert reel.clips_at_regular_timestamps(dec, policy="wrap", **kw).indices == ((45, 55, 45, 55),)
    with pytest.raises(ValueError):
        reel.clips_at_random_timestamps(dec, policy="error", **kw)


def test_time_validation(dec):
    for bad in (dict(num_clips=0), dict(seconds_between_frames=0), dict(sampling_range_start=-1.0),
                dict(sampling_range_start=1.0, sampling_range_end=1.0), dict(num_frames_per_clip=0)):
        with pytest.raises(ValueError):
            reel.clips_at_random_timestamps(dec, **bad)


def test_samplers_chw_and_float(video, torch):
    d = reel.VideoDecoder(video, size=(56, 56), dtype="float16")
    c = reel.clips_at_regular_indices(d, num_clips=2, num_frames_per_clip=8)
    assert c.layout == "NTCHW" and c.shape == (2, 8, 3, 56, 56)
    t = c.torch()
    assert t.dtype == torch.float16 and t.shape == (2, 8, 3, 56, 56) and t.data_ptr() == c.data_ptr


@pytest.mark.parametrize("kind", ["indices", "timestamps"])
def test_samplers_agree_with_the_loader(video, kind):
    """One C sampler: clips_at_random_* with seed S give the clips the Loader
    with seed S gives its first sample in epoch 0, for the same parameters."""
    dec = reel.VideoDecoder(video, layout="HWC")
    if kind == "indices":
        c = reel.clips_at_random_indices(dec, num_clips=3, num_frames_per_clip=4, num_indices_between_frames=2,
                                         seed=1234)
        sampler = dict(sampler="random", frame_stride=2)
    else:
        c = reel.clips_at_random_timestamps(dec, num_clips=3, num_frames_per_clip=4, seed=1234)
        sampler = dict(sampler="random_time")
    loader = reel.Loader([(video, 0)], batch_size=1, clips_per_video=3, frames_per_clip=4, seed=1234,
                         size=32, **sampler)
    batch = next(iter(loader))
    got = tuple(clip.frame_indices for clip in batch.info)
    assert got == tuple(c.indices)


# (sampling_range_start, sampling_range_end, frames_per_clip, stride): the
# edges of the index range, where Python once validated on its own and
# disagreed with C (an empty automatic range raised in Python, started at the
# range start in C)
INDEX_EDGES = [
    (5, None, 58, 1),      # automatic end before the start: start there, policy fills
    (50, None, 4, 4),      # automatic end exactly at the start
    (59, None, 1, 1),      # the last frame
    (-1, None, 3, 1),      # negative start: from the end
    (-10, -5, 2, 1),       # negative end
    (40, 1000, 2, 1),      # end past the video: clamped
    (10, 10, 1, 1),        # empty explicit range: an error
    (20, 10, 1, 1),        # reversed range: an error
    (60, None, 1, 1),      # start past the last frame: an error
    (-61, None, 1, 1),     # negative start before the first frame: an error
    (0, -60, 1, 1),        # end at frame 0 from the end: an error
]


@pytest.mark.parametrize("start,end,frames,stride", INDEX_EDGES)
def test_index_edges_agree_with_the_loader(video, start, end, frames, stride):
    """clips_at_random_indices and the Loader run one C sampler with one
    validation: the same clips, or both refuse the range."""
    dec = reel.VideoDecoder(video, layout="HWC")
    kw = dict(num_clips=2, num_frames_per_clip=frames, num_indices_between_frames=stride,
              sampling_range_start=start, sampling_range_end=end, seed=99)
    loader = reel.Loader([(video, 0)], batch_size=1, clips_per_video=2, frames_per_clip=frames, seed=99, size=32,
                         sampler="random", frame_stride=stride, sampling_range_start=start,
                         sampling_range_end=end, on_error="raise")
    assert_agree(lambda: reel.clips_at_random_indices(dec, **kw).indices, loader)


def assert_agree(python_clips, loader):
    """The Python sampler's clips are the loader's first sample's, or both
    refuse, for the same reason (the C sampler's one check)."""
    try:
        want = python_clips()
    except ValueError as e:
        with pytest.raises(reel.OutOfRangeError) as got:
            next(iter(loader))
        assert str(e).split(": ", 1)[1] in str(got.value)
        return
    got = tuple(clip.frame_indices for clip in next(iter(loader)).info)
    assert got == tuple(want)


# The same for times (the synthetic video starts at 0 s, so torchcodec's
# absolute seconds and the loader's relative ones coincide).
TIME_EDGES = [
    (2.3, None, 4),   # automatic end before the start: every clip starts there
    (0.0, 100.0, 2),  # end past the video: clamped
    (2.38, None, 1),  # inside the last frame
    (1.0, 1.0, 1),    # empty explicit range: an error
    (1.5, 1.2, 1),    # reversed range: an error
    (2.4, None, 1),   # start at the video's end: an error
]


@pytest.mark.parametrize("start,end,frames", TIME_EDGES)
def test_time_edges_agree_with_the_loader(video, start, end, frames):
    dec = reel.VideoDecoder(video, layout="HWC")
    loader = reel.Loader([(video, 0)], batch_size=1, clips_per_video=2, frames_per_clip=frames, seed=5, size=32,
                         sampler="random_time", sampling_range_start=start, sampling_range_end=end,
                         on_error="raise")
    assert_agree(lambda: reel.clips_at_random_timestamps(dec, num_clips=2, num_frames_per_clip=frames, seed=5,
                                                         sampling_range_start=start,
                                                         sampling_range_end=end).indices, loader)


def test_fps_and_count_samplers(synth):
    """The whole-video samplers: qwen-vl-utils' count and linspace, checked by
    the indices embedded in the decoded frames; one clip [1, n, ...]."""
    path = synth(frames=300, fps_num=30, gop=30)  # 10 s at 30 fps
    d = reel.VideoDecoder(path, layout="HWC")
    c = reel.clips_at_fps(d)  # fps 2: 300 / 30 * 2 = 20 frames
    assert c.shape[:2] == (1, 20) and c.layout == "NTHWC"
    want = [int(round(i * 299 / 19)) for i in range(20)]  # no .5 ties in this linspace
    assert read_indices(c) == want and list(c.indices[0]) == want
    assert clip_indices(reel.clips_at_fps(d, fps=0.1)) == [[0, 100, 199, 299]]  # min_frames 4
    assert reel.clips_at_fps(d, fps=0.1, min_frames=5).shape[1] == 6  # 5 rounded up to the factor
    assert reel.clips_at_fps(d, fps=30.0, max_frames=11).shape[1] == 10
    assert reel.clips_at_fps(d, fps=4.0, frame_factor=3).shape[1] == 39
    # video_start/video_end: frames 60..180, 121 frames: 121 / 30 * 1.5 -> 6
    c = reel.clips_at_fps(d, fps=1.5, video_start=2.0, video_end=6.0)
    assert read_indices(c) == [60, 84, 108, 132, 156, 180]
    # count: nframes / 2 rounded half to even (7 -> 8, 9 -> 8, 11 -> 12, 5 -> 4)
    assert clip_indices(reel.clips_at_count(d, nframes=5)) == [[0, 100, 199, 299]]
    assert [reel.clips_at_count(d, nframes=k).shape[1] for k in (7, 9, 11)] == [8, 8, 12]
    assert clip_indices(reel.clips_at_count(d, nframes=2, video_start=1.0)) == [[30, 299]]
    # linspace rounds half to even in float32, as torch: 0..5 in 3 (factor 1) -> 0, 2, 5
    assert clip_indices(reel.clips_at_count(d, nframes=3, frame_factor=1, video_end=5 / 30)) == [[0, 2, 5]]
    bad = [{"nframes": 1}, {"nframes": 303}, {"nframes": 2.5}, {"nframes": 4, "video_start": 9.0, "video_end": 3.0}]
    for kw in bad:
        with pytest.raises(ValueError):
            reel.clips_at_count(d, **kw)
    with pytest.raises(ValueError):
        reel.clips_at_fps(d, video_end=0)
