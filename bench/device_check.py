#!/usr/bin/env python3
"""bench/device_check.py --out DIR [--build build-cuda]: the checks of
scripts/device_check.sh (issue 30; docs/GPU.md), standard library only.

Each check runs, or is reported as skipped with the reason it cannot run
here. Correctness first (exit status 1 if any that ran failed), then the
benchmarks, each against the CPU in the same run:

  gpu_kernel_equals_cpu   build-cuda's test_cuda_emulate and
                          test_cuda_formats on the GPU: the conversion kernel
                          equal to the CPU converter, bit for bit, on real
                          frames (RGB, gray, uint16, 8- to 16-bit sources,
                          rotations); the device memory pool constant over
                          1,000 calls
  gpu_decoder_equals_cpu  build-cuda's test_gpu_decoder on the GPU (the
                          machine's driver, NVDEC included): reel's decoder
                          with device="cuda", frames equal to the CPU
                          decoder's RGB bit for bit on shared videos of
                          H.264, HEVC 8/10-bit, VP9, AV1 under resizes, crops,
                          flips, float dtypes; device memory flat over 1,000
                          calls; frames outliving their decoder
  nvdec_yuv_equals_cpu    every shared video whose codec NVDEC decodes:
                          FFmpeg's CUDA hwaccel (what reel's decoder will use)
                          gives the CPU decoder's YUV, frame for frame (md5)
  nvdec_decode_fps        decode-only frames/s of 1080p H.264 and HEVC, NVDEC
                          against the CPU decoder on all cores
  reel_gpu_decode_fps     reel's VideoDecoder(device="cuda") on the same clips
                          (decode + RGB on the GPU) against device="cpu", with
                          its NVDEC / uploaded frame counts (needs a reel
                          Python package whose libreel carries the kernels)
  torchcodec_cuda_fps     torchcodec's CUDA decoder on the same clips
  gpu_loader_equals_cpu   reel.Loader(device="cuda") on the 1080p clips below:
                          its batches (copied back with .cpu()) equal to the
                          CPU Loader's, batch for batch, bit for bit
                          (uint8 and float32 normalised)
  gpu_loader_fps          then samples/s of both Loaders in the same run (the
                          CPU one on all the machine's cores), with the GPU
                          Loader's NVDEC / uploaded frame counts
  gpu_store_equals_cpu    reel.Loader(store, device="cuda") over a packed
                          store (JPEG records, made here with reel.pack from
                          generated 640x360 videos; no NVDEC needed: records
                          are decoded on the CPU and uploaded): batches equal
                          to the CPU Loader's over the same store, bit for bit
                          (uint8 random crop + flip, float32 normalised)
  gpu_store_fps           then samples/s of both store Loaders in the same
                          run, with the bytes uploaded and the host staging
  torch_dlpack_frames     torch.from_dlpack of a GPU Frames (VideoDecoder(
                          device="cuda"), uint8 and float32) is a CUDA tensor
                          equal to its .cpu(), on torch's current stream and
                          inside `with torch.cuda.stream(s)` (torch passes s
                          to __dlpack__(stream=), and reel makes s wait for
                          its write); reel.torch.as_tensor shares its memory
  torch_dlpack_batch      the same for reel.Loader(device="cuda") batches'
                          frames (uint8 and float32 normalised), and
                          Batch.torch() shares the batch's memory
  torch_wrappers_no_copy  reel.torch.TorchLoader(loader, device="cuda") and
                          VideoDataset(device="cuda") hand out the batch's own
                          device memory: TorchLoader's tensor has the batch's
                          data_ptr, and torch's allocator grows by less than
                          a batch for either (these three need torch with
                          CUDA: skipped, with the reason, without)
  gpu_vlm_equals_cpu      reel.vlm.fetch_video(ele, device="cuda") (after_rgb:
                          RGB, then the bicubic RGB resize, on the GPU) equal
                          to the CPU's tensor bit for bit (float32 and uint8)
                          on shared videos (8- and 10-bit, full range) and the
                          1080p clips, with each side's seconds per call
                          (needs torch with CUDA and a reel package with the
                          kernels)

Writes DIR/device_check.json and DIR/device_check.md."""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parents[1]
NVDEC_CODECS = {"h264", "hevc", "vp9", "av1", "mpeg2video", "vp8", "mpeg4", "vc1", "mjpeg"}
EXACT_CODECS = {"h264", "hevc", "vp9", "av1"}  # bit-exact decoding by specification
YUV = {"yuv420p": "yuv420p", "yuvj420p": "yuvj420p", "yuv420p10le": "yuv420p10le"}


