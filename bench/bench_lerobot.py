#!/usr/bin/env python3
# bench_lerobot.py: lerobot 0.4.4's own LeRobotDataset (the package, torchcodec, under a spawn
# DataLoader) against reel.lerobot (its Loader in-process; its LeRobotDataset under the same
# DataLoader) on the same samples of a LeRobot-style dataset made here, in one run, with the ratios.
"""Usage: python3 bench/bench_lerobot.py [--data DIR] [--episodes 6] [--seconds 8] [--samples 256] [--rounds 3]

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
                      (torch.set_num_threads(1) in this process, as in DataLoader's workers)
  reel_loader         reel.lerobot.Loader(batch_size=8, dtype="float32"): decode_near per batch
                      on reel's threads, timed after a warm pass of 2 batches
  reel_loader_uint8   the same, uint8 frames (reel's default)
  reel_dataloader     reel.lerobot.LeRobotDataset(dtype="float32") under the same DataLoader
Every way's first batch is checked equal to reel_loader's (uint8 / 255 for reel_loader_uint8).
Each way is set up (and warmed) once, then timed `--rounds` times, the ways in turn each round;
the table gives each way's median samples/s and its median ratio to lerobot_dataloader in the
same round, with the smallest and largest."""
import argparse
import os
import statistics
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


class DataLoaderWay:
    """`ds` under DataLoader(num_workers=2, batch_size=8, spawn, persistent_workers,
    prefetch_factor=4): a warm pass starts the workers and opens the decoders; each
    timed pass then reads `samples` through the same workers."""

    def __init__(self, ds, warm, samples):
        import torch

        self.sampler, self.samples = Switch(warm), samples
        self.dl = torch.utils.data.DataLoader(ds, batch_size=8, sampler=self.sampler, num_workers=2,
                                              multiprocessing_context="spawn", persistent_workers=True,
                                              prefetch_factor=4)
        self.first = None
        for b in self.dl:
            self.first = self.first or b
        self.sampler.indices = samples

    def timed(self):
        t0 = time.perf_counter()
        n = 0
        for b in self.dl:
            n += len(b["index"])
        return n, time.perf_counter() - t0


class InProcessWay:
    """`ds[i]` in this process, collated in batches of 8."""

    def __init__(self, ds, warm, samples):
        import torch

        self.ds, self.samples, self.collate = ds, samples, torch.utils.data.default_collate
        self.first = self.collate([ds[i] for i in warm[:8]])

    def timed(self):
        t0 = time.perf_counter()
        n = 0
        for k in range(0, len(self.samples), 8):
            b = self.collate([self.ds[i] for i in self.samples[k:k + 8]])
            n += len(b["index"])
        return n, time.perf_counter() - t0


class ReelLoaderWay:
    """reel.lerobot.Loader(batch_size=8) over the first `num` samples of its epoch order
    (seed 0); a new Loader each pass, after a warm one that opens the decoders (the
    process's cache)."""

    def __init__(self, root, keys, num, dtype):
        import reel.lerobot as rl

        self.make = lambda: rl.Loader(root, delta_timestamps={k: DELTAS for k in keys}, batch_size=8, seed=0,
                                      cameras=keys, dtype=dtype)
        self.num = num
        with self.make() as warm:
            it = iter(warm)
            self.first = next(it)
            next(it)
            it.close()

    def timed(self):
        loader = self.make()
        n = 0
        t0 = time.perf_counter()
        for b in loader:
            n += len(b["index"])
            if n >= self.num:
                break
        dt = time.perf_counter() - t0
        loader.close()
        return n, dt


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/tmp/reel-bench-lerobot")
    ap.add_argument("--episodes", type=int, default=6)
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--samples", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    import torch

    import reel
    import reel.lerobot as rl

    try:
        _, LeRobotDataset = lerobot_data.import_lerobot(hf_cache=tempfile.mkdtemp(prefix="reel-bench-hf-"))
    except ImportError as exc:
        sys.exit(f"bench_lerobot: lerobot {lerobot_data.LEROBOT_VERSION} is not installed ({exc}); "
                 "run scripts/deps.sh --test")
    # torch's own threads: 1 in this process, as DataLoader sets them in its workers. With 2 (the
    # default on 2 cores) on a loaded machine, lerobot's torch.stack and / 255 in this process ran
    # 6x slower (OpenMP threads waiting for busy cores); reel decodes on its own threads either way.
    torch.set_num_threads(1)
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

    lr = LeRobotDataset("local/reel-bench", root=root, delta_timestamps=deltas, video_backend="torchcodec")
    rd = rl.LeRobotDataset(root, delta_timestamps=deltas, cameras=keys, dtype="float32")
    ways = {
        "lerobot_dataloader": DataLoaderWay(lr, samples[:16], samples),
        "lerobot_inprocess": InProcessWay(lr, samples[:8], samples),
        "reel_loader": ReelLoaderWay(root, keys, args.samples, "float32"),
        "reel_loader_uint8": ReelLoaderWay(root, keys, args.samples, "uint8"),
        "reel_dataloader": DataLoaderWay(rd, samples[:16], samples),
    }
    ref = ways["reel_loader"].first
    for way, w in ways.items():  # the same frames, whichever way
        b = w.first
        assert b["index"].tolist() == ref["index"].tolist(), way
        for k in keys:
            got = (b[k] / 255.0).type(torch.float32) if b[k].dtype == torch.uint8 else b[k]
            assert torch.equal(got, ref[k]), (way, k)
    rate = {way: [] for way in ways}
    for r in range(args.rounds):  # the ways in turn, each round: the machine's mood spreads over all
        for way, w in ways.items():
            n, dt = w.timed()
            assert n == len(samples), (way, n)
            rate[way].append(n / dt)
        print(f"round {r + 1}: " + ", ".join(f"{way} {v[-1]:.1f}" for way, v in rate.items()), file=sys.stderr)
    base = rate["lerobot_dataloader"]
    print(f"{'way':22s} {'samples/s (median)':>19s} {'vs lerobot_dataloader':>22s} {'per round':>24s}")
    for way, v in rate.items():
        per = [x / y for x, y in zip(v, base)]
        print(f"{way:22s} {statistics.median(v):19.1f} {statistics.median(per):21.2f}x "
              f"{min(per):10.2f}x..{max(per):.2f}x")


if __name__ == "__main__":
    main()
