"""The Loader's audio of videos at URLs (issue 28): over http (nginx) and S3
(moto) every clip's batch.audio, lengths, valid ranges and first samples
equal the same Loader's over the local files sample for sample (which
tests/python/test_loader_audio.py holds to the ffmpeg CLI), and the loader's
remote_stats count the audio's requests; a clip near the start of a long
video fetches a small part of it; a URL whose audio cannot be read (no audio
stream, 503s after the video opened) fails by its redacted name, with no
token or secret in any message; `reel pack --audio` of URLs stores the audio
it stores of the local files."""
from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import MONO16K, NATIVE, make_video
from servers import moto_s3, moto_s3_user, nginx
from servers import with_environ as _with_env

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

NAMES = ("a", "late", "b")
KW = dict(frames_per_clip=8, clips_per_video=2, frame_stride=2, size=(32, 48), crop=None, batch_size=2,
          shuffle=True, seed=5, epochs=1, decode_threads=2)
RANGES = {"whole_object_max": 0}  # read by ranges, as a large object would be


@pytest.fixture(scope="module")
def www(tmp_path_factory):
    d = tmp_path_factory.mktemp("audio_www")
    make_video(d, "a", 1)
    make_video(d, "late", 2, delay=0.25)
    make_video(d, "b", 3)
    reel._testing.write_video(str(d / "silent.mp4"), width=96, height=64, frames=30, gop=10)
    for f in d.glob("*_v.mp4"):  # the generator's video-only intermediates
        f.unlink()
    return d


@pytest.fixture(scope="module")
def long_www(tmp_path_factory):
    """60 s of 320x240 video with 48 kHz AAC (3.3 MB): read by ranges, a
    clip's video holds a small part of it and its audio (from a0, AAC's
    contract) needs bytes of its own."""
    d = tmp_path_factory.mktemp("audio_long")
    v = d / "long_v.mp4"
    reel._testing.write_video(str(v), width=320, height=240, frames=1500, gop=25, seed=3)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(v), "-f", "lavfi", "-i",
                    "sine=f=440:r=48000:d=60", "-map", "0:v", "-map", "1:a", "-c:v", "copy", "-c:a", "aac",
                    "-b:a", "96k", str(d / "long.mp4")], check=True)
    v.unlink()
    return d


def _epoch(items, audio, **kw):
    """(per clip: name, clip, frame indices, frames, audio [C, S_i], first sample, valid), metrics."""
    out = []
    with reel.Loader(items, audio=audio, **{**KW, **kw}) as ld:
        for b in ld:
            frames = np.asarray(b.frames)
            plane = None if audio is None else np.asarray(b.audio)
            for i, c in enumerate(b.info):
                row = ()
                if audio is not None:
                    n = int(np.asarray(b.audio_lengths)[i])
                    assert not plane[i, :, n:].any()
                    row = (plane[i, :, :n].copy(), c.audio_first_sample, tuple(np.asarray(b.audio_valid)[i]))
                name = os.path.basename(c.path.split("?")[0])
                out.append((name, c.clip, tuple(c.frame_indices), frames[i].copy()) + row)
        m = ld.metrics()
    return out, m


def _same(got, want):
    assert [g[:3] for g in got] == [w[:3] for w in want] and len(want) == 2 * len(NAMES)
    for g, w in zip(got, want):
        assert np.array_equal(g[3], w[3])  # the frames
        assert np.array_equal(g[4], w[4]) and g[4].shape[1] > 0  # the audio, sample for sample
        assert g[5:] == w[5:]  # first sample, valid


@pytest.mark.parametrize("settings", [NATIVE, MONO16K], ids=["native", "16k_mono"])
def test_http_audio_equals_local_and_is_counted(www, settings):
    local, _ = _epoch([str(www / f"{n}.mp4") for n in NAMES], settings)
    with nginx(www) as base:
        urls = [f"{base}/{n}.mp4" for n in NAMES]
        got, m = _epoch(urls, settings, remote=RANGES)
        _, video_only = _epoch(urls, None, remote=RANGES)
    _same(got, local)
    r, v = m["remote"], video_only["remote"]
    # each sample's audio reads the bytes its video fetched (these objects are
    # smaller than readahead_min: the first request brought each whole): the
    # audio adds no request and no byte, and each object is fetched once
    sizes = sum((www / f"{n}.mp4").stat().st_size for n in NAMES)
    assert r["requests"] == v["requests"] == len(NAMES), (r, v)
    assert r["bytes_fetched"] == v["bytes_fetched"] == r["object_bytes"] == sizes, (r, v, sizes)
    assert r["failures"] == 0 and m["audio_samples"] == sum(g[4].shape[1] for g in got)


