# reel/_loader_settings.py: Loader's keywords to the C loader settings
# (reel_loader_settings, by the full field names of
# reel_loader_settings_get_fields): one row or one line per keyword.
from __future__ import annotations

import os
from typing import Any, Dict, Mapping, Tuple, Union

from . import _options as opt
from . import _reel


# option names -> the C enum values, as the extension exports them
SAMPLERS = {"random": _reel.SAMPLER_RANDOM_INDICES, "random_indices": _reel.SAMPLER_RANDOM_INDICES,
            "regular": _reel.SAMPLER_REGULAR_INDICES, "regular_indices": _reel.SAMPLER_REGULAR_INDICES,
            "random_time": _reel.SAMPLER_RANDOM_TIMES, "random_timestamps": _reel.SAMPLER_RANDOM_TIMES,
            "regular_time": _reel.SAMPLER_REGULAR_TIMES, "regular_timestamps": _reel.SAMPLER_REGULAR_TIMES,
            "fps": _reel.SAMPLER_FPS, "count": _reel.SAMPLER_COUNT}
POLICIES = {"repeat_last": _reel.CLIP_REPEAT_LAST, "wrap": _reel.CLIP_WRAP, "drop": _reel.CLIP_DROP,
            "error": _reel.CLIP_ERROR}
CROPS = {"none": _reel.CROP_NONE, "center": _reel.CROP_CENTER, "random": _reel.CROP_RANDOM,
         "random_resized": _reel.CROP_RANDOM_RESIZED}
BATCH_LAYOUTS = {"BTCHW": _reel.BATCH_BTCHW, "BCTHW": _reel.BATCH_BCTHW, "BTHWC": _reel.BATCH_BTHWC}
ON_ERROR = {"skip": _reel.ON_ERROR_SKIP, "replace": _reel.ON_ERROR_REPLACE, "raise": _reel.ON_ERROR_RAISE}
SHARD = {"pad": _reel.SHARD_PAD, "drop": _reel.SHARD_DROP}


def shuffle_window_code(w: Union[int, str, None]) -> int:
    if w is None:
        return 0
    if w == "full":
        return -1
    if isinstance(w, str) or isinstance(w, bool) or int(w) < 0:
        raise ValueError(f"shuffle_window must be None, 'full' or a number of records >= 1, not {w!r}")
    return int(w)


def _u64(v: Any) -> int:
    """A seed as C's uint64_t takes it (a negative one wraps)."""
    return int(v) & 0xFFFFFFFFFFFFFFFF


# Each Loader keyword that sets one C field of reel_loader_settings as it
# is (converted to the field's type), by the field's full name in
# reel_loader_settings_get_fields (src/pipeline/fields.c); None keeps the C
# default. The keywords that need more than a type (another name, a string
# choice, a pair, several fields) are in _converted_settings below; the
# two lists together name every Loader keyword (tests/python/test_fields.py).
LOADER_FIELDS: Tuple[Tuple[str, str, Any], ...] = (
    # (Loader keyword, C field, converter)
    ("frames_per_clip", "sampler.frames_per_clip", int),
    ("clips_per_video", "sampler.clips_per_video", int),
    ("frame_stride", "sampler.frame_stride", int),
    ("seconds_between_frames", "sampler.seconds_between_frames", float),
    ("fps", "sampler.fps", float),
    ("min_frames", "sampler.min_frames", int),
    ("max_frames", "sampler.max_frames", int),
    ("flip_probability", "transform.flip_probability", float),
    ("divisor", "transform.pixels.divisor", float),
    ("batch_size", "batch_size", int),
    ("drop_last", "drop_last", int),
    ("shuffle", "shuffle", int),
    ("seed", "seed", _u64),
    ("rank", "rank", int),
    ("world_size", "world_size", int),
    ("ordered", "ordered", int),
    ("max_replacements", "max_replacements", int),
    ("sample_time_limit", "sample_time_limit", float),
    ("open_threads", "open_threads", int),
    ("decode_threads", "decode_threads", int),
    ("collate_threads", "collate_threads", int),
    ("decoder_threads", "decoder.threads", int),  # FFmpeg threads inside each decoder
    ("prefetch_batches", "prefetch_batches", int),
    ("queue_capacity", "queue_capacity", int),
    ("alignment", "alignment", int),
    ("trace", "trace", int),
    ("trace_capacity", "trace_capacity", int),
    ("pin_memory", "pin_memory", int),
    ("min_coverage", "min_coverage", float),
    ("failure_log_size", "failure_log_size", int),
    ("canonical_ranks", "canonical_ranks", int),
    ("canonical_batch", "canonical_batch", int),
    ("num_workers", "num_workers", int),
    ("worker", "worker", int),
    ("first_epoch", "first_epoch", int),
    ("ring_bytes", "ring_bytes", int),
    ("gop_split", "gop_split", int),
)


