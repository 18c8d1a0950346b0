"""The audio object's cache (reel_audio_settings.cache_bytes): windows read in
any order give the ffmpeg CLI's samples, the same with the cache on, off or
too small to hold them; with it, AAC (noise substitution: decoded from a0)
decodes from a0 once; its bytes never pass the bound."""
from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest

import reel
from audio_clips import MONO16K, NATIVE, cut, reference

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

FPS = 25


@pytest.fixture(scope="module")
def noisy(tmp_path_factory):
    """6 s at 25 fps, 48 kHz stereo AAC over tones and noise (the encoder
    uses noise substitution, whose generator no seek resets)."""
    out = tmp_path_factory.mktemp("cache") / "noisy.mp4"
    tones = "0.3*sin(2*PI*300*t)+0.1*random(0)|0.2*sin(2*PI*520*t)+0.1*random(1)"
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                    "testsrc2=size=64x48:rate=25:duration=6", "-f", "lavfi", "-i", f"aevalsrc={tones}:s=48000:d=6",
                    "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", "50",
                    "-c:a", "aac", "-b:a", "128k", str(out)], check=True)
    return str(out)


def _clips(seed=28, n=12, frames=16, total=150):
    rng = random.Random(seed)
    return [rng.randrange(0, total - frames) for _ in range(n)]


@pytest.mark.parametrize("settings", [MONO16K, NATIVE], ids=["16k-mono", "native"])
def test_any_order_equals_the_cli_with_the_cache_on_off_and_small(noisy, settings):
    ref = reference(noisy, settings)
    own = MONO16K if settings is MONO16K else {}  # VideoDecoder's native: the stream's rate and channels
    starts = _clips()
    got = {}
    stats = {}
    for cache in (None, 0, 64 << 10):
        audio = dict(own, **({} if cache is None else {"cache_bytes": cache}))
        with reel.VideoDecoder(noisy, audio=audio) as dec:
            out = []
            for s in starts:
                a = dec.get_audio_for_frames(range(s, s + 16))
                x = np.asarray(a.data).copy()
                assert np.abs(x - cut(ref, a.first_sample, a.num_samples)).max() <= 1e-6, (cache, s)
                out.append(x)
            got[cache] = out
            stats[cache] = dec.audio_stats
    for k in (0, 64 << 10):  # the same samples, bit for bit
        assert all(np.array_equal(x, y) for x, y in zip(got[None], got[k]))
    on, off, small = stats[None], stats[0], stats[64 << 10]
    assert on["windows"] == off["windows"] == len(starts)
    assert on["runs_from_a0"] == 1 and on["windows_cached"] >= 4, on
    assert off["runs_from_a0"] > 4 and off["windows_cached"] == 0 and off["cache_peak_bytes"] == 0, off
    assert 0 < small["cache_peak_bytes"] <= 64 << 10, small
    assert 0 < on["cache_peak_bytes"] <= 8 << 20 and on["cache_bytes"] <= on["cache_peak_bytes"], on


def test_a_window_just_before_a_restart_is_exact(noisy):
    """A window that starts within the resampler's first 10 ms after a
    restart: those samples are not a whole-stream resample's, so they are
    decoded again, not served from the history."""
    ref = reference(noisy, MONO16K)
    for cache in (0, None):
        audio = dict(MONO16K, **({} if cache is None else {"cache_bytes": cache}))
        with reel.VideoDecoder(noisy, audio=audio) as dec:
            dec.get_audio_played_in_range(3.0, 3.5)
            for t in (2.9900, 2.9902, 2.9905):  # after the old history's start (2.98994 s), before 2.9909
                a = dec.get_audio_played_in_range(t, 3.5)
                assert np.abs(np.asarray(a.data) - cut(ref, a.first_sample, a.num_samples)).max() <= 1e-6, (cache, t)


def test_a_negative_cache_is_refused_by_name(noisy):
    with pytest.raises(reel.ReelError, match="noisy.mp4: audio cache_bytes -1") as e:
        with reel.VideoDecoder(noisy, audio={"cache_bytes": -1}) as dec:
            dec.get_audio_for_frames(range(0, 4))
    assert e.value.status == reel._reel.STATUS["INVALID_ARG"]
