# reel/_ray_collate.py: PadCollate, the iter_torch_batches collate for
# read_clips' variable samples (ragged columns zero-padded to the batch's
# largest, with each row's shape). Imported by reel.ray; needs Ray and torch.
from __future__ import annotations

from typing import Any, Dict

import numpy as np
from ray.data.collate_fn import NumpyBatchCollateFn


class PadCollate(NumpyBatchCollateFn):
    """``iter_torch_batches(collate_fn=reel.ray.PadCollate())``: batches
    ``read_clips`` rows of different lengths and sizes (``sampler="fps"``
    with a ``size_policy``) into tensors, as ``reel.Loader(pad=True)``
    batches its samples.

    Each ragged column (``frames``, ``frame_indices``, ``pts_seconds``,
    ``audio``) becomes
    one tensor of [B, max of each dimension], filled with ``pad_value`` past
    each row's own extent, plus ``<column>_shapes``, an int64 tensor [B, ndim]
    of each row's shape, which says which part is real (a failed sample's
    row has T, H and W 0). Fixed-shape columns become tensors as they are.
    String columns (``path``, ``failure``) are refused by name: select
    ``reel.ray.TENSOR_COLUMNS`` first. Every value is a tensor, so Ray moves
    the batch to ``iter_torch_batches``' ``device``.

    A model that takes packed sequences (Qwen-VL's patches with their
    grids) wants no padding: subclass ``NumpyBatchCollateFn`` and cut the
    patches from each row of ``batch["frames"]`` (docs/python.md shows one).
    Thread-safety: an instance holds only its settings; calls may run
    concurrently."""

    #: read_clips' columns whose rows may differ in shape
    RAGGED = ("frames", "frame_indices", "pts_seconds", "audio")

    def __init__(self, pad_value: float = 0) -> None:
        self.pad_value = pad_value

    def __call__(self, batch: Dict[str, np.ndarray]) -> Any:  # a dict of tensors
        import torch

        out: Dict[str, Any] = {}
        for name, col in batch.items():
            if col.dtype != object and name not in self.RAGGED:
                # Ray's arrays may be read-only views of its blocks: a tensor gets its own copy then
                out[name] = torch.from_numpy(col if col.flags.writeable and col.flags.c_contiguous else np.array(col))
                continue
            # a ragged column whose rows in this batch share a shape may come
            # stacked: it still gets its shapes, so every batch has the same keys
            rows = list(col)
            if not all(isinstance(r, np.ndarray) and r.dtype != object for r in rows):
                raise TypeError(f"reel.ray.PadCollate: column {name!r} holds strings or objects, not tensors; "
                                "select list(reel.ray.TENSOR_COLUMNS) first")
            if len({r.ndim for r in rows}) > 1 or len({r.dtype for r in rows}) > 1:
                raise TypeError(f"reel.ray.PadCollate: the rows of column {name!r} differ in rank or dtype")
            shapes = np.array([r.shape for r in rows], dtype=np.int64).reshape(len(rows), -1)
            top = shapes.max(axis=0) if len(rows) else np.zeros(0, np.int64)
            padded = np.full((len(rows), *top), self.pad_value, dtype=rows[0].dtype if rows else np.uint8)
            for i, r in enumerate(rows):  # one copy of each row into its corner of the batch
                padded[i][tuple(slice(0, n) for n in r.shape)] = r
            out[name] = torch.from_numpy(padded)
            out[f"{name}_shapes"] = torch.from_numpy(shapes)
        return out
