# reel/_ray_pack.py: reel.ray.pack, a store built by Ray tasks (one per part,
# more parts than task slots so that Ray balances the tail), and its command
# line (`python -m reel.ray pack`, what `reel pack --ray` runs). It imports
# Ray but not Ray Data, so that a Ray worker running a part starts quickly.
from __future__ import annotations

import json
import os
import sys
import time
from typing import Any, Dict, List, Optional, Union

import ray

from . import _reel
from ._loader import dataset_info
from ._store import pack as _pack
from ._store import parse_size

#: parts per task slot when num_parts is not given. A part that starts late
#: (a worker still starting) or runs long (longer videos, a slower node) is
#: absorbed only when parts are short next to that delay: Ray hands the next
#: part to whichever slot frees first, so at the end the others wait at most
#: about one part, an eighth of a slot's share. A part costs little more
#: than its videos (a Ray task, a journal and a shard file).
PARTS_PER_SLOT = 8


def redact(path: str) -> str:
    """A path as reports and messages show it: URLs without user info or query."""
    return _reel.redact_url(path) if "://" in path else path


def _progress_path(out_dir: str, index: int, count: int) -> str:
    return os.path.join(out_dir, f".ray-progress-{index:05d}-of-{count:05d}.json")


def _pack_part(source: str, out_dir: str, index: int, count: int, options: Dict[str, Any]) -> Dict[str, Any]:
    """One part of a build (a Ray task): shards and journal into out_dir. A
    retried task resumes from the part's journal; progress goes to a small
    file the driver reads."""
    import socket

    started = time.time()
    progress_path = _progress_path(out_dir, index, count)
    node = ray.get_runtime_context().get_node_id()

    def report(p: Dict[str, Any]) -> None:
        p = dict(p, node=node, part=index, pid=os.getpid())
        tmp = f"{progress_path}.{os.getpid()}"
        with open(tmp, "w") as f:
            json.dump(p, f)
        os.replace(tmp, progress_path)

    rep = _pack(source, out_dir, part=(index, count), progress=report, **options)
    rep.update(part=index, node=node, host=socket.gethostname(), started=started, finished=time.time())
    return rep


def _read_part_progress(out_dir: str, index: int, count: int) -> Optional[Dict[str, Any]]:
    try:
        with open(_progress_path(out_dir, index, count)) as f:
            return dict(json.load(f))
    except (OSError, ValueError):
        return None


def read_progress(out_dir: str, count: int) -> List[Dict[str, Any]]:
    """The last progress each part of a running reel.ray.pack reported:
    reel.pack's progress dict plus ``part``, ``node`` (Ray node id) and
    ``pid`` (the process of the task's attempt, on that node)."""
    return [p for p in (_read_part_progress(out_dir, i, count) for i in range(count)) if p]


