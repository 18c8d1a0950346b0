# examples/clip_dataset.py: reel inside a standard torch DataLoader with worker
# processes: a map-style dataset of videos returning sampled clips.
#
#   python3 examples/clip_dataset.py [VIDEO...]   # none: synthetic videos
import sys
import tempfile
from pathlib import Path

import torch

import reel
import reel._testing
import reel.torch


def main() -> None:
    paths = sys.argv[1:]
    if not paths:
        tmp = Path(tempfile.mkdtemp())
        reel.set_ffmpeg_log_level(0)
        for k in range(8):  # private test helper: frames carry their index
            p = tmp / f"v{k}.mp4"
            reel._testing.write_video(str(p), width=320, height=240, frames=60, gop=30, seed=k + 1)
            paths.append(str(p))
    videos = [(p, k % 2) for k, p in enumerate(paths)]
    ds = reel.torch.ClipDataset(
        videos,
        sampler="random",
        sampler_args=dict(num_clips=2, num_frames_per_clip=8, num_indices_between_frames=2),
        decoder_args=dict(size=(112, 112), threads=1),
    )
    dl = torch.utils.data.DataLoader(ds, batch_size=4, num_workers=2, shuffle=True)
    for clips, labels in dl:
        print(clips.shape, clips.dtype, labels.tolist())  # [4, 2, 8, 3, 112, 112]


if __name__ == "__main__":
    main()
