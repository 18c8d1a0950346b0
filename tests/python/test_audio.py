"""VideoDecoder's audio (reel/audio.h) against the ffmpeg CLI, and in sync
by content: the test's video shows frame i's index in its pixels (synth) and
its audio holds a click at frame i's time, so the audio for a clip's frames
must hold exactly those clicks."""
from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import reel
import reel._testing
from audio_clips import cli_samples as _cli
from audio_clips import cut_interleaved as _cut
from conftest import read_indices

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

FPS, RATE = 25, 48000


def _with_clicks(tmp_path, codec="aac", rate=RATE, ext="mp4"):
    """synth's 100 frames at 25 fps with a 1 ms click (amplitude 0.9) at the
    start of every 5th frame over a quiet tone: the clicks mark the frames."""
    video = tmp_path / "v.mp4"
    reel._testing.write_video(str(video), width=160, height=120, frames=100, gop=25, seed=3)  # 25 fps
    expr = f"0.9*lt(mod(t\\,{5 / FPS})\\,0.001)+0.01*sin(2*PI*300*t)"
    out = tmp_path / f"av.{ext}"
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(video), "-f", "lavfi", "-i",
                    f"aevalsrc={expr}|{expr}:s={rate}:d=4", "-map", "0:v", "-map", "1:a", "-c:v", "copy",
                    "-c:a", codec, "-b:a", "192k", str(out)], check=True)
    return str(out)


def test_the_audio_of_a_clip_equals_the_cli_and_holds_its_frames_clicks(tmp_path):
    path = _with_clicks(tmp_path)
    ref = _cli(path)
    with reel.VideoDecoder(path, audio=True, layout="HWC") as dec:
        meta = dec.audio_metadata
        assert meta["codec"] == "aac" and meta["sample_rate"] == RATE and meta["channels"] == 2
        for first in (40, 0, 85, 17):  # any order
            idx = list(range(first, first + 10))
            frames = dec.get_frames_at(idx)
            assert read_indices(frames) == idx
            a = dec.get_audio_for_frames(idx)
            got = np.asarray(a.data)
            assert got.shape == (2, a.num_samples) == (2, 10 * RATE // FPS)
            assert a.first_sample == first * RATE // FPS
            assert np.abs(got - _cut(ref, 2, a.first_sample, a.num_samples)).max() <= 1e-6
            assert a.valid == (0, a.num_samples)
            # sync by content: the clicks fall on frames first, first+5 (those divisible by 5)
            peaks = np.flatnonzero(np.abs(got[0]) > 0.5)
            marked = sorted({(a.first_sample + int(p)) * FPS // RATE for p in peaks})
            assert marked == [i for i in idx if i % 5 == 0]


def test_16k_mono_equals_the_cli_and_adjacent_clips_tile(tmp_path):
    path = _with_clicks(tmp_path)
    ref = _cli(path, ",pan=mono|c0=0.5*c0+0.5*c1,aresample=16000")
    with reel.VideoDecoder(path, audio={"sample_rate": 16000, "channels": 1}) as dec:
        a = dec.get_audio_for_frames(range(0, 8))
        b = dec.get_audio_for_frames(range(8, 16))
        assert a.first_sample + a.num_samples == b.first_sample
        for s in (a, b):
            got = np.asarray(s.data)
            assert got.shape[0] == 1 and s.sample_rate == 16000
            assert np.abs(got - _cut(ref, 1, s.first_sample, s.num_samples)).max() <= 1e-6
        t = dec.get_audio_played_in_range(1.0, 1.5)
        assert t.first_sample == 16000 and t.num_samples == 8000


def test_missing_audio_is_named_or_zeros_and_bad_settings_are_refused(tmp_path):
    video = tmp_path / "silent.mp4"
    reel._testing.write_video(str(video), width=64, height=48, frames=10, gop=5)
    with pytest.raises(reel.ReelError, match="silent.mp4: no audio stream") as e:
        reel.VideoDecoder(str(video), audio=True)
    assert e.value.status == reel._reel.STATUS["NO_AUDIO_STREAM"]
    with reel.VideoDecoder(str(video), audio={"missing": "zeros", "sample_rate": 8000}) as dec:
        a = dec.get_audio_for_frames([0, 1])
        assert np.asarray(a.data).shape == (1, 8000 * 2 // 25) and not np.asarray(a.data).any()
        assert a.valid[0] == a.valid[1]
    with pytest.raises(ValueError, match="channels 2"):
        reel.VideoDecoder(str(video), audio={"channels": 2, "missing": "zeros", "sample_rate": 8000})
    with pytest.raises(ValueError, match="unknown audio setting"):
        reel.VideoDecoder(str(video), audio={"rate": 8000})
    path = _with_clicks(tmp_path)
    with pytest.raises(ValueError, match="sample_rate 2000000"):
        reel.VideoDecoder(path, audio={"sample_rate": 2_000_000})
    with reel.VideoDecoder(path) as dec:
        far = dec.get_audio_played_in_range(100.0, 100.5)
        assert far.valid[0] == far.valid[1] and not np.asarray(far.data).any()


def test_reel_info_lists_the_audio_stream(tmp_path):
    import json
    import os

    cli = os.environ.get("REEL_CLI")
    if not cli or not os.path.exists(cli):
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    path = _with_clicks(tmp_path, codec="libmp3lame", rate=44100)
    d = json.loads(subprocess.run([cli, "info", "--json", path], check=True, capture_output=True, text=True).stdout)
    assert d["has_audio"] is True
    assert d["audio"]["codec"] == "mp3" and d["audio"]["sample_rate"] == 44100 and d["audio"]["channels"] == 2
    with reel.VideoDecoder(path) as dec:
        assert abs(d["audio"]["start_time"] - dec.audio_metadata["start_seconds"]) < 1e-6
    silent = tmp_path / "silent.mp4"
    reel._testing.write_video(str(silent), width=64, height=48, frames=5, gop=5)
    d = json.loads(subprocess.run([cli, "info", "--json", str(silent)], check=True, capture_output=True,
                                  text=True).stdout)
    assert d["audio"] is None and d["audio_note"] == "no audio stream"
