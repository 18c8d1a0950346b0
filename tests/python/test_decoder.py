# tests/python/test_decoder.py: reel.VideoDecoder: sources, metadata, frame
# table, indexing and slicing, batched calls by index and by time, transform
# options, the sidecar index, threads and the GIL.
from __future__ import annotations

import io
import pathlib
import pickle
import threading
import time

import pytest

import reel
from conftest import read_indices


def hwc(path, **kw):
    return reel.VideoDecoder(path, layout="HWC", **kw)


# ------------------------------------------------------------------ metadata
def test_metadata(video):
    d = reel.VideoDecoder(video)
    m = d.metadata
    assert (m.codec, m.width, m.height, m.num_frames) == ("h264", 160, 120, 60)
    assert len(d) == 60
    assert m.average_fps == pytest.approx(25.0)
    assert m.duration_seconds == pytest.approx(2.4)
    assert m.begin_stream_seconds == 0.0 and m.end_stream_seconds == pytest.approx(2.4)
    assert m.num_keyframes == 4 and d.keyframes == [0, 16, 32, 48]
    assert m.path == video and m.index_source in ("container", "scan")
    assert m.pix_fmt == "yuv420p" and m.bit_depth == 8
    assert m.rotation is None  # no display matrix, as torchcodec
    assert (m.source_width, m.source_height) == (m.width, m.height)
    assert d.frame_shape == (3, 120, 160) and d.dtype == "uint8"
    assert "VideoDecoder" in repr(d) and "60 frames" in repr(d)


def test_frame_table(video):
    d = reel.VideoDecoder(video)
    table = d.frame_table()
    assert len(table) == 60
    assert [r.frame_index for r in table] == list(range(60))
    assert [r.key for r in table].count(True) == 4
    assert all(b.pts > a.pts for a, b in zip(table, table[1:]))
    assert table[10].pts_seconds == pytest.approx(0.4)
    assert table[10].duration_seconds == pytest.approx(0.04)
    assert sorted(r.decode_order for r in table) == list(range(60))
    assert d.index_at_time(0.41) == 10
    with pytest.raises(reel.OutOfRangeError):
        d.index_at_time(2.4)


# ------------------------------------------------------------------ indexing
def test_single_frames(video):
    d = hwc(video)
    f = d[7]
    assert isinstance(f, reel.Frames)
    assert f.shape == (120, 160, 3) and f.layout == "HWC"
    assert f.indices == 7 and f.pts_seconds == pytest.approx(0.28) and f.duration_seconds == pytest.approx(0.04)
    assert read_indices(f) == [7]
    assert d[-1].indices == 59 and read_indices(d[-1]) == [59]
    assert read_indices(d.get_frame_at(33)) == [33]
    assert read_indices(d.get_frame_played_at(1.0)) == [25]
    with pytest.raises(IndexError):
        d[60]
    with pytest.raises(IndexError):
        d[-61]
    with pytest.raises(TypeError):
        d["1"]


@pytest.mark.parametrize("key", [slice(None), slice(5, 20), slice(10, 50, 7), slice(-5, None),
                                 slice(50, 10, -3), slice(None, None, -1), slice(70, 80), slice(3, 3)])
def test_slices(video, key):
    d = hwc(video)
    f = d[key]
    want = list(range(60))[key]
    assert f.shape == (len(want), 120, 160, 3)
    assert list(f.indices) == want
    assert read_indices(f) == want


def test_iteration(synth):
    d = hwc(synth(frames=12))
    assert [read_indices(f)[0] for f in d] == list(range(12))


def test_get_frames_at(video, np, torch):
    d = hwc(video)
    req = [59, 0, 10, 10, -1, 31, 16]
    f = d.get_frames_at(req)
    assert f.shape == (7, 120, 160, 3) and f.layout == "NHWC"
    want = [i % 60 for i in req]
    assert list(f.indices) == want and read_indices(f) == want
    assert f.pts_seconds == pytest.approx(tuple(i * 0.04 for i in want))
    # other index containers: range, tuple, numpy int32/int64 arrays, torch tensors
    for idx in (range(3, 9), (3, 4, 5, 6, 7, 8), np.arange(3, 9), np.arange(3, 9, dtype=np.int32),
                torch.arange(3, 9), [np.int64(i) for i in range(3, 9)]):
        assert read_indices(d.get_frames_at(idx)) == list(range(3, 9))
    empty = d.get_frames_at([])
    assert empty.shape == (0, 120, 160, 3) and empty.indices == ()
    s = d.stats
    assert s.frames_requested == 0
    d.get_frames_at([40, 41, 41])
    s = d.stats
    assert s.frames_requested == 3 and s.frames_returned == 2 and s.frames_decoded >= 2
    with pytest.raises(TypeError):
        d.get_frames_at([1.5])
    with pytest.raises(TypeError):
        d.get_frames_at(5)


