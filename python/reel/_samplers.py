# reel/_samplers.py: the per-video clip samplers (random and regular clips, by
# index or by time, with torchcodec's names and semantics; and the whole-video
# samplers at a target fps or a frame count, with qwen-vl-utils' names and
# semantics): thin wrappers over the C sampler (reel_sampler_run, the
# loader's own), so all agree on ranges, policies and random draws; one
# batched VideoDecoder call per video; each returns a Frames batch [N, T, ...].
from __future__ import annotations

import math
import random
from typing import Optional, Sequence, Union

from . import _reel
from ._decoder import VideoDecoder
from ._reel import Frames

__all__ = [
    "clips_at_random_indices",
    "clips_at_regular_indices",
    "clips_at_random_timestamps",
    "clips_at_regular_timestamps",
    "clips_at_fps",
    "clips_at_count",
]

Seed = Union[int, random.Random, None]
POLICIES = ("repeat_last", "wrap", "error")


_POLICY = {"repeat_last": _reel.CLIP_REPEAT_LAST, "wrap": _reel.CLIP_WRAP, "error": _reel.CLIP_ERROR}


def _seed(seed: Seed) -> int:
    """The C sampler's 64-bit seed: an int as it is; a random.Random or the
    random module (None) gives one draw of 64 bits."""
    if isinstance(seed, random.Random):
        return seed.getrandbits(64)
    if seed is None:
        return random.getrandbits(64)
    return int(seed) & 0xFFFFFFFFFFFFFFFF


def _policy(policy: str) -> int:
    try:
        return _POLICY[policy]
    except (KeyError, TypeError):
        raise ValueError(f"policy={policy!r}: expected one of {', '.join(map(repr, POLICIES))}") from None


def _check_common(decoder: VideoDecoder, num_frames_per_clip: int, policy: str) -> int:
    if len(decoder) < 1:
        raise ValueError(f"the video has no frames ({decoder.metadata.path})")
    if num_frames_per_clip <= 0:
        raise ValueError(f"num_frames_per_clip must be > 0, got {num_frames_per_clip}")
    return _policy(policy)


def _clips(decoder: VideoDecoder, frames: Frames, num_clips: int, t: int) -> Frames:
    """[N*T, ...] -> [N, T, ...] with per-clip metadata."""
    def nest(v: Sequence) -> tuple:
        return tuple(tuple(v[i * t:(i + 1) * t]) for i in range(num_clips))

    layout = "NT" + frames.layout[1:] if frames.layout else None
    return frames._view((num_clips, t) + tuple(frames.shape[1:]), nest(frames.indices),
                        nest(frames.pts_seconds), nest(frames.duration_seconds), layout)


def _index_range(n: int, start: int, end: Optional[int]) -> "tuple[float, float]":
    """torchcodec's index range as the C sampler's settings, unvalidated (the
    C sampler alone validates ranges, so Python and the loader agree): None
    is the automatic end (0 in C); an explicit end of 0 is frame 0, which C
    spells -n (negatives count from the end)."""
    if end is None:
        return float(start), 0.0
    return float(start), float(end if end != 0 else -n)


def _index_sampler(kind: str, decoder: VideoDecoder, num_clips: int, num_frames_per_clip: int,
                   num_indices_between_frames: int, sampling_range_start: int,
                   sampling_range_end: Optional[int], policy: str, seed: Seed) -> Frames:
    fill = _check_common(decoder, num_frames_per_clip, policy)
    if num_clips <= 0:
        raise ValueError(f"num_clips must be > 0, got {num_clips}")
    if num_indices_between_frames <= 0:
        raise ValueError(f"num_indices_between_frames must be > 0, got {num_indices_between_frames}")
    start, end = _index_range(len(decoder), sampling_range_start, sampling_range_end)
    c_kind = _reel.SAMPLER_RANDOM_INDICES if kind == "random" else _reel.SAMPLER_REGULAR_INDICES
    flat = decoder._dec.sample_clips(c_kind, num_clips, num_frames_per_clip, num_indices_between_frames, 0.0,
                                     start, end, fill, 0.0, _seed(seed) if kind == "random" else 0)
    return _clips(decoder, decoder.get_frames_at(list(flat)), num_clips, num_frames_per_clip)


