# tests/python/test_frames_near.py: frames by timestamp with a tolerance
# (issue 29): VideoDecoder.get_frames_near (the nearest pts, exact ties to the
# earlier frame, float32 LeRobot timestamps, the tolerance, raise and flag, bad
# times, a VFR video and a stream-copy concatenation), reel.decode_near (every
# camera in one call, equal to get_frames_at bit for bit, out=), and
# reel.DecoderCache (its bounds, fork, pickling).
from __future__ import annotations

import math
import multiprocessing as mp
import os
import pickle
import subprocess
from fractions import Fraction

import pytest

import reel
from conftest import in_child, read_indices


def _pts_seconds(dec):
    tb = dec.metadata.time_base
    return [Fraction(p) * tb for p in dec._frame_table()[0]]


def _nearest_exact(pts, t):
    """The nearest frame by exact arithmetic, ties to the earlier one."""
    q = Fraction(t)
    best = min(range(len(pts)), key=lambda i: (abs(q - pts[i]), i))
    return best


def test_nearest_frame_around_every_pts(synth):
    for path in (synth(frames=40, gop=8), synth(frames=40, gop=8, vfr=True, bframes=0),
                 synth(frames=30, fps_num=30, start=1.25)):
        d = reel.VideoDecoder(path, layout="HWC")
        pts = _pts_seconds(d)
        times = []
        want = []
        for i, p in enumerate(pts):
            times.append(float(p))
            want.append(i)
            if i:
                times.append(float(p - (p - pts[i - 1]) / 4))
                want.append(i)
            if i + 1 < len(pts):
                times.append(float(p + (pts[i + 1] - p) / 4))
                want.append(i)
        f = d.get_frames_near(times, tolerance_s=1.0)
        assert list(f.indices) == want
        if d.metadata.begin_stream_seconds == 0:
            assert read_indices(f) == want
        assert all(f.within_tolerance)
        assert f.pts_seconds == pytest.approx([float(pts[i]) for i in want], abs=1e-12)
        for t, i, dist in zip(times, want, f.distance_seconds):
            assert dist == pytest.approx(abs(t - float(pts[i])), abs=1e-12)
        # random times against exact arithmetic
        import random

        rng = random.Random(5)
        end = float(pts[-1]) + 0.5
        ts = [rng.uniform(-0.5, end) for _ in range(500)]
        assert list(d.get_frames_near(ts, on_violation="flag").indices) == [_nearest_exact(pts, t) for t in ts]


def test_exact_ties_go_to_the_earlier_frame(synth):
    d = reel.VideoDecoder(synth(frames=20, fps_num=32, gop=5, bframes=0), layout="HWC")
    tb = d.metadata.time_base
    if tb.denominator & (tb.denominator - 1):
        pytest.skip(f"time base {tb} is not a power of two")
    pts = _pts_seconds(d)
    mids = [(pts[i] + pts[i + 1]) / 2 for i in range(len(pts) - 1)]
    assert all(Fraction(float(m)) == m for m in mids)  # each tie is a double exactly
    f = d.get_frames_near([float(m) for m in mids], tolerance_s=1.0)
    assert list(f.indices) == list(range(len(mids)))
    after = [math.nextafter(float(m), math.inf) for m in mids]
    assert list(d.get_frames_near(after, tolerance_s=1.0).indices) == list(range(1, len(pts)))


def test_float32_timestamps_give_the_frame_lerobot_asks_for(synth, np):
    """LeRobot: timestamp = float32(i / fps), frame = round(ts * average_fps);
    reel's nearest frame is that frame wherever LeRobot's is, with the same
    pixels, while the frame played at ts is often the one before."""
    for fps in (30, 15):
        path = synth(frames=300, fps_num=fps, gop=2, bframes=0)
        d = reel.VideoDecoder(path, layout="HWC")
        ts = [float(np.float32(i / fps)) for i in range(300)]
        lerobot = [round(t * d.metadata.average_fps) for t in ts]
        assert lerobot == list(range(300))
        f = d.get_frames_near(ts)
        assert list(f.indices) == lerobot
        assert all(f.within_tolerance) and max(f.distance_seconds) < 1e-4
        assert read_indices(f) == lerobot
        assert f.tobytes() == d.get_frames_at(lerobot).tobytes()
        played = d.get_frames_played_at(ts[1:]).indices
        assert sum(p == i - 1 for i, p in enumerate(played, 1)) > 0  # what this call is for


