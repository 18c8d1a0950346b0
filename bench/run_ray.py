#!/usr/bin/env python3
# bench/run_ray.py: reel on Ray (issue 15 §4), on one local Ray node on
# 127.0.0.1 with the machine's CPUs: an epoch of 8-frame clips at stride 4,
# 224x224, over a generated Kinetics-like set, through
#   1. reel.Loader alone (the floor the others are held to);
#   2. reel.ray.read_clips then iter_torch_batches(batch_size=32);
#   3. ray.data.read_videos (decord, one row per frame) reduced to the same
#      clips' frames (a filter: grouping them into clips would only cost more);
#   4. reel.ray.ClipDecoder in map_batches over rows of (path, frame_indices)
#      planned by the Loader;
# with useful clip frames/s, frames decoded per frame delivered, peak RSS of
# the driver and every Ray process, peak object-store bytes and spilled bytes;
# then reel.ray.pack against reel pack (one node, same threads).
#
#   python3 bench/run_ray.py [--videos 64] [--seconds 10] [--cpus 2] [--write-doc]
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import ROOT, command_line, cpu_model, load_summary, log, reel_version, sample_load, write_doc  # noqa: E402

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only; read when Ray is imported


class Sampler:
    """Peak RSS of this process and all its descendants (the raylet, Ray's
    workers), peak object-store bytes in use and peak bytes in Ray's spill
    folders, sampled every 0.2 s."""

    def __init__(self, ray):
        import psutil
        self.psutil, self.ray = psutil, ray
        self.rss = 0
        self.store = 0
        self.spilled = 0
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        me = self.psutil.Process()
        total = self.ray.cluster_resources().get("object_store_memory", 0)
        while not self._stop.is_set():
            rss = 0
            for p in [me] + me.children(recursive=True):
                try:
                    rss += p.memory_info().rss
                except self.psutil.Error:
                    pass
            self.rss = max(self.rss, rss)
            self.spilled = max(self.spilled, spill_dir_bytes())
            try:
                free = self.ray.available_resources().get("object_store_memory", total)
                self.store = max(self.store, int(total - free))
            except Exception:
                pass
            self._stop.wait(0.2)

    def __enter__(self):
        self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()


def spill_dir_bytes():
    """Bytes in Ray's spill folders of the current session (objects spilled to disk and not yet freed)."""
    total = 0
    for d in Path("/tmp/ray/session_latest").glob("**/*spill*"):
        for f in (d.rglob("*") if d.is_dir() else [d]):
            try:
                total += f.stat().st_size if f.is_file() else 0
            except OSError:
                pass
    return total


def init(ray, cpus):
    """A local node on 127.0.0.1, tried once more if it timed out starting (a loaded machine)."""
    for attempt in range(2):
        try:
            return ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, configure_logging=False)
        except Exception as exc:
            ray.shutdown()
            if attempt or "timed out during startup" not in str(exc):
                raise


