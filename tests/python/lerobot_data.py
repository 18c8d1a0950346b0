# lerobot_data.py: LeRobot-style v3.0 datasets for reel.lerobot's tests and
# bench/bench_lerobot.py (made the way LeRobot writes them: PyAV libsvtav1
# episodes, stream-copy concatenation, parquet tables), and the import of
# lerobot 0.4.4 itself (scripts/deps.sh --test installs it into .deps/lerobot),
# the reference the tests and the benchmark compare with.
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

# The encoder settings LeRobot records with (VideoEncoderConfig defaults;
# preset 12 as the issue measured).
ENCODER = {"g": "2", "crf": "30", "preset": "12", "svtav1-params": "fast-decode=0"}
BITS_X, BITS_Y = 4, 3  # the frame's code: 12 bits, a 4 x 3 grid of blocks


def frame_code(episode: int, frame: int) -> int:
    """What a frame carries in its pixels: its episode and its frame number
    in that episode's video."""
    return episode * 256 + frame


def code_image(code: int, width: int, height: int) -> np.ndarray:
    """A gray HWC image whose 4 x 3 blocks are the 12 bits of `code`
    (white: 1), readable after AV1 crf 30."""
    img = np.zeros((height, width, 3), np.uint8)
    bw, bh = width // BITS_X, height // BITS_Y
    for k in range(BITS_X * BITS_Y):
        if code >> k & 1:
            x, y = k % BITS_X, k // BITS_X
            img[y * bh:(y + 1) * bh, x * bw:(x + 1) * bw] = 255
    return img


