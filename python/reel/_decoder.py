# reel/_decoder.py: VideoDecoder, the frame-exact decoder over a path, bytes or
# a file-like object, with its metadata, frame table and indexing; every call
# is one batched C call that releases the GIL.
from __future__ import annotations

import bisect
import operator
import os
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from . import _audio
from . import _options as opt
from . import _reel
from ._reel import Frames

__all__ = ["VideoDecoder", "VideoMetadata", "FrameInfo", "DecodeStats"]

Source = Union[str, "os.PathLike[str]", bytes, bytearray, memoryview, Any]


@dataclass(frozen=True)
class VideoMetadata:
    """Metadata of the decoded video stream.

    It describes the frames the decoder returns: ``width`` x ``height`` is
    the size after the display rotation (the frames' size with ``apply_rotation`` on,
    the default); the stream's own values are named for them
    (``source_width``, ``source_height``: the size before rotation, the
    frames' size with ``apply_rotation=False``; ``container_bit_rate``). A field with
    the name of one of torchcodec's ``VideoStreamMetadata`` means what it means
    there: ``bit_rate`` is the stream's (the container's only when the stream
    states none), ``rotation`` is None when the stream has no display matrix.
    Times are in seconds of stream time.
    """

    path: Optional[str]
    codec: str
    profile: str
    pix_fmt: str
    container: str
    color_space: str
    color_range: str
    color_primaries: str
    width: int
    height: int
    source_width: int
    source_height: int
    bit_depth: int
    rotation: Optional[int]
    sample_aspect_ratio: Optional[Fraction]
    average_fps: Optional[float]
    average_fps_fraction: Optional[Fraction]
    nominal_fps: Optional[Fraction]
    time_base: Fraction
    stream_index: int
    num_streams: int
    has_audio: bool
    variable_size: bool
    start_pts: int
    begin_stream_seconds: float
    end_stream_seconds: float
    duration_seconds: float
    num_frames: int
    num_keyframes: int
    bit_rate: Optional[int]
    container_bit_rate: Optional[int]
    file_size: Optional[int]
    index_source: str

    @classmethod
    def _from_info(cls, d: dict, path: Optional[str]) -> "VideoMetadata":
        def frac(pair: Tuple[int, int]) -> Optional[Fraction]:
            num, den = pair
            return Fraction(num, den) if num > 0 and den > 0 else None

        avg = frac(d["avg_fps"])
        src = d["index_source"]
        return cls(
            path=path,
            codec=d["codec"], profile=d["profile"], pix_fmt=d["pix_fmt"], container=d["container"],
            color_space=d["color_space"], color_range=d["color_range"],
            color_primaries=d["color_primaries"],
            width=d["width"], height=d["height"], source_width=d["source_width"], source_height=d["source_height"],
            bit_depth=d["bit_depth"], rotation=d["rotation"] if d["has_rotation"] else None,
            sample_aspect_ratio=frac(d["sar"]),
            average_fps=float(avg) if avg else None,
            average_fps_fraction=avg,
            nominal_fps=frac(d["rate"]),
            time_base=Fraction(*d["time_base"]),
            stream_index=d["stream_index"], num_streams=d["num_streams"],
            has_audio=bool(d["has_audio"]), variable_size=bool(d["variable_size"]),
            start_pts=d["start_pts"],
            begin_stream_seconds=d["start_time"],
            end_stream_seconds=d["start_time"] + d["duration"],
            duration_seconds=d["duration"],
            num_frames=d["num_frames"], num_keyframes=d["num_keyframes"],
            bit_rate=d["bit_rate"] or None, container_bit_rate=d["container_bit_rate"] or None,
            file_size=d["file_size"] if d["file_size"] >= 0 else None,
            index_source=opt.INDEX_SOURCES.get(src, str(src)),
        )


class FrameInfo(NamedTuple):
    """One row of the exact frame table (presentation order)."""

    frame_index: int
    pts: int
    pts_seconds: float
    duration_seconds: float
    key: bool
    pos: int
    decode_order: int


class DecodeStats(NamedTuple):
    """What the last decoding call cost."""

    frames_requested: int
    frames_returned: int
    frames_decoded: int
    frames_skipped: int
    packets_read: int
    seeks: int
    corrupt_packets: int
    key_restarts: int
    keys_probed: int
    thread_fallbacks: int
    gop_contexts: int
    amplification: float
    frames_nvdec: int = 0
    frames_uploaded: int = 0


