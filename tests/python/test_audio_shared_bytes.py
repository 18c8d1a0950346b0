"""A video at a URL and its audio share their bytes (issue 28, remote): the
Loader's sample audio and VideoDecoder's audio read through the video's
remote object (src/io's share), so an object under whole_object_max is
fetched once, whole, for both; read by ranges, the audio takes what the
video's requests hold and fetches only the rest. Over http (nginx) and S3
(moto) the samples equal the local files', sample for sample; the two
handles close in either order; a 503 on the audio's reads is named by the
redacted URL."""
from __future__ import annotations

import contextlib
import shutil
import subprocess

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import MONO16K, audio_packet_bytes, make_video
from reel import _audio
from servers import moto_s3, moto_s3_user, nginx
from servers import with_environ as _with_env

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

NAMES = ("a", "b")
KW = dict(frames_per_clip=8, clips_per_video=2, frame_stride=2, size=(32, 48), crop=None, batch_size=2,
          shuffle=False, seed=5, epochs=1, decode_threads=2)
GAP = 256  # readahead_min of the sparse reads: the video's requests hold little beyond its GOPs
SPARSE = {"whole_object_max": 0, "readahead_min": GAP}


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    """Two 4 s clips with AAC (about 90 KB each: under whole_object_max) and
    60 s of 320x240 video with 96 kb/s AAC (3.3 MB), muxed by the ffmpeg CLI."""
    d = tmp_path_factory.mktemp("shared_www")
    for i, n in enumerate(NAMES):
        make_video(d, n, i + 1)
    v = d / "long_v.mp4"
    reel._testing.write_video(str(v), width=320, height=240, frames=1500, gop=25, seed=3)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(v), "-f", "lavfi", "-i",
                    "sine=f=440:r=48000:d=60", "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac",
                    "-b:a", "96k", str(d / "long.mp4")], check=True)
    for f in d.glob("*_v.mp4"):
        f.unlink()
    return d


@contextlib.contextmanager
def served(www, scheme):
    """(URL prefix of www's files, a function running fn() in the environment that reaches them)."""
    if scheme == "http":
        with nginx(www) as base:
            yield base, lambda fn: fn()
        return
    pytest.importorskip("boto3")
    with moto_s3() as endpoint:
        env, s3 = moto_s3_user(endpoint, "reel")
        s3.create_bucket(Bucket="videos")
        for f in www.glob("*.mp4"):
            s3.upload_file(str(f), "videos", f"av/{f.name}")
        yield "s3://videos/av", lambda fn: _with_env(env, fn)


def _epoch(items, audio, **kw):
    """Per clip (name, clip, frames, audio [C, S_i], first sample), and the loader's remote metrics."""
    out = []
    with reel.Loader(items, audio=audio, **{**KW, **kw}) as ld:
        for b in ld:
            frames = np.asarray(b.frames)
            for i, c in enumerate(b.info):
                row = (c.path.rsplit("/", 1)[-1], c.clip, frames[i].copy())
                if audio is not None:
                    n = int(np.asarray(b.audio_lengths)[i])
                    row += (np.asarray(b.audio)[i, :, :n].copy(), c.audio_first_sample)
                out.append(row)
        m = ld.metrics()["remote"]
    return out, m


def _decoder(src, audio, frames, **kw):
    """A VideoDecoder's frames, the audio of those frames (with audio), and its remote_stats."""
    with reel.VideoDecoder(str(src), audio=audio, **kw) as d:
        f = np.asarray(d.get_frames_at(frames)).copy()
        a = np.asarray(d.get_audio_for_frames(frames).data).copy() if audio else None
        return f, a, dict(d.remote_stats)


@pytest.mark.parametrize("scheme", ["http", "s3"])
def test_a_small_object_is_fetched_once_for_its_video_and_audio(www, scheme):
    """Objects under whole_object_max (the default 16 MiB): the video's open
    fetches each whole and its audio reads those bytes: bytes_fetched is
    the objects' sizes exactly, in the video's requests alone (reading the
    object again, as before, doubled both)."""
    sizes = sum((www / f"{n}.mp4").stat().st_size for n in NAMES)
    local, _ = _epoch([str(www / f"{n}.mp4") for n in NAMES], MONO16K)
    frames = list(range(30, 42))
    lf, la, _ = _decoder(www / "a.mp4", MONO16K, frames)
    with served(www, scheme) as (base, run):
        urls = [f"{base}/{n}.mp4" for n in NAMES]
        got, both = run(lambda: _epoch(urls, MONO16K))
        _, video = run(lambda: _epoch(urls, None))
        df, da, dboth = run(lambda: _decoder(f"{base}/a.mp4", MONO16K, frames))
        _, _, dvideo = run(lambda: _decoder(f"{base}/a.mp4", None, frames))
    assert [g[:2] for g in got] == [w[:2] for w in local] and len(got) == 2 * len(NAMES)
    for g, w in zip(got, local):
        assert np.array_equal(g[2], w[2]) and np.array_equal(g[3], w[3]) and g[3].shape[1] > 0 and g[4] == w[4]
    assert both["bytes_fetched"] == both["object_bytes"] == sizes, (both, sizes)
    assert both["requests"] == video["requests"] and both["failures"] == 0, (both, video)
    assert np.array_equal(df, lf) and np.array_equal(da, la) and da.shape[1] > 0
    assert dboth["bytes_fetched"] == (www / "a.mp4").stat().st_size, dboth
    assert dboth["requests"] == dvideo["requests"], (dboth, dvideo)