def test_in_range(video):
    d = hwc(video)
    assert list(d.get_frames_in_range(5, 12, 3).indices) == [5, 8, 11]
    f = d.get_frames_played_in_range(0.4, 0.6)
    assert list(f.indices) == [10, 11, 12, 13, 14]
    assert list(d.get_frames_played_in_range(0.41, 0.5).indices) == [10, 11, 12]
    assert d.get_frames_played_in_range(1.0, 1.0).shape[0] == 0
    with pytest.raises(reel.OutOfRangeError):
        d.get_frames_played_in_range(0.0, 9.0)
    with pytest.raises(ValueError):
        d.get_frames_played_in_range(1.0, 0.5)


def test_played_at(video):
    d = hwc(video)
    f = d.get_frames_played_at([0.0, 0.039, 0.04, 1.0, 2.399])
    assert list(f.indices) == [0, 0, 1, 25, 59]
    assert read_indices(f) == [0, 0, 1, 25, 59]
    with pytest.raises(reel.OutOfRangeError) as e:
        d.get_frames_played_at([2.4])
    assert isinstance(e.value, IndexError)
    with pytest.raises(reel.OutOfRangeError):
        d.get_frames_played_at([-0.1])


def test_vfr_and_start_time(synth):
    d = hwc(synth(vfr=True, frames=40, start=1.5))
    m = d.metadata
    assert m.begin_stream_seconds == pytest.approx(1.5, abs=1e-3)
    table = d.frame_table()
    times = [r.pts_seconds + r.duration_seconds / 2 for r in table]
    f = d.get_frames_played_at(times)
    assert list(f.indices) == list(range(40)) and read_indices(f) == list(range(40))


# ------------------------------------------------------------------ sources
def test_sources(video):
    data = pathlib.Path(video).read_bytes()
    want = [3, 40]
    for src in (video, pathlib.Path(video), data, bytearray(data), memoryview(data)):
        d = hwc(src)
        assert read_indices(d.get_frames_at(want)) == want
    d = hwc(data, name="clip.mp4")
    assert d.metadata.path == "clip.mp4"
    with pytest.raises(reel.OutOfRangeError) as e:
        d[99]
    assert str(e.value).startswith("clip.mp4: ") and e.value.path == "clip.mp4"
    with open(video, "rb") as fobj:
        d = hwc(fobj)
        assert d.metadata.path == video
        assert read_indices(d.get_frames_at(want)) == want
    d = hwc(io.BytesIO(data))
    assert read_indices(d.get_frames_at([59, 0])) == [59, 0]


class NoReadinto:
    """A file-like object with only read/seek/tell."""

    def __init__(self, data):
        self._f = io.BytesIO(data)
        self.reads = 0

    def read(self, n=-1):
        self.reads += 1
        return self._f.read(n)

    def seek(self, off, whence=0):
        return self._f.seek(off, whence)

    def tell(self):
        return self._f.tell()

    def seekable(self):
        return True


class Pipe:
    """A non-seekable stream: read into memory at open."""

    def __init__(self, data):
        self._f = io.BytesIO(data)

    def read(self, n=-1):
        return self._f.read(n)

    def seekable(self):
        return False


def test_file_like_variants(video):
    data = pathlib.Path(video).read_bytes()
    f = NoReadinto(data)
    d = hwc(f)
    assert read_indices(d.get_frames_at([20, 1])) == [20, 1] and f.reads > 0
    d = hwc(Pipe(data))
    assert read_indices(d.get_frames_at([20, 1])) == [20, 1]
    with pytest.raises(TypeError):
        reel.VideoDecoder(12345)


def test_memory_source_is_pinned(video):
    buf = bytearray(pathlib.Path(video).read_bytes())
    d = hwc(buf)
    with pytest.raises(BufferError):
        buf.extend(b"x")  # the decoder reads it in place
    d.close()
    buf.extend(b"x")  # released at close


