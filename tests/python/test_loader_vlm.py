# tests/python/test_loader_vlm.py: reel.Loader with variable batches (issue
# 18 §4): sampler="fps" and a pixel-budget size_policy give each sample its
# own length and size; each sample's frame indices and pixels equal
# reel.vlm.fetch_video's for the same element (itself tested against
# qwen-vl-utils in test_vlm.py), the embedded frame indices match, pad=True
# pads with zeros, and resume, sharding and the error policy work as on clips.
from __future__ import annotations

import pytest

import reel
import reel.vlm
from conftest import read_indices

torch = pytest.importorskip("torch")

SP = {"factor": 28, "min_pixels": 28 * 28 * 16, "max_pixels": 28 * 28 * 64, "total_pixels": 28 * 28 * 600}
FPS = {"fps": 2.0, "min_frames": 4, "max_frames": 768}


@pytest.fixture(scope="module")
def vids(synth):
    """Five videos of different lengths, sizes and shapes (portrait, odd)."""
    return [
        synth(width=320, height=240, frames=150, gop=30),
        synth(width=180, height=320, frames=90, gop=30),
        synth(width=256, height=144, frames=200, gop=50),
        synth(width=161, height=97, frames=70, gop=12, yuv444=True),
        synth(width=200, height=200, frames=120, gop=25),
    ]


def loader(paths, **kw):
    args = dict(sampler="fps", size_policy=SP, batch_size=2, shuffle=False, epochs=1, **FPS)
    args.update(kw)
    return reel.Loader(paths, **args)


def reference(path, dtype="uint8"):
    return reel.vlm.fetch_video({"video": path, **FPS, **SP}, return_video_metadata=True, dtype=dtype)


@pytest.mark.parametrize("dtype", ["uint8", "float32"])
def test_each_sample_equals_fetch_video(vids, dtype):
    seen = set()
    kw = {"divisor": 1.0} if dtype == "float32" else {}
    with loader(vids, dtype=dtype, **kw) as L:
        for b in L:
            assert isinstance(b.frames, list) and len(b.frames) == len(b) == len(b.info)
            for f, ci, n, hw in zip(b.frames, b.info, b.lengths, b.sizes):
                t = f.torch()
                ref, meta = reference(ci.path, dtype)
                assert list(ci.frame_indices) == list(meta["frames_indices"])
                assert t.shape == ref.shape == (n, 3, hw[0], hw[1])
                assert t.dtype == ref.dtype
                assert torch.equal(t, ref), f"{ci.path}: pixels differ from reel.vlm.fetch_video"
                seen.add(ci.sample)
        m = L.metrics()
    assert seen == set(range(len(vids)))
    assert m["frames"] == sum(len(reference(v)[1]["frames_indices"]) for v in vids)
    shapes = {tuple(reference(v)[0].shape) for v in vids}
    assert len({s[0] for s in shapes}) >= 3 and len({s[2:] for s in shapes}) >= 3  # they do differ


def test_embedded_indices(vids):
    with loader(vids, layout="BTHWC") as L:
        for b in L:
            for f, ci in zip(b.frames, b.info):
                assert f.shape[-1] == 3
                assert read_indices(f) == list(ci.frame_indices)


def test_views_are_zero_copy_and_outlive_the_batch(vids):
    with loader(vids, batch_size=1, prefetch_batches=3) as L:
        it = iter(L)
        b = next(it)
        t = b.frames[0].torch()
        keep = t.clone()
        assert t.data_ptr() == b.frames[0].torch().data_ptr()  # a view, not a copy
        del b
        rest = [x.frames[0].torch().clone() for x in it]  # the held tensor keeps its buffer
        assert torch.equal(t, keep)
        assert len(rest) == len(vids) - 1


def test_pad_gives_one_tensor_with_lengths_and_sizes(vids):
    with loader(vids, batch_size=3) as L, loader(vids, batch_size=3, pad=True) as P:
        for b, p in zip(L, P):
            x = p.frames.torch()
            assert p.lengths == b.lengths and p.sizes == b.sizes
            assert x.shape == (len(b), max(b.lengths), 3, max(h for h, _ in b.sizes), max(w for _, w in b.sizes))
            for i, (f, n, (h, w)) in enumerate(zip(b.frames, b.lengths, b.sizes)):
                assert torch.equal(x[i, :n, :, :h, :w], f.torch())
                assert int(x[i].sum()) == int(f.torch().sum(dtype=torch.int64))  # zeros elsewhere


