# tests/python/test_memory.py: no growth in RSS, reference counts or live
# objects over thousands of calls: decoding, DLPack exports (consumed or not),
# opening and closing, raising errors, and loader epochs.
from __future__ import annotations

import gc
import io
import os
import sys
from pathlib import Path

import pytest

import reel
from conftest import rss_bytes

# seconds-long soaks and subprocess runs: make test runs them, make check does not
pytestmark = pytest.mark.slow

MB = 1 << 20
# Under AddressSanitizer (LD_PRELOAD=libasan.so) RSS says nothing about leaks
# (quarantine, shadow memory): only objects and references are checked there.
ASAN = "libasan" in os.environ.get("LD_PRELOAD", "")


def steady(fn, n, warmup=None, max_rss=8 * MB, max_objects=200):
    """Runs fn(i) n times after a warmup; checks RSS and the live-object count.
    A window over the bounds is measured once more, over n more calls: a leak
    grows in both windows, while a one-time cost grows only in the first (the
    heap taking back pages that earlier tests' large outputs gave to the
    kernel: seen once after test_vlm.py's 1.6 GB outputs, not reproduced)."""
    for i in range(warmup if warmup is not None else max(50, n // 10)):
        fn(i)
    for _window in range(2):
        gc.collect()
        rss0, objs0 = rss_bytes(), len(gc.get_objects())
        for i in range(n):
            fn(i)
        gc.collect()
        grew, objs = rss_bytes() - rss0, len(gc.get_objects()) - objs0
        if (ASAN or grew < max_rss) and objs < max_objects:
            return
    assert ASAN or grew < max_rss, f"RSS grew by {grew / MB:.1f} MB over {n} calls, in two windows running"
    assert objs < max_objects, f"{objs} more live objects after {n} calls, in two windows running"


def refcounts(*objs):
    return [sys.getrefcount(o) for o in objs]


def test_decode_calls(video):
    d = reel.VideoDecoder(video, threads=1)
    c = d._dec
    refs = refcounts(d, c, video)
    steady(lambda i: d.get_frames_at([i % 60, (i * 7) % 60]), 1500)
    steady(lambda i: d[i % 60], 500)
    steady(lambda i: d.get_frames_played_at([(i % 50) * 0.04]), 500)
    now = refcounts(d, c, video)
    assert now == refs


def test_dlpack_round_trips(video, np, torch):
    f = reel.VideoDecoder(video).get_frames_at(range(8))
    base = refcounts(f)

    def export(i):
        t = torch.from_dlpack(f)
        a = np.from_dlpack(f)
        c = f.__dlpack__(max_version=(1, 0) if i % 2 else None)  # never consumed
        assert t.data_ptr() == a.ctypes.data
        del t, a, c

    steady(export, 3000)
    now = refcounts(f)
    assert now == base


def test_frames_freed(video, torch):
    d = reel.VideoDecoder(video)

    def make(i):
        t = d.get_frames_at([i % 60] * 4).torch()  # 4 x 57 KB, freed with the tensor
        assert t.shape[0] == 4

    steady(make, 1000)


def test_open_close(video):
    data = Path(video).read_bytes()

    def cycle(i):
        for src in (video, data, io.BytesIO(data)):
            with reel.VideoDecoder(src, threads=1) as d:
                d[i % 60]

    steady(cycle, 300, warmup=30)


def test_errors(video, tmp_path):
    d = reel.VideoDecoder(video)
    missing = str(tmp_path / "missing.mp4")
    refs = refcounts(reel.OutOfRangeError, reel.NotFoundError)

    def fail(i):
        with pytest.raises(reel.OutOfRangeError):
            d.get_frames_at([0, 99])
        with pytest.raises(reel.NotFoundError):
            reel.VideoDecoder(missing)

    steady(fail, 2000)
    now = refcounts(reel.OutOfRangeError, reel.NotFoundError)
    assert now == refs


def test_loader_epochs(synth, torch):
    paths = [synth(frames=30, seed=s) for s in range(1, 7)]
    with reel.Loader(paths, frames_per_clip=4, size=32, batch_size=2, decode_threads=2) as L:
        c = L._loader
        refs = refcounts(c)

        def epoch(i):
            for b in L:
                x, y = b.torch()
                assert x.shape == (2, 4, 3, 32, 32) and y.shape == (2,)

        steady(epoch, 100, warmup=10)
        now = refcounts(c)
        assert now == refs and c.outstanding == 0


def test_loader_create_destroy(synth):
    paths = [synth(frames=30, seed=s) for s in range(1, 4)]

    def cycle(i):
        with reel.Loader(paths, frames_per_clip=2, size=32, batch_size=3, decode_threads=1) as L:
            next(iter(L))

    steady(cycle, 60, warmup=10, max_rss=12 * MB)


RSS_CHILD = r"""
import json, resource, sys, time
import reel

def maxrss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024

paths, budget = json.loads(sys.argv[1]), int(sys.argv[2])
base = maxrss()  # the interpreter and reel, before the loader
biggest = n = 0
with reel.Loader(paths, sampler="fps", fps=2.0, size_policy={"resized_height": 448, "resized_width": 448},
                 dtype="float32", batch_size=1, shuffle=False, epochs=1, decode_threads=2, prefetch_batches=6,
                 ring_bytes=budget) as L:
    for b in L:
        biggest = max(biggest, b.lengths[0] * 3 * 448 * 448 * 4)
        n += 1
        time.sleep(0.2)  # a slow consumer: the loader runs ahead as far as the budget lets it
        del b
print(json.dumps({"base": base, "peak": maxrss(), "biggest": biggest, "samples": n}))
"""


@pytest.mark.skipif(ASAN, reason="RSS under AddressSanitizer is its shadow memory and quarantine")
def test_variable_loader_peak_rss_stays_within_its_byte_budget(synth):
    """The variable Loader's ring is a byte budget (ring_bytes): over six
    longish videos whose samples are 48-77 MB each (float32, 448x448, 20-32
    frames), with prefetch_batches=6 and a consumer slower than the loader,
    the peak RSS of a fresh process stays under its baseline (measured there
    before the loader starts) + the budget + two of the largest samples (the
    one batch the budget may be exceeded by, and the one the consumer holds)
    + 64 MB (decoders, scratch, threads). Without the budget the six samples
    (370 MB) would all be decoded ahead."""
    import json
    import subprocess

    paths = [synth(width=160, height=120, frames=n, gop=25) for n in (250, 400, 300, 350, 280, 380)]
    budget = 64 * MB
    r = subprocess.run([sys.executable, "-c", RSS_CHILD, json.dumps(paths), str(budget)], capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out["samples"] == 6 and out["biggest"] > 70 * MB
    bound = out["base"] + budget + 2 * out["biggest"] + 64 * MB
    assert out["peak"] <= bound, (f"peak RSS {out['peak'] / MB:.0f} MB over {bound / MB:.0f} MB (baseline "
                                  f"{out['base'] / MB:.0f} MB, budget {budget / MB:.0f} MB, largest sample "
                                  f"{out['biggest'] / MB:.0f} MB)")