def test_s3_audio_equals_local_and_no_secret_in_messages(www):
    pytest.importorskip("boto3")
    local, _ = _epoch([str(www / f"{n}.mp4") for n in NAMES], MONO16K)
    with moto_s3() as endpoint:
        env, s3 = moto_s3_user(endpoint, "reel")
        s3.create_bucket(Bucket="videos")
        for n in NAMES + ("silent",):
            s3.upload_file(str(www / f"{n}.mp4"), "videos", f"av/{n}.mp4")
        urls = [f"s3://videos/av/{n}.mp4" for n in NAMES]
        got, m = _with_env(env, lambda: _epoch(urls, MONO16K))
        _, video_only = _with_env(env, lambda: _epoch(urls, None))

        def silent(on_error):
            kw = dict(frames_per_clip=4, size=32, batch_size=1, epochs=1, on_error=on_error)
            with reel.Loader(["s3://videos/av/silent.mp4", urls[0]], audio=MONO16K, **kw) as ld:
                if on_error == "raise":
                    with pytest.raises(reel.ReelError) as e:
                        list(ld)
                    return e.value, ld.metrics()
                assert sum(len(b) for b in ld) == 1  # the other video's clip
                return None, ld.metrics()

        err, _ = _with_env(env, lambda: silent("raise"))
        _, skipped = _with_env(env, lambda: silent("skip"))
    _same(got, local)
    # the audio reads the bytes its video fetched (each object whole: under whole_object_max)
    sizes = sum((www / f"{n}.mp4").stat().st_size for n in NAMES)
    assert m["remote"]["requests"] == video_only["remote"]["requests"]
    assert m["remote"]["bytes_fetched"] == video_only["remote"]["bytes_fetched"] == sizes
    assert err.status == reel._reel.STATUS["NO_AUDIO_STREAM"]
    assert "s3://videos/av/silent.mp4: no audio stream" in str(err)
    reasons = " | ".join(f["reason"] for f in skipped["failures"])
    assert "silent.mp4: no audio stream" in reasons
    for text in (str(err), reasons, repr(m), repr(skipped)):
        assert env["AWS_SECRET_ACCESS_KEY"] not in text and env["AWS_ACCESS_KEY_ID"] not in text


def test_http_audio_that_cannot_be_read_is_named_and_redacted(www, long_www):
    from faultproxy import fault_proxy

    token = "tok3n-never-print"
    kw = dict(frames_per_clip=4, size=32, batch_size=1, epochs=1, decode_threads=1)
    with nginx(www) as base:
        # no audio stream, missing="raise": named by the URL without its query string
        url = f"{base}/silent.mp4?token={token}"
        with reel.Loader([url], audio=MONO16K, on_error="raise", **kw) as ld:
            with pytest.raises(reel.ReelError) as e:
                list(ld)
        assert e.value.status == reel._reel.STATUS["NO_AUDIO_STREAM"]
        assert f"{base}/silent.mp4" in str(e.value) and "no audio stream" in str(e.value)
        assert token not in str(e.value)
        with reel.Loader([url], audio={**MONO16K, "missing": "zeros"}, **kw) as ld:  # zeros asked for
            (b,) = list(ld)
            assert not np.asarray(b.audio).any() and np.asarray(b.audio_lengths)[0] == 4 * 16000 // 25
    with nginx(long_www) as base:
        # the object answers 503 from the request after the video's open: the
        # sample's next reads (its audio's, which reads through the video's
        # object, or the video's fetch ahead) fail, named, the failure counted
        with reel.VideoDecoder(f"{base}/long.mp4", remote=RANGES) as d:
            video_open = d.remote_stats["requests"]
        with fault_proxy(base) as proxy:
            proxy.burst_every = video_open + 1
            proxy.burst_length = 1000
            url = f"{proxy.base}/long.mp4?token={token}"
            with reel.Loader([(url, 0, 50.0, 52.0)], audio=MONO16K, on_error="raise",
                             remote=dict(RANGES, max_retries=0), **kw) as ld:
                with pytest.raises(reel.ReelError) as e:
                    list(ld)
                m = ld.metrics()
            assert proxy.faults["503"] > 0
    (f,) = m["failures"]
    for text in (f["reason"], str(e.value)):
        assert f"{proxy.base}/long.mp4" in text and "HTTP 503" in text and token not in text
    assert m["remote"]["failures"] >= 1 and m["remote"]["failures_by_cause"]["server"] >= 1
    assert m["remote"]["requests"] > video_open
    assert token not in repr(m)


def test_shutdown_and_the_time_limit_stop_a_stalled_audio_transfer(long_www):
    """The loader's interrupt reaches the sample's requests: with the video
    opened and the next request (the audio's, or the video's fetch ahead:
    both read one object) stalled, closing the loader, and
    the worker freed after a per-sample time limit, end the transfer rather
    than wait out its 30 s request timeout (a close in a thread that must be
    done within 10 s: bounded waits, no clock)."""
    import threading

    from faultproxy import fault_proxy

    def closes_within(obj, bound=10.0):
        t = threading.Thread(target=obj.close)
        t.start()
        t.join(bound)
        return not t.is_alive()

    remote = dict(RANGES, request_timeout=30, max_retries=0)
    kw = dict(frames_per_clip=2, size=32, batch_size=1, decode_threads=1, epochs=1, audio=MONO16K, remote=remote)
    with nginx(long_www) as base:
        with reel.VideoDecoder(f"{base}/long.mp4", remote=RANGES) as d:
            video_open = d.remote_stats["requests"]
        with fault_proxy(base) as proxy:
            proxy.stall_after = video_open  # the video opens; the sample's next request stalls
            L = reel.Loader([(f"{proxy.base}/long.mp4", 0, 50.0, 52.0)], **kw)
            for _ in range(1000):  # bounded: 10 s
                if proxy.faults["stall"]:
                    break
                threading.Event().wait(0.01)
            assert proxy.faults["stall"] == 1 and proxy.requests == video_open + 1, proxy.faults
            assert closes_within(L)
        with fault_proxy(base) as proxy:
            proxy.stall_after = video_open
            L = reel.Loader([(f"{proxy.base}/long.mp4", 0, 50.0, 52.0)], sample_time_limit=0.3, on_error="raise", **kw)
            try:
                with pytest.raises(reel.ReelError, match="time limit"):
                    list(L)
            finally:
                assert closes_within(L)  # the close waits for the interrupted worker
            assert proxy.faults["stall"] == 1