class Report:
    def __init__(self) -> None:
        self.checks: List[Dict[str, Any]] = []

    def add(self, name: str, status: str, why: str = "", **data: Any) -> None:
        self.checks.append({"name": name, "status": status, "why": why, **data})
        line = f"{name}: {status}" + (f" ({why})" if why else "")
        extra = {k: v for k, v in data.items() if k != "details"}
        print(f"device_check: {line}" + (f" {json.dumps(extra)}" if extra else ""), flush=True)


def run(cmd: List[str], timeout: float = 300, env: Optional[Dict[str, str]] = None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


def run_with_reel(code: str, args: Sequence[object], timeout: float) -> subprocess.CompletedProcess:
    """python -c code args, with the reel under check (REEL_DEVICE_CHECK_SITE) first on its path."""
    env = dict(os.environ)
    site = os.environ.get("REEL_DEVICE_CHECK_SITE")
    if site:
        env["PYTHONPATH"] = site + os.pathsep + env.get("PYTHONPATH", "")
    return run([sys.executable, "-c", code, *map(str, args)], timeout, env)


def can_load(name: str) -> Optional[str]:
    """None if the library loads, else why not."""
    try:
        ctypes.CDLL(name)
        return None
    except OSError as e:
        return str(e)


def gpu_info() -> Optional[Dict[str, str]]:
    smi = shutil.which("nvidia-smi")
    if not smi:
        return None
    r = run([smi, "--query-gpu=name,driver_version,memory.total,clocks.max.sm", "--format=csv,noheader"], 60)
    if r.returncode != 0 or not r.stdout.strip():
        return None
    name, driver, mem, clock = [x.strip() for x in r.stdout.strip().splitlines()[0].split(",")]
    return {"name": name, "driver": driver, "memory": mem, "max_sm_clock": clock}


def ffmpeg_has_cuda(ffmpeg: str) -> bool:
    r = run([ffmpeg, "-hide_banner", "-hwaccels"], 60)
    return r.returncode == 0 and "cuda" in r.stdout.split()


def manifest(videos: Path) -> List[Dict[str, str]]:
    path = videos / "MANIFEST.tsv"
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    head = lines[0].split("\t")
    return [dict(zip(head, line.split("\t"))) for line in lines[1:] if line.strip()]


def frame_md5s(ffmpeg: str, video: Path, pix_fmt: str, hw: bool) -> List[str]:
    """Per-frame md5 of the decoded YUV in pix_fmt (NVDEC's NV12/P010
    downloaded and repacked losslessly)."""
    cmd = [ffmpeg, "-nostdin", "-v", "error"]
    if hw:
        cmd += ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"]
    cmd += ["-i", str(video), "-map", "0:v:0"]
    if hw:
        down = "p010le" if "10" in pix_fmt else "nv12"
        cmd += ["-vf", f"hwdownload,format={down},format={pix_fmt}"]
    cmd += ["-pix_fmt", pix_fmt, "-f", "framemd5", "-"]
    r = run(cmd, 300)
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-400:])
    return [line.split(",")[-1].strip() for line in r.stdout.splitlines() if line and not line.startswith("#")]


def check_kernel(rep: Report, build: Path, videos: Path, no_gpu: Optional[str]) -> None:
    # test_cuda_emulate: RGB of 8/10-bit; test_cuda_formats: gray, uint16,
    # 12/16-bit and gray sources, rotations. Both must pass.
    exes = [build / "tests" / name for name in ("test_cuda_emulate", "test_cuda_formats")]
    if no_gpu:
        rep.add("gpu_kernel_equals_cpu", "skipped", no_gpu)
        return
    missing = [str(e) for e in exes if not e.is_file()]
    if missing:
        rep.add("gpu_kernel_equals_cpu", "skipped", f"no {', '.join(missing)} (build it: make cuda)")
        return
    env = dict(os.environ, REEL_SHARED_VIDEOS=str(videos))
    details, states = [], []
    for exe in exes:
        r = run([str(exe), "gpu_kernel_equals_cpu"], 400, env)
        out = r.stdout + r.stderr
        last = [line for line in out.splitlines() if "gpu_kernel_equals_cpu" in line]
        details.append(f"{exe.name}:\n" + "\n".join(out.splitlines()[-12:]))
        if last and last[-1].startswith("PASS"):
            states.append(("passed", ""))
        elif last and last[-1].startswith("SKIP"):
            states.append(("skipped", last[-1].split(":", 1)[-1].strip()))
        else:
            states.append(("failed", "see details"))
    detail = "\n".join(details)
    for state in ("failed", "skipped"):
        hit = [why for st, why in states if st == state]
        if hit:
            rep.add("gpu_kernel_equals_cpu", state, hit[0], details=detail)
            return
    rep.add("gpu_kernel_equals_cpu", "passed", "", details=detail)


