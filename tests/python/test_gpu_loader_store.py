"""reel.Loader(store, device="cuda") over a packed store (made with `reel pack`)
against the emulated CUDA driver (build/fake_cuda/libcuda.so.1): batches on
the device equal to the CPU Loader's over the same store batch for batch, bit
for bit (uint8 and float32 normalised, CHW/HWC, random crop and flip), every
frame counted as uploaded with its bytes, a resumed GPU run continuing the CPU
epoch, and nothing left on the device after close. Each check runs in a
process of its own, as in test_gpu_decoder.py."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import reel
import reel._testing
from test_gpu_decoder import run_gpu

SETTINGS = [
    {"size": (28, 32), "resize": 36, "crop": "random", "flip": "random"},
    {"size": 32, "crop": "random_resized", "dtype": "float32", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225),
     "layout": "BCTHW"},
    {"size": (18, 24), "resize": (22, 30), "layout": "BTHWC", "clips_per_video": 2},
]


@pytest.fixture(scope="module", params=["jpeg", "raw"])
def store(request, tmp_path_factory) -> str:
    root = tmp_path_factory.mktemp("gpu_store_videos")
    for c in ("cat", "dog"):
        (root / c).mkdir()
        for v in range(3):
            reel._testing.write_video(str(root / c / f"v{v}.mp4"), width=64, height=48, frames=12 + 2 * v, gop=6,
                                      seed=v + (7 if c == "dog" else 1))
    out = Path(tmp_path_factory.mktemp("gpu_store")) / request.param
    cli = os.environ.get("REEL_CLI")
    if cli:  # `reel pack`, as users make stores
        p = subprocess.run([cli, "pack", str(root), str(out), "--size", "40", "--format", request.param],
                           capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stderr
    else:  # the same reel_pack through the binding
        reel.pack(root, out, size=40, format=request.param)
    return str(out)


def test_store_batches_on_the_gpu_equal_the_cpu_loaders(store):
    got = run_gpu(f"""
        import numpy as np
        store, settings = {store!r}, {SETTINGS!r}
        out["cases"] = []
        for kw in settings:
            common = dict(frames_per_clip=4, batch_size=2, seed=5, epochs=1, decode_threads=2, **kw)
            runs = {{}}
            for device in ("cpu", "cuda"):
                frames, labels = [], []
                with reel.Loader(store, device=device, **common) as ld:
                    for b in ld:
                        assert b.frames.device == ("cuda:0" if device == "cuda" else "cpu"), b.frames.device
                        frames.append(b.frames.cpu().numpy().copy() if device == "cuda" else b.frames.numpy().copy())
                        labels.append(b.labels.numpy().tolist())
                    runs[device] = (frames, labels, ld.metrics())
                    del b
            (cf, cl, cm), (gf, gl, gm) = runs["cpu"], runs["cuda"]
            out["cases"].append(dict(
                n=len(cf), same_n=len(cf) == len(gf), labels=cl == gl,
                equal=all(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
                          for a, b in zip(cf, gf)),
                bytes=sum(a.nbytes for a in gf), uploaded=gm["frames_uploaded"], frames=gm["frames"],
                upload_bytes=gm["upload_bytes"], staging=gm["staging_bytes"], ring_memory=gm["ring_memory"],
                cpu_upload=cm["upload_bytes"], cpu_staging=cm["staging_bytes"]))
        out["live"] = counter("live_allocs")
        out["retained"] = counter("retained")
    """, REEL_CUDART="none")
    for kw, c in zip(SETTINGS, got["cases"]):
        assert c["n"] >= 3 and c["same_n"] and c["labels"] and c["equal"], (kw, c)
        assert c["uploaded"] == c["frames"] > 0 and c["upload_bytes"] == c["bytes"], (kw, c)
        assert c["staging"] > 0 and c["ring_memory"] == "device", (kw, c)
        assert c["cpu_upload"] == 0 and c["cpu_staging"] == 0, (kw, c)
    assert got["live"] == 0 and got["retained"] == 0, got


def test_store_on_the_gpu_resumes_the_cpu_epoch(store):
    got = run_gpu(f"""
        import numpy as np
        store = {store!r}
        common = dict(frames_per_clip=4, size=(28, 32), resize=36, crop="random", flip="random", batch_size=2, seed=3, epochs=1)
        with reel.Loader(store, **common) as ld:
            want = [b.frames.numpy().copy() for b in ld]
        ld = reel.Loader(store, device="cuda", **common)
        it = iter(ld)
        head = next(it).frames.cpu().numpy().copy()
        state = ld.state_dict()
        ld.close()
        del it
        ld = reel.Loader(store, device="cuda", **common)
        ld.load_state_dict(state)
        tail = [b.frames.cpu().numpy().copy() for b in ld]
        ld.close()
        out["same"] = len(want) == 1 + len(tail) and all(
            np.array_equal(a, b) for a, b in zip([head] + tail, want))
        import gc; gc.collect()
        out["live"] = counter("live_allocs")
    """, REEL_CUDART="none")
    assert got["same"] and got["live"] == 0, got
