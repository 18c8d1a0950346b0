# reel/torch.py: PyTorch conveniences over the core API: tensors from reel
# arrays, a loader wrapper that yields tensors (optionally moved to a device),
# and a map-style Dataset of clips for torch.utils.data.DataLoader.
"""PyTorch helpers (``import reel.torch``; imports torch).

- :func:`as_tensor`: a reel.Frames (or anything with ``__dlpack__``) as a
  tensor, zero-copy.
- :class:`TorchLoader`: iterates a :class:`reel.Loader` and yields
  :class:`TorchBatch` (frames, labels, info) as tensors, on ``device`` if given.
- :class:`ClipDataset`: a ``torch.utils.data.Dataset`` of videos that returns
  clips sampled by the reel samplers; safe with DataLoader workers (fork or
  spawn).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

import torch

from ._decoder import VideoDecoder
from ._loader import ClipInfo, Loader
from ._samplers import (
    clips_at_random_indices,
    clips_at_random_timestamps,
    clips_at_regular_indices,
    clips_at_regular_timestamps,
)

__all__ = ["as_tensor", "TorchBatch", "TorchLoader", "ClipDataset"]


def as_tensor(x: Any) -> torch.Tensor:
    """``torch.from_dlpack(x)``: shares memory with `x` (a reel.Frames)."""
    return torch.from_dlpack(x)


class TorchBatch(NamedTuple):
    frames: torch.Tensor  #: [B, T, C, H, W] (or the loader's layout)
    labels: torch.Tensor  #: [B] int64
    info: List[ClipInfo]


class TorchLoader:
    """Wraps a reel.Loader: each batch as tensors. With ``device`` (e.g.
    "cuda"), frames and labels are copied there (``non_blocking`` copies from
    the loader's page-aligned buffers); without, they stay zero-copy views of
    the ring buffers. Each ``for`` loop runs to the end of the current epoch."""

    def __init__(self, loader: Loader, device: Union[str, torch.device, None] = None,
                 non_blocking: bool = True) -> None:
        self.loader = loader
        self.device = None if device is None else torch.device(device)
        self.non_blocking = non_blocking

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[TorchBatch]:
        """Tensors for each batch to the end of the current epoch."""
        return self

    def __next__(self) -> TorchBatch:
        # not a generator: it would keep the last batch (a ring buffer) alive
        batch = self.loader.next_batch()
        if batch is None:
            raise StopIteration
        frames, labels = batch.torch()
        if self.device is not None and self.device.type != "cpu":
            frames = frames.to(self.device, non_blocking=self.non_blocking)
            labels = labels.to(self.device, non_blocking=self.non_blocking)
        return TorchBatch(frames, labels, batch.info)


_SAMPLERS: Dict[str, Callable[..., Any]] = {
    "random": clips_at_random_indices,
    "regular": clips_at_regular_indices,
    "random_time": clips_at_random_timestamps,
    "regular_time": clips_at_regular_timestamps,
}


class ClipDataset(torch.utils.data.Dataset):
    """``dataset[i]`` -> (clips [N, T, C, H, W] tensor, label) for video i.

    ``videos``: paths, or (path, label) pairs. ``sampler``: "random",
    "regular", "random_time" or "regular_time"; ``sampler_args`` go to the
    sampler (e.g. num_clips, num_frames_per_clip); ``decoder_args`` to
    reel.VideoDecoder (size, crop, dtype, threads...). ``transform`` is applied
    to the tensor. Decoders are opened per item, so the dataset pickles and
    works in DataLoader workers."""

    def __init__(self, videos: Sequence[Any], *, sampler: str = "random",
                 sampler_args: Optional[dict] = None, decoder_args: Optional[dict] = None,
                 transform: Optional[Callable[[torch.Tensor], torch.Tensor]] = None) -> None:
        if sampler not in _SAMPLERS:
            raise ValueError(f"sampler={sampler!r}: expected one of {', '.join(_SAMPLERS)}")
        self.videos: List[Tuple[Any, int]] = [
            (v, -1) if not isinstance(v, (tuple, list)) else (v[0], int(v[1])) for v in videos
        ]
        self.sampler = sampler
        self.sampler_args = dict(sampler_args or {})
        self.decoder_args = dict(decoder_args or {"threads": 1})
        self.transform = transform

    def __len__(self) -> int:
        return len(self.videos)

    def __getitem__(self, i: int) -> Tuple[torch.Tensor, int]:
        path, label = self.videos[i]
        with VideoDecoder(path, **self.decoder_args) as dec:
            clips = _SAMPLERS[self.sampler](dec, **self.sampler_args)
        x = torch.from_dlpack(clips)
        if self.transform is not None:
            x = self.transform(x)
        return x, label
