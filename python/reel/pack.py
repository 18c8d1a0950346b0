# reel/pack.py: `python -m reel.pack SOURCE OUT_DIR [options]`, the store
# builder for one machine or for N of them: under torchrun (or any launcher
# that sets RANK and WORLD_SIZE) `--part auto` builds this rank's part, the
# ranks wait for each other, and rank 0 writes the index.
from __future__ import annotations

import argparse
import json
import sys
from typing import List, Optional

from ._store import pack, parse_size

__all__ = ["pack", "main"]


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m reel.pack", description="Decode a dataset once into a packed store.")
    ap.add_argument("source")
    ap.add_argument("out_dir")
    ap.add_argument("--size", default="256", help="short side S, WxH, or source (each video's own size)")
    ap.add_argument("--fps", type=float, default=0.0)
    ap.add_argument("--every", type=int, default=1)
    ap.add_argument("--sampler", choices=["fps", "count"], default=None,
                    help="whole-video sampling, qwen-vl-utils' frame choice (see reel pack --help)")
    ap.add_argument("--min-frames", type=int, default=4)
    ap.add_argument("--max-frames", type=int, default=768)
    ap.add_argument("--frames", type=int, default=0)
    ap.add_argument("--frame-factor", type=int, default=2)
    ap.add_argument("--format", choices=["jpeg", "raw", "h264"], default="jpeg")
    ap.add_argument("--quality", type=int, default=90)
    ap.add_argument("--zstd", type=int, default=0, metavar="LEVEL")
    ap.add_argument("--gop", type=int, default=8)
    ap.add_argument("--shard-size", type=int, default=1 << 30)
    ap.add_argument("--threads", type=int, default=0)
    ap.add_argument("--part", default=None, help="I/N, or auto (RANK, WORLD_SIZE)")
    ap.add_argument("--wait", type=float, default=86400.0, help="seconds a part waits for the others (default 1 day)")
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    size = parse_size(a.size)
    rep = pack(a.source, a.out_dir, size=size, fps=a.fps, every=a.every, format=a.format, quality=a.quality,
               zstd_level=a.zstd, gop=a.gop, shard_size=a.shard_size, threads=a.threads, part=a.part,
               progress=sys.stderr.isatty(), wait_for_parts=a.wait, sampler=a.sampler, min_frames=a.min_frames,
               max_frames=a.max_frames, frames=a.frames, frame_factor=a.frame_factor)
    print(json.dumps(rep) if a.json else f"{a.out_dir}: {rep}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