def check_gpu_decoder(rep: Report, build: Path, videos: Path, no_gpu: Optional[str]) -> None:
    exe = build / "tests" / "test_gpu_decoder"
    if no_gpu:
        rep.add("gpu_decoder_equals_cpu", "skipped", no_gpu)
        return
    if not exe.is_file():
        rep.add("gpu_decoder_equals_cpu", "skipped", f"no {exe} (build it: make cuda)")
        return
    env = dict(os.environ, REEL_SHARED_VIDEOS=str(videos), REEL_GPU_DECODER_REAL="1")
    try:
        r = run([str(exe)], 400, env)
    except subprocess.TimeoutExpired:
        rep.add("gpu_decoder_equals_cpu", "failed", "timed out after 400 s")
        return
    out = (r.stdout + r.stderr).splitlines()
    results = [line for line in out if line.startswith(("PASS", "FAIL", "SKIP"))]
    counts = [line for line in out if "frames by NVDEC" in line]
    failed = [line for line in results if line.startswith("FAIL")]
    passed = [line for line in results if line.startswith("PASS")]
    detail = "\n".join(results + counts + out[-8:])
    if failed or r.returncode != 0:
        rep.add("gpu_decoder_equals_cpu", "failed", f"{len(failed)} test(s) failed", details=detail)
    elif not passed:
        rep.add("gpu_decoder_equals_cpu", "skipped", results[0].split(":", 1)[-1].strip() if results else "no result",
                details=detail)
    else:
        rep.add("gpu_decoder_equals_cpu", "passed", "", tests=len(passed), nvdec=counts, details=detail)


def bench_reel(rep: Report, clips: List[Path], no_gpu: Optional[str]) -> None:
    if no_gpu:
        rep.add("reel_gpu_decode_fps", "skipped", no_gpu)
        return
    if not clips:
        rep.add("reel_gpu_decode_fps", "skipped", "no benchmark clips (see nvdec_decode_fps)")
        return
    code = (
        "import sys, time, reel\n"
        "for p in sys.argv[1:]:\n"
        "    row = [p]\n"
        "    for dev in ('cuda', 'cpu'):\n"
        "        d = reel.VideoDecoder(p, device=dev)\n"
        "        t0 = time.perf_counter(); n = 0; nv = up = 0\n"
        "        for i in range(0, len(d), 32):\n"
        "            b = d.get_frames_in_range(i, min(i + 32, len(d))); n += b.shape[0]\n"
        "            nv += d.stats.frames_nvdec; up += d.stats.frames_uploaded\n"
        "        row += [n / (time.perf_counter() - t0), nv, up, d.upload_reason or '']\n"
        "    print('\\t'.join(map(str, row)))\n"
    )
    try:
        r = run_with_reel(code, clips, 300)
    except subprocess.TimeoutExpired:
        rep.add("reel_gpu_decode_fps", "failed", "timed out after 300 s")
        return
    if r.returncode != 0:
        rep.add("reel_gpu_decode_fps", "skipped", f"reel's CUDA decoder does not run here: {r.stderr.strip()[-300:]}")
        return
    rows = []
    for line in r.stdout.splitlines():
        p, gfps, nv, up, why, cfps, _, _, _ = (line.split("\t") + [""] * 9)[:9]
        rows.append({"clip": Path(p).name, "gpu_fps": round(float(gfps), 1), "cpu_fps": round(float(cfps), 1),
                     "ratio": round(float(gfps) / float(cfps), 2), "frames_nvdec": int(nv),
                     "frames_uploaded": int(up), "upload_reason": why})
    rep.add("reel_gpu_decode_fps", "measured", "get_frames_in_range, batches of 32, RGB uint8 CHW", rows=rows)


def check_nvdec_exact(rep: Report, ffmpeg: Optional[str], videos: Path, no_nvdec: Optional[str]) -> None:
    if no_nvdec:
        rep.add("nvdec_yuv_equals_cpu", "skipped", no_nvdec)
        return
    assert ffmpeg
    results, bad = [], 0
    for row in manifest(videos):
        codec, fmt, name = row.get("codec", ""), row.get("pix_fmt", ""), row.get("file", "")
        if codec not in EXACT_CODECS or fmt not in YUV:
            continue
        try:
            cpu = frame_md5s(ffmpeg, videos / name, YUV[fmt], hw=False)
            gpu = frame_md5s(ffmpeg, videos / name, YUV[fmt], hw=True)
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            results.append({"file": name, "codec": codec, "result": f"NVDEC did not decode it: {e}"})
            continue
        same = sum(a == b for a, b in zip(cpu, gpu))
        ok = len(cpu) == len(gpu) and same == len(cpu)
        bad += not ok
        results.append({"file": name, "codec": codec, "frames": len(cpu), "gpu_frames": len(gpu), "equal": same})
    if not results:
        rep.add("nvdec_yuv_equals_cpu", "skipped", f"no shared video of {sorted(EXACT_CODECS)} in {videos}")
        return
    rep.add("nvdec_yuv_equals_cpu", "failed" if bad else "passed", f"{bad} video(s) differ" if bad else "",
            videos=results)