# ------------------------------------------------------------------ options
def test_size_crop_layout(video, np):
    full = hwc(video)[12].numpy()
    d = reel.VideoDecoder(video, layout="HWC", crop=(10, 20, 60, 80))  # top, left, height, width
    c = d[12].numpy()
    assert c.shape == (60, 80, 3)
    assert np.array_equal(c, full[10:70, 20:100])
    chw = reel.VideoDecoder(video, crop=(10, 20, 60, 80))[12].numpy()
    assert chw.shape == (3, 60, 80) and np.array_equal(chw.transpose(1, 2, 0), c)
    s = reel.VideoDecoder(video, size=(64, 96), layout="HWC")
    assert s.frame_shape == (64, 96, 3) and s[5].shape == (64, 96, 3)
    assert reel.VideoDecoder(video, size=50).frame_shape == (3, 50, 50)
    assert read_indices(reel.VideoDecoder(video, size=(60, 80), layout="HWC").get_frames_at([9])) == [9]
    flip = reel.VideoDecoder(video, layout="HWC", flip=True)[12].numpy()
    assert np.array_equal(flip, full[:, ::-1])
    with pytest.raises(reel.InvalidArgumentError) as e:
        reel.VideoDecoder(video, crop=(100, 100, 60, 80))
    assert isinstance(e.value, ValueError)
    for bad in (dict(layout="XYZ"), dict(dtype="int16"), dict(filter="lanczos"), dict(corrupt_policy="maybe"),
                dict(size=(0, 5)), dict(crop=(1, 2, 3)), dict(index_mode="sometimes")):
        with pytest.raises((ValueError, TypeError)):
            reel.VideoDecoder(video, **bad)


def test_dtypes_and_normalisation(video, np, torch):
    u8 = hwc(video)[20].numpy().astype(np.float32)
    f32 = hwc(video, dtype="float32")[20]
    assert f32.dtype == "float32" and f32.itemsize == 4
    assert np.allclose(f32.numpy(), u8 / 255.0, atol=1e-6)
    mean, std = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)
    n = hwc(video, dtype=torch.float32, mean=mean, std=std)[20].numpy()
    assert np.allclose(n, (u8 / 255.0 - np.array(mean)) / np.array(std), atol=1e-5)
    f16 = hwc(video, dtype=np.float16)[20]
    assert f16.dtype == "float16" and np.allclose(f16.numpy().astype(np.float32), u8 / 255.0, atol=1e-3)
    bf = hwc(video, dtype="bfloat16")[20]
    t = bf.torch()
    assert t.dtype == torch.bfloat16 and torch.allclose(t.float(), torch.from_numpy(u8 / 255.0).float(), atol=1e-2)
    with pytest.raises(TypeError):
        bf.numpy()


def test_filters_and_convert_paths(video):
    for filt in ("bilinear", "area", "bicubic", "nearest"):
        for mode in ("fused", "after_rgb"):
            d = reel.VideoDecoder(video, layout="HWC", size=(60, 80), filter=filt, convert_path=mode)
            assert read_indices(d.get_frames_at([17])) == [17]


def test_rotation(shared_videos):
    p = shared_videos / "nasa_13013_rotated.mp4"
    if not p.exists():
        pytest.skip("nasa_13013_rotated.mp4 not in the shared videos")
    d = reel.VideoDecoder(p)
    m = d.metadata
    # the metadata describes the frames returned: 270 wide, 480 high after the
    # rotation (torchcodec's NASA_VIDEO_ROTATED: width 270, height 480); the
    # stream's own size is source_*
    assert (m.width, m.height, m.rotation) == (270, 480, 90)
    assert (m.source_width, m.source_height) == (480, 270)
    assert d.frame_shape == (3, m.height, m.width) == (3, 480, 270)
    assert reel.VideoDecoder(p, apply_rotation=False).frame_shape == (3, m.source_height, m.source_width)
    # bit_rate is the stream's (ffprobe: stream 202188, container 217676)
    assert (m.bit_rate, m.container_bit_rate) == (202188, 217676)


