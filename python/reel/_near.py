# reel/_near.py: reel.decode_near, the frames nearest to each camera's times
# in one C call on reel's threads, and reel.DecoderCache, the decoders it
# keeps open between calls (bounded in count and bytes; fork- and pickle-safe).
from __future__ import annotations

import os
import threading
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _options as opt
from . import _reel
from ._decoder import VideoDecoder
from ._reel import Frames

__all__ = ["decode_near", "DecoderCache"]

#: The VideoDecoder options a DecoderCache opens its decoders with (the
#: output size, dtype and layout are decode_near's, per call).
CACHE_OPTIONS = ("stream", "threads", "index_mode", "corrupt_policy", "skip_nonref", "force_scan",
                 "check_keyframes", "remote", "device")


class DecoderCache:
    """The open decoders of :func:`reel.decode_near`, kept between calls,
    keyed by source (a path or URL as given). At most ``max_decoders`` of
    them and ``max_bytes`` of their memory (each decoder's estimate,
    ``reel_decoder_get_memory``: its frame table and the pictures its codec
    may hold, measured after each call); past either bound the least
    recently used decoders are closed. A call needs all of its cameras open
    at once: the bounds apply between calls, and a decoder in use by a call
    of another thread is never closed.

    ``options`` are VideoDecoder options for opening (``stream``,
    ``threads`` (default 1: decode_near's threads run the decoders side by
    side), ``index_mode``, ``corrupt_policy``, ``skip_nonref``,
    ``force_scan``, ``check_keyframes``, ``remote``, ``device``: ``"cuda"``
    opens them on the GPU, and decode_near's Frames are then on it).

    After ``fork`` the child starts with an empty cache (the parent's
    decoders are left to the parent) and opens its own on first use.
    Pickling keeps the settings only: the copy starts empty. Thread-safe.
    """

    def __init__(self, max_decoders: int = 16, max_bytes: int = 512 << 20, **options: Any) -> None:
        if isinstance(max_decoders, bool) or not isinstance(max_decoders, int) or max_decoders < 1:
            raise ValueError(f"DecoderCache: max_decoders must be an int >= 1, not {max_decoders!r}")
        if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
            raise ValueError(f"DecoderCache: max_bytes must be an int >= 0, not {max_bytes!r}")
        unknown = sorted(set(options) - set(CACHE_OPTIONS))
        if unknown:
            raise ValueError(f"DecoderCache: unknown option(s) {unknown}: expected among {', '.join(CACHE_OPTIONS)}")
        self._max_decoders = max_decoders
        self._max_bytes = max_bytes
        self._options: Dict[str, Any] = {"threads": 1, **options, "gop_contexts": 0}
        self._reset()

    def _reset(self) -> None:
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._decoders: "OrderedDict[str, VideoDecoder]" = OrderedDict()  # least recently used first
        self._bytes: Dict[str, int] = {}
        self._pins: Dict[str, int] = {}

    def _here(self) -> None:
        if self._pid != os.getpid():
            # A forked child: the parent's decoders (their threads and file
            # offsets are the parent's) are dropped, never closed here.
            self._reset()

    @property
    def max_decoders(self) -> int:
        return self._max_decoders

    @property
    def max_bytes(self) -> int:
        return self._max_bytes

    @property
    def num_decoders(self) -> int:
        """How many decoders are open now."""
        self._here()
        return len(self._decoders)

    @property
    def bytes(self) -> int:
        """The open decoders' memory, as estimated after their last call."""
        self._here()
        with self._lock:
            return sum(self._bytes.values())

    @property
    def sources(self) -> List[str]:
        """The sources of the open decoders, least recently used first."""
        self._here()
        with self._lock:
            return list(self._decoders)

    def __len__(self) -> int:
        return self.num_decoders

    def _lease(self, sources: Sequence[str]) -> List[VideoDecoder]:
        """The decoders of `sources` (opened if need be), pinned until _release."""
        self._here()
        out: List[VideoDecoder] = []
        try:
            for src in sources:
                with self._lock:
                    dec = self._decoders.get(src)
                    if dec is not None:
                        self._decoders.move_to_end(src)
                        self._pins[src] = self._pins.get(src, 0) + 1
                if dec is None:
                    dec = VideoDecoder(src, **self._options)  # a missing file raises here, by name
                    with self._lock:
                        kept = self._decoders.get(src)
                        if kept is not None:  # another thread opened it meanwhile
                            dec.close()
                            dec = kept
                            self._decoders.move_to_end(src)
                        else:
                            self._decoders[src] = dec
                            self._bytes[src] = 0
                        self._pins[src] = self._pins.get(src, 0) + 1
                out.append(dec)
        except BaseException:
            self._release(sources[:len(out)], measure=False)
            raise
        return out

    def _release(self, sources: Sequence[str], measure: bool = True) -> None:
        """Unpins `sources`, measures their memory, then closes the least
        recently used unpinned decoders past the bounds."""
        if self._pid != os.getpid():
            return
        with self._lock:
            for src in sources:
                left = self._pins.get(src, 0) - 1
                if left > 0:
                    self._pins[src] = left
                else:
                    self._pins.pop(src, None)
            mine = [(s, self._decoders[s]) for s in dict.fromkeys(sources) if s in self._decoders]
        sizes = {s: (d._dec.memory() if measure and not d.closed else 0) for s, d in mine}
        closing: List[VideoDecoder] = []
        with self._lock:
            for s, b in sizes.items():
                if s in self._bytes and measure:
                    self._bytes[s] = b
            for src in list(self._decoders):
                if len(self._decoders) <= self._max_decoders and sum(self._bytes.values()) <= self._max_bytes:
                    break
                if self._pins.get(src):
                    continue
                closing.append(self._decoders.pop(src))
                self._bytes.pop(src, None)
        for dec in closing:
            dec.close()

    def clear(self) -> None:
        """Closes every decoder not in use by a call."""
        self._here()
        with self._lock:
            gone = [s for s in self._decoders if not self._pins.get(s)]
            closing = [self._decoders.pop(s) for s in gone]
            for s in gone:
                self._bytes.pop(s, None)
        for dec in closing:
            dec.close()

    def __repr__(self) -> str:
        return (f"reel.DecoderCache({self.num_decoders} of {self._max_decoders} decoders, "
                f"{self.bytes} of {self._max_bytes} bytes)")

    def __reduce__(self) -> Any:
        options = {k: v for k, v in self._options.items() if k != "gop_contexts"}
        return (_rebuild_cache, (self._max_decoders, self._max_bytes, options))


