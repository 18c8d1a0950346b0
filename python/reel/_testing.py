"""Test helpers: videos whose frames carry their own index, and the reader of
that index. For reel's tests, examples and benchmarks; not a stable API."""

from __future__ import annotations

from typing import Any, List

from . import _synth

__all__ = ["write_video", "read_indices"]


def write_video(path: str, **params: Any) -> None:
    """Writes a test video (codec, width, height, frames, fps_num, fps_den, gop,
    bframes, vfr, ten_bit, yuv444, start, seed) whose frames carry their index."""
    _synth.write(str(path), **params)


def read_indices(frames: Any) -> List[int]:
    """The index embedded in each HWC uint8 RGB frame of `frames` (shape
    [..., H, W, 3], C-contiguous: reel.Frames, a numpy array or a tensor
    converted with .numpy()); -1 where unreadable."""
    shape = tuple(int(s) for s in frames.shape)
    if len(shape) < 3 or shape[-1] != 3:
        raise ValueError("read_indices: need frames shaped [..., H, W, 3]")
    return _synth.read_indices(frames.tobytes(), shape[-3], shape[-2])