def clips_at_random_indices(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    num_indices_between_frames: int = 1,
    sampling_range_start: int = 0,
    sampling_range_end: Optional[int] = None,
    policy: str = "repeat_last",
    seed: Seed = None,
) -> Frames:
    """`num_clips` clips starting at random frame indices in
    [sampling_range_start, sampling_range_end) (None: the last start whose clip
    fits; negatives count from the end), each `num_frames_per_clip` frames
    `num_indices_between_frames` apart. A clip running past the end follows
    `policy`: "repeat_last", "wrap" or "error". `seed`: an int, a
    random.Random, or None for the `random` module's generator.

    Returns Frames [num_clips, num_frames_per_clip, ...] whose indices,
    pts_seconds and duration_seconds are nested per clip. One decoding call."""
    return _index_sampler("random", decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                          sampling_range_start, sampling_range_end, policy, seed)


def clips_at_regular_indices(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    num_indices_between_frames: int = 1,
    sampling_range_start: int = 0,
    sampling_range_end: Optional[int] = None,
    policy: str = "repeat_last",
) -> Frames:
    """Like clips_at_random_indices, with clip starts evenly spaced over the
    sampling range (torch.linspace semantics: first and last start included)."""
    return _index_sampler("regular", decoder, num_clips, num_frames_per_clip, num_indices_between_frames,
                          sampling_range_start, sampling_range_end, policy, None)


def _time_sampler(kind: str, decoder: VideoDecoder, num_clips: Optional[int], num_frames_per_clip: int,
                  seconds_between_frames: Optional[float], seconds_between_clip_starts: Optional[float],
                  sampling_range_start: Optional[float], sampling_range_end: Optional[float],
                  policy: str, seed: Seed) -> Frames:
    fill = _check_common(decoder, num_frames_per_clip, policy)
    m = decoder.metadata
    begin, end_stream = m.begin_stream_seconds, m.end_stream_seconds
    if num_clips is not None and num_clips <= 0:
        raise ValueError(f"num_clips must be > 0, got {num_clips}")
    if seconds_between_clip_starts is not None and not seconds_between_clip_starts > 0:
        raise ValueError(f"seconds_between_clip_starts must be > 0, got {seconds_between_clip_starts}")
    if seconds_between_frames is None:
        if not m.average_fps:
            raise ValueError("the video has no average frame rate: pass seconds_between_frames")
        seconds_between_frames = 1.0 / m.average_fps
    elif not seconds_between_frames > 0:
        raise ValueError(f"seconds_between_frames must be > 0, got {seconds_between_frames}")

    # torchcodec's times are absolute; the C sampler's range is relative to
    # the first frame, with 0 as the automatic end and negatives counting from
    # the end. Only what that cannot express is refused here; every other
    # range check is the C sampler's, so Python and the loader agree.
    rel_start = 0.0 if sampling_range_start is None else sampling_range_start - begin
    if rel_start < 0:
        raise ValueError(f"sampling_range_start ({sampling_range_start}) is before the first frame ({begin})")
    rel_end = 0.0
    if sampling_range_end is not None:
        rel_end = sampling_range_end - begin
        if rel_end <= 0:
            raise ValueError(f"empty sampling range [{sampling_range_start}, {sampling_range_end}): its end is at "
                             f"or before the first frame ({begin})")

    clips = num_clips or 1
    between = 0.0
    if kind == "random":
        c_kind = _reel.SAMPLER_RANDOM_TIMES
    else:
        c_kind = _reel.SAMPLER_REGULAR_TIMES
        if seconds_between_clip_starts is not None:
            # as many clips as start inside the range the C sampler uses (its
            # automatic end: the last start whose clip fits, at least the start)
            between = seconds_between_clip_starts
            a = begin + rel_start
            b = (sampling_range_end if sampling_range_end is not None else
                 end_stream - (num_frames_per_clip - 1) * seconds_between_frames)
            b = min(b, end_stream)
            starts = [a + k * between for k in range(max(0, math.ceil((b - a) / between)))]
            clips = max(1, len([x for x in starts if x < b]))
    flat = decoder._dec.sample_clips(c_kind, clips, num_frames_per_clip, 1, seconds_between_frames,
                                     rel_start, rel_end, fill, between, _seed(seed) if kind == "random" else 0)
    return _clips(decoder, decoder.get_frames_at(list(flat)), clips, num_frames_per_clip)


def clips_at_random_timestamps(
    decoder: VideoDecoder,
    *,
    num_clips: int = 1,
    num_frames_per_clip: int = 1,
    seconds_between_frames: Optional[float] = None,
    sampling_range_start: Optional[float] = None,
    sampling_range_end: Optional[float] = None,
    policy: str = "repeat_last",
    seed: Seed = None,
) -> Frames:
    """`num_clips` clips starting at uniformly random times in
    [sampling_range_start, sampling_range_end) seconds (defaults: the first
    frame's time, and the last start whose clip fits), frames
    `seconds_between_frames` apart (default 1 / average fps). Each frame is the
    one displayed at its time. Returns Frames [num_clips, num_frames_per_clip, ...]."""
    return _time_sampler("random", decoder, num_clips, num_frames_per_clip, seconds_between_frames, None,
                         sampling_range_start, sampling_range_end, policy, seed)


