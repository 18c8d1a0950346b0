# reel/_options.py: turns the Python-friendly option values (strings, tuples,
# torch/numpy dtypes, paths) into the integer codes of the C API.
from __future__ import annotations

import os
import sys
from typing import Any, Dict, Optional, Sequence, Tuple, Union

from . import _reel

# option names -> the C enum values, as the extension exports them
DTYPES: Dict[str, int] = {
    "uint8": _reel.DTYPE_UINT8, "u8": _reel.DTYPE_UINT8,
    "float32": _reel.DTYPE_FLOAT32, "float": _reel.DTYPE_FLOAT32, "f32": _reel.DTYPE_FLOAT32,
    "float16": _reel.DTYPE_FLOAT16, "half": _reel.DTYPE_FLOAT16, "f16": _reel.DTYPE_FLOAT16,
    "bfloat16": _reel.DTYPE_BFLOAT16, "bf16": _reel.DTYPE_BFLOAT16,
    "uint16": _reel.DTYPE_UINT16, "u16": _reel.DTYPE_UINT16,
}
COLORS: Dict[str, int] = {"rgb": _reel.COLOR_RGB, "gray": _reel.COLOR_GRAY}
FILTERS: Dict[str, int] = {"bilinear": _reel.FILTER_BILINEAR, "area": _reel.FILTER_AREA,
                           "bicubic": _reel.FILTER_BICUBIC, "nearest": _reel.FILTER_NEAREST}
CONVERT_PATHS: Dict[str, int] = {"fused": _reel.CONVERT_PATH_FUSED, "after_rgb": _reel.CONVERT_PATH_AFTER_RGB}
FRAME_LAYOUTS: Dict[str, int] = {"HWC": _reel.LAYOUT_HWC, "NHWC": _reel.LAYOUT_HWC,
                                 "CHW": _reel.LAYOUT_CHW, "NCHW": _reel.LAYOUT_CHW}
INDEX_MODES: Dict[Any, int] = {"off": _reel.INDEX_OFF, "read": _reel.INDEX_READ, "read_write": _reel.INDEX_READ_WRITE}
CORRUPT: Dict[str, int] = {"fail": _reel.CORRUPT_FAIL, "skip": _reel.CORRUPT_SKIP}
NEAR_VIOLATIONS: Dict[str, int] = {"raise": _reel.NEAR_RAISE, "flag": _reel.NEAR_FLAG}
# reel_index_source value -> name
INDEX_SOURCES: Dict[int, str] = {_reel.INDEX_FROM_CONTAINER: "container", _reel.INDEX_FROM_SCAN: "scan",
                                 _reel.INDEX_FROM_SIDECAR: "sidecar"}


def pool_owns_cores() -> bool:
    """True inside a torch DataLoader worker: its pool owns the cores, so a
    decoder's defaults use one (torch is looked up, never imported)."""
    data = sys.modules.get("torch.utils.data")
    get = getattr(data, "get_worker_info", None) if data is not None else None
    try:
        return get is not None and get() is not None
    except Exception:  # pragma: no cover - a torch without worker info
        return False


def decoder_threads(threads: Optional[int], gop_threads: Optional[int]) -> Tuple[int, int]:
    """VideoDecoder's ``threads`` and ``gop_threads`` as C's settings.threads
    and gop_contexts. None, the default: the cores (0: FFmpeg's frame threads
    from the core count; REEL_GOP_CONTEXTS_AUTO: GOP-parallel contexts up to
    the core count), or 1 and 1 inside a DataLoader worker."""
    in_pool = pool_owns_cores()
    t = (1 if in_pool else 0) if threads is None else int(threads)
    g = (1 if in_pool else _reel.GOP_CONTEXTS_AUTO) if gop_threads is None else int(gop_threads)
    return t, g


def choice(name: str, value: Any, table: Dict[str, int]) -> int:
    """The code of `value` in `table` (case-insensitive), or a ValueError naming the choices."""
    if isinstance(value, str):
        key = value.lower() if value.lower() in table else value.upper()
        if key in table:
            return table[key]
    choices = ", ".join(repr(k) for k in table)
    raise ValueError(f"{name}={value!r}: expected one of {choices}")


