"""VideoDecoder(device="cuda") against the emulated CUDA driver that the C
test build makes (build/fake_cuda/libcuda.so.1, tests/cuda/fake_cuda.c):
frames on the device equal the CPU decoder's bit for bit (codecs, transforms),
every frame uploaded and why NVDEC was not used, DLPack kDLCUDA with the
device index and the stream rule, the named refusals of host-only access,
faults named and survived, device memory flat, frames outliving their
decoder. Each check runs in a process of its own: the driver is loaded once
per process, and other tests here expect none."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


def _fake() -> Path:
    cli = os.environ.get("REEL_CLI")
    if not cli:
        pytest.skip("REEL_CLI is not set: the emulated driver lives in the C build tree beside it")
    lib = Path(cli).parent / "fake_cuda" / "libcuda.so.1"
    assert lib.is_file(), f"{lib}: the C build makes it (tests/cuda/fake_cuda.c)"
    return lib


def run_gpu(code: str, **env_extra: str) -> dict:
    """Runs `code` (which sets the dict `out`) with the emulated driver; returns out."""
    lib = _fake()
    prelude = textwrap.dedent(
        f"""
        import ctypes, json, reel
        fake = ctypes.CDLL({str(lib)!r})
        fake.reel_fake_cuda_counter.restype = ctypes.c_longlong
        fake.reel_fake_cuda_counter.argtypes = [ctypes.c_char_p]
        fake.reel_fake_cuda_fail.argtypes = [ctypes.c_char_p, ctypes.c_longlong]
        def counter(name):
            return fake.reel_fake_cuda_counter(name.encode())
        out = {{}}
        """
    )
    env = dict(os.environ, REEL_LIBCUDA=str(lib), LD_LIBRARY_PATH=str(lib.parent), **env_extra)
    p = subprocess.run([sys.executable, "-c", prelude + textwrap.dedent(code) + "\nprint(json.dumps(out))"],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    return json.loads(p.stdout.strip().splitlines()[-1])


VIDEOS = ["nasa_13013.mp4", "foreman_hevc.mp4", "nasa_13013_hdr.mp4", "no_duration.webm", "non_uniform_tiling.ivf"]
TRANSFORMS = [
    {},
    {"size": (54, 96), "filter": "bilinear"},
    {"size": (54, 96), "filter": "bicubic"},
    {"size": (54, 96), "filter": "area"},
    {"size": (54, 96), "filter": "nearest"},
    {"crop": (7, 5, 61, 33), "flip": True, "layout": "HWC"},
    {"size": 40, "dtype": "float32", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225)},
    {"size": (31, 33), "dtype": "float16", "layout": "HWC", "filter": "bicubic"},
    {"dtype": "bfloat16"},
    {"size": (54, 96), "filter": "bicubic", "convert_path": "after_rgb"},
    {"size": (140, 252), "crop": (3, 1, 151, 101), "flip": True, "dtype": "float32", "convert_path": "after_rgb"},
]


@pytest.mark.parametrize("name", VIDEOS)
def test_gpu_frames_equal_cpu_frames(shared_videos, name):
    path = str(shared_videos / name)
    got = run_gpu(f"""
        path, transforms = {path!r}, {TRANSFORMS!r}
        idx = [0, 5, 3, 5, 9, -1]
        out["cases"] = []
        for kw in transforms:
            g = reel.VideoDecoder(path, device="cuda", **kw)
            c = reel.VideoDecoder(path, **kw)
            fg = g.get_frames_at(idx)
            fc = c.get_frames_at(idx)
            host = fg.cpu()
            out["cases"].append(dict(kw=repr(kw), device=fg.device, dl=list(fg.__dlpack_device__()),
                                     equal=host.tobytes() == fc.tobytes(), shape=list(fg.shape) == list(fc.shape),
                                     indices=list(fg.indices) == list(fc.indices),
                                     stats=g.stats._asdict(), reason=g.upload_reason, gdev=g.device))
            g.close(); c.close()
        out["live_held"] = counter("live_allocs")  # the last call's frames, alive
        del fg, host
        out["live"] = counter("live_allocs")
    """)
    for case in got["cases"]:
        assert case["equal"] and case["shape"] and case["indices"], case
        assert case["device"] == "cuda:0" and case["dl"] == [2, 0] and case["gdev"] == "cuda:0", case
        st = case["stats"]
        assert st["frames_nvdec"] == 0 and st["frames_uploaded"] == st["frames_returned"] >= 5, case
        assert "libnvcuvid.so.1" in case["reason"], case
    assert got["live_held"] == 1 and got["live"] == 0


def test_dlpack_capsule_stream_rule_and_refusals(shared_videos):
    path = str(shared_videos / "foreman_hevc.mp4")
    got = run_gpu(f"""
        dec = reel.VideoDecoder({path!r}, device="cuda:0", size=(24, 32))
        f = dec.get_frames_at([1, 2])
        # the capsule's DLTensor, read with ctypes: data, device (type, id), ndim
        class Dev(ctypes.Structure):
            _fields_ = [("type", ctypes.c_int32), ("id", ctypes.c_int32)]
        class DLT(ctypes.Structure):
            _fields_ = [("data", ctypes.c_void_p), ("device", Dev), ("ndim", ctypes.c_int32)]
        api = ctypes.pythonapi
        api.PyCapsule_GetPointer.restype = ctypes.c_void_p
        api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
        seen = {{}}
        for s in (None, 1, 2, -1):
            events_before = counter("events")
            cap = f.__dlpack__(stream=s)
            t = DLT.from_address(api.PyCapsule_GetPointer(cap, b"dltensor"))
            seen[str(s)] = [t.device.type, t.device.id, t.ndim, t.data == f.data_ptr]
            del cap
        out["seen"] = seen
        cap = f.__dlpack__(max_version=(1, 0))
        out["versioned"] = api.PyCapsule_GetPointer(cap, b"dltensor_versioned") != 0
        del cap
        errs = {{}}
        for what, fn in [("array_interface", lambda: f.__array_interface__), ("numpy", f.numpy),
                         ("memoryview", lambda: memoryview(f)), ("tobytes", f.tobytes), ("copy", f.copy),
                         ("stream0", lambda: f.__dlpack__(stream=0))]:
            try:
                fn()
                errs[what] = None
            except Exception as e:
                errs[what] = [type(e).__name__, str(e)]
        out["errs"] = errs
        one = dec[1]
        out["single"] = [one.device, list(one.shape), one.cpu().tobytes() == f.cpu().tobytes()[: one.nbytes]]
        out["cpu_of_cpu"] = reel.VideoDecoder({path!r}, size=(24, 32))[0].cpu().device
    """)
    for s, v in got["seen"].items():
        assert v == [2, 0, 4, True], (s, v)
    assert got["versioned"]
    for what, e in got["errs"].items():
        assert e is not None, what
        if what == "stream0":
            assert e[0] == "ValueError"
        elif what != "memoryview" or sys.version_info >= (3, 11):
            assert e[0] == "TypeError" and "cuda:0" in e[1], (what, e)
    assert got["single"] == ["cuda:0", [3, 24, 32], True]
    assert got["cpu_of_cpu"] == "cpu"


def test_faults_are_named_and_memory_comes_back(shared_videos):
    path = str(shared_videos / "nasa_13013.mp4")
    got = run_gpu(f"""
        res = []
        for call in ("cuMemAlloc_v2", "cuMemcpyHtoDAsync_v2", "cuLaunchKernel"):
            dec = reel.VideoDecoder({path!r}, device="cuda", size=(30, 50))
            fake.reel_fake_cuda_fail(call.encode(), 1)
            try:
                dec.get_frames_at([4, 0])
                res.append([call, None])
            except reel.ReelError as e:
                res.append([call, e.status == reel._reel.STATUS["CUDA"], str(e)])
            fake.reel_fake_cuda_fail(None, 0)
            ok = dec.get_frames_at([4, 0]).cpu().tobytes() == reel.VideoDecoder({path!r}, size=(30, 50)).get_frames_at([4, 0]).tobytes()
            res[-1].append(ok)
            dec.close()
        out["res"] = res
        out["live_after"] = counter("live_allocs")
        dec = reel.VideoDecoder({path!r}, device="cuda", size=(24, 24))
        live = []
        for i in range(1000):
            f = dec.get_frames_at([i % 9])
            del f
            if i in (9, 999):
                live.append([counter("live_allocs"), counter("live_bytes")])
        kept = dec.get_frames_at([3, 4])
        expect = reel.VideoDecoder({path!r}, size=(24, 24)).get_frames_at([3, 4]).tobytes()
        dec.close()
        del dec
        out["flat"] = live
        out["outlives"] = [counter("retained"), kept.cpu().tobytes() == expect]
        del kept
        out["end"] = [counter("live_allocs"), counter("retained")]
    """)
    for call, is_cuda, msg, ok in got["res"]:
        short = call.replace("_v2", "")
        assert is_cuda and "CUDA" in msg and short in msg and "nasa_13013.mp4" in msg, (call, msg)
        assert ok, call
    assert got["live_after"] == 0
    assert got["flat"][0] == got["flat"][1], got["flat"]
    assert got["outlives"] == [1, True]
    assert got["end"] == [0, 0]


def test_fallback_and_named_errors(shared_videos):
    rotated = str(shared_videos / "nasa_13013_rotated.mp4")
    path = str(shared_videos / "nasa_13013.mp4")
    got = run_gpu(f"""
        def err(fn):
            try:
                fn()
                return None
            except reel.ReelError as e:
                return [e.status == reel._reel.STATUS["CUDA"], str(e)]
        out["two"] = err(lambda: reel.VideoDecoder({path!r}, device="cuda:1"))
        fb = reel.VideoDecoder({path!r}, device="cuda:1", device_fallback="cpu")
        out["fallback"] = [fb.device, fb.upload_reason, fb[0].device]
        out["rotated"] = reel.VideoDecoder({rotated!r}, device="cuda")[0].device  # a rotation alone: done
        out["rotation"] = err(lambda: reel.VideoDecoder({rotated!r}, device="cuda", size=(48, 64))[0])
        dec = reel.VideoDecoder({rotated!r}, device="cuda", apply_rotation=False)
        out["unrotated"] = dec[0].device
        out["after_rgb"] = reel.VideoDecoder({path!r}, device="cuda", convert_path="after_rgb",
                                             size=(48, 64))[0].device  # RGB24 resized after conversion: done
        out["after_rgb16"] = err(lambda: reel.VideoDecoder({path!r}, device="cuda", convert_path="after_rgb",
                                                           size=(48, 64), dtype="uint16")[0])
        out["near"] = reel.VideoDecoder({path!r}, device="cuda").get_frames_near([0.0]).device
    """, REEL_FAKE_CUDA_DEVICES="1")
    assert got["two"][0] and "cuda:1 asked for, the machine has 1" in got["two"][1]
    assert got["fallback"] == ["cpu", None, "cpu"]
    assert got["rotation"][0] and "rotation" in got["rotation"][1] and "nasa_13013_rotated.mp4" in got["rotation"][1]
    assert got["unrotated"] == got["rotated"] == "cuda:0"
    assert got["after_rgb"] == "cuda:0"
    assert got["after_rgb16"][0] and "AFTER_RGB with a resize of gray or uint16" in got["after_rgb16"][1]
    assert got["near"] == "cuda:0"  # test_gpu_loader.py compares its frames with the CPU's


def test_device_index_and_count(shared_videos):
    """Two emulated GPUs: cuda:1's frames say so in .device and in DLPack;
    none: the named "no CUDA device" error."""
    path = str(shared_videos / "foreman_hevc.mp4")
    got = run_gpu(f"""
        dec = reel.VideoDecoder({path!r}, device="cuda:1", size=(16, 16))
        f = dec.get_frames_at([0])
        out["two"] = [dec.device, f.device, list(f.__dlpack_device__()),
                      f.cpu().tobytes() == reel.VideoDecoder({path!r}, size=(16, 16)).get_frames_at([0]).tobytes()]
    """, REEL_FAKE_CUDA_DEVICES="2")
    assert got["two"] == ["cuda:1", "cuda:1", [2, 1], True]
    got = run_gpu(f"""
        try:
            reel.VideoDecoder({path!r}, device="cuda")
            out["none"] = None
        except reel.ReelError as e:
            out["none"] = [e.status == reel._reel.STATUS["CUDA"], str(e)]
    """, REEL_FAKE_CUDA_DEVICES="0")
    assert got["none"][0] and "no CUDA device" in got["none"][1] and "CUDA_ERROR_NO_DEVICE" in got["none"][1]


def test_iteration_and_time_calls_on_the_device(shared_videos):
    """Every frame by iteration (views into device chunks) and the calls by
    time equal the CPU decoder's."""
    path = str(shared_videos / "nasa_13013_rotated.mp4")
    got = run_gpu(f"""
        kw = dict(size=(20, 30), apply_rotation=False, layout="HWC")
        g = reel.VideoDecoder({path!r}, device="cuda", **kw)
        c = reel.VideoDecoder({path!r}, **kw)
        frames = list(g)
        out["iter"] = [len(frames), all(f.device == "cuda:0" for f in frames),
                       b"".join(f.cpu().tobytes() for f in frames) == b"".join(f.tobytes() for f in c)]
        t = [0.0, 0.2, 0.1]
        out["times"] = g.get_frames_played_at(t).cpu().tobytes() == c.get_frames_played_at(t).tobytes()
        out["range"] = g.get_frames_in_range(2, 11, 3).cpu().tobytes() == c.get_frames_in_range(2, 11, 3).tobytes()
    """)
    assert got["iter"] == [17, True, True]
    assert got["times"] and got["range"]


