# reel/__init__.py: the public Python API of reel: VideoDecoder, the clip
# samplers, Loader, the zero-copy Frames array and the ReelError hierarchy.
"""reel: frame-exact video decoding and a multi-video loader for PyTorch.

    import reel
    dec = reel.VideoDecoder("video.mp4", size=(224, 224))
    frames = dec.get_frames_at([0, 10, -1])      # reel.Frames [3, 3, 224, 224] uint8
    x = frames.torch()                           # zero-copy torch tensor

    with reel.Loader("kinetics/train", frames_per_clip=8, size=224, batch_size=32) as loader:
        for batch in loader:                     # one epoch
            x, y = batch.torch()                 # [32, 8, 3, 224, 224], [32]

See docs/python.md for the whole API.
"""
from __future__ import annotations

import enum as _enum

from . import _reel
from ._audio import AudioSamples
from ._build import build_info
from ._decoder import DecodeStats, FrameInfo, VideoDecoder, VideoMetadata
from ._loader import Batch, ClipInfo, Loader, dataset_info, epoch_order, stripe
from ._near import DecoderCache, decode_near
from ._reel import (
    CorruptError,
    Frames,
    FrameTimestampError,
    InvalidArgumentError,
    NotFoundError,
    NoVideoStreamError,
    OutOfRangeError,
    PermissionDeniedError,
    ReelError,
    UnsupportedError,
    ffmpeg_versions,
    set_ffmpeg_log_level,
    version_api,
)
from ._store import merge as pack_merge
from ._store import pack, store_info  # `python -m reel.pack` is the command line (reel/pack.py)
from ._store import verify as store_verify
from ._samplers import (
    clips_at_count,
    clips_at_fps,
    clips_at_random_indices,
    clips_at_random_timestamps,
    clips_at_regular_indices,
    clips_at_regular_timestamps,
)

__version__: str = _reel.__version__

#: reel status codes (ReelError.status), as in include/reel/common.h.
Status = _enum.IntEnum("Status", dict(_reel.STATUS), module=__name__)  # type: ignore[misc]

__all__ = [
    "VideoDecoder", "VideoMetadata", "FrameInfo", "DecodeStats", "Frames", "AudioSamples",
    "clips_at_random_indices", "clips_at_regular_indices",
    "clips_at_random_timestamps", "clips_at_regular_timestamps", "clips_at_fps", "clips_at_count",
    "Loader", "Batch", "ClipInfo", "dataset_info", "epoch_order", "stripe",
    "ReelError", "NotFoundError", "CorruptError", "UnsupportedError", "OutOfRangeError",
    "InvalidArgumentError", "NoVideoStreamError", "PermissionDeniedError", "FrameTimestampError", "Status",
    "decode_near", "DecoderCache",
    "pack", "pack_merge", "store_verify", "store_info",
    "ffmpeg_versions", "version_api", "build_info", "set_ffmpeg_log_level", "__version__",
]
