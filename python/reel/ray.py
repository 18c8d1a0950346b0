# reel/ray.py: reel on a Ray cluster: read_clips (clips planned by the loader,
# a Ray Data datasource), ClipDecoder, PadCollate and pack (a store built by
# Ray tasks). Needs `pip install reel[ray]`; `import reel` never imports it.
"""reel on Ray: clips as a Ray Data dataset, and stores built by Ray tasks.

    import reel.ray
    ds = reel.ray.read_clips("kinetics/train", frames_per_clip=8, frame_stride=4, size=224, seed=0, epochs=10)
    clips, failures = reel.ray.split_failures(ds)
    clips = clips.select_columns(list(reel.ray.TENSOR_COLUMNS))  # no strings
    for batch in clips.iter_torch_batches(batch_size=32):
        x, y = batch["frames"], batch["label"]         # [32, 8, 3, 224, 224] uint8, [32]

Video-language models: ``read_clips(..., sampler="fps", fps=2,
size_policy={"factor": 28, ...})`` gives one row per video, each of its own
length and size (see :func:`read_clips`).

Rows are clips, decoded by reel's C loader inside each read task (the GIL
released, decoders and converters reused across the task's videos). For a
given ``seed``, the rows of each epoch are the clips ``reel.Loader`` delivers
in that epoch: the same samples, clip starts, crops and flips.
"""
from __future__ import annotations

import bisect
import os
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

try:
    import numpy as np
    import ray
    import ray.data
    from ray.data.block import BlockAccessor, BlockMetadata
    from ray.data.datasource import Datasource, ReadTask
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError(f"reel.ray needs Ray Data and numpy: pip install 'reel[ray]' ({exc})") from exc

from . import _reel
from ._decoder import VideoDecoder
from ._loader import (
    Loader,
    dataset_info,
    epoch_order,
    loader_defaults,
    loader_settings,
    read_blocks,
    size_policy_settings,
)
from ._ray_collate import PadCollate
from ._ray_pack import main, pack, read_progress, redact  # noqa: F401 - reel.ray.pack and its CLI

__all__ = ["read_clips", "ClipDatasource", "split_failures", "ClipDecoder", "PadCollate", "pack", "COLUMNS",
           "TENSOR_COLUMNS", "AUDIO_COLUMNS"]

#: The columns of a read_clips row, in order.
COLUMNS = ("frames", "label", "path", "sample", "clip", "frame_indices", "pts_seconds", "crop", "flipped",
           "epoch", "failure")
#: COLUMNS less the strings (path, failure): what ``iter_torch_batches`` can
#: make tensors of. ``ds.select_columns(list(TENSOR_COLUMNS))`` is pushed into
#: the read tasks, which then build only these.
TENSOR_COLUMNS = tuple(c for c in COLUMNS if c not in ("path", "failure"))
#: The columns ``read_clips(audio=...)`` adds after COLUMNS: each clip's
#: ``audio`` (float32 [C, S_i], a variable-shaped tensor column),
#: ``audio_first_sample``, ``audio_valid`` ([lo, hi)) and
#: ``audio_sample_rate``: the Loader's ``batch.audio`` row, ``ClipInfo.
#: audio_first_sample``, ``batch.audio_valid`` and ``batch.audio_sample_rate``.
AUDIO_COLUMNS = ("audio", "audio_first_sample", "audio_valid", "audio_sample_rate")

# Loader options that make no sense per read task: Ray shards, batches, orders
# and counts epochs; read_clips sets these itself.
_NOT_OPTIONS = frozenset({"batch_size", "rank", "world_size", "shard_mode", "drop_last", "ordered", "samples",
                          "prefetch_batches", "pin_memory", "trace", "trace_capacity",
                          "shuffle_window", "min_coverage", "failure_log_size"})
_LAYOUT_ROW = {"BTCHW": "TCHW", "BCTHW": "CTHW", "BTHWC": "THWC"}
_ITEMSIZE = {"uint8": 1, "uint16": 2, "float32": 4, "float16": 2, "bfloat16": 2}


def _dtype_name(dtype: Any) -> str:
    name = str(dtype).replace("torch.", "").replace("numpy.", "")
    return name if name in _ITEMSIZE else "float32" if "float32" in name else name