def _rebuild_cache(max_decoders: int, max_bytes: int, options: Dict[str, Any]) -> DecoderCache:
    return DecoderCache(max_decoders, max_bytes, **options)


_defaults: Dict[str, DecoderCache] = {}
_default_lock = threading.Lock()


def default_cache(device: Optional[str] = None) -> DecoderCache:
    """The process's cache for decode_near calls that name none: one per
    device ("cpu", "cuda", "cuda:N")."""
    key = device or "cpu"
    with _default_lock:
        c = _defaults.get(key)
        if c is None:
            c = _defaults[key] = DecoderCache() if key == "cpu" else DecoderCache(device=key)
        return c


Size = Union[int, Sequence[int], None]


def _camera_sizes(size: Union[Size, Mapping[str, Size]], names: Sequence[str]) -> Dict[str, Tuple[int, int]]:
    if isinstance(size, Mapping):
        unknown = sorted(set(size) - set(names))
        if unknown:
            raise ValueError(f"decode_near: size names unknown cameras {unknown}")
        return {n: opt.size_hw(f"size[{n!r}]", size.get(n)) for n in names}
    hw = opt.size_hw("size", size)
    return {n: hw for n in names}


def _writable(name: str, x: Any, dtype_code: int) -> Any:
    """An object whose buffer is `x`'s memory: itself, or a CPU torch
    tensor's numpy view (bfloat16 as int16), so the decode lands in `x`."""
    try:
        memoryview(x)
        return x
    except TypeError:
        pass
    device = getattr(x, "device", None)
    if device is None or not hasattr(x, "numpy"):
        raise TypeError(f"decode_near: out[{name!r}] must be a writable array (numpy, or a CPU torch tensor), "
                        f"not {type(x).__name__}")
    if getattr(device, "type", "cpu") != "cpu":
        raise ValueError(f"decode_near: out[{name!r}] is on {device}: reel writes CPU memory")
    if not x.is_contiguous():
        raise ValueError(f"decode_near: out[{name!r}] must be contiguous")
    x = x.detach()
    if dtype_code == _reel.DTYPE_BFLOAT16:
        import torch  # a torch tensor was given: torch is there

        if x.dtype != torch.bfloat16:
            raise ValueError(f"decode_near: out[{name!r}] is {x.dtype}, the frames are bfloat16")
        x = x.view(torch.int16)
    return x.numpy()


