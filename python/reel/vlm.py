# reel/vlm.py: a drop-in for qwen-vl-utils 0.0.14's fetch_video,
# fetch_image and process_vision_info, over reel's C samplers and size policy.
"""Video-language model inputs, the Qwen-VL way, decoded by reel.

Switch a training script from qwen-vl-utils with one import::

    from reel.vlm import process_vision_info   # was: from qwen_vl_utils import process_vision_info

The functions keep qwen-vl-utils 0.0.14's signatures, return types and
metadata keys. Frame choice (``fps``/``nframes``/``min_frames``/``max_frames``/
``video_start``/``video_end``) and output size (``min_pixels``/``max_pixels``/
``total_pixels``/``resized_height``/``resized_width``) are computed in C by the
sampler kinds REEL_SAMPLER_FPS / REEL_SAMPLER_COUNT and the size policy
REEL_SIZE_PIXEL_BUDGET, with the same indices, sizes and sample fps as
qwen-vl-utils. Frames are decoded straight to the output size (bicubic, in
RGB) into a float32 TCHW tensor holding 0-255, or uint8 with ``dtype="uint8"``.

qwen-vl-utils is not needed at run time. Pillow is needed only for images.

For Qwen-Omni, ``process_mm_info(conversations, use_audio_in_video=True)`` and
``process_audio_info`` keep qwen-omni-utils 0.0.9's: each video element's
audio (and each audio element that is a video file or a 1-D array) as a
float32 16 kHz mono numpy array over [video_start, video_end), the whole
audio when they are absent. reel reads it sample-exact (reel/audio.h) on the
video's timeline: a file whose audio starts late has zeros there, where
qwen-omni-utils counts from the audio's first sample; it resamples with
libswresample where qwen-omni-utils uses soxr (SNR over 40 dB between them).
"""
from __future__ import annotations

import base64
import copy
import math
import os
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _reel
from ._decoder import VideoDecoder

__all__ = ["fetch_video", "fetch_image", "process_vision_info", "extract_vision_info", "smart_resize",
           "process_audio_info", "process_mm_info"]

# qwen-vl-utils' constants, as C defines them once (reel/convert.h REEL_QWEN_*,
# the sampler's and size policy's defaults) and the extension exports them
SPATIAL_MERGE_SIZE: int = _reel.QWEN_SPATIAL_MERGE_SIZE
IMAGE_MIN_TOKEN_NUM: int = _reel.QWEN_IMAGE_MIN_TOKENS
IMAGE_MAX_TOKEN_NUM: int = _reel.QWEN_IMAGE_MAX_TOKENS
FRAME_FACTOR: int = _reel.QWEN_FRAME_FACTOR
FPS: float = _reel.QWEN_FPS
FPS_MIN_FRAMES: int = _reel.QWEN_FPS_MIN_FRAMES
FPS_MAX_FRAMES: int = _reel.QWEN_FPS_MAX_FRAMES
MODEL_SEQ_LEN: int = _reel.QWEN_MODEL_SEQ_LEN  # $MODEL_SEQ_LEN's default
MAX_NUM_WORKERS_FETCH_VIDEO = 8  # threads for a list of images (Python's own)

_SAMPLE_FPS, _SAMPLE_COUNT = _reel.SAMPLER_FPS, _reel.SAMPLER_COUNT


def _model_seq_len() -> int:
    return int(float(os.environ.get("MODEL_SEQ_LEN", MODEL_SEQ_LEN)))


def smart_resize(height: int, width: int, factor: int, min_pixels: Optional[float] = None,
                 max_pixels: Optional[float] = None) -> Tuple[int, int]:
    """qwen-vl-utils' smart_resize (reel_size_smart_resize in C, which takes width first): (height, width)."""
    max_pixels = max_pixels if max_pixels is not None else IMAGE_MAX_TOKEN_NUM * factor ** 2
    min_pixels = min_pixels if min_pixels is not None else IMAGE_MIN_TOKEN_NUM * factor ** 2
    return _reel.smart_resize(int(height), int(width), int(factor), float(min_pixels), float(max_pixels))