def test_violation_raises_naming_file_time_and_pts(synth):
    path = synth(frames=30, gop=6)
    d = reel.VideoDecoder(path, layout="HWC")
    pts = [float(p) for p in _pts_seconds(d)]
    bad = pts[7] + 2e-4
    with pytest.raises(reel.FrameTimestampError) as e:
        d.get_frames_near([pts[3], bad, pts[4]])
    assert isinstance(e.value, ValueError) and isinstance(e.value, reel.ReelError)
    assert e.value.status == reel.Status.FRAME_TIMESTAMP
    assert e.value.path == d._dec.name
    msg = str(e.value)
    assert path in msg and f"{bad:.9f} s" in msg and "frame 7" in msg and f"{pts[7]:.9f} s" in msg, msg
    # outside the video: the first or last frame, too far
    for t in (-0.5, pts[-1] + 0.03, 1e9):
        with pytest.raises(reel.FrameTimestampError):
            d.get_frames_near([t])
    # a wider tolerance takes it in
    assert d.get_frames_near([bad], tolerance_s=3e-4).indices == (7,)


def test_flag_returns_the_nearest_frames_marked(synth):
    d = reel.VideoDecoder(synth(frames=30, gop=6), layout="HWC")
    pts = [float(p) for p in _pts_seconds(d)]
    ts = [pts[3] + 5e-5, pts[7] + 2e-4, -0.5, pts[-1] + 0.03]
    f = d.get_frames_near(ts, on_violation="flag")
    assert list(f.indices) == [3, 7, 0, 29]
    assert list(f.within_tolerance) == [True, False, False, False]
    assert read_indices(f) == [3, 7, 0, 29]
    assert f.distance_seconds[2] == pytest.approx(0.5)
    # the metadata survives copy and pickling
    g = pickle.loads(pickle.dumps(f))
    assert g.within_tolerance == f.within_tolerance and g.distance_seconds == f.distance_seconds
    assert f.copy().within_tolerance == f.within_tolerance
    assert d.get_frames_at([1]).within_tolerance is None


def test_bad_times_and_arguments_are_named(synth, np):
    path = synth(frames=30, gop=6)
    d = reel.VideoDecoder(path, layout="HWC")
    for on in ("raise", "flag"):
        for t in (math.nan, math.inf, -math.inf):
            with pytest.raises(reel.InvalidArgumentError) as e:
                d.get_frames_near([0.0, t], on_violation=on)
            assert path in str(e.value) and "not a finite number" in str(e.value) and "time 1 of 2" in str(e.value)
    with pytest.raises(ValueError, match="on_violation"):
        d.get_frames_near([0.0], on_violation="ignore")
    for tol in (-1.0, math.nan):
        with pytest.raises(reel.InvalidArgumentError, match="tolerance_s"):
            d.get_frames_near([0.0], tolerance_s=tol)
    with pytest.raises(TypeError):
        d.get_frames_near(0.0)  # type: ignore[arg-type]
    assert d.get_frames_near([]).shape[0] == 0
    # numpy float32 input, unsorted, repeats: request order
    ts = np.array([20, 3, 3, 0, 29, 12], dtype=np.float32) / np.float32(25)
    f = d.get_frames_near(ts)
    assert list(f.indices) == [20, 3, 3, 0, 29, 12] and read_indices(f) == [20, 3, 3, 0, 29, 12]