def dtype_code(dtype: Any) -> int:
    """uint8/uint16/float32/float16/bfloat16 given as a string, a torch dtype or a numpy dtype."""
    if isinstance(dtype, str):
        name = dtype
    else:
        name = getattr(dtype, "name", None) or getattr(dtype, "__name__", None) or str(dtype)
    name = str(name).lower()
    if name.startswith("torch."):
        name = name[len("torch."):]
    if name in DTYPES:
        return DTYPES[name]
    raise ValueError(f"dtype={dtype!r}: expected uint8, uint16, float32, float16 or bfloat16")


def size_hw(name: str, size: Union[int, Sequence[int], None]) -> Tuple[int, int]:
    """(height, width) from an int (square) or a (height, width) pair; None: (0, 0)."""
    if size is None:
        return (0, 0)
    if isinstance(size, int) and not isinstance(size, bool):
        h = w = size
    else:
        try:
            h, w = (int(v) for v in size)  # type: ignore[union-attr]
        except (TypeError, ValueError):
            raise TypeError(f"{name}={size!r}: expected an int or a (height, width) pair") from None
    if h <= 0 or w <= 0:
        raise ValueError(f"{name}={size!r}: sizes must be positive")
    return (h, w)


def crop_xywh(crop: Optional[Sequence[int]]) -> Tuple[int, int, int, int]:
    """(x, y, w, h) for the C API from (top, left, height, width); None: no crop."""
    if crop is None:
        return (0, 0, 0, 0)
    try:
        top, left, height, width = (int(v) for v in crop)
    except (TypeError, ValueError):
        raise TypeError(f"crop={crop!r}: expected (top, left, height, width)") from None
    if top < 0 or left < 0 or height <= 0 or width <= 0:
        raise ValueError(f"crop={crop!r}: need top, left >= 0 and height, width > 0")
    return (left, top, width, height)


def rgb3(name: str, value: Optional[Sequence[float]], default: float) -> Tuple[float, float, float]:
    if value is None:
        return (default, default, default)
    if isinstance(value, (int, float)):
        return (float(value),) * 3
    vals = tuple(float(v) for v in value)
    if len(vals) != 3:
        raise ValueError(f"{name}={value!r}: expected 3 values (R, G, B)")
    return vals


def index_mode(index: Any) -> int:
    """False/None/'off' -> off, 'read', True/'read_write' -> read and write."""
    if index is None or index is False:
        return _reel.INDEX_OFF
    if index is True:
        return _reel.INDEX_READ_WRITE
    return choice("index_mode", index, INDEX_MODES)


def fspath_or_none(p: Any) -> Optional[str]:
    return None if p is None else os.fspath(p)


# reel_field_type codes (reel/common.h) -> Python converters
_FIELD_CONVERT: Dict[int, Any] = {0: int, 1: int, 2: int, 3: int, 4: float, 5: float, 7: str}

def field_value(kind: int, value: Any) -> Any:
    """`value` converted for a C field of reel_field_type `kind` (bools become 0/1)."""
    if kind not in _FIELD_CONVERT:
        raise TypeError(f"a C field of type {kind} cannot be set from Python")
    return _FIELD_CONVERT[kind](value)


# remote={...} keys -> their converters, from the C table of reel_remote_settings
REMOTE_OPTIONS: Dict[str, Any] = {name: _FIELD_CONVERT[kind] for name, kind in _reel.fields("remote_settings")}
REMOTE_OPTIONS["verify_tls"] = lambda v: int(bool(v))


def remote_settings(remote: Any) -> Dict[str, Any]:
    """The remote={...} option checked and converted (keys of REMOTE_OPTIONS)."""
    if not isinstance(remote, dict):
        raise TypeError(f"remote={remote!r}: expected a dict")
    out: Dict[str, Any] = {}
    for k, v in remote.items():
        if k not in REMOTE_OPTIONS:
            raise ValueError(f"remote={{{k!r}: ...}}: expected keys among {', '.join(REMOTE_OPTIONS)}")
        out[k] = None if v is None else REMOTE_OPTIONS[k](v)
    return out