def test_cli_frames_names_the_convert_path_and_rotation_as_python(shared_videos):
    """`reel frames --convert-path fused|after_rgb` and `--no-rotate` are
    VideoDecoder's convert_path= and apply_rotation=False (issue 26: one name per
    concept, one default: the display rotation is applied)."""
    import os
    import subprocess

    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    p = shared_videos / "nasa_13013_rotated.mp4"
    if not p.exists():
        pytest.skip("nasa_13013_rotated.mp4 not in the shared videos")

    def frames(*opts: str) -> bytes:
        return subprocess.run([cli, "frames", str(p), "--at", "5", *opts, "--raw", "-"], capture_output=True,
                              check=True, timeout=120).stdout

    def decoded(**kw) -> bytes:
        return reel.VideoDecoder(p, layout="HWC", filter="bicubic", **kw)[5].numpy().tobytes()

    fused = frames("--size", "80x60", "--filter", "bicubic", "--convert-path", "fused", "--no-rotate")
    after = frames("--size", "80x60", "--filter", "bicubic", "--convert-path", "after_rgb", "--no-rotate")
    assert len(fused) == len(after) == 80 * 60 * 3 and fused != after
    assert fused == frames("--size", "80x60", "--filter", "bicubic", "--no-rotate")  # fused is the default
    assert fused == decoded(size=(60, 80), convert_path="fused", apply_rotation=False)
    assert after == decoded(size=(60, 80), convert_path="after_rgb", apply_rotation=False)
    rotated = frames("--size", "60x80", "--filter", "bicubic")  # rotated by default, as in Python
    assert rotated == decoded(size=(80, 60)) and rotated != frames("--size", "60x80", "--filter", "bicubic",
                                                                   "--no-rotate")
    bad = subprocess.run([cli, "frames", str(p), "--at", "5", "--convert-path", "yuv", "--raw", "-"],
                         capture_output=True, timeout=120)
    assert bad.returncode == 2 and b"--convert-path" in bad.stderr, bad.stderr


def test_sidecar_index(synth, tmp_path):
    src = synth(frames=30, gop=10)
    path = tmp_path / "v.mp4"
    path.write_bytes(pathlib.Path(src).read_bytes())
    d = reel.VideoDecoder(path, index_mode=True, force_scan=True)
    assert d.metadata.index_source == "scan"
    assert (tmp_path / "v.mp4.reelidx").exists()
    d2 = reel.VideoDecoder(path, index_mode="read")
    assert d2.metadata.index_source == "sidecar"
    assert read_indices(reel.VideoDecoder(path, index_mode="read", layout="HWC").get_frames_at([29])) == [29]
    side = tmp_path / "elsewhere.idx"
    d.save_index(side)
    assert side.exists()
    assert reel.VideoDecoder(path, index_mode="read", index_path=side).metadata.index_source == "sidecar"
    assert reel.VideoDecoder(path).metadata.index_source != "sidecar"  # index off by default


def test_stream_selection(shared_videos):
    p = shared_videos / "nasa_13013.mp4"
    if not p.exists():
        pytest.skip("nasa_13013.mp4 not in the shared videos")
    m = reel.VideoDecoder(p).metadata
    assert m.stream_index == 3
    # bit_rate is the decoded stream's, as torchcodec's (ffprobe: stream 3
    # 128783 b/s, stream 0 71925, the container 324915)
    assert (m.bit_rate, m.container_bit_rate, m.rotation) == (128783, 324915, None)
    d = reel.VideoDecoder(p, stream=0)
    assert (d.metadata.stream_index, d.metadata.width, len(d)) == (0, 320, 325)
    assert d.metadata.bit_rate == 71925
    with pytest.raises(reel.NoVideoStreamError):
        reel.VideoDecoder(p, stream=1)  # audio


# ------------------------------------------------------------------ lifetime
def test_close_and_context(video):
    with hwc(video) as d:
        f = d[3]
    assert d.closed
    assert read_indices(f) == [3]  # frames outlive the decoder
    with pytest.raises(ValueError):
        d[3]
    d.close()  # idempotent


def test_pickle(video):
    d = reel.VideoDecoder(video, size=(60, 80), layout="HWC")
    d2 = pickle.loads(pickle.dumps(d))
    assert d2.frame_shape == (60, 80, 3) and read_indices(d2.get_frames_at([30])) == [30]
    b = reel.VideoDecoder(pathlib.Path(video).read_bytes(), layout="HWC")
    assert read_indices(pickle.loads(pickle.dumps(b))[8:9]) == [8]
    with open(video, "rb") as f, pytest.raises(TypeError):
        pickle.dumps(reel.VideoDecoder(f))
    with pytest.raises(TypeError):
        pickle.dumps(d._dec)