class ClipDatasource(Datasource):
    """The Ray Data datasource behind :func:`read_clips` (for
    ``ray.data.read_datasource``). Read tasks are planned from the dataset:
    contiguous runs of entries for videos, whole shards for a store."""

    def __init__(self, source: Any, *, epoch: Optional[int] = None, epochs: Optional[int] = 1,
                 first_epoch: Optional[int] = None, videos_per_task: Optional[int] = None,
                 block_rows: Optional[int] = None, **options: Any) -> None:
        super().__init__()
        known = loader_defaults()
        bad = sorted(set(options) - set(known))
        if bad:
            raise TypeError(f"read_clips: unknown option(s) {bad}; it takes reel.Loader's options except "
                            f"{sorted(_NOT_OPTIONS & set(known))}")
        fixed = sorted(set(options) & _NOT_OPTIONS)
        if fixed:
            raise TypeError(f"read_clips: {fixed} are set by read_clips (Ray batches, shards and orders the rows)")
        if epoch is not None and first_epoch is not None:
            raise TypeError("read_clips: give first_epoch or epoch (its one-epoch name), not both")
        first = int(first_epoch if first_epoch is not None else epoch if epoch is not None else 0)
        if first < 0:
            raise ValueError(f"first_epoch must be >= 0, not {first}")
        if epochs is None or int(epochs) < 1:
            raise ValueError(f"read_clips: epochs must be >= 1, not {epochs} (a Ray dataset is finite; the "
                             "Loader's epochs=None, forever, has no equivalent)")
        if block_rows is not None and int(block_rows) < 1:
            raise ValueError(f"read_clips: block_rows must be >= 1, not {block_rows}")
        if options.get("pad"):
            raise ValueError("read_clips: pad=True is not taken: rows are per sample, each of its own length and "
                             "size (sampler='fps', size_policy); padding is a batch concern, for the collate that "
                             "batches the rows (see the docstring of read_clips)")
        self._source = source if isinstance(source, (str, bytes, os.PathLike)) else list(source)
        if isinstance(self._source, os.PathLike):
            self._source = os.fspath(self._source)
        self._first_epoch, self._epochs = first, int(epochs)
        self._block_rows = None if block_rows is None else int(block_rows)
        self._projection_map: Optional[Dict[str, str]] = None
        self._options = {k: v for k, v in options.items()}
        self._options.setdefault("decode_threads", 1)
        # with audio, every row also has AUDIO_COLUMNS (what a projection does not name is not built)
        self._all_columns = COLUMNS + (AUDIO_COLUMNS if self._options.get("audio") is not None else ())
        info = dataset_info(self._source)
        self._n: int = info["size"]
        self.class_names: List[str] = info["class_names"]
        self._blocks: List[int] = read_blocks(self._source)
        if self._n == 0:
            raise ValueError(f"read_clips: the dataset {redact(str(source))} is empty")
        self._videos_per_task = videos_per_task
        # the geometry of one clip, for block sizes and estimates
        cfg = dict(known)
        cfg.update(self._options)
        h, w = _hw(cfg["size"])
        t = int(cfg["frames_per_clip"])
        self._clips_per_video = int(cfg["clips_per_video"])
        itemsize = _ITEMSIZE.get(_dtype_name(cfg["dtype"]), 4)
        # Variable samples (the Loader's variable batches, as C decides them: reel_loader_settings_is_variable):
        # each row its own T (sampler="fps") and size (size_policy); there is no clip shape, only this row layout
        self._variable = _reel.loader_settings_is_variable(loader_settings(self._options))
        shape = _row_shape(cfg["layout"], t, h, w, _channels(cfg))
        self._clip_shape: Optional[Tuple[int, ...]] = None if self._variable else shape
        # bytes of one clip; of variable samples, a bound (_sample_elements)
        self._clip_bytes = (_sample_elements(cfg, h, w) if self._variable else int(np.prod(shape))) * itemsize
        # the loader itself checks every option; a bad one fails here, on the driver
        Loader(self._source, **self._loader_config([0], 1, first)).close()

    # ------------------------------------------------------------------ planning
    def get_name(self) -> str:
        return "ReelClips"

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return self._epochs * self._n * self._clips_per_video * self._clip_bytes

    def supports_projection_pushdown(self) -> bool:
        """Ray pushes ``select_columns`` into the read: the read tasks then
        build only those columns (no strings to drop before
        ``iter_torch_batches``, no map task after the read)."""
        return True

    def _block_videos(self, data_context: Any) -> int:
        """Videos per block (the task loader's batch). A block holds at most
        ``_BLOCK_BYTES`` of frames, or ``DataContext.target_max_block_size``
        if smaller; within that, ``block_rows`` clips if given, else a
        multiple of ``_BATCH_ROWS`` (32, the usual ``iter_torch_batches``
        batch) or, if fewer fit, a power of two (which divides it), so that
        batches take whole blocks or whole halves of one instead of copying
        rows of two blocks together."""
        if self._variable:
            # A sample's size is known only once its read task has opened and sampled the video (planning
            # it on the driver would open every video: a second planner), and _clip_bytes is a bound that
            # may be far above it. A whole-video sample is one block by default: it is already large (tens
            # to hundreds of frames), so Ray's per-block cost is small beside it, and a block then exceeds
            # the target size only if one sample does. block_rows asks for more samples per block.
            return max(1, self._block_rows or 1)
        target = min(int(getattr(data_context, "target_max_block_size", None) or (128 << 20)), _BLOCK_BYTES)
        fit = max(1, target // self._clip_bytes)
        if self._block_rows:
            rows = min(self._block_rows, fit)
        elif fit >= _BATCH_ROWS:
            rows = fit // _BATCH_ROWS * _BATCH_ROWS
        else:
            rows = 1 << (fit.bit_length() - 1)
        return max(1, rows // self._clips_per_video)

    def _runs(self, parallelism: int, task_cpus: float = 1.0, block_videos: int = 1) -> List[Tuple[int, int]]:
        """Contiguous runs of samples, each inside one read block (a store's shard).

        Videos: ``videos_per_task`` entries per task, or by default as few
        tasks as keep every CPU busy (two per task slot of the cluster, over
        all the epochs) and at most ``_TASK_ROWS`` rows each: each task pays
        a loader start and opens its videos, and over 64 videos x 4 epochs
        on 2 CPUs one task of 64 clips per epoch cost 7.0 CPU ms per frame
        against 8.5 for four of 16 (bench/run_ray.py). Never more than Ray's requested
        parallelism; a task of more than one block (``block_videos``) a
        whole number of them.
        Ray asks for up to 200 read tasks, which for videos
        means one or two videos per task: a task each pays Ray's scheduling
        and a loader start, and gives blocks of one or two rows, which
        measured 3x slower per row through iter_torch_batches than blocks
        of tens of rows (bench/run_ray.py's floor line)."""
        blocks = list(zip(self._blocks[:-1], self._blocks[1:]))
        if len(blocks) > 1:  # a store: whole shards, one task each
            return blocks
        if self._videos_per_task:
            per = int(self._videos_per_task)
        else:
            slots = max(1, int(_cluster_cpus() // max(task_cpus, 1e-3)))
            rows = self._n * self._clips_per_video
            # two tasks per slot over all the epochs: an epoch's tasks run next to the next epoch's
            tasks = max(-(-2 * slots // self._epochs), -(-rows // _TASK_ROWS))
            tasks = max(1, min(tasks, max(1, parallelism), self._n))
            per = -(-self._n // tasks)
            if per > block_videos:  # whole blocks, so only the task's last block is short
                per = -(-per // block_videos) * block_videos
        return [(a, min(a + per, self._n)) for a in range(0, self._n, per)]

    def _order(self, runs: List[Tuple[int, int]], epoch: int) -> List[List[int]]:
        """The samples of each task of ``epoch``, tasks in order. With shuffle: the C
        epoch order (reel/order.h, the one reel.Loader and elastic resume
        use), a pure function of (seed, epoch): a store's shards in a
        shuffled order and its records shuffled within each (the Loader's
        own store order), videos in windows of one task's run (the Loader's
        ``shuffle_window`` order with the window one task); each task takes
        its samples as they come in that order, so its reads stay within its
        run. Without shuffle, the dataset order. Which clip, crop and flip a
        sample gives never depends on this order."""
        if not self._options.get("shuffle", True):
            return [list(range(a, b)) for a, b in runs]
        store = len(self._blocks) > 2
        window = 0 if store else max(b - a for a, b in runs)
        seed = int(self._options.get("seed") or 0) & 0xFFFFFFFFFFFFFFFF
        order = epoch_order(self._source, epoch, seed=seed, shuffle=True, shuffle_window=window, canonical_ranks=1,
                            canonical_batch=1)
        starts = [a for a, _ in runs]
        tasks: Dict[int, List[int]] = {}
        for i in order:
            tasks.setdefault(bisect.bisect_right(starts, i) - 1, []).append(int(i))
        return list(tasks.values())

    def _loader_config(self, samples: Sequence[int], videos_per_batch: int, epoch: int) -> Dict[str, Any]:
        cfg = dict(self._options)
        cfg.update(samples=list(samples), first_epoch=int(epoch), epochs=1, shuffle=False,
                   batch_size=int(videos_per_batch), prefetch_batches=2,
                   failure_log_size=len(samples) * (int(cfg.get("max_replacements") or 16) + 1) + 16)
        return cfg

    def num_read_tasks(self, data_context: Any = None, parallelism: int = 1 << 30) -> int:
        """How many read tasks :meth:`get_read_tasks` plans (all epochs)."""
        task_cpus = float(self._options.get("decode_threads") or 1)
        return self._epochs * len(self._runs(parallelism, task_cpus, self._block_videos(data_context)))

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                       data_context: Any = None) -> List[ReadTask]:
        """The read tasks of every epoch, epoch after epoch (``first_epoch``,
        then the next, ...), each epoch's in its own order."""
        block_videos = self._block_videos(data_context)
        task_cpus = float(self._options.get("decode_threads") or 1)
        runs = self._runs(parallelism, task_cpus, block_videos)
        columns = self._all_columns if self._projection_map is None else tuple(self._projection_map)
        tasks = []
        for epoch in range(self._first_epoch, self._first_epoch + self._epochs):
            for samples in self._order(runs, epoch):
                rows = len(samples) * self._clips_per_video
                meta = BlockMetadata(num_rows=rows, size_bytes=rows * self._clip_bytes, input_files=None,
                                     exec_stats=None)
                # the loader's ring is sized by its batch: no bigger than the task
                fn = _ReadFn(self._source, self._loader_config(samples, min(block_videos, len(samples)), epoch),
                             self._clip_shape, columns)  # clip_shape None: variable samples
                try:
                    tasks.append(ReadTask(fn, meta, per_task_row_limit=per_task_row_limit))
                except TypeError:  # older Ray without per-task row limits
                    tasks.append(ReadTask(fn, meta))
        return tasks


class _ReadFn:
    """One read task: a reel loader over the task's samples, one Arrow block
    per loader batch (copied out of the ring), then the failures."""

    def __init__(self, source: Any, config: Dict[str, Any], clip_shape: Optional[Tuple[int, ...]],
                 columns: Optional[Sequence[str]] = None) -> None:
        self.source, self.config, self.clip_shape = source, config, clip_shape
        self.columns = None if columns is None else tuple(columns)  # None: all of COLUMNS
        self.audio = config.get("audio") is not None and any(c in AUDIO_COLUMNS for c in (columns or ()))

    def __call__(self) -> Iterator[Any]:
        on_error = self.config.get("on_error", "skip")
        with Loader(self.source, **self.config) as loader:
            try:
                for batch in loader:
                    if not batch.info:  # each of its samples failed: their rows come with the failures
                        continue
                    if isinstance(batch.frames, list):  # variable samples: one ndarray per row
                        frames: Any = [f.numpy() for f in batch.frames]
                    else:
                        frames = batch.frames.numpy()
                    audio = _audio_rows(batch) if self.audio else None
                    yield _block(frames, batch.info, self.config["first_epoch"], self.columns, audio)
                    del batch, frames, audio
            except _reel.ReelError as exc:
                # every sample of this task failed: their failure rows follow
                if on_error == "raise" or exc.status != _reel.STATUS["NO_DATA"]:
                    raise
            failures = loader.metrics()["failures"] if on_error != "raise" else []
        if failures:
            yield _failure_block(failures, self.clip_shape, self.config, self.columns)


# Read task and block sizes (see ClipDatasource._runs): a task holds at most
# this many rows by default, and a block at most this many bytes of frames
# (or DataContext.target_max_block_size if smaller): blocks of tens of clips,
# so that Ray's per-block costs are shared while the first rows still arrive
# early.
_TASK_ROWS = 256
_BLOCK_BYTES = 64 << 20
_BATCH_ROWS = 32


def _cluster_cpus() -> float:
    try:
        return float(ray.cluster_resources().get("CPU", 1.0)) if ray.is_initialized() else 1.0
    except Exception:  # pragma: no cover - a cluster going away
        return 1.0


def _hw(size: Any) -> Tuple[int, int]:
    if isinstance(size, int):
        return size, size
    h, w = (int(v) for v in size)
    return h, w


def _channels(cfg: Dict[str, Any]) -> int:
    """Channels of a row's pixel: 1 for color="gray", else 3."""
    return 1 if str(cfg.get("color") or "rgb").lower() == "gray" else 3


def _row_shape(layout: str, t: int, h: int, w: int, c: int = 3) -> Tuple[int, ...]:
    row = _LAYOUT_ROW.get(layout)
    if row is None:
        raise ValueError(f"layout {layout!r}: expected one of {sorted(_LAYOUT_ROW)}")
    dims = {"T": t, "C": c, "H": h, "W": w}
    return tuple(dims[c] for c in row)


def _columns(make: Dict[str, Any], columns: Optional[Sequence[str]]) -> Any:
    """An Arrow block of the given columns (None: all of COLUMNS, in order),
    each made only if asked for. A column made as a list of ndarrays (one a
    row, shapes differing) becomes Ray's variable-shaped tensor column
    (ArrowVariableShapedTensorArray), whatever the shapes of the block: a
    block whose rows happen to share a shape would otherwise get a
    fixed-shape tensor type, unlike its neighbours."""
    names = list(COLUMNS if columns is None else columns)
    made = {k: make[k]() for k in names}
    ragged = {k: v for k, v in made.items() if isinstance(v, list)}
    if not ragged:
        return BlockAccessor.batch_to_block(made)
    import pyarrow as pa
    from ray.data.extensions import ArrowVariableShapedTensorArray

    def variable(rows: List[Any]) -> Any:
        obj = np.empty(len(rows), dtype=object)
        obj[:] = rows
        return ArrowVariableShapedTensorArray.from_numpy(obj)

    rest = {k: v for k, v in made.items() if k not in ragged}
    fixed: Any = BlockAccessor.batch_to_block(rest) if rest else None  # None: every column is ragged
    return pa.Table.from_arrays([variable(ragged[k]) if k in ragged else fixed.column(k) for k in names],
                                names=names)


def _audio_rows(batch: Any) -> Tuple[List[Any], Any, int]:
    """A batch's audio as rows: each clip's own [C, S_i] (copied out of the
    ring), the valid ranges [B, 2] and the rate."""
    lengths = np.asarray(batch.audio_lengths)
    if isinstance(batch.audio, list):  # variable batches without pad: per-clip views
        rows = [np.array(a, copy=True) for a in batch.audio]
    else:
        plane = np.asarray(batch.audio)
        rows = [np.array(plane[i, :, :int(k)], copy=True) for i, k in enumerate(lengths)]
    return rows, np.array(batch.audio_valid, dtype=np.int64, copy=True), int(batch.audio_sample_rate)


def _audio_columns(info: Sequence[Any], audio: Optional[Tuple[List[Any], Any, int]]) -> Dict[str, Any]:
    """AUDIO_COLUMNS of a batch's rows (none without audio)."""
    if audio is None:
        return {}
    rows, valid, rate = audio
    n = len(info)
    return {
        "audio": lambda: list(rows),  # always a variable-shaped column: clips' lengths may differ
        "audio_first_sample": lambda: np.fromiter((c.audio_first_sample for c in info), dtype=np.int64, count=n),
        "audio_valid": lambda: valid.reshape(n, 2),
        "audio_sample_rate": lambda: np.full(n, rate, dtype=np.int32),
    }


def _block(frames: Any, info: Sequence[Any], epoch: int, columns: Optional[Sequence[str]] = None,
           audio: Optional[Tuple[List[Any], Any, int]] = None) -> Any:
    """The rows of one loader batch. ``frames``: the batch's ndarray, or for
    variable samples a list of per-sample ndarrays; both views of the ring,
    copied out here (the ring goes back to the loader); ``audio``: the
    batch's (_audio_rows), or None."""
    n = len(info)
    if isinstance(frames, list):  # variable samples: ragged frames, frame_indices and pts_seconds
        return _columns({
            **_info_columns(info, epoch),
            **_audio_columns(info, audio),
            "frames": lambda: [np.array(f, copy=True) for f in frames],
            "frame_indices": lambda: [np.asarray(c.frame_indices, dtype=np.int64) for c in info],
            "pts_seconds": lambda: [np.asarray(c.pts_seconds, dtype=np.float64) for c in info],
        }, columns)
    t = len(info[0].frame_indices) if n else 0
    return _columns({
        **_info_columns(info, epoch),
        **_audio_columns(info, audio),
        "frames": lambda: np.array(frames, copy=True),
        "frame_indices": lambda: np.array([c.frame_indices for c in info], dtype=np.int64).reshape(n, t),
        "pts_seconds": lambda: np.array([c.pts_seconds for c in info], dtype=np.float64).reshape(n, t),
    }, columns)


def _info_columns(info: Sequence[Any], epoch: int) -> Dict[str, Any]:
    """The columns of a batch's rows that are the same for clips and variable samples."""
    n = len(info)
    return {
        "label": lambda: np.fromiter((c.label for c in info), dtype=np.int64, count=n),
        "path": lambda: np.array([redact(c.path) for c in info], dtype=object),
        "sample": lambda: np.fromiter((c.sample for c in info), dtype=np.int64, count=n),
        "clip": lambda: np.fromiter((c.clip for c in info), dtype=np.int32, count=n),
        "crop": lambda: np.array([c.crop for c in info], dtype=np.int32).reshape(n, 4),
        "flipped": lambda: np.fromiter((c.flipped for c in info), dtype=bool, count=n),
        "epoch": lambda: np.full(n, epoch, dtype=np.int64),
        "failure": lambda: np.array([""] * n, dtype=object),
    }


def _failure_block(failures: Sequence[Dict[str, Any]], clip_shape: Optional[Tuple[int, ...]],
                   config: Dict[str, Any], columns: Optional[Sequence[str]] = None) -> Any:
    """Failure rows: zero frames of the clip shape, frame_indices -1; for
    variable samples (``clip_shape`` None) frames of no frames and no pixels
    (T, H and W 0, the row's rank and channels kept) and empty
    frame_indices and pts_seconds."""
    n = len(failures)
    layout = _LAYOUT_ROW[config.get("layout", "BTCHW")]
    dtype = {"uint8": np.uint8, "uint16": np.uint16, "float16": np.float16}.get(
        _dtype_name(config.get("dtype", "uint8")), np.float32)
    make: Dict[str, Any] = {
        "label": lambda: np.full(n, -1, dtype=np.int64),
        "path": lambda: np.array([redact(f["path"]) for f in failures], dtype=object),
        "sample": lambda: np.array([f["sample"] for f in failures], dtype=np.int64),
        "clip": lambda: np.full(n, -1, dtype=np.int32),
        "crop": lambda: np.zeros((n, 4), dtype=np.int32),
        "flipped": lambda: np.zeros(n, dtype=bool),
        "epoch": lambda: np.array([f["epoch"] for f in failures], dtype=np.int64),
        "failure": lambda: np.array([f["reason"] or f"{redact(f['path'])}: failed" for f in failures],
                                    dtype=object),
    }
    a = config.get("audio")
    if a is not None:  # no samples: [C, 0], nothing valid
        make.update(audio=lambda: [np.zeros((int(a.get("channels") or 1), 0), dtype=np.float32) for _ in range(n)],
                    audio_first_sample=lambda: np.zeros(n, dtype=np.int64),
                    audio_valid=lambda: np.zeros((n, 2), dtype=np.int64),
                    audio_sample_rate=lambda: np.full(n, int(a.get("sample_rate") or 0), dtype=np.int32))
    if clip_shape is None:
        empty = tuple(_channels(config) if c == "C" else 0 for c in layout)
        make.update(frames=lambda: [np.zeros(empty, dtype=dtype) for _ in range(n)],
                    frame_indices=lambda: [np.zeros(0, dtype=np.int64) for _ in range(n)],
                    pts_seconds=lambda: [np.zeros(0, dtype=np.float64) for _ in range(n)])
    else:
        t = clip_shape[layout.index("T")]
        make.update(frames=lambda: np.zeros((n,) + tuple(clip_shape), dtype=dtype),
                    frame_indices=lambda: np.full((n, t), -1, dtype=np.int64),
                    pts_seconds=lambda: np.full((n, t), np.nan, dtype=np.float64))
    return _columns(make, columns)


def _sample_elements(cfg: Dict[str, Any], h: int, w: int) -> int:
    """A bound on the elements (T x C x H x W) of one variable sample, for
    estimates: the most frames the sampler gives (``max_frames``, or the C
    default 768; ``frames_per_clip`` for sampler="count") times the pixels
    the size policy gives that many frames of a large video (the C
    reel_size_policy_apply, so the budget's defaults and ``total_pixels``
    share are the Loader's), or ``size`` without a policy. The videos' own
    lengths and sizes are known only in the read tasks."""
    defaults = _reel.loader_defaults()
    if cfg["sampler"] == "fps":
        t = int(cfg["max_frames"] if cfg["max_frames"] is not None else defaults["sampler.max_frames"])
    else:
        t = int(cfg["frames_per_clip"])
    if cfg["size_policy"] is not None:
        p = size_policy_settings(cfg["size_policy"])
        h, w = _reel.size_policy(8192, 8192, t, int(p.get("size_policy.factor", defaults["size_policy.factor"])),
                                 int(defaults["sampler.frame_factor"]), float(p.get("size_policy.min_pixels", 0.0)),
                                 float(p.get("size_policy.max_pixels", 0.0)), float(p["size_policy.total_pixels"]),
                                 int(p.get("size_policy.width", 0)), int(p.get("size_policy.height", 0)))
    return max(1, t * _channels(cfg) * int(h) * int(w))


def read_clips(source: Any, *, epoch: Optional[int] = None, epochs: int = 1, first_epoch: Optional[int] = None,
               videos_per_task: Optional[int] = None, block_rows: Optional[int] = None,
               override_num_blocks: Optional[int] = None, ray_remote_args: Optional[Dict[str, Any]] = None,
               **options: Any) -> "ray.data.Dataset":
    """A Ray Data dataset of clips: one row per clip, decoded by reel.

    ``source``: anything ``reel.Loader`` takes (a folder, a manifest, a
    store, a list of paths or URLs, an ``s3://`` prefix). ``options``:
    ``reel.Loader``'s sampling, transform, error and remote options with the
    same names and meanings (``frames_per_clip``, ``clips_per_video``,
    ``frame_stride``, ``sampler``, ``size``, ``crop``, ``flip``, ``dtype``,
    ``layout``, ``seed``, ``shuffle``, ``on_error``, ``remote``, ...);
    ``decode_threads`` is the decode threads per read task (default 1, and each
    task asks Ray for that many CPUs). Ray does the batching and sharding, so
    ``batch_size``, ``rank``, ``world_size`` and the like are not taken.

    Epochs, with the Loader's names and meanings: ``first_epoch`` (default
    0) is the number of the first epoch, ``epochs`` (default 1) how many
    follow, all in one dataset: for the same ``seed``, the rows of epoch
    ``e`` are the clips ``reel.Loader`` delivers in its epoch ``e``
    (samples, clip starts, crops, flips), and the ``epoch`` column says
    which. ``epoch=e`` is the one-epoch name of ``first_epoch=e``. The read
    tasks come epoch after epoch; Ray runs a few at once and does not keep
    their order, so the last rows of an epoch can come after the first of
    the next (``DataContext.execution_options.preserve_order`` keeps it).
    Prefer one dataset of ``epochs=N`` to N datasets unioned: a union runs
    its inputs at once and buffers their blocks in the object store. A Ray
    dataset is finite: ``epochs=None`` (the Loader's "forever") is refused.

    Read tasks: videos in contiguous runs of ``videos_per_task`` entries
    (default: enough tasks for two per task slot of the cluster over all
    the epochs, at most 256 clips each); a store one shard per task. With ``shuffle`` (default)
    the tasks and the samples within each come in an order drawn from
    (seed, epoch). read_clips asks Ray for exactly that many blocks of
    output (``override_num_blocks``), since Ray would otherwise cut each
    task's blocks into slices to reach its default parallelism.

    Columns: ``frames`` (a tensor column, [T, C, H, W] per clip, or as
    ``layout`` says), ``label``, ``path`` (URLs redacted), ``sample``,
    ``clip``, ``frame_indices``, ``pts_seconds``, ``crop`` (x, y, w, h),
    ``flipped``, ``epoch``, ``failure``; with ``audio={"sample_rate": ...,
    "channels": ...}`` (the Loader's option, over videos or a store packed
    with audio) also AUDIO_COLUMNS: ``audio`` (float32 [C, S_i], the
    samples played over the clip's frames, a variable-shaped tensor column:
    :class:`PadCollate` pads it), ``audio_first_sample``, ``audio_valid``
    and ``audio_sample_rate``, what the Loader gives that clip (a failure
    row: [C, 0]). ``ds.select_columns(...)`` is
    pushed into the read tasks, which then build only those columns:
    ``select_columns(list(reel.ray.TENSOR_COLUMNS))`` before
    ``iter_torch_batches`` (strings cannot be tensors). A block is one
    loader batch of ``block_rows`` clips (default: a multiple of 32, the
    usual batch size, or a power of two below it), and holds at most 64 MiB
    of frames or ``DataContext.target_max_block_size`` if smaller. A block
    that is a multiple of the ``iter_torch_batches`` batch size gives whole
    batches without copying rows of two blocks together.

    Variable samples (video-language models): ``sampler="fps"`` (``fps``,
    ``min_frames``, ``max_frames``) and ``size_policy={...}`` as for
    ``reel.Loader``: a row is one whole-video sample, whose ``frames`` are
    [T_i, C, H_i, W_i] (or as ``layout`` says) of its own length and size,
    the frames and pixels ``reel.Loader`` gives that sample for the same
    seed and epoch. ``frames``, ``frame_indices`` and ``pts_seconds`` are
    then Ray's variable-shaped tensor columns: ``iter_batches(
    batch_format="numpy")`` gives each as an object array of per-row
    ndarrays, and ``iter_torch_batches`` needs a ``collate_fn`` that
    batches them: :class:`PadCollate` (zero-padded, with each row's
    shape), or a subclass of Ray's ``NumpyBatchCollateFn`` such as a
    Qwen-style one that concatenates the samples' patches and keeps each
    sample's grid.
    ``pad=True`` is refused: padding is that collate's concern. A block is
    one sample (``block_rows``: that many), since a sample's size is known
    only in its read task; estimates use a bound (``max_frames`` times the
    policy's largest frame). A failed sample's row has frames with T, H and
    W 0 and empty ``frame_indices`` and ``pts_seconds``.

    Errors: with ``on_error`` "skip" (default) or "replace", each failed
    video is a row whose ``failure`` names the path and the reason, with
    zero frames, ``clip`` -1 and ``frame_indices`` -1 (variable samples: as
    above);
    :func:`split_failures` gives the clips and the failures apart.
    ``on_error="raise"`` fails the dataset with the path and reason. A read
    task that dies is retried by Ray and gives the same rows."""
    src = ClipDatasource(source, epoch=epoch, epochs=epochs, first_epoch=first_epoch,
                         videos_per_task=videos_per_task, block_rows=block_rows, **options)
    kwargs: Dict[str, Any] = {"num_cpus": float(options.get("decode_threads") or 1)}
    if ray_remote_args:
        kwargs["ray_remote_args"] = dict(ray_remote_args)
    # Ray splits each read task's output into more blocks when there are fewer
    # tasks than its default parallelism (200, or 2 per CPU): 7 slices of every
    # 32-clip block here, that iter_torch_batches then copies back together.
    # Asking for exactly the planned tasks keeps the planned blocks. Planning
    # counts the cluster's CPUs: start or join Ray first, as Ray Data's own
    # read functions do.
    if not ray.is_initialized():
        try:
            from ray._private.auto_init_hook import auto_init_ray
            auto_init_ray()
        except ImportError:  # pragma: no cover - another Ray; planned then as for one CPU
            pass
    kwargs["override_num_blocks"] = int(override_num_blocks if override_num_blocks is not None
                                        else src.num_read_tasks(ray.data.DataContext.get_current()))
    return ray.data.read_datasource(src, **kwargs)


def split_failures(ds: "ray.data.Dataset") -> Tuple["ray.data.Dataset", "ray.data.Dataset"]:
    """(clips, failures) of a read_clips dataset: the rows without a failure,
    and the failed videos as rows of (path, sample, epoch, failure). Both lazy."""
    from ray.data.expressions import col
    clips = ds.filter(expr=col("failure") == "")
    failures = ds.filter(expr=col("failure") != "").select_columns(["path", "sample", "epoch", "failure"])
    return clips, failures


# ---------------------------------------------------------------------- map_batches


class ClipDecoder:
    """Decodes clips of rows with reel, for ``Dataset.map_batches`` (a
    callable class: each Ray actor keeps its decoders open across batches).

        ds = ray.data.from_items([{"path": p, "frame_indices": [0, 4, 8, 12], "sample": i}, ...])
        ds = ds.map_batches(reel.ray.ClipDecoder, fn_constructor_kwargs={"size": 224, "crop": "random",
                            "flip": "random", "seed": 0, "epoch": 3}, batch_size=16, concurrency=2)

    Each row gives ``path`` (a file or URL) and either ``frame_indices`` or
    ``timestamps`` (seconds: the frames shown then). The output adds
    ``frames`` ([T, C, H, W] uint8, or ``layout="HWC"``: [T, H, W, C]),
    ``crop`` (the source crop used, x, y, w, h), ``flipped`` and
    ``failure`` ("" or "<path>: <reason>", frames zero) and keeps the other
    columns.

    Geometry with reel.Loader's names and meanings: ``size`` (int or (h,
    w)), ``crop`` (None: resize straight to ``size``; "center", "random",
    "random_resized" with ``scale``/``ratio``), ``resize`` (before a crop;
    None: short side ``round(min(size) * 256 / 224)``), ``flip`` (False,
    True, "random" with ``flip_probability``), ``filter``,
    ``convert_path``, ``apply_rotation``. Random choices are the Loader's: a pure
    function of (``seed``, epoch, sample, clip), where epoch, sample and
    clip come from the row's ``epoch``, ``sample`` and ``clip`` columns if
    it has them (else the ``epoch`` option, sample 0, clip 0), so rows of
    the clips ``reel.Loader`` gave for a seed and epoch (its ``ClipInfo``:
    path, frame_indices, sample, clip) decode to the same pixels, crops and
    flips. (A sample the Loader replaced after a failure drew again; its
    row differs.) ``size=None`` keeps the video's size (no crop or flip).
    ``dtype``, ``layout``, ``remote``, ``on_error`` ("skip": a failure row,
    or "raise"), ``max_open`` decoders kept open (least recently used
    closed first; a crop that differs per clip opens the video per crop)."""

    def __init__(self, *, size: Union[int, Sequence[int], None] = 224, crop: Optional[str] = None,
                 flip: Union[bool, str] = False, flip_probability: Optional[float] = None, resize: Any = None,
                 scale: Optional[Sequence[float]] = None, ratio: Optional[Sequence[float]] = None,
                 filter: str = "bilinear", convert_path: str = "fused", apply_rotation: bool = True, seed: int = 0,
                 epoch: int = 0, dtype: str = "uint8", layout: str = "CHW", remote: Optional[Dict[str, Any]] = None,
                 on_error: str = "skip", max_open: int = 16, index_mode: Union[bool, str] = False) -> None:
        if on_error not in ("skip", "raise"):
            raise ValueError(f"on_error must be 'skip' or 'raise', not {on_error!r}")
        self._opts: Dict[str, Any] = {"dtype": dtype, "layout": layout, "threads": 1, "index_mode": index_mode,
                                      "filter": filter, "convert_path": convert_path, "apply_rotation": apply_rotation}
        if remote:
            self._opts["remote"] = remote
        self._size = size
        self._epoch = int(epoch)
        self._settings: Optional[Dict[str, Any]] = None
        if size is not None:
            # checks every option as the Loader does
            self._settings = loader_settings(dict(size=size, crop=crop, flip=flip, flip_probability=flip_probability,
                                                  resize=resize, scale=scale, ratio=ratio, filter=filter,
                                                  convert_path=convert_path, apply_rotation=apply_rotation, seed=seed))
        elif crop is not None or flip:
            raise ValueError("ClipDecoder: crop and flip need a size")
        self._on_error = on_error
        self._max_open = max(1, int(max_open))
        self._open: Dict[Any, VideoDecoder] = {}
        self._display: Dict[str, Tuple[int, int]] = {}

    def _decoder(self, key: Any, **geometry: Any) -> VideoDecoder:
        d = self._open.pop(key, None)
        if d is None:
            while len(self._open) >= self._max_open:
                self._open.pop(next(iter(self._open))).close()
            d = VideoDecoder(key[0], **self._opts, **geometry)
        self._open[key] = d  # most recently used last
        return d

    def _geometry(self, path: str, epoch: int, sample: int, clip: int) -> Tuple[Tuple[int, ...], bool, Any]:
        """(crop x, y, w, h), flipped, and the decoder for that clip."""
        if self._settings is None:
            d = self._decoder((path,), size=None)
            h, w = d.frame_shape[1:] if self._opts["layout"] == "CHW" else d.frame_shape[:2]
            return (0, 0, w, h), False, d
        wh = self._display.get(path)
        if wh is None:
            m = self._decoder((path,), size=None).metadata
            # width x height is after the display rotation, source_* before it
            wh = self._display[path] = ((m.width, m.height) if self._opts["apply_rotation"]
                                        else (m.source_width, m.source_height))
        (x, y, cw, ch), (ow, oh), flipped = _reel.clip_geometry(self._settings, epoch, sample, clip, *wh)
        whole = (x, y, cw, ch) == (0, 0) + wh
        key = (path, None if whole else (x, y, cw, ch), (ow, oh), flipped)
        d = self._decoder(key, size=(oh, ow), crop=None if whole else (y, x, ch, cw), flip=flipped)
        return (x, y, cw, ch), flipped, d

    def __call__(self, batch: Dict[str, Any]) -> Dict[str, Any]:
        paths = [str(p) for p in batch["path"]]
        by_index = "frame_indices" in batch
        wanted = batch["frame_indices"] if by_index else batch["timestamps"]
        n = len(paths)

        def column(name: str, default: int) -> List[int]:
            return [int(v) for v in batch[name]] if name in batch else [default] * n

        epochs, samples, clips = column("epoch", self._epoch), column("sample", 0), column("clip", 0)
        out: List[Any] = []
        failures: List[str] = []
        crops: List[Tuple[int, ...]] = []
        flips: List[bool] = []
        for i, (path, want) in enumerate(zip(paths, wanted)):
            want = [float(v) for v in want] if not by_index else [int(v) for v in want]
            try:
                crop, flipped, dec = self._geometry(path, epochs[i], samples[i], clips[i])
                f = dec.get_frames_at(want) if by_index else dec.get_frames_played_at(want)
                out.append(np.array(f.numpy(), copy=True))
                failures.append("")
            except _reel.ReelError as exc:
                if self._on_error == "raise":
                    raise
                out.append(None)
                failures.append(str(exc))
                crop, flipped = (0, 0, 0, 0), False
            crops.append(crop)
            flips.append(bool(flipped))
        shape = next((a.shape for a in out if a is not None), None)
        if shape is None:
            shape = (len(wanted[0]) if len(wanted) else 0, 1, 1, 1)
        dtype = next((a.dtype for a in out if a is not None), np.uint8)
        result = dict(batch)
        result["frames"] = np.stack([a if a is not None else np.zeros(shape, dtype=dtype) for a in out]) \
            if out else np.zeros((0,) + tuple(shape), dtype=dtype)
        result["crop"] = np.array(crops, dtype=np.int32).reshape(n, 4)
        result["flipped"] = np.array(flips, dtype=bool)
        result["failure"] = np.array(failures, dtype=object)
        return result

    def __del__(self) -> None:
        for d in self._open.values():
            try:
                d.close()
            except Exception:
                pass


if __name__ == "__main__":
    import sys

    sys.exit(main())