def _classify(source: Any, name: Optional[str]) -> Tuple[Any, int, Optional[str]]:
    """(what to hand to C, kind, display name): 0 path, 1 memory, 2 file-like."""
    if isinstance(source, (str, os.PathLike)):
        return os.fspath(source), 0, None
    if isinstance(source, (bytes, bytearray, memoryview)):
        return source, 1, name
    if hasattr(source, "read"):
        fname = name
        if fname is None:
            n = getattr(source, "name", None)
            fname = n if isinstance(n, str) else None
        seekable = getattr(source, "seekable", None)
        try:
            can_seek = bool(seekable()) if callable(seekable) else hasattr(source, "seek")
        except (OSError, ValueError):
            can_seek = False
        if can_seek:
            return source, 2, fname
        # Not seekable (a pipe, a socket): random access needs the whole file.
        return source.read(), 1, fname
    try:
        memoryview(source)
    except TypeError:
        raise TypeError(
            f"VideoDecoder source must be a path, bytes or a file-like object, not {type(source).__name__}"
        ) from None
    return source, 1, name


class VideoDecoder:
    """A frame-exact decoder for one video stream.

    ``source`` is a path (str or os.PathLike), a bytes-like object (bytes,
    bytearray, memoryview, mmap: read in place, not copied) or a file-like
    object (``read`` plus ``seek``; a non-seekable one is read into memory).

    Frame *i* is the *i*-th frame in presentation order, from an exact frame
    table. Each call decodes what it needs in one batched C call, with the
    GIL released, and returns a :class:`reel.Frames` that converts to torch or
    numpy without a copy (``torch.from_dlpack(f)`` / ``f.torch()`` / ``f.numpy()``).

    Options (fixed for the decoder's lifetime):

    - ``stream``: absolute stream index; None: the best video stream.
    - ``threads``: FFmpeg decoding threads; 0: chosen from the core count;
      None (default): 0, or 1 inside a DataLoader worker (its pool owns the cores).
    - ``crop``: ``(top, left, height, width)`` in display pixels, or None.
    - ``size``: output ``(height, width)`` or an int for a square; None: the
      crop's (or the frame's) size.
    - ``layout``: ``"CHW"`` (default, as torch expects) or ``"HWC"``.
    - ``dtype``: ``"uint8"`` (default), ``"uint16"``, ``"float32"``,
      ``"float16"`` or ``"bfloat16"`` (strings, torch or numpy dtypes).
      ``"uint16"``: RGB as ffmpeg's ``-pix_fmt rgb48le`` (0..65535), gray as
      the source's own codes (a 12-bit source 0..4095, as ``gray12le``).
    - ``color``: ``"rgb"`` (default, 3 channels) or ``"gray"`` (1 channel:
      ffmpeg's ``-pix_fmt gray``, or ``gray<depth>le`` for ``uint16`` and float
      dtypes of a source deeper than 8 bits; a gray source keeps its codes).
    - ``mean``, ``std``, ``divisor``: for float dtypes,
      ``out = (v / divisor - mean) / std`` per channel (defaults 0, 1, 255);
      for gray of a deep source, v is its code and the divisor is scaled by
      its largest code / 255 (by default: code / 4095 for 12 bits).
    - ``filter``: ``"bilinear"`` (default), ``"area"``, ``"bicubic"``, ``"nearest"``.
    - ``convert_path``: ``"fused"`` (default: one pass from YUV, bit-exact with
      ``ffmpeg -vf crop,scale``) or ``"after_rgb"`` (RGB first, like torchvision).
    - ``apply_rotation``: apply the display rotation (default True). ``flip``: mirror.
    - ``index``: the sidecar index ``<video>.reelidx``: False (default, off),
      ``"read"`` (use a valid one), True or ``"read_write"`` (use, or build and
      write). ``index_path`` overrides the sidecar's location.
    - ``corrupt_policy``: ``"fail"`` (default) or ``"skip"`` corrupt packets.
    - ``skip_nonref``: skip non-reference frames nobody asked for (default True).
    - ``check_keyframes``: with FFmpeg frame threads (``threads`` != 1), decode
      each keyframe alone once before seeking to it, so one that is not a clean
      starting point is found and decoded through from an earlier keyframe
      (default True; costs one keyframe decode per keyframe visited).
    - ``force_scan``: build the frame table by a packet scan.
    - ``gop_contexts``: GOP-parallel decoding: a call whose frames lie in two or
      more keyframe runs splits the runs over up to this many decoder contexts
      of the same file or URL, on threads of their own, each writing straight
      into the output; a call of one run decodes on ``threads``. None
      (default): up to the core count for a file (off for a URL: ask for N),
      or off inside a DataLoader worker;
      0 or 1: off; bytes and file-like sources: off. ``stats.gop_contexts``
      says how many contexts the last call used.
      The other contexts open on first use and stay open until ``close()``;
      their requests count in ``remote_stats``.
    - ``device``: ``"cpu"`` (default), ``"cuda"`` or ``"cuda:N"`` (docs/GPU.md):
      frames are decoded by NVDEC (or on the CPU and uploaded: ``upload_reason``
      says why) and converted on the GPU; the get_frames calls return Frames
      in device memory (``.device`` ``"cuda:N"``, DLPack kDLCUDA, ``.cpu()``).
      Where CUDA cannot serve it raises :class:`reel.ReelError` with status
      ``CUDA`` and a message naming CUDA and the cause: no NVIDIA driver, no
      such GPU, a libreel built without its kernels. ``device_fallback="cpu"``:
      decode on the CPU instead of raising; None (default): raise.
    - ``name``: the name used in messages for bytes and file-like sources.
    - ``remote``: for http(s):// and s3:// URLs, ``{"request_timeout": s,
      "connect_timeout": s, "max_retries": n, "retry_budget": s,
      "readahead_min": bytes, "readahead_max": bytes, "whole_object_max":
      bytes, "verify_tls": bool, "ca_bundle": path, "bearer_token": str}``;
      ``remote_stats`` tells what reading the URL cost.

    Errors raise :class:`reel.ReelError` subclasses whose message is the C
    message ``"<file>: <reason>"``. A decoder is safe to share between threads
    (calls are serialised) and survives ``fork``: a child process reopens the
    video on first use.
    """

    def __init__(
        self,
        source: Source,
        *,
        stream: Optional[int] = None,
        threads: Optional[int] = None,
        crop: Optional[Sequence[int]] = None,
        size: Union[int, Sequence[int], None] = None,
        layout: str = "CHW",
        dtype: Any = "uint8",
        color: str = "rgb",
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        divisor: float = 255.0,
        filter: str = "bilinear",
        convert_path: str = "fused",
        apply_rotation: bool = True,
        flip: bool = False,
        index_mode: Union[bool, str, None] = False,
        index_path: Union[str, "os.PathLike[str]", None] = None,
        corrupt_policy: str = "fail",
        skip_nonref: bool = True,
        force_scan: bool = False,
        check_keyframes: bool = True,
        name: Optional[str] = None,
        remote: Optional[Dict[str, Any]] = None,
        gop_contexts: Optional[int] = None,
        audio: Union[bool, Dict[str, Any], None] = None,
        device: Optional[str] = None,
        device_fallback: Optional[str] = None,
    ) -> None:
        self._options = dict(
            stream=stream, threads=threads, crop=None if crop is None else tuple(crop),
            size=size if size is None or isinstance(size, int) else tuple(size),
            layout=layout, dtype=dtype, color=color, mean=mean, std=std, divisor=divisor, filter=filter,
            convert_path=convert_path, apply_rotation=apply_rotation, flip=flip, index_mode=index_mode,
            index_path=opt.fspath_or_none(index_path), corrupt_policy=corrupt_policy,
            skip_nonref=skip_nonref, force_scan=force_scan, check_keyframes=check_keyframes, name=name,
            remote=None if remote is None else dict(remote), gop_contexts=gop_contexts,
            audio=dict(audio) if isinstance(audio, dict) else audio,
            device=device, device_fallback=device_fallback,
        )
        self._audio = _audio.AudioSettings.of(audio)
        height, width = opt.size_hw("size", size)
        codec_threads, gop_contexts = opt.decoder_threads(threads, gop_contexts)
        layout_code = opt.choice("layout", layout, opt.FRAME_LAYOUTS)
        src, kind, dname = _classify(source, name)
        self._source = src if kind != 2 else None  # for pickling; file objects do not pickle
        self._kind = kind
        self._dec = _reel.Decoder(
            src, kind,
            name=dname,
            stream=-1 if stream is None else int(stream),
            threads=codec_threads,
            corrupt=opt.choice("corrupt_policy", corrupt_policy, opt.CORRUPT),
            index_mode=opt.index_mode(index_mode),
            index_path=opt.fspath_or_none(index_path),
            skip_nonref=bool(skip_nonref),
            force_scan=bool(force_scan),
            check_keyframes=bool(check_keyframes),
            gop_contexts=gop_contexts,
            remote=None if remote is None else opt.remote_settings(remote),
            crop=opt.crop_xywh(crop),
            width=width, height=height,
            filter=opt.choice("filter", filter, opt.FILTERS),
            convert_path=opt.choice("convert_path", convert_path, opt.CONVERT_PATHS),
            rotate=bool(apply_rotation), flip=bool(flip),
            dtype=opt.dtype_code(dtype),
            color=opt.choice("color", color, opt.COLORS),
            layout=layout_code,
            divisor=float(divisor),
            mean=opt.rgb3("mean", mean, 0.0),
            std=opt.rgb3("std", std, 1.0),
            device=None if device is None else str(device),
            device_fallback=None if device_fallback is None else str(device_fallback),
        )
        self._chw = layout_code == 1
        self.metadata: VideoMetadata = VideoMetadata._from_info(
            self._dec.info(), self._dec.name if kind == 0 or dname is not None else None
        )
        self._table: Optional[Tuple[list, list, list, list, list]] = None
        self._pts_seconds: Optional[List[float]] = None
        self._audio_obj: Optional[_audio.Audio] = None
        self._remote = None if remote is None else opt.remote_settings(remote)
        if self._audio is not None:
            self._audio_open()  # refused now, by name

    # ---------------------------------------------------------------- basics
    def __len__(self) -> int:
        return self.metadata.num_frames

    @property
    def frame_shape(self) -> Tuple[int, int, int]:
        """Shape of one returned frame: (3, H, W) for CHW, (H, W, 3) for HWC."""
        return self._dec.frame_shape

    @property
    def dtype(self) -> str:
        """Element type of returned frames."""
        return self._dec.dtype

    @property
    def device(self) -> str:
        """Where returned frames live: ``"cpu"``, or ``"cuda:N"`` (``device_fallback``
        may have made a ``"cuda"`` decoder a CPU one)."""
        return self._dec.device

    @property
    def upload_reason(self) -> Optional[str]:
        """A decoder on a GPU whose frames are decoded on the CPU and uploaded: why
        NVDEC is not used (e.g. no libnvcuvid.so.1); None otherwise."""
        return self._dec.upload_reason

    @property
    def closed(self) -> bool:
        return self._dec.closed

    @property
    def stats(self) -> DecodeStats:
        """Decoding statistics of the last call (frames decoded vs returned, seeks...)."""
        return DecodeStats(**self._dec.stats())

    @property
    def remote_stats(self) -> Dict[str, Any]:
        """For a video at an http(s)/s3 URL, what reading it has cost since it
        was opened: requests, retries, failures, bytes_fetched,
        request_seconds, request_p50_s, request_p99_s, connections (made),
        budget_waits, budget_skips, budget_wait_seconds (zeros for a local
        one), the audio's reads included."""
        return dict(self._dec.remote_stats(None if self._audio_obj is None else self._audio_obj.handle))

    def prefetch(self, indices: Sequence[int]) -> None:
        """For a video at a URL, fetches now the bytes that decoding exactly
        these frames will read (each decode run's packets, from its
        keyframe), so that a later :meth:`get_frames` of them makes no
        request; for example from another thread while this one computes.
        Nothing to do for a local video."""
        self._dec.prefetch(list(indices))

    def close(self) -> None:
        """Closes the video. Frames already returned stay valid."""
        self._dec.close()
        self._audio_obj = None

    def __enter__(self) -> "VideoDecoder":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        m = self.metadata
        state = "closed" if self.closed else f"{m.num_frames} frames"
        return (f"reel.VideoDecoder({self._dec.name!r}, {m.codec} {m.width}x{m.height}, "
                f"{state}, frame_shape={self.frame_shape}, dtype={self.dtype})")

    def __reduce__(self) -> Any:
        if self._kind == 2:
            raise TypeError("a VideoDecoder reading a file-like object cannot be pickled; "
                            "pass a path or bytes")
        src: Any = self._source
        if self._kind == 1 and not isinstance(src, bytes):
            src = bytes(src)  # bytearray, memoryview, mmap: pickled as a copy
        return (_rebuild_decoder, (src, self._options))

    # ---------------------------------------------------------------- frame table
    def _frame_table(self) -> Tuple[list, list, list, list, list]:
        if self._table is None:
            self._table = self._dec.frame_table()
        return self._table

    def frame_table(self) -> List[FrameInfo]:
        """The exact frame table, one FrameInfo per frame in presentation order."""
        pts, dur, pos, key, order = self._frame_table()
        tb = self.metadata.time_base
        f = float(tb)
        return [FrameInfo(i, p, p * f, d * f, k, ps, o)
                for i, (p, d, ps, k, o) in enumerate(zip(pts, dur, pos, key, order))]

    @property
    def keyframes(self) -> List[int]:
        """Indices of the keyframes, ascending."""
        return self._dec.keyframes()

    def index_at_time(self, seconds: float) -> int:
        """Index of the frame displayed at `seconds` (OutOfRangeError outside the video)."""
        return self._dec.index_at_time(seconds)

    def save_index(self, path: Union[str, "os.PathLike[str]", None] = None) -> None:
        """Writes the sidecar index (default ``<video>.reelidx``)."""
        self._dec.save_index(path)

    # ---------------------------------------------------------------- frames
    def _single(self, f: Frames) -> Frames:
        return f._view(f.shape[1:], f.indices[0], f.pts_seconds[0], f.duration_seconds[0],
                       "CHW" if self._chw else "HWC")

    def __getitem__(self, key: Union[int, slice]) -> Frames:
        """``dec[i]``: one frame shaped like frame_shape (negative i counts from the end);
        ``dec[a:b:c]``: a batch [N, ...] (any step, Python slice rules)."""
        if isinstance(key, slice):
            return self._dec.get_frames(range(*key.indices(len(self))))
        try:
            i = operator.index(key)
        except TypeError:
            raise TypeError(f"VideoDecoder indices must be integers or slices, not {type(key).__name__}") from None
        return self._single(self._dec.get_frames((i,)))

    def __iter__(self) -> Iterator[Frames]:
        """Every frame in order, decoded a chunk at a time (one sequential pass);
        each frame is a view into its chunk."""
        n = len(self)
        per_frame = 1
        for dim in self.frame_shape:
            per_frame *= dim
        itemsize = {"uint8": 1, "float32": 4}.get(self.dtype, 2)
        chunk = max(1, min(32, (64 << 20) // (per_frame * itemsize)))
        layout = "CHW" if self._chw else "HWC"
        for start in range(0, n, chunk):
            block = self._dec.get_frames(range(start, min(n, start + chunk)))
            for k in range(block.shape[0]):
                yield block._view(block.shape[1:], block.indices[k], block.pts_seconds[k],
                                  block.duration_seconds[k], layout, k * per_frame)
            del block

    def get_frame_at(self, index: int) -> Frames:
        """One frame by index, like ``dec[index]``."""
        return self[index]

    def get_frames_at(self, indices: Sequence[int]) -> Frames:
        """Frames at `indices` (any order, repeats, negatives from the end), in request
        order, as one batch [N, ...]. One C call plans the least decoding."""
        return self._dec.get_frames(indices)

    def get_frames_in_range(self, start: int, stop: int, step: int = 1) -> Frames:
        """Frames start, start+step, ... < stop (Python slice rules)."""
        return self[slice(start, stop, step)]

    def get_frame_played_at(self, seconds: float) -> Frames:
        """The frame displayed at `seconds` (pts <= t < pts + duration)."""
        return self._single(self._dec.get_frames_at_times((seconds,)))

    def get_frames_played_at(self, seconds: Sequence[float]) -> Frames:
        """Frames displayed at each time in `seconds` (in seconds of stream time)."""
        return self._dec.get_frames_at_times(seconds)

    def get_frames_near(self, seconds: Sequence[float], *, tolerance_s: float = 1e-4,
                        on_violation: str = "raise") -> Frames:
        """The frame nearest to each time in `seconds`: the one whose pts in the
        exact frame table is closest (compared exactly; a tie goes to the
        earlier frame), never ``round(t * fps)``. Times in any order, with
        repeats; the frames come in request order, with ``indices``,
        ``pts_seconds``, ``distance_seconds`` (``|t - pts|``) and
        ``within_tolerance`` (``distance <= tolerance_s``). A frame farther
        than ``tolerance_s`` (default 1e-4 s, LeRobot's; a time outside the
        video is as far from the first or last frame as it is) raises
        :class:`reel.FrameTimestampError` (a ValueError) naming the file, the
        time and the nearest frame's pts, before anything is decoded; with
        ``on_violation="flag"`` the nearest frame comes back with
        ``within_tolerance`` False. A NaN or infinite time is an
        InvalidArgumentError either way. Unlike :meth:`get_frames_played_at`
        (``pts <= t < pts + duration``), a time a hair before a frame's start,
        as float32 timestamps ``i / fps`` often are, gives that frame."""
        return self._dec.get_frames_near(seconds, float(tolerance_s),
                                         opt.choice("on_violation", on_violation, opt.NEAR_VIOLATIONS))

    def get_frames_played_in_range(self, start_seconds: float, stop_seconds: float) -> Frames:
        """Frames displayed in [start_seconds, stop_seconds): the frame showing at
        start_seconds up to (not including) the first frame whose pts >= stop_seconds."""
        m = self.metadata
        if not start_seconds <= stop_seconds:
            raise ValueError(f"start_seconds ({start_seconds}) must be <= stop_seconds ({stop_seconds})")
        if not (m.begin_stream_seconds <= start_seconds < m.end_stream_seconds or
                start_seconds == stop_seconds):
            raise _reel.OutOfRangeError(
                f"{self._dec.name}: start_seconds {start_seconds} is outside "
                f"[{m.begin_stream_seconds}, {m.end_stream_seconds})")
        if stop_seconds > m.end_stream_seconds:
            raise _reel.OutOfRangeError(
                f"{self._dec.name}: stop_seconds {stop_seconds} is after the end ({m.end_stream_seconds})")
        if start_seconds == stop_seconds:
            return self._dec.get_frames(())
        first = self.index_at_time(start_seconds)
        stop = bisect.bisect_left(self._frame_pts_seconds(), stop_seconds)
        return self._dec.get_frames(range(first, max(first, stop)))

    # ---------------------------------------------------------------- audio
    def _audio_open(self) -> "_audio.Audio":
        if self._audio_obj is None:
            if self._kind != 0 or not isinstance(self._source, str):
                raise _reel.UnsupportedError(f"{self._dec.name}: audio: a path or a URL only, not a file object "
                                             "or memory")
            # an open decoder's bytes are shared: a URL's are fetched once for the video and its audio
            self._audio_obj = _audio.Audio(self._source, self._audio or _audio.AudioSettings(), self._remote,
                                           opt.choice("corrupt_policy", self._options["corrupt_policy"], opt.CORRUPT),
                                           decoder=None if self._dec.closed else self._dec)
        return self._audio_obj

    @property
    def audio_metadata(self) -> dict:
        """The audio stream's facts: sample rates and channels (native and
        output), codec, start_seconds (a0), stream_index."""
        return dict(self._audio_open().info)

    @property
    def audio_stats(self) -> Dict[str, int]:
        """What the audio object did so far: windows (asked for, holding
        stream samples), windows_cached (served whole from its cache),
        runs_from_a0 and runs_from_mark (decodes started), cache_bytes and
        cache_peak_bytes (never over the audio setting cache_bytes)."""
        return _reel.audio_stats(self._audio_open().handle)

    def get_audio_for_frames(self, indices: Sequence[int]) -> "_audio.AudioSamples":
        """The audio played while these frames are shown: the window [min
        pts, max(pts + duration)) of reel's frame table, sample-exact."""
        pts, dur, _, _, _ = self._frame_table()
        t0, t1 = _audio.frames_window(pts, dur, indices)
        return self._audio_open().samples(t0, t1, self.metadata.time_base)

    def get_audio_played_in_range(self, start_seconds: float, stop_seconds: float) -> "_audio.AudioSamples":
        """The audio of [start_seconds, stop_seconds) of the video's timeline."""
        t0, t1, tb = _audio.seconds_window(start_seconds, stop_seconds)
        return self._audio_open().samples(t0, t1, tb)

    def _frame_pts_seconds(self) -> List[float]:
        if self._pts_seconds is None:
            f = float(self.metadata.time_base)
            self._pts_seconds = [p * f for p in self._frame_table()[0]]
        return self._pts_seconds


def _rebuild_decoder(source: Any, options: dict) -> VideoDecoder:
    return VideoDecoder(source, **options)