def test_whether_batches_are_variable_is_decided_by_c_once(vids):
    """reel_loader_settings_is_variable decides it (issue 26): the fps
    sampler or a pixel-budget size policy give variable batches (frames a
    list), the count sampler and the clip samplers fixed ones, and the Loader
    follows that answer."""
    from reel._loader import loader_settings

    def variable(**kw):
        return reel._reel.loader_settings_is_variable(loader_settings(kw))

    assert variable(sampler="fps") and variable(size_policy=SP) and variable(sampler="count", size_policy=SP)
    assert not variable() and not variable(sampler="count", frames_per_clip=6) and not variable(sampler="regular")
    for kw, want in ((dict(sampler="fps", **FPS, size=(64, 64)), True), (dict(sampler="count", frames_per_clip=6,
                                                                               size=(64, 64)), False)):
        with reel.Loader(vids[:2], batch_size=2, shuffle=False, epochs=1, **kw) as L:
            b = next(iter(L))
            assert isinstance(b.frames, list) == want == variable(**kw)


def samples_of(batches):
    return [ci.sample for b in batches for ci in b.info]


def test_resume_mid_epoch_and_on_another_batch_size(vids):
    paths = vids * 2
    with loader(paths, shuffle=True, seed=7) as L:
        full = [(ci.sample, list(ci.frame_indices)) for b in L for ci in b.info]
    with loader(paths, shuffle=True, seed=7) as L:
        it = iter(L)
        head = [next(it) for _ in range(2)]
        got = [(ci.sample, list(ci.frame_indices)) for b in head for ci in b.info]
        state = L.state_dict()
    assert state["samples_seen"] == 4
    with loader(paths, shuffle=True, seed=7, batch_size=3) as R:
        R.load_state_dict(state)
        for b in R:
            for f, ci in zip(b.frames, b.info):
                got.append((ci.sample, list(ci.frame_indices)))
                assert torch.equal(f.torch(), reference(ci.path)[0])
    assert got == full


def test_two_ranks_are_disjoint(vids):
    paths = vids * 2
    per = []
    for r in range(2):
        with loader(paths, shuffle=True, seed=3, world_size=2, rank=r) as L:
            per.append(samples_of(list(L)))
    assert not set(per[0]) & set(per[1])
    assert sorted(per[0] + per[1]) == list(range(len(paths)))


def test_a_failing_video_is_handled_by_policy(vids, tmp_path):
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 512)
    paths = [vids[0], str(bad), vids[1]]
    with loader(paths, batch_size=3, on_error="skip") as L:
        (b,) = list(L)
        assert len(b) == 2 and b.num_failed == 1
        m = L.metrics()
    assert m["failure_count"] == 1 and "broken.mp4" in m["failures"][0]["reason"]
    with loader(paths, batch_size=3, on_error="replace") as L:
        (b,) = list(L)
        assert len(b) == 3 and b.info[1].requested == 1 and b.info[1].sample != 1
        for f, ci in zip(b.frames, b.info):
            assert torch.equal(f.torch(), reference(ci.path)[0])
    with loader(paths, batch_size=3, on_error="raise") as L:
        with pytest.raises(reel.ReelError, match="broken.mp4"):
            list(L)


def test_settings_are_checked(vids):
    with pytest.raises(ValueError, match="unknown keys"):
        loader(vids, size_policy={"factr": 28})
    for alone in ("resized_height", "resized_width"):  # C's refusal, naming both fields
        with pytest.raises(reel.InvalidArgumentError, match="resized_width .*resized_height .*both or neither"):
            loader(vids, size_policy={alone: 56})
    with pytest.raises(reel.ReelError, match="one clip"):
        loader(vids, clips_per_video=2)
    with pytest.raises(reel.ReelError, match="clips_per_video"):  # a size per video: one clip each
        loader(vids, sampler="random", clips_per_video=2)