def make_dataset(root: Path, videos: int, seconds: float, cli: str) -> Path:
    ds = root / "kinetics"
    if not (ds / "manifest.csv").exists():
        subprocess.run([cli, "synth", "--dataset", str(ds), "--videos", str(videos), "--seconds", str(seconds),
                        "--size", "340x256", "--fps", "25"], check=True, stdout=subprocess.DEVNULL)
    return ds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--videos", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--data", default=None, help="where the generated set goes (default: a temporary folder)")
    ap.add_argument("--skip-read-videos", action="store_true")
    ap.add_argument("--read-videos-videos", type=int, default=0,
                    help="read_videos over only the first N videos (it decodes every frame; 0: all)")
    ap.add_argument("--write-doc", action="store_true")
    a = ap.parse_args()
    import numpy as np
    import ray

    import reel
    import reel.ray

    cli = os.environ.get("REEL_CLI") or str(ROOT / "build" / "reel")
    work = Path(a.data or tempfile.mkdtemp(prefix="reel-ray-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    src = make_dataset(work, a.videos, a.seconds, cli)
    T, stride, size = 8, 4, 224
    opts = dict(frames_per_clip=T, frame_stride=stride, size=size, seed=0)
    reel.set_ffmpeg_log_level(0)
    rows = []

    # 1. the Loader alone
    sample_load()
    t0 = time.perf_counter()
    planned = []
    with reel.Loader(src, batch_size=32, num_threads=a.cpus, epochs=1, **opts) as L:
        for b in L:
            planned += [(c.path, list(c.frame_indices)) for c in b.info]
        m = L.metrics()
    dt = time.perf_counter() - t0
    import resource
    rows.append(dict(name="reel.Loader alone", fps=len(planned) * T / dt, decoded_per_frame=m["amplification"],
                     seconds=dt, rss=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024, store=0, spilled=0))
    log(f"loader: {rows[-1]}")

    init(ray, a.cpus)
    try:
        ctx = ray.data.DataContext.get_current()
        ctx.enable_progress_bars = False
        # warm up the workers (start-up is not what is measured)
        ray.data.range(a.cpus * 2, override_num_blocks=a.cpus * 2).map(lambda r: r).take_all()

        # 2. read_clips + iter_torch_batches
        sample_load()
        with Sampler(ray) as s:
            t0 = time.perf_counter()
            n = 0
            ds = reel.ray.read_clips(src, **opts).drop_columns(["path", "failure"])  # strings are no tensors
            for batch in ds.iter_torch_batches(batch_size=32):
                n += int((batch["clip"] >= 0).sum())
            dt = time.perf_counter() - t0
        rows.append(dict(name="reel.ray.read_clips + iter_torch_batches(32)", fps=n * T / dt, decoded_per_frame=m["amplification"],
                         seconds=dt, rss=s.rss, store=s.store, spilled=s.spilled))
        log(f"read_clips: {rows[-1]}")

        # 4. ClipDecoder in map_batches over the Loader's planned clips
        sample_load()
        items = [{"path": p, "frame_indices": fi} for p, fi in planned]
        with Sampler(ray) as s:
            t0 = time.perf_counter()
            ds = ray.data.from_items(items, override_num_blocks=a.cpus * 4).map_batches(
                reel.ray.ClipDecoder, fn_constructor_kwargs={"size": size}, batch_size=8,
                concurrency=a.cpus).drop_columns(["path", "failure"])
            n = sum(len(b["frames"]) for b in ds.iter_torch_batches(batch_size=32))
            dt = time.perf_counter() - t0
        rows.append(dict(name="reel.ray.ClipDecoder in map_batches", fps=n * T / dt, decoded_per_frame=None,
                         seconds=dt, rss=s.rss, store=s.store, spilled=s.spilled))
        log(f"ClipDecoder: {rows[-1]}")

        # 3. read_videos (decord) reduced to the clips' frames
        if not a.skip_read_videos:
            paths = sorted({p for p, _ in planned})
            if a.read_videos_videos:
                paths = paths[:a.read_videos_videos]
            wanted = {(p, i) for p, fi in planned for i in fi if p in set(paths)}
            sample_load()

            def keep(batch):
                mask = np.array([(p, int(i)) in wanted for p, i in zip(batch["path"], batch["frame_index"])], dtype=bool)
                return {k: v[mask] for k, v in batch.items()}

            with Sampler(ray) as s:
                t0 = time.perf_counter()
                ds = ray.data.read_videos(paths, include_paths=True, resize=(size, size)).map_batches(keep)
                n = 0
                decoded = 0
                for b in ds.iter_batches(batch_size=256):
                    n += len(b["frame"])
                dt = time.perf_counter() - t0
            decoded = sum(reel.VideoDecoder(p).__len__() for p in paths)
            rows.append(dict(name=f"ray.data.read_videos (decord) -> the same clips' frames ({len(paths)} videos)", fps=n / dt,
                             decoded_per_frame=decoded / max(1, n), seconds=dt, rss=s.rss, store=s.store,
                             spilled=s.spilled, frames=n))
            log(f"read_videos: {rows[-1]}")
    finally:
        ray.shutdown()

    # 5. reel.ray.pack vs reel pack, one node, same threads
    out1, out2 = work / "store-one", work / "store-ray"
    for d in (out1, out2):
        shutil.rmtree(d, ignore_errors=True)
    sample_load()
    t0 = time.perf_counter()
    subprocess.run([cli, "pack", str(src), str(out1), "--size", "256", "--threads", str(a.cpus), "--no-progress"],
                   check=True, stdout=subprocess.DEVNULL)
    pack_one = time.perf_counter() - t0
    init(ray, a.cpus)
    try:
        ray.data.range(a.cpus * 2, override_num_blocks=a.cpus * 2).map(lambda r: r).take_all()  # warm workers
        sample_load()
        t0 = time.perf_counter()
        rep = reel.ray.pack(src, out2, size=256, threads=1, num_parts=a.cpus)
        pack_ray = time.perf_counter() - t0
    finally:
        ray.shutdown()
    shutil.rmtree(out1, ignore_errors=True)
    shutil.rmtree(out2, ignore_errors=True)

    loader_fps = rows[0]["fps"]
    rc = rows[1]["fps"]
    rv = next((r["fps"] for r in rows if r["name"].startswith("ray.data.read_videos")), None)
    lines = ["## Ray", "",
             f"`{command_line('run_ray.py')}` on {cpu_model()}, reel {reel_version()}, Ray {ray.__version__}, "
             f"{a.cpus} CPUs for one local Ray node (127.0.0.1), load {load_summary()}. {a.videos} generated videos "
             f"(`reel synth --dataset`, 340x256, 25 fps, {a.seconds:g} s, GOP 250); one epoch of one 8-frame clip "
             "per video at stride 4, 224x224 uint8; frames/s counts useful clip frames delivered. Ray's worker "
             "start-up is outside the timings (warmed up first); one run each.", "",
             "| path | frames/s | x Loader | decoded per frame delivered | s | peak RSS MB | peak object store MB | spilled MB |",
             "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        dpf = f"{r['decoded_per_frame']:.2f}" if r["decoded_per_frame"] else ""
        lines.append(f"| {r['name']} | {r['fps']:.0f} | {r['fps'] / loader_fps:.2f} | {dpf} | {r['seconds']:.1f} | "
                     f"{r['rss'] / 1e6:.0f} | {r['store'] / 1e6:.0f} | {r['spilled'] / 1e6:.0f} |")
    lines += ["", f"Pack on one node ({a.cpus} CPUs, jpeg, short side 256): `reel pack --threads {a.cpus}` "
              f"{pack_one:.1f} s, `reel.ray.pack` ({rep['parts']} parts x 1 thread) {pack_ray:.1f} s: "
              f"{pack_one / pack_ray:.2f}x (target 0.9x).", "",
              f"Targets: read_clips {rc / loader_fps:.2f}x the Loader (target 0.8x)"
              + (f"; read_clips {rc / rv:.1f}x read_videos in useful clip frames/s (target 5x)" if rv else "")
              + f"; spilling: {max(r['spilled'] for r in rows) / 1e6:.0f} MB (target none).", ""]
    text = "\n".join(lines)
    print(text)
    (work / "results.json").write_text(json.dumps({"rows": rows, "pack_one": pack_one, "pack_ray": pack_ray}))
    if a.write_doc:
        write_doc(ROOT / "docs" / "BENCHMARKS.md", "## Ray", text)


if __name__ == "__main__":
    main()
