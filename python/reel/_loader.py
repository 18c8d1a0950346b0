# reel/_loader.py: Loader, the multi-video batch pipeline (C threads: open and
# index, decode and transform, collate into a ring of batch buffers); its
# batches are zero-copy views that go back to the ring once freed.
from __future__ import annotations

import atexit
import inspect
import json
import operator
import os
import weakref
from fractions import Fraction
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from . import _options as opt
from . import _reel
from ._loader_settings import (  # noqa: F401 - part of _loader's surface
    BATCH_LAYOUTS,
    CROPS,
    LOADER_FIELDS,
    ON_ERROR,
    POLICIES,
    SAMPLERS,
    SHARD,
    c_settings,
    shuffle_window_code,
    size_policy_settings,
)
from ._reel import Frames

__all__ = ["Loader", "Batch", "ClipInfo", "dataset_info", "dataset_identity", "epoch_order", "stripe",
           "epoch_shape", "read_blocks", "check_state", "checkpoint_at", "loader_defaults", "loader_settings", "size_policy_settings",
           "STATE_VERSION", "LOADER_FIELDS", "SHARD"]

# The loader state's version (C's REEL_CHECKPOINT_VERSION): the state is the
# checkpoint's text form, the one this reel writes and reads.
STATE_VERSION: int = _reel.CHECKPOINT_VERSION


class ClipInfo(NamedTuple):
    """Where one clip of a batch came from."""

    path: str                  #: the decoded video
    label: int                 #: -1 when the sample has none
    sample: int                #: dataset index that was decoded
    requested: int             #: dataset index the sampler chose (differs after a replacement)
    position: int              #: position of the sample in the epoch's global order (padding: >= its size)
    clip: int                  #: clip number within its video
    attempt: int               #: 0, or the replacement try that succeeded
    padded: bool               #: a repeated sample that evens out the shards
    flipped: bool
    crop: Tuple[int, int, int, int]  #: source crop used, (x, y, width, height) in display pixels
    frame_indices: Tuple[int, ...]
    pts: Tuple[int, ...]       #: presentation timestamps in time_base units
    pts_seconds: Tuple[float, ...]
    time_base: Fraction
    epoch: int = 0             #: the batch's epoch
    samples_seen: int = 0      #: the batch's samples_seen (see Batch.samples_seen)
    num_frames: int = 0        #: frames in the clip
    size: Tuple[int, int] = (0, 0)  #: the clip's output (height, width)
    audio_first_sample: int = 0  #: with ``audio``: the first sample of the clip's audio (its s(t0), see Batch)
    #: ``corrupt_policy="skip"``: samples of the clip's audio that stand for dropped packets (zeros), all in
    #: ``audio_missing_span`` [lo, hi) (exactly it when the count is hi - lo), and those packets
    audio_missing: int = 0
    audio_missing_span: Tuple[int, int] = (0, 0)
    audio_corrupt_packets: int = 0


