# reel/torch.py: PyTorch conveniences over the core API: tensors from reel
# arrays, a loader wrapper that yields tensors (optionally moved to a device),
# an IterableDataset over the loader for torch.utils.data.DataLoader (worker
# and torch.distributed sharding), and a map-style Dataset of clips.
"""PyTorch helpers (``import reel.torch``; imports torch).

- :func:`as_tensor`: a reel.Frames (or anything with ``__dlpack__``) as a
  tensor, zero-copy.
- :class:`TorchLoader`: iterates a :class:`reel.Loader` and yields
  :class:`TorchBatch` (frames, labels, info) as tensors, on ``device`` if given.
- :class:`VideoDataset`: a ``torch.utils.data.IterableDataset`` over a
  reel.Loader, yielding whole batches (``DataLoader(ds, batch_size=None)``)
  or single clips; shards itself over DataLoader workers and
  torch.distributed ranks.
- :class:`StatefulDataLoader`: a ``torch.utils.data.DataLoader`` over a
  VideoDataset whose main process saves and loads the epoch's position, with
  any number of workers (elastic resume: another world size, batch size or
  worker count continues the epoch).
- :func:`check_state_across_ranks`: checks with torch.distributed that every
  rank saves the same state.
- :class:`ClipDataset`: a ``torch.utils.data.Dataset`` of videos that returns
  clips sampled by the reel samplers; safe with DataLoader workers (fork or
  spawn).
"""
from __future__ import annotations

import os
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import torch
import torch.utils.data

from ._decoder import VideoDecoder
from ._loader import (
    ClipInfo,
    Loader,
    check_state,
    checkpoint_at,
    dataset_identity,
    dataset_info,
    epoch_shape,
    loader_defaults,
)
from ._samplers import (
    clips_at_count,
    clips_at_fps,
    clips_at_random_indices,
    clips_at_random_timestamps,
    clips_at_regular_indices,
    clips_at_regular_timestamps,
)

__all__ = ["as_tensor", "TorchBatch", "TorchAudioBatch", "TorchClip", "TorchAudioClip", "TorchLoader", "VideoDataset",
           "StatefulDataLoader", "check_state_across_ranks", "ClipDataset"]


def as_tensor(x: Any) -> torch.Tensor:
    """``torch.from_dlpack(x)``: shares memory with `x` (a reel.Frames)."""
    return torch.from_dlpack(x)


class TorchBatch(NamedTuple):
    frames: Any  #: [B, T, C, H, W] (or the loader's layout); a list of [T, C, H, W] for variable batches
    labels: torch.Tensor  #: [B] int64
    info: List[ClipInfo]


class TorchAudioBatch(NamedTuple):
    """A batch of a loader with ``audio``: TorchBatch's three fields, then
    the clips' audio (a loader without audio gives :class:`TorchBatch`, so
    ``frames, labels, info = batch`` keeps working there)."""

    frames: Any
    labels: torch.Tensor
    info: List[ClipInfo]
    #: float32 [B, C, S_max] zero-padded (a list of [C, S_i] for an unpadded variable batch), as reel.Batch.audio
    audio: Any
    audio_lengths: torch.Tensor  #: [B] int64: each clip's S_i
    audio_valid: torch.Tensor  #: [B, 2] int64: the [lo, hi) of each clip's samples from the stream


def _torch_batch(frames: Any, labels: torch.Tensor, info: List[ClipInfo],
                 audio: Tuple[Any, Any, Any]) -> Union[TorchBatch, TorchAudioBatch]:
    if audio[0] is None:
        return TorchBatch(frames, labels, info)
    return TorchAudioBatch(frames, labels, info, *audio)


class TorchClip(NamedTuple):
    """One clip, as :class:`VideoDataset` yields it with ``clips=True``. Plain
    tensors and ints, so DataLoader's default collation batches it."""

    frames: torch.Tensor  #: [T, C, H, W] (or the loader's layout without B)
    label: int            #: -1 when the sample has none
    sample: int           #: dataset index that was decoded
    clip: int             #: clip number within its video
    padded: bool          #: a repeated sample that evens out the shards
    epoch: int = 0        #: its batch's epoch
    samples_seen: int = 0  #: its batch's samples_seen (the state right after the batch)


