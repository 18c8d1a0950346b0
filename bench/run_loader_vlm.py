#!/usr/bin/env python3
"""reel.Loader with variable batches (issue 18 §4, §3 loader side): whole
videos sampled at 2 fps and sized by qwen's pixel budget, one sample per
batch, in one process per configuration (wall, CPU seconds, peak RSS):

    serial      decode_threads=1: one decode thread, never split
    split       decode_threads=2, prefetch_batches=1: the second decode thread
                would idle, so each sample's keyframe runs are split over
                two decoder contexts (gop_split_samples counts them)
    pipelined   decode_threads=2, prefetch automatic: two samples at once

    nice python3 bench/run_loader_vlm.py [--repeat 2] [--layout BCTHW] [VIDEO ...]

Without videos: the longer ones of the shared set ($REEL_SHARED_VIDEOS).
Prints one line per configuration and the ratios to serial.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("REEL_SHARED_VIDEOS") or ROOT.parent / "shared" / "videos")
DEFAULT = ["karma.mp4", "one-by-one-person-detection.mp4", "big_buck_bunny_0_30.webm", "MVI_4823.AVI"]
CONFIGS = {"serial": dict(decode_threads=1, prefetch_batches=1), "split": dict(decode_threads=2, prefetch_batches=1),
           "pipelined": dict(decode_threads=2)}

CHILD = r"""
import json, resource, sys, time
import reel
cfg, paths = json.loads(sys.argv[1]), json.loads(sys.argv[2])
reel.set_ffmpeg_log_level(0)
t0, c0 = time.perf_counter(), time.process_time()
with reel.Loader(paths, sampler="fps", size_policy={"factor": 28}, batch_size=1, shuffle=False, epochs=1,
                 **cfg) as loader:
    for batch in loader:
        del batch
    m = loader.metrics()
print(json.dumps(dict(wall=time.perf_counter() - t0, cpu=time.process_time() - c0, frames=m["frames"],
                      split=m["gop_split_samples"], rss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("videos", nargs="*")
    ap.add_argument("--repeat", type=int, default=1, help="runs per configuration (the fastest is kept)")
    ap.add_argument("--layout", default="BTCHW", choices=("BTCHW", "BCTHW", "BTHWC"), help="the batches' layout")
    a = ap.parse_args()
    paths = a.videos or [str(SHARED / v) for v in DEFAULT if (SHARED / v).exists()]
    if not paths:
        sys.exit("no videos: pass some, or set REEL_SHARED_VIDEOS")
    rows = {}
    for name, cfg in CONFIGS.items():
        best = None
        for _ in range(a.repeat):
            args = [sys.executable, "-c", CHILD, json.dumps(dict(cfg, layout=a.layout)), json.dumps(paths)]
            out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
            r = json.loads(out.strip().splitlines()[-1])
            best = r if best is None or r["wall"] < best["wall"] else best
        rows[name] = best
        print(f"{name:10s} {best['wall']:7.2f} s wall {best['cpu']:7.2f} s CPU {best['rss_mb']:7.0f} MB peak RSS "
              f"{best['frames']:5d} frames, gop_split_samples {best['split']}")
    base = rows["serial"]["wall"]
    print("wall vs serial: " + ", ".join(f"{k} {base / v['wall']:.2f}x" for k, v in rows.items()))
    print(f"({len(paths)} videos: {', '.join(Path(p).name for p in paths)}; layout {a.layout}; {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
