# reel/_store.py: the packed store from Python: pack() (one machine, or one
# part of a build spread over many), merge, verify, info. The store is then
# read by reel.Loader / reel.torch.VideoDataset like a folder of videos.
from __future__ import annotations

import os
import sys
import time
from typing import Any, Callable, Dict, Optional, Tuple, Union

from . import _options as opt
from . import _reel

_Progress = Union[None, bool, Callable[[Dict[str, Any]], None]]


def _bar(p: Dict[str, Any]) -> None:
    total, done = p["videos_total"], p["videos_done"]
    fresh = done - p["videos_resumed"]
    rate = fresh / p["elapsed"] if p["elapsed"] > 0 else 0.0
    eta = (total - done) / rate if rate > 0 else 0.0
    frac = done / total if total else 1.0
    fill = int(frac * 30)
    sys.stderr.write(f"\r[{'#' * fill}{'.' * (30 - fill)}] {frac * 100:3.0f}% {done}/{total} videos  "
                     f"{rate:.1f} videos/s  {p['videos_failed']} failed  ETA {eta:.0f} s ")
    sys.stderr.flush()


def _part(part: Union[None, str, Tuple[int, int]]) -> Tuple[int, int]:
    if part is None:
        return (0, 1)
    if part == "auto":
        try:
            return (int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]))
        except (KeyError, ValueError):
            raise ValueError("part='auto' needs RANK and WORLD_SIZE in the environment (torchrun sets them)") from None
    if isinstance(part, str):
        a, _, b = part.partition("/")
        return (int(a), int(b))
    return (int(part[0]), int(part[1]))


def _sampler(sampler: Optional[str], fps: float, min_frames: int, max_frames: int, frames: int,
             frame_factor: int) -> Tuple[float, Optional[Dict[str, Any]]]:
    """(the store-wide fps, reel_pack_settings.sampler by its C field names)
    of pack's keywords: with a sampler, `fps` is the fps sampler's rate
    (sampler.fps; left out, 0: C's default) and `frames` the count sampler's
    (sampler.frames_per_clip)."""
    if sampler is None:
        return float(fps), None
    if sampler == "fps":
        s: Dict[str, Any] = {"kind": _reel.SAMPLER_FPS, "min_frames": int(min_frames),
                             "max_frames": int(max_frames), "frame_factor": int(frame_factor)}
        if float(fps) > 0:
            s["fps"] = float(fps)
        return 0.0, s
    if sampler == "count":
        return float(fps), {"kind": _reel.SAMPLER_COUNT, "frames_per_clip": int(frames),
                            "min_frames": int(min_frames), "max_frames": int(max_frames),
                            "frame_factor": int(frame_factor)}
    raise ValueError(f"sampler={sampler!r}: expected None, 'fps' or 'count'")


