# tests/python/test_ffmpeg_log.py: FFmpeg's log goes through reel: decodes whose
# output is thrown away (the keyframe probe, stream probing, a run given up on
# an unclean keyframe) print nothing, and what is shown names the file.
from __future__ import annotations

import random
import subprocess
import sys

import pytest

import reel._testing


def _stderr_of(code: str) -> str:
    """Runs code in a fresh interpreter at FFmpeg's default log level (the
    test session sets it to quiet) and returns its stderr."""
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    return p.stderr


@pytest.mark.parametrize("threads", [1, 2])
def test_thrown_away_decodes_are_silent(shared_videos, threads):
    """cockatoo.mp4's IDRs at 76 and 145 decode with errors when decoding
    starts there (the probe under frame threads, the main codec's first run on
    one thread); reel then decodes through them from an earlier keyframe, and
    every frame it returns is exact. FFmpeg's concealment messages from the
    runs it threw away used to reach the terminal."""
    p = shared_videos / "cockatoo.mp4"
    if not p.exists():
        pytest.skip("cockatoo.mp4 not in the shared videos")
    err = _stderr_of(
        "import reel\n"
        f"for i in (145, 200, 279):\n"
        f"    with reel.VideoDecoder({str(p)!r}, threads={threads}) as d:\n"
        "        d.get_frames_at([i])\n"
        "        assert d.stats.key_restarts >= 1, d.stats\n")
    assert "concealing" not in err and "error while decoding" not in err, err


def test_shown_messages_name_the_file(tmp_path):
    """Damage that a kept decode runs into is shown, once per message, as
    [h264 @ <file>] rather than FFmpeg's [h264 @ 0x...]."""
    good, bad = tmp_path / "good.mp4", tmp_path / "damaged_clip.mp4"
    reel._testing.write_video(str(good), width=128, height=96, frames=48, gop=12)
    b = bytearray(good.read_bytes())
    rng = random.Random(1)
    for k in range(len(b) // 2, len(b) // 2 + 200):
        b[k] = rng.randrange(256)
    bad.write_bytes(bytes(b))
    err = _stderr_of(
        "import reel\n"
        f"with reel.VideoDecoder({str(bad)!r}, corrupt_policy='skip', threads=1) as d:\n"
        "    d.get_frames_at(list(range(len(d))))\n")
    lines = [ln for ln in err.splitlines() if ln.startswith("[h264 @")]
    assert lines, err
    assert all(ln.startswith(f"[h264 @ {bad}] ") for ln in lines), lines