class Batch:
    """One batch: ``frames`` (reel.Frames, [B, T, C, H, W] by default, a view
    of a ring buffer), ``labels`` (reel.Frames of int64, [B]) and ``info`` (one
    ClipInfo per clip), plus ``epoch``, ``index`` (batch number in the epoch),
    ``position`` (of its first sample in the epoch's global order),
    ``num_samples``, ``num_failed`` and ``samples_seen`` (the global count of
    the epoch's samples consumed once every rank has consumed this batch: the
    state's ``samples_seen`` right after it).

    Variable batches (``sampler="fps"`` or a ``size_policy``: each sample of
    its own length and size): ``frames`` is a list of per-sample Frames
    ([T, C, H, W] in the batch's layout), each a view of the ring; with
    ``pad=True`` it is instead one Frames padded with zeros to the largest
    sample. ``lengths`` (frames per sample) and ``sizes`` ((height, width)
    per sample) say which part of each is real.

    With ``audio``: ``audio`` (reel.Frames of float32 [B, C, S_max], a view of
    the ring, each clip's samples followed by zeros; for a variable batch
    without ``pad``, a list of per-clip [C, S_i] views), ``audio_lengths``
    (int64 [B]: each clip's S_i), ``audio_valid`` (int64 [B, 2]: the [lo, hi)
    of each clip's samples that came from the stream, the rest zeros) and
    ``audio_sample_rate``; ``info[i].audio_first_sample`` says where clip i's
    audio starts. Without audio they are None (the rate 0).

    The ring buffer goes back to the loader when the batch and every array
    viewing it (torch tensors, numpy arrays) are freed."""

    __slots__ = ("frames", "labels", "info", "epoch", "index", "position", "num_samples", "num_failed",
                 "samples_seen", "lengths", "sizes", "audio", "audio_lengths", "audio_valid", "audio_sample_rate")

    def __init__(self, frames: Union[Frames, List[Frames]], labels: Frames, info: List[ClipInfo],
                 meta: Dict[str, Any]) -> None:
        self.frames: Any = frames  # Frames, or a list of them (variable batches)
        self.lengths: List[int] = [c.num_frames for c in info]
        self.sizes: List[Tuple[int, int]] = [c.size for c in info]
        self.labels = labels
        self.info = info
        self.epoch: int = meta["epoch"]
        self.index: int = meta["index"]
        self.position: int = meta["position"]
        self.num_samples: int = meta["num_samples"]
        self.num_failed: int = meta["num_failed"]
        self.samples_seen: int = meta["samples_seen"]
        audio = meta.get("audio")
        self.audio: Any = audio[0] if audio else None  # Frames, or a list of them (variable, unpadded)
        self.audio_lengths: Optional[Frames] = audio[1] if audio else None
        self.audio_valid: Optional[Frames] = audio[2] if audio else None
        self.audio_sample_rate: int = meta.get("audio_sample_rate", 0)

    def __len__(self) -> int:
        return len(self.frames) if isinstance(self.frames, list) else self.frames.shape[0]

    def torch(self) -> Tuple[Any, Any]:
        """(frames, labels) as torch tensors, zero-copy (frames: a list of them
        for an unpadded variable batch)."""
        if isinstance(self.frames, list):
            return [f.torch() for f in self.frames], self.labels.torch()
        return self.frames.torch(), self.labels.torch()

    def numpy(self) -> Tuple[Any, Any]:
        """(frames, labels) as numpy arrays, zero-copy (a list of them for an
        unpadded variable batch)."""
        if isinstance(self.frames, list):
            return [f.numpy() for f in self.frames], self.labels.numpy()
        return self.frames.numpy(), self.labels.numpy()

    def __repr__(self) -> str:
        frames = f"[{len(self.frames)} clips]" if isinstance(self.frames, list) else repr(self.frames)
        return (f"reel.Batch(epoch={self.epoch}, index={self.index}, frames={frames}, "
                f"clips={len(self.info)})")


def _clip_info(d: Dict[str, Any], meta: Dict[str, Any]) -> ClipInfo:
    tb = Fraction(*d["time_base"]) if d["time_base"][1] else Fraction(0)
    f = float(tb)
    pts = tuple(d["pts"])
    return ClipInfo(d["path"], d["label"], d["sample"], d["requested"], d["position"], d["clip"],
                    d["attempt"], d["padded"], d["flipped"], d["crop"], tuple(d["frame_indices"]),
                    pts, tuple(p * f for p in pts), tb, meta["epoch"], meta["samples_seen"], d["num_frames"],
                    tuple(d["size"]), d["audio_first_sample"], d["audio_missing"], tuple(d["audio_missing_span"]),
                    d["audio_corrupt_packets"])


def _dataset_entries(source: Any) -> Any:
    """A path (folder or manifest) stays a path; a list becomes C entries."""
    if isinstance(source, (str, bytes, os.PathLike)):
        return source
    entries: List[Tuple[Any, Optional[int], Optional[str], float, float]] = []
    for item in source:
        path: Any
        label: Any = None
        start, end = 0.0, -1.0
        if isinstance(item, (str, bytes, os.PathLike)):
            path = item
        elif isinstance(item, dict):
            path = item.get("path") or item.get("video") or item.get("file")
            label = item.get("label")
            start = float(item.get("start", 0.0) or 0.0)
            end = float(item.get("end", -1.0) if item.get("end") is not None else -1.0)
        else:
            item = tuple(item)
            path, rest = item[0], item[1:]
            if rest:
                label = rest[0]
            if len(rest) > 1 and rest[1] is not None:
                start = float(rest[1])
            if len(rest) > 2 and rest[2] is not None:
                end = float(rest[2])
        if path is None:
            raise ValueError(f"dataset entry without a path: {item!r}")
        if isinstance(label, str):
            entries.append((path, None, label, start, end))
        else:
            entries.append((path, None if label is None else int(label), None, start, end))
    return entries


