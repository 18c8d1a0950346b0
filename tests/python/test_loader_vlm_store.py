# tests/python/test_loader_vlm_store.py: variable batches over packed stores
# (issue 18 §4). A store packed with `sampler="fps"` at each video's own size
# (`size="source"`, raw RGB) gives, through reel.Loader(sampler="fps",
# size_policy=...), the video path's samples exactly: frame indices (source
# frame indices), lengths, sizes and pixels; resume and sharding work on it;
# a store packed with `every` reports source frame indices; and the
# combinations a store cannot serve as the video path would are refused by
# name. (tests/c/test_loader_vary_store.c holds JPEG records equal to
# libjpeg-turbo's decode.)
from __future__ import annotations

import pytest

import reel

torch = pytest.importorskip("torch")

SP = {"factor": 28, "min_pixels": 28 * 28 * 16, "max_pixels": 28 * 28 * 64, "total_pixels": 28 * 28 * 600}
FPS = {"fps": 2.0, "min_frames": 4, "max_frames": 768}


@pytest.fixture(scope="module")
def folder(synth, tmp_path_factory):
    """Four videos of different lengths and shapes in a Kinetics-like folder."""
    import shutil

    root = tmp_path_factory.mktemp("vlmstore")
    specs = [(320, 240, 150, 30), (180, 320, 90, 30), (256, 144, 200, 50), (200, 200, 120, 25)]
    for i, (w, h, n, g) in enumerate(specs):
        (root / f"c{i % 2}").mkdir(exist_ok=True)
        shutil.copy(synth(width=w, height=h, frames=n, gop=g), root / f"c{i % 2}" / f"v{i}.mp4")
    return root


@pytest.fixture(scope="module")
def fps_store(folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("st") / "fps_raw"
    rep = reel.pack(folder, out, size="source", format="raw", sampler="fps", **FPS)
    assert rep["failed"] == 0
    return out


def samples(source, **kw):
    args = dict(sampler="fps", size_policy=SP, batch_size=2, shuffle=False, epochs=1, **FPS)
    args.update(kw)
    out = {}
    with reel.Loader(source, **args) as L:
        for b in L:
            for f, ci, n, hw in zip(b.frames, b.info, b.lengths, b.sizes):
                out[ci.path] = (list(ci.frame_indices), n, hw, f.torch().clone())
    return out


def test_an_fps_store_gives_the_video_paths_samples(folder, fps_store):
    info = reel.store_info(fps_store)
    assert (info["short_side"], info["width"], info["height"]) == (0, 0, 0)  # each video at its own size
    videos = samples([str(p) for p in sorted(folder.glob("*/*.mp4"))])
    stored = samples(fps_store)
    assert sorted(stored) == sorted(videos) and len(videos) == 4
    assert len({v[1] for v in videos.values()}) >= 3  # lengths differ
    for path, (idx, n, hw, x) in videos.items():
        sidx, sn, shw, sx = stored[path]
        assert (sidx, sn, shw) == (idx, n, hw), path  # source indices, lengths, sizes
        assert torch.equal(sx, x), f"{path}: the store's pixels differ from the video path's"


def test_resume_and_shards_over_an_fps_store(fps_store):
    full = samples(fps_store)
    kw = dict(sampler="fps", size_policy=SP, batch_size=1, shuffle=True, seed=3, epochs=1, **FPS)
    with reel.Loader(fps_store, **kw) as L:
        order = [b.info[0].path for b in L]
    with reel.Loader(fps_store, **kw) as L:
        it = iter(L)
        got = [next(it).info[0].path]
        state = L.state_dict()
    with reel.Loader(fps_store, **dict(kw, batch_size=3)) as R:
        R.load_state_dict(state)
        for b in R:
            for f, ci in zip(b.frames, b.info):
                got.append(ci.path)
                assert torch.equal(f.torch(), full[ci.path][3])
                assert list(ci.frame_indices) == full[ci.path][0]
    assert got == order
    per = [list(samples(fps_store, world_size=2, rank=r)) for r in range(2)]
    assert not set(per[0]) & set(per[1]) and sorted(per[0] + per[1]) == sorted(full)


def test_a_strided_store_reports_source_frame_indices(folder, tmp_path):
    reel.pack(folder, tmp_path / "every4", size=96, format="raw", every=4)
    from conftest import read_indices

    with reel.Loader(tmp_path / "every4", frames_per_clip=3, clips_per_video=3, size=96, crop=None, resize=(96, 96),
                     batch_size=4, shuffle=False, epochs=1, sampler="regular", layout="BTHWC") as L:
        for b in L:
            got = read_indices(b.frames)  # the source frames each delivered frame shows
            want = [i for ci in b.info for i in ci.frame_indices]
            assert got == want and all(i % 4 == 0 for i in want) and max(want) > 3 * 4


def test_what_a_store_cannot_serve_is_refused_by_name(folder, fps_store, tmp_path):
    with pytest.raises(reel.ReelError, match=r"fps_raw: packed with the fps sampler \(fps 2.*asks for.*fps 1"):
        samples(fps_store, fps=1.0)
    with pytest.raises(reel.ReelError, match="video_start"):
        samples(fps_store, sampling_range_start=1.0)
    reel.pack(folder, tmp_path / "short", size=112, format="raw", sampler="fps", **FPS)
    with pytest.raises(reel.ReelError, match="short: packed at short side 112.*--size source"):
        samples(tmp_path / "short")
    fixed = samples(tmp_path / "short", size_policy={"resized_height": 112, "resized_width": 168})
    assert {v[2] for v in fixed.values()} == {(112, 168)}
    reel.pack(folder, tmp_path / "every2", size="source", format="raw", every=2)
    with pytest.raises(reel.ReelError, match="every2: packed with every 2"):
        samples(tmp_path / "every2")


def test_reel_pack_size_source_keeps_each_videos_size(folder, fps_store, tmp_path):
    import os
    import subprocess

    cli = os.environ.get("REEL_CLI")
    if not cli:
        pytest.skip("the reel CLI is not built (set REEL_CLI)")
    out = subprocess.run([cli, "pack", str(folder), str(tmp_path / "cli"), "--size", "source", "--format", "raw",
                          "--sampler", "fps"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    info = reel.store_info(tmp_path / "cli")
    assert (info["short_side"], info["width"], info["height"]) == (0, 0, 0)
    a, b = samples(tmp_path / "cli"), samples(fps_store)  # the same store as reel.pack(size="source") makes
    assert a.keys() == b.keys()
    for k in a:
        assert a[k][:3] == b[k][:3] and torch.equal(a[k][3], b[k][3])
    bad = subprocess.run([cli, "pack", str(folder), str(tmp_path / "bad"), "--size", "sauce"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode != 0 and "source" in bad.stderr