# ------------------------------------------------------------------ threads
def test_threads_option(video):
    for threads in (1, 2, 0):
        assert read_indices(hwc(video, threads=threads).get_frames_at([5, 50, 25])) == [5, 50, 25]


def test_shared_decoder_across_threads(video):
    d = hwc(video, threads=1)
    errors, results = [], {}

    def work(k):
        try:
            for j in range(8):
                idx = [(k * 7 + j * 5 + i) % 60 for i in range(4)]
                got = read_indices(d.get_frames_at(idx))
                if got != idx:
                    errors.append((idx, got))
            results[k] = True
        except Exception as exc:  # pragma: no cover
            errors.append(exc)

    ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors and len(results) == 4


def test_gil_released_while_decoding(synth):
    big = synth(width=640, height=480, frames=120, gop=120)
    """With a switch interval far longer than the test, the interpreter never
    takes the GIL from a thread: the spinner runs only while the main thread
    gives it up. It counts only while the main thread is inside the call, so
    a call that held the GIL throughout would leave the count at 0 (no clock)."""
    import sys
    d = reel.VideoDecoder(big, threads=1)
    ticks = 0
    stop, in_call, spinning = threading.Event(), threading.Event(), threading.Event()

    def spin():
        nonlocal ticks
        spinning.set()
        while not stop.is_set():
            if in_call.is_set():
                ticks += 1
            time.sleep(0)  # gives the GIL back to the main thread when it asks

    old = sys.getswitchinterval()
    t = threading.Thread(target=spin)
    try:
        sys.setswitchinterval(1000.0)
        t.start()
        spinning.wait(10)
        in_call.set()
        d.get_frames_at(range(0, 120, 2))
        in_call.clear()
        during = ticks
    finally:
        stop.set()
        t.join(10)
        sys.setswitchinterval(old)
    assert during > 0, during


def test_file_like_from_threads(video):
    data = pathlib.Path(video).read_bytes()
    decs = [hwc(io.BytesIO(data), threads=1) for _ in range(3)]
    out = {}

    def work(k):
        out[k] = read_indices(decs[k].get_frames_at([k, 50 - k, 20 + k]))

    ts = [threading.Thread(target=work, args=(k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert out == {k: [k, 50 - k, 20 + k] for k in range(3)}


def test_unsupported_file_like_return(video):
    class Bad(NoReadinto):
        def read(self, n=-1):
            return "text"  # not bytes

    with pytest.raises(reel.ReelError) as e:
        reel.VideoDecoder(Bad(pathlib.Path(video).read_bytes()))
    assert isinstance(e.value.__cause__, TypeError)



class _StatsOfDefaults:
    """A map-style dataset whose item is what a default VideoDecoder did."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __len__(self) -> int:
        return 1

    def __getitem__(self, i: int):
        with reel.VideoDecoder(self.path, layout="HWC") as d:
            got = reel._testing.read_indices(d.get_frames_at([0, 20, 40, 59]))
            return got, d.stats.gop_contexts


def test_defaults_use_the_cores_and_follow_a_dataloaders_pool(synth, torch):
    """VideoDecoder's defaults: a call of several keyframe runs splits them
    over up to the core count of contexts (frames unchanged), a call of one
    run decodes on one; inside a DataLoader worker, whose pool owns the
    cores, GOP-parallel decoding is off."""
    import os
    path = synth(frames=60, gop=16)  # runs at 0, 16, 32, 48
    want = [0, 20, 40, 59]
    with reel.VideoDecoder(path, layout="HWC") as d:
        assert read_indices(d.get_frames_at(want)) == want
        cores = os.cpu_count() or 1
        assert d.stats.gop_contexts == (min(cores, 4) if cores >= 2 else 1), d.stats
        d.get_frames_at([1, 2])
        assert d.stats.gop_contexts == 1
    with reel.VideoDecoder(path, gop_contexts=1) as d:
        d.get_frames_at(want)
        assert d.stats.gop_contexts == 1
    loader = torch.utils.data.DataLoader(_StatsOfDefaults(path), batch_size=None, num_workers=1)
    (got, contexts), = list(loader)
    assert list(got) == want and contexts == 1
