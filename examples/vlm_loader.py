# examples/vlm_loader.py: whole videos for a Qwen-VL-style model, batched by
# reel.Loader (sampler="fps" + a pixel-budget size_policy: every sample its
# own length and size), then a Qwen2-VL-style collate: rescale, normalise with
# CLIP's mean/std, cut each video into 2x14x14 patches in the order of the
# 2x2 spatial merge, and concatenate them with each video's (t, h, w) grid,
# as Qwen2VLImageProcessor's pixel_values_videos / video_grid_thw.
#
#   python3 examples/vlm_loader.py [VIDEO...]   # none: synthetic videos
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, List

import torch

import reel
import reel._testing

PATCH, MERGE, TEMPORAL = 14, 2, 2
MEAN = torch.tensor([0.48145466, 0.4578275, 0.40821073]).view(1, 3, 1, 1)
STD = torch.tensor([0.26862954, 0.26130258, 0.27577711]).view(1, 3, 1, 1)


def patchify(video: torch.Tensor) -> torch.Tensor:
    """[T, 3, H, W] uint8 -> [t*h*w, 3*2*14*14] float32 patches, Qwen2-VL's order."""
    x = (video.float() / 255.0 - MEAN) / STD
    if x.shape[0] % TEMPORAL:  # the fps sampler gives even counts; repeat the last frame otherwise
        x = torch.cat([x, x[-1:].expand(TEMPORAL - x.shape[0] % TEMPORAL, -1, -1, -1)])
    T, C, H, W = x.shape
    gt, gh, gw = T // TEMPORAL, H // PATCH, W // PATCH
    x = x.reshape(gt, TEMPORAL, C, gh // MERGE, MERGE, PATCH, gw // MERGE, MERGE, PATCH)
    x = x.permute(0, 3, 6, 4, 7, 2, 1, 5, 8)
    return x.reshape(gt * gh * gw, C * TEMPORAL * PATCH * PATCH)


def collate(batch: reel.Batch) -> Dict[str, Any]:
    """One reel batch -> the processor's video inputs (the views are read,
    not kept: the ring buffer goes back when `batch` is freed)."""
    patches: List[torch.Tensor] = []
    grids = []
    for frames in batch.frames:
        v = frames.torch()  # [T, 3, H, W], a view of the ring
        patches.append(patchify(v))
        grids.append((v.shape[0] // TEMPORAL, v.shape[2] // PATCH, v.shape[3] // PATCH))
    return {
        "pixel_values_videos": torch.cat(patches),
        "video_grid_thw": torch.tensor(grids, dtype=torch.int64),
        "labels": batch.labels.torch().clone(),
        "paths": [c.path for c in batch.info],
    }


def main() -> None:
    paths = sys.argv[1:]
    if not paths:
        tmp = Path(tempfile.mkdtemp())
        reel.set_ffmpeg_log_level(0)
        shapes = [(640, 360, 240), (360, 640, 150), (480, 480, 300), (320, 240, 90)]
        for k, (w, h, n) in enumerate(shapes):  # private test helper: frames carry their index
            p = tmp / f"v{k}.mp4"
            reel._testing.write_video(str(p), width=w, height=h, frames=n, gop=60, seed=k + 1)
            paths.append(str(p))
    size_policy = {"factor": PATCH * MERGE, "min_pixels": 128 * 28 * 28, "max_pixels": 768 * 28 * 28,
                   "total_pixels": 4096 * 28 * 28}
    with reel.Loader(paths, sampler="fps", fps=2, min_frames=4, max_frames=768, size_policy=size_policy,
                     batch_size=2, shuffle=True, seed=0, epochs=1) as loader:
        for batch in loader:
            inputs = collate(batch)
            tokens = int((inputs["video_grid_thw"].prod(dim=1) // (MERGE * MERGE)).sum())
            print(f"batch {batch.index}: lengths {batch.lengths}, sizes {batch.sizes} -> "
                  f"pixel_values_videos {tuple(inputs['pixel_values_videos'].shape)}, "
                  f"video_grid_thw {inputs['video_grid_thw'].tolist()}, {tokens} video tokens")
        m = loader.metrics()
    print(f"{m['frames']} frames in {m['seconds']:.2f} s, ring {m['ring_bytes'] / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
