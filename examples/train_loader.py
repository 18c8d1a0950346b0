# examples/train_loader.py: a training loop fed by reel.Loader: zero-copy
# batches, the loader's data/model time, a checkpoint of the loader's position and
# an exact resume, and the loader's own metrics.
#
#   python3 examples/train_loader.py [DATASET]   # a folder (class/video.mp4) or a manifest;
#                                                # none: a small synthetic dataset
import sys
import tempfile
from pathlib import Path

import torch

import reel
import reel._testing


def demo_dataset() -> str:
    root = Path(tempfile.mkdtemp()) / "dataset"
    reel.set_ffmpeg_log_level(0)
    for c in range(4):
        (root / f"class{c}").mkdir(parents=True)
        for v in range(6):  # private test helper: frames carry their index
            reel._testing.write_video(str(root / f"class{c}" / f"v{v}.mp4"), width=320, height=240,
                                    frames=50, gop=25, seed=10 * c + v + 1)
    return str(root)


def main() -> None:
    source = sys.argv[1] if len(sys.argv) > 1 else demo_dataset()
    opts = dict(frames_per_clip=8, size=112, batch_size=8, crop="random", flip="random",
                dtype="float16", mean=(0.45, 0.45, 0.45), std=(0.225, 0.225, 0.225), seed=42)
    loader = reel.Loader(source, **opts)
    print(loader, "classes:", loader.class_names)
    model = torch.nn.Linear(3, max(1, len(loader.class_names)))  # a toy: mean colour -> class
    optim = torch.optim.SGD(model.parameters(), lr=0.1)

    checkpoint, after_checkpoint = None, None
    with loader:
        for epoch in range(2):
            for batch in loader:
                x, y = batch.torch()                     # [B, T, C, H, W] float16, [B] int64; no copy
                logits = model(x.float().mean(dim=(1, 3, 4)))
                loss = torch.nn.functional.cross_entropy(logits, y.clamp(min=0))
                optim.zero_grad()
                loss.backward()
                optim.step()
                if epoch == 0 and batch.index == 0:
                    checkpoint = loader.state_dict()     # where the next batch starts
                elif epoch == 0 and batch.index == 1:
                    after_checkpoint = [c.frame_indices for c in batch.info]
            print(f"epoch {epoch}: loss {loss.item():.3f}")
        m = loader.metrics()
        print(f"loader: {m['clips']} clips, coverage {m['coverage']:.2f}, data time {m['data_time_s']:.2f} s, "
              f"model time {m['model_time_s']:.2f} s, bottleneck {m['bottleneck']}, "
              f"ring {m['ring_bytes'] >> 20} MiB")

    # Resume from the checkpoint in a new loader (any thread count): same batches.
    with reel.Loader(source, decode_threads=1, **opts) as again:
        again.load_state_dict(checkpoint)
        batch = again.next_batch()
        assert [c.frame_indices for c in batch.info] == after_checkpoint
        print("resumed at", checkpoint, "-> same clips as the first run")


if __name__ == "__main__":
    main()