def make_clip(ffmpeg: str, out: Path, codec: str, frames: int) -> Optional[str]:
    if out.is_file():
        return None
    enc = {"h264": ["-c:v", "libx264", "-preset", "ultrafast"], "hevc": ["-c:v", "libx265", "-preset", "ultrafast"]}
    r = run([ffmpeg, "-nostdin", "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=size=1920x1080:rate=30",
             "-frames:v", str(frames), *enc[codec], "-g", "60", "-pix_fmt", "yuv420p", str(out)], 300)
    return None if r.returncode == 0 else r.stderr.strip()[-300:]


def decode_fps(ffmpeg: str, clip: Path, frames: int, hw: bool) -> float:
    cmd = [ffmpeg, "-nostdin", "-v", "error"]
    cmd += ["-hwaccel", "cuda", "-hwaccel_output_format", "cuda"] if hw else ["-threads", str(os.cpu_count() or 1)]
    cmd += ["-i", str(clip), "-map", "0:v:0", "-f", "null", "-"]
    t0 = time.perf_counter()
    r = run(cmd, 300)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(r.stderr.strip()[-300:])
    return frames / dt


def bench_decode(rep: Report, ffmpeg: Optional[str], out: Path, no_nvdec: Optional[str], frames: int) -> List[Path]:
    clips: List[Path] = []
    if no_nvdec:
        rep.add("nvdec_decode_fps", "skipped", no_nvdec)
        return clips
    assert ffmpeg
    rows = []
    for codec in ("h264", "hevc"):
        clip = out / f"bench_1080p_{codec}.mp4"
        why = make_clip(ffmpeg, clip, codec, frames)
        if why:
            rows.append({"codec": codec, "result": f"cannot encode the clip: {why}"})
            continue
        clips.append(clip)
        try:
            gpu = decode_fps(ffmpeg, clip, frames, hw=True)
            cpu = decode_fps(ffmpeg, clip, frames, hw=False)
            rows.append({"codec": codec, "frames": frames, "nvdec_fps": round(gpu, 1), "cpu_fps": round(cpu, 1),
                         "ratio": round(gpu / cpu, 2), "cpu_threads": os.cpu_count()})
        except (RuntimeError, subprocess.TimeoutExpired) as e:
            rows.append({"codec": codec, "result": str(e)})
    rep.add("nvdec_decode_fps", "measured", "FFmpeg's CLI (the hwaccel reel's decoder will use), 1080p testsrc2",
            rows=rows)
    return clips


def bench_torchcodec(rep: Report, clips: List[Path], no_gpu: Optional[str], frames: int) -> None:
    if no_gpu:
        rep.add("torchcodec_cuda_fps", "skipped", no_gpu)
        return
    code = (
        "import sys, time, torch\n"
        "from torchcodec.decoders import VideoDecoder\n"
        "assert torch.cuda.is_available(), 'torch sees no GPU'\n"
        "for p in sys.argv[1:]:\n"
        "    d = VideoDecoder(p, device='cuda')\n"
        "    t0 = time.perf_counter(); n = 0\n"
        "    for i in range(0, len(d), 32):\n"
        "        b = d.get_frames_in_range(i, min(i + 32, len(d))); n += b.data.shape[0]\n"
        "    torch.cuda.synchronize(); print(p, n / (time.perf_counter() - t0))\n"
    )
    if not clips:
        rep.add("torchcodec_cuda_fps", "skipped", "no benchmark clips (see nvdec_decode_fps)")
        return
    r = run([sys.executable, "-c", code, *map(str, clips)], 300)
    if r.returncode != 0:
        rep.add("torchcodec_cuda_fps", "skipped", f"torchcodec's CUDA decoder does not run: {r.stderr.strip()[-300:]}")
        return
    rows = [{"clip": Path(p).name, "fps": round(float(f), 1)} for p, f in (line.split() for line in r.stdout.split("\n") if line)]
    rep.add("torchcodec_cuda_fps", "measured", "get_frames_in_range, batches of 32, RGB on the GPU", rows=rows)