def test_stream_copy_concatenation(tmp_path, ffmpeg):
    """Episodes concatenated by stream copy, as LeRobot's files are: the frames
    of a later episode are found at from_timestamp + i / fps."""
    eps = []
    for k, n in enumerate((45, 30, 60)):
        p = tmp_path / f"ep{k}.mp4"
        subprocess.run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", f"testsrc2=size=64x48:rate=30:duration={n / 30}",
                        "-c:v", "libx264", "-g", "2", "-pix_fmt", "yuv420p", "-video_track_timescale", "15360",
                        str(p)], check=True)
        eps.append((p, n))
    lst = tmp_path / "list.txt"
    lst.write_text("".join(f"file '{p}'\n" for p, _ in eps))
    cat = tmp_path / "cat.mp4"
    subprocess.run([ffmpeg, "-v", "error", "-f", "concat", "-safe", "0", "-i", str(lst), "-c", "copy", str(cat)],
                   check=True)
    d = reel.VideoDecoder(cat, layout="HWC")
    assert len(d) == 135
    pts = _pts_seconds(d)
    start = 0
    for k, (p, n) in enumerate(eps):
        e = reel.VideoDecoder(p, layout="HWC")
        from_ts = sum(reel.VideoDecoder(q).metadata.duration_seconds for q, _ in eps[:k])
        ts = [from_ts + float(Fraction(i, 30)) for i in range(n)]
        f = d.get_frames_near(ts, on_violation="flag")
        assert list(f.indices) == [_nearest_exact(pts, t) for t in ts]
        assert list(f.indices) == list(range(start, start + n))  # every frame of the episode, in order
        assert f.tobytes() == e.get_frames_at(range(n)).tobytes()
        shift = max(f.distance_seconds)
        if shift > 1e-4:  # Debian's concat demuxer moves later episodes by 5/15360 s
            with pytest.raises(reel.FrameTimestampError):
                d.get_frames_near(ts)
        else:
            assert all(d.get_frames_near(ts).within_tolerance)
        start += n


# ---------------------------------------------------------------- decode_near


@pytest.fixture(scope="module")
def cameras(synth):
    return {"front": synth(width=96, height=64, frames=90, fps_num=30, gop=2, bframes=0),
            "wrist": synth(width=64, height=48, frames=45, fps_num=15, gop=4),
            "side": synth(width=48, height=32, frames=90, fps_num=30, gop=10, vfr=True, bframes=0)}


def _times(np, fps, idx):
    return [float(np.float32(i / fps)) for i in idx]


def test_decode_near_equals_get_frames_at_per_camera(cameras, np):
    q = {"front": _times(np, 30, [80, 3, 40, 41]), "wrist": _times(np, 15, [0, 44, 7, 7]),
         "side": [0.5, 0.01, 2.9, 1.7]}
    cache = reel.DecoderCache()
    for layout, dtype, size in (("HWC", "uint8", None), ("CHW", "float32", (24, 32)), ("CHW", "uint8", 40)):
        got = reel.decode_near({k: (cameras[k], q[k]) for k in cameras}, tolerance_s=0.02, layout=layout,
                               dtype=dtype, size=size, cache=cache, threads=3)
        assert list(got) == list(cameras)
        for k, path in cameras.items():
            d = reel.VideoDecoder(path, layout=layout, dtype=dtype, size=size)
            near = d.get_frames_near(q[k], tolerance_s=0.02)
            f = got[k]
            assert f.indices == near.indices and f.pts_seconds == near.pts_seconds
            assert f.distance_seconds == near.distance_seconds and f.within_tolerance == near.within_tolerance
            ref = d.get_frames_at(list(near.indices))
            assert f.shape == ref.shape and f.dtype == ref.dtype and f.layout == ref.layout
            assert f.tobytes() == ref.tobytes(), (k, layout, dtype)
        if layout == "HWC":
            assert read_indices(got["front"]) == [80, 3, 40, 41] and read_indices(got["wrist"]) == [0, 44, 7, 7]
    assert cache.num_decoders == 3


def test_decode_near_one_file_twice_and_per_camera_sizes(cameras, np):
    q = {"a": (cameras["front"], _times(np, 30, [5, 60])), "b": (cameras["front"], _times(np, 30, [61, 2, 5])),
         "c": (cameras["wrist"], _times(np, 15, [1]))}
    got = reel.decode_near(q, layout="HWC", size={"a": (32, 48)}, cache=reel.DecoderCache(), threads=2)
    assert got["a"].shape == (2, 32, 48, 3) and got["b"].shape == (3, 64, 96, 3)
    assert read_indices(got["b"]) == [61, 2, 5] and read_indices(got["c"]) == [1]
    d = reel.VideoDecoder(cameras["front"], layout="HWC", size=(32, 48))
    assert got["a"].tobytes() == d.get_frames_at([5, 60]).tobytes()