def _as_int(name: str, v: Any, lo: int = -2**31, hi: int = 2**31 - 1) -> int:
    """v as an int in [lo, hi] (the C int it becomes), or ValueError naming it."""
    try:
        whole = not isinstance(v, bool) and float(v) == int(v)
    except (TypeError, ValueError, OverflowError):
        whole = False
    if not whole:
        raise ValueError(f"{name} must be a whole number, got {v!r}")
    if not lo <= int(v) <= hi:
        raise ValueError(f"{name} {int(v)} is outside [{lo}, {hi}]")
    return int(v)


def _as_size(name: str, v: Any) -> int:
    """A resized_height / resized_width (a number, as qwen-vl-utils takes it)
    as the C int it becomes: in [1, 2**31 - 1], or ValueError naming it."""
    try:
        x = float(v) if not isinstance(v, (bool, str)) else math.nan
    except (TypeError, ValueError):
        x = math.nan
    if not 1 <= x < 2**31:
        raise ValueError(f"{name} must be a number in [1, 2**31 - 1], got {v!r}")
    return int(x)


def _video_path(video: str) -> str:
    return video[7:] if video.startswith("file://") else video


def _torch_dtype(dtype: Any) -> str:
    name = str(dtype).replace("torch.", "")
    if name not in ("float32", "uint8"):
        raise ValueError(f"dtype must be 'float32' or 'uint8', got {dtype!r}")
    return name


def _frames_to_torch(frames: Any) -> Any:
    """The decoded Frames as a torch tensor, zero-copy (DLPack): host memory,
    or the GPU's for a decoder on one (torch.from_dlpack of kDLCUDA)."""
    return frames.torch()


def _read_video(ele: Dict[str, Any], factor: int, dtype: str, threads: Optional[int],
                device: Optional[str] = None) -> Tuple[Any, Dict[str, Any], float]:
    if "fps" in ele and "nframes" in ele:
        raise ValueError("Only accept either `fps` or `nframes`")
    if "nframes" in ele:
        kind, fps, count = _SAMPLE_COUNT, FPS, _as_int("nframes", ele["nframes"], 1)
        min_frames, max_frames = FPS_MIN_FRAMES, FPS_MAX_FRAMES
    else:
        kind, fps, count = _SAMPLE_FPS, float(ele.get("fps", FPS)), 1
        min_frames = _as_int("min_frames", ele.get("min_frames", FPS_MIN_FRAMES))
        max_frames = _as_int("max_frames", ele.get("max_frames", FPS_MAX_FRAMES))
    start = ele.get("video_start")
    end = ele.get("video_end")
    if end is not None and end <= 0:
        raise ValueError(f"Invalid time range: video_end {end} s leaves no frames")
    # None: VideoDecoder's defaults (the cores: GOP-parallel contexts up to the
    # core count, frame threads for a plan of one run; one thread in a
    # DataLoader worker); N >= 1: N GOP-parallel contexts, one codec thread
    # each; 0: one context with FFmpeg's frame threads
    if threads is None:
        codec_threads, gop = None, None
    else:
        codec_threads, gop = (1 if threads >= 1 else 0), max(1, threads)
    dec = VideoDecoder(_video_path(ele["video"]), dtype=dtype, divisor=1.0, filter="bicubic",
                       convert_path="after_rgb", threads=codec_threads, gop_contexts=gop, remote=ele.get("remote"),
                       device=device)
    try:
        idx, info = dec._dec.sample_video(kind, fps, min_frames, max_frames, FRAME_FACTOR, count,
                                          float(start or 0.0), float(end or 0.0))
        _, h, w = dec.frame_shape
        rh, rw = _resize_target(ele, factor, w, h, len(idx))
        dec._dec.set_size(rw, rh)
        video = _frames_to_torch(dec.get_frames_at(idx))
    finally:
        dec.close()
    metadata = dict(fps=info["video_fps"], frames_indices=idx, total_num_frames=info["range_frames"],
                    video_backend="reel")
    return video, metadata, info["sample_fps"]