GPU_LOADER_CODE = """
import json, os, sys, time
import numpy as np
import reel
clips = sys.argv[1:]
common = dict(frames_per_clip=16, size=224, batch_size=8, seed=3, epochs=1)
out = {"equal": [], "fps": {}}
for kw in ({}, {"dtype": "float32", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)}):
    got = {}
    for dev in ("cuda", "cpu"):
        with reel.Loader(clips * 2, device=dev, **common, **kw) as ld:
            got[dev] = [(b.frames.cpu() if dev == "cuda" else b.frames).numpy().copy() for b in ld]
    out["equal"].append(len(got["cuda"]) == len(got["cpu"]) > 0 and
                        all(np.array_equal(a, b) for a, b in zip(got["cuda"], got["cpu"])))
for dev in ("cuda", "cpu"):
    with reel.Loader(clips * 16, device=dev, **common) as ld:
        t0 = time.perf_counter(); n = 0
        for b in ld:
            n += len(b)
            del b
        m = ld.metrics()
        out["fps"][dev] = dict(samples_per_s=n / (time.perf_counter() - t0), samples=n,
                               frames_nvdec=m["frames_nvdec"], frames_uploaded=m["frames_uploaded"],
                               device_bytes=m["device_bytes"])
print(json.dumps(out))
"""


def check_gpu_loader(rep: Report, clips: List[Path], no_gpu: Optional[str]) -> None:
    """reel.Loader(device="cuda") against the CPU Loader on the 1080p clips:
    batches equal, then samples/s of both in the same run."""
    if no_gpu:
        rep.add("gpu_loader_equals_cpu", "skipped", no_gpu)
        rep.add("gpu_loader_fps", "skipped", no_gpu)
        return
    if not clips:
        for name in ("gpu_loader_equals_cpu", "gpu_loader_fps"):
            rep.add(name, "skipped", "no benchmark clips (see nvdec_decode_fps)")
        return
    try:
        r = run_with_reel(GPU_LOADER_CODE, clips, 400)
    except subprocess.TimeoutExpired:
        rep.add("gpu_loader_equals_cpu", "failed", "timed out after 400 s")
        return
    if r.returncode != 0:
        why = f"reel's GPU Loader does not run here: {r.stderr.strip()[-300:]}"
        rep.add("gpu_loader_equals_cpu", "skipped", why)
        rep.add("gpu_loader_fps", "skipped", why)
        return
    res = json.loads(r.stdout.strip().splitlines()[-1])
    ok = all(res["equal"])
    rep.add("gpu_loader_equals_cpu", "passed" if ok else "failed",
            "" if ok else "batches differ (uint8, float32 normalised)", cases=res["equal"])
    g, c = res["fps"]["cuda"], res["fps"]["cpu"]
    rows = [{"gpu_samples_per_s": round(g["samples_per_s"], 1), "cpu_samples_per_s": round(c["samples_per_s"], 1),
             "ratio": round(g["samples_per_s"] / c["samples_per_s"], 2), "frames_nvdec": g["frames_nvdec"],
             "frames_uploaded": g["frames_uploaded"], "device_bytes": g["device_bytes"]}]
    rep.add("gpu_loader_fps", "measured", "16 frames per clip, 224x224 uint8, batches of 8, 1080p clips", rows=rows)


GPU_STORE_CODE = """
import json, sys, time
import numpy as np
import reel, reel._testing
from pathlib import Path
work, w, h, frames, epochs = Path(sys.argv[1]), *map(int, sys.argv[2:6])
src, store = work / "videos", work / "store"
for c in ("a", "b"):
    (src / c).mkdir(parents=True, exist_ok=True)
    for v in range(8):
        reel._testing.write_video(str(src / c / f"v{v}.mp4"), width=w, height=h, frames=frames, gop=16, seed=v + 1)
if not store.exists():
    reel.pack(src, store, size=256, format="jpeg")
common = dict(frames_per_clip=16, size=224, crop="random", flip="random", batch_size=8, seed=3, epochs=1)
out = {"equal": [], "fps": {}}
for kw in ({}, {"dtype": "float32", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225),
                "layout": "BCTHW"}):
    got = {}
    for dev in ("cuda", "cpu"):
        with reel.Loader(store, device=dev, **common, **kw) as ld:
            got[dev] = [(b.frames.cpu() if dev == "cuda" else b.frames).numpy().copy() for b in ld]
    out["equal"].append(len(got["cuda"]) == len(got["cpu"]) > 0 and
                        all(np.array_equal(a, b) for a, b in zip(got["cuda"], got["cpu"])))
for dev in ("cuda", "cpu"):
    with reel.Loader(store, device=dev, **dict(common, epochs=epochs)) as ld:
        t0 = time.perf_counter(); n = 0
        for b in ld:
            n += len(b)
            del b
        m = ld.metrics()
        out["fps"][dev] = dict(samples_per_s=n / (time.perf_counter() - t0), samples=n,
                               frames_uploaded=m["frames_uploaded"], upload_bytes=m["upload_bytes"],
                               staging_bytes=m["staging_bytes"])
print(json.dumps(out))
"""