def clips_at_regular_timestamps(
    decoder: VideoDecoder,
    *,
    seconds_between_clip_starts: Optional[float] = None,
    num_clips: Optional[int] = None,
    num_frames_per_clip: int = 1,
    seconds_between_frames: Optional[float] = None,
    sampling_range_start: Optional[float] = None,
    sampling_range_end: Optional[float] = None,
    policy: str = "repeat_last",
) -> Frames:
    """Clips starting every `seconds_between_clip_starts` seconds over the
    sampling range (torchcodec), or, given `num_clips` instead, at
    start + k * (range width / num_clips). Exactly one of the two is needed."""
    if (seconds_between_clip_starts is None) == (num_clips is None):
        raise ValueError("pass exactly one of seconds_between_clip_starts and num_clips")
    return _time_sampler("regular", decoder, num_clips, num_frames_per_clip, seconds_between_frames,
                         seconds_between_clip_starts, sampling_range_start, sampling_range_end, policy, None)


# qwen-vl-utils 0.0.14's defaults (reel_sampler_default_settings has the same)
FPS, MIN_FRAMES, MAX_FRAMES, FRAME_FACTOR = 2.0, 4, 768, 2


def _whole_number(name: str, v: object) -> int:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v):
        raise ValueError(f"{name} must be a whole number, got {v!r}")
    return int(v)


def _whole_video(decoder: VideoDecoder, kind: int, fps: float, min_frames: int, max_frames: int,
                 frame_factor: int, count: int, video_start: Optional[float], video_end: Optional[float]) -> Frames:
    if len(decoder) < 1:
        raise ValueError(f"the video has no frames ({decoder.metadata.path})")
    if video_end is not None and video_end <= 0:
        raise ValueError(f"video_end={video_end}: leaves no frames")
    if video_start is not None and video_start < 0:
        raise ValueError(f"video_start={video_start}: must be >= 0")
    idx, _ = decoder._dec.sample_video(kind, float(fps), min_frames, max_frames, frame_factor, count,
                                          float(video_start or 0.0), float(video_end or 0.0))
    return _clips(decoder, decoder.get_frames_at(list(idx)), 1, len(idx))


def clips_at_fps(
    decoder: VideoDecoder,
    *,
    fps: float = FPS,
    min_frames: int = MIN_FRAMES,
    max_frames: int = MAX_FRAMES,
    frame_factor: int = FRAME_FACTOR,
    video_start: Optional[float] = None,
    video_end: Optional[float] = None,
) -> Frames:
    """The whole video (or [video_start, video_end] seconds of it) sampled at
    `fps` frames per second of video, as qwen-vl-utils 0.0.14 and
    ``reel.vlm.fetch_video`` choose frames: N frames at the video's average
    fps F give n = min(max(N / F * fps, min_frames), max_frames, N) rounded
    to a multiple of `frame_factor` (min up, max and n down), taken by
    linspace over the range, rounded half to even as torch does. The same
    C sampler (REEL_SAMPLER_FPS) serves reel.vlm, the Loader's
    ``sampler="fps"`` and ``reel pack --sampler fps``.

    Returns Frames [1, n, ...] (one clip); its fps (qwen's sample_fps) is
    n / N * F."""
    return _whole_video(decoder, _reel.SAMPLER_FPS, fps, _whole_number("min_frames", min_frames),
                        _whole_number("max_frames", max_frames), _whole_number("frame_factor", frame_factor), 1,
                        video_start, video_end)


def clips_at_count(
    decoder: VideoDecoder,
    *,
    nframes: int,
    frame_factor: int = FRAME_FACTOR,
    video_start: Optional[float] = None,
    video_end: Optional[float] = None,
) -> Frames:
    """`nframes` frames (rounded half to even to a multiple of
    `frame_factor`, qwen-vl-utils' ``nframes``) spread by linspace over the
    whole video or [video_start, video_end] seconds of it (REEL_SAMPLER_COUNT).
    Returns Frames [1, n, ...]."""
    return _whole_video(decoder, _reel.SAMPLER_COUNT, FPS, MIN_FRAMES, MAX_FRAMES,
                        _whole_number("frame_factor", frame_factor), _whole_number("nframes", nframes),
                        video_start, video_end)
