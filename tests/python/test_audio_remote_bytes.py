"""The bytes a remote mp4's audio costs (issue 28, remote): over http (nginx)
and S3 (moto) a window's audio fetches the container's header and its
audio packets' byte ranges up to the window (from the index; runs closer
than readahead_min in one request), never the video's bytes between them:
at 55 s of a 60 s file that is about the audio's 0.9 MB, not the file's
3.5 MB; at 5 s far less; the Loader's video + audio of a sample is the
video's bytes and that. The samples equal the local file's."""
from __future__ import annotations

import shutil
import struct
import subprocess

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import MONO16K, audio_packet_bytes
from servers import moto_s3, moto_s3_user, nginx
from servers import with_environ as _with_env

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

GAP = 256  # readahead_min: audio runs closer than this come in one request
REMOTE = {"whole_object_max": 0, "readahead_min": GAP}  # byte ranges, as a large object
HEAD = 64 << 10  # the first read of the object (the demuxer's buffer at byte 0)
SLACK = 32 << 10


@pytest.fixture(scope="module")
def long_mp4(tmp_path_factory):
    """60 s of 320x240 H.264 with 48 kHz stereo AAC at 128 kb/s (a tone and
    noise: the encoder's noise substitution), muxed by the ffmpeg CLI (its
    interleave: one or two audio packets between video frames)."""
    d = tmp_path_factory.mktemp("audio_bytes")
    v = d / "long_v.mp4"
    reel._testing.write_video(str(v), width=320, height=240, frames=1500, gop=25, seed=3)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(v), "-f", "lavfi", "-i",
                    "sine=f=440:r=48000:d=60", "-f", "lavfi", "-i", "anoisesrc=r=48000:a=0.1:d=60",
                    "-filter_complex", "[1:a][2:a]amerge=inputs=2[a]", "-map", "0:v", "-map", "[a]",
                    "-c:v", "copy", "-c:a", "aac", "-b:a", "128k", str(d / "long.mp4")], check=True)
    v.unlink()
    return d / "long.mp4"


def moov_bytes(path):
    """The size of the file's moov box (its top-level boxes walked)."""
    data = path.read_bytes()
    at = 0
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
        if kind == b"moov":
            return size
        at += size if size else len(data)
    raise AssertionError("no moov")


def audio_fetch_bound(path, until):
    """What reading the audio packets up to `until` s may fetch: the header
    (the first read and the moov), the audio packets' ranges coalesced as
    reel coalesces them (gaps up to GAP fetched), and a slack; with the
    audio packets' own bytes."""
    coalesced, packets = audio_packet_bytes(path, until, GAP)
    return HEAD + moov_bytes(path) + coalesced + SLACK, packets


def decoder_window(src, t, remote=None):
    """The audio played while the frames of [t, t + 1) s are shown (16 kHz
    mono), and the bytes and requests that the audio added to a decoder's."""
    frames = list(range(int(t * 25), int(t * 25) + 25))
    kw = {"remote": remote} if remote else {}
    with reel.VideoDecoder(str(src), **kw) as d:
        d.get_frames_at(frames[:1])
        video = dict(d.remote_stats)
    with reel.VideoDecoder(str(src), audio=MONO16K, **kw) as d:
        d.get_frames_at(frames[:1])
        a = np.asarray(d.get_audio_for_frames(frames).data).copy()
        both = dict(d.remote_stats)
    return a, both["bytes_fetched"] - video["bytes_fetched"], both["requests"] - video["requests"]


def test_a_window_at_55_s_fetches_its_audio_packets_not_the_file(long_mp4):
    size = long_mp4.stat().st_size
    late, _, _ = decoder_window(long_mp4, 55.0)
    early, _, _ = decoder_window(long_mp4, 5.0)
    with nginx(long_mp4.parent) as base:
        url = f"{base}/long.mp4"
        got_late, late_bytes, late_requests = decoder_window(url, 55.0, REMOTE)
        got_early, early_bytes, _ = decoder_window(url, 5.0, REMOTE)
        # default settings by ranges: the runs within 256 KiB come in one request, no byte twice
        got_default, default_bytes, default_requests = decoder_window(url, 55.0, {"whole_object_max": 0})
    assert np.array_equal(got_late, late) and np.array_equal(got_early, early) and late.shape == (1, 16000)
    assert np.array_equal(got_default, late)
    bound, audio = audio_fetch_bound(long_mp4, 57.0)  # the window's end and a second of the decoder's delay
    assert late_bytes <= bound and late_bytes < 0.4 * size, (late_bytes, bound, audio, size)
    assert audio > 0.2 * size  # the audio is a real share of the file: the bound is not trivial
    assert late_requests > 100  # the video's frames between the packets are skipped, a request per run
    bound5, _ = audio_fetch_bound(long_mp4, 7.0)
    assert early_bytes <= bound5 and early_bytes < size / 10, (early_bytes, bound5, size)
    # the whole span up to the window in a few requests, read once (no second pass at the reopen from a0)
    assert default_requests < 10 and default_bytes < size, (default_bytes, default_requests, size)