GPU_VLM_CODE = """
import json, sys, time
import torch
import reel.vlm as vlm
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
out = []
for p in sys.argv[1:]:
    for ele, dtype in (({"nframes": 8}, "float32"), ({"fps": 2.0, "max_frames": 16}, "uint8")):
        row = {"video": p.rsplit("/", 1)[-1], "ele": repr(ele), "dtype": dtype}
        got = {}
        for dev in ("cpu", "cuda"):
            t0 = time.perf_counter()
            v = vlm.fetch_video(dict(ele, video=p), dtype=dtype, device=dev)
            if dev == "cuda":
                torch.cuda.synchronize()
            row[dev + "_s"] = round(time.perf_counter() - t0, 3)
            got[dev] = v
        row["device"] = str(got["cuda"].device)
        row["shape"] = list(got["cpu"].shape)
        row["equal"] = got["cuda"].is_cuda and torch.equal(got["cuda"].cpu(), got["cpu"])
        out.append(row)
print(json.dumps(out))
"""


TORCH_CUDA_CODE = """
import torch
print(torch.__version__, torch.version.cuda, torch.cuda.is_available())
"""


def torch_cuda() -> Optional[str]:
    """None if the torch the checks import is a CUDA build that sees a GPU, else why not."""
    try:
        r = run_with_reel(TORCH_CUDA_CODE, [], 120)
    except subprocess.TimeoutExpired:
        return "import torch timed out after 120 s"
    if r.returncode != 0:
        lines = r.stderr.strip().splitlines()
        return f"no torch ({lines[-1] if lines else 'import torch failed'})"
    version, cuda, available = r.stdout.split()[-3:]
    if cuda == "None":
        return f"torch {version} is a CPU build (torch.version.cuda is None)"
    if available != "True":
        return f"torch {version} (CUDA {cuda}) sees no GPU (torch.cuda.is_available() is False)"
    return None


TORCH_DLPACK_CODE = """
import json, sys
import torch
import reel, reel.torch as rt
assert torch.cuda.is_available(), "torch sees no CUDA GPU"
video, clips = sys.argv[1], sys.argv[2:]
out = {"frames": {}, "batch": {}, "wrappers": {}}


def same(t, frames):
    ref = torch.from_dlpack(frames.cpu())
    return bool(t.is_cuda and t.shape == ref.shape and t.dtype == ref.dtype and torch.equal(t.cpu(), ref))


def streams(frames):
    row = {}
    t = torch.from_dlpack(frames)  # on torch's current stream
    row["current_stream"] = same(t, frames)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        u = torch.from_dlpack(frames)  # torch calls __dlpack__(stream=s.cuda_stream)
        total = u.to(torch.float64).sum()  # read on s, which waits for reel's write
    s.synchronize()
    ref = torch.from_dlpack(frames.cpu()).to(torch.float64).sum()
    row["side_stream"] = same(u, frames) and bool(total.cpu() == ref)
    row["device"] = str(t.device)
    row["as_tensor_shares"] = rt.as_tensor(frames).data_ptr() == t.data_ptr()
    return row


for dtype in ("uint8", "float32"):
    with reel.VideoDecoder(video, device="cuda", dtype=dtype) as d:
        out["frames"][dtype] = streams(d.get_frames_at([0, 1, 2, 5]))
common = dict(frames_per_clip=8, size=224, batch_size=2, seed=3, epochs=1)
for name, kw in (("uint8", {}), ("float32", {"dtype": "float32", "mean": (0.485, 0.456, 0.406),
                                             "std": (0.229, 0.224, 0.225)})):
    with reel.Loader(clips * 2, device="cuda", **common, **kw) as ld:
        b = ld.next_batch()
        row = streams(b.frames)
        row["batch_torch_shares"] = b.torch()[0].data_ptr() == torch.from_dlpack(b.frames).data_ptr()
        out["batch"][name] = row
        del b
# TorchLoader: the batch it took from the loader against the tensor it handed out
with reel.Loader(clips * 2, device="cuda", **common) as ld:
    got = []
    take = ld.next_batch
    ld.next_batch = lambda *a, **k: got.append(take(*a, **k)) or got[-1]
    tl = rt.TorchLoader(ld, device="cuda")
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    tb = next(tl)
    grew = torch.cuda.memory_allocated() - before
    nbytes = tb.frames.numel() * tb.frames.element_size()
    out["wrappers"]["TorchLoader"] = {
        "same_memory": tb.frames.data_ptr() == torch.from_dlpack(got[-1].frames).data_ptr(),
        "allocator_grew": grew, "batch_bytes": nbytes, "no_copy": tb.frames.is_cuda and grew < nbytes}
    del tb, tl, got
ds = rt.VideoDataset(clips * 2, device="cuda", **common)
torch.cuda.synchronize()
before = torch.cuda.memory_allocated()
it = iter(ds)
tb = next(it)
grew = torch.cuda.memory_allocated() - before
nbytes = tb.frames.numel() * tb.frames.element_size()
out["wrappers"]["VideoDataset"] = {"same_memory": tb.frames.is_cuda, "allocator_grew": grew, "batch_bytes": nbytes,
                                   "no_copy": tb.frames.is_cuda and grew < nbytes}
del tb, it
ds.close()
print(json.dumps(out))
"""


