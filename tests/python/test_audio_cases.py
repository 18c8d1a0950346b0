"""VideoDecoder's audio (reel/audio.h) on the issue's harder files, each held
to the ffmpeg CLI (`-af aresample=async=1:min_hard_comp=0`, then a mono mix
and a 16 kHz resample) cut at the window's first sample, in order, in
reverse and shuffled on one decoder (whose decode goes on or restarts):
29.97 fps with 44.1 kHz AAC, Matroska audio 0.25 s late, mono audio that
starts before the video and ends before it, VFR, a 45 ms timestamp jump
without an edit list, 8 channels to 1; `reel frames --audio`; files with a
rate of 0 or 2 MHz or 65 channels, flipped bytes in the audio, a window far
past the end."""
from __future__ import annotations

import json
import os
import random
import shutil
import struct
import subprocess
from fractions import Fraction

import numpy as np
import pytest

import reel
from audio_clips import cli_samples as _cli
from audio_clips import cut_interleaved as _cut

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

MONO16 = ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000"
TONES = "0.5*sin(2*PI*440*t)+0.02*random(0)|0.3*sin(2*PI*660*t)"


def _ff(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", *args], check=True)


def _make(tmp_path, name, video_args, audio_args, codec_args, seconds=10, fps="25", tones=TONES, rate=48000):
    out = str(tmp_path / name)
    _ff(*video_args, "-f", "lavfi", "-i", f"testsrc2=size=64x48:rate={fps}:duration={seconds}",
        *audio_args, "-f", "lavfi", "-i", f"aevalsrc={tones}:s={rate}:d={seconds}",
        "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "25", *codec_args, out)
    return out


def _check(path, audio, af, clips, tol=1e-6):
    """Every clip's audio equals the CLI's, with `valid` saying where the
    stream is; the same samples in reverse and shuffled order; returns the
    clips' AudioSamples in order."""
    ref = _cli(path, af)
    with reel.VideoDecoder(path, audio=audio) as dec:
        ch = dec.audio_metadata["channels"]
        r = dec.audio_metadata["sample_rate"]
        n_ref = len(ref) // ch
        got = {}
        orders = [list(range(len(clips))), list(range(len(clips)))[::-1]]
        shuffled = list(range(len(clips)))
        random.Random(7).shuffle(shuffled)
        orders.append(shuffled)
        for k, order in enumerate(orders):
            for i in order:
                a = dec.get_audio_for_frames(clips[i])
                data = np.asarray(a.data)
                assert data.shape == (ch, a.num_samples) and a.sample_rate == r
                want = _cut(ref, ch, a.first_sample, a.num_samples)
                d = float(np.abs(data - want).max()) if a.num_samples else 0.0
                assert d <= tol, f"{path} clip {i} (order {k}): first {a.first_sample} + {a.num_samples}: {d}"
                lo, hi = max(0, -a.first_sample), min(a.num_samples, n_ref - a.first_sample)
                if hi > lo:
                    assert a.valid == (lo, hi), (a.valid, lo, hi)
                if k == 0:
                    got[i] = (a, data.copy())
                else:
                    assert a.first_sample == got[i][0].first_sample
                    assert np.array_equal(data, got[i][1]), f"clip {i}: order {k} differs from the first"
        return [got[i][0] for i in range(len(clips))]


def _clips(n_frames, length=8, count=12, seed=3):
    rng = random.Random(seed)
    starts = sorted({0, n_frames - length} | {rng.randrange(0, n_frames - length) for _ in range(count)})
    return [list(range(s, s + length)) for s in starts]


def test_aac_44k1_at_29_97_fps(tmp_path):
    path = _make(tmp_path, "ntsc.mp4", [], [], ["-c:a", "aac"], fps="30000/1001", rate=44100)
    with reel.VideoDecoder(path) as dec:
        assert dec.metadata.time_base == Fraction(1, 30000) or dec.metadata.average_fps == pytest.approx(29.97, 1e-3)
        clips = _clips(len(dec))
    got = _check(path, True, "", clips)
    # adjacent clips tile: frames 0-7 then 8-15
    _check(path, {"sample_rate": 16000, "channels": 1}, MONO16, clips + [list(range(8, 16))])
    assert got[0].first_sample == 0


@pytest.mark.parametrize("codec", [["-c:a", "libopus", "-b:a", "96k"], ["-c:a", "aac"]], ids=["opus", "aac"])
def test_matroska_audio_a_quarter_second_late(tmp_path, codec):
    path = _make(tmp_path, "late.mkv", [], ["-itsoffset", "0.25"], codec)
    with reel.VideoDecoder(path, audio=True) as dec:
        a0 = dec.audio_metadata["start_seconds"]
        assert 0.2 < a0 < 0.3, a0  # the file's own timestamps
        clips = _clips(len(dec))
        first = dec.get_audio_for_frames(range(0, 4))  # 0 .. 0.16 s: before a0, zeros
        assert first.valid[0] == first.valid[1] and not np.asarray(first.data).any()
    _check(path, True, "", clips)
    _check(path, {"sample_rate": 16000, "channels": 1}, MONO16, clips)


def test_mono_audio_starting_before_the_video_and_ending_before_it(tmp_path):
    # the video 0.2 s late (an mp4 empty edit on its track), the audio 0.7 s shorter
    path = str(tmp_path / "early.mp4")
    _ff("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=6",
        "-f", "lavfi", "-i", "aevalsrc=0.5*sin(2*PI*330*t):s=48000:d=5.5", "-map", "0:v", "-map", "1:a",
        "-vf", "setpts=PTS+0.2/TB", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", path)
    with reel.VideoDecoder(path, audio=True) as dec:
        m = dec.metadata
        assert dec.audio_metadata["channels"] == 1
        assert m.begin_stream_seconds == pytest.approx(0.2, abs=0.01)
        assert abs(dec.audio_metadata["start_seconds"]) < 0.03
        clips = _clips(len(dec))
        last = dec.get_audio_for_frames(range(len(dec) - 8, len(dec)))  # 5.88 .. 6.2 s: past the audio's end
        assert last.valid == (0, 0) or last.valid[1] == last.valid[0]
        assert not np.asarray(last.data).any()
        # the clip over the audio's end: valid up to it, zeros after
        mid = dec.get_audio_for_frames(range(125, 140))  # 5.2 .. 5.8 s
        lo, hi = mid.valid
        assert lo == 0 and 0 < hi < mid.num_samples and not np.asarray(mid.data)[:, hi:].any()
    got = _check(path, True, "", clips)
    assert got[0].first_sample == pytest.approx(0.2 * 48000, abs=48 * 30)
    _check(path, {"sample_rate": 16000}, ",aresample=16000", clips)


def test_vfr(tmp_path):
    # frames 1/25 s apart, with a 0.5 s pause after every 10th
    path = str(tmp_path / "vfr.mp4")
    _ff("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=8", "-f", "lavfi", "-i",
        f"aevalsrc={TONES}:s=48000:d=14", "-map", "0:v", "-map", "1:a",
        "-vf", "setpts=(N+floor(N/10)*12.5)/25/TB", "-vsync", "vfr",
        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "libmp3lame", "-b:a", "128k", path)
    with reel.VideoDecoder(path) as dec:
        pts = [dec.metadata.time_base * p for p in dec._frame_table()[0]]
        gaps = [float(b - a) for a, b in zip(pts, pts[1:])]
        assert min(gaps) == pytest.approx(0.04, abs=0.005) and max(gaps) > 0.5, gaps
        clips = _clips(len(dec), length=12)
    got = _check(path, True, "", clips)
    # a clip over a pause spans it: its window is [first pts, last pts + duration)
    assert any(a.num_samples > 12 * 48000 // 25 for a in got)
    _check(path, {"sample_rate": 16000, "channels": 1}, MONO16, clips)


def test_aac_jumping_45_ms_without_an_edit_list(tmp_path):
    path = _make(tmp_path, "jump.mp4", [], [], ["-af", "asetpts=PTS+gte(T\\,4)*0.045/TB", "-c:a", "aac",
                                                "-use_editlist", "0"])
    probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time",
                            "-of", "csv=p=0", path], check=True, capture_output=True, text=True).stdout.split()
    steps = np.diff([float(x) for x in probe])
    assert steps.max() == pytest.approx(1024 / 48000 + 0.045, abs=1e-3)  # the jump is in the file
    with reel.VideoDecoder(path) as dec:
        clips = _clips(len(dec)) + [list(range(96, 104))]  # over the jump at 4 s
    _check(path, True, "", clips)
    _check(path, {"sample_rate": 16000, "channels": 1}, MONO16, clips)


def test_eight_channels_mixed_to_one(tmp_path):
    tones = "|".join(f"0.1*sin(2*PI*{200 + 100 * c}*t)" for c in range(8))
    path = _make(tmp_path, "eight.mkv", [], [], ["-c:a", "flac", "-channel_layout", "7.1"], tones=tones, seconds=6)
    pan = ",pan=mono|c0=" + "+".join(f"0.125*c{c}" for c in range(8))
    with reel.VideoDecoder(path) as dec:
        assert dec.audio_metadata["native_channels"] == 8
        clips = _clips(len(dec), count=6)
    _check(path, {"channels": 1}, pan, clips)
    _check(path, {"channels": 1, "sample_rate": 16000}, pan + ",aresample=16000", clips)


def test_reel_frames_audio_equals_the_cli(tmp_path):
    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    path = _make(tmp_path, "v.mp4", [], [], ["-c:a", "aac"], fps="30000/1001", rate=44100, seconds=6)
    out = tmp_path / "a.f32"
    for extra, af, ch in (([], "", 2), (["--audio-rate", "16000", "--audio-channels", "1"], MONO16, 1)):
        res = subprocess.run([cli, "frames", path, "--at", "60,61,62,59", "--raw", os.devnull, "--audio", str(out),
                              "--stats", *extra], check=True, capture_output=True, text=True)
        line = [x for x in res.stderr.splitlines() if x.startswith("audio:")][0]
        first = int(line.split("first sample ")[1].split(",")[0])
        got = np.fromfile(out, dtype=np.float32).reshape(-1, ch).T
        with reel.VideoDecoder(path, audio={"sample_rate": 16000, "channels": 1} if ch == 1 else True) as dec:
            a = dec.get_audio_for_frames([59, 60, 61, 62])
        assert first == a.first_sample and got.shape == (ch, a.num_samples)
        assert np.array_equal(got, np.asarray(a.data))
        assert np.abs(got - _cut(_cli(path, af), ch, first, got.shape[1])).max() <= 1e-6
    res = subprocess.run([cli, "frames", path, "--at", "1", "--raw", os.devnull, "--audio", str(out),
                          "--audio-channels", "2"], capture_output=True, text=True)
    assert res.returncode != 0 and "channels 2" in res.stderr


def _mkv_pcm(tmp_path):
    path = str(tmp_path / "pcm.mkv")
    _ff("-f", "lavfi", "-i", "testsrc2=size=64x48:rate=25:duration=2", "-f", "lavfi", "-i",
        "aevalsrc=0.5*sin(2*PI*440*t)|0.1:s=48000:d=2", "-map", "0:v", "-map", "1:a",
        "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "pcm_s16le", path)
    return open(path, "rb").read()


@pytest.mark.parametrize("case", ["rate0", "rate2m", "channels65"])
def test_impossible_rates_and_channel_counts_are_refused_by_name(tmp_path, case):
    data = _mkv_pcm(tmp_path)
    rate = b"\xb5\x88" + struct.pack(">d", 48000.0)  # Matroska SamplingFrequency
    chans = b"\x9f\x81\x02"  # Matroska Channels
    assert data.count(rate) == 1 and data.count(chans) == 1
    new = {"rate0": data.replace(rate, b"\xb5\x88" + struct.pack(">d", 0.0)),
           "rate2m": data.replace(rate, b"\xb5\x88" + struct.pack(">d", 2e6)),
           "channels65": data.replace(chans, b"\x9f\x81\x41")}[case]
    bad = tmp_path / f"{case}.mkv"
    bad.write_bytes(new)
    why = {"rate0": "sample rate 0 Hz out of range", "rate2m": "sample rate 2000000 Hz out of range",
           "channels65": "65 channels out of range"}[case]
    with pytest.raises(reel.ReelError, match=f"{case}.mkv: audio stream 1: {why}"):
        reel.VideoDecoder(str(bad), audio=True)
    with reel.VideoDecoder(str(bad)) as dec:  # the video alone still decodes
        assert len(dec.get_frames_at([0, 1])) == 2


def test_flipped_bytes_in_the_audio_are_an_error_or_equal_the_cli(tmp_path):
    path = _make(tmp_path, "flip.mp4", [], [], ["-c:a", "aac"], seconds=8)
    pk = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pos,size,pts_time",
                         "-of", "json", path], check=True, capture_output=True, text=True).stdout
    packets = json.loads(pk)["packets"]
    data = bytearray(open(path, "rb").read())
    hit = [p for p in packets if 4.0 <= float(p["pts_time"]) < 4.5]
    for p in hit:  # the middle of each packet from 4 s to 4.5 s inverted
        pos, size = int(p["pos"]), int(p["size"])
        for k in range(pos + size // 4, pos + size * 3 // 4):
            data[k] ^= 0xFF
    bad = tmp_path / "flipped.mp4"
    bad.write_bytes(bytes(data))
    ref = _cli(str(bad))  # the CLI skips what it cannot decode; reel says so
    errors = 0
    with reel.VideoDecoder(str(bad), audio=True) as dec:
        for s in (0, 50, 90, 100, 110, 150, 180, 40):  # 40 after the rest: a restart from a0
            try:
                a = dec.get_audio_for_frames(range(s, s + 8))
            except reel.ReelError as e:
                assert "flipped.mp4" in str(e) and "audio" in str(e)
                assert s + 8 > 100  # only a window at or after the damage fails
                errors += 1
                continue
            assert np.abs(np.asarray(a.data) - _cut(ref, 2, a.first_sample, a.num_samples)).max() <= 1e-6
    assert errors > 0


def test_a_window_far_past_the_end_is_zeros_and_valid_says_none(tmp_path):
    path = _make(tmp_path, "end.mkv", [], [], ["-c:a", "libopus"], seconds=3)
    with reel.VideoDecoder(path, audio={"sample_rate": 16000}) as dec:
        for _ in range(2):  # the second time the end is known without decoding
            a = dec.get_audio_played_in_range(3600.0, 3600.25)
            assert a.first_sample == pytest.approx((3600 - dec.audio_metadata["start_seconds"]) * 16000, abs=1)
            assert a.num_samples == 4000 and a.valid[0] == a.valid[1]
            assert not np.asarray(a.data).any()
        b = dec.get_audio_played_in_range(1.0, 1.25)  # and the stream is still there
        assert b.valid == (0, 4000) and np.asarray(b.data).any()


def test_audio_over_http_equals_local_and_reads_only_the_start(tmp_path):
    from servers import nginx

    www = tmp_path / "www"
    www.mkdir()
    # 60 s: a window near the start must not fetch the whole object
    _make(www, "long.mp4", [], [], ["-c:a", "aac", "-b:a", "192k"], seconds=60)
    _make(www, "long.mkv", [], [], ["-c:a", "libopus"], seconds=20)
    size = (www / "long.mp4").stat().st_size
    with nginx(www) as base:
        for name, clips in (("long.mp4", [range(25, 37)]), ("long.mkv", [range(400, 408), range(30, 38)])):
            url = f"{base}/{name}"
            with reel.VideoDecoder(str(www / name), audio={"sample_rate": 16000, "channels": 1}) as dec:
                local = [np.asarray(dec.get_audio_for_frames(c).data) for c in clips]
            remote = {"whole_object_max": 0, "readahead_max": 256 << 10}  # ranges, not the object
            with reel.VideoDecoder(url, remote=remote) as dec:
                video_only = dec.remote_stats["bytes_fetched"]
            with reel.VideoDecoder(url, audio={"sample_rate": 16000, "channels": 1}, remote=remote) as dec:
                got = [np.asarray(dec.get_audio_for_frames(c).data) for c in clips]
                stats = dec.remote_stats
            for a, b in zip(local, got):
                assert np.array_equal(a, b)
            # the audio reads through the decoder's object: what it fetches
            # beyond the decoder's bytes is counted (here at most the packets
            # up to the window: the start is held by the decoder's open)
            assert stats["bytes_fetched"] >= video_only and stats["failures"] == 0
            if name == "long.mp4":
                assert stats["bytes_fetched"] - video_only < size / 4, (stats["bytes_fetched"], video_only, size)
        with pytest.raises(reel.NotFoundError):
            reel.VideoDecoder(f"{base}/missing.mp4", audio=True)


def test_audio_over_s3_equals_local(tmp_path):
    pytest.importorskip("boto3")
    from servers import environ, moto_s3, moto_s3_user

    path = _make(tmp_path, "s3.mkv", [], [], ["-c:a", "libopus"], seconds=8)
    with moto_s3() as endpoint:
        env, s3 = moto_s3_user(endpoint, "reel")
        s3.create_bucket(Bucket="videos")
        s3.upload_file(path, "videos", "a/s3.mkv")
        clips = [range(150, 158), range(10, 18), range(100, 108)]  # the second restarts at a mark
        with reel.VideoDecoder(path, audio={"sample_rate": 16000}) as dec:
            want = [np.asarray(dec.get_audio_for_frames(c).data) for c in clips]
        with environ(env), reel.VideoDecoder("s3://videos/a/s3.mkv", audio={"sample_rate": 16000}) as dec:
            got = [np.asarray(dec.get_audio_for_frames(c).data) for c in clips]
            assert dec.remote_stats["requests"] > 0
    for a, b in zip(want, got):
        assert np.array_equal(a, b)