def read_code(frame: Any) -> int:
    """The code of a CHW uint8 frame (numpy or torch), from its blocks' centres."""
    a = np.asarray(frame)
    h, w = a.shape[-2], a.shape[-1]
    bw, bh = w // BITS_X, h // BITS_Y
    code = 0
    for k in range(BITS_X * BITS_Y):
        x, y = k % BITS_X, k // BITS_X
        block = a[0, y * bh + bh // 4:(y + 1) * bh - bh // 4, x * bw + bw // 4:(x + 1) * bw - bw // 4]
        if block.mean() > 127:
            code |= 1 << k
    return code


def _encode_episode(path: str, episode: int, num_frames: int, width: int, height: int, fps: int) -> None:
    """One episode's video as LeRobot's encode_video_frames writes it (PyAV,
    add_stream(vcodec, fps), yuv420p)."""
    import av

    with av.open(path, "w") as out:
        s = out.add_stream("libsvtav1", fps, options=ENCODER)
        s.pix_fmt = "yuv420p"
        s.width, s.height = width, height
        for i in range(num_frames):
            frame = av.VideoFrame.from_ndarray(code_image(frame_code(episode, i), width, height), format="rgb24")
            for p in s.encode(frame):
                out.mux(p)
        for p in s.encode():
            out.mux(p)


def _duration(path: str) -> float:
    """LeRobot's get_video_duration_in_s."""
    import av

    with av.open(path) as c:
        st = c.streams.video[0]
        if st.duration is not None:
            return float(st.duration * st.time_base)
        return float(c.duration / av.time_base)


def _concatenate(inputs: Sequence[str], output: str) -> None:
    """LeRobot's concatenate_video_files: PyAV's concat demuxer, packets
    stream-copied with their timestamps."""
    import av

    with tempfile.NamedTemporaryFile("w", suffix=".ffconcat", delete=False) as f:
        f.write("ffconcat version 1.0\n")
        for p in inputs:
            f.write(f"file '{os.path.abspath(p)}'\n")
        listing = f.name
    tmp = output + ".tmp.mp4"
    src = av.open(listing, mode="r", format="concat", options={"safe": "0"})
    dst = av.open(tmp, mode="w", options={"movflags": "faststart"})
    streams = {}
    for st in src.streams:
        if st.type in ("video", "audio", "subtitle"):
            streams[st.index] = dst.add_stream_from_template(template=st, opaque=True)
            streams[st.index].time_base = st.time_base
    for packet in src.demux():
        if packet.stream.index not in streams or packet.dts is None:
            continue
        packet.stream = streams[packet.stream.index]
        dst.mux(packet)
    src.close()
    dst.close()
    shutil.move(tmp, output)
    os.unlink(listing)


VIDEO_PATH = "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4"
DATA_PATH = "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet"


def make_dataset(root: str, *, fps: int = 30, episodes: Sequence[int] = (24, 31, 20, 27),
                 cameras: Optional[Dict[str, Tuple[int, int, int, Sequence[int]]]] = None,
                 data_files: Sequence[int] = (0, 0, 1, 1), tasks: Sequence[str] = ("pick", "place"),
                 state_dim: int = 6) -> Dict[str, Any]:
    """A LeRobot v3.0 dataset in `root`. `episodes`: frames per episode.
    `cameras`: {key: (width, height, fps factor, file of each episode)} (the
    camera records fps * factor frames a second; a new file starts where the
    episode's file number changes). `data_files`: the data file of each
    episode. Returns {"expected": {key: [codes of each dataset row's frame]}}."""
    if cameras is None:
        cameras = {
            "observation.images.front": (64, 48, 1, (0, 0, 1, 1)),
            "observation.images.wrist": (32, 24, 1, (0, 0, 0, 0)),
            "observation.images.side": (32, 24, 2, (0, 1, 1, 1)),
        }
    import pyarrow as pa
    import pyarrow.parquet as pq

    rootp = Path(root)
    (rootp / "meta").mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lerobot-ep-"))
    ep_rows: List[Dict[str, Any]] = []
    start = 0
    for e, n in enumerate(episodes):
        ep_rows.append({"episode_index": e, "tasks": [tasks[e % len(tasks)]], "length": n,
                        "data/chunk_index": 0, "data/file_index": int(data_files[e]),
                        "dataset_from_index": start, "dataset_to_index": start + n,
                        "meta/episodes/chunk_index": 0, "meta/episodes/file_index": 0})
        start += n
    for key, (w, h, factor, files) in cameras.items():
        to_ts = 0.0
        for e, n in enumerate(episodes):
            ep_path = str(work / f"{key}-{e}.mp4")
            _encode_episode(ep_path, e, n * factor, w, h, fps * factor)
            dur = _duration(ep_path)
            final = rootp / VIDEO_PATH.format(video_key=key, chunk_index=0, file_index=files[e])
            final.parent.mkdir(parents=True, exist_ok=True)
            if e == 0 or files[e] != files[e - 1]:
                from_ts = 0.0
                shutil.move(ep_path, final)
            else:
                from_ts = to_ts
                _concatenate([str(final), ep_path], str(final))
                os.unlink(ep_path)
            to_ts = from_ts + dur
            ep_rows[e].update({f"videos/{key}/chunk_index": 0, f"videos/{key}/file_index": int(files[e]),
                               f"videos/{key}/from_timestamp": from_ts, f"videos/{key}/to_timestamp": to_ts})
    shutil.rmtree(work, ignore_errors=True)

    # frame rows, one data file per distinct data_files value
    total = sum(episodes)
    rng = np.random.default_rng(0)
    state = rng.standard_normal((total, state_dim)).astype(np.float32)
    action = rng.standard_normal((total, state_dim)).astype(np.float32)
    ep_of = np.concatenate([np.full(n, e, np.int64) for e, n in enumerate(episodes)])
    fi = np.concatenate([np.arange(n, dtype=np.int64) for n in episodes])
    index = np.arange(total, dtype=np.int64)
    done = np.concatenate([np.arange(n) == n - 1 for n in episodes])
    for f in sorted(set(data_files)):
        sel = np.isin(ep_of, [e for e in range(len(episodes)) if data_files[e] == f])
        table = pa.table({
            "observation.state": pa.FixedSizeListArray.from_arrays(pa.array(state[sel].ravel()), state_dim),
            "action": pa.FixedSizeListArray.from_arrays(pa.array(action[sel].ravel()), state_dim),
            "timestamp": pa.array((fi[sel] / fps).astype(np.float32)),
            "frame_index": pa.array(fi[sel]),
            "episode_index": pa.array(ep_of[sel]),
            "index": pa.array(index[sel]),
            "task_index": pa.array(ep_of[sel] % len(tasks)),
            "next.done": pa.array(done[sel]),
        })
        out = rootp / DATA_PATH.format(chunk_index=0, file_index=f)
        out.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, out)
    ep_table = pa.Table.from_pylist(ep_rows)
    out = rootp / "meta/episodes/chunk-000/file-000.parquet"
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(ep_table, out)
    # as LeRobotDatasetMetadata.save_episode_tasks writes it: a DataFrame of
    # task_index whose (unnamed) index is the task string
    import pandas as pd

    pd.DataFrame({"task_index": range(len(tasks))}, index=list(tasks)).to_parquet(rootp / "meta/tasks.parquet")
    features: Dict[str, Any] = {}
    for key, (w, h, factor, _files) in cameras.items():
        features[key] = {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
                         "info": {"video.height": h, "video.width": w, "video.codec": "av1",
                                  "video.pix_fmt": "yuv420p", "video.is_depth_map": False,
                                  "video.fps": fps * factor, "video.channels": 3, "has_audio": False}}
    features.update({
        "observation.state": {"dtype": "float32", "shape": [state_dim], "names": None},
        "action": {"dtype": "float32", "shape": [state_dim], "names": None},
        "timestamp": {"dtype": "float32", "shape": [1], "names": None},
        "frame_index": {"dtype": "int64", "shape": [1], "names": None},
        "episode_index": {"dtype": "int64", "shape": [1], "names": None},
        "index": {"dtype": "int64", "shape": [1], "names": None},
        "task_index": {"dtype": "int64", "shape": [1], "names": None},
        "next.done": {"dtype": "bool", "shape": [1], "names": None},
    })
    info = {"codebase_version": "v3.0", "robot_type": "test", "total_episodes": len(episodes),
            "total_frames": total, "total_tasks": len(tasks), "chunks_size": 1000,
            "data_files_size_in_mb": 100, "video_files_size_in_mb": 200, "fps": fps,
            "splits": {"train": f"0:{len(episodes)}"}, "data_path": DATA_PATH, "video_path": VIDEO_PATH,
            "features": features}
    (rootp / "meta/info.json").write_text(json.dumps(info, indent=2))
    expected = {key: [frame_code(int(ep_of[i]), int(fi[i]) * cameras[key][2]) for i in range(total)]
                for key in cameras}
    return {"expected": expected, "cameras": cameras, "episodes": list(episodes), "fps": fps}