def _converted_settings(c: Mapping[str, Any]) -> Dict[str, Any]:
    """The C fields of the keywords that take more than a type conversion:
    another place (apply_rotation, index_mode, corrupt_policy, shard_mode,
    sampling_range_*), a string choice, a pair (size, scale, ratio),
    several fields (resize, crop, flip, size_policy) or no plain field
    (samples, remote: decoder.remote; device, device_fallback: the strings
    decoder.device and decoder.device_fallback)."""
    size_policy = c["size_policy"]
    h, w = opt.size_hw("size", c["size"])
    s: Dict[str, Any] = {
        "sampler.kind": opt.choice("sampler", c["sampler"], SAMPLERS),
        "sampler.range_start": float(c["sampling_range_start"]),
        "sampler.range_end": float(c["sampling_range_end"] or 0.0),
        "sampler.policy": opt.choice("policy", c["policy"], POLICIES),
        "transform.crop_width": w,
        "transform.crop_height": h,
        # variable sizes resize as reel.vlm does (bicubic, on RGB) unless told
        "transform.pixels.filter": opt.choice("filter", c["filter"] or ("bicubic" if size_policy else "bilinear"),
                                       opt.FILTERS),
        "transform.pixels.convert_path": opt.choice("convert_path",
                                                    c["convert_path"] or ("after_rgb" if size_policy else "fused"),
                                                    opt.CONVERT_PATHS),
        "pad": int(bool(c["pad"])),
        "transform.pixels.apply_rotation": int(bool(c["apply_rotation"])),
        "transform.pixels.dtype": opt.dtype_code(c["dtype"]),
        "transform.pixels.color": opt.choice("color", c["color"], opt.COLORS),
        "transform.layout": opt.choice("layout", c["layout"], BATCH_LAYOUTS),
        "transform.pixels.mean": opt.rgb3("mean", c["mean"], 0.0),
        "transform.pixels.std": opt.rgb3("std", c["std"], 1.0),
        "epochs": 0 if c["epochs"] is None else int(c["epochs"]),
        "shard_mode": opt.choice("shard_mode", c["shard_mode"], SHARD),
        "on_error": opt.choice("on_error", c["on_error"], ON_ERROR),
        "decoder.index_mode": opt.index_mode(c["index_mode"]),
        "decoder.corrupt_policy": opt.choice("corrupt_policy", c["corrupt_policy"], opt.CORRUPT),
        "shuffle_window": shuffle_window_code(c["shuffle_window"]),
    }
    if c["samples"] is not None:
        s["samples"] = [int(i) for i in c["samples"]]
    if c["remote"]:
        s["decoder.remote"] = opt.remote_settings(c["remote"])
    if c["audio"] is not None:
        s.update(audio_settings(c["audio"]))
    if c["device"] is not None:  # strings: the extension keeps them (no plain field)
        s["decoder.device"] = str(c["device"])
    if c["device_fallback"] is not None:
        s["decoder.device_fallback"] = str(c["device_fallback"])
    crop = c["crop"]
    if size_policy is not None:
        s.update(size_policy_settings(size_policy))
        crop = None  # each sample's size is the policy's
    if c["scale"] is not None:  # the crop's area range: C's transform.scale_min / _max
        s["transform.scale_min"], s["transform.scale_max"] = (float(v) for v in c["scale"])
    if c["ratio"] is not None:
        s["transform.ratio_min"], s["transform.ratio_max"] = (float(v) for v in c["ratio"])
    # crop: the output size is always `size`
    crop_kind = opt.choice("crop", "none" if crop is None else crop, CROPS)
    s["transform.crop"] = crop_kind
    resize = c["resize"]
    if crop_kind == _reel.CROP_NONE:
        s["transform.resize"], s["transform.resize_width"], s["transform.resize_height"] = _reel.RESIZE_EXACT, w, h
    elif resize is None:  # short side scaled like 256 for 224
        s["transform.resize"], s["transform.short_side"] = _reel.RESIZE_SHORT_SIDE, max(1, round(min(h, w) * 256 / 224))
    elif resize is False or resize == 0:
        s["transform.resize"] = _reel.RESIZE_KEEP
    elif isinstance(resize, int) and not isinstance(resize, bool):
        s["transform.resize"], s["transform.short_side"] = _reel.RESIZE_SHORT_SIDE, int(resize)
    else:
        rh, rw = opt.size_hw("resize", resize)
        s["transform.resize"], s["transform.resize_width"], s["transform.resize_height"] = _reel.RESIZE_EXACT, rw, rh
    flip = c["flip"]
    if flip is True or flip == "always":
        s["transform.flip"] = _reel.FLIP_ALWAYS
    elif flip == "random":
        s["transform.flip"] = _reel.FLIP_RANDOM
    elif flip is False or flip is None or flip == "none":
        s["transform.flip"] = _reel.FLIP_NONE
    else:
        raise ValueError(f"flip={flip!r}: expected False, True or 'random'")
    return s


