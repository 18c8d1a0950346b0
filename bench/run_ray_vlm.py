#!/usr/bin/env python3
"""reel.ray.read_clips with variable samples (issue 18 §4 on Ray, issue 15):
whole videos sampled at 2 fps and sized by qwen's pixel budget, one row per
video, against reel.Loader over the same videos with the same options, in
one run:

    Loader      reel.Loader(decode_threads=2), one sample per batch
    read_clips  a local Ray node of --cpus CPUs on 127.0.0.1 (workers warmed
                up first), read_clips(decode_threads=1: one task per CPU), then
                iter_batches(batch_size=1, batch_format="numpy")

Wall and CPU seconds (the driver and every Ray process), frames delivered,
peak object-store bytes; the rows' frame indices are checked against the
Loader's.

    nice python3 bench/run_ray_vlm.py [--cpus 2] [--epochs 2] [VIDEO ...]

Without videos: four of the shared set ($REEL_SHARED_VIDEOS), as
bench/run_loader_vlm.py.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from run_loader_vlm import DEFAULT, SHARED  # noqa: E402
from run_ray import Sampler, init, warm_up  # noqa: E402

os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")  # loopback only; read when Ray is imported
OPTS = dict(sampler="fps", size_policy={"factor": 28}, shuffle=False, seed=0)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("videos", nargs="*")
    a = ap.parse_args()
    paths = [str(Path(v).resolve()) for v in a.videos] or [str(SHARED / v) for v in DEFAULT]
    import reel
    reel.set_ffmpeg_log_level(0)

    t0, c0 = time.perf_counter(), time.process_time()
    want, frames = {}, 0
    with reel.Loader(paths, batch_size=1, decode_threads=2, epochs=a.epochs, **OPTS) as loader:
        for _ in range(a.epochs):
            for b in loader:
                for f, c in zip(b.frames, b.info):
                    want[(b.epoch, c.sample)] = list(c.frame_indices)
                    frames += f.shape[0]
    loader_s, loader_cpu = time.perf_counter() - t0, time.process_time() - c0
    print(f"Loader:     {loader_s:6.2f} s wall, {loader_cpu:6.2f} CPU s, {frames} frames, "
          f"{frames / loader_s:6.1f} frames/s")

    import ray
    import reel.ray
    init(ray, a.cpus)
    try:
        ray.data.DataContext.get_current().enable_progress_bars = False
        warm_up(ray, a.cpus)
        with Sampler(ray) as s:
            t0 = time.perf_counter()
            ds = reel.ray.read_clips(paths, epochs=a.epochs, decode_threads=1, **OPTS)
            got, rframes = {}, 0
            for batch in ds.iter_batches(batch_size=1, batch_format="numpy"):
                for e, i, f, fi in zip(batch["epoch"], batch["sample"], batch["frames"], batch["frame_indices"]):
                    got[(int(e), int(i))] = fi.tolist()
                    rframes += f.shape[0]
            ray_s = time.perf_counter() - t0
        cpu = s.cpu  # the driver and every Ray process, over the read
    finally:
        ray.shutdown()
    assert got == want and rframes == frames, "read_clips' rows differ from the Loader's samples"
    print(f"read_clips: {ray_s:6.2f} s wall, {cpu:6.2f} CPU s, {rframes} frames, {rframes / ray_s:6.1f} frames/s, "
          f"peak object store {s.store / 2**20:.0f} MB, peak RSS {s.rss / 2**20:.0f} MB")
    print(f"read_clips / Loader: {loader_s / ray_s:.2f}x in frames/s; rows equal the Loader's samples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
