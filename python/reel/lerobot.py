# reel/lerobot.py: LeRobotDataset v3.0 datasets read through reel: LeRobotDataset (a map-style
# dataset whose items equal LeRobot's __getitem__) and Loader (batches of every camera decoded
# by reel.decode_near on reel's threads, in reel's epoch order, with exact and elastic resume).
"""LeRobot datasets (v3.0) through reel.

``LeRobotDataset(root)[i]`` is LeRobot's ``LeRobotDataset.__getitem__(i)`` for
the video keys (uint8 frames, ``{key}_is_pad`` masks, the same clamping into
the episode and ``from_timestamp`` shift) and the parquet columns of the row;
``Loader(root, batch_size=...)`` gives batches of those items, decoded by
reel's C threads without worker processes. Needs pyarrow: ``pip install
reel[lerobot]``. See docs/python.md, "LeRobot datasets"."""
from __future__ import annotations

import queue
import threading
import time
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from . import _options as opt
from ._decoder import VideoDecoder
from ._lerobot_tables import DatasetFormatError, Tables, pyarrow_modules, shown
from ._loader import STATE_VERSION, check_state, epoch_order, stripe
from ._near import DecoderCache, decode_near
from ._reel import ReelError

__all__ = ["LeRobotDataset", "Loader", "DatasetFormatError"]

ERROR_POLICIES = ("raise", "skip", "replace")
#: How many later samples "replace" tries in place of a failed one.
REPLACE_TRIES = 8


def _torch() -> Any:
    try:
        import torch
    except ImportError as e:
        raise ImportError("reel.lerobot gives torch tensors: pip install torch") from e
    return torch


def _check_delta_timestamps(delta: Mapping[str, Sequence[float]], fps: float, tolerance_s: float) -> None:
    """LeRobot's check_delta_timestamps: each delta a multiple of 1/fps within tolerance_s."""
    bad = {k: [d for d in ds if abs(d * fps - round(d * fps)) / fps > tolerance_s] for k, ds in delta.items()}
    bad = {k: v for k, v in bad.items() if v}
    if bad:
        raise ValueError(f"reel.lerobot: delta_timestamps {bad} are not multiples of 1/{fps} s "
                         f"within tolerance_s={tolerance_s}")


def _torch_dtype(torch: Any, a: Any) -> Any:
    """The dtype LeRobot's hf_transform_to_torch gives a column (torch.tensor
    of Python values): floats float32, integers int64, bools bool."""
    kind = a.dtype.kind
    if kind == "f":
        return torch.float32
    if kind in "iu":
        return torch.int64
    if kind == "b":
        return torch.bool
    return None


