# examples/decode_frames.py: reel.VideoDecoder in a few lines: metadata, exact
# frames by index and by time, clip samplers, zero-copy hand-off to torch/numpy.
#
#   python3 examples/decode_frames.py [VIDEO]     # no VIDEO: a synthetic one
import sys
import tempfile
from pathlib import Path

import reel
import reel._testing


def main() -> None:
    if len(sys.argv) > 1:
        path = sys.argv[1]
    else:  # a 3-second test video whose frames carry their index (private test helper)
        path = str(Path(tempfile.mkdtemp()) / "demo.mp4")
        reel.set_ffmpeg_log_level(0)
        reel._testing.write_video(path, width=320, height=240, frames=75, gop=25)

    with reel.VideoDecoder(path, size=(224, 224)) as dec:
        m = dec.metadata
        print(f"{path}: {m.codec} {m.width}x{m.height}, {m.num_frames} frames, "
              f"{m.average_fps:.2f} fps, {m.duration_seconds:.2f} s, keyframes {dec.keyframes[:8]}")

        frames = dec.get_frames_at([0, 10, -1])          # one batched call, GIL released
        print("by index:", frames, "indices", frames.indices, "pts", frames.pts_seconds)
        print("cost:", dec.stats)

        at = dec.get_frames_played_at([0.5, 1.0])
        print("by time:", at.shape, "indices", at.indices)

        clips = reel.clips_at_random_indices(dec, num_clips=2, num_frames_per_clip=8, seed=0)
        print("clips:", clips.shape, clips.layout, clips.indices)

        try:
            import torch
        except ImportError:
            print("torch not installed: skipping the DLPack hand-off")
            return
        x = torch.from_dlpack(clips)                      # zero-copy
        assert x.data_ptr() == clips.data_ptr
        print("torch:", x.shape, x.dtype, "mean", x.float().mean().item())


if __name__ == "__main__":
    main()
