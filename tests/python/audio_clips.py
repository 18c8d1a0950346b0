"""Videos with audio whose sync can be checked by content, and the ffmpeg
CLI's reference samples: shared by the Loader's, the store's and Ray's
audio tests (issue 28)."""
from __future__ import annotations

import subprocess

import numpy as np

import reel._testing

FPS = 25
NATIVE = {"sample_rate": 48000, "channels": 2}
MONO16K = {"sample_rate": 16000, "channels": 1}


def make_video(tmp_path, name, seed, rate=48000, channels=2, delay=0.0):
    """synth's 100 frames at 25 fps (frame i shows i) with audio: a 1 ms click
    at every 5th frame over a quiet tone (per-video pitch), `delay` s late."""
    video = tmp_path / f"{name}_v.mp4"
    reel._testing.write_video(str(video), width=96, height=64, frames=100, gop=25, seed=seed)
    expr = f"0.9*lt(mod(t\\,{5 / FPS})\\,0.001)+0.01*sin(2*PI*{200 + 50 * seed}*t)"
    layout = "|".join([expr] * channels)
    out = tmp_path / f"{name}.mp4"
    late = ["-itsoffset", str(delay)] if delay else []
    subprocess.run(["ffmpeg", "-nostdin", "-y", "-v", "error", "-i", str(video), *late, "-f", "lavfi", "-i",
                    f"aevalsrc={layout}:s={rate}:d=4", "-map", "0:v", "-map", "1:a", "-c:v", "copy",
                    "-c:a", "aac", "-b:a", "128k", str(out)], check=True)
    return str(out)


def cli_samples(path, af=""):
    """The ffmpeg CLI's samples of the first audio stream, float32
    interleaved: aresample=async=1:min_hard_comp=0 (reel's 1 ms rule), then
    the filters `af` (",pan=...", ",aresample=R")."""
    raw = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-map", "0:a:0", "-af",
                          "aresample=async=1:min_hard_comp=0" + af, "-f", "f32le", "-"],
                         check=True, capture_output=True).stdout
    return np.frombuffer(raw, dtype=np.float32)


def reference(path, settings):
    """The ffmpeg CLI's samples, [C, N] from a0."""
    af = ""
    if settings["channels"] == 1:
        probe = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a:0", "-show_entries",
                                "stream=channels", "-of", "csv=p=0", path], check=True, capture_output=True,
                               text=True).stdout.strip()
        if int(probe) == 2:
            af += ",pan=mono|c0=0.5*c0+0.5*c1"
    af += f",aresample={settings['sample_rate']}"
    return cli_samples(path, af).reshape(-1, settings["channels"]).T


def cut(ref, first, n):
    """Samples first .. first + n - 1 of ref, zeros outside it."""
    out = np.zeros((ref.shape[0], n), dtype=np.float32)
    lo, hi = max(first, 0), min(first + n, ref.shape[1])
    if hi > lo:
        out[:, lo - first:hi - first] = ref[:, lo:hi]
    return out


def cut_interleaved(ref, channels, first, n):
    """cut() of interleaved samples (cli_samples) with `channels` channels."""
    return cut(ref.reshape(-1, channels).T, first, n)


def audio_packet_bytes(path, until, gap):
    """The audio packets up to `until` s (ffprobe): their byte ranges
    coalesced as reel's hints coalesce them (gaps up to `gap` fetched) and
    their own bytes, as (coalesced total, packets' total)."""
    r = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "a", "-show_entries", "packet=pts_time,pos,size",
                        "-of", "csv=p=0", str(path)], capture_output=True, text=True, check=True)
    pkts = sorted((int(p), int(p) + int(s)) for t, s, p in (ln.split(",")[:3] for ln in r.stdout.split())
                  if float(t) <= until)
    runs: list = []
    for lo, hi in pkts:
        if runs and lo <= runs[-1][1] + gap:
            runs[-1][1] = max(runs[-1][1], hi)
        else:
            runs.append([lo, hi])
    return sum(hi - lo for lo, hi in runs), sum(hi - lo for lo, hi in pkts)