def decode_near(
    cameras: Mapping[str, Tuple[Any, Sequence[float]]],
    *,
    tolerance_s: float = 1e-4,
    on_violation: str = "raise",
    threads: Optional[int] = None,
    size: Union[Size, Mapping[str, Size]] = None,
    dtype: Any = "uint8",
    layout: str = "CHW",
    color: str = "rgb",
    out: Optional[Mapping[str, Any]] = None,
    cache: Optional[DecoderCache] = None,
    device: Optional[str] = None,
) -> Dict[str, Frames]:
    """The frames nearest to each camera's times, every camera in one C call
    with the GIL released: ``{name: (source, [t, ...])}`` ->
    ``{name: Frames}``, each as :meth:`VideoDecoder.get_frames_near` gives it
    (``indices``, ``pts_seconds``, ``distance_seconds``,
    ``within_tolerance``; ``tolerance_s`` and ``on_violation`` alike).

    Every camera's times are checked before anything is decoded; then each
    file is planned once (cameras of the same source share one plan) and
    the files are decoded side by side on ``threads`` threads (None: the
    cores, or 1 inside a DataLoader worker), each over its keyframe runs on
    GOP-parallel contexts while threads leave room. ``source`` is a path or
    URL; its decoder comes from ``cache`` (None: the process's
    :class:`DecoderCache`). ``size``: None (each camera's own), an int, a
    ``(height, width)``, or ``{name: size}``; ``dtype``: uint8, uint16,
    float32, float16 or bfloat16 (as :class:`VideoDecoder`'s); ``layout``:
    ``"CHW"`` (frames [N, C, H, W]) or ``"HWC"``; ``color``: ``"rgb"`` (C = 3)
    or ``"gray"`` (C = 1; with ``uint16`` a deep source keeps its codes). ``out``: ``{name:
    array}`` (numpy, or a contiguous CPU torch tensor) of exactly the
    frames' shape and dtype, written in place (the returned Frames view it);
    cameras not in ``out`` get new Frames. ``device``: None (the cache's
    decoders decide; the process's cache is the CPU's), ``"cpu"``, or
    ``"cuda"`` / ``"cuda:N"``: decoders on that GPU (the process's cache for
    it, or ``cache`` if it was made with that device), the Frames in device
    memory (DLPack kDLCUDA, ``.cpu()``), equal to the CPU's; ``out`` is for
    CPU arrays only. Errors: FrameTimestampError,
    NotFoundError for a missing file, InvalidArgumentError for a NaN or
    infinite time, each naming the file."""
    if not isinstance(cameras, Mapping):
        raise TypeError(f"decode_near: cameras must be a dict {{name: (source, times)}}, not {type(cameras).__name__}")
    dtype_code = opt.dtype_code(dtype)
    color_code = opt.choice("color", color, opt.COLORS)
    layout_code = opt.choice("layout", layout, opt.FRAME_LAYOUTS)
    violation = opt.choice("on_violation", on_violation, opt.NEAR_VIOLATIONS)
    if threads is None:
        threads = 1 if opt.pool_owns_cores() else 0
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"decode_near: threads={threads!r}: an int >= 0 (0: the cores)")
    names = list(cameras)
    sources: List[str] = []
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"decode_near: camera names are strings, not {name!r}")
        entry = cameras[name]
        if not isinstance(entry, (tuple, list)) or len(entry) != 2:
            raise TypeError(f"decode_near: cameras[{name!r}] must be (source, times)")
        src = entry[0]
        if not isinstance(src, (str, os.PathLike)):
            raise TypeError(f"decode_near: cameras[{name!r}]: the source is a path or URL, not {type(src).__name__}")
        sources.append(os.fspath(src))
    sizes = _camera_sizes(size, names)
    outs = dict(out) if out is not None else {}
    unknown = sorted(set(outs) - set(names))
    if unknown:
        raise ValueError(f"decode_near: out names unknown cameras {unknown}")
    arrays = {n: _writable(n, a, dtype_code) for n, a in outs.items()}
    if device is not None and cache is not None and (cache._options.get("device") or "cpu") != device:
        raise ValueError(f"decode_near: device={device!r} but the cache's decoders open with "
                         f"device={cache._options.get('device') or 'cpu'!r}")
    c = cache if cache is not None else default_cache(device)
    decoders = c._lease(sources)
    try:
        jobs = [(name, dec._dec, cameras[name][1], sizes[name][1], sizes[name][0], arrays.get(name))
                for name, dec in zip(names, decoders)]
        frames = _reel.decode_near(jobs, float(tolerance_s), violation, threads, dtype_code, layout_code, color_code)
    finally:
        c._release(sources)
    return dict(zip(names, frames))
