"""reel.Loader(device="cuda") against the emulated CUDA driver that the C
test build makes (build/fake_cuda/libcuda.so.1): batches on the device
(DLPack kDLCUDA, .cpu()) equal to the CPU Loader's batch for batch, bit for
bit, under several transforms; the upload counts, device memory and pinned
upload staging in the metrics, equal to the driver's live allocations; a
held batch stays valid while the loader goes on and after it closes; nothing
left on the device after close. Each check runs in a process of its own
(the driver is loaded once per process), as in test_gpu_decoder.py."""

from test_gpu_decoder import run_gpu

VIDEOS = ["carphone_pristine.mp4", "foreman_hevc.mp4", "karma.mp4", "nasa_13013.mp4"]
SETTINGS = [
    {"size": 40, "crop": "random", "flip": "random"},
    {"size": 36, "dtype": "float32", "mean": (0.485, 0.456, 0.406), "std": (0.229, 0.224, 0.225),
     "layout": "BCTHW"},
    {"size": (18, 24), "resize": (22, 30), "layout": "BTHWC", "clips_per_video": 2},
]


def test_gpu_batches_equal_cpu_batches(shared_videos):
    paths = [str(shared_videos / v) for v in VIDEOS]
    got = run_gpu(f"""
        import numpy as np
        paths, settings = {paths!r}, {SETTINGS!r}
        out["cases"] = []
        for kw in settings:
            common = dict(frames_per_clip=4, batch_size=3, seed=5, epochs=1, decode_threads=2, **kw)
            runs = {{}}
            for device in ("cpu", "cuda"):
                frames, labels = [], []
                with reel.Loader(paths, device=device, **common) as ld:
                    for b in ld:
                        assert b.frames.device == ("cuda:0" if device == "cuda" else "cpu"), b.frames.device
                        if device == "cuda":
                            assert b.frames.__dlpack_device__() == (2, 0)
                            try:
                                b.frames.numpy()
                                raise AssertionError("numpy() of device frames")
                            except TypeError as e:
                                assert "cuda:0" in str(e)
                            frames.append(b.frames.cpu().numpy().copy())
                        else:
                            frames.append(b.frames.numpy().copy())
                        labels.append(b.labels.numpy().tolist())
                    runs[device] = (frames, labels, ld.metrics())
                    if device == "cuda":  # the driver's live allocations, the loader still open and idle
                        drv = (counter("live_bytes"), counter("live_host_bytes"))
                    del b  # the last batch: its buffer goes back, and the loader can close
            (cf, cl, cm), (gf, gl, gm) = runs["cpu"], runs["cuda"]
            out["cases"].append(dict(
                n=len(cf), same_n=len(cf) == len(gf), labels=cl == gl,
                equal=all(a.shape == b.shape and a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True)
                          for a, b in zip(cf, gf)),
                uploaded=gm["frames_uploaded"], nvdec=gm["frames_nvdec"], frames=gm["frames"],
                device_bytes=gm["device_bytes"], ring_memory=gm["ring_memory"], cpu_device_bytes=cm["device_bytes"],
                pinned=gm["pinned_bytes"], pinned_peak=gm["pinned_bytes_peak"], refusals=gm["pinned_failures"],
                driver=drv))
        out["live"] = counter("live_allocs")
        out["live_host"] = counter("live_host_allocs")
        out["retained"] = counter("retained")
    """)
    for kw, c in zip(SETTINGS, got["cases"]):
        assert c["n"] >= 2 and c["same_n"] and c["labels"] and c["equal"], (kw, c)
        assert c["nvdec"] == 0 and c["uploaded"] >= c["frames"] > 0, (kw, c)  # no libnvcuvid here
        assert c["device_bytes"] > 0 and c["ring_memory"] == "device" and c["cpu_device_bytes"] == 0, (kw, c)
        # every device and pinned byte the loader holds is in its metrics
        assert [c["device_bytes"], c["pinned"]] == list(c["driver"]), (kw, c)
        assert c["pinned"] > 0 and c["pinned_peak"] >= c["pinned"] and c["refusals"] == 0, (kw, c)
    assert got["live"] == 0 and got["live_host"] == 0 and got["retained"] == 0, got


def test_a_held_batch_stays_valid_and_nothing_leaks(shared_videos):
    paths = [str(shared_videos / v) for v in VIDEOS] * 3
    got = run_gpu(f"""
        import numpy as np
        paths = {paths!r}
        common = dict(frames_per_clip=2, size=24, batch_size=2, seed=1, epochs=1, prefetch_batches=3)
        with reel.Loader(paths, **common) as ld:
            want = [b.frames.numpy().copy() for b in ld]
        ld = reel.Loader(paths, device="cuda", **common)
        it = iter(ld)
        first = next(it).frames  # held: its ring buffer is not reused meanwhile
        rest = [b.frames.cpu().numpy().copy() for b in it]
        out["first"] = bool(np.array_equal(first.cpu().numpy(), want[0]))
        out["rest"] = len(rest) == len(want) - 1 and all(np.array_equal(a, b) for a, b in zip(rest, want[1:]))
        held = ld.metrics()["device_bytes"]
        ld.close()
        out["after_close"] = bool(np.array_equal(first.cpu().numpy(), want[0]))  # the batch outlives close
        out["held"] = held
        del first, it
        import gc; gc.collect()
        out["live"] = counter("live_allocs")
        out["retained"] = counter("retained")
    """)
    assert got["first"] and got["rest"] and got["after_close"], got
    assert got["held"] > 0 and got["live"] == 0 and got["retained"] == 0, got