def test_decode_near_raises_before_decoding_and_names_the_file(cameras, np, tmp_path):
    cache = reel.DecoderCache()
    with pytest.raises(reel.FrameTimestampError) as e:
        reel.decode_near({"front": (cameras["front"], [0.0]), "wrist": (cameras["wrist"], [0.1])}, cache=cache)
    assert cameras["wrist"] in str(e.value) and e.value.path == cameras["wrist"]
    got = reel.decode_near({"wrist": (cameras["wrist"], [0.09, 0.0])}, on_violation="flag", cache=cache,
                           layout="HWC")
    assert got["wrist"].within_tolerance == (False, True) and read_indices(got["wrist"]) == [1, 0]
    missing = str(tmp_path / "no_such_camera.mp4")
    with pytest.raises(reel.NotFoundError) as e2:
        reel.decode_near({"front": (cameras["front"], [0.0]), "gone": (missing, [0.0])}, cache=cache)
    assert missing in str(e2.value)
    with pytest.raises(reel.InvalidArgumentError, match="not a finite number"):
        reel.decode_near({"front": (cameras["front"], [math.nan])}, cache=cache)
    with pytest.raises(ValueError, match="color"):
        reel.decode_near({"front": (cameras["front"], [0.0])}, color="grey", cache=cache)
    with pytest.raises((ValueError, TypeError), match="dtype"):
        reel.decode_near({"front": (cameras["front"], [0.0])}, dtype="int32", cache=cache)
    # gray and uint16 as VideoDecoder gives them
    gray = reel.decode_near({"front": (cameras["front"], [0.0, 0.1])}, color="gray", dtype="uint16", cache=cache)
    want = reel.VideoDecoder(cameras["front"], color="gray", dtype="uint16").get_frames_near([0.0, 0.1])
    assert gray["front"].shape == want.shape and want.shape[1] == 1
    assert np.asarray(gray["front"]).tobytes() == np.asarray(want).tobytes()
    with pytest.raises(TypeError, match="source"):
        reel.decode_near({"front": (b"bytes", [0.0])}, cache=cache)  # type: ignore[dict-item]
    with pytest.raises(TypeError):
        reel.decode_near([("front", cameras["front"], [0.0])], cache=cache)  # type: ignore[arg-type]
    assert reel.decode_near({}, cache=cache) == {}
    none = reel.decode_near({"front": (cameras["front"], []), "wrist": (cameras["wrist"], [0.0])}, cache=cache)
    assert none["front"].shape == (0, 3, 64, 96) and none["wrist"].indices == (0,)


def test_decode_near_out_writes_in_place(cameras, np, torch):
    q = {"front": (cameras["front"], _times(np, 30, [9, 1])), "wrist": (cameras["wrist"], _times(np, 15, [3]))}
    out = {"front": np.zeros((2, 3, 64, 96), np.uint8), "wrist": torch.zeros((1, 3, 48, 64), dtype=torch.uint8)}
    got = reel.decode_near(q, out=out, cache=reel.DecoderCache())
    ref_f = reel.VideoDecoder(cameras["front"]).get_frames_at([9, 1])
    ref_w = reel.VideoDecoder(cameras["wrist"]).get_frames_at([3])
    assert out["front"].tobytes() == ref_f.tobytes() and out["wrist"].numpy().tobytes() == ref_w.tobytes()
    assert got["front"].data_ptr == out["front"].ctypes.data and got["wrist"].data_ptr == out["wrist"].data_ptr()
    assert got["front"].indices == (9, 1)
    # bfloat16 torch tensors and float32 numpy slots of a batch
    batch = torch.zeros((4, 2, 3, 64, 96), dtype=torch.bfloat16)
    reel.decode_near({"front": q["front"]}, out={"front": batch[1]}, dtype="bfloat16", cache=reel.DecoderCache())
    ref = reel.VideoDecoder(cameras["front"], dtype="bfloat16").get_frames_at([9, 1]).torch()
    assert torch.equal(batch[1], ref) and not batch[0].any() and not batch[2].any()
    # wrong shape, dtype, not writable, not contiguous: named
    for bad, err in ((np.zeros((2, 3, 64, 95), np.uint8), ValueError), (np.zeros((2, 3, 64, 96), np.float32), ValueError),
                     (np.zeros((2, 64, 96, 3), np.uint8), ValueError), (bytes(2 * 3 * 64 * 96), TypeError),
                     (np.zeros((2, 3, 64, 192), np.uint8)[..., ::2], TypeError),
                     (torch.zeros((2, 3, 96, 64), dtype=torch.uint8).transpose(2, 3), ValueError)):
        with pytest.raises(err, match="front"):
            reel.decode_near({"front": q["front"]}, out={"front": bad}, cache=reel.DecoderCache())
    with pytest.raises(ValueError, match="unknown cameras"):
        reel.decode_near({"front": q["front"]}, out={"back": out["front"]}, cache=reel.DecoderCache())