def test_the_loader_counts_the_video_and_its_audio_packets(long_mp4):
    kw = dict(frames_per_clip=8, size=32, batch_size=1, shuffle=False, epochs=1, decode_threads=1)

    def run(src, audio, **more):
        with reel.Loader([(src, 0, 55.0, 57.0)], audio=audio, **kw, **more) as ld:
            (b,) = list(ld)
            return np.asarray(b.audio).copy() if audio else None, ld.metrics()["remote"]

    local, _ = run(str(long_mp4), MONO16K)
    with nginx(long_mp4.parent) as base:
        _, video = run(f"{base}/long.mp4", None, remote=REMOTE)
        got, both = run(f"{base}/long.mp4", MONO16K, remote=REMOTE)
    assert np.array_equal(got, local) and got.shape[-1] > 0
    bound, _ = audio_fetch_bound(long_mp4, 58.0)
    size = long_mp4.stat().st_size
    assert both["bytes_fetched"] <= video["bytes_fetched"] + bound, (both, video, bound)
    assert both["bytes_fetched"] < 0.5 * size and both["failures"] == 0, (both, size)


def test_over_s3_the_samples_are_the_files_and_the_bytes_the_audio_packets(long_mp4):
    pytest.importorskip("boto3")
    local, _, _ = decoder_window(long_mp4, 5.0)
    with moto_s3() as endpoint:
        env, s3 = moto_s3_user(endpoint, "reel")
        s3.create_bucket(Bucket="videos")
        s3.upload_file(str(long_mp4), "videos", "a/long.mp4")
        got, fetched, _ = _with_env(env, lambda: decoder_window("s3://videos/a/long.mp4", 5.0, REMOTE))
    assert np.array_equal(got, local)
    bound, _ = audio_fetch_bound(long_mp4, 7.0)
    assert 0 < fetched <= bound, (fetched, bound)


@pytest.mark.parametrize("name", ["karma.mp4", "nasa_13013.mp4", "mp4-init-nonkeyframe.mp4", "cockatoo.mp4",
                                  "fire2.mp4"])