def check_torch_dlpack(rep: Report, videos: Path, clips: List[Path], no_gpu: Optional[str]) -> None:
    """torch.from_dlpack of reel's device Frames and GPU Loader batches, and
    reel.torch's wrappers over a GPU Loader (no second copy)."""
    names = ("torch_dlpack_frames", "torch_dlpack_batch", "torch_wrappers_no_copy")
    why = torch_cuda()
    if no_gpu or why:
        for name in names:
            rep.add(name, "skipped", "; ".join(w for w in (no_gpu, why) if w))
        return
    video = videos / "nasa_13013.mp4"
    if not video.is_file():
        for name in names:
            rep.add(name, "skipped", f"no {video}")
        return
    try:
        r = run_with_reel(TORCH_DLPACK_CODE, [video, *clips[:1], video], 400)
    except subprocess.TimeoutExpired:
        for name in names:
            rep.add(name, "failed", "timed out after 400 s")
        return
    if r.returncode != 0:
        for name in names:
            rep.add(name, "failed", f"the torch checks stopped: {r.stderr.strip()[-400:]}")
        return
    res = json.loads(r.stdout.strip().splitlines()[-1])
    cases = ((names[0], res["frames"], ("current_stream", "side_stream", "as_tensor_shares")),
             (names[1], res["batch"], ("current_stream", "side_stream", "as_tensor_shares", "batch_torch_shares")),
             (names[2], res["wrappers"], ("same_memory", "no_copy")))
    for name, rows, keys in cases:
        good = all(row.get(k) is True for row in rows.values() for k in keys)
        rep.add(name, "passed" if good else "failed", "" if good else f"not all of {', '.join(keys)}",
                rows=[{"case": k, **v} for k, v in rows.items()])


def check_gpu_store(rep: Report, out: Path, no_gpu: Optional[str]) -> None:
    """reel.Loader(store, device="cuda") against the CPU Loader over the same
    packed store: batches equal, then samples/s of both in the same run."""
    names = ("gpu_store_equals_cpu", "gpu_store_fps")
    if no_gpu:
        for name in names:
            rep.add(name, "skipped", no_gpu)
        return
    work = out / "gpu_store"
    work.mkdir(parents=True, exist_ok=True)
    try:
        quick = os.environ.get("REEL_DEVICE_CHECK_QUICK")
        r = run_with_reel(GPU_STORE_CODE, [work, 640, 360, 32 if quick else 64, 1 if quick else 4], 400)
    except subprocess.TimeoutExpired:
        rep.add(names[0], "failed", "timed out after 400 s")
        return
    if r.returncode != 0:
        why = f"reel's GPU Loader over a store does not run here: {r.stderr.strip()[-300:]}"
        for name in names:
            rep.add(name, "skipped", why)
        return
    res = json.loads(r.stdout.strip().splitlines()[-1])
    ok = all(res["equal"])
    rep.add(names[0], "passed" if ok else "failed", "" if ok else "batches differ (uint8, float32 normalised)",
            cases=res["equal"])
    g, c = res["fps"]["cuda"], res["fps"]["cpu"]
    rows = [{"gpu_samples_per_s": round(g["samples_per_s"], 1), "cpu_samples_per_s": round(c["samples_per_s"], 1),
             "ratio": round(g["samples_per_s"] / c["samples_per_s"], 2), "frames_uploaded": g["frames_uploaded"],
             "upload_bytes": g["upload_bytes"], "staging_bytes": g["staging_bytes"]}]
    rep.add(names[1], "measured", "JPEG store at short side 256, 16 frames per clip, 224x224 uint8, batches of 8",
            rows=rows)