def test_frames_near_on_the_gpu_equal_the_cpu(shared_videos):
    """VideoDecoder(device="cuda").get_frames_near and reel.decode_near(device="cuda")
    on the same path: Frames on the device, equal to the CPU's with the same
    indices, distances and flags; out= arrays refused by name there."""
    a, b = str(shared_videos / "nasa_13013.mp4"), str(shared_videos / "foreman_hevc.mp4")
    got = run_gpu(f"""
        import numpy as np
        a, b = {a!r}, {b!r}
        times = [0.0, 0.5, 0.1, 0.5]
        out["near"] = []
        for kw in ({{}}, {{"size": (30, 50), "layout": "HWC"}}, {{"size": 40, "dtype": "float32"}}):
            c = reel.VideoDecoder(a, **kw).get_frames_near(times, tolerance_s=0.1)
            g = reel.VideoDecoder(a, device="cuda", **kw).get_frames_near(times, tolerance_s=0.1)
            out["near"].append([g.device, bool(np.array_equal(c.numpy(), g.cpu().numpy())),
                                c.indices == g.indices, c.distance_seconds == g.distance_seconds,
                                c.within_tolerance == g.within_tolerance])
        cams = {{"front": (a, [0.0, 0.3, 0.6]), "wrist": (b, [0.1, 0.2]), "side": (a, [0.3])}}
        cpu = reel.decode_near(cams, tolerance_s=0.1, size=(24, 32))
        gpu = reel.decode_near(cams, tolerance_s=0.1, size=(24, 32), device="cuda")
        out["cams"] = {{k: [gpu[k].device, bool(np.array_equal(cpu[k].numpy(), gpu[k].cpu().numpy())),
                           cpu[k].indices == gpu[k].indices] for k in cams}}
        try:
            reel.decode_near(cams, tolerance_s=0.1, size=(24, 32), device="cuda",
                             out={{"front": np.zeros((3, 3, 24, 32), np.uint8)}})
            out["refused"] = ""
        except ValueError as e:
            out["refused"] = str(e)
        try:
            reel.decode_near(cams, tolerance_s=0.1, device="cuda", cache=reel.DecoderCache())
            out["mismatch"] = ""
        except ValueError as e:
            out["mismatch"] = str(e)
        del c, g, cpu, gpu
        import gc, reel._near as nr
        for cache in nr._defaults.values():
            cache.clear()
        gc.collect()
        out["live"] = counter("live_allocs")
    """)
    for row in got["near"]:
        assert row == ["cuda:0", True, True, True, True], got["near"]
    for k, row in got["cams"].items():
        assert row == ["cuda:0", True, True], (k, got["cams"])
    assert "cuda:0" in got["refused"] and "out=" in got["refused"], got
    assert "device='cuda'" in got["mismatch"], got
    assert got["live"] == 0, got


def test_gpu_variable_batches_equal_cpu_batches(shared_videos):
    """sampler="fps" with a pixel-budget size_policy on the GPU: batch.frames a
    list of device Frames (kDLCUDA, .cpu()), each of its sample's own shape,
    equal to the CPU Loader's sample for sample, bit for bit; device memory
    flat over epochs and equal to the driver's; nothing left after close."""
    paths = [str(shared_videos / v) for v in VIDEOS]
    got = run_gpu(f"""
        import numpy as np
        paths = {paths!r}
        common = dict(sampler="fps", fps=2.0, min_frames=2, max_frames=12, batch_size=3, seed=5, epochs=2,
                      decode_threads=1, flip="random", size_policy={{"factor": 8, "min_pixels": 256,
                                                                    "total_pixels": 8 * 8 * 6 * 40}})
        runs = {{}}
        for device in ("cpu", "cuda"):
            clips, lengths, sizes = [], [], []
            with reel.Loader(paths, device=device, **common) as ld:
                flat = []
                for _ in range(2):  # two epochs
                    for b in ld:
                        assert isinstance(b.frames, list)
                        for f in b.frames:
                            if device == "cuda":
                                assert f.device == "cuda:0" and f.__dlpack_device__() == (2, 0), f.device
                                clips.append(f.cpu().numpy().copy())
                            else:
                                clips.append(f.numpy().copy())
                        lengths += b.lengths
                        sizes += b.sizes
                        del f
                    flat.append(ld.metrics()["device_bytes"])
                m = ld.metrics()
                runs[device] = (clips, lengths, sizes, m["device_bytes"], m["ring_memory"])
                out["flat_" + device] = flat
                if device == "cuda":
                    out["driver"] = counter("live_bytes")
                del b
        (cc, cl, cs, _, _), (gc_, gl, gs, gdev, gmem) = runs["cpu"], runs["cuda"]
        out["n"], out["same_n"] = len(cc), len(cc) == len(gc_)
        out["shapes_vary"] = len({{c.shape for c in cc}}) > 1
        out["meta"] = cl == gl and cs == gs
        out["equal"] = all(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(cc, gc_))
        out["device_bytes"], out["ring_memory"] = gdev, gmem
        out["live"] = counter("live_allocs")
        out["retained"] = counter("retained")
    """)
    assert got["n"] >= 8 and got["same_n"] and got["shapes_vary"] and got["meta"] and got["equal"], got
    assert got["ring_memory"] == "device" and got["device_bytes"] > 0, got
    assert got["device_bytes"] == got["driver"], got  # every device byte the loader holds is in its metrics
    # the samples' device buffers: sized in the first epoch, the same after the second
    assert got["flat_cuda"][0] > 0 and got["flat_cuda"][0] == got["flat_cuda"][1], got
    assert got["flat_cpu"] == [0, 0], got
    assert got["live"] == 0 and got["retained"] == 0, got
