#!/usr/bin/env python3
"""examples/train_linear.py: a linear classifier over 8 frames at 224x224,
fed by reel.torch.VideoDataset (the motivating example of issue 4).

    python3 examples/train_linear.py                      # CPU here, CUDA where there is one
    python3 examples/train_linear.py --data DIR --epochs 2 --batch 32 --frames 8 --size 224
    torchrun --standalone --nproc_per_node=2 examples/train_linear.py --ddp   # gloo on CPU

The data: a Kinetics-like folder (class/video.mp4) or a manifest. The default,
build/demo/kinetics, is what `make demo` writes; when it is missing, a small
set (16 videos of 4 s) is generated into build/demo/kinetics-small (with
`build/reel synth`, or the extension's own synthesiser when the CLI is not
built) and used instead, leaving `make demo`'s folder alone.

The model is literally linear: nn.Linear(T*C*H*W -> classes) over the
flattened clip (8 x 3 x 224 x 224 = 1,204,224 inputs). No pooling and no
averaging over time: every frame's pixels reach the classifier. The loader
normalises (float32 or bfloat16 output with ImageNet mean/std, fused into its
colour conversion), so the training step gets model-ready tensors, zero-copy.

Per step it measures the data time (waiting for the next batch) and the model
time (copy to the device, forward, backward, optimiser step; synchronised on
CUDA), and prints throughput (frames per second reaching the loop), coverage
(samples decoded / tried, from the loader's metrics), and the data and model
time totals at the end. With --ddp (under torchrun) each rank records the
(path, clip) samples it trained on; rank 0 gathers them and prints whether
the ranks' samples were disjoint and how much of the dataset they covered.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import subprocess
import time
from pathlib import Path

import torch
import torch.nn as nn
import torch.nn.functional as F

import reel
import reel._testing
import reel.torch as rt

ROOT = Path(__file__).resolve().parents[1]

DEFAULT_DATA = ROOT / "build" / "demo" / "kinetics"
SMALL_DATA = ROOT / "build" / "demo" / "kinetics-small"
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", type=Path, default=None,
                   help=f"dataset folder or manifest (default {DEFAULT_DATA.relative_to(ROOT)}; "
                        f"generated small into {SMALL_DATA.relative_to(ROOT)} when missing)")
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--batch", type=int, default=32, help="clips per batch (per rank)")
    p.add_argument("--frames", type=int, default=8, help="frames per clip")
    p.add_argument("--size", type=int, default=224, help="square crop size")
    p.add_argument("--device", default="auto", help="auto (cuda if available), cpu, cuda, cuda:1...")
    p.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"],
                   help="what the loader emits (bfloat16 halves the bytes; the model runs in float32)")
    p.add_argument("--workers", type=int, default=0,
                   help="DataLoader workers (0, recommended: reel decodes on its own threads)")
    p.add_argument("--threads", type=int, default=None, help="reel decode threads (default: the cores)")
    p.add_argument("--pin-memory", default="auto", choices=["auto", "on", "off"],
                   help="page-locked loader ring (auto: on with CUDA)")
    p.add_argument("--lr", type=float, default=1e-6,
                   help="SGD learning rate (small: the classifier sees 1.2M inputs per clip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--log-every", type=int, default=1, help="print one line every N steps")
    p.add_argument("--ddp", action="store_true",
                   help="DistributedDataParallel (run under torchrun; gloo on CPU, nccl on CUDA)")
    return p.parse_args()


# ------------------------------------------------------------------ data
def ensure_data(arg: Path | None, rank: int) -> Path:
    """The dataset to use; generates a small one if the default is missing."""
    if arg is not None and arg.exists():
        return arg
    if arg is None and (DEFAULT_DATA / "manifest.csv").exists():
        return DEFAULT_DATA
    target = arg if arg is not None else SMALL_DATA
    done = target / "manifest.csv"
    if rank == 0 and not done.exists():
        print(f"generating a small dataset in {target} (16 videos of 4 s)", flush=True)
        cli = ROOT / "build" / "reel"
        if cli.exists():
            subprocess.run([str(cli), "synth", "--dataset", str(target), "--videos", "16", "--seconds", "4"],
                           check=True, stdout=subprocess.DEVNULL)
        else:  # the extension's private synthesiser: same layout, no CLI needed
            synth_small(target)
    while not done.exists():  # other ranks wait for rank 0
        time.sleep(0.2)
    return target


def synth_small(target: Path) -> None:
    classes = ["class_00_juggling", "class_01_archery", "class_02_bowling", "class_03_surfing"]
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    rows = ["path,label,start,end"]
    for i in range(16):
        rel = f"{classes[i % 4]}/video_{i:05d}.mp4"
        (tmp / rel).parent.mkdir(parents=True, exist_ok=True)
        reel._testing.write_video(str(tmp / rel), width=340, height=256, frames=100, gop=250, seed=i + 1)
        rows.append(f"{rel},{classes[i % 4]},0.000000,4.000000")
    (tmp / "manifest.csv").write_text("\n".join(rows) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    tmp.rename(target)


def source_of(data: Path) -> str:
    """A folder's manifest.csv when it has one (it lists damaged files too)."""
    return str(data / "manifest.csv") if data.is_dir() and (data / "manifest.csv").exists() else str(data)