def _resize_target(ele: Dict[str, Any], factor: int, width: int, height: int, nframes: int) -> Tuple[int, int]:
    """fetch_video's sizing: the pixel budget (reel_size_policy_apply)."""
    rw = rh = 0
    if "resized_height" in ele and "resized_width" in ele:
        rh, rw = _as_size("resized_height", ele["resized_height"]), _as_size("resized_width", ele["resized_width"])
    total = ele.get("total_pixels", _model_seq_len() * factor * factor * _reel.QWEN_TOTAL_PIXELS_SHARE)
    return _reel.size_policy(width, height, nframes, factor, FRAME_FACTOR, float(ele.get("min_pixels", 0)),
                             float(ele.get("max_pixels", 0)), float(total), rw, rh)


def _open_image(image: Any) -> Any:
    from PIL import Image  # only images need Pillow

    if isinstance(image, Image.Image):
        return image
    if image.startswith(("http://", "https://")):
        import urllib.request

        with urllib.request.urlopen(image, timeout=60) as r:
            return copy.deepcopy(Image.open(BytesIO(r.read())))
    if image.startswith("file://"):
        return Image.open(image[7:])
    if image.startswith("data:image"):
        if "base64," in image:
            return copy.deepcopy(Image.open(BytesIO(base64.b64decode(image.split("base64,", 1)[1]))))
        raise ValueError(f"Unrecognized image input: {image[:40]}")
    return Image.open(image)


def _to_rgb(img: Any) -> Any:
    from PIL import Image

    if img.mode == "RGBA":
        white = Image.new("RGB", img.size, (255, 255, 255))
        white.paste(img, mask=img.split()[3])
        return white
    return img.convert("RGB")


def fetch_image(ele: Dict[str, Any], image_patch_size: int = 14) -> Any:
    """An image (path, file://, http(s), data:image base64 or PIL.Image) as an
    RGB PIL.Image resized by smart_resize, as qwen-vl-utils' fetch_image."""
    image = ele["image"] if "image" in ele else ele["image_url"]
    factor = int(image_patch_size * SPATIAL_MERGE_SIZE)
    img = _to_rgb(_open_image(image))
    if "resized_height" in ele and "resized_width" in ele:
        h, w = smart_resize(ele["resized_height"], ele["resized_width"], factor)
    else:
        width, height = img.size
        h, w = smart_resize(height, width, factor, ele.get("min_pixels", IMAGE_MIN_TOKEN_NUM * factor ** 2),
                            ele.get("max_pixels", IMAGE_MAX_TOKEN_NUM * factor ** 2))
    return img.resize((w, h))


def _image_list_video(ele: Dict[str, Any], factor: int, dtype: str) -> Tuple[Any, Dict[str, Any], float]:
    """A list of images as a video: each image as fetch_image gives it (with
    qwen-vl-utils 0.0.14's factor for this path, twice the video's), padded to
    an even count, then the video's pixel budget."""
    import numpy as np
    import torch

    info = {k: v for k, v in ele.items() if k not in ("type", "video")}
    items = list(ele["video"])
    with ThreadPoolExecutor(max_workers=max(1, min(MAX_NUM_WORKERS_FETCH_VIDEO, len(items)))) as ex:
        images = list(ex.map(lambda x: fetch_image({"image": x, **info}, factor), items))
    nframes = math.ceil(len(images) / FRAME_FACTOR) * FRAME_FACTOR
    images += [images[-1]] * (nframes - len(images))
    width, height = images[0].size
    rh, rw = _resize_target(ele, factor, width, height, nframes)
    # Pillow's default filter for RGB is bicubic, as fetch_image uses it
    frames = np.stack([np.asarray(im.resize((rw, rh)) if im.size != (rw, rh) else im) for im in images])
    video = torch.from_numpy(frames).permute(0, 3, 1, 2).contiguous()
    if dtype == "float32":
        video = video.float()
    sample_fps = ele.get("sample_fps", 2.0)
    raw_fps = info.pop("raw_fps", sample_fps)
    metadata = dict(fps=raw_fps, frames_indices=list(range(len(video))),
                    total_num_frames=(nframes / sample_fps) * raw_fps)
    return video, metadata, sample_fps


