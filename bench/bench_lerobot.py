#!/usr/bin/env python3
# bench_lerobot.py: lerobot 0.4.4's own LeRobotDataset (the package, torchcodec, under a spawn
# DataLoader) against reel.lerobot (its Loader in-process; its LeRobotDataset under the same
# DataLoader) on the same samples of a LeRobot-style dataset made here, in one run, with the ratios.
"""Usage: python3 bench/bench_lerobot.py [--data DIR] [--episodes 6] [--seconds 8] [--samples 256]

Makes (once, in DIR) a LeRobot v3.0 dataset: 3 cameras (640x480 and two 320x240, libsvtav1
yuv420p g=2 crf=30 preset 12, episodes stream-copied into one file per camera), `--episodes`
episodes of `--seconds` s at 30 fps. Each sample asks 4 timestamps ([-1.0, -0.5, -0.2, 0.0] s)
of each camera: 12 frames, float32 / 255 (lerobot's output; reel's dtype="float32" gives the
same tensors). The samples are the first `--samples` of reel's epoch order (seed 0), the same for
every way. The peer is lerobot 0.4.4 itself (scripts/deps.sh --test installs it into
.deps/lerobot; tests/python/lerobot_data.py imports it), its files unmodified. Ways:
  lerobot_dataloader  lerobot.datasets.lerobot_dataset.LeRobotDataset(root=DIR,
                      delta_timestamps, video_backend="torchcodec").__getitem__ (its
                      decode_video_frames_torchcodec, cameras one after another, the parquet
                      rows through `datasets`) under DataLoader(num_workers=2, batch_size=8,
                      spawn, persistent_workers, prefetch_factor=4)
  lerobot_inprocess   the same __getitem__ in this process, batches of 8 (default_collate)
  reel_loader         reel.lerobot.Loader(batch_size=8, dtype="float32"): decode_near per batch
                      on reel's threads, timed after a warm pass of 2 batches
  reel_loader_uint8   the same, uint8 frames (reel's default)
  reel_dataloader     reel.lerobot.LeRobotDataset(dtype="float32") under the same DataLoader
Every way's first batch is checked equal to reel_loader's (uint8 / 255 for reel_loader_uint8)."""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

import lerobot_data  # noqa: E402

if __name__ == "__mp_main__":  # a spawned DataLoader worker: lerobot's classes unpickle after this
    lerobot_data.import_lerobot()

DELTAS = [-1.0, -0.5, -0.2, 0.0]
CAMERAS = {
    "observation.images.top": (640, 480, 1),
    "observation.images.left": (320, 240, 1),
    "observation.images.right": (320, 240, 1),
}


class Switch:
    """A sampler whose indices change between passes (persistent workers stay)."""

    def __init__(self, indices):
        self.indices = list(indices)

    def __iter__(self):
        return iter(self.indices)

    def __len__(self):
        return len(self.indices)


def dataloader_way(ds, warm, samples):
    import torch

    sampler = Switch(warm)
    dl = torch.utils.data.DataLoader(ds, batch_size=8, sampler=sampler, num_workers=2,
                                     multiprocessing_context="spawn", persistent_workers=True, prefetch_factor=4)
    first = None
    for b in dl:  # starts the workers, opens the decoders
        first = first or b
    sampler.indices = samples
    t0 = time.perf_counter()
    n = 0
    for b in dl:
        n += len(b["index"])
    dt = time.perf_counter() - t0
    del dl
    return n, dt, first


def inprocess_way(ds, warm, samples):
    import torch

    first = torch.utils.data.default_collate([ds[i] for i in warm[:8]])
    t0 = time.perf_counter()
    n = 0
    for k in range(0, len(samples), 8):
        b = torch.utils.data.default_collate([ds[i] for i in samples[k:k + 8]])
        n += len(b["index"])
    return n, time.perf_counter() - t0, first