_AUDIO_KEYS = {"sample_rate": "audio.sample_rate", "channels": "audio.channels",
               "stream_index": "audio.stream_index", "missing": "audio.missing"}
_AUDIO_MISSING = {"raise": _reel.AUDIO_MISSING_RAISE, "zeros": _reel.AUDIO_MISSING_ZEROS}


def audio_settings(a: Any) -> Dict[str, Any]:
    """The C fields (audio.*) of Loader's ``audio``: {"sample_rate": Hz,
    "channels": n, "missing": "raise" | "zeros", "stream_index": i}. A
    batch holds one rate and channel count: C refuses a missing one by name."""
    if not isinstance(a, dict):
        raise TypeError(f"audio must be a dict of {sorted(_AUDIO_KEYS)}, not {type(a).__name__}")
    unknown = set(a) - set(_AUDIO_KEYS)
    if unknown:
        raise ValueError(f"audio: unknown keys {sorted(unknown)} (known: {sorted(_AUDIO_KEYS)})")
    out: Dict[str, Any] = {"audio.enabled": 1}
    for k, v in a.items():
        if v is not None:
            out[_AUDIO_KEYS[k]] = opt.choice("audio missing", v, _AUDIO_MISSING) if k == "missing" else int(v)
    return out


_SIZE_POLICY_KEYS = {"factor": "size_policy.factor", "min_pixels": "size_policy.min_pixels", "max_pixels": "size_policy.max_pixels",
                     "total_pixels": "size_policy.total_pixels", "resized_height": "size_policy.height",
                     "resized_width": "size_policy.width"}


def size_policy_settings(p: Dict[str, Any]) -> Dict[str, Any]:
    """The C fields (size_policy.*) of Loader's ``size_policy``: the
    pixel-budget size policy (reel_size_policy_apply, qwen-vl-utils'
    fetch_video sizing) from qwen's element keys; omitted keys keep qwen's
    defaults, which C defines (total_pixels from $MODEL_SEQ_LEN, as reel.vlm)."""
    if not isinstance(p, dict):
        raise TypeError(f"size_policy must be a dict of {sorted(_SIZE_POLICY_KEYS)}, not {type(p).__name__}")
    unknown = set(p) - set(_SIZE_POLICY_KEYS)
    if unknown:
        raise ValueError(f"size_policy: unknown keys {sorted(unknown)} (known: {sorted(_SIZE_POLICY_KEYS)})")
    factor = int(p.get("factor", _reel.QWEN_FACTOR))
    out: Dict[str, Any] = {"size_policy.kind": _reel.SIZE_PIXEL_BUDGET}
    for k, v in p.items():
        if v is not None:
            out[_SIZE_POLICY_KEYS[k]] = int(v) if k in ("factor", "resized_height", "resized_width") else float(v)
    if p.get("total_pixels") is None:
        out["size_policy.total_pixels"] = float(int(float(os.environ.get("MODEL_SEQ_LEN", _reel.QWEN_MODEL_SEQ_LEN)))
                                                * factor * factor * _reel.QWEN_TOTAL_PIXELS_SHARE)
    return out


def c_settings(config: Mapping[str, Any]) -> Dict[str, Any]:
    """The C settings, by their full C names, of a complete set of Loader
    keywords (every keyword present: _loader.loader_settings fills in the
    defaults). Converts types and choices; C judges the ranges."""
    s: Dict[str, Any] = {}
    for keyword, field, convert in LOADER_FIELDS:
        if config[keyword] is not None:
            s[field] = convert(config[keyword])
    s.update(_converted_settings(config))
    return s