def fetch_video(ele: Dict[str, Any], image_patch_size: int = 14, return_video_sample_fps: bool = False,
                return_video_metadata: bool = False, *, dtype: Any = "float32",
                threads: Optional[int] = None, device: Optional[str] = None) -> Any:
    """qwen-vl-utils 0.0.14's fetch_video, decoded by reel.

    ``ele["video"]`` is a path, ``file://`` path, http(s):// or s3:// URL
    (only the sampled frames' bytes are fetched; ``ele["remote"]`` takes
    reel's remote settings), or a list of images. Returns a TCHW tensor
    (float32 holding 0-255, or uint8 with ``dtype="uint8"``), with
    ``(video, metadata)`` and/or ``sample_fps`` as qwen-vl-utils does;
    metadata has ``fps``, ``frames_indices``, ``total_num_frames`` and
    ``video_backend="reel"``. ``threads``: decoding threads for the video:
    None (default) uses the cores (GOP-parallel contexts up to the core count,
    FFmpeg's frame threads for a plan of one keyframe run; one thread inside a
    DataLoader worker); N >= 1 decodes its keyframe runs on N decoder contexts
    at once (one codec thread each); 0 uses FFmpeg's frame threading on one
    context. ``device``: None or ``"cpu"`` (default) returns the tensor in host
    memory; ``"cuda"`` / ``"cuda:N"`` decodes the video on that GPU (NVDEC,
    or the CPU's decoding uploaded) and converts and resizes it there, equal
    to the CPU's tensor bit for bit, returning a tensor on the device (a list
    of images is resized on the host, then moved). Where CUDA cannot serve it
    raises ``reel.ReelError`` with status ``CUDA``.
    """
    factor = int(image_patch_size * SPATIAL_MERGE_SIZE)
    dt = _torch_dtype(dtype)
    dev = None if device is None or str(device) == "cpu" else str(device)
    if isinstance(ele["video"], str):
        video, metadata, sample_fps = _read_video(ele, factor, dt, None if threads is None else int(threads), dev)
    else:
        video, metadata, sample_fps = _image_list_video(ele, factor, dt)
        if dev is not None:
            video = video.to(dev)
    out = (video, metadata) if return_video_metadata else video
    if return_video_sample_fps:
        return out, sample_fps
    return out


def extract_vision_info(conversations: Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]]) -> List[Dict[str, Any]]:
    """The image and video elements of one conversation or a list of them."""
    infos = []
    if isinstance(conversations[0], dict):
        conversations = [conversations]
    for conversation in conversations:
        for message in conversation:
            if isinstance(message["content"], list):
                for ele in message["content"]:
                    if ("image" in ele or "image_url" in ele or "video" in ele
                            or ele.get("type", "text") in ("image", "image_url", "video")):
                        infos.append(ele)
    return infos


def process_vision_info(
    conversations: Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]],
    return_video_kwargs: bool = False,
    return_video_metadata: bool = False,
    image_patch_size: int = 14,
    *,
    dtype: Any = "float32",
    threads: Optional[int] = None,
    device: Optional[str] = None,
) -> Any:
    """qwen-vl-utils 0.0.14's process_vision_info: (images, videos[, video_kwargs]);
    ``dtype``, ``threads`` and ``device`` as fetch_video's, for every video."""
    image_inputs: List[Any] = []
    video_inputs: List[Any] = []
    fps_list = []
    for info in extract_vision_info(conversations):
        if "image" in info or "image_url" in info:
            image_inputs.append(fetch_image(info, image_patch_size=image_patch_size))
        elif "video" in info:
            v, fps = fetch_video(info, return_video_sample_fps=True, image_patch_size=image_patch_size,
                                 return_video_metadata=return_video_metadata, dtype=dtype, threads=threads,
                                 device=device)
            fps_list.append(fps)
            video_inputs.append(v)
        else:
            raise ValueError("image, image_url or video should in content.")
    images = image_inputs or None
    videos = video_inputs or None
    video_kwargs: Dict[str, Any] = {"do_sample_frames": False}
    if not return_video_metadata:
        video_kwargs["fps"] = fps_list
    if return_video_kwargs:
        return images, videos, video_kwargs
    return images, videos


# ---------------------------------------------------------------- audio (Qwen-Omni)
AUDIO_SAMPLE_RATE = 16000  # qwen-omni-utils' SAMPLE_RATE
_AUDIO_CHUNK_S = 30.0  # an open-ended span is read in windows of this many seconds


