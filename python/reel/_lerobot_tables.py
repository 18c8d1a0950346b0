# reel/_lerobot_tables.py: a LeRobotDataset v3.0 directory's or URL's tables
# (meta/info.json, the episode rows, the frame rows, the tasks) read through reel's
# I/O, parsed with pyarrow and checked against each other and against the videos;
# reel.lerobot's datasets and Loader query them.
from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import _reel

__all__ = ["DatasetFormatError", "Tables"]

#: The frame-row columns every LeRobot v3.0 dataset has.
FRAME_COLUMNS = ("index", "episode_index", "frame_index", "timestamp", "task_index")
#: The episode-row columns reel.lerobot reads (and, per camera, VIDEO_COLUMNS).
EPISODE_COLUMNS = ("episode_index", "length", "dataset_from_index", "dataset_to_index")
VIDEO_COLUMNS = ("chunk_index", "file_index", "from_timestamp", "to_timestamp")


class DatasetFormatError(ValueError):
    """A LeRobot dataset whose files do not fit together: a missing column
    or key, an episode whose rows and video disagree, a from_timestamp past
    its file's end. The message names the file (and episode, camera)."""


def pyarrow_modules() -> Tuple[Any, Any, Any]:
    """(pyarrow, pyarrow.parquet, pyarrow.compute), or an ImportError naming the extra."""
    try:
        import pyarrow as pa
        import pyarrow.compute as pc
        import pyarrow.parquet as pq
    except ImportError as e:
        raise ImportError("reel.lerobot reads LeRobot's parquet tables with pyarrow, which is not installed: "
                          "pip install reel[lerobot]") from e
    return pa, pq, pc


def is_url(root: str) -> bool:
    return root.startswith(("http://", "https://", "s3://"))


def join(root: str, rel: str) -> str:
    return root.rstrip("/") + "/" + rel if is_url(root) else os.path.join(root, rel)


def shown(path: str) -> str:
    """`path` as messages show it: a URL redacted (no user info, query string
    or fragment), a local path as it is."""
    return _reel.redact_url(path) if is_url(path) else path


#: The largest table file read (LeRobot writes data files of about 100 MB).
MAX_TABLE_BYTES = 4 << 30


def read_bytes(root: str, rel: str, *, missing_ok: bool = False,
               remote: Optional[Dict[str, Any]] = None) -> Optional[bytes]:
    """A table file's bytes, whole, through reel's I/O (reel_remote_read): a
    local file, or an http(s):// or s3:// object with the `remote` settings
    (retries, timeouts, TLS, S3 credentials from the environment). A missing
    one raises reel.NotFoundError naming it (the URL redacted), or gives
    None with missing_ok."""
    try:
        return _reel.remote_read(join(root, rel), remote, MAX_TABLE_BYTES)
    except FileNotFoundError:
        if missing_ok:
            return None
        raise


def _require(columns: Sequence[str], have: Sequence[str], where: str, what: str) -> None:
    missing = [c for c in columns if c not in have]
    if missing:
        raise DatasetFormatError(f"{where}: the {what} lack the column(s) {missing} a LeRobot v3.0 dataset has")


def _column_array(table: Any, name: str) -> Any:
    """A column as numpy: 1-D for scalars, 2-D for fixed or equal-length
    lists, an object array of Python values otherwise (strings)."""
    import numpy as np

    pa = pyarrow_modules()[0]
    col = table.column(name).combine_chunks()
    t = col.type
    if pa.types.is_fixed_size_list(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
        lengths = set(len(v) for v in col.to_pylist()) if len(col) else {0}
        if len(lengths) == 1 and col.null_count == 0:
            flat = col.flatten().to_numpy(zero_copy_only=False)
            return np.array(flat.reshape(len(col), lengths.pop()))  # a writable copy
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t):
        if col.null_count == 0:
            return np.array(col.to_numpy(zero_copy_only=False))
    return np.array(col.to_pylist(), dtype=object)