# ---------------------------------------------------------------- the cache


def test_cache_bounds_count_and_bytes(synth, np):
    paths = [synth(width=64, height=48, frames=20, gop=4, seed=s) for s in range(5)]
    cache = reel.DecoderCache(max_decoders=2)
    for p in paths:
        reel.decode_near({"c": (p, [0.0])}, cache=cache)
        assert cache.num_decoders <= 2
    assert cache.sources == paths[-2:] and cache.bytes > 0
    # a call that needs more decoders than the bound opens them all, then trims
    got = reel.decode_near({f"c{i}": (p, [0.04]) for i, p in enumerate(paths[:4])}, cache=cache, layout="HWC")
    assert [read_indices(f) for f in got.values()] == [[1]] * 4
    assert cache.num_decoders == 2 and cache.sources == paths[2:4]
    # the byte bound: each decoder's estimate
    one = reel.DecoderCache()
    reel.decode_near({"c": (paths[0], [0.0])}, cache=one)
    per = one.bytes
    assert per > 64 * 48 * 3 // 2
    small = reel.DecoderCache(max_bytes=per * 2 + per // 2)
    for p in paths:
        reel.decode_near({"c": (p, [0.0])}, cache=small)
    assert small.num_decoders == 2 and small.bytes <= small.max_bytes
    small.clear()
    assert small.num_decoders == 0 and small.bytes == 0
    with pytest.raises(ValueError):
        reel.DecoderCache(max_decoders=0)
    with pytest.raises(ValueError, match="unknown option"):
        reel.DecoderCache(size=3)


def test_cache_pickles_its_settings_only(cameras):
    cache = reel.DecoderCache(max_decoders=3, max_bytes=1 << 20, threads=2, index_mode="read")
    reel.decode_near({"front": (cameras["front"], [0.0])}, cache=cache)
    assert cache.num_decoders == 1
    copy = pickle.loads(pickle.dumps(cache))
    assert (copy.max_decoders, copy.max_bytes, copy.num_decoders) == (3, 1 << 20, 0)
    assert copy._options == cache._options
    got = reel.decode_near({"front": (cameras["front"], [0.0])}, cache=copy, layout="HWC")
    assert read_indices(got["front"]) == [0]


def test_cache_after_fork(cameras, np):
    cache = reel.DecoderCache()
    q = {"front": (cameras["front"], _times(np, 30, [7, 50])), "wrist": (cameras["wrist"], _times(np, 15, [2]))}
    reel.decode_near(q, cache=cache, layout="HWC")
    reel.decode_near(q, layout="HWC")  # the process's own cache too
    assert cache.num_decoders == 2

    def child():
        before = cache.num_decoders
        a = reel.decode_near(q, cache=cache, layout="HWC")
        b = reel.decode_near(q, layout="HWC")
        return before, cache.num_decoders, read_indices(a["front"]), read_indices(b["wrist"])

    kind, got = in_child(child)
    assert (kind, got) == ("ok", (0, 2, [7, 50], [2])), got
    assert read_indices(reel.decode_near(q, cache=cache, layout="HWC")["front"]) == [7, 50]  # the parent's still work
    assert cache.num_decoders == 2


def _worker(args):
    cache, path, ts = args
    got = reel.decode_near({"c": (path, ts)}, cache=cache, layout="HWC")
    return read_indices(got["c"]), os.getpid()


def test_cache_in_multiprocessing_fork_and_spawn(cameras, np):
    cache = reel.DecoderCache(max_decoders=4)
    ts = _times(np, 30, [11, 70, 30])
    reel.decode_near({"c": (cameras["front"], ts)}, cache=cache)
    for method in ("fork", "spawn"):
        with mp.get_context(method).Pool(2) as pool:
            got = pool.map(_worker, [(cache, cameras["front"], ts)] * 4)
        assert all(r == [11, 70, 30] for r, _ in got), (method, got)
        assert all(pid != os.getpid() for _, pid in got)