def audio_runs(path, until, gap=GAP):
    """The audio packets' byte ranges up to `until` s, coalesced as reel's
    hints coalesce them (gaps up to `gap` fetched): their total bytes."""
    return audio_packet_bytes(path, until, gap)[0]


def test_a_large_object_s_audio_adds_only_what_the_video_did_not_fetch(www):
    """Read by ranges (whole_object_max=0), a Loader sample at 0-2 s: the
    video's open keeps its first readahead_min bytes (256 KiB, the first
    4.6 s of this file) and its index, its stage 1 fetches the clip's GOPs:
    the audio's header and packets up to the window's end and a second (the
    decoder's delay) lie in those, so the audio adds no byte and no request
    (before: a second object, its header and packets fetched again). With
    readahead_min 256 B at 2-4 s the video holds little: the audio adds at
    most its own packets' ranges up to 5 s (no header: it reads the video's),
    well under what a second object fetched (those and the moov)."""
    path = www / "long.mp4"
    kw = dict(frames_per_clip=8, size=32, batch_size=1, shuffle=False, epochs=1, decode_threads=1)

    def run(src, audio, t0, **more):
        with reel.Loader([(src, 0, t0, t0 + 2.0)], audio=audio, **kw, **more) as ld:
            (b,) = list(ld)
            return (np.asarray(b.frames).copy(), np.asarray(b.audio).copy() if audio else None,
                    ld.metrics()["remote"])

    with nginx(www) as base:
        url = f"{base}/long.mp4"
        for t0, remote in ((0.0, {"whole_object_max": 0}), (2.0, SPARSE)):
            lf, la, _ = run(str(path), MONO16K, t0)
            _, _, video = run(url, None, t0, remote=remote)
            f, a, both = run(url, MONO16K, t0, remote=remote)
            assert np.array_equal(f, lf) and np.array_equal(a, la) and a.shape == (1, 1, 8 * 16000 // 25)
            added = both["bytes_fetched"] - video["bytes_fetched"]
            if t0 == 0.0:
                assert added == 0 and both["requests"] == video["requests"], (both, video)
            else:
                bound = audio_runs(path, t0 + 2.0 + 1.0)
                assert 0 < added <= bound, (added, bound)
            assert both["object_bytes"] == path.stat().st_size and both["failures"] == 0


@pytest.mark.parametrize("first", ["decoder", "audio"])
def test_the_video_and_its_audio_close_in_either_order(www, first):
    """The object lives until both handles are closed: the audio reads
    (fetching what the video did not) after its decoder closed, and the
    decoder decodes after its audio closed; both equal the local file's."""
    frames = list(range(1250, 1262))
    lf, la, _ = _decoder(www / "long.mp4", MONO16K, frames)
    with nginx(www) as base:
        d = reel.VideoDecoder(f"{base}/long.mp4", remote=SPARSE)
        a = _audio.Audio(f"{base}/long.mp4", _audio.AudioSettings.of(MONO16K), SPARSE, decoder=d._dec)
        pts, dur, _, _, _ = d._frame_table()
        window = _audio.frames_window(pts, dur, frames)
        time_base = d.metadata.time_base
        if first == "decoder":
            d.close()
            got = np.asarray(a.samples(*window, time_base).data)
            assert np.array_equal(got, la) and got.shape[1] > 0
            assert reel._reel.audio_stats(a.handle)["windows"] == 1
            del a
        else:
            del a
            assert np.array_equal(np.asarray(d.get_frames_at(frames)), lf)
            d.close()


def test_a_503_on_the_audio_s_reads_is_named_and_redacted(www):
    """The decoder and its audio opened, the frames read; every request after
    that answers 503: the audio's reads of its packets fail by the object's
    URL without its query string, the failure counted in the decoder's
    remote_stats (the audio's requests included)."""
    from faultproxy import fault_proxy

    token = "tok3n-never-print"
    remote = dict(SPARSE, max_retries=0)
    with nginx(www) as base:
        with reel.VideoDecoder(f"{base}/long.mp4", audio=MONO16K, remote=remote) as d:
            d.get_frames_at([1250])
            before = d.remote_stats["requests"]
        with fault_proxy(base) as proxy:
            proxy.burst_every = before + 1
            proxy.burst_length = 1000
            with reel.VideoDecoder(f"{proxy.base}/long.mp4?token={token}", audio=MONO16K, remote=remote) as d:
                d.get_frames_at([1250])
                assert d.remote_stats["failures"] == 0
                with pytest.raises(reel.ReelError) as e:
                    d.get_audio_for_frames(range(1250, 1262))
                stats = d.remote_stats
            assert proxy.faults["503"] > 0
    assert f"{proxy.base}/long.mp4" in str(e.value) and "HTTP 503" in str(e.value), str(e.value)
    assert token not in str(e.value)
    assert stats["failures"] >= 1 and stats["failures_by_cause"]["server"] >= 1