def test_vlm_on_the_device_equals_the_cpu(shared_videos):
    """reel.vlm with device="cuda": the video decoded and converted on the
    (emulated) GPU, RGB first then the bicubic RGB resize (after_rgb), equal
    to the CPU's tensor bit for bit, float32 and uint8, through fetch_video
    and process_vision_info. torch sees no emulated GPU, so the device Frames
    are brought to the host where vlm hands them to torch.from_dlpack."""
    videos = {n: str(shared_videos / n) for n in ("nasa_13013.mp4", "nasa_13013_hdr.mp4", "karma.mp4")}
    got = run_gpu(f"""
        import torch
        import reel.vlm as vlm
        seen = []
        def host(frames):
            seen.append(frames.device)
            return (frames.cpu() if frames.device != "cpu" else frames).torch()
        vlm._frames_to_torch = host
        videos = {videos!r}
        cases = [("nasa_13013.mp4", {{"nframes": 4}}, "float32"),
                 ("nasa_13013.mp4", {{"fps": 1.0, "min_pixels": 20000, "max_pixels": 60000}}, "uint8"),
                 ("nasa_13013_hdr.mp4", {{"nframes": 2, "resized_height": 100, "resized_width": 130}}, "float32"),
                 ("karma.mp4", {{"nframes": 2, "min_pixels": 20000, "max_pixels": 50000}}, "uint8")]
        out["cases"] = []
        for name, ele, dtype in cases:
            c, mc = vlm.fetch_video(dict(ele, video=videos[name]), dtype=dtype, return_video_metadata=True)
            g, mg = vlm.fetch_video(dict(ele, video=videos[name]), dtype=dtype, return_video_metadata=True,
                                    device="cuda")
            out["cases"].append(dict(case=repr((name, ele, dtype)), shape=list(c.shape), equal=torch.equal(c, g),
                                     dtype=[str(c.dtype), str(g.dtype)], meta=mc == mg))
        n = len(seen)
        msgs = [{{"role": "user", "content": [{{"type": "video", "video": videos["nasa_13013.mp4"], "nframes": 2}}]}}]
        _, vc, kc = vlm.process_vision_info(msgs, return_video_kwargs=True)
        _, vg, kg = vlm.process_vision_info(msgs, return_video_kwargs=True, device="cuda:0")
        out["pvi"] = [torch.equal(vc[0], vg[0]), kc == kg, seen[n:]]
        out["seen"] = seen[:n]
        out["live"] = counter("live_allocs")
    """)
    for case in got["cases"]:
        assert case["equal"] and case["meta"] and case["dtype"][0] == case["dtype"][1], case
        assert min(case["shape"][2:]) >= 28 and case["shape"][2] % 28 == 0 and case["shape"][3] % 28 == 0, case
    assert got["seen"] == ["cpu", "cuda:0"] * len(got["cases"])
    assert got["pvi"] == [True, True, ["cpu", "cuda:0"]]
    assert got["live"] == 0