class LeRobotDataset:
    """A LeRobotDataset v3.0 directory (or http(s) URL) as a map-style
    dataset: ``ds[i]`` equals lerobot 0.4.4's ``__getitem__(i)`` with
    ``dtype="float32"`` (its frames / 255); ``"uint8"``: the frames before.

    ``delta_timestamps``: ``{key: [seconds, ...]}`` (LeRobot's: multiples of
    1/fps; video keys give [T, 3, H, W] frames and ``{key}_is_pad``, other
    keys their rows stacked). Without deltas a camera gives [3, H, W].
    ``cameras``: the video keys to decode (None: all); ``episodes``: the
    episode indices to read (None: all); ``size``: None (the camera's own),
    an int, ``(height, width)`` or ``{key: size}``; ``tolerance_s`` and
    ``on_violation`` as :func:`reel.decode_near` (``"flag"`` adds
    ``{key}_within_tolerance``). Depth keys (``video.is_depth_map``) ask
    decode_near for ``color="gray"``, ``dtype="uint16"`` (the source's
    codes, [T, 1, H, W]). Every camera of an item is decoded in one
    ``reel.decode_near`` call (``threads``: None, the cores, or 1 in a
    DataLoader worker) from ``cache`` (None: the process's
    :class:`reel.DecoderCache`). ``check_videos``: open each camera file
    once now and check each episode's span against it (a missing file, a
    ``from_timestamp`` past the file's end, rows and video that disagree
    raise here, by name). ``videos_root``: where the videos are, if not
    under ``root`` (e.g. an s3:// URL).

    ``root`` may be a folder or an ``http(s)://`` or ``s3://`` URL: the
    tables are read whole and the videos by ranges, all through reel's
    remote input with the ``remote`` settings (:class:`reel.VideoDecoder`'s
    ``remote=``: timeouts, retries, TLS, a bearer token; S3 credentials
    from the environment). Nothing is listed: the episode tables are read
    in order up to ``total_episodes`` of meta/info.json, the data and video
    files are those the episode rows name. ``remote`` also opens the
    decoders of the cache made here (``cache=None`` with ``remote``: a
    :class:`reel.DecoderCache` of this dataset's own); a ``cache`` passed
    in opens its videos with its own options."""

    def __init__(
        self,
        root: Any,
        *,
        delta_timestamps: Optional[Mapping[str, Sequence[float]]] = None,
        tolerance_s: float = 1e-4,
        cameras: Optional[Sequence[str]] = None,
        episodes: Optional[Sequence[int]] = None,
        size: Any = None,
        dtype: str = "uint8",
        on_violation: str = "raise",
        threads: Optional[int] = None,
        cache: Optional[DecoderCache] = None,
        check_videos: bool = True,
        videos_root: Any = None,
        remote: Optional[Dict[str, Any]] = None,
    ) -> None:
        pyarrow_modules()
        if dtype not in ("uint8", "float32"):
            raise ValueError(f"reel.lerobot: dtype={dtype!r}: 'uint8' or 'float32'")
        if isinstance(tolerance_s, bool) or not isinstance(tolerance_s, (int, float)) or not tolerance_s >= 0:
            raise ValueError(f"reel.lerobot: tolerance_s={tolerance_s!r}: a number >= 0")
        opt.choice("on_violation", on_violation, opt.NEAR_VIOLATIONS)
        on_violation = on_violation.lower()
        if remote is not None:
            remote = dict(remote)
            opt.remote_settings(remote)  # checked here, by name
            if cache is None:
                cache = DecoderCache(remote=remote)
        self.remote = remote
        self._t = Tables(root, episodes=episodes, cameras=cameras, videos_root=videos_root, remote=remote)
        self.root = self._t.root
        self.fps = self._t.fps
        self.tolerance_s = float(tolerance_s)
        self.on_violation = on_violation
        self.dtype = dtype
        self.size = size
        self.threads = threads
        self.cache = cache
        self.delta_timestamps = {k: [float(d) for d in v] for k, v in (delta_timestamps or {}).items()} \
            if delta_timestamps is not None else None
        self.delta_indices: Optional[Dict[str, List[int]]] = None
        if self.delta_timestamps is not None:
            unknown = [k for k in self.delta_timestamps if k not in self._t.columns and k not in self._t.features]
            if unknown:
                raise ValueError(f"reel.lerobot: delta_timestamps names unknown keys {unknown}")
            _check_delta_timestamps(self.delta_timestamps, self.fps, self.tolerance_s)
            self.delta_indices = {k: [round(d * self.fps) for d in v] for k, v in self.delta_timestamps.items()}
        self._sizes = self._camera_sizes(size)
        if check_videos:
            eps = sorted(set(int(e) for e in self._t.rows["episode_index"]))
            self._t.check_videos(eps, lambda path: _video_end(path, remote))

    # ---------------------------------------------------------------- facts
    @property
    def video_keys(self) -> List[str]:
        """The cameras decoded, in the features' order."""
        return list(self._t.video_keys)

    @property
    def features(self) -> Dict[str, Any]:
        return dict(self._t.features)

    @property
    def num_episodes(self) -> int:
        return len(set(int(e) for e in self._t.rows["episode_index"]))

    @property
    def fingerprint(self) -> int:
        """A hash of the selected rows and cameras (a Loader state's ``fingerprint``)."""
        return self._t.fingerprint

    def __len__(self) -> int:
        return self._t.num_rows

    def video_path(self, episode: int, key: str) -> str:
        """The file of `episode`'s video for camera `key`."""
        return self._t.video_path(episode, key)

    def _camera_sizes(self, size: Any) -> Dict[str, Tuple[int, int]]:
        keys = self._t.video_keys
        if isinstance(size, Mapping):
            unknown = sorted(set(size) - set(keys))
            if unknown:
                raise ValueError(f"reel.lerobot: size names unknown cameras {unknown}")
            hw = {k: opt.size_hw(f"size[{k!r}]", size.get(k)) for k in keys}
        else:
            one = opt.size_hw("size", size)
            hw = {k: one for k in keys}
        self._size_req: Dict[str, Any] = {k: (hw[k] if hw[k] != (0, 0) else None) for k in keys}
        return {k: (hw[k] if hw[k] != (0, 0) else self._t.frame_size(k)) for k in keys}

    # ---------------------------------------------------------------- queries
    def query(self, i: int) -> Dict[str, Any]:
        """Sample `i`'s plan, as LeRobot computes it: ``episode``, ``abs``
        (its ``index``), ``indices`` ({key: the rows' absolute indices,
        clamped into the episode}), ``pad`` ({key: [bool]}) and ``times``
        ({camera: [seconds in its file]}: the rows' float32 timestamps plus
        the episode's ``from_timestamp``)."""
        n = len(self)
        if isinstance(i, bool) or not isinstance(i, int):
            i = int(i)  # numpy and torch integers
        if not -n <= i < n:
            raise IndexError(f"reel.lerobot: index {i} is out of range for {n} samples")
        i %= n
        rows, t = self._t.rows, self._t
        ep_idx = int(rows["episode_index"][i])
        abs_idx = int(rows["index"][i])
        ep = t.episodes[ep_idx]
        start, end = int(ep["dataset_from_index"]), int(ep["dataset_to_index"])
        indices: Dict[str, List[int]] = {}
        pad: Dict[str, List[bool]] = {}
        for key, deltas in (self.delta_indices or {}).items():
            indices[key] = [max(start, min(end - 1, abs_idx + d)) for d in deltas]
            pad[key] = [(abs_idx + d < start) or (abs_idx + d >= end) for d in deltas]
        ts = rows["timestamp"]
        times: Dict[str, List[float]] = {}
        for key in t.video_keys:
            if key in indices:
                local = [float(ts[t.rel_of[q]]) for q in indices[key]]
            else:
                local = [float(ts[i])]
            shift = float(ep[f"videos/{key}/from_timestamp"])
            times[key] = [shift + x for x in local]
        return {"episode": ep_idx, "abs": abs_idx, "row": i, "indices": indices, "pad": pad, "times": times}

    def _columns(self, i: int, q: Dict[str, Any]) -> Dict[str, Any]:
        """The parquet columns of row i (and of the delta rows), as LeRobot gives them."""
        torch = _torch()
        out: Dict[str, Any] = {}
        for c in self._t.columns:
            a = self._t.rows[c]
            if c in q["indices"] and c not in self._t.video_keys:
                rel = self._t.rel_of[q["indices"][c]]
                out[c] = torch.as_tensor(a[rel], dtype=_torch_dtype(torch, a))
            elif a.dtype.kind == "O":
                out[c] = a[i]
            else:
                out[c] = torch.as_tensor(a[i], dtype=_torch_dtype(torch, a))
        for key, p in q["pad"].items():
            out[f"{key}_is_pad"] = torch.BoolTensor(p)
        return out

    def _task(self, i: int) -> Optional[str]:
        return self._t.tasks.get(int(self._t.rows["task_index"][i]))

    def __getitem__(self, i: int) -> Dict[str, Any]:
        q = self.query(i)
        cams = {key: (self._t.video_path(q["episode"], key), q["times"][key]) for key in self._t.video_keys}
        try:
            frames = self._decode(cams, {k: k for k in cams}, self._size_req)
        except ReelError as e:
            note = getattr(e, "add_note", None)  # Python 3.11
            if note is not None:
                note(f"reel.lerobot: sample {q['row']} (index {q['abs']}, episode {q['episode']})")
            raise
        item: Dict[str, Any] = {}
        for key in self._t.video_keys:
            x = frames[key].torch()
            item[key] = x.squeeze(0) if x.shape[0] == 1 else x
            if self.on_violation == "flag":
                item[f"{key}_within_tolerance"] = _torch().tensor(list(frames[key].within_tolerance))
        item.update(self._columns(q["row"], q))
        task = self._task(q["row"])
        if task is not None:
            item["task"] = task
        return item

    def _size_arg(self) -> Dict[str, Any]:
        return self._size_req

    def _mode(self, key: str) -> Tuple[str, str]:
        """(color, dtype) a camera decodes with: a depth key (``video.is_depth_map``)
        keeps its codes, gray uint16; the others RGB at the dataset's dtype."""
        return ("gray", "uint16") if key in self._t.depth_keys else ("rgb", self.dtype)

    def _decode(self, cams: Mapping[str, Tuple[str, List[float]]], key_of: Mapping[str, str],
                sizes: Mapping[str, Any], out: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
        """decode_near of `cams` ({name: (file, times)}, camera key_of[name]):
        one call per (color, dtype), so one call unless there are depth keys."""
        groups: Dict[Tuple[str, str], List[str]] = {}
        for name in cams:
            groups.setdefault(self._mode(key_of[name]), []).append(name)
        got: Dict[str, Any] = {}
        for (color, dtype), names in groups.items():
            got.update(decode_near({n: cams[n] for n in names}, tolerance_s=self.tolerance_s,
                                   on_violation=self.on_violation, threads=self.threads,
                                   size={n: sizes[n] for n in names}, dtype=dtype, color=color,
                                   out=None if out is None else {n: out[n] for n in names if n in out},
                                   cache=self.cache))
        return got

    def __repr__(self) -> str:
        return (f"reel.lerobot.LeRobotDataset({shown(self.root)!r}, {len(self)} samples, {self.num_episodes} episodes, "
                f"cameras={self.video_keys})")


def _video_end(path: str, remote: Optional[Dict[str, Any]] = None) -> float:
    """The end of a camera file's last frame, in seconds."""
    with VideoDecoder(path, threads=1, remote=remote) as dec:
        return float(dec.metadata.end_stream_seconds)


# ---------------------------------------------------------------- the loader
class Loader:
    """Batches of a LeRobot dataset's samples, every camera of a batch decoded
    in one :func:`reel.decode_near` call on reel's C threads (GIL released)
    straight into the batch's tensors; no worker processes. A background
    thread plans and decodes the next ``prefetch_batches`` batches while the
    current one is used.

    A batch is a dict: each camera [B, T, 3, H, W] (or [B, 3, H, W] without
    deltas) uint8, ``{key}_is_pad`` [B, T], each parquet column stacked,
    ``task`` a list of strings: the items :class:`LeRobotDataset` gives,
    collated as torch's default_collate would, with the frames written in
    place (zero-copy).

    Order and resume are reel.Loader's (reel/order.h): each epoch has one
    global order of the samples from ``seed`` (``shuffle``), ``rank`` reads
    its stripe of ``world_size * batch_size`` global batches
    (``shard_mode``, ``drop_last``); ``state_dict()`` holds the global
    ``samples_seen`` of the samples handed out, and ``load_state_dict()``
    continues with exactly the samples left, on any rank, world size or
    batch size (elastic). ``on_error``: "raise", "skip" (a shorter batch) or
    "replace" (the next sample of the order that decodes); ``metrics()``
    counts samples and every failure. ``root`` may be a URL (``remote``:
    its settings, as :class:`LeRobotDataset`'s)."""

    def __init__(
        self,
        root: Any,
        *,
        delta_timestamps: Optional[Mapping[str, Sequence[float]]] = None,
        batch_size: int = 8,
        shuffle: bool = True,
        seed: int = 0,
        tolerance_s: float = 1e-4,
        on_violation: str = "raise",
        cameras: Optional[Sequence[str]] = None,
        episodes: Optional[Sequence[int]] = None,
        size: Any = None,
        dtype: str = "uint8",
        threads: Optional[int] = None,
        drop_last: bool = False,
        rank: int = 0,
        world_size: int = 1,
        shard_mode: str = "pad",
        first_epoch: int = 0,
        canonical_ranks: Optional[int] = None,
        canonical_batch: Optional[int] = None,
        prefetch_batches: int = 2,
        on_error: str = "raise",
        failure_log_size: int = 64,
        cache: Optional[DecoderCache] = None,
        check_videos: bool = True,
        videos_root: Any = None,
        remote: Optional[Dict[str, Any]] = None,
    ) -> None:
        for name, v, low in (("batch_size", batch_size, 1), ("world_size", world_size, 1), ("rank", rank, 0),
                             ("prefetch_batches", prefetch_batches, 1), ("first_epoch", first_epoch, 0),
                             ("failure_log_size", failure_log_size, 0)):
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise ValueError(f"reel.lerobot.Loader: {name}={v!r}: an int >= {low}")
        if rank >= world_size:
            raise ValueError(f"reel.lerobot.Loader: rank {rank} is not below world_size {world_size}")
        on_error = ERROR_POLICIES[opt.choice("on_error", on_error, {p: i for i, p in enumerate(ERROR_POLICIES)})]
        if isinstance(root, LeRobotDataset):
            self.dataset = root
        else:
            if cache is None:
                cache = DecoderCache(max_decoders=64, remote=remote)
            self.dataset = LeRobotDataset(root, delta_timestamps=delta_timestamps, tolerance_s=tolerance_s,
                                          cameras=cameras, episodes=episodes, size=size, dtype=dtype,
                                          on_violation=on_violation, threads=threads, cache=cache,
                                          check_videos=check_videos, videos_root=videos_root, remote=remote)
        self._config: Dict[str, Any] = {
            "batch_size": batch_size, "shuffle": bool(shuffle), "seed": int(seed), "drop_last": bool(drop_last),
            "rank": rank, "world_size": world_size, "shard_mode": shard_mode, "on_error": on_error,
            "shuffle_window": None,
        }
        self._canonical = (canonical_ranks or world_size, canonical_batch or batch_size)
        self._epoch = first_epoch
        self._seen = 0
        self._prefetch = prefetch_batches
        self._log_size = failure_log_size
        self._lock = threading.Lock()
        self._failures: List[Dict[str, Any]] = []
        self._counts = {"batches": 0, "samples": 0, "samples_failed": 0, "samples_replaced": 0,
                        "failure_count": 0, "padded_samples": 0}
        self._by_cause: Dict[str, int] = {}
        self._decode_s = 0.0
        self._wait_s = 0.0
        self._started = time.monotonic()
        self._worker: Optional[_Prefetcher] = None
        self._closed = False

    # ---------------------------------------------------------------- facts
    @property
    def num_samples(self) -> int:
        return len(self.dataset)

    @property
    def fingerprint(self) -> int:
        return self.dataset.fingerprint

    @property
    def config(self) -> Dict[str, Any]:
        return dict(self._config)

    def __len__(self) -> int:
        """Batches per epoch for this rank."""
        c = self._config
        return len(stripe(self.num_samples, c["batch_size"], world_size=c["world_size"], rank=c["rank"],
                          shard_mode=c["shard_mode"], drop_last=c["drop_last"]))

    # ---------------------------------------------------------------- planning
    def _plan(self, epoch: int, seen: int) -> Tuple[List[int], List[Tuple[int, int, int]]]:
        c = self._config
        order = epoch_order(self.num_samples, epoch, seed=c["seed"], shuffle=c["shuffle"],
                            canonical_ranks=self._canonical[0], canonical_batch=self._canonical[1])
        batches = stripe(self.num_samples, c["batch_size"], world_size=c["world_size"], rank=c["rank"],
                         samples_seen=seen, shard_mode=c["shard_mode"], drop_last=c["drop_last"])
        return order, batches

    def _fail(self, epoch: int, position: int, sample: int, e: BaseException) -> None:
        status = getattr(e, "status", None)
        cause = type(e).__name__
        with self._lock:
            self._counts["failure_count"] += 1
            self._by_cause[cause] = self._by_cause.get(cause, 0) + 1
            self._failures.append({"path": getattr(e, "path", None) or self.dataset.root, "reason": str(e),
                                   "status": status, "cause": cause, "epoch": epoch, "position": position,
                                   "sample": sample})
            del self._failures[:max(0, len(self._failures) - self._log_size)]

    def _decode_batch(self, epoch: int, order: List[int], first: int, count: int) -> Dict[str, Any]:
        """The batch of order positions first .. first + count - 1 (past the
        end: padding, the order again from its start)."""
        n = self.num_samples
        samples = [(p, order[p % n]) for p in range(first, first + count)]
        t0 = time.monotonic()
        try:
            batch = self._decode_samples([s for _, s in samples])
        except (ReelError, ValueError, OSError) as e:
            if self._config["on_error"] == "raise":
                raise
            batch = self._decode_one_by_one(epoch, order, samples, e)
        with self._lock:
            self._decode_s += time.monotonic() - t0
            self._counts["padded_samples"] += sum(1 for p, _ in samples if p >= n)
        return batch

    def _decode_one_by_one(self, epoch: int, order: List[int], samples: List[Tuple[int, int]],
                           first_error: BaseException) -> Dict[str, Any]:
        """After a batch call failed: each sample alone, the failed ones
        skipped or replaced by the next ones of the order that decode."""
        n = self.num_samples
        kept: List[int] = []
        for p, s in samples:
            tries = REPLACE_TRIES if self._config["on_error"] == "replace" else 0
            cand, pos = s, p
            while True:
                try:
                    self._decode_samples([cand])
                    kept.append(cand)
                    if cand != s:
                        with self._lock:
                            self._counts["samples_replaced"] += 1
                    break
                except (ReelError, ValueError, OSError) as e:
                    self._fail(epoch, pos, cand, e)
                    if tries == 0:
                        with self._lock:
                            self._counts["samples_failed"] += 1
                        break
                    tries -= 1
                    pos += 1
                    cand = order[pos % n]
        if not kept:
            return {}
        return self._decode_samples(kept)

    def _decode_samples(self, samples: Sequence[int]) -> Dict[str, Any]:
        """The collated items of `samples`, every camera of every sample in
        one decode_near call writing into the batch's tensors."""
        torch = _torch()
        ds = self.dataset
        t = ds._t
        qs = [ds.query(s) for s in samples]
        b = len(samples)
        dtype_name = ds.dtype
        dtype = torch.uint8 if ds.dtype == "uint8" else torch.float32
        frames: Dict[str, Any] = {}
        cams: Dict[str, Tuple[str, List[float]]] = {}
        outs: Dict[str, Any] = {}
        sizes: Dict[str, Any] = {}
        for key in t.video_keys:
            steps = len(qs[0]["times"][key])
            h, w = ds._sizes[key]
            color, kind = ds._mode(key)
            frames[key] = torch.empty((b, steps, 1 if color == "gray" else 3, h, w),
                                      dtype=getattr(torch, kind) if kind != dtype_name else dtype)
            for j, q in enumerate(qs):
                name = f"{j}:{key}"
                cams[name] = (t.video_path(q["episode"], key), q["times"][key])
                outs[name] = frames[key][j]
                sizes[name] = ds._size_req[key]
        got = ds._decode(cams, {n: n.split(":", 1)[1] for n in cams}, sizes, outs)
        batch: Dict[str, Any] = {}
        for key in t.video_keys:
            x = frames[key]
            batch[key] = x.squeeze(1) if x.shape[1] == 1 else x
            if ds.on_violation == "flag":
                batch[f"{key}_within_tolerance"] = torch.tensor(
                    [list(got[f"{j}:{key}"].within_tolerance) for j in range(b)]).reshape(b, -1).squeeze(1)
        rows = [q["row"] for q in qs]
        for c in t.columns:
            a = t.rows[c]
            if c in (ds.delta_indices or {}) and c not in t.video_keys:
                rel = t.rel_of[[q["indices"][c] for q in qs]]
                batch[c] = torch.as_tensor(a[rel], dtype=_torch_dtype(torch, a))
            elif a.dtype.kind == "O":
                batch[c] = [a[r] for r in rows]
            else:
                batch[c] = torch.as_tensor(a[rows], dtype=_torch_dtype(torch, a))
        for key in ds.delta_indices or {}:
            batch[f"{key}_is_pad"] = torch.tensor([q["pad"][key] for q in qs], dtype=torch.bool)
        if t.tasks:
            batch["task"] = [ds._task(r) for r in rows]
        return batch

    # ---------------------------------------------------------------- iteration
    def __iter__(self) -> Iterator[Dict[str, Any]]:
        """Batches to the end of the current epoch; the next epoch starts after it."""
        if self._closed:
            raise RuntimeError("reel.lerobot.Loader: closed")
        self._stop()
        order, batches = self._plan(self._epoch, self._seen)
        self._worker = _Prefetcher(self, self._epoch, order, batches)
        worker = self._worker
        try:
            while True:
                t0 = time.monotonic()
                item = worker.get()
                self._wait_s += time.monotonic() - t0
                if item is None:
                    break
                batch, seen_after = item
                self._seen = seen_after
                if not batch:  # every sample of it failed and was skipped
                    continue
                with self._lock:
                    self._counts["batches"] += 1
                    self._counts["samples"] += len(next(iter(batch.values())))
                yield batch
            self._epoch += 1
            self._seen = 0
        finally:
            if self._worker is worker:
                self._stop()

    def _stop(self) -> None:
        if self._worker is not None:
            self._worker.stop()
            self._worker = None

    # ---------------------------------------------------------------- state
    def state_dict(self) -> Dict[str, Any]:
        """Where the epoch is: reel.Loader's state keys (``version``,
        ``epoch``, ``samples_seen`` (global: every rank saves the same),
        ``seed``, ``canonical_ranks``, ``canonical_batch``, ``shuffle``,
        ``shuffle_window``, ``num_videos`` (here the number of samples),
        ``fingerprint`` (of the selected rows and cameras), ``topology``)."""
        c = self._config
        return {"version": STATE_VERSION, "epoch": self._epoch, "samples_seen": self._seen, "seed": c["seed"],
                "canonical_ranks": self._canonical[0], "canonical_batch": self._canonical[1],
                "shuffle": c["shuffle"], "shuffle_window": None, "num_videos": self.num_samples,
                "fingerprint": self.fingerprint,
                "topology": {"world_size": c["world_size"], "batch_size": c["batch_size"], "num_workers": 1}}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continues a saved epoch: exactly the samples not yet handed out,
        split over this loader's rank, world size and batch size. ValueError
        for a state of another dataset, seed or shuffle."""
        check_state(state, self.num_samples, self.fingerprint, self._config)
        epoch, seen = int(state["epoch"]), int(state["samples_seen"])
        ranks, batch = int(state.get("canonical_ranks", 1)), int(state.get("canonical_batch", 1))
        if epoch < 0 or not 0 <= seen <= self.num_samples or ranks < 1 or batch < 1:
            raise ValueError(f"loader state: epoch {epoch}, samples_seen {seen} (of {self.num_samples}), "
                             f"canonical {ranks} x {batch} are out of range")
        self._stop()
        self._epoch, self._seen, self._canonical = epoch, seen, (ranks, batch)

    # ---------------------------------------------------------------- reporting
    def metrics(self) -> Dict[str, Any]:
        """``batches``, ``samples``, ``samples_failed`` (skipped),
        ``samples_replaced``, ``padded_samples``, ``decode_seconds`` (the
        decoding thread's time in batches), ``wait_seconds`` (the time the
        iterating thread waited for a batch), ``samples_per_second``,
        ``failure_count``, ``failures`` (the most recent: path, reason,
        status, cause, epoch, position, sample), ``failures_by_cause``,
        ``failed_not_listed``."""
        with self._lock:
            m: Dict[str, Any] = dict(self._counts)
            m["failures"] = [dict(f) for f in self._failures]
            m["failures_by_cause"] = dict(self._by_cause)
            m["decode_seconds"] = self._decode_s
        m["wait_seconds"] = self._wait_s
        elapsed = time.monotonic() - self._started
        m["samples_per_second"] = m["samples"] / elapsed if elapsed > 0 else 0.0
        m["failed_not_listed"] = max(0, m["failure_count"] - len(m["failures"]))
        m["epoch"], m["samples_seen"] = self._epoch, self._seen
        return m

    # ---------------------------------------------------------------- lifetime
    def close(self) -> None:
        self._stop()
        self._closed = True

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return (f"reel.lerobot.Loader({self.dataset.root!r}, {self.num_samples} samples, "
                f"batch_size={self._config['batch_size']}, cameras={self.dataset.video_keys})")


class _Prefetcher:
    """The background thread of one pass over an epoch's stripe: batches
    decoded in order into a bounded queue; an error is handed to the
    iterating thread in turn."""

    def __init__(self, loader: Loader, epoch: int, order: List[int], batches: List[Tuple[int, int, int]]) -> None:
        self._q: "queue.Queue[Any]" = queue.Queue(maxsize=loader._prefetch)
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(loader, epoch, order, batches),
                                        name="reel-lerobot-prefetch", daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._stopping.is_set():
            try:
                self._q.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, loader: Loader, epoch: int, order: List[int], batches: List[Tuple[int, int, int]]) -> None:
        try:
            for first, count, seen_after in batches:
                if self._stopping.is_set():
                    return
                batch = loader._decode_batch(epoch, order, first, count)
                if not self._put(("batch", batch, seen_after)):
                    return
            self._put(("end", None, None))
        except BaseException as e:  # handed to the iterating thread
            self._put(("error", e, None))

    def get(self) -> Optional[Tuple[Dict[str, Any], int]]:
        kind, value, seen = self._q.get()
        if kind == "end":
            return None
        if kind == "error":
            raise value
        return value, seen

    def stop(self) -> None:
        self._stopping.set()
        while self._thread.is_alive():
            try:
                self._q.get(timeout=0.05)
            except queue.Empty:
                pass
        self._thread.join()