def reel_loader_way(root, keys, num, dtype):
    import reel.lerobot as rl

    kw = dict(delta_timestamps={k: DELTAS for k in keys}, batch_size=8, seed=0, cameras=keys, dtype=dtype)
    with rl.Loader(root, **kw) as warm:  # opens the decoders (the process's cache), as the warm passes do
        it = iter(warm)
        next(it), next(it)
        it.close()
    loader = rl.Loader(root, **kw)
    n, first = 0, None
    t0 = time.perf_counter()
    for b in loader:
        first = first or b
        n += len(b["index"])
        if n >= num:
            break
    dt = time.perf_counter() - t0
    loader.close()
    return n, dt, first


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/reel-bench-lerobot")
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--samples", type=int, default=256)
    args = ap.parse_args()
    import torch

    import reel
    import reel.lerobot as rl

    try:
        _, LeRobotDataset = lerobot_data.import_lerobot(hf_cache=tempfile.mkdtemp(prefix="reel-bench-hf-"))
    except ImportError as exc:
        sys.exit(f"bench_lerobot: lerobot {lerobot_data.LEROBOT_VERSION} is not installed ({exc}); "
                 "run scripts/deps.sh --test")
    root = os.path.join(args.data, f"ds-{args.episodes}x{args.seconds:g}s")
    if not os.path.exists(os.path.join(root, "meta/info.json")):
        t0 = time.perf_counter()
        n = int(args.seconds * 30)
        lerobot_data.make_dataset(root, episodes=[n] * args.episodes, data_files=[0] * args.episodes,
                                  cameras={k: (w, h, f, [0] * args.episodes) for k, (w, h, f) in CAMERAS.items()})
        print(f"made {root} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    keys = list(CAMERAS)
    deltas = {k: DELTAS for k in keys}
    total = len(rl.LeRobotDataset(root, cameras=keys))
    order = reel.epoch_order(total, 0, seed=0, canonical_batch=8)
    samples = order[:args.samples]
    import lerobot

    print(f"{total} samples in the dataset; {len(samples)} timed, 12 frames each (4 times x 3 cameras); "
          f"{os.cpu_count()} cores; reel {reel.__version__}, lerobot {lerobot.__version__}, "
          f"torch {torch.__version__}", file=sys.stderr)

    results, firsts = {}, {}
    n, dt, ref = reel_loader_way(root, keys, args.samples, "float32")
    results["reel_loader"] = (n, dt)
    n, dt, firsts["reel_loader_uint8"] = reel_loader_way(root, keys, args.samples, "uint8")
    results["reel_loader_uint8"] = (n, dt)
    lr = LeRobotDataset("local/reel-bench", root=root, delta_timestamps=deltas, video_backend="torchcodec")
    rd = rl.LeRobotDataset(root, delta_timestamps=deltas, cameras=keys, dtype="float32")
    n, dt, firsts["lerobot_dataloader"] = dataloader_way(lr, samples[:16], samples)
    results["lerobot_dataloader"] = (n, dt)
    n, dt, firsts["reel_dataloader"] = dataloader_way(rd, samples[:16], samples)
    results["reel_dataloader"] = (n, dt)
    n, dt, firsts["lerobot_inprocess"] = inprocess_way(lr, samples[:8], samples)
    results["lerobot_inprocess"] = (n, dt)
    for way, b in firsts.items():  # the same frames, whichever way
        assert b["index"].tolist() == ref["index"].tolist(), way
        for k in keys:
            got = (b[k] / 255.0).type(torch.float32) if b[k].dtype == torch.uint8 else b[k]
            assert torch.equal(got, ref[k]), (way, k)
    base = results["lerobot_dataloader"][1] / results["lerobot_dataloader"][0]
    print(f"{'way':22s} {'samples':>8s} {'seconds':>8s} {'samples/s':>10s} {'vs lerobot_dataloader':>22s}")
    for way in ("lerobot_dataloader", "lerobot_inprocess", "reel_loader", "reel_loader_uint8", "reel_dataloader"):
        n, dt = results[way]
        print(f"{way:22s} {n:8d} {dt:8.2f} {n / dt:10.1f} {base / (dt / n):21.2f}x")


if __name__ == "__main__":
    main()