def test_a_clip_near_the_start_of_a_long_video_fetches_a_small_part(long_www):
    """60 s of 320x240 video with AAC: a clip at 5-7 s reads its audio from
    a0 (AAC's contract) by byte ranges, not the object: the audio's share is
    well under the file."""
    tmp_path = long_www
    size = (tmp_path / "long.mp4").stat().st_size
    kw = dict(frames_per_clip=8, size=32, batch_size=1, shuffle=False, epochs=1, decode_threads=1)

    def run(src, audio, **more):
        with reel.Loader([(src, 0, 5.0, 7.0)], audio=audio, **kw, **more) as ld:
            (b,) = list(ld)
            return np.asarray(b.audio).copy() if audio else None, ld.metrics()["remote"]

    local, _ = run(str(tmp_path / "long.mp4"), MONO16K)
    with nginx(tmp_path) as base:
        _, video = run(f"{base}/long.mp4", None, remote=RANGES)
        got, both = run(f"{base}/long.mp4", MONO16K, remote=RANGES)
    assert np.array_equal(got, local) and got.shape == (1, 1, 8 * 16000 // 25)
    assert both["object_bytes"] == video["object_bytes"] == size  # the audio shares the video's object
    audio_bytes = both["bytes_fetched"] - video["bytes_fetched"]
    assert 0 < audio_bytes < size / 2, (audio_bytes, size)
    assert both["bytes_fetched"] < size / 2, (both, size)


def test_pack_audio_of_urls_stores_what_the_local_files_give(www, tmp_path):
    def manifest(prefix, name):
        path = tmp_path / name
        path.write_text("path,label\n" + "".join(f"{prefix}/{n}.mp4,{n}\n" for n in NAMES))
        return path

    local = tmp_path / "local"
    reel.pack(manifest(www, "local.csv"), local, size=32, shard_size=1 << 16, audio=MONO16K, format="raw")
    with nginx(www) as base:
        remote = tmp_path / "remote"
        reel.pack(manifest(base, "remote.csv"), remote, size=32, shard_size=1 << 16, audio=MONO16K, format="raw")
        cli = os.environ.get("REEL_CLI") or shutil.which("reel")
        if cli:  # the CLI's `reel pack --audio` of the same URLs: the same shards
            r = subprocess.run([cli, "pack", str(tmp_path / "remote.csv"), str(tmp_path / "cli"), "--size", "32",
                                "--shard-size", "65536", "--format", "raw", "--audio", "--audio-rate", "16000",
                                "--audio-channels", "1", "--no-progress"], capture_output=True, text=True)
            assert r.returncode == 0, r.stderr
    recs = {os.path.basename(r["path"]): r for r in reel._reel.store_records(str(remote))}
    want = {os.path.basename(r["path"]): r for r in reel._reel.store_records(str(local))}
    assert sorted(recs) == sorted(want) == sorted(f"{n}.mp4" for n in NAMES)
    for n, r in recs.items():
        assert r["status"] == 0 and r["audio"]["status"] == 0 and r["audio"] == want[n]["audio"], (n, r)
    shards = sorted(p.name for p in local.glob("shard-*"))
    assert shards and shards == sorted(p.name for p in remote.glob("shard-*"))
    for s in shards:  # frames and samples, byte for byte
        assert (remote / s).read_bytes() == (local / s).read_bytes(), s
        if cli:
            assert (tmp_path / "cli" / s).read_bytes() == (local / s).read_bytes(), s
    # and the Loader over it gives each clip the samples the videos give
    clips = dict(KW, size=32)  # the videos in the store's order (by path): each sample its clips
    got, _ = _epoch(str(remote), MONO16K, **clips)
    order = [os.path.basename(r["path"]) for r in reel._reel.store_records(str(remote))]
    from_videos, _ = _epoch([str(www / n) for n in order], MONO16K, **clips)
    got_by, want_by = ({(c[0], c[1]): c for c in x} for x in (got, from_videos))
    assert sorted(got_by) == sorted(want_by) and len(got_by) == 2 * len(NAMES)
    for k, g in got_by.items():
        assert g[2] == want_by[k][2] and np.array_equal(g[4], want_by[k][4]) and g[5:] == want_by[k][5:]
