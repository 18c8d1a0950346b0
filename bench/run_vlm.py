#!/usr/bin/env python3
"""Long videos for video-language models (issue 18, section 5): qwen-vl-utils
0.0.14's fetch_video against reel.vlm.fetch_video on long x264 videos.

    nice python3 bench/run_vlm.py [--scale 1.0] [--repeat 1] [--write-doc]

Generates (once, into --data-dir) three long videos with x264 at GOP 250 as
in the issue (720p30 120 s, 360p25 300 s, 1080p30 60 s; --scale shortens
them) and adds one from the shared set (karma.mp4). Every (tool, video) runs
in a fresh process, which reports wall seconds, CPU seconds and peak RSS
(VmHWM) for one fetch_video of the default element ({"video": path}: fps 2,
4-768 frames, the default pixel budget):

    qwen decord      qwen-vl-utils with FORCE_QWENVL_VIDEO_READER=decord
    qwen torchcodec  the same with torchcodec (reported when not installable)
    reel t=1         reel.vlm.fetch_video(threads=1): one decoder context
    reel t=2         threads=2: GOP-parallel, two decoder contexts
    reel ffmpeg-t=0  threads=0: one context with FFmpeg's frame threading
    reel uint8 t=2   dtype="uint8", threads=2

qwen-vl-utils is imported from the test reference folder (.deps/vlm-ref,
scripts/deps.sh --test) or the environment, with torchvision's CUDA-only
operators tolerated as in tests/python/test_vlm.py.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("REEL_SHARED_VIDEOS") or ROOT.parent / "shared" / "videos")

LONG = [  # name, width, height, fps, seconds
    ("720p30_120s", 1280, 720, 30, 120),
    ("360p25_300s", 640, 360, 25, 300),
    ("1080p30_60s", 1920, 1080, 30, 60),
]

CHILD = r'''
import json, os, sys, time, resource
tool, path, ref = sys.argv[1], sys.argv[2], sys.argv[3]
def peak_mb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
if tool.startswith("qwen"):
    os.environ["FORCE_QWENVL_VIDEO_READER"] = tool.split()[1]
    if os.path.isdir(ref):
        sys.path.append(ref)
    import torch, torch.library
    orig = torch.library.register_fake
    def tolerant(op, *a, **k):
        try:
            d = orig(op, *a, **k)
        except RuntimeError:
            return a[0] if a else (lambda f: f)
        if a:
            return d
        def w(f):
            try:
                return d(f)
            except RuntimeError:
                return f
        return w
    torch.library.register_fake = tolerant
    from qwen_vl_utils import vision_process as vp
    torch.library.register_fake = orig
    if tool.split()[1] == "torchcodec":
        import torchcodec.decoders  # noqa: F401  (fails here when it cannot load)
    fetch = lambda: vp.fetch_video({"video": path}, return_video_metadata=True)
else:
    import torch
    import reel.vlm
    _, threads, dtype = tool.split()
    fetch = lambda: reel.vlm.fetch_video({"video": path}, return_video_metadata=True,
                                         threads=int(threads), dtype=dtype)
base = peak_mb()
c0 = time.process_time(); t0 = time.perf_counter()
video, meta = fetch()
wall = time.perf_counter() - t0; cpu = time.process_time() - c0
print(json.dumps(dict(wall=wall, cpu=cpu, peak_mb=peak_mb(), base_mb=base, shape=list(video.shape),
                      out_mb=video.numel() * video.element_size() / 2**20, backend=meta.get("video_backend"),
                      indices=list(meta["frames_indices"])[:3] + list(meta["frames_indices"])[-3:])))
'''

TOOLS = ["qwen decord", "qwen torchcodec", "reel 1 float32", "reel 2 float32", "reel 0 float32", "reel 2 uint8"]
LABEL = {"qwen decord": "qwen-vl-utils, decord", "qwen torchcodec": "qwen-vl-utils, torchcodec",
         "reel 1 float32": "reel.vlm threads=1", "reel 2 float32": "reel.vlm threads=2 (GOP-parallel)",
         "reel 0 float32": "reel.vlm threads=0 (FFmpeg frame threads)", "reel 2 uint8": "reel.vlm uint8 threads=2"}


def make_video(path: Path, w: int, h: int, fps: int, seconds: float) -> None:
    if path.exists():
        return
    tmp = path.with_suffix(".tmp.mp4")
    cmd = ["ffmpeg", "-v", "error", "-y", "-f", "lavfi", "-i",
           f"testsrc2=size={w}x{h}:rate={fps},noise=alls=12:allf=t", "-t", str(seconds),
           "-c:v", "libx264", "-preset", "veryfast", "-g", "250", "-keyint_min", "250", "-sc_threshold", "0",
           "-bf", "2", "-pix_fmt", "yuv420p", str(tmp)]
    subprocess.run(cmd, check=True)
    tmp.rename(path)


def run(tool: str, path: Path, ref: str) -> dict:
    p = subprocess.run([sys.executable, "-c", CHILD, tool, str(path), ref], capture_output=True, text=True,
                       timeout=1800)
    if p.returncode != 0:
        err = (p.stderr.strip().splitlines() or ["?"])[-1]
        return {"error": err[:160]}
    return json.loads(p.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data-dir", default="/tmp/reel-vlm-bench")
    ap.add_argument("--scale", type=float, default=1.0, help="video length factor (1.0: the issue's lengths)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per (tool, video); the fastest is kept")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--write-doc", action="store_true", help="replace the section in docs/BENCHMARKS.md")
    a = ap.parse_args()
    ref = os.environ.get("REEL_VLM_REF") or str(ROOT / ".deps" / "vlm-ref")
    data = Path(a.data_dir)
    data.mkdir(parents=True, exist_ok=True)
    videos = []
    for name, w, h, fps, sec in LONG:
        s = max(4.0, sec * a.scale)
        p = data / f"{name}_x{a.scale:g}.mp4"
        make_video(p, w, h, fps, s)
        videos.append((f"{w}x{h} {fps} fps {s:g} s", p))
    if (SHARED / "karma.mp4").exists():
        videos.append(("karma.mp4 854x480 (shared)", SHARED / "karma.mp4"))
    tools = a.tools.split(",")
    rows = []
    for label, path in videos:
        for tool in tools:
            best = None
            for _ in range(a.repeat):
                r = run(tool, path, ref)
                if "error" in r:
                    best = r
                    break
                if best is None or r["wall"] < best["wall"]:
                    best = r
            rows.append((label, tool, best))
            print(label, "|", LABEL[tool], "|", json.dumps(best), flush=True)
    lines = table(rows, videos, tools)
    print("\n".join(lines))
    if a.write_doc:
        write_doc(lines, a)


def table(rows, videos, tools) -> list:
    out = ["| video | tool | frames x size | s / video | CPU s | peak RSS MB | output MB | x fastest qwen |",
           "|---|---|---|---:|---:|---:|---:|---:|"]
    for label, _ in videos:
        mine = [(t, r) for (v, t, r) in rows if v == label]
        qwen = [r["wall"] for t, r in mine if t.startswith("qwen") and "error" not in r]
        fastest = min(qwen) if qwen else None
        for t, r in mine:
            if "error" in r:
                out.append(f"| {label} | {LABEL[t]} | | not run: {r['error']} | | | | |")
                continue
            shape = r["shape"]
            x = f"{fastest / r['wall']:.2f}" if fastest else ""
            out.append(f"| {label} | {LABEL[t]} | {shape[0]} x {shape[2]}x{shape[3]} | {r['wall']:.2f} | "
                       f"{r['cpu']:.2f} | {r['peak_mb']:.0f} | {r['out_mb']:.0f} | {x} |")
    return out


def write_doc(lines, a) -> None:
    doc = ROOT / "docs" / "BENCHMARKS.md"
    text = doc.read_text()
    head = "## Long videos and VLM"
    cmd = f"nice python3 bench/run_vlm.py --scale {a.scale:g} --repeat {a.repeat} --write-doc"
    body = (f"{head}\n\n`{cmd}` ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, shared machine; "
            "one fetch_video per fresh process, default element: fps 2, default pixel budget; "
            "x264 GOP 250 generated videos plus one shared video):\n\n" + "\n".join(lines) + "\n")
    if head in text:
        start = text.index(head)
        nxt = text.find("\n## ", start + len(head))
        text = text[:start] + body + (text[nxt:] if nxt >= 0 else "")
    else:
        text = text.rstrip("\n") + "\n\n" + body
    doc.write_text(text)


if __name__ == "__main__":
    if not shutil.which("ffmpeg"):
        sys.exit("the ffmpeg CLI is needed to generate the videos")
    main()
