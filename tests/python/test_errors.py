# tests/python/test_errors.py: C statuses map to the ReelError hierarchy with
# the C message ("<file>: <reason>"), .path and .status; Python exceptions from
# file-like sources surface as the cause; exceptions pickle.
from __future__ import annotations

import io
import pathlib
import pickle

import pytest

import reel
import reel._reel as R


def test_hierarchy():
    assert issubclass(reel.ReelError, Exception)
    for cls in (reel.NotFoundError, reel.CorruptError, reel.UnsupportedError, reel.OutOfRangeError,
                reel.InvalidArgumentError, reel.NoVideoStreamError):
        assert issubclass(cls, reel.ReelError)
    assert issubclass(reel.NotFoundError, FileNotFoundError)
    assert issubclass(reel.OutOfRangeError, IndexError)
    assert issubclass(reel.InvalidArgumentError, ValueError)
    assert reel.ReelError("x").path is None and reel.ReelError("x").status is None
    assert reel.Status.NOT_FOUND == -2 and reel.Status.OK == 0
    assert R.strerror(-2)


def check(exc, cls, status, path):
    assert type(exc) is cls
    assert exc.status == status and exc.path == str(path)
    assert str(exc).startswith(f"{path}: "), str(exc)
    assert len(str(exc)) > len(str(path)) + 2


def test_not_found(tmp_path):
    p = tmp_path / "missing.mp4"
    with pytest.raises(FileNotFoundError) as e:
        reel.VideoDecoder(p)
    check(e.value, reel.NotFoundError, reel.Status.NOT_FOUND, p)


def test_not_a_video(tmp_path):
    p = tmp_path / "text.mp4"
    p.write_text("hello, world\n" * 100)
    with pytest.raises(reel.CorruptError) as e:
        reel.VideoDecoder(p)
    check(e.value, reel.CorruptError, reel.Status.NOT_VIDEO, p)
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    with pytest.raises(reel.CorruptError):
        reel.VideoDecoder(empty)
    with pytest.raises(reel.CorruptError) as e:
        reel.VideoDecoder(b"")
    assert e.value.path == "<memory>"


def test_truncated(video, tmp_path):
    data = pathlib.Path(video).read_bytes()
    p = tmp_path / "half.mp4"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(reel.CorruptError) as e:  # the moov box is at the end: nothing to read
        reel.VideoDecoder(p)[:]
    assert e.value.path == str(p)


def test_directory(tmp_path):
    with pytest.raises(reel.ReelError) as e:
        reel.VideoDecoder(tmp_path)
    assert e.value.status == reel.Status.IO and str(e.value).startswith(f"{tmp_path}: ")


def test_unsupported_codec(synth, tmp_path):
    data = pathlib.Path(synth("avi", codec="mjpeg", frames=10)).read_bytes()
    p = tmp_path / "fourcc.avi"
    p.write_bytes(data.replace(b"MJPG", b"ZZZZ"))  # a codec tag no decoder knows
    with pytest.raises(reel.UnsupportedError) as e:
        reel.VideoDecoder(p)
    check(e.value, reel.UnsupportedError, reel.Status.UNSUPPORTED_CODEC, p)


def test_no_video_stream(video):
    with pytest.raises(reel.NoVideoStreamError) as e:
        reel.VideoDecoder(video, stream=4)
    check(e.value, reel.NoVideoStreamError, reel.Status.NO_VIDEO_STREAM, video)


def test_audio_only(ffmpeg, tmp_path):
    import subprocess

    p = tmp_path / "tone.m4a"
    subprocess.run([ffmpeg, "-v", "error", "-f", "lavfi", "-i", "sine=duration=0.5", str(p)], check=True)
    with pytest.raises(reel.NoVideoStreamError) as e:
        reel.VideoDecoder(p)
    check(e.value, reel.NoVideoStreamError, reel.Status.NO_VIDEO_STREAM, p)


def test_out_of_range(video):
    d = reel.VideoDecoder(video)
    with pytest.raises(IndexError) as e:
        d.get_frames_at([0, 60])
    check(e.value, reel.OutOfRangeError, reel.Status.OUT_OF_RANGE, video)
    with pytest.raises(reel.OutOfRangeError):
        d.get_frames_at([-61])
    with pytest.raises(reel.OutOfRangeError):
        d.index_at_time(-1.0)
    assert d.get_frames_at([59]).indices == (59,)  # the decoder is still usable


def test_invalid_argument(video):
    with pytest.raises(ValueError) as e:
        reel.VideoDecoder(video, crop=(0, 0, 200, 200))
    check(e.value, reel.InvalidArgumentError, reel.Status.INVALID_ARG, video)


def test_file_like_errors(synth):
    data = pathlib.Path(synth(width=640, height=480, frames=120, gop=120)).read_bytes()
    assert len(data) > 4 * 65536  # more than the I/O buffer holds

    class Failing(io.BytesIO):
        def __init__(self, data, fail_after):
            super().__init__(data)
            self.calls = 0
            self.fail_after = fail_after

        def readinto(self, b):
            self.calls += 1
            if self.calls > self.fail_after:
                raise OSError("disk on fire")
            return super().readinto(b)

    with pytest.raises(reel.ReelError) as e:
        reel.VideoDecoder(Failing(data, 0), name="stream.mp4")
    assert isinstance(e.value.__cause__, OSError) and "disk on fire" in str(e.value.__cause__)
    assert e.value.path == "stream.mp4" and str(e.value).startswith("stream.mp4: ")
    f = Failing(data, 10 ** 9)
    d = reel.VideoDecoder(f, threads=1)
    f.fail_after = f.calls  # from now on every read fails
    d2 = reel.VideoDecoder(io.BytesIO(data))  # other decoders are unaffected
    with pytest.raises(reel.ReelError) as e:
        d.get_frames_at(range(0, 120, 10))
    assert isinstance(e.value.__cause__, OSError)
    assert d2.get_frames_at([5]).indices == (5,)


def test_interrupt_in_file_like_passes_through(video):
    data = pathlib.Path(video).read_bytes()

    class Interrupted(io.BytesIO):
        def readinto(self, b):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        reel.VideoDecoder(Interrupted(data))


def test_exceptions_pickle(video):
    try:
        reel.VideoDecoder(video).get_frames_at([99])
    except reel.OutOfRangeError as exc:
        e2 = pickle.loads(pickle.dumps(exc))
        assert type(e2) is reel.OutOfRangeError and str(e2) == str(exc)
        assert e2.path == exc.path and e2.status == exc.status
