#!/usr/bin/env python3
# bench_lerobot.py: LeRobot's video path (torchcodec, cameras in threads, a spawn DataLoader)
# against reel.lerobot (its Loader in-process; LeRobotDataset under the same DataLoader) on the
# same samples of a LeRobot-style dataset made here, in one run, with the ratios.
"""Usage: python3 bench/bench_lerobot.py [--data DIR] [--episodes 6] [--seconds 8] [--samples 256]

Makes (once, in DIR) a LeRobot v3.0 dataset: 3 cameras (640x480 and two 320x240, libsvtav1
yuv420p g=2 crf=30 preset 12, episodes stream-copied into one file per camera), `--episodes`
episodes of `--seconds` s at 30 fps. Each sample asks 4 timestamps ([-1.0, -0.5, -0.2, 0.0] s)
of each camera: 12 frames. The samples are the first `--samples` of reel's epoch order (seed 0),
the same for every way. Ways:
  lerobot_dataloader  LeRobot 0.4.4's __getitem__ for the video keys (torchcodec
                      VideoDecoder(seek_mode="approximate"), round(ts * fps), get_frames_at,
                      the tolerance check, cameras in a ThreadPoolExecutor) under
                      DataLoader(num_workers=2, batch_size=8, spawn, persistent, prefetch 4)
  lerobot_inprocess   the same __getitem__ in this process, batches of 8
  reel_loader         reel.lerobot.Loader(batch_size=8): decode_near per batch on reel's threads
  reel_dataloader     reel.lerobot.LeRobotDataset under the same DataLoader as LeRobot's
Every way's frames are checked equal to reel_loader's on the first batch."""
import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "python"))

import lerobot_data  # noqa: E402

DELTAS = [-1.0, -0.5, -0.2, 0.0]
CAMERAS = {
    "observation.images.top": (640, 480, 1),
    "observation.images.left": (320, 240, 1),
    "observation.images.right": (320, 240, 1),
}


class LeRobotVideoPath:
    """LeRobot 0.4.4's DatasetReader.get_item for the video keys (quoted):
    query indices clamped into the episode, the rows' float32 timestamps
    plus from_timestamp, decode_video_frames_torchcodec per camera in a
    thread pool; uint8 frames. Picklable: the decoders open in each worker."""

    def __init__(self, root, keys):
        import pyarrow.parquet as pq

        self.root, self.keys = root, keys
        info = __import__("json").load(open(os.path.join(root, "meta/info.json")))
        self.fps, self.video_path = info["fps"], info["video_path"]
        data = sorted(str(p) for p in Path(root, "data").glob("*/*.parquet"))
        t = __import__("pyarrow").concat_tables([pq.read_table(p) for p in data])
        self.ts = t.column("timestamp").to_numpy()
        self.ep = t.column("episode_index").to_numpy()
        self.index = t.column("index").to_numpy()
        self.episodes = {r["episode_index"]: r for r in pq.read_table(
            os.path.join(root, "meta/episodes/chunk-000/file-000.parquet")).to_pylist()}
        self.deltas = [round(d * self.fps) for d in DELTAS]
        self._ref = None

    def __len__(self):
        return len(self.ts)

    def __getitem__(self, i):
        import torch

        if self._ref is None:
            self._ref = lerobot_data.TorchcodecReference()
        ep = self.episodes[int(self.ep[i])]
        a, b, abs_idx = ep["dataset_from_index"], ep["dataset_to_index"], int(self.index[i])
        q = [max(a, min(b - 1, abs_idx + d)) for d in self.deltas]
        ts = torch.stack([torch.tensor(self.ts[j]) for j in q]).tolist()
        out = {"observation.images.top_is_pad": torch.BoolTensor([(abs_idx + d < a) | (abs_idx + d >= b)
                                                                   for d in self.deltas])}

        def one(key):
            path = os.path.join(self.root, self.video_path.format(
                video_key=key, chunk_index=ep[f"videos/{key}/chunk_index"], file_index=ep[f"videos/{key}/file_index"]))
            frames, _ = self._ref.decode(path, [ep[f"videos/{key}/from_timestamp"] + t for t in ts], 1e-4)
            return key, frames

        with ThreadPoolExecutor(max_workers=len(self.keys)) as pool:
            out.update(dict(pool.map(one, self.keys)))
        out["index"] = torch.tensor(abs_idx)
        return out


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


def reel_loader_way(root, keys, num):
    import reel.lerobot as rl

    loader = rl.Loader(root, delta_timestamps={k: DELTAS for k in keys}, batch_size=8, seed=0, cameras=keys)
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

    root = os.path.join(args.data, f"ds-{args.episodes}x{args.seconds:g}s")
    if not os.path.exists(os.path.join(root, "meta/info.json")):
        t0 = time.perf_counter()
        n = int(args.seconds * 30)
        lerobot_data.make_dataset(root, episodes=[n] * args.episodes, data_files=[0] * args.episodes,
                                  cameras={k: (w, h, f, [0] * args.episodes) for k, (w, h, f) in CAMERAS.items()})
        print(f"made {root} in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    keys = list(CAMERAS)
    total = len(rl.LeRobotDataset(root, cameras=keys))
    order = reel.epoch_order(total, 0, seed=0, canonical_batch=8)
    samples = order[:args.samples]
    print(f"{total} samples in the dataset; {len(samples)} timed, 12 frames each (4 times x 3 cameras); "
          f"{os.cpu_count()} cores; reel {reel.__version__}, torch {torch.__version__}", file=sys.stderr)

    results = {}
    n, dt, ref = reel_loader_way(root, keys, args.samples)
    results["reel_loader"] = (n, dt)
    lr = LeRobotVideoPath(root, keys)
    rd = rl.LeRobotDataset(root, delta_timestamps={k: DELTAS for k in keys}, cameras=keys)
    firsts = {}
    n, dt, firsts["lerobot_dataloader"] = dataloader_way(lr, samples[:16], samples)
    results["lerobot_dataloader"] = (n, dt)
    n, dt, firsts["reel_dataloader"] = dataloader_way(rd, samples[:16], samples)
    results["reel_dataloader"] = (n, dt)
    n, dt, firsts["lerobot_inprocess"] = inprocess_way(lr, samples[:8], samples)
    results["lerobot_inprocess"] = (n, dt)
    for way, b in firsts.items():  # the same frames, whichever way
        assert b["index"].tolist() == ref["index"].tolist(), way
        for k in keys:
            assert torch.equal(b[k], ref[k]), (way, k)
    base = results["lerobot_dataloader"][1] / results["lerobot_dataloader"][0]
    print(f"{'way':22s} {'samples':>8s} {'seconds':>8s} {'samples/s':>10s} {'vs lerobot_dataloader':>22s}")
    for way, (n, dt) in results.items():
        print(f"{way:22s} {n:8d} {dt:8.2f} {n / dt:10.1f} {base / (dt / n):21.2f}x")


if __name__ == "__main__":
    main()