def dataset_info(source: Any) -> Dict[str, Any]:
    """``{"size": N, "class_names": [...], "skipped": [...]}`` of a dataset
    source as Loader takes it (a folder scanned recursively, a CSV/TSV/JSONL
    manifest, or a list of paths / (path, label[, start, end]) / dicts),
    without starting a loader. class_names is empty when labels are integers;
    skipped lists the folder links a scan did not follow (each folder is
    scanned once). Raises NotFoundError for a
    missing folder or manifest, ReelError for an empty or unreadable one."""
    info = dataset_identity(source)
    del info["fingerprint"]
    return info


def dataset_identity(source: Any) -> Dict[str, Any]:
    """dataset_info() plus ``fingerprint``: the hash of the entries a loader
    state names its dataset by."""
    src = source if isinstance(source, (str, bytes, os.PathLike)) else list(source)
    return dict(_reel.dataset_info(_dataset_entries(src)))


def loader_defaults() -> Dict[str, Any]:
    """Loader's keywords (all but ``source``) with their defaults."""
    return {k: p.default for k, p in inspect.signature(Loader.__init__).parameters.items()
            if k not in ("self", "source")}


def loader_settings(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The C settings of a Loader with these keywords (any left out at their
    defaults), by their full C names (reel_loader_settings_get_fields) as
    reel._reel.Loader and clip_geometry take them. Converts the values'
    types and choices; C judges their ranges."""
    defaults = loader_defaults()
    unknown = sorted(set(config) - set(defaults))
    if unknown:
        raise TypeError(f"Loader: unknown keyword(s) {unknown}")
    c = dict(defaults)
    c.update(config)
    return c_settings(c)


_live: "weakref.WeakSet[Loader]" = weakref.WeakSet()


@atexit.register
def _close_all() -> None:  # threads must not outlive the interpreter
    for loader in list(_live):
        try:
            loader.close()
        except Exception:
            pass


class Loader:
    """Batches of clips from many videos, decoded by C threads into a ring of
    preallocated batch buffers (zero-copy to torch through DLPack).

    ``source``: a folder (Kinetics layout: ``class/video.mp4``; sorted), a
    manifest (.csv/.tsv/.txt/.jsonl with path, label, start, end), or a list
    of paths, ``(path, label[, start, end])`` tuples or dicts with those keys
    (integer labels, or class names mapped to sorted indices).

    Each video gives ``clips_per_video`` clips of ``frames_per_clip`` frames;
    a batch holds ``batch_size`` videos, so ``batch_size * clips_per_video``
    clips, shaped [B, T, C, H, W] (``layout``: "BTCHW", "BCTHW" or "BTHWC").

    Geometry: frames are resized (``resize``: None scales the short side to
    ``round(min(size) * 256 / 224)``; an int is the short side; ``(h, w)`` an
    exact size; False none), then cropped to ``size`` (int or (h, w)) by
    ``crop``: "center", "random", "random_resized" (torchvision's, with
    ``scale`` and ``ratio``) or None (resize straight to ``size``). ``flip``:
    False, True or "random" (``flip_probability``, per clip). All of it is
    fused into one conversion per frame.

    Sampling: ``sampler`` = "random" | "regular" (by index, ``frame_stride``
    frames apart) | "random_time" | "regular_time" (``seconds_between_frames``
    apart), clip starts within [``sampling_range_start``, ``sampling_range_end``)
    (None: the last start whose clip fits), ``policy`` "repeat_last" | "wrap" |
    "drop" | "error" for clips running past the end ("drop" and "error" fail a
    video that then lacks clips, and ``on_error`` applies). The samplers are
    those of ``reel.clips_at_*``: the same seed gives the same clips.

    Order and resume: ``shuffle`` each epoch from ``seed``; every random choice
    is a function of (seed, epoch, sample), so batches do not depend on thread
    counts and ``state_dict()`` / ``load_state_dict()`` resume exactly, also on
    another ``rank``/``world_size``/``batch_size``/thread count (elastic resume:
    the state holds the global ``samples_seen`` of the epoch's one order).
    ``epochs=None`` runs until closed; each ``for batch in loader`` runs to the
    end of the current epoch. ``rank``/``world_size`` shard the dataset: each
    epoch has one global order, and rank r's k-th batch is the r-th run of
    ``batch_size`` samples in the k-th global batch of ``world_size *
    batch_size``. ``canonical_ranks``/``canonical_batch`` (default: this run's
    world_size and batch_size; a loaded state brings its own) fix how that
    order is laid out: the shuffled order is cut into ``canonical_ranks``
    spans taken ``canonical_batch`` samples at a time, so each rank of the
    first run reads its own span. ``num_workers``/``worker``: this loader is
    DataLoader worker ``worker`` of its rank (reel.torch.VideoDataset sets them).
    ``first_epoch``: the number of the first epoch (default 0). ``samples``:
    decode exactly these dataset indices, in this order, as each epoch
    (shuffle does not apply to the list); every sample keeps the clips, crops
    and flips a whole-dataset loader gives it in that epoch (how
    ``reel.ray.read_clips`` splits an epoch into read tasks).
    A packed store is shuffled shard by shard by default (FFCV's quasi-random
    order: its shards in a shuffled order, the records of each shuffled within
    it, so reads stay sequential); ``shuffle_window="full"`` shuffles it fully,
    ``shuffle_window=W`` takes blocks of W consecutive records in a shuffled
    order, shuffled within each block. Videos get a full shuffle.

    Errors: ``on_error`` "skip" (a shorter batch), "replace" (another sample)
    or "raise" (a ReelError from iteration); ``metrics()`` reports coverage and
    every failure. Threads, by their C names: ``decode_threads`` the
    decoding pool, stage 2 (C ``decode_threads``; None: the core count),
    ``open_threads``, ``collate_threads``, ``decoder_threads`` (FFmpeg threads
    inside each decoder, C ``decoder.threads``, VideoDecoder's ``threads``;
    default 1), ``prefetch_batches``. ``index_mode`` and ``corrupt_policy`` are C's
    ``decoder.index_mode`` and ``decoder.corrupt_policy`` (VideoDecoder's
    ``index_mode`` and ``corrupt_policy``), ``remote`` is ``decoder.remote``.

    Remote input (http(s):// and s3:// videos, manifests, prefixes and
    stores): ``remote={"request_timeout": s, "connect_timeout": s,
    "max_retries": n, "retry_budget": s, "readahead_min": bytes,
    "readahead_max": bytes, "whole_object_max": bytes, "verify_tls": bool,
    "ca_bundle": path, "bearer_token": str, "max_bytes_in_flight": bytes}``
    (omitted keys keep the defaults: 30 s, 10 s, 5 retries, 60 s, 256 KiB,
    8 MiB, 16 MiB, verify, 256 MiB). Stage 1 fetches each clip's packets
    ahead of decoding, up to ``max_bytes_in_flight`` across the loader; the
    loader's objects share kept-alive connections, DNS and TLS sessions.
    ``metrics()["remote"]`` counts requests, retries, failures, bytes,
    connections made, request latency (p50/p99), waits for the budget and
    ``bytes_in_flight_peak``.

    Video-language models: ``sampler="fps"`` samples each whole video at
    ``fps`` frames per second of video, between ``min_frames`` and
    ``max_frames`` (qwen-vl-utils' defaults 2, 4, 768; ``sampler="count"``:
    ``frames_per_clip`` frames by linspace), and ``size_policy={"factor": 28,
    "min_pixels": ..., "max_pixels": ..., "total_pixels": ...,
    "resized_height": ..., "resized_width": ...}`` gives each video its own
    size the way qwen-vl-utils' fetch_video does (``size`` and ``crop`` are
    then ignored; ``filter``/``convert_path`` default to reel.vlm's "bicubic"
    on "after_rgb"). The batches are variable: ``batch.frames`` is a list of
    per-sample Frames, each a view of the ring, or with ``pad=True`` one
    Frames padded with zeros to the largest (``batch.lengths``,
    ``batch.sizes``). Each sample's frames and pixels are those of
    ``reel.vlm.fetch_video`` for the same element. The ring is then a byte
    budget (``ring_bytes``, default 1 GiB): a batch is planned while those in
    flight hold less. When decode threads would idle, a long sample is
    decoded GOP-parallel over them (``metrics()["gop_split_samples"]``; videos,
    in every layout); ``gop_split=False`` turns that off.
    Sharding, shuffle, resume, ``on_error`` and the metrics work as on clips.

    Audio: ``audio={"sample_rate": 16000, "channels": 1}`` gives each clip the
    audio played over its frames, sample-exact (reel/audio.h: the window
    [min pts, max(pts + duration)) of the clip's frames, samples s(t0) ..
    s(t1) - 1, so adjacent clips tile the stream), as
    ``VideoDecoder(audio=...).get_audio_for_frames(clip's frame_indices)``
    gives it: ``batch.audio``, ``batch.audio_lengths``, ``batch.audio_valid``,
    ``info[i].audio_first_sample``. A batch holds one rate and channel count,
    so both are required: ``channels`` 1 mixes each video's channels to their
    mean, 2 or more must be each video's own count (another fails the
    sample under ``on_error``). ``"missing": "zeros"`` gives a video without
    audio zeros (default "raise": the sample fails, REEL_E_NO_AUDIO_STREAM);
    ``"stream_index"`` picks a stream. Videos (files, and http(s)/s3 URLs read
    by byte ranges with ``remote``, their requests counted in
    ``metrics()["remote"]``), and stores packed with ``--audio``.
    ``metrics()["audio_samples"]`` and ``["audio_decode_seconds"]`` count the work.
    A damaged audio packet follows ``corrupt_policy``: "fail" fails the
    sample (``on_error`` decides); "skip" delivers it with the packet's
    samples zeros, ``batch.audio_valid`` narrowed to the longest clean run,
    ``info[i].audio_missing`` / ``audio_missing_span`` /
    ``audio_corrupt_packets`` saying where, and
    ``metrics()["audio_corrupt_packets"]`` counting them.
    ``device``: ``"cpu"`` (default), ``"cuda"`` or ``"cuda:N"`` as on
    :class:`VideoDecoder`: CUDA raises the named error (no driver, no GPU,
    no kernels) unless ``device_fallback="cpu"``, which loads on the CPU.
    On a GPU ``batch.frames`` is on the device (variable batches: a list of
    device Frames, one per sample; ``pad=True`` is not done there).

    Memory: ``pin_memory=True`` allocates the ring page-locked (cudaHostAlloc
    from the CUDA runtime found at run time, for asynchronous copies to a
    GPU), or plain memory where there is no runtime, driver or device;
    ``metrics()["ring_memory"]`` says "pinned" or "plain".

    Use as a context manager, or call ``close()``: the threads stop once every
    batch handed out has been freed.
    """

    def __init__(
        self,
        source: Any,
        frames_per_clip: int = 8,
        clips_per_video: int = 1,
        size: Union[int, Sequence[int]] = 224,
        batch_size: int = 32,
        decode_threads: Optional[int] = None,
        shuffle: bool = True,
        seed: int = 0,
        *,
        sampler: str = "random",
        frame_stride: int = 1,
        seconds_between_frames: Optional[float] = None,
        sampling_range_start: float = 0.0,
        sampling_range_end: Optional[float] = None,
        policy: str = "repeat_last",
        resize: Union[int, Sequence[int], bool, None] = None,
        crop: Optional[str] = "center",
        flip: Union[bool, str] = False,
        flip_probability: Optional[float] = None,
        scale: Optional[Sequence[float]] = None,
        ratio: Optional[Sequence[float]] = None,
        filter: Optional[str] = None,
        convert_path: Optional[str] = None,
        apply_rotation: bool = True,
        dtype: Any = "uint8",
        color: str = "rgb",
        layout: str = "BTCHW",
        mean: Optional[Sequence[float]] = None,
        std: Optional[Sequence[float]] = None,
        divisor: float = 255.0,
        drop_last: bool = False,
        epochs: Optional[int] = None,
        rank: int = 0,
        world_size: int = 1,
        shard_mode: str = "pad",
        ordered: bool = True,
        on_error: str = "skip",
        max_replacements: Optional[int] = None,
        sample_time_limit: Optional[float] = None,
        open_threads: Optional[int] = None,
        collate_threads: Optional[int] = None,
        decoder_threads: Optional[int] = None,
        prefetch_batches: Optional[int] = None,
        queue_capacity: Optional[int] = None,
        alignment: Optional[int] = None,
        index_mode: Union[bool, str, None] = "read",
        corrupt_policy: str = "fail",
        trace: bool = False,
        trace_capacity: Optional[int] = None,
        pin_memory: bool = False,
        min_coverage: float = 0.0,
        failure_log_size: Optional[int] = None,
        shuffle_window: Union[int, str, None] = None,
        remote: Optional[Dict[str, Any]] = None,
        canonical_ranks: Optional[int] = None,
        canonical_batch: Optional[int] = None,
        num_workers: int = 1,
        worker: int = 0,
        samples: Optional[Sequence[int]] = None,
        first_epoch: int = 0,
        fps: Optional[float] = None,
        min_frames: Optional[int] = None,
        max_frames: Optional[int] = None,
        size_policy: Optional[Dict[str, Any]] = None,
        pad: bool = False,
        ring_bytes: Optional[int] = None,
        gop_split: bool = True,
        audio: Optional[Dict[str, Any]] = None,
        device: Optional[str] = None,
        device_fallback: Optional[str] = None,
    ) -> None:
        # The keywords as given: what config, pickling and states carry. Each
        # reaches its C field in loader_settings (LOADER_FIELDS, or
        # _converted_settings by name).
        self._config: Dict[str, Any] = {
            "frames_per_clip": frames_per_clip, "clips_per_video": clips_per_video, "size": size,
            "batch_size": batch_size, "decode_threads": decode_threads, "shuffle": shuffle, "seed": seed,
            "sampler": sampler, "frame_stride": frame_stride, "seconds_between_frames": seconds_between_frames,
            "sampling_range_start": sampling_range_start, "sampling_range_end": sampling_range_end,
            "policy": policy, "resize": resize, "crop": crop, "flip": flip, "flip_probability": flip_probability,
            "scale": scale, "ratio": ratio, "filter": filter, "convert_path": convert_path, "apply_rotation": apply_rotation,
            "dtype": dtype, "color": color, "layout": layout, "mean": mean, "std": std, "divisor": divisor, "drop_last": drop_last,
            "epochs": epochs, "rank": rank, "world_size": world_size, "shard_mode": shard_mode, "ordered": ordered,
            "on_error": on_error, "max_replacements": max_replacements, "sample_time_limit": sample_time_limit,
            "open_threads": open_threads, "collate_threads": collate_threads, "decoder_threads": decoder_threads,
            "prefetch_batches": prefetch_batches, "queue_capacity": queue_capacity, "alignment": alignment,
            "index_mode": index_mode, "corrupt_policy": corrupt_policy, "trace": trace, "trace_capacity": trace_capacity,
            "pin_memory": pin_memory, "min_coverage": min_coverage, "failure_log_size": failure_log_size,
            "shuffle_window": shuffle_window, "remote": remote, "canonical_ranks": canonical_ranks,
            "canonical_batch": canonical_batch, "num_workers": num_workers, "worker": worker, "samples": samples,
            "first_epoch": first_epoch, "fps": fps, "min_frames": min_frames, "max_frames": max_frames,
            "size_policy": size_policy, "pad": pad, "ring_bytes": ring_bytes, "gop_split": gop_split,
            "audio": audio,
            "device": device, "device_fallback": device_fallback,
        }
        self._source = source if isinstance(source, (str, bytes, os.PathLike)) else list(source)
        self._loader = _reel.Loader(_dataset_entries(self._source), loader_settings(self._config))
        info = self._loader.dataset_info()
        self.num_videos: int = info["size"]
        self.fingerprint: int = info["fingerprint"]
        self.class_names: List[str] = info["class_names"]
        _live.add(self)

    # ---------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator[Batch]:
        """Batches to the end of the current epoch."""
        return _EpochIterator(self)

    def next_batch(self, timeout: Optional[float] = None) -> Optional[Batch]:
        """The next batch, or None at the end of an epoch (then the next epoch starts).

        Waits as long as it takes, or at most ``timeout`` seconds, then raises
        TimeoutError (nothing is lost: call again to go on waiting). The wait
        releases the GIL and stops for Ctrl-C (KeyboardInterrupt)."""
        item = self._loader.next() if timeout is None else self._loader.next(float(timeout))
        if item is None:
            return None
        frames, labels, clips, meta = item
        return Batch(frames, labels, [_clip_info(c, meta) for c in clips], meta)

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        return self._loader.batches_per_epoch()

    # ---------------------------------------------------------------- state
    def state_dict(self) -> Dict[str, Any]:
        """Where the epoch is, as a plain dict (picklable, JSON-able):

        ``version``, ``epoch``, ``samples_seen`` (the global number of the
        epoch's samples consumed: after k batches on every rank, k *
        world_size * batch_size, so every rank of a synchronous job saves the
        same state), ``seed``, ``canonical_ranks``, ``canonical_batch``,
        ``shuffle``, ``shuffle_window``, ``num_videos``, ``fingerprint`` (of the
        dataset's entries) and ``topology`` (the world_size, batch_size and
        num_workers it was saved under). Load it with load_state_dict() on any
        rank, world size, batch size or thread count."""
        state: Dict[str, Any] = json.loads(self._loader.get_checkpoint())  # C writes it: reel_loader_checkpoint_format
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues a saved epoch on this loader: exactly the samples not yet
        consumed (split over this loader's ranks and batches), each with the
        frames, crop and flip it would have had. Batches still held stay
        valid. Raises ValueError for a state of another dataset, seed or
        shuffle, and for one written by a newer reel."""
        # C's reader (reel_loader_checkpoint_parse) checks every key, type and
        # range in full width, and the restore whether it fits; both name
        # what they refuse
        self._loader.restore_checkpoint(_state_text(state))

    # ---------------------------------------------------------------- reporting
    def metrics(self) -> Dict[str, Any]:
        """Throughput, coverage, data/model time, per-stage load, memory;
        ``failures``: the most recent failed attempts (path, reason, status,
        cause, epoch, position, sample; at most ``failure_log_size``),
        ``failure_count`` and ``failures_by_cause`` for the whole run. The
        keys are those of the C library's metrics JSON (one table in C,
        ``reel_loader_metrics_get_fields``)."""
        m: Dict[str, Any] = self._loader.metrics()
        m["failures"] = self._loader.failures()
        m["failed_not_listed"] = max(0, m["failure_count"] - len(m["failures"]))
        return m

    def write_trace(self, path: Union[str, "os.PathLike[str]"]) -> None:
        """Writes a Chrome/Perfetto trace of the threads (needs trace=True)."""
        self._loader.write_trace(path)

    @property
    def config(self) -> Dict[str, Any]:
        """The constructor's arguments except the source (a plain, picklable dict)."""
        return dict(self._config)

    @property
    def closed(self) -> bool:
        return self._loader.closed

    @property
    def ring_size(self) -> int:
        """Batch buffers in the ring: at most this many batches can be alive at once."""
        return self._loader.ring_size

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Stops the loader. Its threads are joined and its memory freed as soon
        as no batch handed out is alive (at once if none is)."""
        self._loader.close()
        _live.discard(self)

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __reduce__(self) -> Any:
        state = None if self.closed else self.state_dict()
        return (_rebuild_loader, (self._source, self._config, state))

    def __repr__(self) -> str:
        c = self._config
        frames = (f"sampler='fps', fps={c['fps'] if c['fps'] is not None else 2.0}" if c["sampler"] == "fps"
                  else f"frames_per_clip={c['frames_per_clip']}")
        size = "size_policy=..." if c["size_policy"] is not None else f"size={c['size']}"
        return (f"reel.Loader({self.num_videos} videos, batch_size={c['batch_size']}, {frames}, {size}"
                f"{', closed' if self.closed else ''})")


class _EpochIterator:
    """Iterates one epoch; unlike a generator it keeps no reference to the
    batch it handed out, so no ring buffer stays held by the iterator."""

    __slots__ = ("_loader", "_done")

    def __init__(self, loader: Loader) -> None:
        self._loader = loader
        self._done = False

    def __iter__(self) -> "_EpochIterator":
        return self

    def __next__(self) -> Batch:
        if self._done:
            raise StopIteration
        batch = self._loader.next_batch()
        if batch is None:
            self._done = True
            raise StopIteration
        return batch


def epoch_order(source: Any, epoch: int = 0, *, seed: int = 0, shuffle: bool = True,
                shuffle_window: Union[int, str, None] = None, canonical_ranks: int = 1,
                canonical_batch: int = 1) -> List[int]:
    """The dataset indices of one epoch's global order, as a Loader with these
    settings reads it (a store shard by shard by default). The order depends
    on nothing else: with a state's ``seed``, ``canonical_ranks`` and
    ``canonical_batch``, ``epoch_order(...)[samples_seen:]`` is what is left of
    its epoch. For consumers that plan epochs without a Loader (reel/order.h).
    ``source`` may also be an int n: the order of n samples that are not
    videos (reel.lerobot's frames), in one read block."""
    if isinstance(source, int) and not isinstance(source, bool):
        src: Any = source
    else:
        src = _dataset_entries(source if isinstance(source, (str, bytes, os.PathLike)) else list(source))
    return _reel.epoch_order(src, int(epoch), int(seed) & 0xFFFFFFFFFFFFFFFF, bool(shuffle),
                             shuffle_window_code(shuffle_window), int(canonical_ranks), int(canonical_batch))


def stripe(num_samples: int, batch_size: int, *, world_size: int = 1, rank: int = 0, samples_seen: int = 0,
           shard_mode: str = "pad", drop_last: bool = False, num_workers: int = 1,
           worker: int = 0) -> List[Tuple[int, int, int]]:
    """A rank's batches of an epoch from ``samples_seen`` on, as the Loader
    cuts them: ``(first, count, samples_seen_after)`` per batch, positions
    ``first .. first + count - 1`` of the epoch's order (:func:`epoch_order`;
    positions past its end are padding, the order again from its start) and
    the state's samples_seen once every rank has consumed the batch."""
    return _reel.stripe(int(num_samples), int(samples_seen), int(world_size), int(rank), int(batch_size),
                        opt.choice("shard_mode", shard_mode, SHARD), bool(drop_last), int(num_workers), int(worker))


def epoch_shape(num_samples: int, batch_size: int, *, world_size: int = 1, shard_mode: str = "pad",
                drop_last: bool = False) -> Tuple[int, int]:
    """(samples per rank, batches per rank) of one epoch without a loader
    (reel_loader_epoch_shape)."""
    return _reel.epoch_shape(int(num_samples), int(world_size), opt.choice("shard_mode", shard_mode, SHARD), int(batch_size),
                             bool(drop_last))


def read_blocks(source: Any) -> List[int]:
    """The starts of the runs of samples a source reads best together (a
    store's shards; videos: one run), from 0 to its size
    (reel_dataset_get_read_blocks)."""
    src = source if isinstance(source, (str, bytes, os.PathLike)) else list(source)
    return list(_reel.read_blocks(_dataset_entries(src)))


def _json_plain(key: str, v: Any) -> Any:
    """A state value as JSON takes it: integer types (numpy) become int; the
    C reader judges the rest (a float or string where an integer belongs is
    refused there, by name)."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, Mapping):
        return {str(k): _json_plain(f"{key}.{k}", x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_plain(key, x) for x in v]
    try:
        return operator.index(v)
    except TypeError:
        raise ValueError(f"loader state: {key} must be a number, string or dict, not {v!r}") from None


def _state_text(state: Mapping[str, Any]) -> bytes:
    """A state's text form for C's reader (reel_loader_checkpoint_parse,
    which checks every key, type and range and names what it refuses)."""
    if not isinstance(state, Mapping):
        raise ValueError(f"a loader state is the dict state_dict() gives, not {type(state).__name__}")
    plain = {str(k): _json_plain(str(k), v) for k, v in state.items()}
    seed = plain.get("seed")
    if isinstance(seed, int) and not isinstance(seed, bool):
        plain["seed"] = seed & 0xFFFFFFFFFFFFFFFF  # a negative seed names the same order as Loader(seed=...)
    return json.dumps(plain).encode()


def check_state(state: Mapping[str, Any], num_videos: int, fingerprint: int, config: Dict[str, Any]) -> None:
    """Raises ValueError unless `state` (a Loader/VideoDataset state) fits a
    loader of this dataset and these options (Loader keywords; missing ones
    at their defaults). C decides (reel_loader_checkpoint_parse, _check)."""
    _reel.checkpoint_check(_state_text(state), loader_settings(config), num_videos, fingerprint)


def checkpoint_at(config: Dict[str, Any], num_videos: int, fingerprint: int, epoch: int,
                  samples_seen: int) -> Dict[str, Any]:
    """The state a Loader with these keywords over that dataset gives at
    (epoch, samples_seen), without a loader (reel_loader_checkpoint_init)."""
    text = _reel.checkpoint_init(loader_settings(config), num_videos, fingerprint, epoch, samples_seen)
    state: Dict[str, Any] = json.loads(text)
    return state


def _rebuild_loader(source: Any, config: Dict[str, Any], state: Optional[Dict[str, Any]]) -> Loader:
    loader = Loader(source, **config)
    if state is not None:
        loader.load_state_dict(state)
    return loader