# ---------------------------------------------------------------- lerobot itself
LEROBOT_VERSION = "0.4.4"


def lerobot_dir() -> str:
    """Where scripts/deps.sh --test installs lerobot 0.4.4 and the light
    packages its dataset code imports (REEL_LEROBOT_REF overrides)."""
    return os.environ.get("REEL_LEROBOT_REF") or str(Path(__file__).resolve().parents[2] / ".deps" / "lerobot")


def import_lerobot(hf_cache: Optional[str] = None) -> Tuple[Any, Any]:
    """lerobot 0.4.4's own ``video_utils`` module and ``LeRobotDataset``
    class, its files unmodified. Its folder is appended to sys.path (after
    site-packages: the system's torch, torchcodec, numpy and pyarrow win).
    Offline (HF_HUB_OFFLINE): a local root never reaches the Hub. `hf_cache`:
    where `datasets` keeps its Arrow copy of the parquet rows (it reads
    HF_DATASETS_CACHE when first imported). The one shim: PyPI's torchvision
    0.28 (which lerobot imports, and whose transforms only an image feature
    would use) is a CUDA build whose _C.so does not load beside CPU torch
    2.13; it imports when torch.library.register_fake tolerates the
    operators _C would have defined (tolerant_torchvision.py, as for the
    VLM reference).
    Raises ImportError when lerobot is not installed, or is another version."""
    ref = lerobot_dir()
    if os.path.isdir(ref) and ref not in sys.path:
        sys.path.append(ref)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if hf_cache is not None:
        os.environ.setdefault("HF_DATASETS_CACHE", hf_cache)
    from tolerant_torchvision import tolerant_register_fake

    try:
        with tolerant_register_fake():
            import torchvision  # noqa: F401
    except RuntimeError as exc:
        raise ImportError(f"torchvision does not import beside this torch: {exc}") from exc
    import lerobot
    from lerobot.datasets import video_utils
    from lerobot.datasets.lerobot_dataset import LeRobotDataset

    if lerobot.__version__ != LEROBOT_VERSION:
        raise ImportError(f"lerobot {lerobot.__version__} in {ref}, not {LEROBOT_VERSION}")
    return video_utils, LeRobotDataset


class PtsSpy:
    """A decoder cache for lerobot's decode_video_frames_torchcodec that
    opens its decoders as lerobot's own VideoDecoderCache does and records
    the pts (seconds) of every get_frames_at batch, by path: the function
    returns frames only, and its tolerance check picks, for each time, the
    loaded frame of the same position (the others are a frame period away)."""

    def __init__(self, cache: Any) -> None:
        self._cache = cache
        self.pts: Dict[str, List[float]] = {}

    def get_decoder(self, video_path: str) -> Any:
        spy = self

        class Recording:
            def __init__(self, dec: Any) -> None:
                self._dec = dec

            @property
            def metadata(self) -> Any:
                return self._dec.metadata

            def get_frames_at(self, indices: Any) -> Any:
                batch = self._dec.get_frames_at(indices=indices)
                spy.pts[str(video_path)] = batch.pts_seconds.tolist()
                return batch

        return Recording(self._cache.get_decoder(video_path))
