"""Windows of AAC audio resampled to another rate (issue 28), asked in random
order, in reverse, at a0 and at the stream's end, equal the ffmpeg CLI's
whole-stream resample bit for bit where the resampler's alignment (native /
gcd(native, rate)) differs: 48 kHz to 16 kHz (3), 44.1 kHz to 16 kHz (441),
48 kHz to 22.05 kHz (320), mono and stereo; with the cache (one decode from
a0), too small for the stream, or none (each window from a0, its resampler
restarted on an aligned index 10 ms before it, set up again with its filter
kept)."""
from __future__ import annotations

import random
import shutil
import subprocess

import numpy as np
import pytest

import reel
from audio_clips import cli_samples, cut_interleaved

pytestmark = pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI")

FPS = 25
SECONDS = 8
TONES = "0.3*sin(2*PI*300*t)+0.1*random(0)|0.2*sin(2*PI*520*t)+0.1*random(1)"
RATES = [(48000, 16000, 1), (44100, 16000, 1), (48000, 22050, 2)]
IDS = ["48k-16k-mono", "44k1-16k-mono", "48k-22k05-stereo"]


def _make(tmp_path, rate):
    """SECONDS s at 25 fps with stereo AAC at `rate` over tones and noise (the
    encoder uses noise substitution: decoded from a0)."""
    out = str(tmp_path / f"noisy{rate}.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                    f"testsrc2=size=64x48:rate={FPS}:duration={SECONDS}", "-f", "lavfi", "-i",
                    f"aevalsrc={TONES}:s={rate}:d={SECONDS}", "-map", "0:v", "-map", "1:a", "-c:v", "libx264",
                    "-preset", "ultrafast", "-g", "50", "-c:a", "aac", "-b:a", "128k", out], check=True)
    return out


@pytest.mark.parametrize("cache", [None, 64 << 10, 0], ids=["cache", "small", "none"])
@pytest.mark.parametrize("native,rate,channels", RATES, ids=IDS)
def test_windows_in_any_order_equal_the_whole_stream_resample(tmp_path, native, rate, channels, cache):
    path = _make(tmp_path, native)
    af = (",pan=mono|c0=0.5*c0+0.5*c1" if channels == 1 else "") + f",aresample={rate}"
    ref = cli_samples(path, af)
    total = SECONDS * FPS
    rng = random.Random(native + rate)
    starts = [rng.randrange(0, total - 16) for _ in range(10)] + [0, total - 16]
    rng.shuffle(starts)
    audio = {"sample_rate": rate, **({"channels": 1} if channels == 1 else {})}  # else the stream's two
    if cache is not None:
        audio["cache_bytes"] = cache
    with reel.VideoDecoder(path, audio=audio) as dec:
        first = {}
        for k, order in enumerate((starts, starts[::-1])):
            for s in order:
                a = dec.get_audio_for_frames(range(s, s + 16))
                got = np.asarray(a.data)
                want = cut_interleaved(ref, channels, a.first_sample, a.num_samples)
                assert got.shape == want.shape
                assert np.array_equal(got, want), (s, k, float(np.abs(got - want).max()))
                first.setdefault(s, a.first_sample)
                assert a.first_sample == first[s]
        # a window at the stream's end: its last samples are the resampler's flush
        end = dec.get_audio_played_in_range(SECONDS - 0.5, SECONDS + 0.5)
        want = cut_interleaved(ref, channels, end.first_sample, end.num_samples)
        assert np.array_equal(np.asarray(end.data), want)
        assert end.valid[1] == len(ref) // channels - end.first_sample  # the stream's end, to the sample
        stats = dec.audio_stats
    if cache is None:  # the default holds it all: one decode from a0
        assert stats["runs_from_a0"] == 1 and stats["windows_cached"] >= len(starts), stats
        assert 0 < stats["cache_peak_bytes"] <= 8 << 20, stats
    else:
        assert stats["runs_from_a0"] > 1 and stats["cache_peak_bytes"] <= cache, stats
