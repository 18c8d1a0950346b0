"""Per-call overhead of two builds of reel's extension, e.g. the abi3 one
(Py_LIMITED_API 3.10) against the version-specific one it replaced:

    nice python3 bench/bench_abi3_overhead.py --base DIR_A --new DIR_B [--rounds 7] [--calls 2000]

DIR_A and DIR_B are `pip install --target` folders, each holding a `reel`
package. Each round runs one fresh child per build, alternating, on the
same tiny videos (64x64, written once with reel._testing): the calls are
dominated by the Python<->C crossing, not by decoding.

- decoder 1 / decoder 2: VideoDecoder.get_frames_at([i]) / ([i, i+1]) on an
  all-intra video (no seek work), i walking the video; "numpy index": the
  index as an int64 numpy array (read through the buffer protocol);
- Frames._view: the pure crossing, no decoding (a view of half a batch);
- loader next: Loader.__next__ on 8 videos (batch 4 of 2-frame clips) with
  the pipeline ahead: a 20 ms pause before each timed call lets the queue fill, so
  the call takes a ready batch (the Frames, labels and metadata made in C).

Each call is timed in CPU time of the calling thread (time.thread_time_ns;
the decoder has threads=1, so its decoding is in it too), which a busy
machine's preemption does not inflate. Prints, per call, each build's
median over rounds of the per-round median (microseconds) and new / base,
and the same for the best (lowest) round, the least disturbed by other load. The runs alternate so that both see the
same load; the ratio is the result, not the absolute times.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

WORK = Path("/tmp/reel-abi3-bench")
# The calling thread's CPU time: a busy shared machine preempts the thread
# but does not add to it (the loader's own threads are not counted).
clock = time.thread_time_ns


def child(calls: int) -> None:
    import reel
    import reel._testing as rt

    WORK.mkdir(parents=True, exist_ok=True)
    intra = WORK / "intra.mp4"
    if not intra.exists():
        rt.write_video(str(intra), width=64, height=64, frames=64, gop=1, bframes=0)
    clips = []
    for k in range(8):
        p = WORK / f"clip{k}.mp4"
        if not p.exists():
            rt.write_video(str(p), width=64, height=64, frames=48, gop=8, seed=k + 1)
        clips.append(str(p))

    out = {}
    d = reel.VideoDecoder(str(intra), layout="HWC", threads=1)  # all work in this thread
    n = len(d)
    import numpy as np

    for name, width, as_array in (("decoder 1", 1, False), ("decoder 2", 2, False), ("decoder 1, numpy index", 1, True)):
        times = []
        for c in range(calls + 50):
            i = c % (n - width)
            idx = np.arange(i, i + width, dtype=np.int64) if as_array else list(range(i, i + width))
            t0 = clock()
            f = d.get_frames_at(idx)
            t1 = clock()
            del f
            if c >= 50:
                times.append(t1 - t0)
        out[name] = statistics.median(times) / 1e3

    # pure crossing, no decoding: a new Frames viewing part of another (the
    # shape parsed from a tuple, the module state found, a heap object made)
    f = d.get_frames_at([0, 1])
    shape = tuple(f.shape[1:])
    half = f.nbytes // 2
    times = []
    for c in range(calls + 50):
        t0 = clock()
        for _ in range(100):  # 100 calls a sample: the clock's own cost is not small against one
            f._view(shape, None, None, None, "HWC", half)
        t1 = clock()
        if c >= 50:
            times.append((t1 - t0) / 100)
    out["Frames._view"] = statistics.median(times) / 1e3
    del f

    loader = reel.Loader(clips, frames_per_clip=2, clips_per_video=2, size=64, resize=False, crop=None,
                         batch_size=4, epochs=None, shuffle=True, seed=1)

    def endless():
        while True:  # each pass is the next epoch; the threads prefetch across epochs
            yield from loader

    it = endless()
    times = []
    lcalls = max(100, calls // 8)
    for c in range(lcalls + 20):
        time.sleep(0.02)  # the pipeline fills the queue: next() takes a ready batch
        t0 = clock()
        b = next(it)
        t1 = clock()
        del b
        if c >= 20:
            times.append(t1 - t0)
    out["loader next"] = statistics.median(times) / 1e3
    loader.close()
    out["module"] = reel._reel.__file__
    print(json.dumps(out))


def run(target: str, calls: int) -> dict:
    env = dict(os.environ, PYTHONPATH=target)
    r = subprocess.run([sys.executable, __file__, "--child", "--calls", str(calls)], env=env, capture_output=True,
                       text=True)
    if r.returncode != 0:
        raise SystemExit(f"child with {target} failed:\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="pip --target folder of the base build")
    ap.add_argument("--new", help="pip --target folder of the new build")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.calls)
        return
    if not a.base or not a.new:
        ap.error("--base and --new are required")
    res: dict = {"base": [], "new": []}
    for r in range(a.rounds):
        for key, target in (("base", a.base), ("new", a.new)) if r % 2 == 0 else (("new", a.new), ("base", a.base)):
            res[key].append(run(target, a.calls))
    print(f"base: {res['base'][0]['module']}\nnew:  {res['new'][0]['module']}")
    print(f"{a.rounds} rounds, load average {os.getloadavg()[0]:.2f}")
    print("| call | base (us) | new (us) | new / base | best round: base / new (us) | new / base |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in ("decoder 1", "decoder 2", "decoder 1, numpy index", "Frames._view", "loader next"):
        b = statistics.median(x[name] for x in res["base"])
        n = statistics.median(x[name] for x in res["new"])
        bb = min(x[name] for x in res["base"])
        nb = min(x[name] for x in res["new"])
        print(f"| {name} | {b:.2f} | {n:.2f} | {n / b:.3f} | {bb:.2f} / {nb:.2f} | {nb / bb:.3f} |")


if __name__ == "__main__":
    main()