def pack(source: Any, out_dir: Any, *, num_parts: Optional[int] = None, threads: int = 1,
         progress: Union[None, bool, Any] = None, max_retries: int = 8, poll_seconds: float = 0.5,
         **pack_options: Any) -> Dict[str, Any]:
    """Builds a packed store of `source` with Ray tasks, one per part.

    Takes ``reel.pack``'s options (``size``, ``fps``, ``every``, ``format``,
    ``quality``, ``zstd_level``, ``gop``, ``crf``, ``shard_size``, ``audio``,
    ``corrupt_policy``...) with their meanings. ``num_parts``: parts (tasks); None: eight per task slot (the
    cluster's CPUs divided by ``threads``), at most one per video, so that
    Ray, handing each next part to the first free slot, balances the end of
    the build. ``threads``: encoder threads per task, and the CPUs each task
    asks Ray for. Resuming a build takes the same ``num_parts`` as the run
    that started it (pass it explicitly if the cluster changed size).

    Every task writes its part's shards and journal into ``out_dir``, which
    every node must see at the same path (a shared folder); the driver
    merges the parts into the store's index when all are done. An
    ``s3://`` or ``http(s)://`` out_dir is refused: reel cannot write to
    object storage yet. A task that dies (a killed worker or node) is retried
    by Ray (``max_retries``) and resumes from its journal, so it costs only
    its unfinished record; the records are byte-identical to a one-machine
    ``reel pack`` of the same input and options (the shard layout follows
    the parts, as with ``--part``).

    ``progress``: True for a bar on stderr (videos done, videos/s, failures),
    or a callable given {videos_total, videos_done, videos_failed,
    videos_resumed, elapsed}. Returns the report: videos, packed and failed
    (records in the store), resumed (finished by an earlier attempt: a
    retried part, or an earlier build), frames, bytes, seconds, parts,
    ``part_nodes`` (the Ray node id each part's last attempt ran on),
    ``part_spans`` ([started, finished] seconds after the build started, of
    each part's last attempt, by the nodes' clocks) and ``failures`` ([{path,
    reason}] of the videos that could not be packed, as the store records
    them)."""
    out = os.fspath(out_dir)
    if "://" in out:
        raise ValueError(f"reel.ray.pack: out_dir {redact(out)} is object storage, which reel cannot write yet; "
                         "pack into a folder every node shares (NFS, a mounted bucket), then upload it")
    src = os.fspath(source) if isinstance(source, (str, os.PathLike)) else source
    if not isinstance(src, str):
        raise TypeError("reel.ray.pack: source must be a folder or a manifest (a path or URL)")
    for key in ("part", "wait_for_parts"):
        if key in pack_options:
            raise TypeError(f"reel.ray.pack: {key} is set by reel.ray.pack")
    if int(threads) < 1:
        raise ValueError(f"reel.ray.pack: threads must be >= 1, not {threads}")
    n = dataset_info(src)["size"]
    if n == 0:
        raise ValueError(f"reel.ray.pack: the dataset {redact(src)} is empty")
    if not ray.is_initialized():
        ray.init()
    if num_parts is None:
        slots = max(1, int(ray.cluster_resources().get("CPU", 1)) // int(threads))
        num_parts = PARTS_PER_SLOT * slots
    count = max(1, min(int(num_parts), n))
    os.makedirs(out, exist_ok=True)
    opts = dict(pack_options, threads=int(threads))
    task = ray.remote(_pack_part).options(num_cpus=int(threads), max_retries=int(max_retries),
                                          retry_exceptions=False)
    t0 = time.monotonic()
    wall0 = time.time()
    refs = [task.remote(src, out, i, count, opts) for i in range(count)]
    cb = _bar if progress is True else (progress or None)
    pending = dict(zip(refs, range(count)))
    last: Dict[int, Dict[str, Any]] = {}  # each part's last progress; a finished part's file is not read again
    while pending and cb:
        _, left = ray.wait(list(pending), num_returns=len(pending), timeout=poll_seconds)
        for i in pending.values():
            p = _read_part_progress(out, i, count)
            if p:
                last[i] = p
        pending = {r: pending[r] for r in left}
        cb({"videos_total": n, "videos_done": sum(p["videos_done"] for p in last.values()),
            "videos_failed": sum(p["videos_failed"] for p in last.values()),
            "videos_resumed": sum(p["videos_resumed"] for p in last.values()), "elapsed": time.monotonic() - t0})
    if progress is True:
        sys.stderr.write("\n")
    reports = ray.get(refs)
    _reel.pack_merge(out)
    for i in range(count):
        try:
            os.remove(_progress_path(out, i, count))
        except OSError:
            pass
    records = _reel.store_records(out)
    failures = [{"path": redact(r["path"]), "reason": r["reason"]} for r in records if r["status"]]
    total = {k: sum(r[k] for r in reports) for k in ("videos", "resumed")}
    # what the store holds (a retried part's first attempt included)
    info = _reel.store_info(out)
    total.update(packed=len(records) - len(failures), failed=len(failures), frames=info["frames"],
                 bytes=info["bytes"], seconds=time.monotonic() - t0, parts=count, merged=True, failures=failures,
                 part_nodes=[r["node"] for r in reports],
                 part_spans=[[r["started"] - wall0, r["finished"] - wall0] for r in reports])
    return total


def _bar(p: Dict[str, Any]) -> None:
    total, done = p["videos_total"], p["videos_done"]
    rate = (done - p["videos_resumed"]) / p["elapsed"] if p["elapsed"] > 0 else 0.0
    frac = done / total if total else 1.0
    fill = int(frac * 30)
    sys.stderr.write(f"\r[{'#' * fill}{'.' * (30 - fill)}] {frac * 100:3.0f}% {done}/{total} videos  "
                     f"{rate:.1f} videos/s  {p['videos_failed']} failed ")
    sys.stderr.flush()


# ---------------------------------------------------------------------- command line


def _bytes(v: str) -> int:
    m = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}.get(v[-1:].lower(), 1)
    return int(float(v[:-1] if m > 1 else v) * m)


