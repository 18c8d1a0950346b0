"""reel.vlm's Qwen-Omni audio (process_mm_info(..., use_audio_in_video=True),
process_audio_info) against qwen-omni-utils 0.0.9's own audio_process.py
(the ffmpeg CLI through audioread, librosa's cut and mean, soxr to 16 kHz):
the same structure, the same lengths, SNR >= 40 dB (reel resamples with
libswresample). The reference is installed by scripts/deps.sh into
.deps/omni-ref (REEL_OMNI_REF overrides) and loaded alone: the package's
__init__ imports torchvision."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import reel
import reel.vlm

ROOT = Path(__file__).resolve().parents[2]
# slow: the reference's librosa compiles with numba on first use (about a minute)
pytestmark = [pytest.mark.skipif(shutil.which("ffmpeg") is None, reason="needs the ffmpeg CLI"), pytest.mark.slow]


@pytest.fixture(scope="module")
def omni():
    ref = os.environ.get("REEL_OMNI_REF") or str(ROOT / ".deps" / "omni-ref")
    src = Path(ref) / "qwen_omni_utils" / "v2_5" / "audio_process.py"
    if not src.exists():
        pytest.skip(f"qwen-omni-utils 0.0.9 is not installed in {ref} (scripts/deps.sh installs it)")
    if ref not in sys.path:
        sys.path.append(ref)  # after site-packages: the system's numpy wins
    spec = importlib.util.spec_from_file_location("omni_audio_process", src)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _video(tmp_path, name, seconds, codec, rate=48000):
    out = str(tmp_path / name)
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i",
                    f"testsrc2=size=64x48:rate=25:duration={seconds}", "-f", "lavfi", "-i",
                    f"aevalsrc=0.4*sin(2*PI*440*t)+0.2*sin(2*PI*1250*t)|0.3*sin(2*PI*660*t)+0.05*random(0):"
                    f"s={rate}:d={seconds}", "-map", "0:v", "-map", "1:a", "-c:v", "libx264", "-preset", "ultrafast",
                    *codec, out], check=True)
    return out


def _snr_db(ref, got):
    noise = np.sum((ref.astype(np.float64) - got) ** 2)
    return 10 * np.log10(np.sum(ref.astype(np.float64) ** 2) / max(noise, 1e-30))


@pytest.mark.parametrize("codec,rate", [(["-c:a", "aac"], 48000), (["-c:a", "libmp3lame"], 44100)],
                         ids=["aac48k", "mp3_44k1"])
def test_use_audio_in_video_matches_qwen_omni_utils(tmp_path, omni, codec, rate):
    path = _video(tmp_path, "v.mp4", 6, codec, rate)
    elements = [
        {"type": "video", "video": path, "nframes": 4},
        {"type": "video", "video": "file://" + path, "video_start": 1.5, "video_end": 4.0, "nframes": 4},
        {"type": "video", "video": path, "video_start": 2.0, "nframes": 4},
    ]
    conv = [{"role": "user", "content": elements + [{"type": "text", "text": "what is heard?"}]}]
    want = omni.process_audio_info(conv, use_audio_in_video=True)
    audios, images, videos = reel.vlm.process_mm_info(conv, use_audio_in_video=True)
    assert images is None and len(videos) == 3 and tuple(videos[0].shape[:2]) == (4, 3)
    assert isinstance(audios, list) and len(audios) == len(want) == 3
    for w, g in zip(want, audios):
        assert isinstance(g, np.ndarray) and g.dtype == np.float32 and g.ndim == 1
        assert abs(len(g) - len(w)) <= 1, (len(g), len(w))  # soxr and swresample round the end alike, or by one
        n = min(len(g), len(w))
        assert _snr_db(w[:n], g[:n]) >= 40.0
    assert len(audios[1]) == 40000  # [1.5, 4.0) s at 16 kHz
    # without use_audio_in_video: no audio, as qwen-omni-utils
    assert omni.process_audio_info(conv, use_audio_in_video=False) is None
    assert reel.vlm.process_mm_info(conv, use_audio_in_video=False)[0] is None


def test_audio_elements_arrays_and_refusals(tmp_path, omni):
    tone = (0.1 * np.sin(np.arange(32000) * 0.05)).astype(np.float32)
    conv = [{"role": "user", "content": [{"type": "audio", "audio": tone, "audio_start": 0.5, "audio_end": 1.0}]}]
    want = omni.process_audio_info(conv, use_audio_in_video=True)
    got = reel.vlm.process_audio_info(conv, use_audio_in_video=True)
    assert len(got) == 1 and np.array_equal(got[0], want[0])
    silent = str(tmp_path / "silent.mp4")
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-f", "lavfi", "-i", "testsrc2=size=64x48:duration=1",
                    "-c:v", "libx264", "-preset", "ultrafast", silent], check=True)
    conv = [{"role": "user", "content": [{"type": "video", "video": silent}]}]
    with pytest.raises(reel.ReelError, match="silent.mp4: no audio stream"):
        reel.vlm.process_audio_info(conv, use_audio_in_video=True)
