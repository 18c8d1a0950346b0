# reel/_samplers.py: the per-video clip samplers (random and regular clips, by
# index or by time) with torchcodec's names and semantics, built on one batched
# VideoDecoder call per video; each returns a Frames batch [N, T, ...].
from __future__ import annotations

import math
import random
from typing import Any, Callable, List, Optional, Sequence, Union

from ._decoder import VideoDecoder
from ._reel import Frames

__all__ = [
    "clips_at_random_indices",
    "clips_at_regular_indices",
    "clips_at_random_timestamps",
    "clips_at_regular_timestamps",
]

Seed = Union[int, random.Random, None]
POLICIES = ("repeat_last", "wrap", "error")


def _rng(seed: Seed) -> Any:
    """A generator with randrange() and random(): seed's own, or the random module's."""
    if isinstance(seed, random.Random):
        return seed
    if seed is None:
        return random
    return random.Random(seed)


def _policy(policy: str) -> Callable[[list, int], list]:
    if policy == "repeat_last":
        return lambda values, n: values + [values[-1]] * (n - len(values))
    if policy == "wrap":
        return lambda values, n: [values[i % len(values)] for i in range(n)]
    if policy == "error":
        def fail(values: list, n: int) -> list:
            raise ValueError("policy='error' and a clip runs past the end of the video; "
                             "use policy='repeat_last' or 'wrap', or change the sampling parameters")
        return fail
    raise ValueError(f"policy={policy!r}: expected one of {', '.join(map(repr, POLICIES))}")


def _check_common(decoder: VideoDecoder, num_frames_per_clip: int, policy: str) -> Callable[[list, int], list]:
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


def _linspace_int(start: int, end: int, steps: int) -> List[int]:
    """torch.linspace(start, end, steps, dtype=torch.int), computed the same way."""
    if steps == 1:
        return [start]
    step = (end - start) / (steps - 1)
    half = steps // 2
    return [int(start + step * i) if i < half else int(end - step * (steps - i - 1)) for i in range(steps)]


def _index_range(n: int, span: int, start: int, end: Optional[int]) -> "tuple[int, int]":
    if start < 0:
        start += n
    if not 0 <= start < n:
        raise ValueError(f"sampling_range_start ({start}) must be within the video's {n} frames")
    if end is None:
        end = max(n - span + 1, 1)
        if start >= end:
            raise ValueError(
                f"sampling_range_end was computed as {end} (the last start whose clip fits), which is "
                f"<= sampling_range_start ({start}); pass a smaller sampling_range_start or "
                f"sampling_range_end explicitly")
    else:
        if end < 0:
            end += n
        end = min(end, n)
        if start >= end:
            raise ValueError(f"sampling_range_start ({start}) must be < sampling_range_end ({end})")
    return start, end


def _index_sampler(kind: str, decoder: VideoDecoder, num_clips: int, num_frames_per_clip: int,
                   num_indices_between_frames: int, sampling_range_start: int,
                   sampling_range_end: Optional[int], policy: str, seed: Seed) -> Frames:
    fill = _check_common(decoder, num_frames_per_clip, policy)
    if num_clips <= 0:
        raise ValueError(f"num_clips must be > 0, got {num_clips}")
    if num_indices_between_frames <= 0:
        raise ValueError(f"num_indices_between_frames must be > 0, got {num_indices_between_frames}")
    n = len(decoder)
    span = num_indices_between_frames * (num_frames_per_clip - 1) + 1
    start, end = _index_range(n, span, sampling_range_start, sampling_range_end)
    if kind == "random":
        rng = _rng(seed)
        starts = [rng.randrange(start, end) for _ in range(num_clips)]
    else:
        starts = _linspace_int(start, end - 1, num_clips)
    flat: List[int] = []
    for s in starts:
        clip = [s + i * num_indices_between_frames for i in range(num_frames_per_clip)]
        if clip[-1] >= n:
            clip = fill([i for i in clip if i < n], num_frames_per_clip)
        flat += clip
    return _clips(decoder, decoder.get_frames_at(flat), num_clips, num_frames_per_clip)


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

    if sampling_range_start is None:
        sampling_range_start = begin
    elif sampling_range_start < begin:
        raise ValueError(f"sampling_range_start ({sampling_range_start}) is before the first frame ({begin})")
    if sampling_range_end is None:
        sampling_range_end = end_stream - (num_frames_per_clip - 1) * seconds_between_frames
        if sampling_range_start >= sampling_range_end:
            raise ValueError(
                f"sampling_range_end was computed as {sampling_range_end} (the last start whose clip fits), "
                f"which is <= sampling_range_start ({sampling_range_start}); pass sampling_range_end explicitly")
    if sampling_range_start >= sampling_range_end:
        raise ValueError(f"sampling_range_start ({sampling_range_start}) must be < "
                         f"sampling_range_end ({sampling_range_end})")
    sampling_range_end = min(sampling_range_end, end_stream)

    if kind == "random":
        rng = _rng(seed)
        width = sampling_range_end - sampling_range_start
        starts = [sampling_range_start + rng.random() * width for _ in range(num_clips or 1)]
    elif seconds_between_clip_starts is not None:
        count = max(0, math.ceil((sampling_range_end - sampling_range_start) / seconds_between_clip_starts))
        starts = [sampling_range_start + k * seconds_between_clip_starts for k in range(count)]
        starts = [s for s in starts if s < sampling_range_end]
    else:
        assert num_clips is not None
        step = (sampling_range_end - sampling_range_start) / num_clips
        starts = [sampling_range_start + k * step for k in range(num_clips)]
    flat: List[float] = []
    for s in starts:
        clip = [s + i * seconds_between_frames for i in range(num_frames_per_clip)]
        if clip[-1] >= end_stream:
            clip = fill([t for t in clip if t < end_stream], num_frames_per_clip)
        flat += clip
    return _clips(decoder, decoder.get_frames_played_at(flat), len(starts), num_frames_per_clip)


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