def main(argv: Optional[List[str]] = None) -> int:
    """``python -m reel.ray pack SOURCE OUT_DIR [options]`` (what ``reel pack
    --ray [ADDRESS]`` runs): reel pack's options, ``--address``, ``--parts``."""
    import argparse

    ap = argparse.ArgumentParser(prog="python -m reel.ray", description="reel on a Ray cluster.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack", help="build a packed store with Ray tasks")
    p.add_argument("source")
    p.add_argument("out_dir")
    p.add_argument("--address", default=None, help="a Ray cluster (default: RAY_ADDRESS, or a local one)")
    p.add_argument("--parts", type=int, default=None,
                   help=f"Ray tasks (default: {PARTS_PER_SLOT} per task slot, a slot being --threads CPUs)")
    p.add_argument("--size", default="256", help="short side S, WxH, or source (each video's own size)")
    p.add_argument("--fps", type=float, default=0.0)
    p.add_argument("--every", type=int, default=1)
    p.add_argument("--format", choices=["jpeg", "raw", "h264"], default="jpeg")
    p.add_argument("--quality", type=int, default=90)
    p.add_argument("--zstd", type=int, nargs="?", const=3, default=0, metavar="LEVEL")
    p.add_argument("--gop", type=int, default=8)
    p.add_argument("--crf", type=int, default=18)
    p.add_argument("--shard-size", type=_bytes, default=1 << 30)
    p.add_argument("--threads", type=int, default=1, help="encoder threads (and CPUs) per task")
    p.add_argument("--audio", action="store_true", help="also keep each record's audio (reel pack --audio)")
    p.add_argument("--audio-rate", type=int, default=None)
    p.add_argument("--audio-channels", type=int, choices=[1], default=None)
    p.add_argument("--audio-stream", type=int, default=None)
    p.add_argument("--json", action="store_true")
    p.add_argument("--progress", dest="progress", action="store_true", default=None)
    p.add_argument("--no-progress", dest="progress", action="store_false")
    a = ap.parse_args(argv)
    size = parse_size(a.size)
    given = {"sample_rate": a.audio_rate, "channels": a.audio_channels, "stream_index": a.audio_stream}
    if not a.audio and any(v is not None for v in given.values()):
        ap.error("--audio-rate, --audio-channels and --audio-stream need --audio")
    audio = {k: v for k, v in given.items() if v is not None} if a.audio else None
    if a.address:
        ray.init(address=a.address, log_to_driver=False)
    elif not os.environ.get("RAY_ADDRESS"):
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        ray.init(include_dashboard=False, log_to_driver=False)
    else:
        ray.init(log_to_driver=False)
    try:
        rep = pack(a.source, a.out_dir, num_parts=a.parts, threads=a.threads,
                   progress=sys.stderr.isatty() if a.progress is None else a.progress, size=size, fps=a.fps,
                   every=a.every, format=a.format, quality=a.quality, zstd_level=a.zstd, gop=a.gop, crf=a.crf,
                   shard_size=a.shard_size, audio=audio)
    except (ValueError, TypeError, _reel.ReelError) as exc:
        print(f"reel pack --ray: {exc}", file=sys.stderr)
        return 1
    finally:
        ray.shutdown()
    if a.json:
        print(json.dumps(dict(rep, store=a.out_dir, format=a.format)))
    else:
        print(f"{a.out_dir}: {rep['videos']} videos ({rep['packed']} packed, {rep['failed']} failed, "
              f"{rep['resumed']} already done) in {rep['parts']} Ray tasks, {rep['frames']} frames, "
              f"{rep['bytes'] / 1e6:.1f} MB in {rep['seconds']:.1f} s")
        for f in rep["failures"]:
            print(f"  failed: {f['reason'] or f['path']}")
    return 0


if __name__ == "__main__":  # `reel pack --ray`: run as reel._ray_pack, so Ray pickles its tasks by reference
    from reel._ray_pack import main as _main

    sys.exit(_main())