def pack(source: Any, out_dir: Any, *, size: Union[int, str, Tuple[int, int]] = 256, fps: float = 0.0, every: int = 1,
         format: str = "jpeg", quality: int = 90, zstd_level: int = 0, gop: int = 8, crf: int = 18,
         shard_size: int = 1 << 30, threads: int = 0, part: Union[None, str, Tuple[int, int]] = None,
         progress: _Progress = None, wait_for_parts: float = 0.0, sampler: Optional[str] = None,
         min_frames: int = 4, max_frames: int = 768, frames: int = 0, frame_factor: int = 2,
         color: str = "rgb", dtype: Any = "uint8",
         audio: Union[None, bool, Dict[str, Any]] = None, corrupt_policy: str = "fail") -> Dict[str, Any]:
    """Decodes `source` (a folder in the Kinetics layout or a CSV/TSV/JSONL
    manifest) once into a packed store in `out_dir`, and returns the report.

    size: the short side (aspect kept), an exact (height, width), or
    "source": each video at its own size (what a pixel-budget size_policy
    over the store needs).
    fps / every: keep the frames shown at k/fps seconds, or every k-th frame.
    sampler: "fps" or "count" stores each video (or segment) as the
    whole-video sampler takes it, qwen-vl-utils' frame choice (the frames
    reel.vlm.fetch_video and reel.clips_at_fps / clips_at_count take):
    "fps" at `fps` (default 2) frames per second of video, `min_frames` to
    `max_frames` of them; "count" `frames` frames; a multiple of
    `frame_factor`, spread by linspace.
    format: "jpeg" (quality), "raw" (zstd_level 0 = uncompressed) or "h264" (gop, crf).
    color, dtype: the stored samples, as VideoDecoder's ("rgb" or "gray";
    "uint8" or "uint16": RGB as rgb48le, gray as the source's codes); gray
    and uint16 need format "raw" (jpeg and h264 hold 8-bit RGB, and refuse a
    gray source deeper than 8 bits, a depth map, by name).
    part: "I/N", (I, N) or "auto" (RANK/WORLD_SIZE) builds a disjoint 1/N; with
    N > 1 the index is written by merge() once all parts are done: with
    wait_for_parts > 0 every part waits that many seconds at most for the others,
    and part 0 merges (what `python -m reel.pack` does under torchrun).
    progress: True for a progress bar on stderr, or a callable given a dict.
    audio: True, or {"sample_rate": Hz, "channels": 1, "stream_index": i},
    also keeps each record's audio, the samples played over its stored
    frames decoded once per video (each video's own rate and channels when
    left out; channels 1 is their mean); a Loader with the same audio
    settings reads them as it reads the videos' (docs/STORE.md).
    corrupt_policy: a damaged packet, as the Loader's ``corrupt_policy``:
    "fail" (default) records the video as failed with its reason (damaged
    audio: the frames are kept, the audio's reason recorded, and a Loader
    asking for it fails that sample); "skip" packs it best effort (the
    audio's dropped packets as zeros, the record saying what is missing, so
    a Loader over the store gives the video's ClipInfo.audio_*).
    A killed build resumes where it stopped when run again; Ctrl-C stops it."""
    short_side, height, width = 0, 0, 0
    if size == "source":
        pass  # each video at its own size (short_side 0)
    elif isinstance(size, int):
        short_side = size
    else:
        height, width = (int(v) for v in size)
    index, count = _part(part)
    cb = _bar if progress is True else (progress or None)
    store_fps, whole = _sampler(sampler, fps, min_frames, max_frames, frames, frame_factor)
    report = _reel.pack(os.fspath(source), os.fspath(out_dir), short_side=short_side, width=width,
                        height=height, fps=store_fps, every=int(every), format=format, quality=int(quality),
                        zstd_level=int(zstd_level), gop=int(gop), crf=int(crf), shard_size=int(shard_size),
                        threads=int(threads), part_index=index, part_count=count, progress=cb, sampler=whole,
                        color=opt.choice("color", color, opt.COLORS), dtype=opt.dtype_code(dtype),
                        audio=_audio(audio),
                        corrupt_policy=opt.choice("corrupt_policy", corrupt_policy, opt.CORRUPT))
    if progress is True:
        sys.stderr.write("\n")
    if count > 1 and wait_for_parts > 0:
        _wait_for_parts(os.fspath(out_dir), count, wait_for_parts)
        if index == 0:
            merge(out_dir)
            report["merged"] = True
        else:
            _wait_for_index(os.fspath(out_dir), wait_for_parts)
    return report


_PACK_AUDIO_KEYS = ("sample_rate", "channels", "stream_index")


def _audio(audio: Union[None, bool, Dict[str, Any]]) -> Optional[Dict[str, int]]:
    """pack's ``audio`` as C takes it (reel_audio_settings: 0 is each video's
    own rate or channels, stream_index -1 the best), or None."""
    if audio is None or audio is False:
        return None
    if audio is True:
        return {}
    if not isinstance(audio, dict):
        raise TypeError(f"audio must be True or a dict of {list(_PACK_AUDIO_KEYS)}, not {type(audio).__name__}")
    unknown = set(audio) - set(_PACK_AUDIO_KEYS)
    if unknown:
        raise ValueError(f"audio: unknown keys {sorted(unknown)} (known: {list(_PACK_AUDIO_KEYS)})")
    return {k: int(v) for k, v in audio.items() if v is not None}


def _wait_for_parts(out_dir: str, count: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    names = [os.path.join(out_dir, f"part-{i:05d}-of-{count:05d}.done") for i in range(count)]
    while True:
        missing = [i for i, n in enumerate(names) if not os.path.exists(n)]
        if not missing:
            return
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{out_dir}: parts {missing} of {count} not done after {timeout:g} s")
        time.sleep(0.5)


def _wait_for_index(out_dir: str, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not os.path.exists(os.path.join(out_dir, "store.idx")):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"{out_dir}: part 0 did not write the index within {timeout:g} s")
        time.sleep(0.5)


def merge(out_dir: Any) -> None:
    """Writes the index of a store built in parts (all of them must be done)."""
    _reel.pack_merge(os.fspath(out_dir))


def verify(store_dir: Any) -> Dict[str, Any]:
    """Reads every record and checks every checksum: {'ok', 'records', 'bad', 'first_problem', ...}."""
    return _reel.store_verify(os.fspath(store_dir))


def store_info(store_dir: Any) -> Dict[str, Any]:
    """The store's format, build settings, counts and class names."""
    return _reel.store_info(os.fspath(store_dir))


def parse_size(text: str) -> Union[int, str, Tuple[int, int]]:
    """A --size argument: "WxH" as (height, width), one number (the short
    side), or "source" (each video's own size)."""
    if text == "source":
        return text
    if "x" in text.lower():
        w, h = (int(v) for v in text.lower().split("x"))
        return (h, w)
    return int(text)