class Tables:
    """The tables of one LeRobot v3.0 dataset, the selected episodes' rows.

    ``rows``: {column: numpy array} of the frame rows (relative position
    i = the dataset's i-th sample, in data-file order as LeRobot loads
    them). ``episodes``: {episode_index: {column: value}} of the episode
    rows. ``video_keys``: the cameras read; ``depth_keys`` those marked
    ``video.is_depth_map``."""

    def __init__(self, root: Any, *, episodes: Optional[Sequence[int]] = None,
                 cameras: Optional[Sequence[str]] = None, videos_root: Any = None,
                 remote: Optional[Dict[str, Any]] = None) -> None:
        import numpy as np

        pa, pq, pc = pyarrow_modules()
        self.root = os.fspath(root)
        self.videos_root = os.fspath(videos_root) if videos_root is not None else self.root
        self.remote = remote

        def read(rel: str, missing_ok: bool = False) -> Optional[bytes]:
            return read_bytes(self.root, rel, missing_ok=missing_ok, remote=remote)

        raw = read("meta/info.json")
        assert raw is not None
        info_path = self.where("meta/info.json")
        try:
            info = json.loads(raw)
        except ValueError as e:
            raise DatasetFormatError(f"{info_path}: not JSON ({e})") from None
        for key in ("fps", "features", "video_path", "data_path"):
            if key not in info:
                raise DatasetFormatError(f"{info_path}: the key {key!r} is missing")
        self.info: Dict[str, Any] = info
        self.fps = info["fps"]
        if not isinstance(self.fps, (int, float)) or isinstance(self.fps, bool) or self.fps <= 0:
            raise DatasetFormatError(f"{info_path}: fps {self.fps!r} is not a positive number")
        self.features: Dict[str, Any] = info["features"]
        all_video = [k for k, f in self.features.items() if isinstance(f, dict) and f.get("dtype") == "video"]
        if cameras is None:
            self.video_keys = all_video
        else:
            unknown = [c for c in cameras if c not in all_video]
            if unknown:
                raise DatasetFormatError(f"{info_path}: no video feature(s) {unknown}; the cameras are {all_video}")
            self.video_keys = list(cameras)
        self.depth_keys = [k for k in self.video_keys
                           if (self.features[k].get("info") or {}).get("video.is_depth_map")]

        # episode rows: meta/episodes/chunk-XXX/file-YYY.parquet, numbered from 0
        # (chunks_size files a chunk), read in order until info's total_episodes
        # are found or the next file is missing: no listing, so an http(s) root
        # works as well as a folder or an s3:// prefix
        ep_tables: List[Tuple[str, Any]] = []
        chunks_size = int(info.get("chunks_size", 1000))
        total_episodes = info.get("total_episodes")
        found = 0
        chunk = file = 0
        while not (isinstance(total_episodes, int) and ep_tables and found >= total_episodes):
            rel = f"meta/episodes/chunk-{chunk:03d}/file-{file:03d}.parquet"
            data = read(rel, missing_ok=True)
            if data is None:
                break
            t = pq.read_table(pa.BufferReader(data))
            ep_tables.append((rel, t))
            found += t.num_rows
            file += 1
            if file == chunks_size:
                chunk, file = chunk + 1, 0
        if not ep_tables:
            raise DatasetFormatError(f"{self.where('meta/episodes/chunk-000/file-000.parquet')}: no episode table")
        need = list(EPISODE_COLUMNS) + [f"videos/{k}/{c}" for k in self.video_keys for c in VIDEO_COLUMNS]
        self.episodes: Dict[int, Dict[str, Any]] = {}
        for rel, t in ep_tables:
            _require(need, t.column_names, self.where(rel), "episode rows")
            for row in t.select(need + [c for c in ("data/chunk_index", "data/file_index")
                                        if c in t.column_names]).to_pylist():
                self.episodes[int(row["episode_index"])] = row
        if episodes is None:
            self.selected: Optional[List[int]] = None
            chosen = sorted(self.episodes)
        else:
            self.selected = [int(e) for e in episodes]
            absent = [e for e in self.selected if e not in self.episodes]
            if absent:
                raise DatasetFormatError(f"{self.where('meta/episodes')}: no episode(s) {absent}")
            chosen = sorted(set(self.selected))

        # frame rows: the data files of the chosen episodes, in file order
        files = sorted({(int(self.episodes[e].get("data/chunk_index", 0)), int(self.episodes[e].get("data/file_index", 0)))
                        for e in chosen})
        tables = []
        for c, f in files:
            rel = info["data_path"].format(chunk_index=c, file_index=f)
            data = read(rel)
            assert data is not None
            t = pq.read_table(pa.BufferReader(data))
            _require(FRAME_COLUMNS, t.column_names, self.where(rel), "frame rows")
            if self.selected is not None:
                t = t.filter(pc.is_in(t.column("episode_index"), value_set=pa.array(chosen, pa.int64())))
            tables.append(t)
        table = pa.concat_tables(tables, promote_options="default") if len(tables) > 1 else tables[0]
        self.columns: List[str] = [c for c in table.column_names if not c.startswith("__")]
        self.rows: Dict[str, Any] = {c: _column_array(table, c) for c in self.columns}
        self.num_rows = table.num_rows
        index = self.rows["index"].astype(np.int64)
        self.rel_of = np.full(int(index.max()) + 1 if len(index) else 0, -1, np.int64)
        self.rel_of[index] = np.arange(len(index))
        ep_of = self.rows["episode_index"].astype(np.int64)
        counts = np.bincount(ep_of, minlength=max(chosen) + 1) if len(ep_of) else np.zeros(max(chosen) + 1, np.int64)
        for k in chosen:
            ep = self.episodes[k]
            a, b = int(ep["dataset_from_index"]), int(ep["dataset_to_index"])
            if counts[k] != b - a or b > len(self.rel_of) or (b > a and (self.rel_of[a:b] < 0).any()):
                raise DatasetFormatError(
                    f"{self.where('data')}: episode {k} has {int(counts[k])} frame rows, but its episode row "
                    f"says indices {a}..{b - 1} ({b - a} rows)")

        # tasks: meta/tasks.parquet, the task string of each task_index
        self.tasks: Dict[int, str] = {}
        data = read("meta/tasks.parquet", missing_ok=True)
        if data is not None:
            t = pq.read_table(pa.BufferReader(data))
            name = next((c for c in ("task", "__index_level_0__") if c in t.column_names), None)
            if name is not None and "task_index" in t.column_names:
                self.tasks = {int(i): str(s) for i, s in zip(t.column("task_index").to_pylist(),
                                                             t.column(name).to_pylist())}
        h = hashlib.blake2b(digest_size=8)
        h.update(json.dumps({"total_frames": info.get("total_frames"), "fps": self.fps, "episodes": chosen,
                             "keys": self.video_keys}, sort_keys=True).encode())
        h.update(index.tobytes())
        self.fingerprint = int.from_bytes(h.digest(), "little")

    def where(self, rel: str) -> str:
        """The file `rel` of the dataset as messages name it (a URL redacted)."""
        return shown(join(self.root, rel))

    # ---------------------------------------------------------------- videos
    def video_path(self, episode: int, key: str) -> str:
        ep = self.episodes[episode]
        rel = self.info["video_path"].format(video_key=key, chunk_index=int(ep[f"videos/{key}/chunk_index"]),
                                             file_index=int(ep[f"videos/{key}/file_index"]))
        return join(self.videos_root, rel)

    def frame_size(self, key: str) -> Tuple[int, int]:
        """(height, width) of a camera's frames, from its feature."""
        f = self.features[key]
        inf = f.get("info") or {}
        if "video.height" in inf and "video.width" in inf:
            return int(inf["video.height"]), int(inf["video.width"])
        shape, names = list(f.get("shape") or []), list(f.get("names") or [])
        if len(shape) == 3 and names[:1] == ["channels"]:
            return int(shape[1]), int(shape[2])
        if len(shape) == 3:
            return int(shape[0]), int(shape[1])
        raise DatasetFormatError(f"{self.where('meta/info.json')}: feature {key!r} has no frame size")

    def check_videos(self, episodes: Sequence[int], open_video: Any) -> None:
        """Each camera file of `episodes` opens, and each episode's span
        [from_timestamp, to_timestamp) lies in its file and lasts its rows'
        length / fps (half a frame either way). `open_video(path)` gives the
        file's end in seconds (a missing file raises there, by name)."""
        ends: Dict[str, float] = {}
        half = 0.5 / self.fps
        for e in episodes:
            ep = self.episodes[e]
            n = int(ep["dataset_to_index"]) - int(ep["dataset_from_index"])
            for key in self.video_keys:
                path = self.video_path(e, key)
                if path not in ends:
                    ends[path] = float(open_video(path))
                end = ends[path]
                t0, t1 = float(ep[f"videos/{key}/from_timestamp"]), float(ep[f"videos/{key}/to_timestamp"])
                where = f"{shown(path)}: episode {e}, camera {key}"
                if not (0.0 <= t0 < end):
                    raise DatasetFormatError(f"{where}: from_timestamp {t0:.6f} s is outside the file [0, {end:.6f}) s")
                if t1 > end + half:
                    raise DatasetFormatError(f"{where}: to_timestamp {t1:.6f} s is past the file's end {end:.6f} s")
                if abs((t1 - t0) - n / self.fps) > half:
                    raise DatasetFormatError(
                        f"{where}: its {n} frame rows last {n / self.fps:.6f} s at {self.fps} fps, but its video "
                        f"spans {t1 - t0:.6f} s (from_timestamp {t0:.6f} to to_timestamp {t1:.6f})")