def _audio_span(path: str, start: float, end: Optional[float], remote: Optional[Dict[str, Any]]) -> Any:
    """16 kHz mono float32 of [start, end) seconds of the video's timeline;
    end None: to the end of the audio."""
    import numpy as np

    with VideoDecoder(path, audio={"sample_rate": AUDIO_SAMPLE_RATE, "channels": 1}, remote=remote) as dec:
        if end is not None:
            if end < start:
                raise ValueError(f"Invalid time range: video_end {end} s is before video_start {start} s")
            return np.asarray(dec.get_audio_played_in_range(start, end).data)[0]
        parts = []
        t = start
        while True:  # windows until the stream ends in one
            a = dec.get_audio_played_in_range(t, t + _AUDIO_CHUNK_S)
            lo, hi = a.valid
            before_a0 = a.first_sample + a.num_samples <= 0
            keep = a.num_samples if before_a0 else hi if hi > lo else 0
            parts.append(np.asarray(a.data)[0, :keep])
            if keep < a.num_samples:
                return np.concatenate(parts) if len(parts) > 1 else parts[0]
            t += _AUDIO_CHUNK_S


def process_audio_info(conversations: Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]],
                       use_audio_in_video: bool) -> Optional[List[Any]]:
    """qwen-omni-utils 0.0.9's process_audio_info: the audios of the audio
    elements (``audio``/``audio_url``: a 1-D array at 16 kHz, or a video file
    or URL, with ``audio_start``/``audio_end``) and, with use_audio_in_video,
    of the video elements (``video_start``/``video_end``), in order, as
    float32 16 kHz mono numpy arrays; None when there are none."""
    audios: List[Any] = []
    if isinstance(conversations[0], dict):
        conversations = [conversations]
    for conversation in conversations:
        for message in conversation:
            if not isinstance(message["content"], list):
                continue
            for ele in message["content"]:
                kind = ele.get("type")
                if kind == "audio":
                    if "audio" not in ele and "audio_url" not in ele:
                        raise ValueError(f"Unknown audio {ele}")
                    src = ele.get("audio", ele.get("audio_url"))
                    start, end = float(ele.get("audio_start", 0.0)), ele.get("audio_end")
                    if not isinstance(src, str):  # an array at 16 kHz, cut as qwen-omni-utils cuts it
                        if getattr(src, "ndim", 1) > 1:
                            raise ValueError("Support only mono audio")
                        audios.append(src[int(AUDIO_SAMPLE_RATE * start):None if end is None
                                          else int(AUDIO_SAMPLE_RATE * float(end))])
                        continue
                    if src.startswith("data:audio"):
                        raise _reel.UnsupportedError("reel.vlm: audio as a data: URL is not read (reel times audio "
                                                     "by a video's frames); pass a video file or an array")
                elif use_audio_in_video and kind == "video":
                    if "video" not in ele and "video_url" not in ele:
                        raise ValueError(f"Unknown video {ele}")
                    src = ele.get("video", ele.get("video_url"))
                    if not isinstance(src, str):
                        raise ValueError("use_audio_in_video needs the video as a path or URL, not a list of frames")
                    start, end = float(ele.get("video_start", 0.0) or 0.0), ele.get("video_end")
                else:
                    continue
                audios.append(_audio_span(_video_path(src), start, None if end is None else float(end),
                                          ele.get("remote")))
    return audios or None


def process_mm_info(
    conversations: Union[List[Dict[str, Any]], List[List[Dict[str, Any]]]],
    use_audio_in_video: bool,
    return_video_kwargs: bool = False,
    return_video_metadata: bool = False,
    image_patch_size: int = 14,
    *,
    dtype: Any = "float32",
    threads: Optional[int] = None,
) -> Any:
    """qwen-omni-utils 0.0.9's process_mm_info: (audios, images, videos[, video_kwargs])."""
    audios = process_audio_info(conversations, use_audio_in_video)
    vision = process_vision_info(conversations, return_video_kwargs=return_video_kwargs,
                                 return_video_metadata=return_video_metadata, image_patch_size=image_patch_size,
                                 dtype=dtype, threads=threads)
    return (audios,) + tuple(vision)