class TorchAudioClip(NamedTuple):
    """One clip of a loader with ``audio``, as :class:`VideoDataset` yields
    it with ``clips=True``: TorchClip's fields, then the clip's audio (a
    loader without audio gives :class:`TorchClip`). ``audio`` is the clip's
    row of its batch's zero-padded plane, so the clips of one reel batch have
    one length and DataLoader's default collation stacks them (a DataLoader
    ``batch_size`` of the loader's ``batch_size * clips_per_video`` keeps
    each DataLoader batch one reel batch; clips of fixed-rate videos with one
    frame count have one length anyway)."""

    frames: torch.Tensor
    label: int
    sample: int
    clip: int
    padded: bool
    epoch: int = 0
    samples_seen: int = 0
    #: float32 [C, S_max]: the clip's samples, then zeros (an unpadded variable batch: [C, S_i])
    audio: Optional[torch.Tensor] = None
    audio_length: int = 0  #: S_i, the clip's own sample count (reel.Batch.audio_lengths[i])
    audio_valid: Optional[torch.Tensor] = None  #: int64 [2]: the [lo, hi) of its samples from the stream
    audio_first_sample: int = 0  #: its s(t0) (ClipInfo.audio_first_sample)


class TorchLoader:
    """Wraps a reel.Loader: each batch as tensors. With ``device`` (e.g.
    "cuda"), frames and labels are copied there (``non_blocking`` copies from
    the loader's page-aligned buffers, asynchronous when the loader was built
    with ``pin_memory=True``); without, they stay zero-copy views of the ring
    buffers. A ``reel.Loader(device="cuda")`` batch is already on its GPU:
    ``.to()`` of a tensor on its own device copies nothing. Each ``for`` loop
    runs to the end of the current epoch.

    An asynchronous copy reads the ring buffer after ``next()`` returns, so
    the source batch is kept until the copy has finished (checked with a CUDA
    event at the following ``next()``) before its buffer goes back."""

    def __init__(self, loader: Loader, device: Union[str, torch.device, None] = None,
                 non_blocking: bool = True) -> None:
        self.loader = loader
        self.device = None if device is None else torch.device(device)
        self.non_blocking = non_blocking
        self._inflight: Optional[Tuple[Any, Any]] = None  # (source batch, CUDA event)

    def __len__(self) -> int:
        return len(self.loader)

    def __iter__(self) -> Iterator[Union[TorchBatch, TorchAudioBatch]]:
        """Tensors for each batch to the end of the current epoch."""
        return self

    def _settle(self) -> None:
        """Waits for the last asynchronous copy, then lets its source batch go."""
        if self._inflight is not None:
            _, event = self._inflight
            if event is not None:
                event.synchronize()
            self._inflight = None

    def __next__(self) -> Union[TorchBatch, TorchAudioBatch]:
        # not a generator: it would keep the last batch (a ring buffer) alive
        self._settle()
        batch = self.loader.next_batch()
        if batch is None:
            raise StopIteration
        frames, labels = batch.torch()
        audio = _audio(batch)
        if self.device is not None and self.device.type != "cpu":
            frames = _each(frames, lambda f: f.to(self.device, non_blocking=self.non_blocking))
            labels = labels.to(self.device, non_blocking=self.non_blocking)
            if audio[0] is not None:
                audio = (_each(audio[0], lambda a: a.to(self.device, non_blocking=self.non_blocking)),
                         audio[1].to(self.device, non_blocking=self.non_blocking),
                         audio[2].to(self.device, non_blocking=self.non_blocking))
            if self.non_blocking and self.device.type == "cuda":
                event = torch.cuda.Event()
                event.record()
                self._inflight = (batch, event)
        return _torch_batch(frames, labels, batch.info, audio)