def test_real_mp4s_by_their_audio_ranges_equal_the_files(shared_videos, name):
    """Real files read by their audio packets' ranges: data streams beside
    the audio (karma: GPMF, timecode), two AAC streams (nasa), an edit list
    that starts mid-GOP
    (mp4-init-nonkeyframe), MP3 restarted at marks by seeks (cockatoo), a
    phone's ~1 s chunks (fire2): the samples of windows at the end, the
    start and the middle, in that order, equal the file's."""
    path = shared_videos / name
    with reel.VideoDecoder(str(path), audio=True) as d:
        n = len(d)
        clips = [range(max(0, n - 10), n), range(0, min(8, n)), range(n // 2, min(n, n // 2 + 8))]
        want = [np.asarray(d.get_audio_for_frames(c).data).copy() for c in clips]
    with nginx(shared_videos) as base:
        with reel.VideoDecoder(f"{base}/{name}", audio=True, remote=REMOTE) as d:
            got = [np.asarray(d.get_audio_for_frames(c).data).copy() for c in clips]
            assert d.remote_stats["failures"] == 0
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.shape[1] > 0 and np.array_equal(g, w)


@pytest.mark.parametrize("stream", [None, 1, 4])
def test_a_chosen_audio_stream_of_two_is_the_files(shared_videos, stream):
    """nasa_13013.mp4 has two AAC streams: the best one (its probe reads
    every stream, as a local file's does, so that the choice is the same)
    and each one asked for by index (the probe reads it alone) give the
    Loader the local file's samples."""
    audio = dict(MONO16K, **({} if stream is None else {"stream_index": stream}))
    kw = dict(frames_per_clip=8, size=32, batch_size=1, shuffle=False, epochs=1, decode_threads=1)

    def run(src, **more):
        with reel.Loader([(src, 0, 8.0, 10.0)], audio=audio, **kw, **more) as ld:
            (b,) = list(ld)
            return np.asarray(b.audio).copy()

    local = run(str(shared_videos / "nasa_13013.mp4"))
    with nginx(shared_videos) as base:
        got = run(f"{base}/nasa_13013.mp4", remote=REMOTE)
    assert got.shape[-1] > 0 and np.array_equal(got, local)


def top_boxes(path):
    """(offset, type, size) of the file's top-level boxes."""
    data = path.read_bytes()
    at, out = 0, []
    while at + 8 <= len(data):
        size, kind = struct.unpack(">I4s", data[at:at + 8])
        if size == 1:
            size = struct.unpack(">Q", data[at + 8:at + 16])[0]
        out.append((at, kind.decode("latin-1"), size or len(data) - at))
        at += size if size else len(data)
    return out


WALK = 4096  # what the header walk fetches at each moof (audio_source.c: WALK_FIRST)


def test_a_fragmented_mp4s_audio_fetches_each_byte_about_once(long_mp4):
    """`-movflags frag_keyframe+empty_moov` (a moof + mdat per keyframe, an
    mfra at the end): the demuxer walks every moof while opening. The
    audio's open fetches each moof (WALK bytes, not readahead's 256 KiB
    around it) and keeps what it read for the reopens from a0, so a window
    at 55 s fetches the file's bytes up to the window's end once, and the
    walk: at most the bytes up to the window's end (default settings: the
    runs' gaps fetched) + the open's first request (256 KiB) + WALK per
    moof + a slack; with readahead_min 256 B
    the header, WALK per moof and the audio packets' coalesced runs (before:
    11.5 MB at 55 s for this 6.8 MB file, 5.9 MB at 5 s). The samples equal
    the local file's."""
    frag = long_mp4.parent / "frag.mp4"
    if not frag.exists():
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(long_mp4), "-c", "copy", "-movflags",
                        "frag_keyframe+empty_moov", str(frag)], check=True)
    boxes = top_boxes(frag)
    moofs = [b for b in boxes if b[1] == "moof"]
    assert len(moofs) >= 50 and boxes[-1][1] == "mfra"  # a fragment a second
    size = frag.stat().st_size
    late, _, _ = decoder_window(frag, 55.0)
    early, _, _ = decoder_window(frag, 5.0)
    with nginx(frag.parent) as base:
        url = f"{base}/frag.mp4"
        got_late, late_bytes, late_requests = decoder_window(url, 55.0, {"whole_object_max": 0})
        got_early, early_bytes, _ = decoder_window(url, 5.0, {"whole_object_max": 0})
        got_small, small_bytes, _ = decoder_window(url, 55.0, REMOTE)
    assert np.array_equal(got_late, late) and np.array_equal(got_early, early) and late.shape == (1, 16000)
    assert np.array_equal(got_small, late)
    walk = len(moofs) * WALK

    def upto(t):  # the file's bytes up to the last audio packet before t
        r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time,pos,size",
                            "-of", "csv=p=0", str(frag)], capture_output=True, text=True, check=True)
        return max(int(p) + int(s) for tt, s, p in (ln.split(",")[:3] for ln in r.stdout.split()) if float(tt) <= t)

    head = 256 << 10  # the open's first request: readahead_min's bytes at 0 (the runs fetch them again)
    assert late_bytes <= upto(57.0) + head + walk + SLACK and late_bytes < 1.2 * size, (late_bytes, size)
    assert early_bytes <= upto(7.0) + head + walk + SLACK and early_bytes < size / 3, (early_bytes, size)
    assert late_requests <= len(moofs) + 8, late_requests  # a request a moof, and the runs' few
    bound, audio = audio_fetch_bound(frag, 57.0)
    assert small_bytes <= bound + walk and small_bytes < 0.4 * size, (small_bytes, bound, walk, size)


def test_a_webms_video_reads_the_file_once_to_index_it_and_its_gop_once_indexed(long_mp4, monkeypatch, tmp_path):
    """A WebM (VP8 + Opus, by the ffmpeg CLI; its Cues at the end) over
    http: a frame at 5 s reads the whole file once, no more (reel's packet
    scan for the exact frame table: every frame's timestamp is in its
    block, inside the clusters; libavformat reads the header and, at the
    first seek, the Cues); with the index cached (REEL_INDEX_CACHE, the
    second open) it reads the header, the Cues and the GOP's cluster: two
    requests of readahead_min and the Cues. The pixels equal the local
    file's."""
    webm = long_mp4.parent / "long.webm"
    if not webm.exists():
        subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(long_mp4), "-t", "30", "-c:v", "libvpx",
                        "-deadline", "realtime", "-cpu-used", "8", "-g", "25", "-b:v", "400k", "-c:a", "libopus",
                        "-b:a", "128k", str(webm)], check=True)
    size = webm.stat().st_size
    with reel.VideoDecoder(str(webm)) as d:
        want = np.asarray(d.get_frames_at([125])).copy()
    monkeypatch.setenv("REEL_INDEX_CACHE", str(tmp_path / "cache"))
    fetched = []
    with nginx(webm.parent) as base:
        for mode in (False, True, True):  # no index; the first open writes it; the second reads it
            with reel.VideoDecoder(f"{base}/long.webm", remote={"whole_object_max": 0}, index_mode=mode) as d:
                got = np.asarray(d.get_frames_at([125])).copy()
                fetched.append((d.remote_stats["bytes_fetched"], d.remote_stats["requests"]))
            assert np.array_equal(got, want)
    assert all(size <= b <= size + (256 << 10) for b, _ in fetched[:2]), (fetched, size)
    # the header's first request and the GOP's cluster (readahead_min, 256 KiB, each) and the Cues
    assert fetched[2][0] <= 2 * (256 << 10) + SLACK and fetched[2][0] < 0.3 * size and fetched[2][1] <= 5, fetched