def check_gpu_vlm(rep: Report, videos: Path, clips: List[Path], no_gpu: Optional[str]) -> None:
    """reel.vlm on the GPU against the CPU: equal tensors, and each side's time."""
    if no_gpu:
        rep.add("gpu_vlm_equals_cpu", "skipped", no_gpu)
        return
    paths = [videos / n for n in ("nasa_13013.mp4", "nasa_13013_hdr.mp4", "karma.mp4") if (videos / n).is_file()]
    paths += clips[:1]
    if not paths:
        rep.add("gpu_vlm_equals_cpu", "skipped", f"no shared videos in {videos} and no benchmark clips")
        return
    try:
        r = run_with_reel(GPU_VLM_CODE, paths, 400)
    except subprocess.TimeoutExpired:
        rep.add("gpu_vlm_equals_cpu", "failed", "timed out after 400 s")
        return
    if r.returncode != 0:
        rep.add("gpu_vlm_equals_cpu", "skipped", f"reel.vlm on the GPU does not run here: {r.stderr.strip()[-300:]}")
        return
    rows = json.loads(r.stdout.strip().splitlines()[-1])
    ok = all(row["equal"] for row in rows)
    rep.add("gpu_vlm_equals_cpu", "passed" if ok else "failed", "" if ok else "tensors differ", rows=rows)


def write(out: Path, rep: Report, env: Dict[str, Any]) -> None:
    doc = {"when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **env, "checks": rep.checks}
    (out / "device_check.json").write_text(json.dumps(doc, indent=2) + "\n")
    lines = [f"# reel device check, {doc['when']}", "",
             f"GPU: {env['gpu']['name'] + ', driver ' + env['gpu']['driver'] if env['gpu'] else 'none'}; "
             f"{env['cpus']} CPUs", "", "| check | status | result |", "|---|---|---|"]
    for c in rep.checks:
        res = c["why"]
        for row in c.get("rows", []):
            res += ("; " if res else "") + ", ".join(f"{k} {v}" for k, v in row.items())
        if c.get("videos"):
            res += ("; " if res else "") + f"{len(c['videos'])} videos"
        lines.append(f"| {c['name']} | {c['status']} | {res.replace('|', '/')} |")
    (out / "device_check.md").write_text("\n".join(lines) + "\n")
    print(f"device_check: wrote {out / 'device_check.json'} and {out / 'device_check.md'}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="device_check_out")
    ap.add_argument("--build", default="build-cuda")
    ap.add_argument("--frames", type=int, default=600, help="frames per 1080p benchmark clip")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    videos = Path(os.environ.get("REEL_SHARED_VIDEOS") or ROOT.parent / "shared" / "videos")
    rep = Report()

    gpu = gpu_info()
    no_driver = can_load("libcuda.so.1")
    no_gpu = None
    if no_driver:
        no_gpu = f"no GPU: libcuda.so.1 does not load ({no_driver})"
    elif not gpu:
        no_gpu = "no GPU: nvidia-smi lists none"
    no_cuvid = None if no_gpu else can_load("libnvcuvid.so.1")
    ffmpeg = shutil.which("ffmpeg")
    no_nvdec = no_gpu
    if not no_nvdec and no_cuvid:
        no_nvdec = ("libnvcuvid.so.1 does not load: the driver mount lacks the video libraries "
                    f"(containers: NVIDIA_DRIVER_CAPABILITIES=compute,video) ({no_cuvid})")
    if not no_nvdec and not ffmpeg:
        no_nvdec = "no ffmpeg CLI on this machine"
    if not no_nvdec and ffmpeg and not ffmpeg_has_cuda(ffmpeg):
        no_nvdec = f"{ffmpeg} has no cuda hwaccel"
    print(f"device_check: {'GPU ' + gpu['name'] + ', driver ' + gpu['driver'] if gpu else no_gpu}", flush=True)

    check_kernel(rep, Path(args.build), videos, no_gpu)
    check_gpu_decoder(rep, Path(args.build), videos, no_gpu)
    check_nvdec_exact(rep, ffmpeg, videos, no_nvdec)
    frames = 60 if os.environ.get("REEL_DEVICE_CHECK_QUICK") else args.frames
    clips = bench_decode(rep, ffmpeg, out, no_nvdec, frames)
    bench_reel(rep, clips, no_gpu)
    bench_torchcodec(rep, clips, no_gpu, frames)
    check_gpu_loader(rep, clips, no_gpu)
    check_gpu_store(rep, out, no_gpu)
    check_gpu_vlm(rep, videos, clips, no_gpu)
    check_torch_dlpack(rep, videos, clips, no_gpu)

    env = {"gpu": gpu, "cpus": os.cpu_count(), "python": platform.python_version(), "ffmpeg": ffmpeg,
           "shared_videos": str(videos)}
    write(out, rep, env)
    return 1 if any(c["status"] == "failed" for c in rep.checks) else 0


if __name__ == "__main__":
    sys.exit(main())