def test_example_collate_is_qwen2_vl_patch_order(vids):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
    try:
        import vlm_loader
    finally:
        sys.path.pop(0)
    with loader(vids[:2]) as L:
        (b,) = list(L)
        out = vlm_loader.collate(b)
        v0 = b.frames[0].torch().clone()
    grids = out["video_grid_thw"].tolist()
    assert grids == [[n // 2, h // 14, w // 14] for n, (h, w) in zip(b.lengths, b.sizes)]
    assert out["pixel_values_videos"].shape == (sum(t * h * w for t, h, w in grids), 3 * 2 * 14 * 14)
    x = (v0.float() / 255.0 - vlm_loader.MEAN) / vlm_loader.STD
    want = x[0:2, :, :14, :14].permute(1, 0, 2, 3).flatten()  # channel, time, y, x
    assert torch.allclose(out["pixel_values_videos"][0], want)
    # the second patch is the right neighbour inside the first 2x2 merge block
    assert torch.allclose(out["pixel_values_videos"][1], x[0:2, :, :14, 14:28].permute(1, 0, 2, 3).flatten())


def test_torch_wrappers_take_variable_batches(vids):
    import reel.torch

    want = {v: reference(v)[0] for v in vids}
    with loader(vids) as L:
        n = 0
        for tb in reel.torch.TorchLoader(L):
            assert isinstance(tb.frames, list)
            for f, ci in zip(tb.frames, tb.info):
                assert torch.equal(f, want[ci.path])
                n += 1
        assert n == len(vids)
    ds = reel.torch.VideoDataset(vids, clips=True, sampler="fps", size_policy=SP, batch_size=2, shuffle=False, **FPS)
    clips = list(torch.utils.data.DataLoader(ds, batch_size=None, num_workers=0))
    assert sorted(c.sample for c in clips) == list(range(len(vids)))
    for c in clips:
        assert torch.equal(c.frames, want[vids[c.sample]])


@pytest.mark.parametrize("threads,gop_split,layout", [(1, True, "BTCHW"), (2, True, "BTCHW"), (2, False, "BTCHW"),
                                                     (2, True, "BCTHW")])
def test_rotated_and_vfr_videos_serial_and_gop_split(shared_videos, threads, gop_split, layout):
    """Rotation 90 and 180 (VFR), on one decode thread and on two with one
    sample in flight (the idle thread's context takes half its keyframe runs,
    unless gop_split=False; BCTHW: each context writes its frames' planes
    into the sample's [C, T, H, W]): the pixels of reel.vlm.fetch_video
    either way."""
    paths = [str(shared_videos / n) for n in ("nasa_13013_rotated.mp4", "fire2.mp4", "cockatoo.mp4")]
    with loader(paths, batch_size=1, decode_threads=threads, prefetch_batches=1, gop_split=gop_split,
                layout=layout) as L:
        for b in L:
            f, ci = b.frames[0].torch(), b.info[0]
            if layout == "BCTHW":
                f = f.permute(1, 0, 2, 3)
            ref, meta = reference(ci.path)
            assert list(ci.frame_indices) == list(meta["frames_indices"])
            assert torch.equal(f, ref), ci.path
            del b, f
        split = L.metrics()["gop_split_samples"]
    assert (split >= 1) if threads == 2 and gop_split else (split == 0)


FAKE_CUDART = r"""
#include <stdlib.h>
static long live, total;
int cudaHostAlloc(void **p, size_t n, unsigned flags)
{
    (void)flags;
    if (posix_memalign(p, 4096, n)) return 2;
    __atomic_add_fetch(&live, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&total, 1, __ATOMIC_SEQ_CST);
    return 0;
}
int cudaFreeHost(void *p) { free(p); __atomic_sub_fetch(&live, 1, __ATOMIC_SEQ_CST); return 0; }
long fake_live(void) { return __atomic_load_n(&live, __ATOMIC_SEQ_CST); }
long fake_total(void) { return __atomic_load_n(&total, __ATOMIC_SEQ_CST); }
"""

PIN_CHILD = r"""
import ctypes, hashlib, json, sys
import reel
paths, lib = json.loads(sys.argv[1]), sys.argv[2]
kw = dict(sampler="fps", size_policy=SP, batch_size=2, shuffle=False, epochs=1, fps=2.0, pad=PAD)
out = {}
for pin in (False, True):
    with reel.Loader(paths, pin_memory=pin, **kw) as L:
        got = [hashlib.sha256(memoryview(f)).hexdigest() for b in L for f in ([b.frames] if PAD else b.frames)]
        out[str(pin)] = [got, L.metrics()["ring_memory"]]
fake = ctypes.CDLL(lib)
out["total"], out["live"] = fake.fake_total(), fake.fake_live()
print(json.dumps(out))
"""


@pytest.mark.parametrize("pad", [False, True])
def test_pin_memory_pins_variable_batches(vids, tmp_path, pad):
    """pin_memory=True allocates the variable ring's per-sample (and padded)
    buffers page-locked through the CUDA runtime found at run time, as for
    fixed shapes: here a stand-in runtime (REEL_CUDART) whose cudaHostAlloc
    counts its blocks. The batches are the same bytes as unpinned ones, every
    block goes back through cudaFreeHost, and without a runtime the ring is
    plain memory (test_pinned.c, the fixed-shape path's fallback)."""
    import json
    import os
    import shutil
    import subprocess
    import sys

    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler for the stand-in CUDA runtime")
    src, lib = tmp_path / "fake_cudart.c", tmp_path / "libfakecudart.so"
    src.write_text(FAKE_CUDART)
    subprocess.run([cc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(src)], check=True, timeout=60)
    code = f"SP = {SP!r}\nPAD = {pad!r}\n" + PIN_CHILD
    env = dict(os.environ, REEL_CUDART=str(lib))
    r = subprocess.run([sys.executable, "-c", code, json.dumps(vids), str(lib)], capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    plain, pinned = out["False"], out["True"]
    assert plain[1] == "plain" and pinned[1] == "pinned"
    assert pinned[0] == plain[0]
    assert len(plain[0]) == ((len(vids) + 1) // 2 if pad else len(vids))
    assert out["total"] >= (3 if pad else 2) and out["live"] == 0
