# examples/ray_train.py: training on a Ray cluster fed by reel.ray.read_clips:
# 2 CPU workers (gloo) under ray.train.torch.TorchTrainer, each iterating its
# shard with iter_torch_batches; every epoch is a new read_clips(epoch=e), so
# the clips are the ones reel.Loader would give for that seed and epoch.
#
#   python3 examples/ray_train.py [DATASET] [--address ADDRESS]
#       DATASET: a folder (class/video.mp4), a manifest, a store, an s3:// prefix;
#                none: a small synthetic dataset. ADDRESS: a running cluster
#                (default: a local one on 127.0.0.1).
from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Optional


def train_loop(config: Dict[str, Any]) -> None:
    """Runs on each Ray Train worker: a tiny model over the worker's clips."""
    import ray.train
    import torch

    rank = ray.train.get_context().get_world_rank()
    model = ray.train.torch.prepare_model(torch.nn.Linear(3, config["num_classes"]))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    for epoch in range(config["epochs"]):
        shard = ray.train.get_dataset_shard(f"epoch{epoch}")
        seen = []
        loss = torch.zeros(())
        for batch in shard.iter_torch_batches(batch_size=config["batch_size"]):
            x = batch["frames"].float().mean(dim=(1, 3, 4)) / 255  # [B, T, C, H, W] -> [B, C]
            loss = torch.nn.functional.cross_entropy(model(x), batch["label"])
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += [int(s) for s in batch["sample"]]
        if config.get("seen_dir"):  # for the test: which samples this worker trained on
            Path(config["seen_dir"], f"epoch{epoch}-rank{rank}.txt").write_text(" ".join(map(str, seen)))
        ray.train.report({"epoch": epoch, "loss": float(loss), "clips": len(seen)})


def train(source: str, *, storage: str, epochs: int = 1, batch_size: int = 8, seen_dir: Optional[str] = None,
          num_workers: int = 2, **clip_options: Any) -> Any:
    """Trains on `source` with `num_workers` CPU workers; returns the Ray Train result."""
    import ray.train
    from ray.train.torch import TorchTrainer

    import reel
    import reel.ray

    seed = clip_options.pop("seed", 0)
    datasets = {}
    for e in range(epochs):
        clips, failures = reel.ray.split_failures(reel.ray.read_clips(source, epoch=e, seed=seed, **clip_options))
        datasets[f"epoch{e}"] = clips.select_columns(list(reel.ray.TENSOR_COLUMNS))
    trainer = TorchTrainer(
        train_loop,
        train_loop_config={"epochs": epochs, "batch_size": batch_size, "seen_dir": seen_dir,
                           "num_classes": max(1, len(reel.dataset_info(source)["class_names"]))},
        scaling_config=ray.train.ScalingConfig(num_workers=num_workers, use_gpu=False),
        run_config=ray.train.RunConfig(storage_path=storage, name="reel-ray-train"),
        datasets=datasets,
    )
    return trainer.fit()


def demo_dataset() -> str:
    import reel
    import reel._testing

    root = Path(tempfile.mkdtemp()) / "dataset"
    reel.set_ffmpeg_log_level(0)
    for c in range(2):
        (root / f"class{c}").mkdir(parents=True)
        for v in range(8):  # private test helper: frames carry their index
            reel._testing.write_video(str(root / f"class{c}" / f"v{v}.mp4"), width=320, height=240, frames=50,
                                      gop=25, seed=10 * c + v + 1)
    return str(root)


def main() -> None:
    # a local cluster stays on 127.0.0.1 (Ray reads this when it is imported)
    os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    ap = argparse.ArgumentParser()
    ap.add_argument("dataset", nargs="?")
    ap.add_argument("--address", default=None, help="a running Ray cluster (default: a local one)")
    ap.add_argument("--epochs", type=int, default=2)
    a = ap.parse_args()
    source = a.dataset or demo_dataset()
    if a.address:
        ray.init(address=a.address)
    else:
        ray.init(num_cpus=4, include_dashboard=False)
    try:
        result = train(source, storage=tempfile.mkdtemp(), epochs=a.epochs, frames_per_clip=8, frame_stride=4,
                       size=112, crop="random", flip="random", seed=1)
        print(result.metrics)
    finally:
        ray.shutdown()


if __name__ == "__main__":
    main()