def dataset_info(source: str) -> tuple:
    """(number of videos, class names): the folder scan or manifest, no decoding."""
    info = reel.dataset_info(source)
    return info["size"], info["class_names"]


# ------------------------------------------------------------------ main
def main() -> None:
    args = parse_args()
    reel.set_ffmpeg_log_level(0)
    ddp = args.ddp or int(os.environ.get("WORLD_SIZE", "1")) > 1
    if args.device == "auto":
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    rank, world = 0, 1
    if ddp:
        import torch.distributed as dist

        if device.type == "cuda":
            device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
            torch.cuda.set_device(device)
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)
    say = (lambda *a: print(*a, flush=True)) if rank == 0 else (lambda *a: None)

    data = ensure_data(args.data, rank)
    source = source_of(data)
    num_videos, classes = dataset_info(source)
    num_classes = max(len(classes), 1)
    pin = args.pin_memory == "on" or (args.pin_memory == "auto" and device.type == "cuda")

    # One VideoDataset per rank: it takes rank and world size from torch.distributed.
    ds = rt.VideoDataset(source, frames_per_clip=args.frames, size=args.size, batch_size=args.batch,
                         crop="random", flip="random", dtype=args.dtype, mean=MEAN, std=STD,
                         seed=args.seed, decode_threads=args.threads, pin_memory=pin)
    # batch_size=None: the dataset yields whole batches (zero-copy views of reel's ring).
    loader = torch.utils.data.DataLoader(ds, batch_size=None, num_workers=args.workers)
    in_features = args.frames * 3 * args.size * args.size
    model: nn.Module = nn.Linear(in_features, num_classes).to(device)
    if ddp:
        from torch.nn.parallel import DistributedDataParallel as DDP

        model = DDP(model, device_ids=[device.index] if device.type == "cuda" else None)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)

    say(f"reel {reel.__version__}, torch {torch.__version__}, device {device}"
        f"{f', {world} ranks (DDP)' if ddp else ''}, data {data} ({num_videos} videos, {num_classes} classes)")
    say(f"model: Linear({args.frames}x3x{args.size}x{args.size} = {in_features:,} -> {num_classes}), "
        f"batch {args.batch}, {args.dtype} input, DataLoader num_workers={args.workers}, "
        f"pin_memory={'on' if pin else 'off'}")

    seen = []  # (epoch, path, clip) of each non-padded clip trained on by this rank
    padded = [0] * args.epochs  # repeated samples that even out the ranks, per epoch
    frames_total = clips_total = steps = 0
    data_s = model_s = 0.0
    t_start = time.perf_counter()
    join = model.join() if ddp else _nothing()  # ranks may end with uneven step counts (skipped batches)
    with join:
        for epoch in range(args.epochs):
            ds.set_epoch(epoch)  # needed with workers (restarted each epoch); harmless without
            t0 = time.perf_counter()
            for batch in loader:
                t1 = time.perf_counter()
                x = batch.frames.to(device, non_blocking=True)
                y = batch.labels.to(device, non_blocking=True)
                logits = model(x.flatten(1).float())
                loss = F.cross_entropy(logits, y, ignore_index=-1)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if device.type == "cuda":
                    torch.cuda.synchronize(device)  # honest model time; the batch's copy is done too
                t2 = time.perf_counter()
                data_s += t1 - t0
                model_s += t2 - t1
                steps += 1
                clips_total += x.shape[0]
                frames_total += x.shape[0] * args.frames
                for info in batch.info:
                    if info.padded:
                        padded[epoch] += 1
                    else:
                        seen.append((epoch, info.path, info.clip))
                if steps % args.log_every == 0:
                    say(f"epoch {epoch} step {steps:4d} | loss {loss.item():7.4f} | "
                        f"{frames_total / (t2 - t_start):8.1f} frames/s | "
                        f"data {t1 - t0:6.3f} s  model {t2 - t1:6.3f} s")
                del batch, x, y  # the ring buffer goes back before the next batch is asked for
                t0 = time.perf_counter()
    wall = time.perf_counter() - t_start

    m = ds.metrics()  # None when the loader ran in DataLoader workers
    ds.close()  # joins reel's threads and frees the batch ring
    last = args.epochs - 1
    in_last = len({(p, c) for e, p, c in seen if e == last})
    share = f"{in_last}/{num_videos} videos of the dataset in the last epoch" + (" (this rank)" if ddp else "")
    if m is not None:
        cov = f"{m['coverage']:.3f} ({m['successes']}/{m['attempts']} samples decoded); {share}"
        ring = m["ring_memory"]
    else:
        cov, ring = f"{share} (the loaders' metrics stay in the DataLoader workers)", "n/a"
    say(f"done: {steps} steps, {clips_total} clips, {frames_total} frames in {wall:.2f} s"
        f"{f' (rank 0 of {world})' if ddp else ''}")
    say(f"throughput: {frames_total / wall:.1f} frames/s, {clips_total / wall:.1f} clips/s reaching the loop")
    say(f"coverage: {cov}")
    say(f"data time: {data_s:.2f} s ({100 * data_s / wall:.0f}%), model time: {model_s:.2f} s "
        f"({100 * model_s / wall:.0f}%), ring memory: {ring}")
    if m is not None:
        say(f"loader: {m['frames_per_second']:.1f} frames/s decoded, bottleneck {m['bottleneck']}, "
            f"decode amplification {m['decode_amplification']:.2f}")

    if ddp:
        import torch.distributed as dist

        gathered = [None] * world
        dist.all_gather_object(gathered, {"seen": seen, "padded": padded, "frames": frames_total, "wall": wall})
        if rank == 0:
            print(f"all ranks: {sum(g['frames'] for g in gathered) / max(g['wall'] for g in gathered):.1f} "
                  f"frames/s reaching the loops", flush=True)
            for epoch in range(args.epochs):
                per_rank = [{(p, c) for e, p, c in g["seen"] if e == epoch} for g in gathered]
                disjoint = all(not (per_rank[i] & per_rank[j])
                               for i in range(world) for j in range(i + 1, world))
                union = set().union(*per_rank)
                print(f"ranks disjoint: {disjoint}, coverage of dataset: {len(union)}/{num_videos} "
                      f"(epoch {epoch}; clips per rank {[len(s) for s in per_rank]}, "
                      f"padded repeats {sum(g['padded'][epoch] for g in gathered)})", flush=True)
        # Tear down in order: every rank is past its last collective (barrier), the DDP wrapper
        # and its reducer (which hold the process group) are gone, then the group itself.
        # Leaving DDP alive until interpreter exit lets gloo's threads outlive the group and
        # can abort the process at exit ("terminate called without an active exception").
        dist.barrier()
        del model, opt
        gc.collect()
        dist.destroy_process_group()


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


if __name__ == "__main__":
    main()