# Loader arguments VideoDataset sets itself (rank and world_size are its own).
_MANAGED = ("epochs",)


def _cpu_count() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class VideoDataset(torch.utils.data.IterableDataset):
    """A ``torch.utils.data.IterableDataset`` over a :class:`reel.Loader`.

    ``source`` and ``**loader_args`` are reel.Loader's (frames_per_clip, size,
    batch_size, dtype, mean, std, flip, seed, decode_threads...). Each
    ``iter(dataset)`` is one epoch. It yields:

    - ``clips=False`` (default): whole batches, :class:`TorchBatch` (frames
      ``[B, T, C, H, W]``, labels ``[B]``, info; with ``audio``,
      :class:`TorchAudioBatch`), zero-copy views of the loader's ring
      buffers. Use ``DataLoader(dataset, batch_size=None)``: the batches are
      already made.
    - ``clips=True``: one :class:`TorchClip` (frames ``[T, C, H, W]``, label,
      sample, clip, padded; with ``audio``, :class:`TorchAudioClip`, its
      audio too) per clip, copied out of the ring; DataLoader's
      ``batch_size`` then makes the batches.

    ``num_workers=0`` is the recommended DataLoader setting: reel decodes on
    its own C threads, and batches reach the loop without a copy. With
    ``num_workers > 0`` it is still correct: each worker runs its own
    loader over a disjoint share (``decode_threads`` defaults to the cores
    divided among the workers and the local ranks), and batches cross to the
    main process through shared memory (one copy). Worker w of rank r takes
    the batches that DataLoader's round robin over the workers puts in the
    places of a run without workers, so the batches a rank receives are the
    same with any number of workers.

    Distributed: ``rank`` and ``world_size`` default to torch.distributed's
    when it is initialised (else 0 and 1). Each epoch has one global order
    and the ranks' batches are stripes of it (rank r's k-th batch is the r-th
    ``batch_size`` samples of the k-th global batch), so the ranks' samples
    are disjoint and together cover the dataset; ``shard_mode="pad"`` (default)
    repeats a few samples at the end (``padded`` in their info) so every rank
    gets as many batches, as DDP needs.

    Resume: :meth:`state_dict` / :meth:`load_state_dict` here (with
    ``num_workers=0``), or :class:`StatefulDataLoader` (any number of
    workers), continue an epoch on any world size, batch size or worker
    count.

    Epochs: the shuffle, crops and flips depend on (seed, epoch). The epoch
    advances by itself in the process that iterates (``num_workers=0``, or
    ``persistent_workers=True``); with workers that are restarted each epoch,
    call ``set_epoch(epoch)`` before each epoch, as with DistributedSampler
    (but not with persistent workers: their copies would keep the first value).

    ``pin_memory=True`` allocates the loader's ring page-locked (CUDA runtime
    found at run time; plain memory without one, see ``metrics()["ring_memory"]``),
    so ``.to("cuda", non_blocking=True)`` is asynchronous without DataLoader's
    own ``pin_memory`` copy. Keep each batch until its copy has finished. It
    applies with ``num_workers=0``; workers copy batches into shared memory
    (DataLoader's ``pin_memory=True`` is the option there).

    The dataset pickles as its configuration: the loader is created on first
    iteration in the process that iterates (a worker, after fork or spawn).
    """

    def __init__(self, source: Any, *, clips: bool = False, rank: Optional[int] = None,
                 world_size: Optional[int] = None, pin_memory: bool = False, **loader_args: Any) -> None:
        super().__init__()
        defaults = loader_defaults()
        for k in loader_args:
            if k in _MANAGED:
                raise TypeError(f"VideoDataset sets {k!r} itself: each iter() is one epoch")
            if k not in defaults:
                raise TypeError(f"VideoDataset: unknown loader argument {k!r}")
        if (rank is None) != (world_size is None):
            raise ValueError("pass both rank and world_size, or neither")
        if world_size is not None and (world_size < 1 or not 0 <= rank < world_size):  # type: ignore[operator]
            raise ValueError(f"rank {rank} not in [0, world_size {world_size})")
        self.source = source if isinstance(source, (str, bytes, os.PathLike)) else list(source)
        self.loader_args: Dict[str, Any] = dict(loader_args)
        self.clips = bool(clips)
        self.pin_memory = bool(pin_memory)
        self.rank = rank
        self.world_size = world_size
        self._epoch: Optional[int] = None
        self._loader: Optional[Loader] = None
        self._key: Optional[Tuple[int, int, int]] = None
        self._resume: Optional[Dict[str, Any]] = None  # from load_state_dict, for the next iter()
        self._num_videos: Optional[int] = None
        self._fingerprint: Optional[int] = None
        self._canonical: Optional[Tuple[int, int]] = None  # a loaded state's layout, kept for later epochs
        self._fresh = False  # the loader was just made (at epoch 0's start)

    def __len__(self) -> int:
        """Items one ``iter()`` yields in this process: batches (``clips=False``)
        or clips (``clips=True``) of this rank's share of an epoch, counted as
        with ``num_workers=0``. With DataLoader workers every worker pads or
        drops its own share, so the total can differ by a batch per worker."""
        if self._num_videos is None:
            self._num_videos = int(dataset_info(self.source)["size"])
        _, world = self.distributed()
        batch = int(self.loader_args.get("batch_size", 32))
        drop_last = bool(self.loader_args.get("drop_last", False))
        per_rank, batches = epoch_shape(self._num_videos, batch, world_size=world,
                                        shard_mode=self.loader_args.get("shard_mode", "pad"), drop_last=drop_last)
        if not self.clips:
            return batches
        # the loader's batches, cut into clips
        videos = batches * batch if drop_last else per_rank
        return videos * int(self.loader_args.get("clips_per_video", 1))

    # ------------------------------------------------------------ sharding
    def distributed(self) -> Tuple[int, int]:
        """(rank, world_size): the ones given, else torch.distributed's when
        initialised, else (0, 1)."""
        if self.rank is not None and self.world_size is not None:
            return self.rank, self.world_size
        dist = torch.distributed
        if dist.is_available() and dist.is_initialized():
            return dist.get_rank(), dist.get_world_size()
        return 0, 1

    def shard(self) -> Tuple[int, int]:
        """(shard, num_shards) for the calling process: the rank combined with
        the DataLoader worker, when called inside one (worker w of rank r of
        W ranks is shard w * W + r of W * num_workers: its stripe of the order,
        see reel/order.h)."""
        rank, world = self.distributed()
        info = torch.utils.data.get_worker_info()
        if info is None:
            return rank, world
        return info.id * world + rank, world * info.num_workers

    def dataset_identity(self) -> Tuple[int, int]:
        """(number of videos, fingerprint of the entries) of the source."""
        if self._num_videos is None or self._fingerprint is None:
            info = dataset_identity(self.source)
            self._num_videos, self._fingerprint = int(info["size"]), int(info["fingerprint"])
        return self._num_videos, self._fingerprint

    def set_epoch(self, epoch: int) -> None:
        """Makes every following ``iter()`` run this epoch (call it before each
        epoch when DataLoader workers are restarted every epoch)."""
        if epoch < 0:
            raise ValueError("epoch must be >= 0")
        self._epoch = int(epoch)

    # ------------------------------------------------------------ iteration
    def _get_loader(self) -> Loader:
        shard, num_shards = self.shard()
        key = (os.getpid(), shard, num_shards)
        if self._loader is not None and self._key == key and not self._loader.closed:
            return self._loader
        if self._loader is not None and self._key is not None and self._key[0] == key[0]:
            self._loader.close()  # ours, but for another shard
        self._loader = None  # a forked copy of the parent's: dropped, never used
        args = dict(self.loader_args)
        info = torch.utils.data.get_worker_info()
        if args.get("decode_threads") is None:
            workers = info.num_workers if info is not None else 1
            local = int(os.environ.get("LOCAL_WORLD_SIZE", "1") or 1)
            if workers > 1 or local > 1:
                args["decode_threads"] = max(1, _cpu_count() // (workers * local))
        if self._canonical is not None:
            args.setdefault("canonical_ranks", self._canonical[0])
            args.setdefault("canonical_batch", self._canonical[1])
        rank, world = self.distributed()
        # In a worker the batches are copied into shared memory: pinning its ring would buy nothing.
        self._loader = Loader(self.source, rank=rank, world_size=world, epochs=None,
                              num_workers=info.num_workers if info is not None else 1,
                              worker=info.id if info is not None else 0,
                              pin_memory=self.pin_memory and info is None, **args)
        self._key = key
        self._fresh = True  # at epoch 0's start, prefetching it
        return self._loader

    def state_dict(self) -> Dict[str, Any]:
        """Where the next ``iter()`` would resume: this process's loader state
        (:meth:`reel.Loader.state_dict`: the epoch and the global
        ``samples_seen``, the same on every rank). For ``num_workers=0``, where
        the loader lives in this process; with workers use
        :class:`StatefulDataLoader`. Before any iteration here it is the short
        form ``{"epoch": e, "samples_seen": 0}``."""
        if self._resume is not None:
            return dict(self._resume)
        loader = self.loader
        if loader is None:
            return {"epoch": self._epoch if self._epoch is not None else 0, "samples_seen": 0}
        return loader.state_dict()

    def full_state(self, epoch: int, samples_seen: int) -> Dict[str, Any]:
        """The whole state (as reel.Loader.state_dict) at (epoch, samples_seen)
        of this dataset, from its configuration without a loader (C builds it:
        reel_loader_checkpoint_init)."""
        num_videos, fingerprint = self.dataset_identity()
        info = torch.utils.data.get_worker_info()
        config = dict(self.loader_args)
        config["world_size"] = self.distributed()[1]
        config["num_workers"] = info.num_workers if info is not None else 1
        if self._canonical is not None:
            config["canonical_ranks"], config["canonical_batch"] = self._canonical
        return checkpoint_at(config, num_videos, fingerprint, epoch, samples_seen)

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Makes the next ``iter()`` continue ``state`` (from :meth:`state_dict`,
        :meth:`reel.Loader.state_dict` or :meth:`StatefulDataLoader.state_dict`
        of a dataset with the same source, seed and shuffle settings; any
        world size, batch size or worker count): the rest of that epoch,
        exactly the samples not yet consumed. Later epochs follow as usual.
        Raises ValueError for another dataset, seed or shuffle, or a state
        from a newer reel."""
        if not isinstance(state, Mapping):
            raise ValueError(f"a loader state is the dict state_dict() gives, not {type(state).__name__}")
        if "epoch" not in state or "samples_seen" not in state:
            raise ValueError("state must come from VideoDataset.state_dict() or Loader.state_dict()")
        if "version" in state:
            config = dict(self.loader_args)
            config.update(zip(("rank", "world_size"), self.distributed()))
            num_videos, fingerprint = self.dataset_identity()
            check_state(state, num_videos, fingerprint, config)
            if "canonical_ranks" in state:
                self._canonical = (int(state["canonical_ranks"]), int(state["canonical_batch"]))
        self._resume = dict(state)
        self._epoch = None

    def __iter__(self) -> Iterator[Any]:
        """One epoch of this process's share."""
        loader = self._get_loader()
        state = loader.state_dict()
        fresh, self._fresh = self._fresh, False
        if self._resume is not None:
            resume, self._resume = self._resume, None
            if "version" in resume:
                loader.load_state_dict(resume)
            else:  # the short form state_dict() gives before any loader exists
                state.update(epoch=int(resume["epoch"]), samples_seen=int(resume["samples_seen"]))
                loader.load_state_dict(state)
            return _DatasetIterator(loader, self.clips, torch.utils.data.get_worker_info() is not None)
        if self._epoch is not None:
            epoch = self._epoch
        else:  # the next epoch; one left unfinished is not resumed
            epoch = state["epoch"] if state["samples_seen"] == 0 else state["epoch"] + 1
        if not (fresh and epoch == 0):
            state.update(epoch=epoch, samples_seen=0)
            loader.load_state_dict(state)
        return _DatasetIterator(loader, self.clips, torch.utils.data.get_worker_info() is not None)

    # ------------------------------------------------------------ reporting, lifetime
    @property
    def loader(self) -> Optional[Loader]:
        """This process's reel.Loader, once iteration has started here."""
        if self._loader is not None and self._key is not None and self._key[0] == os.getpid():
            return self._loader
        return None

    def metrics(self) -> Optional[Dict[str, Any]]:
        """This process's loader metrics (throughput, coverage, data/model time,
        ring_memory...); None before the first iteration here (or when the
        iterating happens in DataLoader workers)."""
        loader = self.loader
        return None if loader is None else loader.metrics()

    def close(self) -> None:
        """Stops this process's loader (a later iteration starts a new one)."""
        loader = self.loader
        self._loader = None
        self._key = None
        if loader is not None:
            loader.close()

    def __getstate__(self) -> Dict[str, Any]:
        state = self.__dict__.copy()
        state["_loader"] = None
        state["_key"] = None
        # a pending resume goes along: DataLoader workers continue it
        if self.rank is None:  # a spawned worker has no process group: take it along
            dist = torch.distributed
            if dist.is_available() and dist.is_initialized():
                state["rank"], state["world_size"] = dist.get_rank(), dist.get_world_size()
        return state

    def __repr__(self) -> str:
        what = "clips" if self.clips else "batches"
        return f"reel.torch.VideoDataset({self.source!r}, {what}, {self.loader_args})"


def _audio(batch: Any) -> Tuple[Any, Any, Any]:
    """A batch's (audio, audio_lengths, audio_valid) as tensors, zero-copy
    (audio: a list for an unpadded variable batch); Nones without audio."""
    if batch.audio is None and batch.audio_lengths is None:
        return None, None, None
    return _each(batch.audio, lambda a: a.torch()), batch.audio_lengths.torch(), batch.audio_valid.torch()


def _each(frames: Any, fn: Any) -> Any:
    """fn on a batch's frames: one tensor, or each of a variable batch's list."""
    return [fn(f) for f in frames] if isinstance(frames, list) else fn(frames)


def _shared_copy(t: torch.Tensor) -> torch.Tensor:
    """`t` copied into shared memory, as a DataLoader worker sends tensors
    anyway: one copy, and the ring buffer is free at once."""
    nbytes = t.numel() * t.element_size()
    try:
        storage = torch.UntypedStorage._new_shared(max(nbytes, 1))
        out = torch.empty(0, dtype=t.dtype).set_(storage)[: t.numel()].view(t.shape)
    except (AttributeError, RuntimeError, TypeError):  # no such (private) torch API: two copies
        return t.clone().share_memory_()
    return out.copy_(t)


class _DatasetIterator:
    """One epoch of a VideoDataset. Not a generator: it keeps no reference
    to the batch it handed out, so no ring buffer stays held by it.

    In a DataLoader worker (``shared``), batches are copied into shared
    memory before they are handed out: the worker's queue pickles them later,
    on its own thread, and a ring buffer must not wait for that."""

    __slots__ = ("_loader", "_clips", "_shared", "_pending")

    def __init__(self, loader: Loader, clips: bool, shared: bool = False) -> None:
        self._loader: Optional[Loader] = loader
        self._clips = clips
        self._shared = shared
        self._pending: List[Union[TorchClip, TorchAudioClip]] = []

    def __iter__(self) -> "_DatasetIterator":
        return self

    def __next__(self) -> Any:
        while not self._pending:
            if self._loader is None:
                raise StopIteration
            batch = self._loader.next_batch()
            if batch is None:
                self._loader = None
                raise StopIteration
            if len(batch) == 0:  # every sample of it failed (on_error="skip")
                continue
            frames, labels = batch.torch()
            if not self._clips:
                audio = _audio(batch)
                if self._shared:
                    frames, labels = _each(frames, _shared_copy), _shared_copy(labels)
                    a, n, v = audio
                    audio = (None, None, None) if a is None else (_each(a, _shared_copy), _shared_copy(n),
                                                                  _shared_copy(v))
                return _torch_batch(frames, labels, batch.info, audio)
            self._pending = _clips_of(batch, frames, labels, self._shared)
            self._pending.reverse()
        return self._pending.pop()


def _clips_of(batch: Any, frames: Any, labels: torch.Tensor, shared: bool) -> List[Union[TorchClip, TorchAudioClip]]:
    """A batch's clips, each with one copy of its frames (and audio): the
    ring buffer goes back at once."""
    copy = _shared_copy if shared else (lambda t: t.clone())
    frames = _each(frames, copy)
    ys = labels.tolist()
    clips = [TorchClip(frames[i], ys[i], c.sample, c.clip, c.padded, batch.epoch, batch.samples_seen)
             for i, c in enumerate(batch.info)]
    audio, lengths, valid = _audio(batch)
    if audio is None:
        return list(clips)
    rows, ns, vs = _each(audio, copy), lengths.tolist(), copy(valid)  # rows: a [B, C, S] plane or a list of [C, S_i]
    return [TorchAudioClip(*clip, rows[i], ns[i], vs[i], c.audio_first_sample)
            for i, (clip, c) in enumerate(zip(clips, batch.info))]


class StatefulDataLoader(torch.utils.data.DataLoader):
    """A ``torch.utils.data.DataLoader`` over a :class:`VideoDataset` whose
    main process saves where the epoch is, with any ``num_workers`` (as
    torchdata's StatefulDataLoader does for its datasets).

    ``batch_size`` defaults to None (reel makes the batches); other arguments
    are DataLoader's. Each ``iter()`` is one epoch, and the epoch advances by
    itself (an epoch left unfinished is not resumed by the next ``iter()``).
    :meth:`state_dict` is taken from the batches the main process has
    received (each carries the global ``samples_seen`` after it), so it is
    exact however far the workers have read ahead, and the same on every
    rank of a synchronous job. :meth:`load_state_dict` before an ``iter()``
    makes it continue that epoch: with another number of ranks, workers, or
    another batch size, exactly the samples not yet consumed are delivered.

    With ``clips=True`` the state is exact when the DataLoader's batch_size is
    the loader's ``batch_size * clips_per_video`` (each DataLoader batch one
    reel batch); otherwise it counts the last reel batch that ended in a
    DataLoader batch, and a resume may repeat a few clips.

    ``persistent_workers=True``: load a state before the first ``iter()``."""

    def __init__(self, dataset: VideoDataset, batch_size: Optional[int] = None, **kwargs: Any) -> None:
        if not isinstance(dataset, VideoDataset):
            raise TypeError(f"StatefulDataLoader takes a reel.torch.VideoDataset, not {type(dataset).__name__}")
        super().__init__(dataset, batch_size=batch_size, **kwargs)
        self._epoch = 0          # the epoch of the next or current iter()
        self._seen = 0           # its samples consumed (global)
        self._pending: Optional[Dict[str, Any]] = None
        self._started = False    # an iter() was made (persistent workers exist)
        self._running = False    # the current epoch is not finished

    def __iter__(self) -> Iterator[Any]:  # type: ignore[override]
        ds: VideoDataset = self.dataset  # type: ignore[assignment]
        if self._running:  # the last epoch was left unfinished: go on with the next one
            self._epoch, self._seen = self._epoch + 1, 0
        if self._pending is not None:
            ds.load_state_dict(self._pending)
            self._epoch, self._seen = int(self._pending["epoch"]), int(self._pending.get("samples_seen", 0))
            self._pending = None
        elif not (self.persistent_workers and self._started):
            ds.set_epoch(self._epoch)
        it = super().__iter__()
        ds._resume = None  # the workers (or, without workers, the dataset's iterator) have it now
        self._started = self._running = True
        return _StatefulIterator(self, it)

    def _note(self, item: Any) -> None:
        if isinstance(item, (TorchBatch, TorchAudioBatch)):
            if item.info:
                self._epoch, self._seen = item.info[0].epoch, item.info[0].samples_seen
        elif isinstance(item, (TorchClip, TorchAudioClip)):
            seen = item.samples_seen
            epoch = item.epoch
            if isinstance(seen, torch.Tensor):
                if seen.numel() == 0:
                    return
                seen, epoch = seen.reshape(-1)[-1], epoch.reshape(-1)[-1]
            self._epoch, self._seen = int(epoch), int(seen)

    def state_dict(self) -> Dict[str, Any]:
        """The state after the last item handed out (reel.Loader.state_dict's
        keys, ``topology`` as seen here: this world size, the loader's batch
        size and ``num_workers``)."""
        if self._pending is not None:
            return dict(self._pending)
        ds: VideoDataset = self.dataset  # type: ignore[assignment]
        epoch, seen = self._epoch, self._seen
        if seen >= ds.dataset_identity()[0]:
            epoch, seen = epoch + 1, 0
        state = ds.full_state(epoch, seen)
        state["topology"]["num_workers"] = max(1, self.num_workers)
        return state

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Continues ``state`` at the next ``iter()``. Raises ValueError for a
        state of another dataset, seed or shuffle, or a newer reel."""
        if self.persistent_workers and self._started:
            raise RuntimeError("load_state_dict with persistent_workers=True must come before the first iter()")
        self.dataset.load_state_dict(state)  # type: ignore[attr-defined]  # checks it
        self.dataset._resume = None  # type: ignore[attr-defined]  # until the next iter()
        self._pending = dict(state)
        self._running = False


class _StatefulIterator:
    """Passes a DataLoader iterator's items through, noting each one's state."""

    __slots__ = ("_dl", "_it")

    def __init__(self, dl: StatefulDataLoader, it: Iterator[Any]) -> None:
        self._dl = dl
        self._it = it

    def __iter__(self) -> "_StatefulIterator":
        return self

    def __len__(self) -> int:
        return len(self._it)  # type: ignore[arg-type]

    def __next__(self) -> Any:
        try:
            item = next(self._it)
        except StopIteration:
            if self._dl._running:
                self._dl._epoch, self._dl._seen, self._dl._running = self._dl._epoch + 1, 0, False
            raise
        self._dl._note(item)
        return item


def check_state_across_ranks(state: Dict[str, Any]) -> Dict[str, Any]:
    """Checks that every rank holds the same loader state (as a synchronous
    job's ranks must: ``samples_seen`` is global), with an all-gather through
    torch.distributed when it is initialised; returns ``state``. Raises
    RuntimeError naming the ranks that differ. Without torch.distributed it
    only returns the state. Collective: call it on every rank."""
    dist = torch.distributed
    if not (dist.is_available() and dist.is_initialized()):
        return state
    states: List[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(states, state)
    differ = [r for r, s in enumerate(states) if s != states[0]]
    if differ:
        keys = sorted(k for r in differ for k in set(states[r]) | set(states[0])
                      if states[r].get(k) != states[0].get(k))
        raise RuntimeError(f"loader states differ between ranks: ranks {differ} against rank 0 "
                           f"(keys {sorted(set(keys))}); every rank must have consumed as many batches")
    return state


_SAMPLERS: Dict[str, Callable[..., Any]] = {
    "random": clips_at_random_indices,
    "regular": clips_at_regular_indices,
    "random_time": clips_at_random_timestamps,
    "regular_time": clips_at_regular_timestamps,
    "fps": clips_at_fps,
    "count": clips_at_count,
}


class ClipDataset(torch.utils.data.Dataset):
    """``dataset[i]`` -> (clips [N, T, C, H, W] tensor, label) for video i.

    ``videos``: paths, or (path, label) pairs. ``sampler``: "random",
    "regular", "random_time", "regular_time", "fps" or "count" (whole-video,
    reel.clips_at_fps / clips_at_count); ``sampler_args`` go to the
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
